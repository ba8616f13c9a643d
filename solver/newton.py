"""Newton's method on one time step's incremental potential, with a
CCD-filtered backtracking line search.

:class:`Newton` minimizes an :class:`~solver.potential.IncrementalPotential`
from a start x: each iteration solves with the exact Hessian while it is
positive definite and with the PSD-projected one for the rest of the solve
once it is not, asks the caller's ``feasible_step`` for the largest
collision- and inversion-free fraction of the step (CCD), and backtracks
from there until the energy decreases enough (Armijo).  The result is a
:class:`NewtonResult`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .contacts import ContactSet
from .linalg import BandOrdering, NotPositiveDefinite, eliminate_fixed, solve
from .profiling import NullTimers

ARMIJO = 1e-4  # sufficient-decrease constant of the backtracking line search
MIN_ALPHA = 1e-12  # the line search gives up below this step


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

    def solve(self, ip, x, fixed, budget, cs=None, energy=None) -> NewtonResult:
        """Minimize ip from x with the vertices fixed (N,) bool held in place, in
        at most budget iterations.  cs (optional): a contact set holding every
        pair within dhat of x; energy (optional): ip's value at x."""
        p = self.params
        fixed_dof = np.repeat(fixed, 2)
        if cs is None:
            cs = self.contact_set(x)
        min_alpha = 1.0
        majorize = (np.zeros(len(ip.c.pair_friction), bool), np.zeros(len(ip.c.plane_friction), bool))
        project = False  # exact Hessian until it fails to be positive definite
        for it in range(budget + 1):
            g, dx, majorize, project = self._direction(ip, x, cs, fixed_dof, majorize, project)
            if not np.all(np.isfinite(dx)):
                return NewtonResult(x, False, it, min_alpha, "linear solve produced non-finite values", cs)
            if np.abs(dx).max() / p.dt < p.newton_tol:
                return NewtonResult(x, True, it, min_alpha, "", cs)
            if it == budget:
                break
            alpha, cs = self.feasible_step(x, dx)
            with self.timers("line_search"):
                alpha, trial, energy = backtrack(ip, x, dx, alpha, cs, energy, float(np.dot(g, dx.ravel())))
            if alpha is None:
                return NewtonResult(
                    x, False, it + 1, min_alpha, "line search failed to decrease the energy", cs
                )
            # The energy at the accepted point is the next iteration's reference:
            # every candidate set contains all pairs within dhat of it.
            x, energy = x + alpha * dx, trial
            min_alpha = min(min_alpha, alpha)
        message = (
            f"Newton did not converge in {p.max_newton_iters} iterations "
            f"(last |dx|/h = {np.abs(dx).max() / p.dt:.3g} m/s, tolerance {p.newton_tol:g})"
        )
        return NewtonResult(x, False, budget, min_alpha, message, cs)

    def _direction(self, ip, x, cs, fixed_dof, majorize, project):
        """Newton step: (g (2N,) it was solved with, dx (N,2), majorize, project).

        The exact Hessian is tried first: near a solution in compression or
        sliding contact its negative-curvature parts matter, and clamping them
        (PSD projection) makes Newton converge only linearly.  If it is not
        positive definite (the Cholesky factorization fails, or, where the
        solver cannot tell, the step is not a descent direction) the
        PSD-projected Hessian is used, for the rest of this Newton solve
        (a pile's Hessian stays indefinite and each failed try costs a
        factorization).
        Friction contacts whose slip the step would reverse are switched to
        their majorizing curvature for the rest of this Newton solve: the
        exact friction Hessian is blind to the kink at zero slip and sends
        such contacts back and forth.
        """
        p = self.params
        while True:
            T = ip.gradient_hessian(x, cs, majorize, project)
            g = np.where(fixed_dof, 0.0, T.grad)
            try:
                with self.timers("linear_solve"):
                    r, c, v = eliminate_fixed(*T.arrays(), fixed_dof)
                    dx = solve(r, c, v, -g, p.linear_solver, require_pd=not project, ordering=self.ordering)
                if not project and not float(np.dot(g, dx)) < 0.0 and np.any(g):
                    raise NotPositiveDefinite("exact Newton step is not a descent direction")
            except NotPositiveDefinite:
                project = True
                continue
            if not np.all(np.isfinite(dx)):
                return g, dx.reshape(-1, 2), majorize, project
            dx = dx.reshape(-1, 2)
            # contacts this step sends across zero slip are majorized from the
            # next iteration on (re-solving at once cost more on piles, where
            # the factorization dominates, than the iterations it saved)
            flips = ip.slip_reversals(x, dx)
            return g, dx, tuple(m | f for m, f in zip(majorize, flips, strict=True)), project


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
