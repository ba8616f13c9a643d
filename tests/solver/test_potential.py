"""The whole incremental potential on a small scene with every contact type
active: value vs the assembled gradient (central differences), the assembled
dense Hessian with projections switched off vs FD, and with projections on:
symmetric positive definite.  Also the contact energy of both formulations
against an independent sum written from seed 004."""

import numpy as np
import pytest
from invariants import assert_close_rel, contact_scene, fd_gradient, fd_jacobian, point_segment_distance
from invariants import barrier_ref as _barrier_ref

from solver import barrier
from solver.contacts import build_contact_set, candidate_stencils, pair_friction, plane_friction
from solver.model import build_model
from solver.potential import IncrementalPotential, StepConstants


def setup(formulation, seed=0, penalize=True):
    scene = contact_scene(formulation)
    m = build_model(scene)
    p = scene.params
    rng = np.random.default_rng(seed)
    x_prev = m.rest.copy()
    kappa, dhat, h = p.kappa, p.dhat, p.dt
    cs0 = build_contact_set(m, candidate_stencils(m, x_prev, x_prev, dhat), kappa, dhat, formulation)
    penalized = m.is_collider.copy() if penalize else np.zeros(m.n, bool)
    target = x_prev + np.where(penalized[:, None], 0.003, 0.0)
    consts = StepConstants(
        h=h,
        dhat=dhat,
        kappa=kappa,
        eps=p.eps_v * h,
        x_tilde=x_prev + h * rng.normal(size=x_prev.shape) * 0.1 + h * h * np.array([0.0, -9.81]),
        x_prev=x_prev,
        target=target,
        penalized=penalized,
        pen_mass=np.full(m.n, 0.7),
        k_pen=1e3,
        pair_friction=pair_friction(m, cs0, x_prev, dhat),
        plane_friction=plane_friction(m, x_prev, kappa, dhat),
    )
    # evaluation point: small random move (keeps every distance in (0, dhat) and
    # every case; slips of both friction regimes, eps = 5e-4)
    x = x_prev + rng.uniform(-1.5e-3, 1.5e-3, x_prev.shape)
    cs = build_contact_set(m, candidate_stencils(m, x, x, dhat), kappa, dhat, formulation)
    return m, consts, x, cs


def dense(T, n):
    r, c, v = T.arrays()
    A = np.zeros((n, n))
    np.add.at(A, (r, c), v)
    return A


@pytest.mark.parametrize("formulation", ["original", "convergent"])
def test_incremental_potential_gradient_and_hessian_fd(formulation, monkeypatch):
    m, consts, x, cs = setup(formulation)
    ip = IncrementalPotential(m, consts)
    # every term is really active here
    X = cs.gather(x)
    d = np.sqrt(barrier.distance_sq(X, cs.cases(X)))
    assert np.sum(d < consts.dhat) >= 6 and np.all(d > 0)
    assert len(consts.pair_friction) >= 4 and len(consts.plane_friction) == 3
    slip = np.abs(
        np.einsum(
            "ni,ni->n",
            consts.pair_friction.w,
            (x - consts.x_prev)[consts.pair_friction.idx].reshape(len(consts.pair_friction), -1),
        )
    )
    assert np.any(slip < consts.eps) and np.any(slip > consts.eps)
    if formulation == "convergent":
        assert cs.pp.any()

    n = 2 * m.n
    z = x.ravel()

    def E(v):
        return ip.value(v.reshape(-1, 2), cs)

    def G(v):
        return ip.gradient_hessian(v.reshape(-1, 2), cs).grad

    T = ip.gradient_hessian(x, cs)
    assert_close_rel(T.grad, fd_gradient(E, z, 1e-7), 1e-6, "IP gradient")

    # projected Hessian: symmetric positive definite (mass + PSD terms)
    A = dense(T, n)
    assert np.allclose(A, A.T, rtol=0, atol=1e-10 * np.abs(A).max())
    assert np.linalg.eigvalsh(A).min() > 0

    # exact Hessian (projections off) equals FD of the assembled gradient
    A_exact = dense(ip.gradient_hessian(x, cs, project=False), n)
    assert_close_rel(A_exact, fd_jacobian(G, z, 1e-7), 1e-5, "IP Hessian")
    assert not np.allclose(A_exact, A)  # the projection changed something

    # what the projection added, recorded per stencil: projected - deficit = exact
    T = ip.gradient_hessian(x, cs, deficit=True)
    assert T.deficit and not ip.gradient_hessian(x, cs).deficit
    np.testing.assert_array_equal(dense(T, n), A)  # recording it changes nothing else
    N = np.column_stack([T.deficit_product(e) for e in np.eye(n)])
    assert_close_rel(A - N, A_exact, 1e-9, "projected Hessian minus its deficit")


