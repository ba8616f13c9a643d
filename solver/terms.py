"""The terms of the incremental potential, one class per energy, all with one
protocol (:class:`Term`), and their registration (:data:`TERMS`).

A term is built for one time step from the model and the step constants
(``build(model, consts)``, None when it has nothing to add this step: no
half-planes, no friction contacts, no pinned vertex pending, no external
force) and then evaluated at positions x (N, 2) with the contact set cs
holding every pair within dhat of x (stencils change within a step, so cs
is passed per call):

- ``value(x, cs)``: the energy, *unweighted* (float, inf outside the domain);
- ``gradient(x, cs, T)``: ``weight`` times the gradient, into the
  :class:`~solver.assembly.Triplets` T (``T.grad``, ``T.magnitude``);
- ``gradient_hessian(x, cs, T, project, majorize=None)``: the same, and
  ``weight`` times its Hessian into T's triplets, PSD-projected if project.
  What the projection added is recorded in T when T asks for it
  (``T.deficit_sink``: the accumulator, not the call, declares it).
  majorize: only the friction terms use it (see :func:`friction.hessian`).

``weight`` is 1 (inertia, pin penalty) or h^2 (the potentials of forces:
elasticity, barriers, friction, external force, links): E = sum of the unit terms
+ h^2 sum of the others.  The weight is declared rather than folded into the
terms so that E is summed in the order it always was (see
:meth:`~solver.potential.IncrementalPotential.value`): the same bits.

Each term gathers its stencils' positions, calls its batched kernel
(:mod:`~solver.elasticity`, :mod:`~solver.barrier`, :mod:`~solver.friction`)
and scatters the result: no loop over elements or contacts.  A new energy is
a class here (or in its own module) and one entry in :data:`TERMS`; the
generic finite-difference test (tests/solver/test_terms.py) then checks it.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from . import barrier, elasticity, friction
from .assembly import Triplets, stencil_dofs
from .contacts import merged_point_point
from .fields import FieldDrag
from .links import LinkDamping, LinkSprings


def same_bits(a, b):
    """Whether the float arrays a and b (contiguous) hold the same bits: equal
    values alone would let 0.0 stand for -0.0."""
    return a.shape == b.shape and bool((a.view(np.int64) == b.view(np.int64)).all())


class Term(Protocol):
    per_h2: bool  # weighted by h^2 (a force's potential) or by 1
    weight: float  # 1 or h^2: multiplies the value, gradient and Hessian
    stage: str  # the timer stage (solver.profiling.STAGES) its assembly is counted in

    def value(self, x, cs) -> float: ...

    def gradient(self, x, cs, T: Triplets) -> None: ...

    def gradient_hessian(self, x, cs, T: Triplets, project: bool, majorize=None) -> None: ...


class Inertia:
    """1/2 |x - x_tilde|_M^2, x_tilde = x^n + h v^n + h^2 g (gravity lives here)."""

    per_h2, weight = False, 1.0
    stage = "inertia+penalty"

    def __init__(self, mass, x_tilde, basis=None, rigid_mass=None):
        self.mass, self.x_tilde = mass, x_tilde
        self.mass_dof = np.repeat(mass, 2)  # per DOF: products over (N, 2) rows of 2 run row by row
        # with reduced (rigid or stiff) bodies (basis) their mass matrix is given in q
        # (reduced_hessian, constant): the vertex-space diagonal is on the plain DOFs only
        self.plain = None if basis is None else np.flatnonzero(~basis.rigid_dof)
        self.rigid_mass = rigid_mass

    @classmethod
    def build(cls, model, consts):
        basis = getattr(model, "basis", None)
        return cls(model.mass, consts.x_tilde, basis, None if basis is None else model.rigid_mass)

    def value(self, x, cs):
        sq = x - self.x_tilde
        sq *= sq
        # einsum("ni,ni->n")'s sum (the same bits) without its loop over 2 numbers a row
        return 0.5 * np.sum(self.mass * (sq[:, 0] + sq[:, 1]))

    def gradient(self, x, cs, T):
        T.add_dense_gradient(self.mass_dof * (x - self.x_tilde).ravel())

    def gradient_hessian(self, x, cs, T, project, majorize=None):
        self.gradient(x, cs, T)
        if self.plain is None:
            T.add_dense_diagonal(self.mass_dof)
        else:
            T.add_diagonal(self.plain, self.mass_dof[self.plain])

    def reduced_hessian(self, x, project):
        """(rows, cols, vals): the reduced bodies' mass matrix in q, B^T M B (constant)."""
        return self.rigid_mass


