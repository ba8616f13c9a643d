"""Every registered term of the incremental potential (solver.terms.TERMS),
checked the same way on small random configurations where all of them are
active (contacts inside dhat of both formulations, friction slips in the
static zone, the blend and sliding, pinned vertices off target, an external
force, field drag, links of every kind, stretched, compressed and moving): the gradient
against central differences of the weighted value, the gradient of
gradient_hessian equal to gradient's, the exact Hessian against central
differences of the gradient, the projected one symmetric PSD, and projected
minus the recorded deficit equal to the exact one.
Registering a term adds its cases here."""

from dataclasses import replace

import numpy as np
import pytest
from invariants import assert_close_rel, contact_scene, fd_gradient, fd_jacobian

from solver.assembly import Triplets
from solver.contacts import build_contact_set, candidate_stencils, pair_friction, plane_friction
from solver.fields import FieldStep
from solver.links import anchor_at, step_springs
from solver.model import build_model
from solver.potential import IncrementalPotential, StepConstants
from solver.scene import Link, LinkAnchor
from solver.terms import TERMS


def configuration(formulation, seed):
    """(model, step constants, x, contact set at x): the contact scene moved a
    little at random from its rest state (its step start), every term active."""
    scene = contact_scene(formulation, mu_static=0.6)
    scene = replace(scene, links=links_of_every_kind(scene))
    m = build_model(scene)
    p = scene.params
    rng = np.random.default_rng(seed)
    x_prev = m.rest.copy()
    kappa, dhat, h = p.kappa, p.dhat, p.dt
    cs0 = build_contact_set(m, candidate_stencils(m, x_prev, x_prev, dhat), kappa, dhat, formulation)
    penalized = m.is_collider.copy()
    consts = StepConstants(
        h=h,
        dhat=dhat,
        kappa=kappa,
        eps=p.eps_v * h,
        x_tilde=x_prev + h * rng.normal(size=x_prev.shape) * 0.1 + h * h * np.array([0.0, -9.81]),
        x_prev=x_prev,
        target=x_prev + np.where(penalized[:, None], 0.003, 0.0),
        penalized=penalized,
        pen_mass=np.full(m.n, 0.7),
        k_pen=1e3,
        pair_friction=pair_friction(m, cs0, x_prev, dhat),
        plane_friction=plane_friction(m, x_prev, kappa, dhat),
        force=rng.normal(size=x_prev.shape),
        fields=drag_of_fields(m, rng),
        links=step_springs(m.links, np.ones(len(m.links), bool), x_prev - 0.01, 0.0, h),
    )
    x = x_prev + rng.uniform(-1.5e-3, 1.5e-3, x_prev.shape)
    cs = build_contact_set(m, candidate_stencils(m, x, x, dhat), kappa, dhat, formulation)
    return m, consts, x, cs


def drag_of_fields(m, rng):
    """Linear and quadratic field drag on every body vertex but the first
    (which feels none: the term skips it)."""
    c1 = rng.uniform(0.5, 2.0, m.n) * ~m.is_collider
    c2 = rng.uniform(0.5, 2.0, m.n) * ~m.is_collider
    c1[0] = c2[0] = 0.0
    return FieldStep(None, c1, c2)


def links_of_every_kind(scene):
    """Links between the contact scene's bodies A and B (colliding, so that the
    body-body contacts stay) and to the world: a pin and a weld whose anchors
    are apart, a compressed damped spring, a taut rope, a spring to an animated
    world point."""
    A, B = scene.bodies
    a0, a1 = anchor_at(A, (0.05, 0.1)), anchor_at(A, (-0.1, -0.05))
    b0 = anchor_at(B, B.vertices.mean(axis=0))
    moving = LinkAnchor(times=np.array([0.0, 1.0]), positions=np.array([[0.3, 0.4], [0.5, 0.1]]))
    return (
        Link("pin", "pin", a0, b0, collide=True),
        Link("weld", "weld", a1, LinkAnchor(position=(-0.08, -0.06))),
        Link("spring", "spring", a1, b0, length=0.6, stiffness=50.0, damping=3.0, collide=True),
        Link("rope", "rope", b0, LinkAnchor(position=(0.0, 0.6)), length=0.2),
        Link("pull", "spring", a0, moving, stiffness=20.0, damping=1.0),
    )


def dense(T, n):
    r, c, v = T.arrays() if T.rows else (np.zeros(0, int), np.zeros(0, int), np.zeros(0))
    A = np.zeros((n, n))
    np.add.at(A, (r, c), v)
    return A


def gradient_of(term, x, cs, n):
    T = Triplets(n)
    term.gradient(x.reshape(-1, 2), cs, T)
    return T


CASES = [(term, form, seed) for term in TERMS for form in ("original", "convergent") for seed in (0, 1)]


