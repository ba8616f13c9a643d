"""Newton's method on one time step's incremental potential, with a
CCD-filtered backtracking line search.

:class:`Newton` minimizes an :class:`~solver.potential.IncrementalPotential`
from a start x: each iteration solves with the exact Hessian while it is
positive definite and with the PSD-projected one once it is not (until
the steps are small again, unless the exact one was just shown
indefinite; a large system starts projected where the last start showed
it indefinite), asks the caller's ``feasible_step`` for the largest
collision- and inversion-free fraction of the step (CCD), shortens it to
where a reversed sliding friction contact reaches zero slip (on the exact
Hessian), and backtracks from there until the energy decreases enough
(Armijo).  On systems of REGIME_MIN_DOFS or more, each step is re-solved
with the friction contacts on the pieces of their energy it lands them on
(:func:`regime_consistent_step`).
It stops when the step is small AND the forces balance (see
:meth:`Newton.solve`).  The result is a :class:`NewtonResult`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from . import friction
from .contacts import ContactSet
from .linalg import BandOrdering, NotPositiveDefinite, factorize, solve, woodbury_solve
from .profiling import NullTimers

ARMIJO = 1e-4  # sufficient-decrease constant of the backtracking line search
MIN_ALPHA = 1e-12  # the line search gives up below this step
STALL = 1e-6  # an accepted step this small (relative to newton_tol) is no progress
RETRY_EXACT = 10.0  # try the exact Hessian again once |dx|/h < this * newton_tol
KINK_FLOOR = 0.25  # stop a reversed sliding contact at zero slip only if this much of the step is left
MAJORIZE_ITERS = 1  # iterations a friction contact is majorized after a step reversed its slip
VERTEX_SLACK = 10.0  # each vertex balances to this times force_tol (1 %), each body to force_tol
REGIME_ROUNDS = 5  # re-solves of a step with the friction regimes its end point is in
REGIME_MAX_CONTACTS = 64  # ... only while at most this many friction curvatures change (rank of the update)
REGIME_SWITCHES = 3  # a contact that changes piece this many times in one step's rounds is held static
REGIME_MIN_DOFS = 1000  # ... and only on systems this large (smaller ones factor faster than a round)
CG_ITERS = 10  # conjugate-gradient iterations on the exact Hessian from a projected step (as large)
CG_TOL = 0.1  # ... until the preconditioned residual is this fraction of the first


@dataclass(frozen=True)
class Direction:
    """One Newton direction and what was learnt computing it.

    g (2N,): the gradient it was solved with (fixed DOFs zeroed); acting
    (2N,): the magnitudes of g's terms; dx (N,2): the step; majorize: per
    friction set, (n,) iterations each contact stays majorized; project:
    whether the Hessian was PSD-projected; zero_slip: per friction set, (n,)
    fraction of dx at which each sliding contact it reverses reaches zero
    slip (1: not reversed); indefinite: the exact Hessian at x was shown not
    positive definite (its factorization failed, its step was not a descent
    direction, or conjugate gradients met negative curvature)."""

    g: np.ndarray
    acting: np.ndarray
    dx: np.ndarray
    majorize: tuple
    project: bool
    zero_slip: tuple
    indefinite: bool = False


@dataclass(frozen=True)
class NewtonResult:
    """Outcome of one Newton solve.

    x: (N,2) last iterate; contacts: a contact set holding every pair within
    dhat of x; message: why it stopped without converging ("" if it converged).
    """

    x: np.ndarray
    converged: bool
    iterations: int
    min_alpha: float  # smallest accepted line-search step
    message: str
    contacts: ContactSet
    vertex: int = -1  # not converged: the vertex whose last Newton step was largest


def _largest_step(dx) -> int:
    """The vertex whose Newton step is largest (a non-finite one first)."""
    size = np.abs(dx).max(axis=1)
    return int(np.argmax(np.where(np.isfinite(size), size, np.inf)))


class Newton:
    """Newton solver for a scene's parameters (dt, newton_tol, linear_solver).

    feasible_step(x, dx) -> (alpha, cs): largest alpha <= 1 keeping x + alpha dx
    free of collisions and inversions, and a contact set swept over that
    segment.  contact_set(x) -> the contact set at x.
    """

    def __init__(
        self,
        params,
        feasible_step: Callable,
        contact_set: Callable,
        ordering: BandOrdering | None = None,
        timers=None,
    ):
        self.params = params
        self.feasible_step = feasible_step
        self.contact_set = contact_set
        self.ordering = ordering or BandOrdering()  # fill-reducing order reused by the solves
        self.timers = timers or NullTimers()
        self.g_ref = float(np.hypot(*params.gravity)) or 9.81  # weight scale [m/s^2]
        # The last solve's first direction showed the exact Hessian indefinite (on
        # a system of REGIME_MIN_DOFS or more): the next solve starts projected.
        # State between steps: checkpoints store it.
        self.start_projected = False

    def solve(self, ip, x, fixed, budget, cs=None, energy=None) -> NewtonResult:
        """Minimize ip from x with the vertices fixed (N,) bool held in place, in
        at most budget iterations.  cs (optional): a contact set holding every
        pair within dhat of x; energy (optional): ip's value at x.

        Converged when both the step is small, ||dx||_inf / h < newton_tol,
        and the forces balance (:func:`force_imbalance` <= force_tol): where
        the Hessian is stiff (static friction, mu lambda / (eps_v h); pressed
        contacts) a tiny step can leave a large force unbalanced.  When the
        step is small and the line search cannot make progress along it (the
        energy's rounding hides the remaining force), the step test decides.
        """
        p = self.params
        fixed_dof = np.repeat(fixed, 2)
        if cs is None:
            cs = self.contact_set(x)
        min_alpha = 1.0
        # per friction contact: iterations left with the majorizing curvature
        majorize = tuple(np.zeros(len(fs), int) for fs in ip.friction_sets)
        # The exact Hessian until it fails to be positive definite, unless it was
        # shown indefinite at the last solve's start: a step starts at the inertial
        # prediction, far from its solution, where a pile's exact Hessian stays
        # indefinite from step to step (S4: the first try failed on 47 of its first
        # 60 steps, each a factorization and an assembly lost).  Starting projected,
        # CG on the exact Hessian tells whether that still holds.
        large = len(fixed_dof) >= REGIME_MIN_DOFS
        project = self.start_projected and large
        for it in range(budget + 1):
            d = self._direction(ip, x, cs, fixed_dof, majorize, project)
            g, dx, majorize, project = d.g, d.dx, d.majorize, d.project
            if it == 0:
                self.start_projected = d.indefinite and large
            if project and not d.indefinite and np.abs(dx).max() / p.dt < RETRY_EXACT * p.newton_tol:
                # near the solution the exact Hessian is often definite again, and
                # projected Newton would only converge linearly to the force test;
                # not when it was just shown indefinite here (CG met negative
                # curvature): a step this small does not change that, and the
                # try would cost a factorization (S4: 206 -> 62 failed tries)
                project = False
            if not np.all(np.isfinite(dx)):
                failed = "linear solve produced non-finite values"
                return NewtonResult(x, False, it, min_alpha, failed, cs, _largest_step(dx))
            speed = np.abs(dx).max() / p.dt
            # (the force test only matters once the step is small: measured lazily)
            if speed < p.newton_tol and force_imbalance(g, d.acting, ip, x, self.g_ref) <= p.force_tol:
                return NewtonResult(x, True, it, min_alpha, "", cs)
            if it == budget:
                break
            alpha, cs = self.feasible_step(x, dx)
            alpha = _line_search_start(alpha, d.zero_slip, project)
            with self.timers("line_search"):
                alpha, trial, energy = backtrack(ip, x, dx, alpha, cs, energy, float(np.dot(g, dx.ravel())))
            if speed < p.newton_tol and (alpha is None or alpha * speed < STALL * p.newton_tol):
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
            if speed < p.newton_tol and self._balanced(ip, x, cs, fixed_dof):
                # the step just taken was small and the forces balance where it
                # landed: converged, without the Hessian and solve of one more
                # iteration only to measure a step known to be tiny (Newton's
                # quadratic phase)
                return NewtonResult(x, True, it + 1, min_alpha, "", cs)
        imbalance = force_imbalance(g, d.acting, ip, x, self.g_ref)
        message = (
            f"Newton did not converge in {p.max_newton_iters} iterations (last |dx|/h = {speed:.3g} m/s, "
            f"tolerance {p.newton_tol:g}; force imbalance {imbalance:.3g}, tolerance {p.force_tol:g})"
        )
        return NewtonResult(x, False, budget, min_alpha, message, cs, _largest_step(dx))

    def _balanced(self, ip, x, cs, fixed_dof):
        """Whether the forces at x balance (force_imbalance <= force_tol)."""
        T = ip.gradient(x, cs)
        g = np.where(fixed_dof, 0.0, T.grad)
        return force_imbalance(g, T.magnitude, ip, x, self.g_ref) <= self.params.force_tol

    def _direction(self, ip, x, cs, fixed_dof, majorize, project) -> Direction:
        """Newton step (a :class:`Direction`).

        Unless project, the exact Hessian is tried first: near a solution in
        compression or sliding contact its negative-curvature parts matter, and
        clamping them (PSD projection) makes Newton converge only linearly.  If
        it is not positive definite (the Cholesky factorization fails, or, where
        the solver cannot tell, the step is not a descent direction) the
        PSD-projected Hessian is used until the step is within RETRY_EXACT
        times the tolerance (a pile's Hessian stays indefinite far from the
        solution, and each failed try costs a factorization).  On systems of
        REGIME_MIN_DOFS or more a projected step is refined by CG on the
        exact Hessian (:func:`exact_model_step`).
        Friction contacts whose slip the step would reverse get their
        majorizing curvature phi'(|u|)/|u| for the next MAJORIZE_ITERS
        iterations (for as long as the Hessian stays projected, unless the
        regime rounds ran: they model a reversal on the static piece): the
        exact friction Hessian is blind to the kink at zero slip and sends
        such contacts back and forth.  Only briefly once the exact Hessian is
        back: once sliding, the majorizer (mu lambda / |u|) is far stiffer
        than the exact curvature (zero) and Newton would crawl towards the
        slip.
        """
        p = self.params
        large = len(fixed_dof) >= REGIME_MIN_DOFS  # the regime rounds and CG run (on the factorization)
        expected = cs.idx[~cs.pp]  # candidates that may come within dhat: the analysis may cover them
        indefinite = False
        while True:
            T = ip.gradient_hessian(x, cs, tuple(m > 0 for m in majorize), project, deficit=large)
            g = np.where(fixed_dof, 0.0, T.grad)
            try:
                with self.timers("linear_solve"):
                    r, c, v = T.system(fixed_dof)
                    factor = None
                    if not project or large:
                        factor = _factorize(
                            r, c, v, len(g), p.linear_solver, self.ordering, project, expected
                        )
                    if factor is None:
                        dx = solve(r, c, v, -g, p.linear_solver, ordering=self.ordering, expected=expected)
                    else:
                        dx = factor.solve(-g)
                if not project and not float(np.dot(g, dx)) < 0.0 and np.any(g):
                    raise NotPositiveDefinite("exact Newton step is not a descent direction")
            except NotPositiveDefinite:
                project = indefinite = True
                continue
            dx = dx.reshape(-1, 2)
            if not np.all(np.isfinite(dx)):
                return Direction(g, T.magnitude, dx, majorize, project, (), indefinite)
            rounds = large and factor is not None
            if project and rounds and T.deficit:
                with self.timers("exact_cg"):
                    dx, negative = exact_model_step(
                        factor.solve, T.deficit_product, g, dx.ravel(), ~fixed_dof
                    )
                dx, indefinite = dx.reshape(-1, 2), indefinite or negative
            if rounds:
                with self.timers("regime_rounds"):
                    dx = regime_consistent_step(ip, x, g, dx, factor, fixed_dof, majorize, project)
            # contacts this step sends across zero slip are majorized from the
            # next iteration on (re-solving at once cost more iterations on the
            # compressing squares, and factorizations on piles)
            zero_slip = ip.zero_slip_fractions(x, dx)
            majorize = next_majorize(majorize, tuple(f < 1.0 for f in zero_slip), project and not rounds)
            return Direction(g, T.magnitude, dx, majorize, project, zero_slip, indefinite)


def exact_model_step(solve, deficit_product, g, step, free):
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
    eigenvalues).  It stops after CG_ITERS iterations, once the
    preconditioned residual is CG_TOL of the first, or at a direction of
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
    stop = CG_TOL * CG_TOL * rz
    for k in range(CG_ITERS):
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


def regime_consistent_step(ip, x, g, dx, factor, fixed_dof, majorize, project=False):
    """The Newton step dx (N, 2) re-solved, up to REGIME_ROUNDS times, with
    each friction contact modelled on the piece of its energy (static,
    sliding forwards, sliding backwards: :func:`friction.regime`) that the
    step's end point puts it in, until no contact changes piece.  A contact
    moves one piece per round (:func:`next_piece`).  project: the Hessian
    factorized is the PSD-projected one (curvatures clamped at zero).
    Newton calls it on systems of REGIME_MIN_DOFS or more only.

    With the linear static zone the friction energy is piecewise quadratic,
    and Newton's model (the pieces at x) sends contacts across the edges of
    their pieces; the next iteration then corrects only those.  The pieces
    differ from the model at x by a rank-1 term per contact whose curvature
    changes (r of them), so a round costs a forward substitution with r
    right-hand sides and two solves on the factorization of the Hessian
    (factor, a :class:`~solver.linalg.Factorization`; Woodbury), not a
    factorization.  A contact that changes piece REGIME_SWITCHES times is
    held static; majorized contacts keep their model.  All or nothing: when a round
    would change more than REGIME_MAX_CONTACTS curvatures (it would cost
    more than it saves) or is not a descent direction for the true
    gradient g (2N,) (the modified Hessian need not be definite), the plain
    Newton step is returned: a partial correction measured worse than none.
    After REGIME_ROUNDS rounds the last one's step is kept.
    """
    sets = [(fs, m > 0) for fs, m in zip(ip.friction_sets, majorize, strict=True) if len(fs)]
    if not sets:
        return dx
    disp = ip.displacement(x)
    slips = [friction.slip(fs, disp) for fs, _ in sets]
    at_x = [friction.regime(u, ip.eps) for u in slips]
    pieces = [r.copy() for r in at_x]
    flips = [np.zeros(len(r), np.int8) for r in at_x]
    step = dx
    for _ in range(REGIME_ROUNDS):
        changed = False
        for (fs, held), u, piece, flip in zip(sets, slips, pieces, flips, strict=True):
            lands = friction.regime(u + friction.slip(fs, step), ip.eps)
            moved = (lands != piece) & ~held
            if moved.any():
                changed = True
                flip[moved] += 1
                ahead = next_piece(piece[moved], lands[moved])
                piece[moved] = np.where(flip[moved] >= REGIME_SWITCHES, 0, ahead)
        if not changed:
            return step
        step = _woodbury_step(ip, g, factor, fixed_dof, sets, slips, at_x, pieces, project)
        if step is None or not float(np.dot(g, step)) < 0.0:
            return dx
        step = step.reshape(-1, 2)
    return step


def next_piece(piece, lands):
    """(m,) the piece a contact on ``piece`` (m,) is modelled on next when the
    step lands it on ``lands`` (m,): the next one along its slip's path.  A
    slip that crosses zero passes the static zone first, so a sliding
    contact the step reverses goes static, not to the opposite slide: that
    would flip its whole friction force (2 mu lambda) in the model, and with
    several such contacts on one body the re-solved step overshoots by
    orders of magnitude (S4 step 28: slips 60-80 eps sent to +1250 eps) and
    is rejected as not a descent direction."""
    return np.where(piece == -lands, 0, lands).astype(piece.dtype)


def _factorize(rows, cols, vals, n, method, ordering, project, expected=None):
    """The Cholesky factorization of the system, or None when a projected
    (so positive semidefinite plus mass) one is not numerically definite:
    :func:`~solver.linalg.solve` then picks its fallback.  An exact one that
    is not definite raises :class:`~solver.linalg.NotPositiveDefinite`."""
    try:
        return factorize(rows, cols, vals, n, method, ordering, expected)
    except NotPositiveDefinite:
        if not project:
            raise
        return None


def _woodbury_step(ip, g, factor, fixed_dof, sets, slips, at_x, pieces, project=False):
    """The step with the contacts modelled on other pieces (see
    :func:`piece_update`): (2N,), or None when more than
    REGIME_MAX_CONTACTS curvatures change (checked before the dense update
    columns are built: on a pile they would be N x hundreds) or the update
    is singular."""
    n = len(g)
    dg, bends = piece_update(ip, n, sets, slips, at_x, pieces, project)
    if sum(len(dc) for _, _, dc in bends) > REGIME_MAX_CONTACTS:
        return None
    free = ~fixed_dof
    W, curvature = update_columns(bends, n)
    return woodbury_solve(factor, -np.where(free, g + dg, 0.0), W * free[:, None], curvature)


def piece_update(ip, n, sets, slips, at_x, pieces, project=False):
    """How the incremental potential's gradient and Hessian change when the
    friction contacts whose piece (pieces, per set (m,)) differs from the
    one at x (at_x) are modelled on it: (dg (n,), bends), the Hessian
    changing by dc w w^T for each (dofs (k, 2s), w (k, 2s), dc (k,)) in
    bends, one row per contact whose curvature changes (h^2-scaled).  sets:
    (FrictionSet, majorized mask) pairs; slips: their slips at x; project:
    curvatures clamped at zero on both sides, as in the projected Hessian;
    ip: anything with the step's h and eps (the potential)."""
    h2 = ip.h * ip.h
    dg = np.zeros(n)
    bends = []
    for (fs, _), u, here, piece in zip(sets, slips, at_x, pieces, strict=True):
        other = piece != here
        if not other.any():
            continue
        f_piece, c_piece = friction.piece_force_curvature(fs, other, u[other], piece[other], ip.eps)
        f_here, c_here = friction.force_curvature(fs, other, u[other], ip.eps)
        if project:
            c_piece, c_here = np.maximum(c_piece, 0.0), np.maximum(c_here, 0.0)
        w, dofs = fs.w[other], fs.dofs[other]
        dg += np.bincount(dofs.ravel(), weights=((h2 * (f_piece - f_here))[:, None] * w).ravel(), minlength=n)
        dc = h2 * (c_piece - c_here)
        bend = dc != 0.0
        bends.append((dofs[bend], w[bend], dc[bend]))
    return dg, bends


def update_columns(bends, n):
    """(W (n, r), curvature (r,)) of the bends of :func:`piece_update`: one
    dense column per contact (its w scattered to its DOFs)."""
    columns, curvatures = [np.zeros((n, 0))], [np.zeros(0)]
    for dofs, w, dc in bends:
        k = len(dc)
        flat = (dofs * k + np.arange(k)[:, None]).ravel()
        columns.append(np.bincount(flat, weights=w.ravel(), minlength=n * k).reshape(n, k))
        curvatures.append(dc)
    return np.concatenate(columns, axis=1), np.concatenate(curvatures)


def next_majorize(majorize, flips, project):
    """Per friction set, (n,) iterations each contact stays majorized after
    this one: MAJORIZE_ITERS for the contacts this step reverses (flips, (n,)
    bool), one fewer for the others; while the Hessian is projected (far from
    the solution, where Newton converges only linearly anyway) a contact once
    reversed stays majorized: dropping it lets it flip back and forth.
    (project is False where the regime rounds model the reversals: there
    keeping the majorizer cost iterations, S4 60 steps 16.58 -> 16.10 per
    step without it.)"""
    return tuple(
        np.where(f, MAJORIZE_ITERS, np.where(project & (m > 0), m, np.maximum(m - 1, 0)))
        for m, f in zip(majorize, flips, strict=True)
    )


def _line_search_start(alpha, zero_slip, project):
    """Where the line search starts: alpha (the feasible step, from CCD),
    shortened to the zero-slip stop (:func:`_kink_step`) unless Newton is
    on the projected Hessian (project: whether it stays there, i.e. the
    step was projected and is not yet small enough to retry the exact one).
    There a contact once reversed stays majorized (its model already stops
    it at zero slip), so the stop would only catch the first contact
    reversing anew and hold every body to its zero slip, far from the
    solution: measured, the pile's compression
    steps 45.0 -> 40.7 iterations, its first 60 steps 19.72 -> 19.05
    (docs/solver.md)."""
    return alpha if project else min(alpha, _kink_step(zero_slip))


def _kink_step(zero_slip):
    """Where the line search starts, as far as friction is concerned: the
    fraction of the step at which the first sliding contact it reverses
    reaches zero slip (zero_slip: per friction set, (n,) fractions, see
    :class:`Direction`), unless that is below KINK_FLOOR (then 1:
    backtracking decides).

    A sliding contact has no friction curvature (its potential is linear in
    the slip), so Newton's step sends its slip far across zero, where the
    force flips; Armijo then halves the whole step several times, and the
    next step sends it back.  Stopping at zero slip puts the contact in the
    static zone, whose curvature the next Newton step sees.  When many
    contacts reverse at once (a pile landing) the first of them would hold
    every body to a tiny step, so a fraction below the floor is ignored.
    """
    alpha = min((float(f.min(initial=1.0)) for f in zero_slip), default=1.0)
    return alpha if alpha >= KINK_FLOOR else 1.0


def backtrack(ip, x, dx, alpha, cs, energy, slope):
    """Armijo backtracking from alpha: halve until ip(x + alpha dx) <= E(x) +
    ARMIJO alpha slope.  Returns (alpha or None, ip at the accepted point, E(x));
    energy (optional) is E(x)."""
    if energy is None:
        energy = ip.value(x, cs)
    while alpha > MIN_ALPHA:
        trial = ip.value(x + alpha * dx, cs)
        if trial <= energy + ARMIJO * alpha * slope:
            return alpha, trial, energy
        alpha *= 0.5
    return None, None, energy


def force_imbalance(g, acting, ip, x, g_ref):
    """How far the forces at x are from balance, in units of force_tol [-]:
    the larger of :func:`vertex_imbalance` / VERTEX_SLACK and
    :func:`body_imbalance`.  At most force_tol means every body's net force
    and torque balance to force_tol of its weight plus inertial force, and
    every vertex's forces to VERTEX_SLACK * force_tol of those acting on it.
    g (2N,): gradient (fixed DOFs zeroed); acting (2N,): magnitudes of its
    terms; x (N, 2): where g was evaluated."""
    return max(vertex_imbalance(g, acting, ip, g_ref) / VERTEX_SLACK, body_imbalance(g, ip, x, g_ref))


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
    b, xb = ip.vertex_body[on], x[on]
    gx, gy = g[0::2][on], g[1::2][on]
    s = ip.inertial_scale(x, g_ref)[on]
    total = np.bincount(b, s, nb)
    force = np.hypot(np.bincount(b, gx, nb), np.bincount(b, gy, nb))
    centre = np.stack([np.bincount(b, s * xb[:, k], nb) for k in (0, 1)], axis=1) / total[:, None]
    r = xb - centre[b]
    torque = np.abs(np.bincount(b, r[:, 0] * gy - r[:, 1] * gx, nb))
    lever = np.bincount(b, np.hypot(r[:, 0], r[:, 1]) * s, nb)
    # a body shrunk to a point has no lever: its torque is zero too
    return float(max(np.max(force / total), np.max(torque / np.where(lever > 0.0, lever, 1.0))))