class Elasticity:
    """Neo-Hookean elasticity of every triangle (:mod:`solver.elasticity`)."""

    per_h2, stage = True, "elasticity"

    def __init__(self, elements, weight):
        self.el, self.weight = elements, weight

    @classmethod
    def build(cls, model, consts):
        el = model.elastic_elements
        return None if el is None else cls(el, consts.h * consts.h)

    def value(self, x, cs):
        return elasticity.value(self.el, x)

    def gradient(self, x, cs, T):
        T.add_gradient_at(self.el.dofs, self.weight * elasticity.gradient(self.el, x))

    def gradient_hessian(self, x, cs, T, project, majorize=None):
        el, w = self.el, self.weight
        found = T.deficit_sink(project)
        g, H = elasticity.gradient_hessian(el, x, project, found)
        T.add_gradient_at(el.dofs, w * g)
        T.add_pattern(el.rows, el.cols, w * H, el.dofs)
        T.add_deficits(el.dofs.reshape(len(g), -1), found, w)


class PointEdgeBarrier:
    """The log barrier of the point-edge pairs of the contact set cs
    (only stencils inside dhat contribute)."""

    per_h2, stage = True, "barrier"

    def __init__(self, dhat, weight):
        self.dhat, self.weight = dhat, weight

    @classmethod
    def build(cls, model, consts):
        return cls(consts.dhat, consts.h * consts.h)

    def value(self, x, cs):
        if not len(cs):
            return 0.0
        X = cs.gather(x)
        case, d2 = cs.cases_and_distance_sq(X)
        return barrier.pe_value(X, case, cs.coef, self.dhat, d2)

    def _active(self, x, cs):
        """(X, case, idx, coef) of the stencils inside dhat, each point-point
        distance once (the convergent formulation's duplicates merged with the
        stencils they cancel: :func:`~solver.contacts.merged_point_point`)."""
        X = cs.gather(x)
        case, d2 = cs.cases_and_distance_sq(X)
        act = d2 < self.dhat * self.dhat
        idx, coef, pp = cs.idx, cs.coef, cs.pp
        if not act.all():
            X, case, idx, coef, pp = X[act], case[act], idx[act], coef[act], pp[act]
        if pp.any():
            return merged_point_point(X, case, idx, coef, pp)
        return X, case, idx, coef

    def gradient(self, x, cs, T):
        if not len(cs):
            return
        X, case, idx, coef = self._active(x, cs)
        if len(idx):
            g = barrier.pe_gradient(X, case, coef, self.dhat)
            T.add_gradient_at(stencil_dofs(idx).ravel(), self.weight * g)

    def gradient_hessian(self, x, cs, T, project, majorize=None):
        if not len(cs):
            return
        X, case, idx, coef = self._active(x, cs)
        if not len(idx):
            return
        w = self.weight
        found = T.deficit_sink(project)
        g, H = barrier.pe_gradient_hessian(X, case, coef, self.dhat, project, found)
        T.add_stencils(idx, w * g, w * H)
        T.add_deficits(stencil_dofs(idx), found, w)


class HalfPlaneBarrier:
    """The log barrier between the body boundary vertices and the half-planes
    (its Hessian is PSD as it is: nothing to project).  Only the pairs closer
    than dhat carry a barrier; they are found anew at each x."""

    per_h2, stage = True, "barrier"

    def __init__(self, model, coef, dhat, weight):
        self.model, self.coef, self.dhat, self.weight = model, coef, dhat, weight
        self._last = None  # (boundary points, _active's pairs) of the last x

    @classmethod
    def build(cls, model, consts):
        if not (len(model.hp_points) and len(model.plane_point)):
            return None
        coef = consts.kappa * consts.dhat * model.weight  # (N,): a vertex's coefficient
        return cls(model, coef, consts.dhat, consts.h * consts.h)

    def _active(self, x):
        """(vertices, points, plane points, normals, coefficients) of the pairs
        closer than dhat at x.  Newton evaluates the value and the derivatives
        at one x in turn (a line search's accepted point, then its Hessian):
        the pairs of the last x are kept, and reused while the boundary points
        are the same to the bit (the distances to every half-plane of every
        boundary point cost far more than comparing those points)."""
        m = self.model
        xh = np.take(x, m.hp_points, axis=0)  # x[hp_points] copies row by row: slower
        if self._last is not None and same_bits(xh, self._last[0]):
            return self._last[1]
        # model.plane_pairs_within's pairs, vertex-major: found plane by plane on the
        # contiguous (H, B) distances, then ordered by vertex, each vertex's planes
        # in turn (nonzero's scan of a 2-D grid, let alone of the transposed (B, H)
        # one, costs several times that of the flat one)
        below = barrier.plane_distances_by_plane(xh, m.plane_point, m.plane_normal) < self.dhat
        pl, i = np.divmod(np.flatnonzero(below), len(xh))
        order = np.argsort(i, kind="stable")
        pl, i = pl[order], i[order]
        pts = m.hp_points[i]
        pairs = pts, xh[i], m.plane_point[pl], m.plane_normal[pl], self.coef[pts]
        self._last = xh, pairs
        return pairs

    def value(self, x, cs):
        # the pairs at dhat or beyond add B = 0
        return barrier.hp_value(*self._active(x)[1:], self.dhat)

    def gradient(self, x, cs, T):
        pts, *pairs = self._active(x)
        if len(pts):
            g = barrier.hp_gradient(*pairs, self.dhat)
            T.add_gradient_at((2 * pts[:, None] + np.arange(2)).ravel(), self.weight * g)

    def gradient_hessian(self, x, cs, T, project, majorize=None):
        pts, *pairs = self._active(x)
        if len(pts):
            g, H = barrier.hp_gradient_hessian(*pairs, self.dhat)
            T.add_stencils(pts[:, None], self.weight * g, self.weight * H)


