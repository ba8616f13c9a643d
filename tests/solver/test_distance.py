"""Point-edge distance: property tests against an independent oracle (exact
projection formula + dense sampling of the segment), case classification, and
finite-difference checks of the squared-distance gradient and Hessian."""

import numpy as np
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from invariants import assert_close_rel, fd_gradient, fd_jacobian, point_segment_distance
from invariants import random_stencil as _random_stencil

from solver.distance import (
    PL,
    PP0,
    PP1,
    closest_point_parameter,
    distance_sq,
    distance_sq_derivatives,
    distance_sq_gradient,
    distance_sq_hessian,
    point_edge_case,
)
from solver.geometry import point_segment_distance as geometry_distance

coord = st.floats(-10.0, 10.0, allow_nan=False, allow_infinity=False)
point = st.tuples(coord, coord)


def sampled_distance(p, a, b, n=20001):
    """Brute force: minimum over n evenly spaced points of the segment."""
    t = np.linspace(0.0, 1.0, n)[:, None]
    q = (1 - t) * a + t * b
    return np.sqrt(np.min(np.sum((q - p) ** 2, axis=1)))


@settings(max_examples=200, deadline=None)
@given(point, point, point)
def test_distance_matches_exact_projection_and_sampling(p, a, b):
    p, a, b = (np.array(v) for v in (p, a, b))
    L = np.linalg.norm(b - a)
    assume(L > 1e-6)
    X = np.array([[p, a, b]])
    d_solver = np.sqrt(distance_sq(X, point_edge_case(X))[0])
    d_exact = point_segment_distance(p, a, b)
    d_sample = sampled_distance(p, a, b)
    scale = max(1.0, np.abs(X).max())
    assert abs(d_solver - d_exact) <= 1e-9 * scale
    # the sampled minimum is an upper bound, within half a sample spacing
    assert d_exact <= d_sample + 1e-9 * scale
    assert d_sample <= d_exact + 0.5 * L / 20000 + 1e-9 * scale
    # the plain geometric distance (CCD, validation, add-on) agrees
    assert abs(geometry_distance(p[None], a[None], b[None])[0] - d_exact) <= 1e-9 * scale


@settings(max_examples=100, deadline=None)
@given(point, point, point)
def test_case_and_closest_point_parameter(p, a, b):
    p, a, b = (np.array(v) for v in (p, a, b))
    e = b - a
    assume(e @ e > 1e-6)
    t = (p - a) @ e / (e @ e)
    X = np.array([[p, a, b]])
    case = point_edge_case(X)[0]
    expected = PP0 if t <= 0 else PP1 if t >= 1 else PL
    if min(abs(t), abs(t - 1)) > 1e-9:  # at a case boundary either choice gives the same distance
        assert case == expected
    r = closest_point_parameter(X, np.array([case]))[0]
    assert abs(r - min(max(t, 0.0), 1.0)) <= 1e-12
    # the closest point realises the distance
    q = a + r * e
    assert abs(np.linalg.norm(p - q) - point_segment_distance(p, a, b)) <= 1e-9 * max(1, np.abs(X).max())


def random_stencil(rng, case):
    return _random_stencil(rng, {PP0: "PP0", PP1: "PP1", PL: "PL"}[case])


def test_gradient_and_hessian_match_finite_differences():
    rng = np.random.default_rng(1)
    for case in (PP0, PP1, PL):
        for _ in range(10):
            X = random_stencil(rng, case)
            assert point_edge_case(X[None])[0] == case

            def f(z):
                Z = z.reshape(1, 3, 2)
                return distance_sq(Z, point_edge_case(Z))[0]

            def g(z):
                Z = z.reshape(1, 3, 2)
                return distance_sq_gradient(Z, point_edge_case(Z))[0]

            z = X.ravel()
            c = np.array([case], np.int8)
            g_an = distance_sq_gradient(X[None], c)[0]
            H_an = distance_sq_hessian(X[None], c)[0]
            assert_close_rel(g_an, fd_gradient(f, z, 1e-6), 1e-6, f"grad case {case}")
            assert_close_rel(H_an, fd_jacobian(g, z, 1e-6), 1e-6, f"hess case {case}")
            d2, g2, H2 = distance_sq_derivatives(X[None], c)
            assert np.allclose(d2[0], f(z), rtol=1e-14)
            assert np.allclose(g2[0], g_an, rtol=1e-13, atol=1e-14)
            assert np.allclose(H2[0], H_an, rtol=1e-13, atol=1e-14)


