"""Newton's method on one time step's incremental potential, with a
CCD-filtered backtracking line search.

:class:`Newton` minimizes an :class:`~solver.potential.IncrementalPotential`
from a start x.  Each iteration: a direction (:meth:`Newton._direction`)
in the current Hessian mode, the largest collision- and inversion-free
fraction of it (the caller's ``feasible_step``, CCD), backtracking from
there until the energy decreases enough (Armijo).  It stops when the step
is small AND the forces balance (see :meth:`Newton.solve`).  Every
constant and size switch is a field of :class:`NewtonSettings`.

Hessian modes (:class:`Mode`) and their transitions, all decided by
:func:`next_mode`, the one place the mode changes:

    ============  =====================================================
    EXACT         Cholesky of the exact Hessian.
    PROJECTED     the PSD-projected Hessian (elastic, barrier, friction
                  blocks clamped).
    PROJECTED_CG  the projected Hessian's factorization as the
                  preconditioner of conjugate gradients on the exact
                  Hessian (:func:`exact_model_step`); systems of
                  exact_cg_min_dofs or more.
    ============  =====================================================

    solve starts         -> EXACT, or the projected mode when the last
                            solve's first direction showed the exact
                            Hessian indefinite (projected_start_min_dofs)
    exact not definite   -> the projected mode, same iteration (Cholesky
                            failed, or its step is not a descent direction)
    projected step small -> EXACT (|dx|/h < retry_exact newton_tol), unless
      and not shown         the exact Hessian was just shown indefinite
      indefinite            (CG met negative curvature): the try would
                            only cost a factorization
    anything else        -> unchanged

A projected step whose full length passes Armijo is doubled while the
energy along it shows less curvature than the projected model's
(:meth:`Newton._extended`): the projection clamps negative curvature to
zero, and along a buckling or rocking mode projected Newton walks in short
full steps.

On every mode, the friction kinks (:mod:`solver.friction_kinks`):
- regime rounds (regime_rounds_min_dofs, when the step came from a
  factorization): the step is re-solved with each friction contact on the
  piece of its energy the step lands it on;
- majorized contacts: a contact the step reverses gets its majorizing
  curvature for majorize_iters iterations, and, in a projected mode
  without regime rounds (or below release_majorized_min_dofs), for as long
  as the mode stays projected;
- the zero-slip stop: when the next iteration is EXACT, the line search
  starts no further than where the first reversed sliding contact reaches
  zero slip (unless that is below kink_floor of the step).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from enum import Enum

import numpy as np

from . import closing_pairs
from . import friction_kinks as kinks
from .basis import STRAIN_TOL
from .contacts import ContactSet
from .linsolve import BandOrdering, NotPositiveDefinite, factorize, solve
from .profiling import NullTimers
from .sleep import fixed_q, held_system
from .unknowns import BasisUnknowns, VertexUnknowns


@dataclass(frozen=True)
class NewtonSettings:
    """Newton's policy: every constant, and the size switches of its features
    (each on for systems of at least that many DOFs; one size used to switch
    all four on)."""

    armijo: float = 1e-4  # sufficient-decrease constant of the backtracking line search
    min_alpha: float = 1e-12  # the line search gives up below this step
    stall: float = 1e-6  # an accepted step this small (relative to newton_tol) is no progress
    retry_exact: float = 10.0  # try the exact Hessian again once |dx|/h < this * newton_tol
    kink_floor: float = (
        0.25  # stop a reversed sliding contact at zero slip only if this much of the step is left
    )
    majorize_iters: int = 1  # iterations a friction contact is majorized after a step reversed its slip
    vertex_slack: float = 10.0  # each vertex balances to this times force_tol (1 %), each body to force_tol
    # friction taken again at a step's solution, then solved again, up to this many times per step
    # (0: off; docs/design/20-friction-lag-updates.md) ...
    friction_lags: int = 0
    friction_lag_tol: float = 0.1  # ... while the forces there balance worse than this (as force_tol)
    regime_rounds: int = 5  # re-solves of a step with the friction regimes its end point is in
    # ... only while the update's dense columns (unknowns x curvatures changing) hold at most
    # this many numbers: 64 contacts on S4's 16k vertex DOFs, 174 on R1000's 6,000 q
    regime_max_entries: int = 2**20
    regime_switches: int = (
        3  # a contact that changes piece this many times in one step's rounds is held static
    )
    # a step CCD cuts short is solved again with the pairs it stops (and the barrier does
    # not model yet) held, up to this many times (0: off, the default: it pays on rigid piles
    # only; docs/design/21-closing-pairs.md) ...
    closing_rounds: int = 0
    # ... holding at most as many pairs r as keep the dense columns (n unknowns x r) this size
    # (a round costs r^2 n): 174 pairs on R1000's 6,000 q, 1,736 on S4R's 604, 64 on S4's 16k DOFs
    closing_max_entries: int = 2**20
    cg_iters: int = 10  # conjugate-gradient iterations on the exact Hessian from a projected step
    cg_tol: float = 0.1  # ... until the preconditioned residual is this fraction of the first
    # Size switches (smaller systems factor faster than a round or a CG iteration pays back):
    projected_start_min_dofs: int = 1000  # a solve may start projected (see Newton.start_projected)
    exact_cg_min_dofs: int = 1000  # projected steps are refined by CG on the exact Hessian (PROJECTED_CG)
    regime_rounds_min_dofs: int = 1000  # steps get regime rounds
    release_majorized_min_dofs: int = (
        1000  # with regime rounds, projected steps do not hold majorized contacts
    )

    def features(self, n_dof) -> Features:
        """Which of the size-switched features run on a system of n_dof DOFs."""
        return Features(
            projected_start=n_dof >= self.projected_start_min_dofs,
            exact_cg=n_dof >= self.exact_cg_min_dofs,
            regime_rounds=n_dof >= self.regime_rounds_min_dofs and self.regime_rounds > 0,
            release_majorized=n_dof >= self.release_majorized_min_dofs,
        )


@dataclass(frozen=True)
class Features:
    """The size-switched features on for one system (NewtonSettings.features)."""

    projected_start: bool
    exact_cg: bool
    regime_rounds: bool
    release_majorized: bool

    @property
    def projected_mode(self) -> Mode:
        return Mode.PROJECTED_CG if self.exact_cg else Mode.PROJECTED

    @property
    def factor_projected(self) -> bool:
        """Factorize the projected Hessian (CG and the rounds solve with it)."""
        return self.exact_cg or self.regime_rounds


class Mode(Enum):
    """Newton's Hessian modes (see the module docstring)."""

    EXACT = "exact"
    PROJECTED = "projected"
    PROJECTED_CG = "projected+cg"

    @property
    def projected(self) -> bool:
        return self is not Mode.EXACT


