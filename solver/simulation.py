"""Time stepping, stage by stage (``Simulation.step``):

1. prescribed targets and the inertial predictor x_tilde = x + h v + h^2 g;
2. adaptive barrier stiffness: balanced once, when contact first appears
   (solver/barrier_stiffness.py);
3. lagged friction and the step's constants;
4. prescribed motion: groups snap to their targets where that is
   collision-free (solver/prescribed.py);
5. Newton's start: coasting / falling bodies, landing ones stopped near
   where they will rest (solver/start.py);
6. Newton (exact Hessian while positive definite, PSD-projected otherwise,
   CCD-filtered backtracking line search), repeated by the penalty schedule
   of the prescribed groups still short of their targets (snap, else a
   stiffer penalty);
7. the summary: velocities, contact distances, collider lag, and the
   stiffness doubled after a step that ended too close (barrier_stiffness).
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import time as _time
import warnings
from dataclasses import dataclass

import numpy as np

from . import barrier_stiffness, ccd, fields, links, motion_check
from .animated import AnimatedModel
from .basis import RIGID_STRAIN_LIMIT, rigid_strains
from .broad_phase import CandidateCache, Groups
from .closing_pairs import Closing
from .collider_check import collider_status, pressed_note
from .contacts import build_contact_set, candidate_stencils, pair_friction, plane_friction
from .distance import case_and_distance_sq
from .errors import ConvergenceError
from .friction import MOLLIFIERS, FrictionSet
from .io import checkpoint as _checkpoint
from .linsolve import BandOrdering
from .newton import Newton
from .potential import IncrementalPotential, StepConstants
from .prescribed import MovingOn, PrescribedMotion
from .profiling import Timers
from .rest_gaps import fit_dhat
from .rigid_gaps import RigidGaps
from .settings import SolverSettings
from .sleep import Sleep, SleepReport, components, free_unknowns
from .start import NewtonStart
from .validate import check_initial_geometry

_NO_CROSSING = np.zeros((0, 3), np.intp)  # no stencil crosses
# a rigid body crushed in a step: past RIGID_STRAIN_LIMIT and strained by this fraction of it
# more than at the step's start (docs/design/10-prescribed-motion.md, item 5)
CRUSH_RISE = 0.1


@dataclass(frozen=True)
class StepStats:
    """Diagnostics of one time step."""

    step: int  # 1-based index of the step just taken
    time: float  # simulated time after the step [s]
    newton_iters: int  # Newton iterations used (all penalty rounds and substeps, split solves too)
    converged: bool
    min_distance: float  # smallest contact distance at the end of the step [m] (inf if nothing near)
    active_contacts: int  # contacts closer than dhat at the end of the step
    min_alpha: float  # smallest accepted line-search step in this step
    wall_time: float  # seconds
    collider_lag: float  # max distance of a prescribed vertex from its target [m]
    kappa: float  # barrier stiffness used
    message: str = ""
    # smallest distance between the bodies and the colliders at their ANIMATED (target)
    # positions [m], which the bodies may overlap while a blocked collider lags behind:
    # negative = minus the overlap depth (solver/collider_check.py), inf = no collider near
    animated_collider_distance: float = float("inf")
    collider_lags: tuple[float, ...] = ()  # per collider (scene order): max vertex lag [m]
    animated_collider_distances: tuple[float, ...] = ()  # per collider, as above [m]
    # the motion check (solver/motion_check.py): how often a (sub)step's straight
    # motion crossed and was split in halves, the substeps taken (1: none), and
    # the substeps kept although their motion still crosses (at the depth limit)
    motion_splits: int = 0
    substeps: int = 1
    motion_unresolved: int = 0
    # (sub)steps whose Newton solve did not converge, taken again as two halves
    # (docs/design/14-step-motion-check.md)
    failure_splits: int = 0
    broken_links: tuple[str, ...] = ()  # the links whose force passed break_force in this step
    # sleeping bodies (solver/sleep.py): asleep, woken, put to sleep, energy dropped, probe speed
    sleep: SleepReport = dataclasses.field(default_factory=SleepReport)
    unknowns: int = 0  # unknowns of the step's last Newton system (0: the step needed no solve)
    contacts_evaluated: int = 0  # point-edge stencils in the step's last contact set
    # per body (scene order): a rigid body's largest principal strain |stretch - 1| at
    # the step's end (0 for the others; empty without rigid bodies). Above
    # basis.RIGID_STRAIN_LIMIT something crushes it (or pins pull it apart)
    rigid_strains: tuple[float, ...] = ()
    # the colliders stopped where the bodies stopped them at the step's end (a step that
    # moved them into rigid bodies it failed on or squashed, taken again with them held; they
    # snap to their keys again once that move is clear and ends farther than dhat from the
    # bodies: docs/design/10-prescribed-motion.md)
    stopped_colliders: tuple[str, ...] = ()


@dataclass(frozen=True)
class Trajectory:
    """Result of :func:`simulate`.

    times: (S+1,); body_positions: tuple over bodies of (S+1, n_i, 2);
    collider_positions: tuple over colliders of (S+1, k_j, 2); stats: tuple of S StepStats.
    """

    times: np.ndarray
    body_positions: tuple[np.ndarray, ...]
    collider_positions: tuple[np.ndarray, ...]
    stats: tuple[StepStats, ...]
    notes: tuple[str, ...] = ()  # what the simulation changed in the scene (Simulation.notes)

    @property
    def motion_check_summary(self):
        """(steps split by the motion check, substeps kept although crossing)."""
        split = sum(1 for s in self.stats if s.motion_splits)
        return split, sum(s.motion_unresolved for s in self.stats)


@dataclass(frozen=True)
class _Rounds:
    """Newton's solves of one (sub)step (Simulation._newton_rounds): the last
    iterate x and a contact set holding every pair within dhat of it, the
    last solve's NewtonResult, the iterations of all solves, whether the last
    round converged, the smallest line-search step and the vertices held."""

    x: np.ndarray
    contacts: object
    last: object
    iters: int
    converged: bool
    min_alpha: float
    fixed: np.ndarray


@dataclass(frozen=True)
class _Solved:
    """A Newton solve of one (sub)step: the end state x from x_prev, the
    prescribed targets, a contact set holding every pair within dhat of x,
    and how the solve went (iterations over all penalty rounds)."""

    x: np.ndarray
    x_prev: np.ndarray
    target: np.ndarray
    contacts: object
    iters: int
    converged: bool
    min_alpha: float
    message: str
    vertex: int
    wall_time: float
    unknowns: int = 0  # Newton's free unknowns in the last solve (0: not solved, everything asleep)
    watched: bool = False  # stopped by its watch: an iterate's motion crossed (not converged)
    stopping_pairs: np.ndarray | None = None  # watched: the owner pairs (k, 2) that crossed
    stopped: tuple[int, ...] = ()  # the collider groups that stay stopped (PrescribedMotion.first_round)
    driven: tuple[int, ...] = ()  # the collider groups it drove by their penalty (they could not snap)

    def merged(self, later):
        """The two halves of a split step as one: later's end, both efforts."""
        return _Solved(
            later.x,
            self.x_prev,
            later.target,
            later.contacts,
            self.iters + later.iters,
            self.converged and later.converged,
            min(self.min_alpha, later.min_alpha),
            self.message if not self.converged else later.message,
            self.vertex if not self.converged else later.vertex,
            self.wall_time + later.wall_time,
            later.unknowns,
            stopped=later.stopped,
            driven=tuple(sorted(set(self.driven) | set(later.driven))),
        )


