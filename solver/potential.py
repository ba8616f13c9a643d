"""The incremental potential of one implicit-Euler step, as a plain sum of
energies that each expose the same trio (value, gradient, Hessian)::

    E(x) = 1/2 |x - x_tilde|_M^2
         + h^2 ( Psi_elastic(x) + Psi_barrier(x) + Psi_planes(x) + D_friction(x - x^n) )
         + 1/2 k_pen sum_{prescribed, not yet reached} m_i |x_i - target_i|^2

x_tilde = x^n + h v^n + h^2 g.  Gradients are global (N*2,) vectors;
Hessians are accumulated as COO triplets (:class:`~solver.assembly.Triplets`).
"""

from dataclasses import dataclass

import numpy as np

from . import barrier, elasticity, friction
from .assembly import Triplets, stencil_dofs
from .contacts import ContactSet, plane_pairs
from .friction import FrictionSet
from .profiling import NullTimers


@dataclass(frozen=True)
class StepConstants:
    """Everything frozen during one time step.

    x_tilde, x_prev, target: (N,2); penalized: (N,) bool (prescribed vertices
    still driven by the penalty); pen_mass: (N,); k_pen: penalty stiffness.
    """

    h: float
    dhat: float
    kappa: float
    eps: float  # eps_v * h (friction smoothing, a displacement)
    x_tilde: np.ndarray
    x_prev: np.ndarray
    target: np.ndarray
    penalized: np.ndarray
    pen_mass: np.ndarray
    k_pen: float
    pair_friction: FrictionSet
    plane_friction: FrictionSet


