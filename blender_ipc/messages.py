"""Solver failures during a bake, in the artist's words (issue 12, point 8).

The solver speaks of steps, global vertex numbers and parameter names (``|dx|/h``,
``newton_tol``); the artist sees frames, objects, Blender vertex indices and the panel's
property names. :func:`solver_failure` turns an exception raised by ``Simulation.step`` into
one message: the frame (and substep), the object and its Blender vertex where the solver was
furthest from converging (``ConvergenceError.vertex``, mapped through the body's ``used``
array: the solver's copy drops loose vertices, so its numbering differs), what went wrong with
the panel's names and values, and what to change. Input problems
(:class:`SolverInputError`) go through :func:`reading.in_blender_words`. No bpy here.
"""

from __future__ import annotations

import re

import numpy as np

from .common import format_length
from .solver import ConvergenceError, SolverInputError
from .solver.basis import RIGID_STRAIN_LIMIT
from .solver.collider_check import compact_ranges, pressed

# The solver's messages (solver/newton.py), matched to pick out their numbers.
_NEWTON = re.compile(
    r"Newton did not converge in (?P<iters>\d+) iterations \(last \|dx\|/h = (?P<speed>\S+) m/s, "
    r"tolerance (?P<tol>[^;]+); force imbalance (?P<imb>[^,]+), tolerance (?P<ftol>[^)]+)\)"
)
_LINE_SEARCH = "line search failed to decrease the energy"
_NON_FINITE = "linear solve produced non-finite values"
_STEP_PREFIX = re.compile(r"^step \d+ \(t = [^)]*\): ")


def where(vertex, bodies, body_slices, collider_names=(), collider_slices=()) -> tuple[str, str]:
    """(object name, "vertex N" in Blender's numbering or '') of a global solver vertex;
    ('', '') when it is not known."""
    if vertex is None:
        return "", ""
    for body, sl in zip(bodies, body_slices, strict=False):
        if sl.start <= vertex < sl.stop:
            local = vertex - sl.start
            used = np.asarray(body.used)
            return body.name, (f"vertex {int(used[local])}" if local < len(used) else "")
    for name, sl in zip(collider_names, collider_slices, strict=False):
        if sl.start <= vertex < sl.stop:
            return name, ""
    return "", ""


