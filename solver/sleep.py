"""Sleeping bodies (docs/design/18-sleeping.md): a contact island whose bodies
have all stayed still for a number of steps, with their contacts unchanged
and without speeding up, leaves Newton's system until something touches it.

A sleeping body is held where it is (its DOFs join Newton's fixed ones, its
velocity is zero): to the awake bodies it is an obstacle like a collider, so
the barrier and CCD keep them out of it.  Contact stencils whose vertices are
all held (sleeping bodies, colliders that do not move this step) are left out
of the contact sets: their energy is a constant.  The broad phase does not
form them (the held primitives are one apart group of its queries,
``Simulation._groups``); :meth:`Sleep.keep` drops them from the stencils found
at the state before bodies fell asleep.  With every body asleep and no
collider moving, the step is not solved at all.

Islands wake (all their bodies at once) when

* an awake body or a moving collider ends a step within dhat of them: the
  step is solved again with the island awake (:meth:`Sleep.touched`);
* the external force on one of their vertices (gravity, force fields)
  changes by more than ``force_change`` of its weight, a pin of theirs
  moves, a link of theirs breaks, or the scene's keyframed material
  settings change the model (:meth:`Sleep.begin_step`);
* a probe step comes (every ``probe_every`` steps while something sleeps):
  the step is solved with every body awake, and the islands still still
  after it fall asleep again at once; the largest speed a sleeping body took
  in it is the reported error (:attr:`SleepReport.probe_speed`).

Bodies on links whose anchors move or whose engagement is scheduled, and
bodies with moving pins, never sleep.  Off by default
(:attr:`SleepSettings.enabled`): then nothing here runs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .assembly import eliminate_fixed
from .distance import case_and_distance_sq

# A pair joins a body's contacts (whose change keeps it awake) closer than
# KEY_BAND * dhat, and leaves them only farther than dhat: a pair resting near
# dhat (no force there) flickering across it by rounding is no change.
KEY_BAND = 0.9


@dataclass(frozen=True)
class SleepSettings:
    """When bodies fall asleep and wake (docs/design/18-sleeping.md)."""

    enabled: bool = False
    speed: float = 1.0  # still: every vertex of the body slower than speed * newton_tol
    steps: int = 20  # ... for this many steps in a row, its contacts unchanged, before its island sleeps
    probe_every: int = 100  # while something sleeps, every this many steps one is solved all awake (0: never)
    force_change: float = (
        0.01  # wake when a sleeping vertex's external force changes by this much of its weight
    )
    # ... and none of them sped up by more than acceleration * g over those steps
    # (the solver's own resolution: Newton balances a body's forces to force_tol of its weight)
    acceleration: float = 1e-3


@dataclass(frozen=True)
class SleepReport:
    """What sleeping did in one step (StepStats carries these)."""

    sleeping: int = 0  # bodies asleep at the end of the step
    fell_asleep: int = 0  # bodies put to sleep at the end of the step
    woke: int = 0  # bodies woken during the step
    dropped_energy: float = 0.0  # kinetic energy of the bodies put to sleep [J] (set to zero)
    probe_speed: float = float("nan")  # probe step: largest speed a sleeping body took [m/s]


def components(n, a, b):
    """(n,) the connected component of each of n nodes joined by the edges
    (a[k], b[k]), labelled by its smallest node (no scipy).  Each round hooks
    every tree's root onto the smallest root it meets across an edge, then
    points every node straight at its root (a chain of 20,000 nodes numbered
    at random: 9 rounds, 3 ms; propagating labels node to node took one
    round per few nodes, 2 s)."""
    label = np.arange(n)  # a node's parent: never larger than the node, so the root is the smallest
    while True:
        ra, rb = label[a], label[b]  # roots (label is compressed)
        apart = ra != rb
        if not apart.any():
            return label
        ra, rb = ra[apart], rb[apart]
        np.minimum.at(label, np.maximum(ra, rb), np.minimum(ra, rb))
        while True:
            up = label[label]
            if np.array_equal(up, label):
                break
            label = up


def fixed_q(basis, fixed_dof):
    """(n_q,) bool: the basis' unknowns held by the fixed vertex DOFs
    (fixed_dof (2N,)): those of fixed plain DOFs, and the 6 of every rigid
    body whose vertices are all fixed (a sleeping one)."""
    out = basis.fixed(fixed_dof)
    rigid = np.repeat(basis.vertex_body >= 0, 2)  # rigid bodies' vertex DOFs (not stiff ones)
    if not (fixed_dof & rigid).any():
        return out
    body = basis.vertex_body[np.flatnonzero(rigid) // 2]
    loose = np.bincount(body, ~fixed_dof[rigid], basis.n_rigid)
    held = np.flatnonzero(loose == 0)
    base = basis.a_dofs[held, 0]
    out[(base[:, None] + np.arange(6)).ravel()] = True
    return out


def held_system(system, g, held, first_rigid):
    """(triplets, rhs, free): the Newton system (triplets) for the gradient g
    (fixed unknowns zeroed) with the unknowns held (n,) bool fixed.  Held
    unknowns stay as identity rows (free None), unless a rigid body's are held
    (unknowns from first_rigid on; a sleeping body): then the system holds the
    free unknowns only, renumbered, free their ids (a sleeping pile leaves it)."""
    if not held[first_rigid:].any() or held.all():  # (all held: an identity, a zero step)
        return eliminate_fixed(*system, held), -g, None
    rows, cols, vals = system
    free = np.flatnonzero(~held)
    number = np.full(len(held), -1, np.intp)
    number[free] = np.arange(len(free))
    keep = ~(held[rows] | held[cols])
    return (number[rows[keep]], number[cols[keep]], vals[keep]), -g[free], free


def free_unknowns(model, fixed):
    """How many unknowns Newton solves for with the vertices fixed (N,) bool held."""
    fixed_dof = np.repeat(fixed, 2)
    if model.basis is None:
        return int(np.sum(~fixed_dof))
    return int(np.sum(~fixed_q(model.basis, fixed_dof)))


def _unsleepable(model):
    """(n_bodies,) bool: bodies that never sleep: moving pins, links with
    moving world anchors or an engagement schedule; stiff bodies (holding
    their vertices would not hold their modes' unknowns)."""
    n_b = len(model.body_slices)
    out = np.zeros(n_b, bool)
    out[getattr(model.basis, "stiff_bodies", np.zeros(0, np.intp))] = True
    for g in model.kin_groups:
        moves = len(g.times) > 1 and np.ptp(g.positions, axis=0).any()
        owner = model.owner[g.vertices]
        if moves:
            out[owner[owner < n_b]] = True
    L = model.links
    if L is not None:
        scheduled = L.engaged is not None and not L.engaged.all()
        moving = np.ptp(L.offset, axis=0).any(axis=1) if len(L.times) > 1 else np.zeros(len(L.link), bool)
        owners = model.owner[L.idx]
        owners = np.where(L.coef != 0.0, owners, -1)
        bad = (np.full(len(L.link), scheduled) | moving)[:, None] & (owners >= 0) & (owners < n_b)
        out[owners[bad]] = True
    return out


def _link_pairs(model):
    """(k, 2) owner pairs of bodies a link joins (one island), (k,) its link."""
    L = model.links
    n_b = len(model.body_slices)
    if L is None:
        return np.zeros((0, 2), np.intp), np.zeros(0, np.intp)
    owners = np.where(L.coef != 0.0, model.owner[L.idx], -1)
    owners = np.where(owners < n_b, owners, -1)
    first = owners.max(axis=1)  # one body of the spring, then every other with it
    a = np.repeat(first, owners.shape[1])
    b = owners.ravel()
    link = np.repeat(L.link, owners.shape[1])
    keep = (a >= 0) & (b >= 0) & (a != b)
    return np.column_stack([a[keep], b[keep]]), link[keep]


class Sleep:
    """Which bodies sleep, between steps (see the module docstring).

    The simulation calls :meth:`begin_step` before a step's solve,
    :meth:`touched` after it (solving again when it wakes something), and
    :meth:`end_step` once the step is committed.  :attr:`held` (N,) bool
    (None when nothing sleeps): vertices whose contacts among themselves are
    not evaluated; :attr:`asleep_vertex` (N,) bool: vertices Newton holds."""

    def __init__(self, model, settings: SleepSettings, params, g_ref):
        self.settings = settings
        self.mass = model.mass
        self.threshold = settings.speed * params.newton_tol
        self.dhat = params.dhat
        self.g_ref = g_ref
        self.max_acceleration = settings.acceleration * g_ref
        self.n_bodies = n_b = len(model.body_slices)
        self.vertex_body = np.where(model.is_collider, -1, model.owner)
        self.is_collider = model.is_collider
        self.n_owners = len(model.names)
        self.n_keys = self.n_owners + len(model.plane_point)  # contact partners: owners, then planes
        self.asleep = np.zeros(n_b, bool)
        self.still = np.zeros(n_b, np.intp)
        self.run_speed = np.zeros(n_b)  # fastest vertex speed at the first still step of the run
        self.run_time = np.zeros(n_b)  # time since then [s] (set anew when a run starts: still == 0)
        self.island = np.full(n_b, -1, np.intp)
        self.next_island = 0
        self.keys = np.zeros(0, np.int64)  # the awake bodies' contacts at the last step's end
        self.force_ref = np.zeros((model.n, 2))  # external force when each vertex fell asleep
        self.force_limit_sq = (settings.force_change * self.mass * g_ref) ** 2  # its change that wakes
        self.unsleepable = _unsleepable(model)
        self.link_pairs, self.link_of_pair = _link_pairs(model)
        self.held = None
        self.asleep_vertex = np.zeros(model.n, bool)
        # stencils within dhat among sleeping bodies (and still colliders) when they
        # fell asleep: the contact sets leave them out, the reported distances must not
        self.slept = np.zeros((0, 3), np.intp)
        self._held_d = None  # their distances while held stays the same
        self._moving = np.zeros(model.n, bool)  # prescribed vertices moving this step
        self.since_probe = 0
        self.was_asleep = None  # a probe step: the bodies asleep before it
        self.woke = 0
        self.everything_held = False

    @property
    def enabled(self):
        return self.settings.enabled

    def reset(self):
        """Every body awake, nothing counted (a restored checkpoint: sleeping is
        not part of the state it stores; still islands fall asleep again)."""
        self.asleep[:] = False
        self.still[:] = 0
        self.island[:] = -1
        self.keys = np.zeros(0, np.int64)
        self.since_probe = 0
        self.was_asleep = None
        self._hold(np.zeros(len(self.vertex_body), bool))

    # ---------------------------------------------------------------- waking
    def wake(self, bodies):
        """Wake the islands of the bodies (n_bodies,) bool that sleep."""
        hit = bodies & self.asleep
        if not hit.any():
            return
        woken = self.asleep & np.isin(self.island, self.island[hit])
        self.asleep &= ~woken
        self.still[woken] = 0
        self.island[woken] = -1
        self.woke += int(woken.sum())
        self._hold(self._moving)
        awake_body = (self.vertex_body >= 0) & ~self.asleep_vertex
        self.slept = self.slept[~awake_body[self.slept].any(axis=1)]  # kept again, evaluated

    def _bodies_of(self, vertices):
        """(n_bodies,) bool: the bodies owning the vertices (indices or (N,) bool)."""
        out = np.zeros(self.n_bodies, bool)
        b = self.vertex_body[vertices]
        out[b[b >= 0]] = True
        return out

    def wake_links(self, broken):
        """Wake the bodies of the links (indices) that broke."""
        hit = np.zeros(self.n_bodies, bool)
        hit[self.link_pairs[np.isin(self.link_of_pair, broken)].ravel()] = True
        self.wake(hit)

    def begin_step(self, x_prev, target, force, model_changed):
        """Before a step's solve: wake the islands whose inputs changed (force
        (N, 2): each vertex's external force, gravity included, for the step;
        model_changed: keyframed settings changed the model), start a probe
        step when one is due, and set :attr:`held` for the step.  Returns
        whether anything woke (the contacts at the state then need a full
        broad phase: those among sleeping bodies were not kept)."""
        self.woke = 0
        # (per column: reductions over a length-2 axis cost a settled pile's step several times more)
        moving = (target[:, 0] != x_prev[:, 0]) | (target[:, 1] != x_prev[:, 1])
        self._moving = moving
        if not self.asleep.any():
            self._hold(moving)
            return False
        s = self.settings
        if model_changed:
            self.wake(self.asleep.copy())
        d = force - self.force_ref
        changed = d[:, 0] * d[:, 0] + d[:, 1] * d[:, 1] > self.force_limit_sq
        self.wake(self._bodies_of(np.flatnonzero((changed | moving) & self.asleep_vertex)))
        self.since_probe += 1
        if s.probe_every and self.since_probe >= s.probe_every and self.asleep.any():
            self.since_probe = 0
            self.was_asleep = self.asleep.copy()
            self.wake(self.asleep.copy())
            self.woke = 0  # a probe wakes nobody for good: counted when they stay awake
            self._hold(moving)
            return True
        self._hold(moving)
        return self.woke > 0

    def _hold(self, moving):
        self.asleep_vertex = (self.vertex_body >= 0) & self.asleep[np.maximum(self.vertex_body, 0)]
        held = None
        if self.asleep.any():
            held = self.asleep_vertex | (self.is_collider & ~moving)
        if held is None or self.held is None or not np.array_equal(held, self.held):
            self._held_d = None
            self.held = held  # (a new array only when it changes: the broad phase's groups follow it)
        self.everything_held = held is not None and bool(held.all())

    def held_distances(self, x):
        """(k,) the distances at x of the pairs within dhat that the contact
        sets leave out this step (all their vertices held), known from when their
        island fell asleep: a reported smallest distance covers them too.
        Held vertices do not move: measured again only when held changes."""
        if self.held is None or not len(self.slept):
            return np.zeros(0)
        if self._held_d is None:
            st = self.slept[self.held[self.slept].all(axis=1)]
            self._held_d = np.sqrt(case_and_distance_sq(x[st])[1]) if len(st) else np.zeros(0)
        return self._held_d

    def touched(self, stencils, x, dhat):
        """Wake the islands an awake vertex (a body's or a moving collider's)
        is within dhat of at x, for the point-edge stencils (k, 3) of a
        contact set holding every pair within dhat of x; returns whether it
        woke any (the step is then solved again)."""
        if self.held is None or not len(stencils):
            return False
        mixed = self.asleep_vertex[stencils].any(axis=1) & (~self.held[stencils]).any(axis=1)
        if not mixed.any():
            return False
        st = stencils[mixed]
        near = case_and_distance_sq(x[st])[1] < dhat * dhat
        if not near.any():
            return False
        self.wake(self._bodies_of(st[near].ravel()))
        return True

    def keep(self, stencils):
        """The stencils (k, 3) whose energy can change this step: not all held
        (for stencils found before held grew: the broad phase's queries leave
        the held ones out themselves)."""
        if self.held is None or not len(stencils):
            return stencils
        return stencils[~self.held[stencils].all(axis=1)]

    # ---------------------------------------------------------------- sleeping
    def end_step(self, v, contacts, force, h):
        """After a committed (sub)step of length h with velocities v (N, 2):
        count still steps, put still islands to sleep (their velocities
        zeroed in v, in place).  contacts: (a, b, d, stencils): the owner
        pairs (a, b) within dhat at the step's end (planes numbered after the
        owners), their distances d, and the point-edge stencils within dhat
        there; force (N, 2) the step's external force.  Returns the step's
        :class:`SleepReport`."""
        if self.was_asleep is None and self.asleep.all():  # a settled scene's steps: nothing to count
            self.keys = np.zeros(0, np.int64)
            return SleepReport(self.n_bodies, 0, self.woke, 0.0, np.nan)
        a, b, d, stencils = contacts
        speed = np.hypot(v[:, 0], v[:, 1])
        on = self.vertex_body >= 0
        fastest = np.zeros(self.n_bodies)
        np.maximum.at(fastest, self.vertex_body[on], speed[on])
        awake = ~self.asleep
        still = awake & (fastest < self.threshold) & ~self._contacts_changed(a, b, d, awake)
        ready = self._count_still(still, awake, fastest, h)
        if self.was_asleep is not None:  # a probe step: the still ones go back to sleep
            ready |= self.was_asleep & (fastest < self.threshold) & ~self.unsleepable
        report = self._fall_asleep(ready, a, b, v, force, stencils)
        probe = float(fastest[self.was_asleep].max(initial=0.0)) if self.was_asleep is not None else np.nan
        if self.was_asleep is not None:  # those of the probe that stay awake were woken by it
            self.woke += int(np.sum(self.was_asleep & ~self.asleep))
        self.was_asleep = None
        self._hold(self._moving)
        return SleepReport(int(self.asleep.sum()), report[0], self.woke, report[1], probe)

    def _contacts_changed(self, a, b, d, awake):
        """(n_bodies,) bool: awake bodies whose contact partners changed since
        the last step, with hysteresis: a pair joins them closer than
        KEY_BAND dhat, leaves them farther than dhat."""
        ends, partners = np.concatenate([a, b]), np.concatenate([b, a])  # both ways
        close = np.concatenate([d, d]) < KEY_BAND * self.dhat
        mine = (ends < self.n_bodies) & awake[np.minimum(ends, self.n_bodies - 1)]
        key = ends.astype(np.int64) * self.n_keys + partners
        near = np.unique(key[mine])
        keys = np.union1d(key[mine & close], np.intersect1d(near, self.keys, assume_unique=True))
        changed = np.zeros(self.n_bodies, bool)
        changed[(np.setxor1d(keys, self.keys) // self.n_keys).astype(np.intp)] = True
        self.keys = keys
        return changed

    def _count_still(self, still, awake, fastest, h):
        """Count still steps; (n_bodies,) bool: the bodies ready to sleep: still
        for `steps` steps, and not speeding up over them by more than
        max_acceleration (a block just past its friction angle accelerates
        from rest while slower than the threshold: it must not sleep)."""
        start = still & (self.still == 0)
        self.run_speed[start] = fastest[start]
        self.run_time = np.where(still & ~start, self.run_time + h, 0.0)
        self.still = np.where(still, self.still + 1, np.where(awake, 0, self.still))
        steady = fastest - self.run_speed <= self.max_acceleration * self.run_time
        return still & (self.still >= self.settings.steps) & steady & ~self.unsleepable

    def _fall_asleep(self, ready, a, b, v, force, stencils):
        """Put to sleep the awake islands whose bodies are all ready; returns
        (bodies put to sleep, their kinetic energy dropped).  stencils: those
        within dhat at the step's end (the new sleepers' join slept)."""
        if not ready.any():  # (most steps: no islands to build)
            return 0, 0.0
        body = (a < self.n_bodies) & (b < self.n_bodies)
        ea = np.concatenate([a[body], self.link_pairs[:, 0]])
        eb = np.concatenate([b[body], self.link_pairs[:, 1]])
        label = components(self.n_bodies, ea, eb)
        blocked = np.zeros(self.n_bodies, bool)
        np.logical_or.at(blocked, label, ~ready | self.asleep)
        # an island touching a moving collider moves with it (not still): no test needed
        sleepy = ~blocked[label] & ~self.asleep
        if not sleepy.any():
            return 0, 0.0
        self.asleep |= sleepy
        self.island[sleepy] = self.next_island + label[sleepy]
        self.next_island += self.n_bodies
        verts = (self.vertex_body >= 0) & sleepy[np.maximum(self.vertex_body, 0)]
        dropped = 0.5 * float(np.sum(self.mass[verts] * np.sum(v[verts] ** 2, axis=1)))
        v[verts] = 0.0
        self.force_ref[verts] = force[verts]
        self.still[sleepy] = 0
        held = verts | self.is_collider  # (a moving collider's stencils are kept while it moves)
        new = verts[stencils].any(axis=1) & held[stencils].all(axis=1)
        self.slept = np.concatenate([self.slept, stencils[new]])
        return int(sleepy.sum()), dropped
