"""Newton's start: where the iterations of a time step begin.

Every body moves by its velocity (x_prev + h v), bodies touching nothing also
by gravity (their x_tilde), as far as the motion stays feasible (CCD).  A body
touching nothing stops only for its own contacts (one landing body does not
hold back the others falling); the bodies touching something share one
fraction, the smallest of theirs (they push on each other).  A contact stops
where ``gap_kept`` of its gap is left, a vertex landing on a half-plane at
``rest`` dhat (see :class:`StartSettings`).

Why not x_tilde for all, nor x_prev, and the measurements
(docs/design/04-newton-start.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from . import ccd
from .prescribed import kinematic_vertices
from .profiling import NullTimers


@dataclass(frozen=True)
class StartSettings:
    """The landing rule: the start stops a vertex that its motion would carry
    from above ``rest`` x dhat to below ``deep`` x dhat of a half-plane at
    ``rest`` x dhat (docs/design/04-newton-start.md)."""

    rest: float = 0.9
    deep: float = 0.8


@dataclass(frozen=True)
class NewtonStart:
    """The start of one simulation.

    contact_set(x0, x1): the contact set swept over the motion x0 -> x1;
    feasible_step(x, dx, cs): (largest feasible alpha <= 1 along dx, the
    contact set swept over it), the same CCD Newton's steps take;
    gap_kept: the fraction of a closing gap a contact keeps (Newton's CCD
    keeps the same)."""

    model: object
    dhat: float
    contact_set: Callable
    feasible_step: Callable
    gap_kept: float
    settings: StartSettings = field(default_factory=StartSettings)
    timers: object = field(default_factory=NullTimers)

    @cached_property
    def kin_vertices(self):
        """(k,) prescribed vertices: the start does not move them."""
        return kinematic_vertices(self.model)

    def guess(self, x, x_coast, x_tilde, touching):
        """Where Newton starts from x (N, 2): x_coast = x_prev + h v for the
        bodies touching something (touching: (n_owners,) bool), x_tilde for
        the others, as far as the move stays feasible.  Returns the start and
        a contact set covering it (or None).  Its energy is left to Newton's
        first line search: a step that converges at its start needs none."""
        m = self.model
        dx = np.where(touching[m.owner][:, None], x_coast, x_tilde) - x
        dx[m.is_collider] = 0.0
        dx[self.kin_vertices] = 0.0
        if not np.any(dx):
            return x, None
        cs = self.contact_set(x, x + dx)
        dx *= self.fractions(x, dx, cs, touching)[m.owner][:, None]
        # every vertex moves along part of its segment: cs covers the scaled motion
        alpha, cs = self.feasible_step(x, dx, cs)
        # cs was swept from x to the guess: it holds every pair within dhat of it
        return x + alpha * dx, cs

    def fractions(self, x, dx, cs, touching):
        """(n_owners,) fraction of its start motion dx (N, 2) each body takes
        (see the module doc).  cs: a contact set swept over x -> x + dx.  The
        fractions are per pair or per vertex; the start's own CCD then checks
        the motion they give together."""
        m, dhat, s = self.model, self.dhat, self.settings
        n_owners = len(touching)
        fraction = np.ones(n_owners + 1)  # the last: colliders, which do not move here
        owner = np.where(m.is_collider, n_owners, m.owner)
        pe = ~cs.pp
        free = ~touching
        free[m.owner[m.is_collider]] = False
        with self.timers("ccd"):
            # with no free body, the pairs' fractions would all go to the shared
            # one, and the start's own CCD takes the same minimum
            if pe.any() and free.any():
                st = cs.idx[pe]
                steps = ccd.point_edge_step(x[st], dx[st], eta=self.gap_kept)
                np.minimum.at(fraction, owner[st].ravel(), np.repeat(steps, st.shape[1]))
            if len(m.hp_points) and len(m.plane_point):
                # (B, H): each boundary vertex against each plane
                d, v = m.plane_distances(x), m.plane_motions(dx)
                landing = (d > s.rest * dhat) & (d + v < s.deep * dhat)
                keep = np.where(landing, s.rest * dhat, self.gap_kept * d)
                steps = ccd.half_plane_steps(d, v, keep).min(axis=1)
                np.minimum.at(fraction, owner[m.hp_points], steps)
        fraction = fraction[:n_owners]
        if touching.any():
            fraction[touching] = fraction[touching].min()
        return fraction

    def touching_bodies(self, x, cs):
        """(n_owners,) bool: bodies with a vertex within dhat of another body,
        a collider or a half-plane at x (cs: a contact set there)."""
        m = self.model
        d2 = cs.cases_and_distance_sq(cs.gather(x))[1] if len(cs) else np.zeros(0)
        near_plane = m.plane_pairs_within(x, self.dhat)[0]
        return self.touching_owners(cs.idx, d2, near_plane)

    def touching_owners(self, stencils, d2, near_plane):
        """(n_owners,) bool: owners of the stencils (n, k) with squared distance
        d2 (n,) below dhat^2 and of the vertices near_plane (n,) within dhat of a half-plane."""
        m, dhat = self.model, self.dhat
        touching = np.zeros(m.n, bool)
        touching[stencils[d2 < dhat * dhat].ravel()] = True
        touching[near_plane] = True
        owners = np.zeros(int(m.owner.max(initial=-1)) + 1, bool)
        owners[m.owner[touching]] = True
        return owners
