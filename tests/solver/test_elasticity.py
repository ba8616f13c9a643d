"""Neo-Hookean elasticity: energy against an independent formula, per-element
gradient / Hessian against central differences (project=False), the
closed-form PSD projection of dP/dF against a numerical eigen-clamp."""

import numpy as np
import pytest
from invariants import assert_close_rel, fd_gradient, fd_jacobian, signed_areas

from solver import elasticity


def lame_ref(E, nu):
    """Plane-strain Lame parameters, from the textbook."""
    return E / (2 * (1 + nu)), E * nu / ((1 + nu) * (1 - 2 * nu))


def energy_ref(rest, x, E, nu):
    """Independent: A * [mu/2 (tr F^T F - 2) - mu ln J + lam/2 ln^2 J], F = Ds Dm^-1."""
    mu, lam = lame_ref(E, nu)
    Dm = np.column_stack([rest[1] - rest[0], rest[2] - rest[0]])
    Ds = np.column_stack([x[1] - x[0], x[2] - x[0]])
    F = Ds @ np.linalg.inv(Dm)
    J = np.linalg.det(F)
    if J <= 0:
        return np.inf
    A = 0.5 * np.linalg.det(Dm)
    return A * (0.5 * mu * (np.sum(F * F) - 2) - mu * np.log(J) + 0.5 * lam * np.log(J) ** 2)


def random_triangle(rng):
    """CCW rest triangle that is not a sliver."""
    while True:
        t = rng.uniform(-1, 1, (3, 2))
        if signed_areas(t, np.array([[0, 1, 2]]))[0] > 0.1:
            return t


def random_deformed(rng, rest, strength):
    """rest mapped by a random F with det F > 0 (plus translation), then jittered."""
    while True:
        F = np.eye(2) + strength * rng.normal(size=(2, 2))
        x = rest @ F.T + rng.normal(size=2) + 0.05 * strength * rng.normal(size=(3, 2))
        if signed_areas(x, np.array([[0, 1, 2]]))[0] > 0.02:
            return x


@pytest.mark.parametrize("strength", [0.05, 0.4, 1.0])
def test_energy_gradient_hessian_per_element(strength):
    rng = np.random.default_rng(int(strength * 100))
    tri = np.array([[0, 1, 2]])
    for _ in range(10):
        rest = random_triangle(rng)
        E, nu = rng.uniform(1e3, 1e6), rng.uniform(-0.5, 0.49)
        el = elasticity.make_elements(rest, tri, E, nu)
        x = random_deformed(rng, rest, strength)
        assert np.isclose(elasticity.value(el, x), energy_ref(rest, x, E, nu), rtol=1e-10)

        # `el` bound as a default (the closures are used in this iteration only).
        def f(z, el=el):
            return elasticity.value(el, z.reshape(3, 2))

        def g(z, el=el):
            return elasticity.gradient(el, z.reshape(3, 2))[0]

        z = x.ravel()
        h = 1e-6
        grad, H = elasticity.gradient_hessian(el, x, project=False)
        assert_close_rel(grad[0], fd_gradient(f, z, h), 1e-6, "elastic gradient")
        assert_close_rel(H[0], fd_jacobian(g, z, h), 1e-6, "elastic Hessian")
        assert np.allclose(elasticity.hessian(el, x, project=False), H, rtol=1e-12, atol=0)
        assert np.allclose(elasticity.gradient(el, x), grad, rtol=1e-12, atol=0)


def test_rest_state_and_invariances():
    rng = np.random.default_rng(3)
    tri = np.array([[0, 1, 2]])
    for _ in range(10):
        rest = random_triangle(rng)
        el = elasticity.make_elements(rest, tri, 1e5, 0.4)
        x = random_deformed(rng, rest, 0.3)
        # zero energy and zero force at rest; rigid motions do not change energy
        assert abs(elasticity.value(el, rest)) < 1e-9
        assert np.abs(elasticity.gradient(el, rest)).max() < 1e-6
        a = rng.uniform(0, 2 * np.pi)
        R = np.array([[np.cos(a), -np.sin(a)], [np.sin(a), np.cos(a)]])
        moved = x @ R.T + rng.normal(size=2)
        assert np.isclose(elasticity.value(el, moved), elasticity.value(el, x), rtol=1e-9)
        # internal forces sum to zero (translation invariance)
        assert (
            np.abs(elasticity.gradient(el, x)[0].reshape(3, 2).sum(axis=0)).max()
            < 1e-9 * np.abs(elasticity.gradient(el, x)).max()
        )


def test_inverted_and_degenerate_elements_have_infinite_energy():
    rest = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    el = elasticity.make_elements(rest, np.array([[0, 1, 2]]), 1e5, 0.3)
    flipped = rest * np.array([1.0, -1.0])
    collapsed = np.array([[0.0, 0.0], [1.0, 0.0], [2.0, 0.0]])
    for x in (flipped, collapsed):
        assert elasticity.element_energies(el, x)[0] == np.inf
        assert elasticity.value(el, x) == np.inf