class Event(Enum):
    """What a solve or a direction showed, the input of :func:`next_mode`."""

    START = "a solve starts"
    START_INDEFINITE = "a solve starts; the last solve's start showed the exact Hessian indefinite"
    NOT_DEFINITE = "the exact Hessian is not positive definite"
    SMALL_PROJECTED_STEP = "a projected step is small, the exact Hessian not shown indefinite"


def next_mode(mode: Mode | None, event: Event | None, on: Features) -> Mode:
    """The Hessian mode after ``event`` (None: nothing that changes it) in
    ``mode`` (None before the first), on a system with the features ``on``:
    the transitions of the module docstring.  Why, with the measurements:
    docs/design/02-exact-hessian-first.md.
    """
    if event is Event.START:
        return Mode.EXACT
    if event is Event.START_INDEFINITE:
        return on.projected_mode if on.projected_start else Mode.EXACT
    if event is Event.NOT_DEFINITE:
        return on.projected_mode
    if event is Event.SMALL_PROJECTED_STEP:
        return Mode.EXACT
    return mode


@dataclass(frozen=True)
class Direction:
    """One Newton direction and what was learnt computing it.

    g (2N,): the gradient it was solved with (fixed DOFs zeroed); acting
    (2N,): the magnitudes of g's terms; dx (N,2): the step; majorize: per
    friction set, (n,) iterations each contact stays majorized; mode: the
    Hessian mode it was solved in; zero_slip: per friction set, (n,)
    fraction of dx at which each sliding contact it reverses reaches zero
    slip (1: not reversed); indefinite: the exact Hessian at x was shown not
    positive definite (its factorization failed, its step was not a descent
    direction, or conjugate gradients met negative curvature)."""

    g: np.ndarray
    acting: np.ndarray
    dx: np.ndarray
    majorize: tuple
    mode: Mode
    zero_slip: tuple
    indefinite: bool = False
    dq: np.ndarray | None = None  # rigid bodies: Newton's step in q, before its turns are made exact
    # the step on the factorization's unknowns with its factorization (None: not factorized),
    # and B^T g (rigid bodies): the closing-pair rounds solve it again (closing_pairs.py)
    step: kinks.NewtonStep | None = None
    gq: np.ndarray | None = None

    @property
    def project(self) -> bool:
        return self.mode.projected


@dataclass(frozen=True)
class NewtonResult:
    """Outcome of one Newton solve.

    x: (N,2) last iterate; contacts: a contact set holding every pair within
    dhat of x; message: why it stopped without converging ("" if it converged);
    watched: the solve's watch stopped it at x (not converged; iterations
    counts x).
    """

    x: np.ndarray
    converged: bool
    iterations: int
    min_alpha: float  # smallest accepted line-search step
    message: str
    contacts: ContactSet
    vertex: int = -1  # not converged: the vertex whose last Newton step was largest
    watched: bool = False