def test_batched_mixed_cases_match_single_evaluation():
    """Value/gradient/Hessian of a batch mixing all three cases equal the
    one-at-a-time results (no cross-talk between masked sub-batches)."""
    rng = np.random.default_rng(2)
    X = np.array([random_stencil(rng, c) for c in (PP0, PL, PP1, PL, PP0, PP1) * 3])
    case = point_edge_case(X)
    d2, g, H = distance_sq_derivatives(X, case)
    for k in range(len(X)):
        d2k, gk, Hk = distance_sq_derivatives(X[k : k + 1], case[k : k + 1])
        assert d2[k] == d2k[0] and np.array_equal(g[k], gk[0]) and np.array_equal(H[k], Hk[0])
        assert abs(np.sqrt(d2[k]) - point_segment_distance(*X[k])) < 1e-12


def test_the_batched_formulas_are_the_per_point_vector_formulas_to_the_bit():
    """The kernels run on each coordinate's column; the same operations on
    (n, 2) point vectors (a = p - e0, e = e1 - e0, b = p - e1, r = a - t e)
    give the same bits: d^2 of each case, the gradient 2 gamma (x) r and the
    Hessian (v, its PL term's vector, as (n, 6))."""
    from solver.distance import case_and_distance_sq, distance_sq_derivatives_closest

    rng = np.random.default_rng(3)
    X = rng.normal(size=(500, 3, 2)) * 10.0 ** rng.uniform(-3, 3, (500, 1, 1))
    X[::7, 2] = X[::7, 1]  # degenerate edges
    case, d2 = case_and_distance_sq(X)
    a, e, b = X[:, 0] - X[:, 1], X[:, 2] - X[:, 1], X[:, 0] - X[:, 2]
    L = (e * e).sum(axis=1)
    t = (a * e).sum(axis=1) / np.where(L > 0, L, 1.0)
    assert set(case) == {PP0, PP1, PL}
    np.testing.assert_array_equal(case, np.where(t <= 0.0, PP0, np.where(t >= 1.0, PP1, PL)))
    c = a[:, 0] * e[:, 1] - a[:, 1] * e[:, 0]
    pp = np.where(case == PP1, (b * b).sum(axis=1), (a * a).sum(axis=1))
    np.testing.assert_array_equal(d2, np.where(case == PL, c * c / np.where(case == PL, L, 1.0), pp))
    tc = np.where(case == PL, t, (case == PP1).astype(float))
    r = a - tc[:, None] * e
    gamma = np.stack([np.ones(len(X)), tc - 1.0, -tc], axis=1)
    d2_again, g, H, _ = distance_sq_derivatives_closest(X, case)
    line_d2 = c * c / np.where(case == PL, L, 1.0)
    np.testing.assert_array_equal(d2_again, np.where(case == PL, line_d2, (r * r).sum(axis=1)))
    np.testing.assert_array_equal(g, 2.0 * (gamma[:, :, None] * r[:, None, :]).reshape(-1, 6))
    G2 = 2.0 * (gamma[:, :, None] * gamma[:, None, :])
    H_ref = np.zeros((len(X), 3, 2, 3, 2))
    H_ref[:, :, 0, :, 0] = H_ref[:, :, 1, :, 1] = G2
    H_ref = H_ref.reshape(-1, 6, 6)
    v = -2.0 * (gamma[:, :, None] * e[:, None, :]).reshape(-1, 6)
    v[:, 2:4] += 2.0 * r
    v[:, 4:6] -= 2.0 * r
    line = case == PL
    H_ref[line] -= ((0.5 / np.where(line, L, 1.0))[:, None, None] * (v[:, :, None] * v[:, None, :]))[line]
    np.testing.assert_array_equal(H, H_ref)
