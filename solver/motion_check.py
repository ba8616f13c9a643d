"""The motion check: is the straight motion of a step free of collisions?

IPC keeps every *state* free of intersections (each Newton iterate is reached
along a CCD-checked segment), not the straight motion from a step's start to
its end, which is what an animation shows between two frames.  A fast body
meeting the end of a thin obstacle can converge on the far side, carried
around the end by Newton's iterates (docs/design/14-step-motion-check.md).

:func:`crossing_stencils` finds the point-edge pairs of bodies and colliders
that meet along x0 -> x1 (every vertex on its straight segment: a collider's
own motion over the step is part of it): the broad phase over the swept
boxes, then :func:`solver.ccd.point_edge_crossings` on the candidates, one
batched kernel.  Half-planes need no check: they do not move, so a vertex's
distance to one is linear in t and positive at both ends of a step.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import ccd
from .contacts import candidate_stencils


@dataclass(frozen=True)
class MotionCheckSettings:
    """enabled: check every step's straight motion; max_depth: how many times
    a step whose motion crosses is split in halves (at most 2**max_depth
    substeps); a substep still crossing at that depth is kept and reported.
    failed_splits: how many halvings a solve that did not converge gets on
    its way (its motion crossing or not): a part that fails again after that
    many is kept as it is (its crossings reported), since halving did not
    help it converge.  watch: stop a solve that could still be split as soon
    as an iterate's straight motion from the step's start crosses at a pair
    that was in contact there (:class:`CrossingWatch`), and split it then.
    retakes: how many times a split step whose own motion still crosses is
    taken again in parts half as long (within max_depth): where the motion
    rounds a corner within the step, shorter parts do not change it
    (docs/design/14-step-motion-check.md)."""

    enabled: bool = True
    max_depth: int = 4
    failed_splits: int = 2
    watch: bool = True
    retakes: int = 1


@dataclass(frozen=True)
class CrossingWatch:
    """Watches the iterates of one (sub)step's Newton solve for the crossing
    that would have the step split after it converged: Newton's ``watch``
    (:meth:`~solver.newton.Newton.solve`), which stops the solve at an
    iterate that :meth:`crosses`.

    A converged step is split when its straight motion crosses; traced on
    M500's split steps (docs/design/14-step-motion-check.md, Evidence), the
    crossing is a pair in contact at the step's start (a corner sliding past
    an edge), it appears at an iterate mid-solve and stays to the end: the
    iterations after it are spent on a state that is thrown away.  Only those
    pairs are watched, so a look is one batched kernel on the stencils the
    step has at its start, without a broad phase; the end state still gets
    the full check (:func:`crossing_stencils`), and a step the watch lets
    through is kept or split exactly as without it.  x0 (N, 2): the step's
    start; stencils (k, 3): the point-edge pairs watched."""

    x0: np.ndarray
    stencils: np.ndarray
    owners: np.ndarray  # (k, 2) each stencil's point and edge owners, sorted

    @classmethod
    def of_bodies(cls, model, x0, stencils, pairs=None):
        """The watch of the stencils (k, 3) among bodies: a collider's iterates
        are pulled towards its target by penalty rounds, so that its crossings
        mid-solve come and go (stress scene 201: a crushed star and the ceiling
        leading it, 35 iterates crossing, the end not).  pairs (optional, (m, 2)
        sorted owner pairs): only the stencils between those objects."""
        owners = np.sort(first_crossing_owners(model, stencils), axis=1)
        keep = ~model.is_collider[stencils].any(axis=1)
        if pairs is not None:
            keep &= (owners[:, None, :] == pairs[None, :, :]).all(axis=2).any(axis=1)
        return cls(x0, stencils[keep], owners[keep])

    def _crossing(self, x):
        """(k,) bool: which watched stencils the straight motion x0 -> x crosses."""
        st = self.stencils
        return ccd.point_edge_crossings(self.x0[st], (x - self.x0)[st])

    def crosses(self, x) -> bool:
        """Whether the straight motion from x0 to Newton's iterate x (N, 2)
        crosses at a watched pair."""
        return bool(len(self.stencils)) and bool(self._crossing(x).any())

    def crossing_pairs(self, x):
        """(m, 2) the sorted owner pairs of the watched stencils the straight
        motion x0 -> x crosses (an iterate the watch stopped at)."""
        if not len(self.stencils):
            return self.owners
        return np.unique(self.owners[self._crossing(x)], axis=0)


def crossing_stencils(model, x0, x1, groups=None):
    """(k, 3) point-edge stencils [p, e0, e1] whose point meets the edge on the
    straight motion from x0 to x1 (N, 2).  groups: the broad phase's (objects
    that cannot meet themselves, solver/rigid_gaps.py), None: all searched."""
    st = candidate_stencils(model, x0, x1, 0.0, groups=groups)
    if len(st) == 0:
        return st
    hit = ccd.point_edge_crossings(x0[st], (x1 - x0)[st])
    return st[hit]


def describe(model, stencils):
    """The objects the first crossing stencil (k, 3), k > 0, belongs to, in words."""
    p, e0 = stencils[0, 0], stencils[0, 1]
    a, b = model.names[model.owner[p]], model.names[model.owner[e0]]
    return f"'{a}' passes through itself" if a == b else f"'{a}' and '{b}' pass through each other"


def first_crossing_owners(model, stencils):
    """(owner of the point, owner of the edge) of every crossing stencil, (k, 2)."""
    return np.column_stack([model.owner[stencils[:, 0]], model.owner[stencils[:, 1]]])