class IncrementalPotential:
    """E(x) for a model and step constants; contact stencils passed per call."""

    def __init__(self, model, consts, timers=None):
        self.m = model
        self.c = consts
        self.timers = timers or NullTimers()
        pts, pl = plane_pairs(model)
        self.hp_pts, self.hp_pl = pts, pl
        self.hp_point = model.plane_point[pl]
        self.hp_normal = model.plane_normal[pl]
        self.hp_coef = consts.kappa * consts.dhat * model.weight[pts]

    # ---------------------------------------------------------------- value
    def value(self, x, cs: ContactSet):
        m, c = self.m, self.c
        dx = x - c.x_tilde
        inertia = 0.5 * np.sum(m.mass * np.einsum("ni,ni->n", dx, dx))
        psi = elasticity.value(m.elements, x)
        if not np.isfinite(psi):
            return np.inf
        if len(cs):
            X = cs.gather(x)
            case, d2 = cs.cases_and_distance_sq(X)
            psi += barrier.pe_value(X, case, cs.coef, c.dhat, d2)
        if len(self.hp_pts):
            psi += barrier.hp_value(x[self.hp_pts], self.hp_point, self.hp_normal, self.hp_coef, c.dhat)
        disp = x - c.x_prev
        psi += friction.value(c.pair_friction, disp, c.eps) + friction.value(c.plane_friction, disp, c.eps)
        pen = 0.0
        if c.penalized.any():
            r = (x - c.target)[c.penalized]
            pen = 0.5 * c.k_pen * np.sum(c.pen_mass[c.penalized] * np.einsum("ni,ni->n", r, r))
        return float(inertia + c.h * c.h * psi + pen)

    # ------------------------------------------------------ gradient + Hessian
    def gradient_hessian(self, x, cs: ContactSet, majorize=(None, None), project=True, deficit=False):
        """Returns a filled :class:`Triplets` (gradient in ``.grad``).

        project: PSD-project the elastic, barrier and friction Hessians (else exact).
        majorize: per friction set (pairs, planes), None or (n,) bool of
        contacts given the majorizing curvature (see friction.hessian).
        deficit: (when projecting) also record in the Triplets what the
        projection added, per stencil (:meth:`Triplets.add_deficit`).
        """
        m, c = self.m, self.c
        n = m.n
        T = Triplets(2 * n)
        h2 = c.h * c.h
        tm = self.timers
        added = [] if deficit and project else None  # (stencils, blocks) of one energy at a time
        with tm("inertia+penalty"):
            T.add_dense_gradient((m.mass[:, None] * (x - c.x_tilde)).ravel())
            diag = np.repeat(m.mass, 2)
            # penalty on prescribed vertices not yet at their target
            if c.penalized.any():
                w = np.where(c.penalized, c.k_pen * c.pen_mass, 0.0)
                T.add_dense_gradient((w[:, None] * (x - c.target)).ravel())
                diag = diag + np.repeat(w, 2)
            T.add_diagonal(np.arange(2 * n), diag)
        with tm("elasticity"):
            el = m.elements
            g, H = elasticity.gradient_hessian(el, x, project, added)
            T.add_gradient_at(el.dofs, h2 * g)
            T.add_pattern(el.rows, el.cols, h2 * H, el.dofs)
            _record(T, added, el.dofs.reshape(len(g), -1), h2)
        with tm("barrier"):
            self._barrier_terms(T, x, cs, project, added)
        with tm("friction"):
            disp = x - c.x_prev
            for fs, mm in zip((c.pair_friction, c.plane_friction), majorize, strict=True):
                if len(fs):
                    g, H = friction.gradient_hessian(fs, disp, c.eps, project, mm, added)
                    T.add_gradient_at(fs.dofs.ravel(), h2 * g)
                    T.add_pattern(*fs.pattern, h2 * H, fs.dofs)
                    _record(T, added, fs.dofs, h2)
        return T

    def gradient(self, x, cs: ContactSet):
        """The gradient alone (no Hessian), as a :class:`Triplets` whose
        ``.grad`` and ``.magnitude`` match :meth:`gradient_hessian`'s: Newton
        uses it to test the force balance after its last step."""
        m, c = self.m, self.c
        T = Triplets(2 * m.n)
        h2 = c.h * c.h
        T.add_dense_gradient((m.mass[:, None] * (x - c.x_tilde)).ravel())
        if c.penalized.any():
            w = np.where(c.penalized, c.k_pen * c.pen_mass, 0.0)
            T.add_dense_gradient((w[:, None] * (x - c.target)).ravel())
        el = m.elements
        T.add_gradient_at(el.dofs, h2 * elasticity.gradient(el, x))
        if len(cs):
            X = cs.gather(x)
            case, d2 = cs.cases_and_distance_sq(X)
            act = d2 < c.dhat * c.dhat
            if act.any():
                g = barrier.pe_gradient(X[act], case[act], cs.coef[act], c.dhat)
                T.add_gradient_at(stencil_dofs(cs.idx[act]).ravel(), h2 * g)
        if len(self.hp_pts):
            xp = x[self.hp_pts]
            act = barrier.plane_distance(xp, self.hp_point, self.hp_normal) < c.dhat
            if act.any():
                g = barrier.hp_gradient(
                    xp[act], self.hp_point[act], self.hp_normal[act], self.hp_coef[act], c.dhat
                )
                T.add_gradient_at((2 * self.hp_pts[act][:, None] + np.arange(2)).ravel(), h2 * g)
        disp = x - c.x_prev
        for fs in (c.pair_friction, c.plane_friction):
            if len(fs):
                T.add_gradient_at(fs.dofs.ravel(), h2 * friction.gradient(fs, disp, c.eps))
        return T

    def zero_slip_fractions(self, x, dx):
        """Per friction set (pairs, planes), (n,) fraction of the step dx at
        which each sliding contact it reverses reaches zero slip, 1 for the
        others (see friction.zero_slip_fraction): below 1 marks a reversal."""
        c = self.c
        disp = x - c.x_prev
        return tuple(
            friction.zero_slip_fraction(fs, disp, dx, c.eps) for fs in (c.pair_friction, c.plane_friction)
        )

    def _barrier_terms(self, T, x, cs, project=True, added=None):
        """Point-edge and half-plane barrier gradients/Hessians into T
        (only stencils inside dhat contribute); added: see gradient_hessian."""
        c = self.c
        h2 = c.h * c.h
        if len(cs):
            X = cs.gather(x)
            case, d2 = cs.cases_and_distance_sq(X)
            act = d2 < c.dhat * c.dhat
            if act.all():
                g, H = barrier.pe_gradient_hessian(X, case, cs.coef, c.dhat, project, added)
                T.add_stencils(cs.idx, h2 * g, h2 * H)
                _record(T, added, stencil_dofs(cs.idx), h2)
            elif act.any():
                g, H = barrier.pe_gradient_hessian(X[act], case[act], cs.coef[act], c.dhat, project, added)
                T.add_stencils(cs.idx[act], h2 * g, h2 * H)
                _record(T, added, stencil_dofs(cs.idx[act]), h2)
        # half-planes
        if len(self.hp_pts):
            xp = x[self.hp_pts]
            d = barrier.plane_distance(xp, self.hp_point, self.hp_normal)
            act = d < c.dhat
            if act.any():
                g, H = barrier.hp_gradient_hessian(
                    xp[act], self.hp_point[act], self.hp_normal[act], self.hp_coef[act], c.dhat
                )
                T.add_stencils(self.hp_pts[act][:, None], h2 * g, h2 * H)


def _record(T, added, dofs, scale):
    """Move the deficits an energy appended to ``added`` (stencil indices,
    blocks) into T, at the DOFs dofs (n, k) of its stencils, scaled as its
    Hessian was (h^2)."""
    if added:
        for which, N in added:
            T.add_deficit(dofs[which], scale * N)
        added.clear()
