"""The incremental potential of one implicit-Euler step, the plain sum of its
terms (:mod:`solver.terms`)::

    E(x) = 1/2 |x - x_tilde|_M^2
         + h^2 ( Psi_elastic(x) + Psi_barrier(x) + Psi_planes(x) + D_friction(x - x^n) - f . x
                 + D_drag(x - x^n) + Psi_links(x) + D_links(x) )
         + 1/2 k_pen sum_{prescribed, not yet reached} m_i |x_i - target_i|^2

x_tilde = x^n + h v^n + h^2 g.  Gradients are global (N*2,) vectors;
Hessians are accumulated as COO triplets (:class:`~solver.assembly.Triplets`).
Newton reads the potential through the methods and properties here only.
"""

from dataclasses import dataclass

import numpy as np

from . import friction
from .assembly import Triplets
from .contacts import ContactSet
from .fields import FieldStep
from .friction import FrictionSet
from .links import LinkStep
from .modal import ModalElasticity
from .orthogonality import Orthogonality
from .profiling import NullTimers
from .terms import FRICTION_TERMS, TERMS, HalfPlaneBarrier, PointEdgeBarrier


@dataclass(frozen=True)
class StepConstants:
    """Everything frozen during one time step.

    x_tilde, x_prev, target: (N,2); penalized: (N,) bool (prescribed vertices
    still driven by the penalty); pen_mass: (N,); k_pen: penalty stiffness;
    force: (N,2) external force per vertex beyond gravity, or None;
    links: the active links' springs (:class:`~solver.links.LinkStep`), or None;
    fields: the force fields' drag and lagged force (:class:`~solver.fields.FieldStep`), or None.
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
    force: np.ndarray | None = None
    links: LinkStep | None = None
    fields: FieldStep | None = None


class IncrementalPotential:
    """E(x) for a model and step constants: the sum of the registered terms
    active this step; contact stencils passed per call."""

    def __init__(self, model, consts, timers=None, terms=TERMS):
        self.consts = consts
        self.timers = timers or NullTimers()
        self.terms = tuple(t for t in (term.build(model, consts) for term in terms) if t is not None)
        # rigid bodies: their unknowns are q (x = B q, solver/basis.py), kept rigid by
        # the orthogonality energy, whose Hessian is given in q (None: no basis, no term)
        self.basis = getattr(model, "basis", None)
        self.rigidity = Orthogonality.build(model, consts)
        # stiff bodies: their elasticity, Hessian in q too (None: no stiff bodies)
        self.in_q = tuple(t for t in (self.rigidity, ModalElasticity.build(model, consts)) if t is not None)
        self.terms = (*self.terms, *self.in_q)
        self.friction_terms = tuple(t for t in self.terms if isinstance(t, FRICTION_TERMS))
        self._n = model.n
        self._mass = model.mass
        self._body = np.where(model.is_collider, -1, model.owner)  # body of each vertex, -1 on colliders
        self.n_bodies = len(model.body_slices)

    # ---------------------------------------------------------------- value
    def value(self, x, cs: ContactSet):
        """E(x): the terms summed in registration order, each run of terms of
        one weight summed before it is weighted (inertia + h^2 (elasticity +
        barriers + friction + force) + penalty); inf outside the domain."""
        total, run, last = 0.0, 0.0, None
        for term in self.terms:
            v = term.value(x, cs)
            if not np.isfinite(v):
                return np.inf
            if last is not None and term.per_h2 == last.per_h2:
                run += v
                continue
            if last is not None:
                total = total + last.weight * run
            run, last = v, term
        if last is not None:
            total = total + last.weight * run
        return float(total)

    # ------------------------------------------------------ gradient + Hessian
    def gradient_hessian(self, x, cs: ContactSet, majorize=None, project=True, deficit=False):
        """Returns a filled :class:`Triplets` (gradient in ``.grad``).

        project: PSD-project the elastic, barrier and friction Hessians (else exact).
        majorize: per friction term (:attr:`friction_terms`), None or (n,) bool of
        contacts given the majorizing curvature (see friction.hessian).
        deficit: (when projecting) the Triplets also records what the
        projection added, per stencil (:meth:`Triplets.add_deficit`).
        """
        T = Triplets(2 * self._n, record_deficit=deficit)
        majorized = dict(zip(self.friction_terms, majorize or (), strict=False))
        for term in self.terms:
            with self.timers(term.stage):
                term.gradient_hessian(x, cs, T, project, majorized.get(term))
        return T

    def reduced_system(self, x, T, project, fixed_dof=None):
        """(rows, cols, vals, grad): the system of T (assembled at x by
        :meth:`gradient_hessian`) in the basis' unknowns q, B^T H B plus the
        Hessians given in q (inertia's, the orthogonality energy's), and B^T grad.  Only with a basis.
        fixed_dof (2N,) bool (optional): H's fixed rows and columns made identity first
        (``Triplets.system``: block by block)."""
        b = self.basis
        # (stiff bodies: per entry; the type's, as ModalBasis forwards to its rigid bodies')
        reduce = getattr(type(b), "reduce_hessian", None)
        if reduce is not None and (fixed_dof is None or not fixed_dof.any()):
            parts = [reduce(b, T)]
        elif reduce is not None:
            parts = [b.reduce_system(T, fixed_dof)]
        else:
            parts = [b.reduce_triplets(*(T.arrays() if fixed_dof is None else T.system(fixed_dof)))]
        # the terms whose Hessian is given in q (inertia's B^T M B, orthogonality)
        parts += [t.reduced_hessian(x, project) for t in self.terms if hasattr(t, "reduced_hessian")]
        r, c, v = (np.concatenate(a) for a in zip(*parts, strict=True))
        return r, c, v, b.reduce_gradient(T.grad)

    def gradient(self, x, cs: ContactSet):
        """The gradient alone (no Hessian), as a :class:`Triplets` whose
        ``.grad`` and ``.magnitude`` match :meth:`gradient_hessian`'s: Newton
        uses it to test the force balance after its last step."""
        T = Triplets(2 * self._n)
        for term in self.terms:
            term.gradient(x, cs, T)
        return T

    def barrier_gradient(self, x, cs: ContactSet):
        """(2N,) the gradient of the barrier terms alone, as assembled with
        their Hessians (adaptive kappa balances it against the others)."""
        T = Triplets(2 * self._n)
        for term in self.terms:
            if isinstance(term, PointEdgeBarrier | HalfPlaneBarrier):
                term.gradient_hessian(x, cs, T, True)
        return T.grad

    # ------------------------------------------------ what Newton reads
    @property
    def h(self):
        return self.consts.h

    @property
    def eps(self):
        """Friction's smoothing, a displacement (eps_v h)."""
        return self.consts.eps

    @property
    def friction_sets(self):
        """The frozen friction contacts of the active friction terms."""
        return tuple(t.fs for t in self.friction_terms)

    def displacement(self, x):
        """x - x^n (N, 2), the motion of the step so far."""
        return x - self.consts.x_prev

    def vertex_weight(self, g_ref):
        """(N,) each vertex's weight in the potential's units, m g_ref h^2
        (the penalty's mass on collider vertices)."""
        c = self.consts
        return c.pen_mass * g_ref * c.h * c.h

    def inertial_scale(self, x, g_ref):
        """(N,) m_i (g_ref h^2 + |x_i - x~_i|): each vertex's weight plus its
        inertial force in the potential's units."""
        c = self.consts
        return self._mass * (g_ref * c.h * c.h + np.hypot(*(x - c.x_tilde).T))

    @property
    def vertex_body(self):
        """(N,) the body of each vertex, -1 on collider vertices."""
        return self._body

    def zero_slip_fractions(self, x, dx):
        """Per friction term, (n,) fraction of the step dx at which each sliding
        contact it reverses reaches zero slip, 1 for the others (see
        friction.zero_slip_fraction): below 1 marks a reversal."""
        disp = self.displacement(x)
        return tuple(friction.zero_slip_fraction(fs, disp, dx, self.eps) for fs in self.friction_sets)
