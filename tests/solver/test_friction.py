"""Semi-implicit friction: mollifier against its formulas, gradient and
Hessian of synthetic and real (pair + half-plane) friction sets against
central differences in the |u| < eps and |u| > eps regions, PSD projection,
and the frozen normal force / tangent / friction coefficient."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from invariants import (
    assert_close_rel,
    fd_gradient,
    fd_jacobian,
    synthetic_set,
)

from solver import friction
from solver.friction import FrictionSet


def f0_ref(y, eps):
    y = abs(y)
    return y**2 / (2 * eps) + eps / 2 if y < eps else y


def f1_ref(y, eps):
    y = abs(y)
    return y / eps if y < eps else 1.0


def test_mollifier_matches_its_formulas_and_is_c1():
    eps = 1e-3
    for y in np.linspace(-3 * eps, 3 * eps, 61):
        assert math.isclose(friction.f0(np.array([y]), eps)[0], f0_ref(y, eps), rel_tol=1e-12, abs_tol=1e-18)
        assert math.isclose(friction.f1(np.array([y]), eps)[0], f1_ref(y, eps), rel_tol=1e-12, abs_tol=1e-18)
    # f0 and f1 (the force) are continuous at y = eps; f1 = d f0 / dy and f0'' = d f1 / dy
    for fn in (friction.f0, friction.f1):
        lo, hi = fn(np.array([eps * (1 - 1e-9)]), eps)[0], fn(np.array([eps * (1 + 1e-9)]), eps)[0]
        assert abs(lo - hi) < 1e-6
    y = np.concatenate([np.linspace(0.01, 0.99, 20), np.linspace(1.01, 2.9, 20)]) * eps
    h = 1e-9
    assert np.allclose(
        (friction.f0(y + h, eps) - friction.f0(y - h, eps)) / (2 * h), friction.f1(y, eps), atol=1e-6
    )
    assert np.allclose(
        (friction.f1(y + h, eps) - friction.f1(y - h, eps)) / (2 * h), friction.f0_d2(y, eps), rtol=1e-6
    )
    # the Coulomb limit: the force reaches mu lambda at slip eps and stays there, and
    # below it a contact using a fraction c of its limit slips c eps
    assert friction.f1(np.array([eps]), eps)[0] == 1.0
    for c in (0.1, 0.5, 0.9):
        assert math.isclose(friction.f1(np.array([c * eps]), eps)[0], c, rel_tol=1e-12)


@pytest.mark.parametrize("k", [1, 3])
@pytest.mark.parametrize("mu_static", [False, True])
@pytest.mark.parametrize("region", [0.3, 0.8, 1.5, 3.0])  # |u| / eps: stick, stick, blend, slide
def test_synthetic_friction_fd(k, mu_static, region):
    rng = np.random.default_rng(int(region * 10) + 100 * k + mu_static)
    eps = 1e-3
    fs = synthetic_set(rng, 6, k, mu_static)
    # displacements with slip u_i = +-region * eps for every contact
    dx = rng.normal(size=(6 * k, 2))
    u = np.einsum("ni,ni->n", fs.w, dx[fs.idx].reshape(6, -1))
    target = region * eps * rng.choice([-1.0, 1.0], 6)
    dx = (dx.reshape(6, -1) * (target / u)[:, None]).reshape(-1, 2)
    z = dx.ravel()

    def E(v):
        return friction.value(fs, v.reshape(-1, 2), eps)

    def G(v):
        g = np.zeros(len(v))
        np.add.at(
            g,
            (2 * fs.idx[:, :, None] + np.arange(2)).ravel(),
            friction.gradient(fs, v.reshape(-1, 2), eps).ravel(),
        )
        return g

    H = np.zeros((len(z), len(z)))
    dofs = (2 * fs.idx[:, :, None] + np.arange(2)).reshape(6, -1)
    Hl = friction.hessian(fs, dx, eps, project=False)
    for i in range(6):
        H[np.ix_(dofs[i], dofs[i])] += Hl[i]
    h = 1e-7 * eps
    assert_close_rel(G(z), fd_gradient(E, z, h), 1e-6, "friction gradient")
    assert_close_rel(H, fd_jacobian(G, z, h), 1e-6, "friction Hessian")
    # dissipative: the friction force opposes the slip
    assert np.all(np.einsum("ni,ni->n", friction.gradient(fs, dx, eps), dx[fs.idx].reshape(6, -1)) > 0)
    # projection: PSD, equal to the exact one wherever that is already PSD
    Hp = friction.hessian(fs, dx, eps, project=True)
    for i in range(6):
        w = np.linalg.eigvalsh(Hp[i])
        assert w.min() >= -1e-12 * max(1.0, abs(w).max())
        if np.linalg.eigvalsh(Hl[i]).min() >= 0:
            assert np.allclose(Hp[i], Hl[i])
    # force magnitude: mu_s lambda f1 while sticking, mu_k lambda when sliding
    g = friction.gradient(fs, dx, eps)
    mag = np.abs(np.einsum("ni,ni->n", g, fs.w)) / np.einsum("ni,ni->n", fs.w, fs.w)
    if region < 1:
        assert np.allclose(mag, fs.static * f1_ref(region * eps, eps), rtol=1e-9)
    elif region > 2:
        assert np.allclose(mag, fs.mu_lambda, rtol=1e-9)


@settings(max_examples=200, deadline=None)
@given(
    u0=st.floats(-5.0, 5.0),
    u=st.floats(-6.0, 6.0),
    ratio=st.floats(1.0, 3.0),
    direction=st.lists(st.floats(-1.0, 1.0), min_size=2, max_size=2),
)
def test_majorizing_curvature_bounds_the_friction_potential(u0, u, ratio, direction):
    """With majorize on, the quadratic model of a contact (value, gradient and
    the Hessian at slip u0) lies above the friction potential at every slip u,
    so a Newton step cannot gain by jumping across the kink at u = 0."""
    eps = 1e-3
    u0, u = u0 * eps, u * eps
    t = np.asarray(direction, float)
    if np.linalg.norm(t) < 1e-3:
        t = np.array([1.0, 0.0])
    t = t / np.linalg.norm(t)
    fs = FrictionSet(np.array([[0]]), t[None, :], np.array([2.0]), np.array([2.0 * ratio]))
    x0 = (u0 * t)[None, :]
    g = friction.gradient(fs, x0, eps)[0] @ t
    c = t @ friction.hessian(fs, x0, eps, majorize=np.array([True]))[0] @ t
    model = friction.value(fs, x0, eps) + g * (u - u0) + 0.5 * c * (u - u0) ** 2
    actual = friction.value(fs, (u * t)[None, :], eps)
    assert model >= actual - 1e-12 * max(1.0, abs(actual))
    # and the exact Hessian is kept where the flag is off
    H = friction.hessian(fs, x0, eps, majorize=np.array([False]))
    assert np.allclose(H, friction.hessian(fs, x0, eps))


def test_only_sliding_contacts_sent_across_zero_count_as_reversed():
    eps = 1e-3
    t = np.array([[1.0, 0.0]] * 4)
    fs = FrictionSet(np.arange(4)[:, None], t, np.ones(4))
    disp = np.array([[3.0, 0.0], [3.0, 0.0], [0.5, 0.0], [-2.0, 0.0]]) * eps
    step = np.array([[-4.0, 0.0], [-2.0, 0.0], [-1.0, 0.0], [2.5, 0.0]]) * eps
    # sliding + reversed, sliding + same side, sticking (not a slide), sliding + reversed
    assert (friction.zero_slip_fraction(fs, disp, step, eps) < 1.0).tolist() == [True, False, False, True]


def test_zero_slip_fraction_stops_reversed_sliding_contacts_at_zero_slip():
    eps = 1e-3
    t = np.array([[0.6, 0.8]] * 4)
    fs = FrictionSet(np.arange(4)[:, None], t, np.ones(4))
    # slips u0 = 3, 3, 0.5, -2 (x eps); steps du = -4, -2, -1, 2.5 (x eps)
    disp = np.outer([3.0, 3.0, 0.5, -2.0], t[0]) * eps
    step = np.outer([-4.0, -2.0, -1.0, 2.5], t[0]) * eps
    frac = friction.zero_slip_fraction(fs, disp, step, eps)
    np.testing.assert_allclose(frac, [0.75, 1.0, 1.0, 0.8])
    # at that fraction the reversed contacts' slip is zero
    u = friction.slip(fs, disp + frac[:, None] * step)
    np.testing.assert_allclose(u[[0, 3]], 0.0, atol=1e-18)
    assert friction.zero_slip_fraction(FrictionSet.empty(1), disp, step, eps).shape == (0,)


@pytest.mark.parametrize("mu_static", [False, True])
def test_friction_pieces_match_the_energy_on_their_own_piece(mu_static):
    """regime() names the piece each slip is on (0 static, +-1 sliding); the
    piece model (force coefficient, curvature) equals the energy's own
    wherever a slip is on that piece (beyond the static-kinetic blend), and
    extends it linearly / quadratically elsewhere."""
    rng = np.random.default_rng(5)
    eps = 1e-3
    fs = synthetic_set(rng, 8, 3, mu_static)
    u = np.array([0.0, 0.3, -0.7, 0.999, 2.5, -2.5, 4.0, -9.0]) * eps
    piece = friction.regime(u, eps)
    assert piece.tolist() == [0, 0, 0, 0, 1, -1, 1, -1]
    everyone = np.ones(len(u), bool)
    f, c = friction.piece_force_curvature(fs, everyone, u, piece, eps)
    f_true, c_true = friction.force_curvature(fs, everyone, u, eps)
    assert np.allclose(f, f_true, rtol=1e-12) and np.allclose(c, c_true, rtol=1e-12)
    # the gradient is the force coefficient times w (gradient() of the same set)
    disp = np.zeros((24, 2))
    for k in range(8):  # one vertex of each stencil moved along w so that its slip is u_k
        wk = fs.w[k]
        disp[fs.idx[k, 0]] = u[k] * wk[:2] / (wk[:2] @ wk[:2])
    assert np.allclose(friction.slip(fs, disp), u)
    assert np.allclose(friction.gradient(fs, disp, eps), f_true[:, None] * fs.w)
    # a static slip modelled as sliding: constant force, no curvature; a sliding
    # one modelled static: the static zone's line and curvature continued
    f_s, c_s = friction.piece_force_curvature(fs, everyone, u, np.full(8, 1, np.int8), eps)
    assert np.allclose(f_s, fs.mu_lambda) and not c_s.any()
    f_0, c_0 = friction.piece_force_curvature(fs, everyone, u, np.zeros(8, np.int8), eps)
    assert np.allclose(f_0, fs.static * u / eps) and np.allclose(c_0, fs.static / eps)
    # a subset selects the same contacts' coefficients
    sel = np.array([1, 4, 6])
    f_sub, _ = friction.piece_force_curvature(fs, sel, u[sel], piece[sel], eps)
    assert np.allclose(f_sub, f[sel])


def test_projected_friction_hessian_minus_its_deficit_is_the_exact_one():
    """Friction's deficit: the contacts in the blend between static and
    kinetic friction (mu_s > mu_k: negative curvature), each with the
    curvature projection added (projected - N = exact)."""
    rng = np.random.default_rng(10)
    eps, n = 1e-3, 6
    fs = synthetic_set(rng, n, 1, mu_static=True)
    u = np.array([1.5, -1.7, 0.5, 3.0, 1.2, -0.4]) * eps  # two in the blend (eps < |u| < 2 eps)
    disp = np.zeros((2 * n, 2))
    for k in range(n):
        wk = fs.w[k]
        disp[fs.idx[k, 0]] = u[k] * wk[:2] / (wk[:2] @ wk[:2])
    deficit = []
    _, P = friction.gradient_hessian(fs, disp, eps, True, None, deficit)
    H = friction.hessian(fs, disp, eps, project=False)
    ((which, N),) = deficit
    np.testing.assert_array_equal(which, np.flatnonzero((np.abs(u) > eps) & (np.abs(u) < 2 * eps)))
    np.testing.assert_allclose(P[which] - N, H[which], atol=1e-9)
    np.testing.assert_allclose(np.delete(P, which, axis=0), np.delete(H, which, axis=0), atol=1e-9)
