"""Between frames (issue 35, point 2): is the straight motion from one baked frame to the next
free of collisions?

The solver checks the straight motion of each of its steps (solver/motion_check.py), but a frame
is ``Substeps`` steps: a fast body can go around the end of a thin obstacle within a frame, each
step clean, while the straight line between the two frames, which is what sub-frame
interpolation and motion blur show, passes through it. After each frame the bake runs the
solver's CCD on the straight motion of every body and collider vertex from the frame before
(one batched call). A frame whose motion crosses is reported (objects and frames); with
``Refine Crossing Frames`` the bake first computes it again from its start with twice, then
four times the substeps, and keeps the first that is clean (or the finest one).

No bpy here: the bake job calls :func:`advance_frame` and keeps the :class:`FrameCrossing`
records; :func:`messages.frame_crossing_warning` words them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .messages import frame_crossing_warning
from .solver import motion_check
from .solver.collider_check import compact_ranges

# Refinement doubles the frame's substeps up to this many times (x2, x4).
REFINE_DOUBLINGS = 2


@dataclass(frozen=True)
class FrameCrossing:
    """The straight motion into `frame` (from frame - 1) crosses: the object pairs whose
    primitives pass through each other (a pair (a, a): an object through itself), and the
    substeps the frame was computed with in the end."""

    frame: int
    pairs: tuple[tuple[str, str], ...]
    substeps: int


@dataclass(frozen=True)
class FrameAdvance:
    """One frame computed: its kept steps' StepStats, the object pairs whose straight motion over
    the frame crosses (empty: clean), and the substeps used (more than asked: refined)."""

    steps: tuple
    pairs: tuple[tuple[str, str], ...]
    substeps: int


def crossing_pairs(model, x0, x1) -> tuple[tuple[str, str], ...]:
    """The object-name pairs (sorted, unique) whose point and edge meet on the straight motion
    x0 -> x1 (N, 2) of all vertices."""
    stencils = motion_check.crossing_stencils(model, x0, x1)
    if len(stencils) == 0:
        return ()
    owners = np.unique(np.sort(motion_check.first_crossing_owners(model, stencils), axis=1), axis=0)
    return tuple((model.names[a], model.names[b]) for a, b in owners)


def advance_frame(sim, substeps: int, refine: bool, steps: list) -> FrameAdvance:
    """Advance `sim` by one frame of `substeps` steps and check the frame's straight motion.
    refine: a crossing frame is computed again from its start with more substeps.
    `steps` (empty list) receives each kept step's StepStats as it is taken, so a failure's
    substep is known to the caller (a refined attempt starts it afresh)."""
    start = sim.checkpoint() if refine else None
    x0 = sim.positions
    n = substeps
    for doubling in range(REFINE_DOUBLINGS + 1 if refine else 1):
        if doubling:
            sim.restore(start)
            steps.clear()
            n = substeps << doubling
        for _ in range(n):
            steps.append(sim.step() if n == substeps else sim.step(substeps * sim.params.dt / n))
        pairs = crossing_pairs(sim.model, x0, sim.x)
        if not pairs:
            break
    return FrameAdvance(tuple(steps), pairs, n)


def record(s, stats, note: str):
    """The last bake's motion check and solver notes into the scene's stat_ properties `s`."""
    s.stat_crossing_frames = compact_ranges([c.frame for c in stats.crossings])
    s.stat_crossing_warning = frame_crossing_warning(stats.crossings, s.substeps, s.refine_crossing_frames)
    s.stat_motion_splits = stats.motion_splits
    s.stat_failure_splits = stats.failure_splits
    s.stat_refined_frames = stats.refined_frames
    s.stat_slept_bodies = stats.slept_bodies
    s.stat_notes = note


def draw_report(box, s):
    """The bake report's lines about motion (panel, under the distances)."""
    if s.stat_motion_splits:
        box.label(text=f"Steps split by the motion check: {s.stat_motion_splits}", icon="INFO")
    if s.stat_failure_splits:
        halved = f"Steps solved again in halves (did not converge): {s.stat_failure_splits}"
        box.label(text=halved, icon="INFO")
    if s.stat_refined_frames:
        box.label(text=f"Frames computed again with more substeps: {s.stat_refined_frames}", icon="INFO")
    if s.stat_slept_bodies:
        box.label(text=f"Bodies asleep at once (Deactivation): up to {s.stat_slept_bodies}", icon="INFO")
    if s.stat_strained:
        box.label(text=f"Rigid bodies squashed: {s.stat_strained}", icon="ERROR")
        box.label(text="Give them room, or make them Stiff or Deformable", icon="INFO")
    if s.stat_crossing_frames:
        box.label(text=f"Motion between frames crosses into frames {s.stat_crossing_frames}", icon="ERROR")
        box.label(text="Raise Substeps or turn on Refine Crossing Frames", icon="INFO")
    if s.stat_notes:
        box.label(text=s.stat_notes, icon="INFO")
