"""Contact sets from a model (solver/contacts.py): the convergent formulation's corner
duplicate and its merging with the point-point stencil it cancels, and the pair and
half-plane friction sets built from a scene's contacts."""

import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from invariants import assert_close_rel, contact_scene, fd_gradient, point_segment_distance
from invariants import barrier_ref as _barrier_ref

from solver import barrier, friction
from solver.assembly import Triplets
from solver.contacts import ContactSet, build_contact_set, candidate_stencils, pair_friction, plane_friction
from solver.distance import PP0, distance_sq, point_edge_case
from solver.model import build_model
from solver.terms import PointEdgeBarrier


def _weights_ref(model_edges, x, n):
    w = np.zeros(n)
    for a, b in model_edges:
        L = np.linalg.norm(x[a] - x[b])
        w[a] += 0.5 * L
        w[b] += 0.5 * L
    return w


@pytest.mark.parametrize("formulation", ["original", "convergent"])
def test_pair_and_plane_friction_sets_from_a_scene(formulation):
    """Frozen lambda = -dE/dd (FD in d, independent barrier), tangent
    perpendicular to the point-to-closest-point normal, mu the geometric mean,
    and the FD check of the real sets in both slip regions."""
    scene = contact_scene(formulation)
    m = build_model(scene)
    p = scene.params
    x0 = m.rest
    kappa, dhat = p.kappa, p.dhat
    cs = build_contact_set(m, candidate_stencils(m, x0, x0, dhat), kappa, dhat, formulation)
    fs = pair_friction(m, cs, x0, dhat)
    assert len(fs) >= 4
    w_ref = _weights_ref(m.edges, x0, m.n)

    def B(s):
        return -((s - 1) ** 2) * np.log(s) if 0 < s < 1 else 0.0

    for k in range(len(fs)):
        pt, e0, e1 = fs.idx[k]
        duplicate = e0 == e1
        d = point_segment_distance(x0[pt], x0[e0], x0[e1])
        assert 0 < d < dhat
        sign = -1.0 if duplicate else 1.0
        coef = sign * 0.5 * kappa * dhat * w_ref[pt]
        h = 1e-7 * dhat
        lam = -(coef * B((d + h) ** 2 / dhat**2) - coef * B((d - h) ** 2 / dhat**2)) / (2 * h)
        mu = math.sqrt(m.mu[pt] * m.mu[e0])
        assert math.isclose(fs.mu_lambda[k], mu * lam, rel_tol=1e-5)
        # tangent: w = Gamma (x) t with t orthogonal to the contact normal
        t = fs.w[k, 0:2]
        assert math.isclose(np.linalg.norm(t), 1.0, rel_tol=1e-12)
        if not duplicate:
            # closest point on the edge, independently
            e = x0[e1] - x0[e0]
            r = np.clip((x0[pt] - x0[e0]) @ e / (e @ e), 0, 1)
            nrm = x0[pt] - (x0[e0] + r * e)
            assert abs(t @ nrm) < 1e-9 * np.linalg.norm(nrm)
            assert np.allclose(fs.w[k, 2:4], -(1 - r) * t) and np.allclose(fs.w[k, 4:6], -r * t)
    if formulation == "convergent":
        assert np.any(fs.idx[:, 1] == fs.idx[:, 2]) and np.any(fs.mu_lambda < 0)

    pfs = plane_friction(m, x0, kappa, dhat)
    assert len(pfs) == 3  # A's three bottom vertices are within dhat of the ground
    nrm = m.plane_normal[0]
    for k in range(len(pfs)):
        v = pfs.idx[k, 0]
        d = (x0[v] - m.plane_point[0]) @ nrm
        coef = kappa * dhat * w_ref[v]
        h = 1e-7 * dhat
        lam = -(coef * B((d + h) ** 2 / dhat**2) - coef * B((d - h) ** 2 / dhat**2)) / (2 * h)
        assert math.isclose(pfs.mu_lambda[k], math.sqrt(0.4 * 0.5) * lam, rel_tol=1e-5)
        assert abs(pfs.w[k] @ nrm) < 1e-12

    # FD of the real sets: small (stick) and large (slide) displacements
    rng = np.random.default_rng(7)
    eps = 1e-3
    for scale in (0.05, 20.0):
        disp = rng.normal(size=(m.n, 2)) * scale * eps
        for S in (fs, pfs):
            # `S` bound as a default (the closures are used in this iteration only).
            def E(v, S=S):
                return friction.value(S, v.reshape(-1, 2), eps)

            def G(v, S=S):
                g = np.zeros(len(v))
                np.add.at(
                    g,
                    (2 * S.idx[:, :, None] + np.arange(2)).ravel(),
                    friction.gradient(S, v.reshape(-1, 2), eps).ravel(),
                )
                return g

            z = disp.ravel()
            assert_close_rel(G(z), fd_gradient(E, z, 1e-7 * eps), 1e-6, "scene friction gradient")