@dataclass(frozen=True)
class _Summary:
    """The end state of a step: smallest contact distance, contacts closer
    than dhat, collider lag (max and per collider), animated collider distances."""

    d_min: float
    n_active: int
    lag: float
    col_lags: np.ndarray
    col_dist: np.ndarray


@dataclass
class _MotionTally:
    """What the motion check did during one step (see StepStats)."""

    splits: int = 0
    failure_splits: int = 0
    substeps: int = 0
    unresolved: int = 0
    first_unresolved: str = ""
    unresolved_depth: int = 0  # the deepest halving among the unresolved substeps
    rejected_iters: int = 0  # Newton iterations of the solves split afterwards

    def restart(self, earlier, rejected_iters):
        """Back to the counts of earlier (a copy), with rejected_iters (a step taken again)."""
        for f in dataclasses.fields(self):
            setattr(self, f.name, getattr(earlier, f.name))
        self.rejected_iters = rejected_iters


class Simulation:
    """Incremental simulation of a :class:`~solver.scene.Scene`.

    ``Simulation(scene)`` validates the scene (raises SolverInputError),
    ``step()`` advances one time step and returns StepStats,
    ``body_positions(i)`` / ``collider_positions(j)`` give current (n,2) arrays,
    ``time`` and ``step_index`` tell where we are.  ``settings``: the
    solver's numeric policy (:class:`~solver.settings.SolverSettings`, its
    defaults when None).
    """

    def __init__(self, scene, *, settings: SolverSettings | None = None):
        fit = fit_dhat(scene)  # a body closer than dhat to itself at rest: dhat below its gap
        scene = fit.scene
        # what the simulation changed in the scene, and why (for the user)
        self.notes = (fit.note,) if fit.note else ()
        for note in self.notes:
            warnings.warn(note, UserWarning, stacklevel=2)
        self.scene = scene
        self.params = p = scene.params
        self.settings = s = SolverSettings() if settings is None else settings
        self._animated = AnimatedModel(scene, fit.model)  # keyframed settings (solver/animated.py)
        self.model = m = self._animated.base
        self._step_model = m  # the model of the step being solved (solver/animated.py)
        self.x = m.rest.copy()
        self.v = m.velocity.copy()
        check_initial_geometry(m, self.x, p.dhat)
        self.time = 0.0
        self.step_index = 0
        # which links still hold (a breakable one is removed after a step ending above its force)
        self.link_active = np.ones(len(m.links) if m.links is not None else 0, bool)
        self._link_step_start = None  # (x, time) the last (sub)step started from
        self.kappa_auto = p.kappa is None
        self.kappa = (
            barrier_stiffness.auto_kappa(scene, s.barrier_stiffness) if self.kappa_auto else float(p.kappa)
        )
        self.kappa_min = self.kappa
        self.kappa_balanced = False  # auto kappa: balanced once, when contact first appears
        body = ~m.is_collider
        self.mean_mass = float(m.mass[body].mean())
        self.gravity = np.asarray(p.gravity, float)
        # sleeping bodies (solver/sleep.py; off by default: then it holds nothing)
        self._sleep = Sleep(m, s.sleep, p, float(np.hypot(*self.gravity)) or 9.81)
        self._sleep_report = SleepReport()
        self._step_force = None  # the (sub)step's external force per vertex, for sleeping
        self._end_contacts = None  # pairs within dhat at the state, for sleeping (Sleep.end_step)
        self.timers = Timers()  # seconds per stage, for benchmarks
        # the broad phase's pairs, reused while they cover the motion
        self._candidates = CandidateCache()
        self._held_groups = (None, None)  # (Sleep.held, the owners' Groups with it one more, apart)
        # rigid bodies whose own features cannot meet over a query: their own pairs are skipped
        self._rigid_gaps = (
            RigidGaps(m, p.dhat, s.ccd_gap_kept) if m.basis is not None and m.basis.n_rigid else None
        )
        self._prescribed = PrescribedMotion(m, p.dhat, s.prescribed)
        self.kin_vertices = self._prescribed.kin_vertices
        # colliders held where the bodies stopped them (kin_groups indices; _stop_colliders)
        self._stopped_colliders = ()
        # ... and those stopped in the step being taken again (_stop_colliders): every part of
        # it keeps them stopped, whatever its own target (a split would otherwise release them)
        self._holding = ()
        self._step_length = self.params.dt
        self._start = NewtonStart(
            m,
            p.dhat,
            self._contact_set,
            self._feasible_step,
            s.ccd_gap_kept,
            s.start,
            self.timers,
        )
        self._state_stencils = None  # contact candidates at self.x, found by the last step
        self._state_touching = None  # (those stencils, bodies touching something at self.x)
        # a closing pair may close to where a landing contact comes to rest (the start's rule)
        keep = s.start.rest * p.dhat
        self._closing = Closing(self.model.owner, p.dhat, keep, s.ccd_gap_kept)
        self._newton = Newton(
            p,
            self._feasible_step,
            lambda x: self._contact_set(x, x),
            BandOrdering(),
            self.timers,
            s.newton,
            self._closing_rows if s.newton.closing_rounds > 0 else None,
        )

    # ------------------------------------------------------------ accessors
    def body_positions(self, i):
        return self.x[self.model.body_slices[i]].copy()

    def collider_positions(self, j):
        return self.x[self.model.collider_slices[j]].copy()

    @property
    def positions(self):
        """All vertices (N,2): bodies first, then colliders."""
        return self.x.copy()

    # ------------------------------------------------------------ checkpoints
    def checkpoint(self):
        """The state after the steps taken so far, as a :class:`~solver.io.checkpoint.Checkpoint`:
        a fresh ``Simulation`` of the same scene restored from it continues bit for bit."""
        return _checkpoint.take(self)

    def restore(self, checkpoint):
        """Continue from ``checkpoint`` (taken from a simulation of the same scene; raises
        SolverInputError otherwise)."""
        _checkpoint.restore(self, checkpoint)
        self._sleep.reset()  # not part of a checkpoint: every body awake
        links.rejoin_separated(self.scene, self.model, self.link_active, self.x)

    @classmethod
    def from_checkpoint(cls, scene, checkpoint, *, settings: SolverSettings | None = None):
        sim = cls(scene, settings=settings)
        sim.restore(checkpoint)
        return sim

    # ------------------------------------------------------------ stepping
    def step(self, dt: float | None = None):
        """Advance one time step (of dt, params.dt when None: the add-on refines a
        frame with shorter steps); returns StepStats (raises ConvergenceError in strict mode).

        The step's straight motion is checked (solver/motion_check.py): where a
        primitive would pass through another, the step is taken again as two
        halves, recursively; so is a step whose Newton solve did not converge,
        once (docs/design/14-step-motion-check.md)."""
        t_start = _time.perf_counter()
        h = self.params.dt if dt is None else dt
        self._step_length = h  # (its parts' share of it: how far a stopped collider moves on)
        tally = _MotionTally()
        start = self._part_start() if self._stops_colliders else None
        solved, summary = self._advance(h, self.time + h, 0, tally)
        if start is not None:
            stopping = self._stopping(start, solved, summary)
            if stopping:
                solved, summary, tally = self._stop_colliders(h, start, stopping, solved, tally)
        self.step_index += 1
        broken = self._break_links()
        if broken and self._sleep.enabled:
            self._sleep.wake_links([self.model.links.names.index(name) for name in broken])
        # bodies kept apart only by links that broke collide again once apart
        links.rejoin_separated(self.scene, self.model, self.link_active, self.x)
        return self._step_stats(solved, summary, tally, t_start, broken)

    @functools.cached_property
    def _stops_colliders(self):
        """Whether a step may stop the colliders the bodies cannot make room for: only rigid
        bodies cannot (docs/design/10-prescribed-motion.md, item 5)."""
        s = self.settings.prescribed
        return s.stop_pressed and len(self.model.collider_slices) > 0 and bool(self._rigid_bodies.any())

    def _stopping(self, start, solved, summary):
        """The colliders (kin_groups indices) the step just taken moved into rigid bodies that
        cannot make room (start: _part_start).  A collider that moved in this step (snapped
        onto its keys or driven by its penalty), not stopped already, is stopping when the
        bodies it reaches at the step's end (those it touches within dhat, those touching
        them and so on: a lid on a plate on pebbles) hold a rigid body strained past
        basis.RIGID_STRAIN_LIMIT and by CRUSH_RISE of it more than at the step's start, or
        hold a rigid body while
        the collider was driven and the step did not converge with it pressed into the bodies
        (at its keys it overlaps them: collider_check.pressed).  A collider reaching
        deformable bodies only, or whose step strained a body out of its reach, is not
        stopped (docs/design/10-prescribed-motion.md, item 5)."""
        m = self.model
        x0 = start[0]["x"]
        collider = self._prescribed.collider_of_group
        moved = [
            gi
            for gi, group in enumerate(m.kin_groups)
            if collider[gi] >= 0
            and gi not in self._stopped_colliders
            and (gi in solved.driven or np.any(self.x[group.vertices] != x0[group.vertices]))
        ]
        if not moved:
            return ()
        n_b = len(m.body_slices)
        strains = rigid_strains(m.basis, self.x, n_b)
        crushed = strains > RIGID_STRAIN_LIMIT
        if crushed.any():
            # crushed: past the limit, and a tenth of it more than at the step's start (a body
            # strained by its pins and holding still rises by ~1e-7 a step, a crush by 1e-3 to 0.1)
            crushed &= strains - rigid_strains(m.basis, x0, n_b) > CRUSH_RISE * RIGID_STRAIN_LIMIT
        failed = () if solved.converged else solved.driven
        pressed = {gi for gi in failed if summary.col_dist[collider[gi]] < 0.0}
        moved = [gi for gi in moved if gi in pressed or crushed.any()]
        if not moved:
            return ()
        a, b = self._touching_owners()
        inner = (a < n_b) & (b < n_b)  # colliders join nothing
        cluster = components(n_b, a[inner], b[inner])
        out = []
        for gi in moved:
            c = n_b + collider[gi]
            touched = np.concatenate([b[a == c], a[b == c]])
            reach = np.isin(cluster, cluster[touched[touched < n_b]])
            if crushed[reach].any() or (gi in pressed and self._rigid_bodies[reach].any()):
                out.append(gi)
        return tuple(out)

    def _touching_owners(self):
        """(a, b): the owners (bodies, then colliders) of each point-edge pair within dhat at
        the state's x (from the state's contact stencils)."""
        st = self._state_stencils if self._state_stencils is not None else np.zeros((0, 3), np.intp)
        if len(st):
            st = st[case_and_distance_sq(self.x[st])[1] < self.params.dhat**2]
        return self.model.owner[st[:, 0]], self.model.owner[st[:, 1]]

    @functools.cached_property
    def _rigid_bodies(self):
        """(n_bodies,) bool: the rigid bodies."""
        return np.array([b.kind == "rigid" for b in self.scene.bodies], bool)

    def _stop_colliders(self, h, start, stopping, solved, tally):
        """The step just taken (solved, tally: its own) moved colliders (stopping: their
        kin_groups indices, _stopping) into rigid bodies that cannot make room: taken
        again from its start (start: _part_start) with those colliders stopped where
        they were.  Bodies that cannot make room (rigid shapes, jammed in a box or not)
        cannot balance the penalty that drives a collider to its keys: the step fails, or
        the penalty wins and squashes them.  Stopped, a collider
        stays until its keys move clear (docs/design/10-prescribed-motion.md).  Returns
        (solved, summary, tally) of the second try, the first try's iterations rejected."""
        m = self.model
        self._restart_part(start)
        self._stopped_colliders = tuple(sorted(set(self._stopped_colliders) | set(stopping)))
        names = ", ".join(f"'{m.kin_groups[gi].name}'" for gi in stopping)
        warnings.warn(
            f"step {self.step_index + 1} (t = {self.time + h:.4g} s): collider {names} stopped where it "
            "was: the bodies it presses cannot make room; it stays there until its keys move clear",
            RuntimeWarning,
            stacklevel=3,
        )
        again = _MotionTally(rejected_iters=tally.rejected_iters + solved.iters)
        self._holding = tuple(stopping)
        try:
            solved, summary = self._advance(h, self.time + h, 0, again)
        finally:
            self._holding = ()
        return solved, summary, again

    def _break_links(self):
        """Remove the breakable links whose force at the new state exceeds their
        break_force (damping measured over the last (sub)step); returns their names."""
        m = self.model
        if m.links is None or not self.link_active.any():
            return ()
        x_prev, t_prev = self._link_step_start
        springs = links.step_springs(m.links, self.link_active, x_prev, t_prev, self.time)
        if springs is None:  # every link released (engaged schedules)
            return ()
        force = links.link_forces(springs, self.x, len(m.links))
        broken = self.link_active & (force > m.links.break_force)
        self.link_active = self.link_active & ~broken
        return tuple(m.links.names[i] for i in np.flatnonzero(broken))

    def _advance(self, h, t_next, depth, tally, failed=0, pairs=None, split_to=0):
        """Move the state to time t_next (h after it): one solve, or two of h / 2
        when the solve's straight motion crosses or it did not converge
        (depth: halvings so far; failed: of them, those after a solve that
        did not converge; pairs: the owner pairs whose crossing stopped the
        watched solve this part halves, or None; split_to: parts above this
        depth are halved unsolved, see _in_parts).  Returns (the solves'
        merged _Solved, the end state's _Summary)."""
        if depth < split_to:  # the step in fewer parts crossed as a whole (_in_parts)
            tally.splits += 1
            return self._halves(h, t_next, depth, tally, failed, pairs, split_to)
        rewind = (self.kappa, self.kappa_balanced, self._newton.start_projected)
        watch = self._watches(depth, failed, pairs)
        solved = self._solve(h, t_next, watch=watch, pairs=pairs)
        while (
            not solved.watched
            and self._sleep.enabled
            and self._sleep.touched(solved.contacts.idx[~solved.contacts.pp], solved.x, self.params.dhat)
        ):
            # an awake body reached a sleeping island: solve the step again with it awake
            tally.rejected_iters += solved.iters
            self.kappa, self.kappa_balanced, self._newton.start_projected = rewind
            self._state_stencils = None  # the contacts among the woken bodies were not kept
            solved = self._solve(h, t_next, again=True, watch=watch, pairs=pairs)
        # (a watched solve stopped: its iterate's motion crossed, it is split, see _split)
        crossing = _NO_CROSSING if solved.watched else self._motion_crossings(solved.x_prev, solved.x)
        if self._split(solved, crossing, depth, failed):
            if solved.converged or solved.watched:
                tally.splits += 1
            else:
                tally.failure_splits += 1
            tally.rejected_iters += solved.iters
            self.kappa, self.kappa_balanced, self._newton.start_projected = rewind
            stopped = solved.stopping_pairs if solved.watched else None
            failed += not solved.converged
            if depth == 0:
                return self._in_parts(h, t_next, tally, failed, stopped)
            return self._halves(h, t_next, depth, tally, failed, stopped, split_to)
        tally.substeps += 1
        if len(crossing):
            tally.unresolved += 1
            tally.unresolved_depth = max(tally.unresolved_depth, depth)
            tally.first_unresolved = tally.first_unresolved or motion_check.describe(self.model, crossing)
        return solved, self._commit(solved, h, t_next)

    def _halves(self, h, t_next, depth, tally, failed, pairs=None, split_to=0):
        """The (sub)step of length h ending at t_next taken as two of h / 2 (see _advance)."""
        first, _ = self._advance(0.5 * h, self.time + 0.5 * h, depth + 1, tally, failed, pairs, split_to)
        second, summary = self._advance(0.5 * h, t_next, depth + 1, tally, failed, pairs, split_to)
        return first.merged(second), summary

    def _in_parts(self, h, t_next, tally, failed, pairs):
        """The step of length h, whose solve was rejected (_split), taken in halves;
        then its own straight motion, the one the frames show, checked too: parts
        whose motions are each clear can cross together (a block falling onto a
        thin wall's end rounds it in the first half, and the step's motion cuts
        the wall's corner).  If it crosses, the step is taken again from its start
        in quarters (every part above that depth halved unsolved, then as
        _advance goes), and in eighths ... up to MotionCheckSettings.retakes times
        within max_depth: the last is kept, its crossing reported (where the
        motion rounds a corner within the step, shorter parts do not clear it).
        A step in which a solve failed is not taken again (failed_splits bounds
        its cost): its crossing is reported (docs/design/14-step-motion-check.md)."""
        x0, start, counts = self.x, self._part_start(), dataclasses.replace(tally)
        s = self.settings.motion
        split_to, deepest = 1, min(s.max_depth, 1 + s.retakes)
        solved, summary = self._halves(h, t_next, 0, tally, failed, pairs, split_to)
        crossing = self._motion_crossings(x0, self.x)
        while len(crossing) and split_to < deepest and solved.converged and not tally.failure_splits:
            split_to += 1  # the step again from its start in shorter parts; what it did is rejected
            self._restart_part(start)
            tally.restart(counts, tally.rejected_iters + solved.iters)
            solved, summary = self._halves(h, t_next, 0, tally, failed, pairs, split_to)
            crossing = self._motion_crossings(x0, self.x)
        if len(crossing):
            tally.unresolved += 1
            tally.unresolved_depth = max(tally.unresolved_depth, split_to)
            tally.first_unresolved = tally.first_unresolved or motion_check.describe(self.model, crossing)
        return solved, summary

    def _part_start(self):
        """What the parts of a step change of the state at its start (_in_parts)."""
        names = ("x", "v", "time", "kappa", "kappa_balanced", "_link_step_start", "_state_stencils")
        names += ("_state_touching", "_end_contacts", "_step_force", "_sleep_report", "_stopped_colliders")
        state = {name: getattr(self, name) for name in names}  # (replaced by a step, not changed)
        sleep = copy.deepcopy(self._sleep) if self._sleep.enabled else None  # (changed in place)
        return state, self._newton.start_projected, sleep

    def _restart_part(self, start):
        """Back to the state _part_start took."""
        state, self._newton.start_projected, sleep = start
        self.__dict__.update(state)
        if sleep is not None:
            self._sleep = copy.deepcopy(sleep)  # (it may be taken again)

    def _watches(self, depth, failed, pairs=None):
        """Whether a (sub)step's solve is watched for a crossing (motion_check.CrossingWatch):
        one that could still be split, in a step none of whose solves on its way failed (a
        failed part's end is kept or split for failing whatever its crossings: watched, it
        would be split for them instead, past failed_splits).  A half of a solve the watch
        stopped (pairs: the owner pairs whose crossing stopped it) is watched at those pairs
        only, while failed_splits allows one more failed halving: in M500 the same pair
        crosses again at each depth, and watched to the depth limit, crushes whose solves
        fail were split down to it (docs/design/14-step-motion-check.md)."""
        s = self.settings.motion
        if not (s.enabled and s.watch and depth < s.max_depth):
            return False
        return failed == 0 or (pairs is not None and failed < s.failed_splits)

    def _split(self, solved, crossing, depth, failed):
        """Whether a solve is taken again as two halves: its motion crosses or it
        did not converge, within max_depth halvings; a solve that did not converge
        after failed_splits such halvings on its way is kept (halving did not help).
        A solve its watch stopped is split (an iterate's motion crosses already:
        split now, not after converging); whether it would have converged is
        unknown, so its halves count it as failed: failed_splits bounds the
        step's solves as for a failed one, and they are watched at the stopping
        pairs only while it allows another failed halving (:meth:`_watches`)."""
        s = self.settings.motion
        if depth >= s.max_depth:
            return False
        if solved.watched:
            return True
        if not solved.converged:
            return failed < s.failed_splits
        return len(crossing) > 0  # (none when the check is off)

    def _motion_crossings(self, x0, x1):
        """(k, 3) stencils meeting along the straight motion x0 -> x1 (none when the check is off,
        or when nothing moved: x1 is x0 after a step every body slept through)."""
        if not self.settings.motion.enabled or x1 is x0:
            return np.zeros((0, 3), np.intp)
        with self.timers("motion_check"):
            return motion_check.crossing_stencils(self.model, x0, x1, self._groups(x0, x1, 0.0))

    def _newton_for(self, h):
        """The Newton solver of a (sub)step of length h: its step test reads dt.
        A substep's is built when needed; it shares the fill-reducing order."""
        if h == self.params.dt:
            return self._newton
        p = dataclasses.replace(self.params, dt=h)
        return Newton(
            p,
            self._feasible_step,
            self._newton.contact_set,
            self._newton.ordering,
            self.timers,
            self.settings.newton,
            self._newton.closing,
        )

    def _solve(self, h, t_next, again=False, watch=False, pairs=None):
        """Newton's solution for a (sub)step of length h ending at t_next, from
        the current state, which it does not change (the barrier stiffness
        aside: balanced when contact first appears).  Returns a _Solved.
        again: the same (sub)step solved again after waking sleeping bodies.
        watch: its iterates are watched for a crossing at the pairs in contact
        at the start (motion_check.CrossingWatch), only those between the owner
        pairs (k, 2) pairs when given: the solve stops at the first that crosses
        (_Solved.watched, and the pairs that crossed there: _Solved.stopping_pairs)."""
        t_start = _time.perf_counter()
        p = self.params
        # the model with this step's animated settings (the model itself when none are)
        m = self._step_model = self._animated.at(self.time)
        x_prev = self.x.copy()
        target = self._prescribed.targets(x_prev, t_next)
        gravity = self._animated.gravity(self.time, self.gravity)
        x_tilde = x_prev + h * self.v + h * h * gravity
        field_step = fields.step_fields(self.scene.fields, x_prev, self.time, m.mass, ~m.is_collider)
        first = None
        if self._stopped_colliders:  # which stay stopped (or move on, clear of every body): no wake
            with self.timers("step_setup"):
                first = self._first_round(x_prev, target, h)
        if self._sleep.enabled:
            if not again:
                moving_to = target if first is None else self._prescribed.staying(target, first[0], first[2])
                self._begin_sleep_step(x_prev, moving_to, gravity, field_step)
            if self._sleep.everything_held:  # nothing moves: no solve
                return self._unsolved(x_prev, target, t_start)
            # sleeping vertices stay where they are (and Newton holds them)
            x_tilde = np.where(self._sleep.asleep_vertex[:, None], x_prev, x_tilde)
        pen_mass = np.where(m.is_collider, self.mean_mass, m.mass)
        with self.timers("step_setup"):
            fric_cs = self._contact_set_at_state()
            if self.kappa_auto and not self.kappa_balanced:
                self.kappa_balanced = self._balance_kappa(x_prev, x_tilde, fric_cs, h)
                fric_cs = self._contact_set(x_prev, x_prev)
            mollifier = MOLLIFIERS[p.friction_mollifier]
            consts = {
                "h": h,
                "dhat": p.dhat,
                "kappa": self.kappa,
                "eps": p.eps_v * h,
                "x_tilde": x_tilde,
                "x_prev": x_prev,
                "target": target,
                "pen_mass": pen_mass,
                "pair_friction": pair_friction(m, fric_cs, x_prev, p.dhat, mollifier),
                "plane_friction": plane_friction(m, x_prev, self.kappa, p.dhat, mollifier),
                "links": links.step_springs(m.links, self.link_active, x_prev, self.time, t_next),
            }
            # the scene's start was placed, not solved: its contacts press with whatever the barrier
            # gives where they were put (a body snapped within dhat of the ground: many times its
            # weight), so the first solve takes no friction and friction is lagged at its solution
            placed = self.time == 0.0 and bool(len(consts["pair_friction"]) or len(consts["plane_friction"]))
            if placed:
                consts.update(pair_friction=FrictionSet.empty(3), plane_friction=FrictionSet.empty(1))
            if field_step is not None:  # the fields' lagged force and drag (solver/fields.py)
                consts.update(force=field_step.force, fields=field_step)
            if first is None:
                first = self._first_round(x_prev, target, h)
            x_snap, penalty, stopped = first
            touching = self._touching_bodies(fric_cs)
            x, cs = self._start.guess(x_snap, x_prev + h * self.v, x_tilde, touching)
        watcher = crossing = None
        if watch:
            crossing = motion_check.CrossingWatch.of_bodies(m, x_prev, fric_cs.idx[~fric_cs.pp], pairs)
            watcher = functools.partial(self._crosses, crossing)
        r = self._newton_rounds(h, consts, target, penalty, (x, cs), watcher, lag_first=placed)
        # r.x is Newton's last iterate, and r.contacts holds every pair within dhat of it
        wall = _time.perf_counter() - t_start
        unknowns = free_unknowns(m, r.fixed)
        return _Solved(
            r.x,
            x_prev,
            target,
            r.contacts,
            r.iters,
            r.converged,
            r.min_alpha,
            r.last.message,
            r.last.vertex,
            wall,
            unknowns,
            r.last.watched,
            crossing.crossing_pairs(r.x) if r.last.watched else None,
            stopped,
            tuple(gi for gi in penalty.pending if self._prescribed.collider_of_group[gi] >= 0),
        )

    def _first_round(self, x_prev, target, h):
        """PrescribedMotion.first_round of a (sub)step of length h from x_prev: stopped colliders
        move on with their keys' motion over it, and towards their keys by its share of the step
        (split, a part moves less: the motion check's halves can part what the move would cross)."""
        # (their keys at the (sub)step's start: only when some collider is stopped, every
        # (sub)step of every scene with colliders or pins comes here)
        before = self._prescribed.targets(x_prev, self.time) if self._stopped_colliders else None
        moving_on = MovingOn(before, min(1.0, h / self._step_length), self._holding)
        return self._prescribed.first_round(x_prev, target, self._stopped_colliders, moving_on)

    def _crosses(self, watch, x):
        """Whether Newton's iterate x crosses on the motion check's watch (a CrossingWatch)."""
        with self.timers("motion_check"):
            return watch.crosses(x)

    def _newton_rounds(self, h, consts, target, penalty, start, watch=None, lag_first=False):
        """Newton's solves of a (sub)step of length h from start = (x, cs: every
        pair within dhat of x): one per penalty round of the prescribed vertices
        (first: penalty), each solved again with the friction taken at its
        solution up to NewtonSettings.friction_lags times (a :class:`_Rounds`),
        once more when lag_first (consts has no friction yet).
        watch: Newton's watch of every solve (one that stops ends the rounds)."""
        p = self.params
        x, cs = start
        with self.timers("step_setup"):
            fixed, penalized = self._held(penalty.pending)
            ip = self._potential(consts, penalized, penalty.k_pen)
        total_iters, min_alpha, converged = 0, 1.0, False
        newton = self._newton_for(h)
        lags, settled = self.settings.newton.friction_lags + int(lag_first), None
        while True:
            budget = p.max_newton_iters - total_iters
            res = newton.solve(ip, x, fixed, budget, cs, settled=settled, watch=watch)
            x, cs = res.x, res.contacts
            total_iters += res.iterations
            min_alpha = min(min_alpha, res.min_alpha)
            if not res.converged:
                break
            if lags and not (settled is not None and res.iterations == 0):
                # the friction taken again at the solution: Newton goes on from
                # it unless the forces balance there already (settled)
                lagged = self._lagged(consts, x, cs, penalized, penalty.k_pen)
                if lagged is not None:
                    ip, lags = lagged, lags - 1
                    settled = max(self.settings.newton.friction_lag_tol, p.force_tol)
                    if lag_first:  # from the step's start again: the frictionless solve slid
                        (x, cs), settled, lag_first = start, None, False  # (out of static friction's hold)
                    continue
            settled = None
            x, penalty = self._prescribed.next_round(x, target, penalty)
            if penalty is None:
                converged = True
                break
            fixed, penalized = self._held(penalty.pending)
            ip = self._potential(consts, penalized, penalty.k_pen)
            cs = None
        return _Rounds(x, cs, res, total_iters, converged, min_alpha, fixed)

    def _lagged(self, consts, x, cs, penalized, k_pen):
        """The step's potential with its friction's normal forces and tangents
        taken at x instead of the step's start (cs: every pair within dhat of
        x), which consts keeps from now on (docs/design/20-friction-lag-updates.md);
        None when no body has friction."""
        m, p = self._step_model, self.params
        if not (m.mu.any() or m.mu_static.any()):
            return None
        with self.timers("step_setup"):
            mollifier = MOLLIFIERS[p.friction_mollifier]
            consts["pair_friction"] = pair_friction(m, cs, x, p.dhat, mollifier)
            consts["plane_friction"] = plane_friction(m, x, self.kappa, p.dhat, mollifier)
            return self._potential(consts, penalized, k_pen)

    def _unsolved(self, x, target, t_start):
        """The _Solved of a step in which nothing moves (every body asleep)."""
        wall = _time.perf_counter() - t_start
        cs = self._contact_set_at_state()
        return _Solved(x, x, target, cs, 0, True, 1.0, "", -1, wall, stopped=self._stopped_colliders)

    def _held(self, pending):
        """(fixed, penalized) (N,) bool: the vertices Newton holds (prescribed
        ones that snapped, sleeping bodies) and the prescribed ones penalized."""
        fixed, penalized = self._prescribed.masks(pending)
        if self._sleep.enabled:
            fixed |= self._sleep.asleep_vertex
        return fixed, penalized

    def _begin_sleep_step(self, x_prev, target, gravity, field_step):
        """Sleeping before a step's solve (solver/sleep.py): wake what changed,
        and the islands a moving collider touches at the state."""
        m = self._step_model
        force = m.mass[:, None] * gravity
        if field_step is not None and field_step.force is not None:
            force = force + field_step.force
        self._step_force = force
        woke = self._sleep.begin_step(x_prev, target, force, m is not self._animated.base)
        if self._state_stencils is not None:
            woke |= self._sleep.touched(self._state_stencils, x_prev, self.params.dhat)
        if woke:
            self._state_stencils = None  # the contacts among the woken bodies were not kept

    def _balance_kappa(self, x, x_tilde, cs, h=None):
        """Adaptive stiffness when contact first appears (see
        barrier_stiffness.balanced), from the barrier gradient at kappa = 1.
        Returns whether a contact was there to balance.  h: the (sub)step
        length (dt when None)."""
        m, p = self.model, self.params
        unit = build_contact_set(m, cs.idx[~cs.pp], 1.0, p.dhat, p.formulation)
        ip = IncrementalPotential(
            m,
            StepConstants(
                h=p.dt if h is None else h,
                dhat=p.dhat,
                kappa=1.0,
                eps=1.0,
                x_tilde=x_tilde,
                x_prev=x,
                target=x,
                penalized=np.zeros(m.n, bool),
                pen_mass=m.mass,
                k_pen=0.0,
                pair_friction=FrictionSet.empty(3),
                plane_friction=FrictionSet.empty(1),
            ),
        )
        g_b = ip.barrier_gradient(x, unit)
        if not np.any(g_b):
            return False
        free = ~np.repeat(m.is_collider, 2)
        g_e = barrier_stiffness.opposed_gradient(m, p.dt, x, x_tilde)
        settings = self.settings.barrier_stiffness
        self.kappa = barrier_stiffness.balanced(self.kappa, self.kappa_min, g_e, g_b, free, settings)
        return True

    def _potential(self, consts, penalized, k_pen):
        return IncrementalPotential(
            self._step_model, StepConstants(penalized=penalized, k_pen=k_pen, **consts), self.timers
        )

    def _touching_bodies(self, cs_state):
        """(n_owners,) bool: bodies with a vertex within dhat of another body,
        a collider or a half-plane at the state (cs_state: contact set there).
        The last step's summary measured these distances: reused while the
        state is the one it left (a checkpoint restores other stencils)."""
        cached = self._state_touching
        if cached is not None and cached[0] is self._state_stencils:
            return cached[1]
        return self._start.touching_bodies(self.x, cs_state)

    def _feasible_step(self, x, dx, cs=None):
        """Largest alpha <= 1 with no inversion and no collision along x + alpha dx,
        and the contact set swept over that segment (cs: one swept over a
        motion that contains it, else built here)."""
        with self.timers("ccd"):
            alpha = min(1.0, ccd.inversion_step(x, dx, self.model.inversion_tris))
        if cs is None:
            cs = self._contact_set(x, x + alpha * dx)
        with self.timers("ccd"):
            alpha = min(alpha, self._ccd_step(x, dx * alpha, cs) * alpha)
        return alpha, cs

    def _contact_set_at_state(self):
        """Contact set at the current state, reusing the stencils the previous
        step's summary found there (the state has not moved since)."""
        p = self.params
        if self._state_stencils is None:
            return self._contact_set(self.x, self.x)
        # bodies fell asleep since these were found: those among them are constant (the
        # broad phase leaves them out of the contact sets built later, solver/sleep.py)
        stencils = self._sleep.keep(self._state_stencils)
        return build_contact_set(self.model, stencils, self.kappa, p.dhat, p.formulation)

    def _contact_set(self, x0, x1):
        p = self.params
        with self.timers("broad_phase"):
            groups = self._groups(x0, x1, p.dhat)
            stencils = candidate_stencils(self.model, x0, x1, p.dhat, self._candidates, groups)
            return build_contact_set(self.model, stencils, self.kappa, p.dhat, p.formulation)

    def _groups(self, x0, x1, pad):
        """The broad phase's groups of a query (None without rigid bodies and
        nothing asleep): the rigid bodies that cannot meet themselves over x0 ->
        x1 (solver/rigid_gaps.py); what Sleep holds in one more, apart (the
        stencils all of whose vertices are held: their energy is a constant)."""
        groups = None if self._rigid_gaps is None else self._rigid_gaps.groups(x0, x1, pad)
        held = self._sleep.held if self._sleep.enabled else None
        if held is None:
            return groups
        if self._held_groups[0] is not held:  # built again only when Sleep.held changes
            m = self.model
            owners = Groups(m.owner[m.points], m.owner[m.edges[:, 0]], np.zeros(len(m.names), bool))
            self._held_groups = (held, owners.with_held(held[m.points], held[m.edges].all(axis=1)))
        held_groups = self._held_groups[1]
        if groups is None:
            return held_groups  # (the same object while held is: the candidate cache sees it)
        # the rigid groups are the owners too (solver/rigid_gaps.py), their apart ones per query
        return Groups(held_groups.point, held_groups.edge, np.append(groups.apart, True))

    def _closing_rows(self, x, dx, cs):
        """The pairs of cs (swept over dx) that dx's CCD stops, as rows to hold
        (closing_pairs.py), or None."""
        st, toi = self._pair_steps(x, dx, cs)
        return self._closing.rows(x, st, toi) if len(st) else None

    def _pair_steps(self, x, dx, cs):
        """(stencils (n, 3), CCD steps (n,)) of cs's point-edge pairs along dx."""
        st = cs.idx[~cs.pp]
        # (np.take: x[st] copies row by row, several times slower)
        X, dX = np.take(x, st, axis=0), np.take(dx, st, axis=0)
        return st, ccd.point_edge_step(X, dX, eta=self.settings.ccd_gap_kept)

    def _ccd_step(self, x, dx, cs):
        """Largest fraction of dx that is collision-free (point-edge and half-planes)."""
        m = self.model
        alpha = 1.0
        if not cs.pp.all():
            alpha = min(alpha, float(self._pair_steps(x, dx, cs)[1].min()))
        hp = m.hp_points
        if len(hp) and len(m.plane_point):
            # on the (points, planes) grid from the points gathered once: the
            # (point, plane) pairs' gathers cost more than the test (R1000: 3 x 32k);
            # only the points of the bodies that may get within reach of a plane
            # (the others' steps are above 1: the same minimum)
            eta = self.settings.ccd_gap_kept
            near = m.plane_near(x, 0.0, dx, eta)
            d, v = m.plane_distances(x, near), m.plane_motions(dx, near)
            alpha = min(alpha, ccd.half_plane_step_at(d, v, eta=eta))
        return alpha

    def _commit(self, solved, h, t_next):
        """Make a solve of length h the state at t_next; returns its _Summary."""
        p, x, target = self.params, solved.x, solved.target
        self._link_step_start = (solved.x_prev, self.time)
        self.v = (x - solved.x_prev) / h
        self.x = x
        self.time = t_next
        self._stopped_colliders = solved.stopped
        d_min, n_active = self._contact_summary(x, solved.contacts)
        col_lags, col_dist = collider_status(self.model, x, target, p.dhat, self._state_stencils)
        lag = (
            float(np.linalg.norm(x[self.kin_vertices] - target[self.kin_vertices], axis=1).max())
            if len(self.kin_vertices)
            else 0.0
        )
        if self.kappa_auto:  # IPC-style stiffening when contacts get too close
            settings = self.settings.barrier_stiffness
            self.kappa = barrier_stiffness.stiffened(self.kappa, self.kappa_min, d_min, p.dhat, settings)
        if self._sleep.enabled:  # still islands fall asleep (their velocities zeroed)
            self._sleep_report = self._sleep.end_step(self.v, self._end_contacts, self._step_force, h)
        return _Summary(d_min, n_active, lag, col_lags, col_dist)

    def _step_stats(self, solved, summary, tally, t_start, broken=()):
        """The StepStats of the step just taken (warns or raises as it reports)."""
        p, s = self.params, summary
        message = solved.message
        if tally.unresolved:
            note = (
                f"motion check: {tally.unresolved} substep(s) (down to dt/{2**tally.unresolved_depth}) "
                f"still cross ({tally.first_unresolved}); use a smaller time step"
            )
            message = f"{message}; {note}" if message else note
            text = f"step {self.step_index} (t = {self.time:.4g} s): {note}"
            warnings.warn(text, RuntimeWarning, stacklevel=3)
        stats = StepStats(
            self.step_index,
            self.time,
            solved.iters + tally.rejected_iters,
            solved.converged,
            s.d_min,
            s.n_active,
            solved.min_alpha,
            _time.perf_counter() - t_start,
            s.lag,
            self.kappa,
            message,
            animated_collider_distance=float(s.col_dist.min(initial=np.inf)),
            collider_lags=tuple(s.col_lags.tolist()),
            animated_collider_distances=tuple(s.col_dist.tolist()),
            motion_splits=tally.splits,
            substeps=tally.substeps,
            motion_unresolved=tally.unresolved,
            failure_splits=tally.failure_splits,
            broken_links=broken,
            sleep=self._sleep_report,
            unknowns=solved.unknowns,
            contacts_evaluated=int(np.sum(~solved.contacts.pp)) if solved.unknowns else 0,
            rigid_strains=self._rigid_strains(),
            stopped_colliders=tuple(self.model.kin_groups[gi].name for gi in self._stopped_colliders),
        )
        if not solved.converged:
            # a collider pressed into the bodies is the likely cause: named in both messages
            failure = solved.message
            names = [c.name for c in self.scene.colliders]
            note = pressed_note(names, s.col_lags, s.col_dist, stats.stopped_colliders)
            if note:
                failure = f"{failure}; {note}"
                stats = dataclasses.replace(stats, message=f"{message}; {note}")
            text = f"step {self.step_index} (t = {self.time:.4g} s): {failure}"
            if p.strict:
                raise ConvergenceError(text, step=self.step_index, stats=stats, vertex=solved.vertex)
            warnings.warn(text, RuntimeWarning, stacklevel=3)
        return stats

    def _rigid_strains(self):
        """StepStats.rigid_strains at the state's x (empty without rigid bodies)."""
        m = self.model
        return tuple(rigid_strains(m.basis, self.x, len(m.body_slices)).tolist())

    def _contact_summary(self, x, cs):
        """Smallest contact distance and number of contacts closer than dhat;
        keeps cs's point-edge stencils (all pairs within dhat of x) for the next step."""
        m, p = self.model, self.params
        st = self._state_stencils = cs.idx[~cs.pp]
        d2 = case_and_distance_sq(x[st])[1] if len(st) else np.zeros(0)
        dp = m.plane_distances(x)  # (B, H)
        pts, pl, dp_near = m.plane_pairs_below(dp, p.dhat)
        # the next step's start asks which bodies touch something here (the
        # subtracted point-point terms add none: their point-edge pairs are closer)
        self._state_touching = (st, self._start.touching_owners(st, d2, pts))
        dist = np.sqrt(d2)
        alld = np.concatenate([dist, dp.ravel()])
        if self._sleep.enabled:  # who touches whom, for sleeping (planes after the owners)
            near = d2 < p.dhat * p.dhat
            self._end_contacts = (
                np.concatenate([m.owner[st[near, 0]], m.owner[pts]]),
                np.concatenate([m.owner[st[near, 1]], len(m.names) + pl]),
                np.concatenate([dist[near], dp_near]),
                st[near],
            )
            # the pairs among sleeping bodies, not evaluated, are distances too
            alld = np.concatenate([alld, self._sleep.held_distances(x)])
        return (float(alld.min()) if len(alld) else np.inf), int(np.sum(alld < p.dhat))


def simulate(scene, n_steps, progress=None, settings=None) -> Trajectory:
    """Run n_steps; progress(step, n_steps, stats) is called after each step
    (settings: the solver's, its defaults when None)."""
    sim = Simulation(scene, settings=settings)
    nb, nc = len(scene.bodies), len(scene.colliders)
    bodies = [[sim.body_positions(i)] for i in range(nb)]
    cols = [[sim.collider_positions(j)] for j in range(nc)]
    times, stats = [sim.time], []
    for k in range(n_steps):
        s = sim.step()
        stats.append(s)
        times.append(sim.time)
        for i in range(nb):
            bodies[i].append(sim.body_positions(i))
        for j in range(nc):
            cols[j].append(sim.collider_positions(j))
        if progress is not None:
            progress(k + 1, n_steps, s)
    return Trajectory(
        np.array(times),
        tuple(np.array(b) for b in bodies),
        tuple(np.array(c) for c in cols),
        tuple(stats),
        sim.notes,
    )
