"""Log barrier: domain (hypothesis), derivatives against an independent
formula and finite differences, point-edge barrier in every distance case
(unprojected Hessian == FD, projected Hessian PSD), half-plane barrier, and
the normal-force magnitude used by friction."""

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from invariants import assert_close_rel, fd_gradient, fd_jacobian, random_stencil

from solver import barrier
from solver.distance import point_edge_case


def B_ref(s):
    """Independent barrier shape: -(s - 1)^2 ln s on (0, 1), 0 beyond, inf at s <= 0."""
    if s <= 0:
        return math.inf
    if s >= 1:
        return 0.0
    return -((s - 1.0) ** 2) * math.log(s)


# ------------------------------------------------------------------ domain


@settings(max_examples=300, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False, min_value=-1e6, max_value=1e6))
def test_barrier_domain(s):
    b = barrier.barrier(np.array([s]))[0]
    d1 = barrier.barrier_d1(np.array([s]))[0]
    d2 = barrier.barrier_d2(np.array([s]))[0]
    assert not (np.isnan(b) or np.isnan(d1) or np.isnan(d2))
    if s <= 0:
        assert b == np.inf
    elif s >= 1:
        assert b == 0.0 and d1 == 0.0 and d2 == 0.0
    else:
        assert np.isfinite(b) and b >= 0.0
        if s >= 1e-300:  # below, the solver clips s to 1e-300 (d < 1e-150 dhat)
            assert math.isclose(b, B_ref(s), rel_tol=1e-12, abs_tol=1e-300)
        assert d1 <= 0.0  # repulsive: energy decreases with distance
        if s > 1e-150:  # (s-1)^2/s^2 overflows below ~1e-154; d ~ 1e-77 dhat
            assert np.isfinite(d1) and np.isfinite(d2) and d2 >= 0.0


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.floats(-10.0, 0.0), st.floats(1e-140, 10.0)), st.floats(1e-4, 10.0))
def test_point_edge_and_plane_barrier_domain(d_frac, dhat):
    """Energy is inf at d <= 0, exactly 0 at d >= dhat, finite and positive between.
    (0 < d < ~1e-154 dhat is excluded: d^2 underflows to 0 and the barrier is
    then inf -- harmless, such a state is never reached through CCD.)"""
    d = d_frac * dhat
    # point-edge: point at distance |d| above the middle of a unit edge (d <= 0 -> touching)
    X = np.array([[[0.5, max(d, 0.0)], [0.0, 0.0], [1.0, 0.0]]])
    coef = np.array([1.0])
    v = barrier.pe_value(X, point_edge_case(X), coef, dhat)
    # half-plane y >= 0, point at signed distance d
    hv = barrier.hp_value(np.array([[0.3, d]]), np.zeros((1, 2)), np.array([[0.0, 1.0]]), coef, dhat)
    for val, dist in ((v, max(d, 0.0)), (hv, d)):
        assert not np.isnan(val)
        if dist <= 0:
            assert val == np.inf
        elif dist >= dhat:
            assert val == 0.0
        else:
            assert np.isfinite(val) and val > 0.0
            assert math.isclose(val, B_ref(dist * dist / (dhat * dhat)), rel_tol=1e-9)


def test_barrier_derivatives_match_finite_differences():
    for s in np.linspace(0.01, 0.99, 25):
        h = 1e-6 * s
        fd1 = (B_ref(s + h) - B_ref(s - h)) / (2 * h)
        fd2 = (barrier.barrier_d1(np.array([s + h]))[0] - barrier.barrier_d1(np.array([s - h]))[0]) / (2 * h)
        assert math.isclose(barrier.barrier_d1(np.array([s]))[0], fd1, rel_tol=1e-6, abs_tol=1e-9)
        assert math.isclose(barrier.barrier_d2(np.array([s]))[0], fd2, rel_tol=1e-6, abs_tol=1e-9)


def test_barrier_is_c2_at_dhat():
    """Value, slope and curvature all vanish as s -> 1 from below."""
    s = np.array([1.0 - 1e-7])
    assert barrier.barrier(s)[0] < 1e-20
    assert abs(barrier.barrier_d1(s)[0]) < 1e-13
    assert abs(barrier.barrier_d2(s)[0]) < 1e-6


# ------------------------------------------------------------------ point-edge


def stencil_batch(rng, n_per_case=8):
    """Stencils hitting PP0, PP1 and PL with dhat chosen so 0.05 < s < 0.9."""
    X, dhat = [], []
    for kind in ("PP0", "PP1", "PL"):
        for _ in range(n_per_case):
            S = random_stencil(rng, kind)
            X.append(S)
    X = np.array(X)
    from invariants import point_segment_distance

    d = point_segment_distance(X[:, 0], X[:, 1], X[:, 2])
    dhat = d / np.sqrt(rng.uniform(0.05, 0.9, len(X)))
    return X, dhat