def test_penalty_term_alone(monkeypatch):
    """The penalty 1/2 k m |x - target|^2 on penalised vertices, FD-checked by
    difference of the potential with and without penalisation."""
    m, consts, x, cs = setup("original", seed=3)
    from dataclasses import replace

    with_pen = IncrementalPotential(m, consts)
    without = IncrementalPotential(m, replace(consts, penalized=np.zeros(m.n, bool)))
    diff = with_pen.value(x, cs) - without.value(x, cs)
    r = (x - consts.target)[consts.penalized]
    assert np.isclose(diff, 0.5 * consts.k_pen * 0.7 * np.sum(r * r), rtol=1e-9)
    g = with_pen.gradient_hessian(x, cs).grad - without.gradient_hessian(x, cs).grad
    expected = np.zeros_like(x)
    expected[consts.penalized] = consts.k_pen * 0.7 * r
    assert np.allclose(g, expected.ravel(), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("formulation", ["original", "convergent"])
def test_contact_energy_matches_independent_sum(formulation):
    """Seed 004: P = 1/2 sum_x w_x kappa dhat [sum_e b(d(x,e)) - sum_v b(d(x,v))]
    with e over the other objects' boundary edges, v over their vertices shared
    by two edges (the duplicate point-point terms; the 'original' formulation
    keeps only the edge sum).  Bodies/collider are far from themselves here, so
    no same-body pair is within dhat."""
    scene = contact_scene(formulation)
    m = build_model(scene)
    p = scene.params
    x = m.rest
    cs = build_contact_set(m, candidate_stencils(m, x, x, p.dhat), p.kappa, p.dhat, formulation)
    X = cs.gather(x)
    solver_E = barrier.pe_value(X, cs.cases(X), cs.coef, p.dhat)

    edges = m.edges
    w = np.zeros(m.n)
    for a, b in edges:
        L = np.linalg.norm(x[a] - x[b])
        w[a] += L / 2
        w[b] += L / 2
    total = 0.0
    for pt in np.unique(edges):
        other = m.owner[edges[:, 0]] != m.owner[pt]
        if m.is_collider[pt]:
            other &= ~m.is_collider[edges[:, 0]]
        oe = edges[other]
        d = point_segment_distance(x[pt], x[oe[:, 0]], x[oe[:, 1]])
        psi = _barrier_ref(d**2 / p.dhat**2).sum()
        if formulation == "convergent":
            verts, count = np.unique(oe, return_counts=True)
            shared = verts[count == 2]
            dv = np.linalg.norm(x[shared] - x[pt], axis=1)
            psi -= _barrier_ref(dv**2 / p.dhat**2).sum()
        total += 0.5 * w[pt] * p.kappa * p.dhat * psi
    assert total > 0
    assert np.isclose(solver_E, total, rtol=1e-10)


@pytest.mark.parametrize("formulation", ["original", "convergent"])
def test_gradient_alone_matches_the_gradient_of_gradient_hessian(formulation):
    """Newton's cheap force test after its last step uses ip.gradient: same
    gradient and same acting-force magnitudes as the full assembly."""
    m, consts, x, cs = setup(formulation)
    ip = IncrementalPotential(m, consts)
    full, alone = ip.gradient_hessian(x, cs), ip.gradient(x, cs)
    assert np.any(full.grad) and len(alone.rows) == 0
    np.testing.assert_allclose(alone.grad, full.grad, rtol=1e-12, atol=1e-15 * np.abs(full.magnitude).max())
    np.testing.assert_allclose(alone.magnitude, full.magnitude, rtol=1e-12)
