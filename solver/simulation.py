"""Time stepping: Newton (exact Hessian while positive definite, PSD-projected
otherwise) on the incremental potential with a
CCD-filtered backtracking line search, prescribed (kinematic) vertices
snapped to their targets whenever that move is collision-free and otherwise
driven by a penalty whose stiffness grows until they arrive.
"""

from __future__ import annotations

import time as _time
import warnings
from dataclasses import dataclass

import numpy as np

from . import barrier, ccd, elasticity
from . import checkpoint as _checkpoint
from .collider_check import collider_status
from .contacts import build_contact_set, candidate_stencils, pair_friction, plane_friction, plane_pairs
from .distance import case_and_distance_sq
from .errors import ConvergenceError
from .friction import FrictionSet
from .linalg import BandOrdering
from .model import build_model
from .newton import Newton, NewtonSettings
from .potential import IncrementalPotential, StepConstants
from .profiling import Timers
from .validate import check_initial_geometry

# Newton's steps (and the start) stop where a closing gap has this fraction of
# its length left: a contact squeezed harder costs iterations of the log
# barrier reopening it about x2 each (docs/solver.md, "Newton on piles")
CCD_GAP_KEPT = 0.3
# The start stops a vertex that its motion would carry from above START_REST
# x dhat to below START_DEEP x dhat of a half-plane at START_REST x dhat: a
# body landing there settles near where its contact appeared (the adaptive
# kappa balances it there), and Newton reopens a deeper start only about x2
# per iteration (docs/solver.md, "Landing bodies")
START_REST, START_DEEP = 0.9, 0.8
PENALTY_START = 1e3  # penalty stiffness relative to the vertex mass (IP units)
PENALTY_GROWTH = 10.0
PENALTY_ROUNDS = 4


@dataclass(frozen=True)
class StepStats:
    """Diagnostics of one time step."""

    step: int  # 1-based index of the step just taken
    time: float  # simulated time after the step [s]
    newton_iters: int  # Newton iterations used (all penalty rounds)
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


def auto_kappa(scene):
    """Lower bound of the automatic barrier stiffness [Pa]: a tenth of the
    softest Young's modulus (seed 004: the barrier is a thin elastic layer)."""
    return 0.1 * min(b.material.E for b in scene.bodies)


KAPPA_MAX_FACTOR = 1e4  # automatic kappa stays within [kappa_min, factor * kappa_min]