def _num(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return float("nan")


def solver_failure(
    err: BaseException,
    *,
    frame: int,
    substep: int,
    substeps: int,
    bodies=(),
    body_slices=(),
    collider_names=(),
    collider_slices=(),
    params=None,
    in_blender_words=None,
) -> str:
    """The bake's failure message for an exception raised while computing ``frame``
    (``substep`` of ``substeps``, 1-based). bodies: the BodyInputs (name, used), in the
    solver's order; params: the solver's SimParams (values shown with the panel's names);
    in_blender_words(text): the translation of an input-error text."""
    head = f"Solver failed at frame {frame}"
    when = f" in substep {substep} of {substeps}" if substeps > 1 else ""
    if isinstance(err, SolverInputError):
        text = str(err)
        return f"{head}: {in_blender_words(text) if in_blender_words else text}"
    if isinstance(err, np.linalg.LinAlgError):  # a factorization failed (not positive definite)
        return (
            f"{head}: the solver's linear system could not be solved{when} ({type(err).__name__}: "
            f"{err}). To fix: use more Substeps (now {substeps}), or check for extreme Young's "
            f"Modulus or Density values"
        )
    if not isinstance(err, ConvergenceError):
        return f"{head}: {type(err).__name__}: {err}"
    text = _STEP_PREFIX.sub("", str(err))
    name, vertex = where(getattr(err, "vertex", None), bodies, body_slices, collider_names, collider_slices)
    at = f" at '{name}'" + (f" ({vertex})" if vertex else "") if name else ""
    subject = f"'{name}'" if name else "the bodies"
    more_substeps = f"more Substeps (now {substeps})"
    m = _NEWTON.search(text)
    pressed = _pressed_colliders(getattr(err, "stats", None), collider_names)
    if m and pressed:
        names = " and ".join(f"'{name}'" for name, _ in pressed)
        return (
            f"{head}: the simulation did not settle within Max Newton Iterations ({m['iters']}){when}{at}, "
            f"most likely because {'; '.join(text for _, text in pressed)}. To fix: key {names} to stop "
            f"sooner or move more slowly, make the bodies it presses softer (Stiff or Deformable if "
            f"they are Rigid, or a lower Young's Modulus), use {more_substeps}, or raise Max Newton "
            f"Iterations (now {m['iters']})"
        )
    if m:
        iters, speed, tol = int(m["iters"]), _num(m["speed"]), _num(m["tol"])
        imb, ftol = _num(m["imb"]), _num(m["ftol"])
        parts = []
        fixes = [f"raise Max Newton Iterations (now {iters})"]
        if not speed < tol:
            parts.append(
                f"its last correction moved at {speed:.3g} m/s, above the Newton Tolerance {tol:g} m/s"
            )
            fixes.append("raise the Newton Tolerance")
        if not imb <= ftol:
            parts.append(f"forces were off balance by {imb:.3g}, above the Force Tolerance {ftol:g}")
            fixes.append("raise the Force Tolerance")
        fixes.append(f"use {more_substeps}")
        detail = " and ".join(parts) if parts else f"(Newton Tolerance {tol:g} m/s, Force Tolerance {ftol:g})"
        return (
            f"{head}: the simulation did not settle within Max Newton Iterations ({iters}){when}{at}: "
            f"{detail}. To fix: {', '.join(fixes[:-1])} or {fixes[-1]}"
        )
    gap = f" (now {format_length(params.dhat)})" if params is not None else ""
    if _LINE_SEARCH in text:
        return (
            f"{head}: the solver could not make progress{when}{at} (no step lowered the energy: "
            f"usually a very stiff or very fast set-up for the time step, or a body crushed in a "
            f"contact). To fix: use {more_substeps}, lower the Young's Modulus of {subject}, or "
            f"make the Contact Gap larger{gap}"
        )
    if _NON_FINITE in text:
        return (
            f"{head}: the solver's numbers overflowed{when}{at} (the linear solve gave non-finite values). "
            f"To fix: check the Young's Modulus and Density of {subject} (extreme values), "
            f"use {more_substeps}, or remesh {subject} with Make Simulation Mesh (very thin triangles)"
        )
    return f"{head}: {text}" + (f" ({when.strip()}{at})" if at else "")


def _pressed_colliders(stats, collider_names) -> list[tuple[str, str]]:
    """[(name, "collider 'Lid' is pressed into ...")] for the colliders pressed into the bodies
    at the end of the step that failed (solver/collider_check.py, pressed: the likely cause;
    empty if none, or stats unknown), but those the bodies stopped already (no longer driven)."""
    if stats is None:
        return []
    lags, dists = stats.collider_lags, stats.animated_collider_distances
    found = pressed(collider_names, lags, dists, stats.stopped_colliders)
    return [
        (
            name,
            f"collider '{name}' is pressed into the bodies (as animated it overlaps them by "
            f"{format_length(overlap)} and lags {format_length(lag)} behind its keys)",
        )
        for name, lag, overlap in found
    ]


def rigid_strain_warning(strained, names) -> str:
    """The bake's warning about rigid bodies squashed or stretched beyond the strain they hold
    ('' if none): strained {body index: (largest strain, frames)}, names of the bodies."""
    if not strained:
        return ""
    worst = sorted(strained.items(), key=lambda item: -item[1][0])
    who = ", ".join(
        f"'{names[i]}' by up to {100 * w:.2g} % at frames {compact_ranges(frames)}"
        for i, (w, frames) in worst[:3]
    )
    if len(worst) > 3:
        who += f" and {len(worst) - 3} more"
    return (
        f"IPC: rigid bodies were squashed or stretched ({who}); a rigid body holds its shape to "
        f"{100 * RIGID_STRAIN_LIMIT:g} % unless something forces it, a collider crushing it or pins "
        "pulling it apart: key the collider to leave it room, or make the body Stiff or Deformable"
    )


def frame_crossing_warning(crossings, substeps: int, refine: bool) -> str:
    """The bake's warning about frames whose straight motion from the frame before crosses
    another object (frame_motion.FrameCrossing records; '' if none): which objects, which
    frames, and what to change."""
    if not crossings:
        return ""
    pairs = sorted({p for c in crossings for p in c.pairs})
    who = ", ".join(f"'{a}' through itself" if a == b else f"'{a}' and '{b}'" for a, b in pairs[:3])
    if len(pairs) > 3:
        who += f" and {len(pairs) - 3} more"
    frames = compact_ranges([c.frame for c in crossings])
    if refine:
        fix = f"even with {max(c.substeps for c in crossings)} substeps; raise the scene's frame rate"
    else:
        fix = f"raise Substeps (now {substeps}) or turn on Refine Crossing Frames"
    return (
        f"IPC: between frames the straight motion crosses ({who}) into frame {frames}: "
        f"motion blur and sub-frame interpolation show them passing through each other; {fix}"
    )
