"""Prescribed motion: colliders and pins (kinematic vertex groups) follow
their animated targets.

A group snaps straight to its target whenever that motion (everything else
frozen) is collision-free.  A blocked group is driven instead by a penalty
1/2 k m |x - target|^2 on its vertices, with the stiffness k (relative to the
vertex mass, in IP units) growing by ``penalty_growth`` after each converged
Newton solve that leaves it short, for at most ``penalty_rounds`` raises
(:func:`next_round`); after each solve the pending groups try to snap again.

A collider moved into rigid bodies that cannot make room (the step failed, or
squashed one) is *stopped* (``Simulation._stopping``;
docs/design/10-prescribed-motion.md): from then on it stays where the bodies
stopped it, fixed and not driven, until its straight move to its target is
collision-free again and ends farther than dhat from everything, when it snaps there.
Meanwhile it moves on, never to within dhat of anything: with its keys' motion where that
is clear (gliding along the bodies where it stopped pressing them), and towards its keys
where it stands farther than ``stopped_gap`` x dhat from everything, to STOPPED_CLEARANCE x
dhat from the nearest body (:meth:`PrescribedMotion.move_on`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np

from . import ccd
from .broad_phase import Groups
from .contacts import candidate_stencils
from .distance import case_and_distance_sq, distance_sq_gradient


@dataclass(frozen=True)
class PrescribedSettings:
    penalty_start: float = 1e3  # penalty stiffness relative to the vertex mass (IP units)
    penalty_growth: float = 10.0  # factor per raise
    penalty_rounds: int = 4  # raises at most, then the step ends where the penalty holds the group
    # a snap is blocked by a half-plane it would bring a vertex closer to than this x dhat
    plane_clearance: float = 0.1
    # a step that moved a collider into rigid bodies with no room and squashed one, or failed
    # with it pressed into them, is taken again with that collider stopped where it was
    # (False: the step fails or squashes them; docs/design/10-prescribed-motion.md)
    stop_pressed: bool = True
    # a stopped collider farther than this x dhat from everything moves on along its straight move
    # to its keys, to STOPPED_CLEARANCE x dhat from the nearest (it stopped where it was at the
    # step's start)
    stopped_gap: float = 2.0


@dataclass(frozen=True)
class PenaltyRound:
    """Where the schedule stands within a step."""

    pending: tuple[int, ...]  # groups (indices into model.kin_groups) not at their targets
    k_pen: float  # penalty stiffness on their vertices
    rounds: int = 0  # raises of k_pen so far


# where a stopped collider that moves on stops, x dhat from the nearest body: outside dhat (the
# barrier is zero there: it presses nothing), with room to follow its keys sideways over bodies
# that are not quite level (a pile top tilted by 1e-6 over 5 cm is 1e-5 of dhat = 5 mm)
STOPPED_CLEARANCE = 1.1


@dataclass(frozen=True)
class MovingOn:
    """How the stopped groups move on in a (sub)step (:meth:`PrescribedMotion.move_on`)."""

    keys_before: np.ndarray | None = None  # (N, 2): the keys at the (sub)step's start (None: not followed)
    share: float = 1.0  # the (sub)step's share of the step (a part of a split step moves on less)
    kept: tuple[int, ...] = ()  # groups kept stopped whatever their targets (the step that stopped them)


def kinematic_vertices(model):
    """(k,) every prescribed vertex of the model, group after group."""
    groups = model.kin_groups
    return np.concatenate([g.vertices for g in groups]) if groups else np.zeros(0, np.intp)


@dataclass(frozen=True)
class PrescribedMotion:
    """The prescribed motion of one simulation (model: its kin_groups)."""

    model: object
    dhat: float
    settings: PrescribedSettings = field(default_factory=PrescribedSettings)

    @cached_property
    def collider_of_group(self):
        """(n_groups,) int: per kin group, the collider it is (scene order), -1 for pins."""
        m = self.model
        owner = np.array([m.owner[g.vertices[0]] for g in m.kin_groups], np.intp)
        return np.where(owner >= len(m.body_slices), owner - len(m.body_slices), -1)

    @cached_property
    def kin_vertices(self):
        """(k,) every prescribed vertex, group after group."""
        return kinematic_vertices(self.model)

    def targets(self, x, t):
        """(N, 2): x with the prescribed vertices at their targets at time t."""
        target = x.copy()
        for g in self.model.kin_groups:
            target[g.vertices] = g.target(t)
        return target

    def first_round(self, x, target, stopped=(), moving_on=MovingOn()):
        """Start of a step: (x with the groups that can snap at their targets,
        the :class:`PenaltyRound` of the others, the stopped groups that stay
        stopped).  stopped: groups held where the bodies stopped them; those
        that cannot snap, or would end within dhat of something
        (:meth:`clear_at_target`), or are kept (moving_on.kept: those of the step
        being taken again because they stopped, any part of it), stay stopped:
        fixed, not penalized, where they are or moved on (:meth:`move_on`)."""
        kept = moving_on.kept
        held = tuple(gi for gi in stopped if gi in kept or not self.clear_at_target(x, target, gi))
        x, blocked = self.snap(x, target, [gi for gi in range(len(self.model.kin_groups)) if gi not in held])
        pending = tuple(gi for gi in blocked if gi not in stopped)
        still = tuple(sorted(held + tuple(gi for gi in blocked if gi in stopped)))
        for gi in still:
            x = self.move_on(x, target, gi, moving_on)
        return x, PenaltyRound(pending, self.settings.penalty_start), still

    def clear_at_target(self, x, target, gi):
        """Whether group gi at its target is farther than dhat from everything else at x: a
        stopped collider snaps back only where it presses on nothing (a collider whose
        straight move is clear can still end pressing rigid bodies that have no room)."""
        m, v = self.model, self.model.kin_groups[gi].vertices
        y = x.copy()
        y[v] = target[v]
        groups = self._moving_groups(v)
        st = candidate_stencils(m, y, y, self.dhat, groups=groups)
        return not len(st) or bool(np.all(case_and_distance_sq(y[st])[1] > self.dhat**2))

    def move_on(self, x, target, gi, how):
        """x with the stopped group gi moved on, everything else where it is, without coming
        within dhat of anything (at dhat the barrier is zero: it presses nothing):

        1. with its keys' motion of the (sub)step (how.keys_before to target), as far as that
           is clear, when it stands outside dhat of everything (:meth:`_follow`): keys that
           slide it sideways past the bodies take it along, offset by where it stopped, until
           its straight move to them is clear.  Stopped within dhat of the bodies (pressing
           them), it glides along them at its distance instead (:meth:`_glide`), when that
           brings it nearer its keys (keys that press on into the bodies leave it where it
           stopped);
        2. then along its straight move to its keys, when it stands farther than
           ``stopped_gap`` x dhat from everything near its way, by how.share of the way to
           STOPPED_CLEARANCE x dhat from the nearest body (:meth:`_creep`): it stopped where
           it was at the start of the step that stopped it, up to a step of its keyed motion
           from the bodies, and closes that gap.

        Each is a translation, or nothing (keys that turn: part of the way would distort it).
        If the two together make a move that crosses something, the first alone is taken."""
        v = self.model.kin_groups[gi].vertices
        start = x
        if how.keys_before is not None:
            x = self._follow(x, v, target[v] - how.keys_before[v])
            if x is start and self._within_dhat(x, v):  # (keys that press on: it stays)
                x = self._glide(x, v, target[v] - how.keys_before[v], target)
        y = self._creep(x, v, target[v] - x[v], how.share)
        if x is start or y is x or not self.blocked_vertices(start, y - start)[v].any():
            return y
        return x

    def _glide(self, x, v, d, target):
        """x with the vertices v (a stopped collider within dhat of bodies, pressing them)
        moved by the largest of d, d/2 ... d/16 (its keys' translation) that can be made with
        the least added translation along one direction n that keeps every pair near it at
        least as far apart as it is (and those farther than dhat outside dhat), and brings
        them nearer their targets: it glides along the bodies at its distance, neither
        pressing them harder nor giving way to them.  n: the sum of the directions in which
        the pairs left too close grow apart; the distance of a point to a segment is convex
        in a translation, so each of them ends at least as far as its rate of growth along n
        takes it.  The whole move must cross nothing; x itself when no part can be made."""
        for k in range(5):
            y = self._glided(x, v, d * 0.5**k)
            if y is not None and _nearer(y[v], x[v], target[v]):
                return y
        return x

    def _glided(self, x, v, d):
        """:meth:`_glide`'s move for the translation d, or None when it cannot be made."""
        sweep = self._sweep(x, v, d, pad=2.0 * self.dhat)
        if sweep is None:
            return None
        dx, st = sweep
        if not len(st):
            return x + dx
        X = x[st]
        floor = _floors(X, self.dhat)
        case, d2 = case_and_distance_sq(X + dx[st])
        dist = np.sqrt(d2)
        low = dist < floor
        if low.any():
            if not dist[low].min() > 0.0:
                return None  # (touching: no direction to part them)
            moves = np.zeros(len(x), bool)
            moves[v] = True
            g = distance_sq_gradient(X[low] + dx[st[low]], case[low]).reshape(-1, 3, 2)
            rate = (g * moves[st[low]][:, :, None]).sum(axis=1) / (2.0 * dist[low, None])
            n = rate.sum(axis=0)
            along = rate @ n
            if not (np.hypot(*n) > 0.0 and np.all(along > 0.0)):
                return None  # wedged: no one direction parts them all
            lift = float(((floor[low] - dist[low]) / along).max())
            # the whole move, lift and all, swept again: it may reach what d's way did not
            sweep = self._sweep(x, v, d + lift * n, pad=2.0 * self.dhat)
            if sweep is None:
                return None  # (no move at all)
            dx, st = sweep
            X = x[st]
            floor = _floors(X, self.dhat)
        if len(st) and not (
            ccd.point_edge_step(X, dx[st]).min() >= 1.0
            and np.all(np.sqrt(case_and_distance_sq(X + dx[st])[1]) >= floor * (1.0 - 1e-12))
        ):
            return None
        return x + dx

    def _sweep(self, x, v, d, pad=None):
        """(dx (N, 2): d (k, 2) on the vertices v, zero elsewhere; the point-edge stencils
        that come within pad (STOPPED_CLEARANCE x dhat when None) along the straight move
        x -> x + dx), or None when d is not a translation or is zero."""
        # a translation to within what no one sees: its edges change by at most ptp(d) (keys of
        # a deforming collider come as float32 meshes: 1e-9 of its size would refuse them)
        if not np.abs(d).max() > 0.0 or np.ptp(d, axis=0).max() > 1e-3 * self.dhat:
            return None
        m = self.model
        dx = np.zeros_like(x)
        dx[v] = d
        groups = self._moving_groups(v)
        pad = STOPPED_CLEARANCE * self.dhat if pad is None else pad
        return dx, candidate_stencils(m, x, x + dx, pad, groups=groups)

    def _moving_groups(self, v):
        """The broad phase's Groups of the primitives the vertices v move."""
        m = self.model
        moves = np.zeros(m.n, bool)
        moves[v] = True
        return Groups.moving(moves[m.points], moves[m.edges].any(axis=1))

    def _within_dhat(self, x, v):
        """Whether the vertices v stand within dhat of something."""
        m = self.model
        groups = self._moving_groups(v)
        st = candidate_stencils(m, x, x, self.dhat, groups=groups)
        return bool(len(st)) and bool(case_and_distance_sq(x[st])[1].min() < self.dhat**2)

    def _follow(self, x, v, d):
        """x with the vertices v moved by the largest part of the translation d found (halving,
        then bisecting: at most 2^-10 of it, else not moved) whose straight move crosses
        nothing and leaves every pair farther than dhat apart, when they are already (a
        collider stopped within dhat of a body, pressing it, glides instead: :meth:`_glide`)."""
        sweep = self._sweep(x, v, d)
        if sweep is None:
            return x
        dx, st = sweep
        if not len(st):  # nothing within dhat of its way
            return x + dx
        X, dX = x[st], dx[st]
        need = ((1.0 + 1e-9) * self.dhat) ** 2
        if not case_and_distance_sq(X)[1].min() >= need:
            return x
        safe = ccd.point_edge_step(X, dX).min()  # no crossing up to here

        def clear(s):
            return s <= safe and bool(np.all(case_and_distance_sq(X + s * dX)[1] >= need))

        hi = 1.0
        while not clear(hi):
            hi *= 0.5
            if hi < 2.0**-10:
                return x
        lo, hi = hi, 2.0 * hi
        for _ in range(12 if lo < 1.0 else 0):  # (any clear part will do: the last one found)
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if clear(mid) else (lo, mid)
        if lo < 1.0:  # stopped by a body: keep STOPPED_CLEARANCE from it, as a move towards
            return self._creep(x, v, lo * d, 1.0, gap=0.0)  # its keys does
        return x + dx

    def _creep(self, x, v, d, share, gap=None):
        """x with the vertices v moved by share of the part of the translation d that keeps
        them STOPPED_CLEARANCE x dhat from everything (CCD), when they stand farther than gap
        (``stopped_gap`` when None) x dhat from everything near their way; x itself when they
        are nearer or d is no translation."""
        sweep = self._sweep(x, v, d)
        if sweep is None:
            return x
        dx, st = sweep
        if not len(st):  # nothing within dhat of its way (its target is the part's own already)
            return x + dx
        nearest = np.sqrt(case_and_distance_sq(x[st])[1].min())
        gap = self.settings.stopped_gap if gap is None else gap
        if not nearest > max(gap, STOPPED_CLEARANCE) * self.dhat:
            return x
        # every pair keeps at least this fraction of its gap: the nearest one ends
        # STOPPED_CLEARANCE x dhat from it
        s = ccd.point_edge_step(x[st], dx[st], eta=STOPPED_CLEARANCE * self.dhat / nearest).min()
        return x + share * s * dx

    def staying(self, target, x, groups):
        """target with the vertices of groups (indices into kin_groups) where they are in x."""
        if not groups:
            return target
        target = target.copy()
        for gi in groups:
            v = self.model.kin_groups[gi].vertices
            target[v] = x[v]
        return target

    def next_round(self, x, target, current):
        """After a converged Newton solve at x: (x, the next round), or (x,
        None) when the step is done.  Done when nothing is pending, or when
        no pending group can snap and the stiffness was raised
        ``penalty_rounds`` times already.  Otherwise the groups that can snap
        do (the penalty stays), else the stiffness grows."""
        if not current.pending:
            return x, None
        x_snapped, still = self.snap(x, target, current.pending)
        if len(still) < len(current.pending):
            return x_snapped, replace(current, pending=still)
        if current.rounds >= self.settings.penalty_rounds:
            return x, None
        s = self.settings
        return x, replace(current, k_pen=current.k_pen * s.penalty_growth, rounds=current.rounds + 1)

    def masks(self, pending):
        """(fixed, penalized), (N,) bool each: prescribed vertices held at x by
        Newton, and those of the pending groups, free and penalized."""
        m = self.model
        fixed = np.zeros(m.n, bool)
        penalized = np.zeros(m.n, bool)
        fixed[self.kin_vertices] = True
        for gi in pending:
            v = m.kin_groups[gi].vertices
            fixed[v] = False
            penalized[v] = True
        return fixed, penalized

    def snap(self, x, target, pending):
        """Move pending groups straight to their targets when that motion
        (everything else frozen) is collision-free.  Groups whose motion is
        blocked stay pending.  Returns (x, still pending)."""
        groups = self.model.kin_groups
        movers = list(pending)
        while movers:
            dx = np.zeros_like(x)
            for gi in movers:
                v = groups[gi].vertices
                dx[v] = target[v] - x[v]
            blocked = self.blocked_vertices(x, dx)
            stuck = [gi for gi in movers if blocked[groups[gi].vertices].any()]
            if not stuck:
                return x + dx, tuple(gi for gi in pending if gi not in movers)
            movers = [gi for gi in movers if gi not in stuck]
        return x, tuple(pending)

    def blocked_vertices(self, x, dx):
        """(N,) bool: vertices involved in a contact the motion dx cannot make safely."""
        m, dhat = self.model, self.dhat
        blocked = np.zeros(m.n, bool)
        # only pairs with a moving primitive can block: those standing still are not paired
        moves = np.any(dx != 0.0, axis=1)
        groups = Groups.moving(moves[m.points], moves[m.edges].any(axis=1))
        st = candidate_stencils(m, x, x + dx, dhat, groups=groups)
        if len(st):
            toi = ccd.point_edge_step(x[st], dx[st])
            bad = toi < 1.0
            blocked[st[bad].ravel()] = True
        d = m.plane_distances(x + dx)
        blocked[m.hp_points[np.any(d <= self.settings.plane_clearance * dhat, axis=1)]] = True
        return blocked


def _nearer(y, x, target):
    """Whether the vertices at y stand nearer their targets than at x (summed squares), by
    more than rounding (keys that press on glide it back to where it was, give or take ulps)."""
    return float(np.sum((target - y) ** 2)) < (1.0 - 1e-9) * float(np.sum((target - x) ** 2))


def _floors(X, dhat):
    """(k,) how near the point-edge stencils X (k, 3, 2) may come: as near as they are
    within dhat, dhat outside it."""
    return np.minimum(np.sqrt(case_and_distance_sq(X)[1]), (1.0 + 1e-9) * dhat)