class Simulation:
    """Incremental simulation of a :class:`~solver.scene.Scene`.

    ``Simulation(scene)`` validates the scene (raises SolverInputError),
    ``step()`` advances one time step and returns StepStats,
    ``body_positions(i)`` / ``collider_positions(j)`` give current (n,2) arrays,
    ``time`` and ``step_index`` tell where we are.
    """

    def __init__(self, scene, newton_settings: NewtonSettings | None = None):
        self.scene = scene
        self.params = p = scene.params
        self.model = m = build_model(scene)
        self.x = m.rest.copy()
        self.v = m.velocity.copy()
        check_initial_geometry(m, self.x, p.dhat)
        self.time = 0.0
        self.step_index = 0
        self.kappa_auto = p.kappa is None
        self.kappa = auto_kappa(scene) if self.kappa_auto else float(p.kappa)
        self.kappa_min = self.kappa
        self.kappa_balanced = False  # auto kappa: balanced once, when contact first appears
        body = ~m.is_collider
        self.mean_mass = float(m.mass[body].mean())
        self.kin_vertices = (
            np.concatenate([g.vertices for g in m.kin_groups]) if m.kin_groups else np.zeros(0, np.intp)
        )
        self.gravity = np.asarray(p.gravity, float)
        self.timers = Timers()  # seconds per stage, for benchmarks
        self._state_stencils = None  # contact candidates at self.x, found by the last step
        self._state_touching = None  # (those stencils, bodies touching something at self.x)
        self._newton = Newton(
            p,
            self._feasible_step,
            lambda x: self._contact_set(x, x),
            BandOrdering(),
            self.timers,
            newton_settings,
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
        """The state after the steps taken so far, as a :class:`~solver.checkpoint.Checkpoint`:
        a fresh ``Simulation`` of the same scene restored from it continues bit for bit."""
        return _checkpoint.take(self)

    def restore(self, checkpoint):
        """Continue from ``checkpoint`` (taken from a simulation of the same scene; raises
        SolverInputError otherwise)."""
        _checkpoint.restore(self, checkpoint)

    @classmethod
    def from_checkpoint(cls, scene, checkpoint):
        sim = cls(scene)
        sim.restore(checkpoint)
        return sim

    # ------------------------------------------------------------ stepping
    def _targets(self, t):
        target = self.x.copy()
        for g in self.model.kin_groups:
            target[g.vertices] = g.target(t)
        return target

    def _snap(self, x, target, pending):
        """Move pending prescribed groups straight to their targets when that
        motion (everything else frozen) is collision-free.  Groups whose
        motion is blocked stay pending.  Returns (x, still pending)."""
        groups = self.model.kin_groups
        movers = list(pending)
        while movers:
            dx = np.zeros_like(x)
            for gi in movers:
                v = groups[gi].vertices
                dx[v] = target[v] - x[v]
            blocked = self._blocked_vertices(x, dx)
            stuck = [gi for gi in movers if blocked[groups[gi].vertices].any()]
            if not stuck:
                return x + dx, [gi for gi in pending if gi not in movers]
            movers = [gi for gi in movers if gi not in stuck]
        return x, list(pending)

    def _blocked_vertices(self, x, dx):
        """(N,) bool: vertices involved in a contact the motion dx cannot make safely."""
        m, p = self.model, self.params
        blocked = np.zeros(m.n, bool)
        st = candidate_stencils(m, x, x + dx, p.dhat)
        if len(st):
            toi = ccd.point_edge_step(x[st], dx[st])
            bad = toi < 1.0
            blocked[st[bad].ravel()] = True
        pts, pl = plane_pairs(m)
        if len(pts):
            d = barrier.plane_distance(x[pts] + dx[pts], m.plane_point[pl], m.plane_normal[pl])
            blocked[pts[d <= 0.1 * p.dhat]] = True
        return blocked

    def step(self):
        """Advance one time step; returns StepStats (raises ConvergenceError in strict mode)."""
        t_start = _time.perf_counter()
        m, p = self.model, self.params
        h = p.dt
        t_next = self.time + h
        x_prev = self.x.copy()
        target = self._targets(t_next)
        x_tilde = x_prev + h * self.v + h * h * self.gravity
        pen_mass = np.where(m.is_collider, self.mean_mass, m.mass)
        with self.timers("step_setup"):
            fric_cs = self._contact_set_at_state()
            if self.kappa_auto and not self.kappa_balanced:
                self.kappa_balanced = self._balance_kappa(x_prev, x_tilde, fric_cs)
                fric_cs = self._contact_set(x_prev, x_prev)
            consts = {
                "h": h,
                "dhat": p.dhat,
                "kappa": self.kappa,
                "eps": p.eps_v * h,
                "x_tilde": x_tilde,
                "x_prev": x_prev,
                "target": target,
                "pen_mass": pen_mass,
                "pair_friction": pair_friction(m, fric_cs, x_prev, p.dhat),
                "plane_friction": plane_friction(m, x_prev, self.kappa, p.dhat),
            }
            x, pending = self._snap(x_prev, target, range(len(m.kin_groups)))
            k_pen = PENALTY_START
            fixed, penalized = self._kinematic_masks(pending)
            ip = self._potential(consts, penalized, k_pen)
            x, cs = self._initial_guess(x, x_prev + h * self.v, x_tilde, fric_cs)
        total_iters, min_alpha, rounds = 0, 1.0, 0
        converged, message = False, ""
        while True:
            budget = p.max_newton_iters - total_iters
            res = self._newton.solve(ip, x, fixed, budget, cs)
            x, cs, message = res.x, res.contacts, res.message
            total_iters += res.iterations
            min_alpha = min(min_alpha, res.min_alpha)
            if not res.converged:
                break
            if not pending:
                converged = True
                break
            x_snapped, still = self._snap(x, target, pending)
            if len(still) < len(pending):
                x, pending = x_snapped, still
            elif rounds >= PENALTY_ROUNDS:
                converged = True
                break
            else:
                rounds += 1
                k_pen *= PENALTY_GROWTH
            fixed, penalized = self._kinematic_masks(pending)
            ip = self._potential(consts, penalized, k_pen)
            cs = None
        # x is Newton's last iterate, and cs holds every pair within dhat of it
        return self._finish_step(
            x, x_prev, target, total_iters, converged, min_alpha, message, t_start, cs, res.vertex
        )

    def _balance_kappa(self, x, x_tilde, cs):
        """Adaptive stiffness (IPC): when contact first appears, raise kappa so
        the barrier gradient can balance the inertia + elastic gradient it
        opposes, kappa = -(g_E . g_B) / |g_B|^2 with g_B the barrier gradient
        at kappa = 1.  Returns whether a contact was there to balance."""
        m, p = self.model, self.params
        unit = build_contact_set(m, cs.idx[~cs.pp], 1.0, p.dhat, p.formulation)
        ip = IncrementalPotential(
            m,
            StepConstants(
                h=p.dt,
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
        g_e = (m.mass[:, None] * (x - x_tilde)).ravel()
        el = m.elements
        g_e += np.bincount(
            el.dofs, weights=(p.dt * p.dt * elasticity.gradient(el, x)).ravel(), minlength=len(g_e)
        )
        k = -float(np.dot(g_e[free], g_b[free])) / float(np.dot(g_b[free], g_b[free]))
        self.kappa = min(max(self.kappa, k), KAPPA_MAX_FACTOR * self.kappa_min)
        return True

    def _potential(self, consts, penalized, k_pen):
        return IncrementalPotential(
            self.model, StepConstants(penalized=penalized, k_pen=k_pen, **consts), self.timers
        )

    def _initial_guess(self, x, x_coast, x_tilde, cs_state):
        """Where Newton starts: every body moved by its velocity (x_coast =
        x_prev + h v, (N,2)), bodies touching nothing also by gravity (their
        x_tilde), as far as the move stays feasible (CCD).  Returns the start
        and a contact set covering it (or None).  Its energy is left to
        Newton's first line search: a step that converges at its start
        needs none.

        Why not x_tilde for all: in contact, the gravity term h^2 g presses
        every resting vertex into its support and Newton spends iterations
        reopening the squeezed log barriers.  Why not x_prev (no move): a
        contact creeping in steady friction (compression under a ceiling)
        then starts each step at zero slip and climbs the static branch of
        the friction mollifier again, where Newton halves its distance to a
        nearly saturated force per iteration; from x_coast it starts near
        the slip it had.  Measured in docs/solver.md ("Where Newton starts").
        """
        m = self.model
        touching = self._touching_bodies(cs_state)
        dx = np.where(touching[m.owner][:, None], x_coast, x_tilde) - x
        dx[m.is_collider] = 0.0
        dx[self.kin_vertices] = 0.0
        if not np.any(dx):
            return x, None
        cs = self._contact_set(x, x + dx)
        dx *= self._start_fractions(x, dx, cs, touching)[m.owner][:, None]
        # every vertex moves along part of its segment: cs covers the scaled motion
        alpha, cs = self._feasible_step(x, dx, cs)
        # cs was swept from x to the guess: it holds every pair within dhat of it
        return x + alpha * dx, cs

    def _start_fractions(self, x, dx, cs, touching):
        """(n_owners,) fraction of its start motion dx (N, 2) each body takes:
        a body touching nothing stops only for its own contacts (one landing
        body does not hold back the others falling), the bodies touching
        something share one fraction, the smallest of theirs (they push on
        each other).  A contact stops where CCD_GAP_KEPT of its gap is left,
        a vertex landing on a half-plane at START_REST dhat (see there).
        cs: a contact set swept over x -> x + dx.  The fractions are per
        pair or per vertex; the start's own CCD then checks the motion they
        give together."""
        m, dhat = self.model, self.params.dhat
        n_owners = len(touching)
        fraction = np.ones(n_owners + 1)  # the last: colliders, which do not move here
        owner = np.where(m.is_collider, n_owners, m.owner)
        pe = ~cs.pp
        pts, pl = plane_pairs(m)
        free = ~touching
        free[m.owner[m.is_collider]] = False
        with self.timers("ccd"):
            # with no free body, the pairs' fractions would all go to the shared
            # one, and the start's own CCD takes the same minimum
            if pe.any() and free.any():
                st = cs.idx[pe]
                steps = ccd.point_edge_step(x[st], dx[st], eta=CCD_GAP_KEPT)
                np.minimum.at(fraction, owner[st].ravel(), np.repeat(steps, st.shape[1]))
            if len(pts):
                d = barrier.plane_distance(x[pts], m.plane_point[pl], m.plane_normal[pl])
                v = np.einsum("ni,ni->n", dx[pts], m.plane_normal[pl])
                landing = (d > START_REST * dhat) & (d + v < START_DEEP * dhat)
                keep = np.where(landing, START_REST * dhat, CCD_GAP_KEPT * d)
                np.minimum.at(fraction, owner[pts], ccd.half_plane_steps(d, v, keep))
        fraction = fraction[:n_owners]
        if touching.any():
            fraction[touching] = fraction[touching].min()
        return fraction

    def _touching_bodies(self, cs_state):
        """(n_owners,) bool: bodies with a vertex within dhat of another body,
        a collider or a half-plane at the state (cs_state: contact set there).
        The last step's summary measured these distances: reused while the
        state is the one it left (a checkpoint restores other stencils)."""
        cached = self._state_touching
        if cached is not None and cached[0] is self._state_stencils:
            return cached[1]
        m = self.model
        d2 = cs_state.cases_and_distance_sq(cs_state.gather(self.x))[1] if len(cs_state) else np.zeros(0)
        pts, pl = plane_pairs(m)
        dp = barrier.plane_distance(self.x[pts], m.plane_point[pl], m.plane_normal[pl])
        return self._touching_owners(cs_state.idx, d2, dp)

    def _touching_owners(self, stencils, d2, dp):
        """(n_owners,) bool: owners of the stencils (n, k) with squared distance
        d2 (n,) below dhat^2 and of the half-plane pairs with distance dp below dhat."""
        m, dhat = self.model, self.params.dhat
        touching = np.zeros(m.n, bool)
        touching[stencils[d2 < dhat * dhat].ravel()] = True
        touching[plane_pairs(m)[0][dp < dhat]] = True
        owners = np.zeros(int(m.owner.max(initial=-1)) + 1, bool)
        owners[m.owner[touching]] = True
        return owners

    def _kinematic_masks(self, pending):
        m = self.model
        fixed = np.zeros(m.n, bool)
        penalized = np.zeros(m.n, bool)
        fixed[self.kin_vertices] = True
        for gi in pending:
            v = m.kin_groups[gi].vertices
            fixed[v] = False
            penalized[v] = True
        return fixed, penalized

    def _feasible_step(self, x, dx, cs=None):
        """Largest alpha <= 1 with no inversion and no collision along x + alpha dx,
        and the contact set swept over that segment (cs: one swept over a
        motion that contains it, else built here)."""
        with self.timers("ccd"):
            alpha = min(1.0, ccd.inversion_step(x, dx, self.model.elements.tris))
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
        return build_contact_set(self.model, self._state_stencils, self.kappa, p.dhat, p.formulation)

    def _contact_set(self, x0, x1):
        p = self.params
        with self.timers("broad_phase"):
            return build_contact_set(
                self.model, candidate_stencils(self.model, x0, x1, p.dhat), self.kappa, p.dhat, p.formulation
            )

    def _ccd_step(self, x, dx, cs):
        """Largest fraction of dx that is collision-free (point-edge and half-planes)."""
        m = self.model
        alpha = 1.0
        pe = ~cs.pp
        if pe.any():
            st = cs.idx[pe]
            toi = ccd.point_edge_step(x[st], dx[st], eta=CCD_GAP_KEPT)
            alpha = min(alpha, float(toi.min()))
        pts, pl = plane_pairs(m)
        if len(pts):
            alpha = min(
                alpha,
                ccd.half_plane_step(x[pts], dx[pts], m.plane_point[pl], m.plane_normal[pl], eta=CCD_GAP_KEPT),
            )
        return alpha

    def _finish_step(self, x, x_prev, target, iters, converged, min_alpha, message, t_start, cs, vertex=-1):
        p = self.params
        self.v = (x - x_prev) / p.dt
        self.x = x
        self.time += p.dt
        self.step_index += 1
        d_min, n_active = self._contact_summary(x, cs)
        col_lags, col_dist = collider_status(self.model, x, target, p.dhat, self._state_stencils)
        lag = (
            float(np.linalg.norm(x[self.kin_vertices] - target[self.kin_vertices], axis=1).max())
            if len(self.kin_vertices)
            else 0.0
        )
        if self.kappa_auto and d_min < 1e-2 * p.dhat:
            # IPC-style stiffening when contacts get too close
            self.kappa = min(2.0 * self.kappa, KAPPA_MAX_FACTOR * self.kappa_min)
        stats = StepStats(
            self.step_index,
            self.time,
            iters,
            converged,
            d_min,
            n_active,
            min_alpha,
            _time.perf_counter() - t_start,
            lag,
            self.kappa,
            message,
            animated_collider_distance=float(col_dist.min(initial=np.inf)),
            collider_lags=tuple(col_lags.tolist()),
            animated_collider_distances=tuple(col_dist.tolist()),
        )
        if not converged:
            text = f"step {self.step_index} (t = {self.time:.4g} s): {message}"
            if p.strict:
                raise ConvergenceError(text, step=self.step_index, stats=stats, vertex=vertex)
            warnings.warn(text, RuntimeWarning, stacklevel=2)
        return stats

    def _contact_summary(self, x, cs):
        """Smallest contact distance and number of contacts closer than dhat;
        keeps cs's point-edge stencils (all pairs within dhat of x) for the next step."""
        m, p = self.model, self.params
        st = self._state_stencils = cs.idx[~cs.pp]
        d2 = case_and_distance_sq(x[st])[1] if len(st) else np.zeros(0)
        pts, pl = plane_pairs(m)
        dp = barrier.plane_distance(x[pts], m.plane_point[pl], m.plane_normal[pl])  # (0,) without planes
        # the next step's start asks which bodies touch something here (the
        # subtracted point-point terms add none: their point-edge pairs are closer)
        self._state_touching = (st, self._touching_owners(st, d2, dp))
        alld = np.concatenate([np.sqrt(d2), dp])
        return (float(alld.min()) if len(alld) else np.inf), int(np.sum(alld < p.dhat))


def simulate(scene, n_steps, progress=None) -> Trajectory:
    """Run n_steps; progress(step, n_steps, stats) is called after each step."""
    sim = Simulation(scene)
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
        np.array(times), tuple(np.array(b) for b in bodies), tuple(np.array(c) for c in cols), tuple(stats)
    )