# A solve's watch: looks at an iterate x (N, 2), True to stop the solve there.
Watch = Callable[[np.ndarray], bool]


def _largest_step(dx) -> int:
    """The vertex whose Newton step is largest (a non-finite one first)."""
    size = np.abs(dx).max(axis=1)
    return int(np.argmax(np.where(np.isfinite(size), size, np.inf)))


class Newton:
    """Newton solver for a scene's parameters (dt, newton_tol, force_tol,
    linear_solver) and a :class:`NewtonSettings`.

    feasible_step(x, dx) -> (alpha, cs): largest alpha <= 1 keeping x + alpha dx
    free of collisions and inversions, and a contact set swept over that
    segment.  contact_set(x) -> the contact set at x.  closing(x, dx, cs) ->
    the :class:`~solver.closing_pairs.ClosingRows` of the pairs of cs (swept
    over dx) that dx's CCD stops, or None (None: steps are not held).
    """

    def __init__(
        self,
        params,
        feasible_step: Callable,
        contact_set: Callable,
        ordering: BandOrdering | None = None,
        timers=None,
        settings: NewtonSettings | None = None,
        closing: Callable | None = None,
    ):
        self.params = params
        self.settings = settings or NewtonSettings()
        self.feasible_step = feasible_step
        self.contact_set = contact_set
        self.closing = closing
        self.ordering = ordering or BandOrdering()  # fill-reducing order reused by the solves
        self.timers = timers or NullTimers()
        self.g_ref = float(np.hypot(*params.gravity)) or 9.81  # weight scale [m/s^2]
        # The last solve's first direction showed the exact Hessian indefinite (on
        # a system with the projected start on): the next solve starts projected.
        # State between steps: checkpoints store it.
        self.start_projected = False

    def solve(self, ip, x, fixed, budget, cs=None, settled=None, watch: Watch | None = None) -> NewtonResult:
        """Minimize ip from x with the vertices fixed (N,) bool held in place, in
        at most budget iterations.  cs (optional): a contact set holding every
        pair within dhat of x.

        Converged when both the step is small, ||dx||_inf / h < newton_tol,
        and the forces balance (:func:`force_imbalance` <= force_tol): where
        the Hessian is stiff (static friction, mu lambda / (eps_v h); pressed
        contacts) a tiny step can leave a large force unbalanced.  When the
        step is small and the line search cannot make progress along it (the
        energy's rounding hides the remaining force), the step test decides.

        settled (optional): x solved a nearby potential (ip is it with its
        friction taken at x, docs/design/20-friction-lag-updates.md); x is
        kept, without a direction, if its forces balance to settled there.

        watch (optional): looks at each iterate the solve goes on from,
        before its line search; when it returns True the solve stops there
        (``NewtonResult.watched``), e.g. the motion check's
        (:class:`~solver.motion_check.CrossingWatch`).
        """
        p, s = self.params, self.settings
        energy = None  # ip's value at x, once known
        fixed_dof = np.repeat(fixed, 2)
        if cs is None:
            cs = self.contact_set(x)
        min_alpha = 1.0
        if settled is not None and self._balanced(ip, x, cs, fixed_dof, settled):
            # x solved a nearby potential (its friction taken again there) and
            # balances this one's forces to the tolerance settled: kept
            return NewtonResult(x, True, 0, min_alpha, "", cs)
        # per friction contact: iterations left with the majorizing curvature
        majorize = tuple(np.zeros(len(fs), int) for fs in ip.friction_sets)
        on = _features(s, ip, fixed_dof)
        mode = next_mode(None, Event.START_INDEFINITE if self.start_projected else Event.START, on)
        for it in range(budget + 1):
            d = self._direction(ip, x, cs, fixed_dof, majorize, mode)
            g, dx, majorize, mode = d.g, d.dx, d.majorize, d.mode
            if it == 0:
                self.start_projected = d.indefinite and on.projected_start
            if not np.all(np.isfinite(dx)):
                failed = "linear solve produced non-finite values"
                return NewtonResult(x, False, it, min_alpha, failed, cs, _largest_step(dx))
            speed = np.abs(dx).max() / p.dt
            small = mode.projected and not d.indefinite and speed < s.retry_exact * p.newton_tol
            mode = next_mode(mode, Event.SMALL_PROJECTED_STEP if small else None, on)
            # (the force test only matters once the step is small: measured lazily)
            if speed < p.newton_tol and self._imbalance(g, d.acting, ip, x) <= p.force_tol:
                return NewtonResult(x, True, it, min_alpha, "", cs)
            if it == budget:
                break
            if watch is not None and watch(x):
                return NewtonResult(x, False, it + 1, min_alpha, "stopped by its watch", cs, watched=True)
            dx, start = self._line_search_start(ip, x, d, mode, energy)
            moved = speed if dx is d.dx else np.abs(dx).max() / p.dt  # |dx|/h of the line search's dx
            with self.timers("line_search"):
                alpha, trial, energy, cs = self._line_search(ip, x, dx, start, g, d)
            if speed < p.newton_tol and (alpha is None or alpha * moved < s.stall * p.newton_tol):
                # The step is small and the energy cannot resolve a decrease
                # along it (rounding): what force is left is below what this
                # energy can balance, so stop as the step test alone would.
                return NewtonResult(x, True, it, min_alpha, "", cs)
            if alpha is None:
                failed = "line search failed to decrease the energy"
                return NewtonResult(x, False, it + 1, min_alpha, failed, cs, _largest_step(dx))
            # The energy at the accepted point is the next iteration's reference:
            # every candidate set contains all pairs within dhat of it.
            x, energy = x + alpha * dx, trial
            min_alpha = min(min_alpha, alpha)
            if max(alpha, 1.0) * speed < p.newton_tol and self._balanced(ip, x, cs, fixed_dof):
                # the step just taken was small (extended ones by what they moved)
                # and the forces balance where it landed: converged, without the
                # Hessian and solve of one more iteration only to measure a step
                # known to be tiny (Newton's quadratic phase)
                return NewtonResult(x, True, it + 1, min_alpha, "", cs)
        imbalance = self._imbalance(g, d.acting, ip, x)
        message = (
            f"Newton did not converge in {p.max_newton_iters} iterations (last |dx|/h = {speed:.3g} m/s, "
            f"tolerance {p.newton_tol:g}; force imbalance {imbalance:.3g}, tolerance {p.force_tol:g})"
        )
        return NewtonResult(x, False, budget, min_alpha, message, cs, _largest_step(dx))

    def _imbalance(self, g, acting, ip, x):
        basis = getattr(ip, "basis", None)
        if basis is None:
            return force_imbalance(g, acting, ip, x, self.g_ref, self.settings.vertex_slack)
        # rigid bodies: their vertices balance as a body only (body_imbalance), and
        # their strain to STRAIN_TOL (counted here in units of force_tol)
        plain = np.where(basis.rigid_dof, 0.0, g)
        vertices = vertex_imbalance(plain, acting, ip, self.g_ref) / self.settings.vertex_slack
        forces = max(vertices, body_imbalance(g, ip, x, self.g_ref))
        if ip.rigidity is None:  # stiff bodies only: no rigidity term
            return forces
        strain = float(ip.rigidity.strain_error(x, g).max()) / STRAIN_TOL * self.params.force_tol
        return max(forces, strain)

    def _balanced(self, ip, x, cs, fixed_dof, tol=None):
        """Whether the forces at x balance (force_imbalance <= tol, force_tol when None)."""
        T = ip.gradient(x, cs)
        g = np.where(fixed_dof, 0.0, T.grad)
        return self._imbalance(g, T.magnitude, ip, x) <= (self.params.force_tol if tol is None else tol)

    def _direction(self, ip, x, cs, fixed_dof, majorize, mode) -> Direction:
        """Newton step (a :class:`Direction`) in the Hessian mode ``mode``, or
        in the projected mode if the exact Hessian turns out not positive
        definite (:func:`next_mode`).

        Friction contacts whose slip the step would reverse are majorized
        from the next iteration on (:func:`~solver.friction_kinks.next_majorize`;
        re-solving at once cost more iterations on the compressing squares,
        and factorizations on piles): the exact friction Hessian is blind to
        the kink at zero slip and sends such contacts back and forth.  Only
        briefly once the exact Hessian is back: once sliding, the majorizer
        (mu lambda / |u|) is far stiffer than the exact curvature (zero) and
        Newton would crawl towards the slip.
        """
        s = self.settings
        on = _features(s, ip, fixed_dof)
        expected = cs.idx[~cs.pp]  # candidates that may come within dhat: the analysis may cover them
        basis = getattr(ip, "basis", None)
        indefinite = False
        while True:
            project = mode.projected
            record = mode is Mode.PROJECTED_CG
            T = ip.gradient_hessian(x, cs, tuple(m > 0 for m in majorize), project, deficit=record)
            g = np.where(fixed_dof, 0.0, T.grad)
            try:
                if basis is None:
                    step, gq = self._linear_solve(T, g, fixed_dof, project, expected), None
                else:
                    step, gq = self._reduced_solve(ip, x, T, fixed_dof, (project, expected), on)
            except NotPositiveDefinite:
                mode, indefinite = next_mode(mode, Event.NOT_DEFINITE, on), True
                continue
            u, factor, unknowns = step.u, step.factor, step.unknowns
            if not np.all(np.isfinite(u)):
                dx = unknowns.expand(u).reshape(-1, 2)
                return Direction(g, T.magnitude, dx, majorize, mode, (), indefinite)
            if record and factor is not None and T.deficit:
                with self.timers("exact_cg"):
                    u, negative = exact_model_step(
                        factor.solve, unknowns.deficit_product(T), step.gu, u, unknowns.free, s
                    )
                indefinite = indefinite or negative
            rounds = on.regime_rounds and factor is not None
            if rounds:
                with self.timers("regime_rounds"):
                    u = kinks.regime_consistent_step(ip, x, replace(step, u=u), majorize, s)
            # (rigid bodies: each body's turn made exact; the one expansion of the step)
            dq = None if basis is None else unknowns.q(u)  # before the turns (_shortened_turn)
            dx = u.reshape(-1, 2) if basis is None else _turned(basis, x, gq, dq)
            zero_slip = ip.zero_slip_fractions(x, dx)
            hold = project and not (rounds and on.release_majorized)
            flips = tuple(f < 1.0 for f in zero_slip)
            majorize = kinks.next_majorize(majorize, flips, hold, s.majorize_iters)
            step = None if factor is None else replace(step, u=u)
            return Direction(g, T.magnitude, dx, majorize, mode, zero_slip, indefinite, dq, step, gq)

    def _line_search_start(self, ip, x, d, mode, energy):
        """(dx, start): the line search's direction and its start (alpha, its
        contact set, E(x) or None, E at alpha or None; see :meth:`_line_search`)
        for the Direction d at x: d.dx from its feasible step (CCD), cut at the
        zero-slip stop (mode: the next iteration's, see
        :func:`~solver.friction_kinks.line_search_start`), or a rigid step cut
        short taken with its turns exact (:meth:`_shortened_turn`).  energy:
        E(x) or None."""
        alpha, cs = self.feasible_step(x, d.dx)
        if alpha < 1.0 and d.step is not None and self.closing is not None:
            with self.timers("closing_pairs"):
                d, alpha, cs = self._closing_rounds(ip, x, d, alpha, cs)
        alpha = kinks.line_search_start(alpha, d.zero_slip, mode.projected, self.settings.kink_floor)
        if alpha < 1.0 and d.dq is not None:
            dx, alpha, cs, energy, first = self._shortened_turn(ip, x, d.g, d, alpha, cs, energy)
            return dx, (alpha, cs, energy, first)
        return d.dx, (alpha, cs, energy, None)

    def _closing_rounds(self, ip, x, d, alpha, cs):
        """(Direction, alpha, contact set): d, or d solved again with the pairs
        its CCD step alpha < 1 stops held (closing_pairs.py), round after round
        with those each new step's CCD stops added, up to closing_rounds times
        or until a step goes its full length: the one CCD lets go farthest."""
        s = self.settings
        cap = max(1, s.closing_max_entries // d.step.unknowns.size)
        rows, best, dx = None, (d, alpha, cs), d.dx
        for _ in range(s.closing_rounds):
            found = self.closing(x, dx, cs)
            if found is None:
                break
            merged = found.merged(rows).first(cap)
            if rows is not None and len(merged) == len(rows):
                break  # no pair the step stops is new
            rows = merged
            u = closing_pairs.held_step(d.step, rows)
            if u is None:
                break
            held = self._redirected(ip, x, d, u)
            beta, cs = self.feasible_step(x, held.dx)
            if beta > best[1]:
                best = (held, beta, cs)
            if beta >= 1.0:
                break
            dx = held.dx
        return best

    def _redirected(self, ip, x, d, u):
        """The Direction d with its step on the unknowns replaced by u."""
        basis = getattr(ip, "basis", None)
        if basis is None:
            dq, dx = None, u.reshape(-1, 2)
        else:
            dq = d.step.unknowns.q(u)
            dx = _turned(basis, x, d.gq, dq)
        return replace(d, dx=dx, dq=dq, zero_slip=ip.zero_slip_fractions(x, dx), step=replace(d.step, u=u))

    def _shortened_turn(self, ip, x, g, d, alpha, cs, energy):
        """(dx, alpha, cs, energy, trial): the line search's direction, start, contact
        set, E(x) and E at its start (None: not evaluated) for a step with rigid
        bodies that may go only alpha < 1 of the way (CCD, the zero-slip stop).

        A step's turns end on exact rotations
        (:meth:`~solver.basis.AffineBasis.rotation_corrected`) but move along
        straight chords, whose inner points are shrunk: cut short at alpha, the
        chord's strain costs the orthogonality energy up to RIGIDITY times what
        the turn saves in inertia, and the line search backtracks far.  When
        that strain alone fails Armijo at alpha, the Newton step cut to alpha
        in q, its turns made exact, is taken instead, from its own feasible
        step (a descent direction: else the chord stays)."""
        with self.timers("line_search"):
            if energy is None:
                energy = ip.value(x, cs)
            end = x + alpha * d.dx
            trial = ip.value(end, cs)
        excess = trial - (energy + self.settings.armijo * alpha * float(np.dot(g, d.dx.ravel())))
        rigidity = ip.rigidity
        if not excess > 0.0 or rigidity is None:
            return d.dx, alpha, cs, energy, trial
        strain = rigidity.weight * (rigidity.value(end, cs) - rigidity.value(x, cs))
        if not strain > excess:
            return d.dx, alpha, cs, energy, trial
        basis = ip.basis
        short = basis.expand(basis.rotation_corrected(x, alpha * d.dq))
        if not float(np.dot(g, short.ravel())) < 0.0:
            return d.dx, alpha, cs, energy, trial
        beta, short_cs = self.feasible_step(x, short)
        return short, beta, short_cs, energy, None

    def _line_search(self, ip, x, dx, start, g, d):
        """(alpha or None, E there, E(x), contact set): backtrack along dx from
        start = (alpha, its contact set, E(x) or None, E at alpha or None), and a
        projected step (of the Direction d) that passed at its full length
        extended (:meth:`_extended`)."""
        alpha, cs, energy, first = start
        slope = float(np.dot(g, dx.ravel()))
        alpha, trial, energy = backtrack(ip, x, dx, alpha, cs, energy, slope, self.settings, first)
        if alpha == 1.0 and d.project:
            alpha, trial, cs = self._extended(ip, x, dx, (energy, slope, trial), cs)
        return alpha, trial, energy, cs

    def _extended(self, ip, x, dx, along, cs):
        """(alpha, E(x + alpha dx), contact set) for a projected step dx whose
        full length passed Armijo: doubled while the quadratic through E(x), its
        slope and E at the current length puts the minimum at twice that length
        or beyond (or has none), the doubled step is collision free and the
        energy still falls.  along: (E(x), slope g . dx, E(x + dx)).

        The projected Hessian clamps negative curvature to zero, so along a
        direction where the energy curves down (a compressed body buckling, a
        body rocking off a corner) its model overestimates the curvature many
        times and projected Newton walks there in short full steps, each
        accepted at once (docs/design/02-exact-hessian-first.md)."""
        energy, slope, trial = along
        t = 1.0
        while True:
            curvature = 2.0 * (trial - energy - t * slope) / (t * t)  # of the fitted quadratic
            if curvature > 0.0 and -slope / curvature < 2.0 * t:
                return t, trial, cs
            beta, longer_cs = self.feasible_step(x, 2.0 * t * dx)
            if beta < 1.0:
                return t, trial, cs
            longer = ip.value(x + 2.0 * t * dx, longer_cs)
            if not longer < trial:
                return t, trial, cs
            t, trial, cs = 2.0 * t, longer, longer_cs

    def _linear_solve(self, T, g, fixed_dof, project, expected) -> kinks.NewtonStep:
        """The Newton step (2N,) of the Hessian in T for the gradient g (fixed
        DOFs zeroed), on the vertex DOFs, with the Cholesky factorization it
        came from (None when the solve did not factorize: a projected Hessian
        where neither CG nor the regime rounds need its factor, or one not
        numerically definite).  Raises NotPositiveDefinite when an exact
        Hessian is not positive definite or its step is not a descent direction."""
        p = self.params
        with self.timers("linear_solve"):
            r, c, v = T.system(fixed_dof)
            factor = None
            if not project or self.settings.features(len(g)).factor_projected:
                factor = _factorize((r, c, v), len(g), p.linear_solver, self.ordering, project, expected)
            if factor is None:
                dx = solve(r, c, v, -g, p.linear_solver, ordering=self.ordering, expected=expected)
            else:
                dx = factor.solve(-g)
        if not project and not float(np.dot(g, dx)) < 0.0 and np.any(g):
            raise NotPositiveDefinite("exact Newton step is not a descent direction")
        return kinks.NewtonStep(dx, g, factor, VertexUnknowns(fixed_dof), project)

    def _reduced_solve(self, ip, x, T, fixed_dof, kind, on):
        """(step, gq): the Newton step of a scene with rigid bodies (a
        :class:`~solver.friction_kinks.NewtonStep`), solved in the basis' unknowns q
        (solver/basis.py): B^T H B plus the Hessians given in q (inertia's,
        orthogonality's) for B^T g, on the factorization's unknowns (a
        :class:`~solver.unknowns.BasisUnknowns`, which maps it to q and to dx = B dq:
        a straight step in q is one in x, so the line search and CCD stay in vertex
        space), with the factorization (None as in :meth:`_linear_solve`; the regime
        rounds and CG reuse it through the unknowns), and B^T g (n_q,), held
        unknowns zeroed.  kind: (project, expected) as in :meth:`_linear_solve` (the
        expected stencils mapped to q).  Raises NotPositiveDefinite as
        :meth:`_linear_solve`."""
        p, (project, expected) = self.params, kind
        with self.timers("linear_solve"):
            # the fixed vertex DOFs' rows are identity rows of x already, and so of q
            r, c, v, gq = ip.reduced_system(x, T, project, fixed_dof)
            held = fixed_q(ip.basis, fixed_dof)  # sleeping rigid bodies' unknowns too
            gq = np.where(held, 0.0, gq)
            first_rigid = ip.basis.n_q - 6 * ip.basis.n_rigid
            if held[first_rigid:].any():  # a sleeping rigid body: the free unknowns only
                system, rhs, free = held_system((r, c, v), gq, held, first_rigid)
            else:
                system, rhs, free = (r, c, v), -gq, None
            unknowns = BasisUnknowns(ip.basis, held, free)
            expected = unknowns.vertex_stencils(expected)
            factor = None
            if not project or on.factor_projected:
                factor = _factorize(system, len(rhs), p.linear_solver, self.ordering, project, expected)
            if factor is None:
                step = solve(*system, rhs, p.linear_solver, ordering=self.ordering, expected=expected)
            else:
                step = factor.solve(rhs)
        if not project and not float(np.dot(rhs, step)) > 0.0 and np.any(rhs):
            raise NotPositiveDefinite("exact Newton step is not a descent direction")
        gu = gq if free is None else gq[free]  # = unknowns.reduce(g): fixed DOFs reach held q only
        return kinks.NewtonStep(step, gu, factor, unknowns, project), gq


def _turned(basis, x, gq, dq):
    """The step dx (N, 2) of dq (n_q,) with each rigid body's turn made an
    exact rotation (:meth:`~solver.basis.AffineBasis.rotation_corrected`),
    while that is still a descent direction for the gradient gq (n_q,)."""
    turned = basis.rotation_corrected(x, dq)
    if float(np.dot(gq, turned)) < 0.0:
        dq = turned
    return basis.expand(dq)


def _features(settings, ip, fixed_dof) -> Features:
    """The size-switched features of ip's system, by its vertex DOFs also when
    it is solved in a basis' unknowns q: what a feature saves is iterations,
    and an iteration's cost (contacts, CCD, the line search) follows the
    vertices, not q (S4R: 604 unknowns, 16,204 vertex DOFs;
    docs/design/17-affine-bodies.md).  There the regime rounds work on the
    reduced factorization (through :class:`~solver.unknowns.BasisUnknowns`);
    CG on the exact Hessian is off: in q it saved no iterations
    (docs/design/17-affine-bodies.md)."""
    on = settings.features(len(fixed_dof))
    return on if getattr(ip, "basis", None) is None else replace(on, exact_cg=False)


def exact_model_step(solve, deficit_product, g, step, free, settings):
    """(dx, negative): the Newton step dx (2N,) of the exact Hessian H = P - N, by conjugate
    gradients on H dx = -g preconditioned with P, the PSD-projected Hessian
    (solve: P^-1 b from its factorization), where N (PSD, deficit_product:
    N p) is what the projection added.  step (2N,): P^-1 (-g), the
    projected Newton step, which is CG's first direction; free (2N,) bool:
    the DOFs not fixed.

    Far from a solution the exact Hessian of a pile is indefinite (a body
    rocking on a corner: the barrier's curvature across a point-point
    contact is negative), so Newton solves with P.  But P overestimates
    the curvature along its own step (the clamped eigenvalues), and where
    the energy falls faster than P's model, projected Newton creeps
    (linear convergence; walking off a saddle, its step grows for tens of
    iterations).  CG from zero takes the projected step scaled to the
    exact curvature along it, then corrects it in the few directions where
    P and H differ (N has low rank, the stencils with clamped
    eigenvalues).  It stops after settings.cg_iters iterations, once the
    preconditioned residual is settings.cg_tol of the first, or at a direction of
    negative curvature, returning the iterate so far (the projected step if
    that is the first direction: the model has no minimum along it and
    the line search decides) with negative = True: H is not positive
    definite.  Costs one solve with P per iteration.
    """
    r = -g
    z = step
    p, Pp = z, r  # search direction and P times it (P z = r: no product with P needed)
    dx = np.zeros_like(g)
    rz = float(r @ z)
    stop = settings.cg_tol * settings.cg_tol * rz
    for k in range(settings.cg_iters):
        q = Pp - np.where(free, deficit_product(np.where(free, p, 0.0)), 0.0)  # H p
        curvature = float(p @ q)
        if not curvature > 0.0:
            return (step if k == 0 else dx), True
        a = rz / curvature
        dx = dx + a * p
        r = r - a * q
        z = solve(r)
        rz, rz_old = float(r @ z), rz
        if rz <= stop:
            break
        beta = rz / rz_old
        p, Pp = z + beta * p, r + beta * Pp
    return dx, False


def _factorize(system, n, method, ordering, project, expected=None):
    """The Cholesky factorization of the system (COO triplets rows, cols, vals), or None when a projected
    (so positive semidefinite plus mass) one is not numerically definite:
    :func:`~solver.linsolve.linalg.solve` then picks its fallback.  An exact one that
    is not definite raises :class:`~solver.linsolve.linalg.NotPositiveDefinite`."""
    try:
        return factorize(*system, n, method, ordering, expected)
    except NotPositiveDefinite:
        if not project:
            raise
        return None


def backtrack(ip, x, dx, alpha, cs, energy, slope, settings, first=None):
    """Armijo backtracking from alpha: halve until ip(x + alpha dx) <= E(x) +
    settings.armijo alpha slope (or alpha falls below settings.min_alpha).
    Returns (alpha or None, ip at the accepted point, E(x)); energy
    (optional) is E(x), first (optional) ip(x + alpha dx)."""
    if energy is None:
        energy = ip.value(x, cs)
    while alpha > settings.min_alpha:
        trial = ip.value(x + alpha * dx, cs) if first is None else first
        first = None
        if trial <= energy + settings.armijo * alpha * slope:
            return alpha, trial, energy
        alpha *= 0.5
    return None, None, energy


def force_imbalance(g, acting, ip, x, g_ref, vertex_slack):
    """How far the forces at x are from balance, in units of force_tol [-]:
    the larger of :func:`vertex_imbalance` / vertex_slack and
    :func:`body_imbalance`.  At most force_tol means every body's net force
    and torque balance to force_tol of its weight plus inertial force, and
    every vertex's forces to vertex_slack * force_tol of those acting on it.
    g (2N,): gradient (fixed DOFs zeroed); acting (2N,): magnitudes of its
    terms; x (N, 2): where g was evaluated."""
    return max(vertex_imbalance(g, acting, ip, g_ref) / vertex_slack, body_imbalance(g, ip, x, g_ref))


def vertex_imbalance(g, acting, ip, g_ref):
    """Largest net force on a vertex relative to the forces acting on it [-].

    g (2N,): gradient of the incremental potential, h^2 times the net force
    on each vertex (fixed DOFs zeroed); acting (2N,): the summed magnitudes
    of the terms making up g (inertia, elasticity, contact, friction,
    penalty), at least the vertex's weight m g_ref h^2 (a body in free
    flight has no other force).  0.01 means every vertex's forces balance to
    1 % of the forces acting on it.
    """
    net = np.hypot(g[0::2], g[1::2])
    scale = np.hypot(acting[0::2], acting[1::2]) + ip.vertex_weight(g_ref)
    return float(np.max(net / scale, initial=0.0))


def body_imbalance(g, ip, x, g_ref):
    """Largest net force or net torque on a body relative to its weight plus
    its inertial force [-] (the error of its rigid motion).

    Per vertex, s_i = m_i (g_ref h^2 + |x_i - x~_i|) (weight plus the
    inertia term m (a - g) h^2, in the IP's units); per body, with c the
    s-weighted centroid and r_i = x_i - c: |sum g_i| / sum s_i and
    |sum r_i x g_i| / sum |r_i| s_i.  Internal forces (elasticity) cancel in
    these sums, so a body pressed hard still has to move right to a fraction
    of g: the acceleration of its centre is off by at most that fraction of
    g + |a - g|.  g (2N,) (fixed DOFs zeroed), x (N, 2).
    """
    nb = ip.n_bodies
    if nb == 0:
        return 0.0
    on = ip.vertex_body >= 0  # body vertices
    # one coordinate at a time: 1D masks and gathers, several times cheaper than (n, 2)'s
    b = ip.vertex_body[on]
    x0, x1, gx, gy = x[:, 0][on], x[:, 1][on], g[0::2][on], g[1::2][on]
    s = ip.inertial_scale(x, g_ref)[on]
    total = np.bincount(b, s, nb)
    force = np.hypot(np.bincount(b, gx, nb), np.bincount(b, gy, nb))
    r0 = x0 - np.take(np.bincount(b, s * x0, nb) / total, b)  # from the s-weighted centroid
    r1 = x1 - np.take(np.bincount(b, s * x1, nb) / total, b)
    torque = np.abs(np.bincount(b, r0 * gy - r1 * gx, nb))
    lever = np.bincount(b, np.hypot(r0, r1) * s, nb)
    # a body shrunk to a point has no lever: its torque is zero too
    return float(max(np.max(force / total), np.max(torque / np.where(lever > 0.0, lever, 1.0))))