def test_projected_stress_derivative_is_eigen_clamp():
    """The closed-form clamp equals the numerical one: eigh of dP/dF, negative
    eigenvalues set to 0.  Includes strongly compressed / sheared F where
    dP/dF is indefinite."""
    rng = np.random.default_rng(4)
    m = 200
    rest = np.tile(np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]]), (m, 1))
    tris = np.arange(3 * m).reshape(m, 3)
    el = elasticity.make_elements(rest, tris, rng.uniform(1e3, 1e6, m), rng.uniform(-0.9, 0.49, m))
    F = np.empty((m, 2, 2))
    for k in range(m):
        while True:
            Fk = np.eye(2) * rng.uniform(0.05, 2.0) + rng.normal(
                scale=rng.choice([0.1, 1.0, 3.0]), size=(2, 2)
            )
            if np.linalg.det(Fk) > 1e-3:
                F[k] = Fk
                break
    F[:5] = np.diag([0.2, 0.2])  # strongly compressed, no shear (f- = 0)
    exact = elasticity.stress_derivative(el, F).reshape(m, 4, 4)
    proj = elasticity.projected_stress_derivative(el, F)
    n_indef = 0
    for k in range(m):
        w, V = np.linalg.eigh(exact[k])
        n_indef += w.min() < 0
        assert_close_rel(proj[k], (V * np.maximum(w, 0)) @ V.T, 1e-9, f"element {k}")
    assert n_indef > 10  # the projection was exercised


def test_projected_element_hessian_minus_its_deficit_is_the_exact_one():
    """gradient_hessian(project=True, deficit): the elements whose dP/dF
    had a negative eigenvalue, each with the PSD block N that projection
    added to its 6 x 6 Hessian (projected - N = exact); no other element
    was changed."""
    rng = np.random.default_rng(6)
    m = 60
    rest = np.tile(np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]]), (m, 1))
    tris = np.arange(3 * m).reshape(m, 3)
    el = elasticity.make_elements(rest, tris, rng.uniform(1e3, 1e6, m), rng.uniform(0.0, 0.45, m))
    scale = rng.uniform(0.3, 1.3, m)  # compressed ones are indefinite
    x = (rest.reshape(m, 3, 2) * scale[:, None, None] + rng.normal(scale=0.05, size=(m, 3, 2))).reshape(-1, 2)
    assert (signed_areas(x, tris) > 0).all()
    deficit = []
    _, P = elasticity.gradient_hessian(el, x, True, deficit)
    _, H = elasticity.gradient_hessian(el, x, False)
    ((which, N),) = deficit
    assert 10 < len(which) < m
    np.testing.assert_array_equal(
        which, np.flatnonzero(np.linalg.eigvalsh(H).min(axis=1) < -1e-9 * np.abs(H).max())
    )
    assert_close_rel(P[which] - N, H[which], 1e-9, "projected - deficit")
    others = np.setdiff1d(np.arange(m), which)
    assert_close_rel(P[others], H[others], 1e-9, "elements the projection left alone")
    assert np.linalg.eigvalsh(N).min() > -1e-9 * np.abs(N).max()


def test_stress_derivative_matches_fd_of_stress():
    rng = np.random.default_rng(5)
    rest = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    el = elasticity.make_elements(rest, np.array([[0, 1, 2]]), 2e5, 0.35)
    for _ in range(10):
        F = np.eye(2) + 0.4 * rng.normal(size=(2, 2))
        if np.linalg.det(F) < 0.1:
            continue

        def P(f):
            Fm = f.reshape(1, 2, 2)
            J = Fm[:, 0, 0] * Fm[:, 1, 1] - Fm[:, 0, 1] * Fm[:, 1, 0]
            return elasticity._stress(el, Fm, J, elasticity._cofactor(Fm)).ravel()

        dP = elasticity.stress_derivative(el, F[None]).reshape(4, 4)
        assert_close_rel(dP, fd_jacobian(P, F.ravel(), 1e-7), 1e-6, "dP/dF")


def test_projected_hessian_psd_on_a_mesh():
    """Assembled per-element projected Hessians are PSD for wild deformations."""
    rng = np.random.default_rng(6)
    s = np.linspace(0, 1, 5)
    X, Y = np.meshgrid(s, s)
    rest = np.column_stack([X.ravel(), Y.ravel()])
    tris = []
    for j in range(4):
        for i in range(4):
            v = j * 5 + i
            tris += [[v, v + 1, v + 6], [v, v + 6, v + 5]]
    tris = np.array(tris)
    el = elasticity.make_elements(rest, tris, 1e5, 0.45)
    checked = 0
    for _ in range(20):
        x = rest + 0.05 * rng.normal(size=rest.shape)
        if np.any(signed_areas(x, tris) <= 0):
            continue
        checked += 1
        H = elasticity.hessian(el, x, project=True)
        for Hk in H:
            w = np.linalg.eigvalsh(0.5 * (Hk + Hk.T))
            assert w.min() >= -1e-9 * abs(w).max()
    assert checked >= 10


@pytest.mark.parametrize("m", [5, 300])
def test_deformation_gradient_paths_agree_bit_for_bit(m, monkeypatch):
    """F = Ds Dm^-1 on element-last rows (large meshes) and by broadcasting
    (small ones) are the same sums in the same order, and equal the
    definition (edge vectors now times the inverse of those at rest)."""
    rng = np.random.default_rng(5)
    rest = rng.uniform(-1.0, 1.0, (3 * m, 2))
    tris = np.arange(3 * m).reshape(m, 3)
    el = elasticity.make_elements(rest, tris, 1e5, 0.3)
    x = rest + 0.1 * rng.normal(size=rest.shape)
    results = []
    for rows_min in (0, 10**9):  # element-last rows always, never
        monkeypatch.setattr(elasticity, "ROWS_MIN", rows_min)
        results.append(elasticity.deformation_gradient(el, x))
    np.testing.assert_array_equal(results[0], results[1])
    Ds = np.stack([x[tris[:, 1]] - x[tris[:, 0]], x[tris[:, 2]] - x[tris[:, 0]]], axis=2)
    Dm = np.stack([rest[tris[:, 1]] - rest[tris[:, 0]], rest[tris[:, 2]] - rest[tris[:, 0]]], axis=2)
    np.testing.assert_allclose(results[0], Ds @ np.linalg.inv(Dm), rtol=1e-9, atol=1e-9)