def test_convergent_formulation_removes_the_duplicate_at_a_corner():
    """A point in the Voronoi cone of a convex corner (closest to the corner
    vertex for both incident edges): 'original' counts b(d) twice,
    'convergent' once (the max, seed 004)."""
    energies = {}
    for form in ("original", "convergent"):
        scene = contact_scene(form)
        m = build_model(scene)
        p = scene.params
        x = m.rest.copy()
        # body A's top-right corner is vertex 8 at (0.15, 0.15); place body B
        # (vertices 9..12) so its lowest vertex sits diagonally outside it
        b = m.body_slices[1]
        low = b.start + int(np.argmin(x[b, 1]))
        x[b] += np.array([0.15 + 0.2 * p.dhat, 0.15 + 0.2 * p.dhat]) - x[low]
        corner = 8
        assert np.allclose(x[corner], [0.15, 0.15])
        cs = build_contact_set(m, candidate_stencils(m, x, x, p.dhat), p.kappa, p.dhat, form)
        sub = cs.subset(cs.idx[:, 0] == low)
        X = sub.gather(x)
        energies[form] = barrier.pe_value(X, sub.cases(X), sub.coef, p.dhat)
        w_low = sum(np.linalg.norm(x[a] - x[c]) / 2 for a, c in m.edges if low in (a, c))
        d = np.linalg.norm(x[low] - x[corner])
        single = 0.5 * w_low * p.kappa * p.dhat * float(_barrier_ref(np.array(d * d / p.dhat**2)))
    assert single > 0
    assert np.isclose(energies["convergent"], single, rtol=1e-10)
    assert np.isclose(energies["original"], 2 * single, rtol=1e-10)


def _assembled(stencils, coef, pp, x, dhat, project):
    """(gradient (2N,), dense Hessian) of the point-edge barrier term on the
    stencils (n, 3) with coefficients coef and duplicate flags pp at x (N, 2)."""
    term = PointEdgeBarrier(dhat, 1.0)
    T = Triplets(2 * len(x))
    cs = ContactSet(np.asarray(stencils), np.asarray(coef, float), np.asarray(pp))
    term.gradient_hessian(x, cs, T, project)
    H = np.zeros((2 * len(x), 2 * len(x)))
    if T.rows:
        r, c, v = T.arrays()
        np.add.at(H, (r, c), v)
    return T.grad, H


def test_a_duplicate_cancels_its_point_point_stencil_before_the_projection():
    """A point over a flat face near the joint v of two collinear edges: the
    convergent sum b(d(a, e1)) + b(d(a, e2)) - b(d(a, v)) is the point-line
    term of e1 alone (e2's closest point is v).  Its projected Hessian must be
    that term's: projected stencil by stencil, b(d(a, v)) and its duplicate
    would add |their Hessian| (the normal curvature kept from one, the
    tangential from the other) where the exact sum has nothing."""
    dhat = 1e-3
    x = np.array([[-0.2 * dhat, 0.5 * dhat], [-0.01, 0.0], [0.0, 0.0], [0.01, 0.0]])  # a, u, v, w
    stencils, pp = [[0, 1, 2], [0, 2, 3], [0, 2, 2]], [False, False, True]
    merged = _assembled(stencils, [1.0, 1.0, -1.0], pp, x, dhat, True)
    alone = _assembled([[0, 1, 2]], [1.0], [False], x, dhat, True)
    assert_close_rel(merged[0], alone[0], 1e-12, "gradient")
    assert_close_rel(merged[1], alone[1], 1e-12, "projected Hessian")
    # stencil by stencil, the projection would not give the lone term's matrix
    X = x[np.array([[0, 2, 3], [0, 2, 2]])]
    case = np.array([point_edge_case(X[:1])[0], PP0])
    H = barrier.pe_gradient_hessian(X, case, np.array([1.0, -1.0]), dhat, True)[1]
    assert np.abs(H.sum(axis=0)).max() > 1e-3 * np.abs(alone[1]).max()


@settings(max_examples=60, deadline=None)
@given(
    st.floats(-1.5, 1.5),
    st.floats(0.05, 1.2),
    st.floats(-0.5, 0.5),
    st.floats(0.2, 3.0),
    st.sampled_from([False, True]),
)
def test_merging_point_point_stencils_keeps_the_exact_gradient_and_hessian(along, height, bend, weight, flip):
    """Around the joint v of two edges (bent by `bend`, listed either way round),
    with the convergent formulation's duplicate: the merged stencils' gradient
    and exact Hessian equal the stencils' one by one (the same function)."""
    dhat = 1e-3
    a = np.array([along * dhat, height * dhat])
    u, v, w = np.array([-0.01, bend * 0.01]), np.zeros(2), np.array([0.01, 0.0])
    x = np.array([a, u, v, w])
    e1, e2 = ([1, 2], [2, 3]) if not flip else ([2, 1], [3, 2])
    stencils = np.array([[0, *e1], [0, *e2], [0, 2, 2]])
    coef, pp = np.array([weight, weight, -weight]), np.array([False, False, True])
    X = x[stencils]
    case = point_edge_case(X)
    case[2] = PP0
    inv = 1.0 / (dhat * dhat)
    active = distance_sq(X, case) < dhat * dhat
    assume(active.any())
    merged = _assembled(stencils, coef, pp, x, dhat, False)
    g, H = barrier.pe_gradient_hessian(X[active], case[active], coef[active], dhat, False)
    T = Triplets(2 * len(x))
    T.add_stencils(stencils[active], g, H)
    r, c, vals = T.arrays()
    ref = np.zeros((8, 8))
    np.add.at(ref, (r, c), vals)
    scale = np.abs(ref).max() + inv
    assert np.abs(merged[0] - T.grad).max() <= 1e-10 * (np.abs(T.grad).max() + inv * dhat)
    assert np.abs(merged[1] - ref).max() <= 1e-10 * scale