class Friction:
    """Lagged friction of one frozen set of contacts (:mod:`solver.friction`),
    on the displacement x - x^n.  majorize: None or (n,) bool, the contacts
    given the majorizing curvature."""

    per_h2, stage = True, "friction"
    consts_field = ""  # the StepConstants field holding the set (subclasses)

    def __init__(self, fs, x_prev, eps, weight):
        self.fs, self.x_prev, self.eps, self.weight = fs, x_prev, eps, weight

    @classmethod
    def build(cls, model, consts):
        fs = getattr(consts, cls.consts_field)
        if not len(fs):
            return None
        return cls(fs, consts.x_prev, consts.eps, consts.h * consts.h)

    def value(self, x, cs):
        return friction.value(self.fs, x - self.x_prev, self.eps)

    def gradient(self, x, cs, T):
        T.add_gradient_at(
            self.fs.dofs.ravel(), self.weight * friction.gradient(self.fs, x - self.x_prev, self.eps)
        )

    def gradient_hessian(self, x, cs, T, project, majorize=None):
        fs, w = self.fs, self.weight
        found = T.deficit_sink(project)
        g, H = friction.gradient_hessian(fs, x - self.x_prev, self.eps, project, majorize, found)
        T.add_gradient_at(fs.dofs.ravel(), w * g)
        T.add_stencil_hessians(fs.idx, w * H, fs.pattern, fs.dofs)
        T.add_deficits(fs.dofs, found, w)


class PairFriction(Friction):
    """Friction of the point-edge contacts of the step's start."""

    consts_field = "pair_friction"


class HalfPlaneFriction(Friction):
    """Friction of the vertex-half-plane contacts of the step's start."""

    consts_field = "plane_friction"


class ExternalForce:
    """The potential -f . x of a constant force f (N, 2) per vertex (h^2-weighted
    like every force's).  Gravity is not one: it is in x_tilde (same bits as
    ever); this is the force fields' lagged force (solver/fields.py),
    inactive while consts.force is zero."""

    per_h2, stage = True, "inertia+penalty"

    def __init__(self, force, weight):
        self.force, self.weight = force, weight

    @classmethod
    def build(cls, model, consts):
        force = getattr(consts, "force", None)
        if force is None or not np.any(force):
            return None
        return cls(np.asarray(force, float), consts.h * consts.h)

    def value(self, x, cs):
        return -float(np.sum(self.force * x))

    def gradient(self, x, cs, T):
        T.add_dense_gradient(-self.weight * self.force.ravel())

    def gradient_hessian(self, x, cs, T, project, majorize=None):
        self.gradient(x, cs, T)  # linear: no Hessian


class PinPenalty:
    """1/2 k_pen sum m_i |x_i - target_i|^2 over the prescribed vertices not
    yet at their target (the penalty rounds of :class:`~solver.Simulation`)."""

    per_h2, weight = False, 1.0
    stage = "inertia+penalty"

    def __init__(self, penalized, pen_mass, k_pen, target):
        self.penalized, self.target = penalized, target
        self.pen_mass, self.k_pen = pen_mass, k_pen
        self.stiffness = np.where(penalized, k_pen * pen_mass, 0.0)  # per vertex

    @classmethod
    def build(cls, model, consts):
        if not consts.penalized.any():
            return None
        return cls(consts.penalized, consts.pen_mass, consts.k_pen, consts.target)

    def value(self, x, cs):
        on = self.penalized
        r = (x - self.target)[on]
        return 0.5 * self.k_pen * np.sum(self.pen_mass[on] * np.einsum("ni,ni->n", r, r))

    def gradient(self, x, cs, T):
        T.add_dense_gradient((self.stiffness[:, None] * (x - self.target)).ravel())

    def gradient_hessian(self, x, cs, T, project, majorize=None):
        self.gradient(x, cs, T)
        T.add_dense_diagonal(np.repeat(self.stiffness, 2))


# The registration point: every term of the incremental potential, in the order
# it is summed (consecutive terms of one weight are summed before weighting).
TERMS = (
    Inertia,
    Elasticity,
    PointEdgeBarrier,
    HalfPlaneBarrier,
    PairFriction,
    HalfPlaneFriction,
    ExternalForce,
    FieldDrag,
    LinkSprings,
    LinkDamping,
    PinPenalty,
)
FRICTION_TERMS = (PairFriction, HalfPlaneFriction)
