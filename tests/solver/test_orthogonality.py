"""The orthogonality energy of rigid bodies (solver/orthogonality.py): its
kernels against finite differences, zero on rotations, and the whole
incremental potential of a mixed scene checked through the basis in the
reduced unknowns q (every term, the orthogonality energy's q-space Hessian
included)."""

from dataclasses import replace

import numpy as np
import pytest
from invariants import assert_close_rel, contact_scene, fd_gradient, fd_jacobian
from test_terms import configuration, links_of_every_kind

from solver import orthogonality as ortho
from solver.assembly import Triplets
from solver.linsolve import project_psd
from solver.model import build_model
from solver.potential import IncrementalPotential


def random_maps(seed, n=3):
    rng = np.random.default_rng(seed)
    return np.eye(2) + 0.3 * rng.normal(size=(n, 2, 2))


def test_energy_gradient_matches_finite_differences():
    A = random_maps(0)
    for r in range(len(A)):
        fd = fd_gradient(lambda a: ortho.energy(a.reshape(1, 2, 2))[0], A[r].ravel(), 1e-7)
        assert_close_rel(ortho.energy_gradient(A[r : r + 1]).ravel(), fd, 1e-7, "dE/dA")


def test_energy_hessian_matches_finite_differences():
    A = random_maps(1)
    for r in range(len(A)):
        fd = fd_jacobian(lambda a: ortho.energy_gradient(a.reshape(1, 2, 2)).ravel(), A[r].ravel(), 1e-7)
        assert_close_rel(ortho.energy_hessian(A[r : r + 1])[0], fd, 1e-7, "d2E/dA2")


@pytest.mark.parametrize("spread", [1e-6, 1e-2, 0.3, 1.0, 3.0])
def test_the_closed_form_projection_matches_the_eigensolver(spread):
    """Turned maps near and far from rotations (squeezed, crushed, inverted),
    and maps without a closest rotation or all zero: as eigh's clamping."""
    rng = np.random.default_rng(7)
    turn = rng.uniform(-np.pi, np.pi, 200)
    c, s = np.cos(turn), np.sin(turn)
    R = np.stack([c, -s, s, c], axis=1).reshape(-1, 2, 2)
    A = R @ (np.eye(2) + spread * rng.normal(size=(200, 2, 2)))
    A = np.concatenate([A, [[[1.0, 2.0], [2.0, -1.0]], np.zeros((2, 2)), [[1.0, 0.0], [0.0, -1.0]]]])
    H = ortho.energy_hessian(A)
    expected = project_psd(H)
    scale = np.abs(H).max(axis=(1, 2), keepdims=True) + 1e-300
    assert np.all(np.abs(ortho.energy_hessian_psd(A) - expected) <= 1e-13 * scale)


def test_zero_exactly_on_rotations_and_positive_otherwise():
    c, s = np.cos(0.7), np.sin(0.7)
    R = np.array([[[c, -s], [s, c]]])
    assert ortho.energy(R)[0] < 1e-30
    assert np.abs(ortho.energy_gradient(R)).max() < 1e-15
    assert ortho.energy(1.001 * R)[0] > 0.0
    reflection = np.array([[[1.0, 0.0], [0.0, -1.0]]])
    assert ortho.energy(reflection)[0] < 1e-30  # why the inversion check stays on for rigid bodies


def mixed_configuration(seed, formulation="convergent"):
    """The registry's configuration (every term active) with body A rigid, at
    positions in the basis' range: (ip, basis, q, cs)."""
    _, consts, x, cs = configuration(formulation, seed)
    scene = contact_scene(formulation, mu_static=0.6)
    scene = replace(scene, links=links_of_every_kind(scene))
    A, B = scene.bodies
    scene = replace(scene, bodies=(replace(A, kind="rigid"), B))
    rm = build_model(scene)
    basis = rm.basis
    rng = np.random.default_rng(seed)
    q = basis.coords(x)
    a = basis.a_dofs[0]
    q[a] += 0.02 * rng.normal(size=4)  # strained and rotated a little
    ip = IncrementalPotential(rm, consts)
    return ip, basis, q, cs


def reduced_gradient(ip, basis, q, cs, project=False):
    x = basis.expand(q)
    T = ip.gradient_hessian(x, cs, project=project)
    return ip.reduced_system(x, T, project)


@pytest.mark.parametrize("seed", [0, 1])
def test_the_potential_through_the_basis_matches_finite_differences(seed):
    ip, basis, q, cs = mixed_configuration(seed)
    assert ip.rigidity is not None and ip.basis is basis
    assert_reduced_system_matches_finite_differences(ip, basis, q, cs)


def assert_reduced_system_matches_finite_differences(ip, basis, q, cs):
    """ip's gradient and Hessian in q (exact and projected) against finite differences."""
    g = reduced_gradient(ip, basis, q, cs)[3]
    fd = fd_gradient(lambda v: ip.value(basis.expand(v), cs), q, 1e-7)
    assert_close_rel(g, fd, 1e-6, "B^T g")
    r, c, v, _ = reduced_gradient(ip, basis, q, cs)
    H = np.zeros((basis.n_q, basis.n_q))
    np.add.at(H, (r, c), v)
    J = fd_jacobian(lambda w: reduced_gradient(ip, basis, w, cs)[3], q, 1e-7)
    assert_close_rel(H, J, 1e-5, "B^T H B + orthogonality Hessian")
    rp, cp, vp, gp = reduced_gradient(ip, basis, q, cs, project=True)
    P = np.zeros_like(H)
    np.add.at(P, (rp, cp), vp)
    np.testing.assert_array_equal(gp, g)
    assert np.linalg.eigvalsh(P).min() >= -1e-9 * np.abs(P).max()


def test_the_orthogonality_gradient_in_x_reduces_to_its_q_gradient():
    """The term's vertex-space gradient (L^T dE/dA) is what the line search's
    slope and the force test read: through B it is dE/dA on the A DOFs only."""
    ip, basis, q, cs = mixed_configuration(0)
    x = basis.expand(q)
    T = Triplets(2 * len(x))
    ip.rigidity.gradient(x, cs, T)
    gq = basis.reduce_gradient(T.grad)
    fd = fd_gradient(lambda v: ip.rigidity.weight * ip.rigidity.value(basis.expand(v), cs), q, 1e-7)
    assert_close_rel(gq, fd, 1e-7, "orthogonality through B")
    others = np.setdiff1d(np.arange(basis.n_q), basis.a_dofs.ravel())
    assert np.abs(gq[others]).max() <= 1e-9 * np.abs(gq).max()