@pytest.mark.parametrize(
    ("term_class", "formulation", "seed"), CASES, ids=lambda v: getattr(v, "__name__", v)
)
def test_registered_term_derivatives(term_class, formulation, seed):
    m, consts, x, cs = configuration(formulation, seed)
    term = term_class.build(m, consts)
    assert term is not None, "the configuration must make every registered term active"
    assert term.weight == (consts.h * consts.h if term.per_h2 else 1.0)
    n = 2 * m.n
    z = x.ravel()

    g = gradient_of(term, x, cs, n).grad
    assert np.any(g), "an active term must exert a force here"
    fd = fd_gradient(lambda v: term.weight * term.value(v.reshape(-1, 2), cs), z, 1e-7)
    assert_close_rel(g, fd, 1e-6, f"{term_class.__name__} gradient")

    exact = Triplets(n)
    term.gradient_hessian(x, cs, exact, project=False)
    np.testing.assert_allclose(exact.grad, g, rtol=1e-12, atol=1e-15 * np.abs(g).max())
    np.testing.assert_allclose(exact.magnitude, gradient_of(term, x, cs, n).magnitude, rtol=1e-12)
    H = dense(exact, n)
    J = fd_jacobian(lambda v: gradient_of(term, v, cs, n).grad, z, 1e-7)
    if np.any(J) or np.any(H):
        assert_close_rel(H, J, 1e-5, f"{term_class.__name__} Hessian")

    projected = Triplets(n, record_deficit=True)
    term.gradient_hessian(x, cs, projected, project=True)
    P = dense(projected, n)
    np.testing.assert_array_equal(projected.grad, exact.grad)
    scale = max(np.abs(P).max(), 1e-300)
    assert np.allclose(P, P.T, rtol=0, atol=1e-12 * scale)
    assert np.linalg.eigvalsh(P).min() >= -1e-9 * scale
    N = np.column_stack([projected.deficit_product(e) for e in np.eye(n)])
    assert_close_rel(P - N, H, 1e-9, f"{term_class.__name__} projected minus deficit")
    unrecorded = Triplets(n)
    term.gradient_hessian(x, cs, unrecorded, project=True)
    assert not unrecorded.deficit
    np.testing.assert_array_equal(dense(unrecorded, n), P)


def test_some_term_has_a_projection_deficit():
    """The configurations reach the projections (else the deficit check above
    would hold trivially)."""
    m, consts, x, cs = configuration("convergent", 0)
    T = IncrementalPotential(m, consts).gradient_hessian(x, cs, deficit=True)
    assert T.deficit


def test_the_potential_is_the_sum_of_its_terms():
    """value, gradient and Hessian of the potential against the terms' own,
    each weighted: the potential adds nothing of its own."""
    m, consts, x, cs = configuration("convergent", 1)
    ip = IncrementalPotential(m, consts)
    assert [type(t) for t in ip.terms] == list(TERMS)
    n = 2 * m.n
    parts = [Triplets(n) for _ in ip.terms]
    for term, T in zip(ip.terms, parts, strict=True):
        term.gradient_hessian(x, cs, T, project=True)
    total = ip.gradient_hessian(x, cs)
    np.testing.assert_allclose(total.grad, sum(T.grad for T in parts), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(dense(total, n), sum(dense(T, n) for T in parts), rtol=1e-12, atol=1e-9)
    value = sum(t.weight * t.value(x, cs) for t in ip.terms)
    assert ip.value(x, cs) == pytest.approx(value, rel=1e-12)


def test_a_zero_external_force_is_not_a_term():
    m, consts, x, _ = configuration("original", 0)
    ip = IncrementalPotential(m, replace(consts, force=np.zeros_like(x)))
    assert "ExternalForce" not in [type(t).__name__ for t in ip.terms]
    assert "ExternalForce" in [t.__name__ for t in TERMS]


@pytest.mark.parametrize("seed", range(3))
def test_half_plane_pairs_are_the_models_and_kept_for_one_x(seed):
    """HalfPlaneBarrier's pairs are model.plane_pairs_within's, in its order,
    found anew for a new x and reused for the same bits of x: value and
    derivatives the same bits with the pairs kept or not."""
    from test_model import _planes_below, _scene

    from solver.terms import HalfPlaneBarrier

    rng = np.random.default_rng(seed)
    scene = _scene()
    scene = replace(scene, half_planes=_planes_below(scene, rng.uniform(-3.0, 3.0, 3), [0.05, 0.0, 0.1]))
    m = build_model(scene)
    dhat = 0.3
    coef = rng.uniform(1.0, 2.0, m.n)
    xs = [m.rest + rng.normal(scale=0.05, size=m.rest.shape) for _ in range(2)]
    kept = HalfPlaneBarrier(m, coef, dhat, 0.01)
    for x in (xs[0], xs[0].copy(), xs[1], xs[0]):
        pts, xp, point, normal, c = kept._active(x)
        ref_pts, ref_pl, _ = m.plane_pairs_within(x, dhat)
        assert pts.tolist() == ref_pts.tolist()
        assert xp.tobytes() == x[ref_pts].tobytes() and c.tobytes() == coef[ref_pts].tobytes()
        assert point.tobytes() == m.plane_point[ref_pl].tobytes()
        assert normal.tobytes() == m.plane_normal[ref_pl].tobytes()
        fresh = HalfPlaneBarrier(m, coef, dhat, 0.01)
        assert kept.value(x, None) == fresh.value(x, None)
        T, U = Triplets(2 * m.n), Triplets(2 * m.n)
        kept.gradient_hessian(x, None, T, True)
        fresh.gradient_hessian(x, None, U, True)
        assert T.grad.tobytes() == U.grad.tobytes()
        assert [v.tobytes() for v in T.vals] == [v.tobytes() for v in U.vals]
    assert len(pts)  # some pairs within dhat


def test_plane_distances_by_plane_are_the_strided_sums():
    """plane_distances_by_plane (contiguous coordinates) gives the bits of the
    sums over the strided columns x[:, 0], x[:, 1] it replaced."""
    from solver import barrier

    rng = np.random.default_rng(5)
    x, point, normal = rng.normal(size=(50, 2)), rng.normal(size=(3, 2)), rng.normal(size=(3, 2))
    x[3] = point[1]  # zero distances
    d = (x[:, 0] - point[:, 0:1]) * normal[:, 0:1]
    d += (x[:, 1] - point[:, 1:2]) * normal[:, 1:2]
    assert barrier.plane_distances_by_plane(x, point, normal).tobytes() == d.tobytes()
    assert barrier.plane_distances(x, point, normal).tolist() == d.T.tolist()