def test_point_edge_gradient_hessian_fd_every_case():
    rng = np.random.default_rng(11)
    X, dhats = stencil_batch(rng)
    cases = point_edge_case(X)
    assert set(cases.tolist()) == {0, 1, 2}
    for k in range(len(X)):
        dhat = dhats[k]
        coef = np.array([rng.uniform(0.5, 2.0) * rng.choice([1.0, -1.0])])  # negative: convergent duplicates

        # The loop's values bound as defaults (the closures are used in this iteration only).
        def E(z, coef=coef, dhat=dhat):
            Z = z.reshape(1, 3, 2)
            return barrier.pe_value(Z, point_edge_case(Z), coef, dhat)

        def G(z, coef=coef, dhat=dhat):
            Z = z.reshape(1, 3, 2)
            return barrier.pe_gradient(Z, point_edge_case(Z), coef, dhat)[0]

        z = X[k].ravel()
        c = cases[k : k + 1]
        g, H = barrier.pe_gradient_hessian(X[k : k + 1], c, coef, dhat, project=False)
        h = 1e-6 * dhat
        assert_close_rel(g[0], fd_gradient(E, z, h), 1e-5, f"pe grad case {c[0]}")
        assert_close_rel(H[0], fd_jacobian(G, z, h), 1e-5, f"pe hess case {c[0]}")
        assert np.allclose(barrier.pe_gradient(X[k : k + 1], c, coef, dhat), g, rtol=1e-12, atol=0)
        assert np.allclose(
            barrier.pe_hessian(X[k : k + 1], c, coef, dhat, project=False), H, rtol=1e-12, atol=0
        )


def test_point_edge_projected_hessian_is_psd_clamp_of_exact():
    rng = np.random.default_rng(12)
    X, dhats = stencil_batch(rng, 10)
    dhat = float(dhats.max())  # every stencil inside one common dhat
    cases = point_edge_case(X)
    coef = rng.uniform(0.1, 3.0, len(X)) * rng.choice([1.0, -1.0], len(X))
    Hp = barrier.pe_hessian(X, cases, coef, dhat, project=True)
    Hx = barrier.pe_hessian(X, cases, coef, dhat, project=False)
    saw_indefinite = False
    for k in range(len(X)):
        w, V = np.linalg.eigh(0.5 * (Hx[k] + Hx[k].T))
        saw_indefinite |= w.min() < -1e-9 * abs(w).max()
        clamp = (V * np.maximum(w, 0)) @ V.T
        assert np.allclose(Hp[k], Hp[k].T, atol=1e-12 * abs(w).max())
        assert np.linalg.eigvalsh(Hp[k]).min() >= -1e-9 * abs(w).max()
        assert_close_rel(Hp[k], clamp, 1e-9, "projected = clamped eigen-decomposition")
    assert saw_indefinite  # the projection was actually exercised


def test_contact_force_is_minus_energy_derivative_in_distance():
    """lambda = -d/dd [coef B(d^2/dhat^2)], checked by central differences in d."""
    rng = np.random.default_rng(13)
    dhat = 0.01
    for _ in range(20):
        d = rng.uniform(0.05, 0.95) * dhat
        coef = rng.uniform(0.1, 10.0)
        X = np.array([[[0.3, d], [0.0, 0.0], [1.0, 0.0]]])
        lam = barrier.pe_contact_force(X, point_edge_case(X), np.array([coef]), dhat)[0]
        h = 1e-7 * dhat
        fd = -(coef * B_ref((d + h) ** 2 / dhat**2) - coef * B_ref((d - h) ** 2 / dhat**2)) / (2 * h)
        assert lam > 0 and math.isclose(lam, fd, rel_tol=1e-6)
        lam_hp = barrier.hp_contact_force(
            np.array([[5.0, -2.0 + d]]),
            np.array([[0.0, -2.0]]),
            np.array([[0.0, 1.0]]),
            np.array([coef]),
            dhat,
        )[0]
        assert math.isclose(lam_hp, fd, rel_tol=1e-6)


# ------------------------------------------------------------------ half-plane


def test_half_plane_gradient_hessian_fd_and_psd():
    rng = np.random.default_rng(14)
    for _ in range(30):
        ang = rng.uniform(0, 2 * np.pi)
        normal = np.array([[np.cos(ang), np.sin(ang)]])
        point = rng.uniform(-1, 1, (1, 2))
        dhat = rng.uniform(1e-3, 1.0)
        d = rng.uniform(0.03, 0.97) * dhat
        x = point + d * normal + rng.uniform(-1, 1) * np.array([[-normal[0, 1], normal[0, 0]]])
        coef = np.array([rng.uniform(0.1, 10.0)])

        # The loop's values bound as defaults (the closures are used in this iteration only).
        def E(z, point=point, normal=normal, coef=coef, dhat=dhat):
            return barrier.hp_value(z.reshape(1, 2), point, normal, coef, dhat)

        def G(z, point=point, normal=normal, coef=coef, dhat=dhat):
            return barrier.hp_gradient(z.reshape(1, 2), point, normal, coef, dhat)[0]

        h = 1e-6 * dhat
        g = barrier.hp_gradient(x, point, normal, coef, dhat)[0]
        H = barrier.hp_hessian(x, point, normal, coef, dhat)[0]
        assert_close_rel(g, fd_gradient(E, x.ravel(), h), 1e-5, "hp grad")
        # hp_hessian clamps the normal curvature at 0; the exact one is positive
        # here (b(d) is convex on (0, dhat)), so it must equal the FD Hessian.
        assert_close_rel(H, fd_jacobian(G, x.ravel(), h), 1e-5, "hp hess")
        assert np.linalg.eigvalsh(H).min() >= -1e-12 * np.abs(H).max()


def test_barrier_derivatives_domain_guards():
    s = np.array([-1.0, 0.0, 1.0, 2.0])
    with np.errstate(divide="ignore"):
        d1, d2 = barrier.barrier_d1_d2(s)
    assert d1[0] == d1[1] == -np.inf and d2[0] == d2[1] == np.inf
    assert d1[2] == d2[2] == d1[3] == d2[3] == 0.0
