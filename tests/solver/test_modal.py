"""Stiff bodies (solver/modal.py): affine motion plus a few low elastic modes.

* the modes solve K phi = lambda M phi on the M-orthogonal complement of the
  affine span, with K the finite-difference Jacobian of the elastic gradient
  at rest (not the code's Hessian), span the lowest eigenvectors of a dense
  reference solve, are M-orthonormal and M-orthogonal to every affine
  motion; the dense and the iterated solvers agree;
* the basis' reductions (and its mass matrix) are the products with its dense matrix, alone and
  under the rigid bodies' basis; the incremental potential through it
  matches finite differences in q (gradient and Hessian);
* with every mode the stiff body is the deformable body (same trajectory);
* the issue's rebound check (the tutorial's chapter 9 square) and a mixed
  pile with stiff bodies checked every step.
"""

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from invariants import contact_scene, fd_jacobian, grid_square, signed_areas
from test_orthogonality import assert_reduced_system_matches_finite_differences
from test_rigid import assert_clean_run, rigid
from test_terms import configuration, links_of_every_kind

from solver import Body, HalfPlane, Material, Scene, SimParams, Simulation, elasticity, modal
from solver.errors import SolverInputError
from solver.examples import pile
from solver.io.scene_io import scene_from_dict, scene_to_dict
from solver.mesh import lumped_mass
from solver.model import build_model
from solver.potential import IncrementalPotential
from solver.scene import Pin


def square_body(n_seg=4, E=1e4, nu=0.3, density=500.0):
    v, t = grid_square(0.4, n_seg, angle=0.2)
    return v, t, E, nu, density


def rest_stiffness_by_fd(v, t, E, nu):
    """K at rest as the finite-difference Jacobian of the elastic gradient."""
    el = elasticity.make_elements(v, t, E, nu)

    def grad(flat):
        g = np.zeros(2 * len(v))
        ge = elasticity.gradient(el, flat.reshape(-1, 2))
        np.add.at(g, (2 * t[:, :, None] + np.arange(2)).reshape(-1, 6), ge.reshape(-1, 6))
        return g

    return fd_jacobian(grad, v.ravel(), 1e-6)


def affine_motions(v):
    X = v - v.mean(axis=0)
    one, zero = np.ones(len(v)), np.zeros(len(v))
    cols = [(X[:, 0], zero), (X[:, 1], zero), (one, zero), (zero, X[:, 0]), (zero, X[:, 1]), (zero, one)]
    return np.column_stack([np.column_stack(c).ravel() for c in cols])


def modes_of(v, t, E, nu, density, k):
    """(phi, lams, M): the stiff body's modes, the first k columns of its
    basis (clipped to the 2n - 6 there are), their eigenvalues as Rayleigh
    quotients of the finite-difference K (not the code's), and its DOF masses."""
    cols, M = basis_of(v, t, E, nu, density, k)
    phi = cols[:, : min(k, len(M) - 6)]
    K = rest_stiffness_by_fd(v, t, E, nu)
    return phi, np.einsum("ij,ij->j", phi, K @ phi), M


def reference_modes(v, t, E, nu, M, k):
    """The k lowest M-orthonormal eigenvectors of K phi = lambda M phi off the
    affine span, K the finite-difference Jacobian: one dense eigh of
    M^-1/2 K M^-1/2 projected on the complement (whose 6 zeros come first)."""
    K = rest_stiffness_by_fd(v, t, E, nu)
    s = 1.0 / np.sqrt(M)
    Q, _ = np.linalg.qr(affine_motions(v) / s[:, None])
    P = np.eye(len(M)) - Q @ Q.T
    lams, Y = np.linalg.eigh(P @ (K * s[:, None] * s[None, :]) @ P)
    assert np.abs(lams[:6]).max() < 1e-8 * lams[-1] < lams[6]
    return s[:, None] * Y[:, 6 : 6 + k]


def assert_same_span(A, B, M, atol):
    """M-orthonormal A and B (n, k) span the same subspace: an orthogonal overlap."""
    overlap = A.T @ (M[:, None] * B)
    np.testing.assert_allclose(overlap.T @ overlap, np.eye(A.shape[1]), atol=atol)


def test_modes_are_m_orthonormal_eigenvectors_off_the_affine_span():
    v, t, E, nu, rho = square_body()
    phi, lams, M = modes_of(v, t, E, nu, rho, 6)
    assert phi.shape == (2 * len(v), 6)
    assert_same_span(phi, reference_modes(v, t, E, nu, M, 6), M, 1e-8)
    np.testing.assert_allclose(phi.T @ (M[:, None] * phi), np.eye(6), atol=1e-10)
    U = affine_motions(v)
    assert np.abs(U.T @ (M[:, None] * phi)).max() < 1e-10 * np.abs(U).max()
    # K phi - lambda M phi lies in M U (the constraint's force): zero once the
    # M-orthogonal projector's transpose removes that span
    K = rest_stiffness_by_fd(v, t, E, nu)
    P = np.eye(len(M)) - (M[:, None] * U) @ np.linalg.solve(U.T @ (M[:, None] * U), U.T)
    residual = P @ (K @ phi - M[:, None] * phi * lams)
    assert np.abs(residual).max() < 1e-5 * np.abs(K @ phi).max()
    assert np.all(np.diff(lams) >= 0) and lams[0] > 0
    # the lowest: no M-orthonormal vector off the affine span has a lower Rayleigh quotient
    rng = np.random.default_rng(0)
    for _ in range(20):
        w = P.T @ rng.normal(size=len(M))
        assert w @ K @ w / (w @ (M * w)) >= lams[0] * (1 - 1e-6)


def test_dense_and_iterated_modes_agree(monkeypatch):
    v, t, E, nu, rho = square_body(n_seg=6)
    dense, lam_dense, M = modes_of(v, t, E, nu, rho, 5)
    monkeypatch.setattr(modal, "DENSE_DOFS", 10)
    iterated, lam_iter, _ = modes_of(v, t, E, nu, rho, 5)
    np.testing.assert_allclose(lam_iter, lam_dense, rtol=1e-8)
    assert_same_span(dense, iterated, M, 1e-6)


def test_modes_are_clipped_to_the_mesh():
    v, t, E, nu, rho = square_body(n_seg=1)  # 4 vertices: 8 DOFs, 6 affine
    cols, M = basis_of(v, t, E, nu, rho, 6)
    assert cols.shape == (8, 2)  # the 2 modes there are, no room for derivatives
    assert_same_span(cols, reference_modes(v, t, E, nu, M, 2), M, 1e-8)


def basis_of(v, t, E, nu, density, k):
    mu, lam = elasticity.lame(E, nu)
    m = lumped_mass(v, t, density)
    return modal.elastic_basis(v, t, np.full(len(t), mu), np.full(len(t), lam), m, k), np.repeat(m, 2)


def modal_derivatives_by_fd(v, t, E, nu, phi, M):
    """psi_ij, i <= j: the static responses K psi = -(d^2 g / d eta_i d eta_j) - M U mu,
    U^T M psi = 0, with the load a mixed central difference of the elastic
    gradient and K its finite-difference Jacobian (not the code's Hessians)."""
    el = elasticity.make_elements(v, t, E, nu)
    dofs = (2 * t[:, :, None] + np.arange(2)).reshape(-1, 6)

    def grad(flat):
        g = np.zeros(2 * len(v))
        np.add.at(g, dofs, elasticity.gradient(el, flat.reshape(-1, 2)).reshape(-1, 6))
        return g

    eps = 1e-3 * 0.4 / np.abs(phi).max()  # a 1e-3 strain
    x = v.ravel()
    loads = [
        -(
            grad(x + eps * (phi[:, i] + phi[:, j]))
            - grad(x + eps * (phi[:, i] - phi[:, j]))
            - grad(x - eps * (phi[:, i] - phi[:, j]))
            + grad(x - eps * (phi[:, i] + phi[:, j]))
        )
        / (4 * eps * eps)
        for j in range(phi.shape[1])
        for i in range(j + 1)
    ]
    K = rest_stiffness_by_fd(v, t, E, nu)
    MU = M[:, None] * affine_motions(v)
    A = np.block([[K, MU], [MU.T, np.zeros((6, 6))]])
    rhs = np.vstack([np.column_stack(loads), np.zeros((6, len(loads)))])
    return np.linalg.solve(A, rhs)[: len(M)]


def test_the_basis_adds_the_modal_derivatives_of_the_lowest_modes():
    """The stiff body's columns: its k lowest modes, then an M-orthonormal
    basis of what their modal derivatives add (off the affine span and the
    modes), one direction per independent derivative."""
    v, t, E, nu, rho = square_body()  # 25 vertices: 50 DOFs
    k = 3
    cols, M = basis_of(v, t, E, nu, rho, k)
    phi = cols[:, :k]
    assert_same_span(phi, reference_modes(v, t, E, nu, M, k), M, 1e-8)
    np.testing.assert_allclose(cols.T @ (M[:, None] * cols), np.eye(cols.shape[1]), atol=1e-10)
    U = affine_motions(v)
    assert np.abs(U.T @ (M[:, None] * cols)).max() < 1e-10 * np.abs(U).max()
    psi = modal_derivatives_by_fd(v, t, E, nu, phi, M)
    C = np.hstack([U, phi])
    psi -= C @ np.linalg.solve(C.T @ (M[:, None] * C), C.T @ (M[:, None] * psi))  # off the modes
    extra = cols[:, k:]
    assert extra.shape[1] == np.linalg.matrix_rank(np.sqrt(M)[:, None] * psi, tol=1e-6 * np.abs(psi).max())
    assert extra.shape[1] >= 3  # the 3 modes' 6 derivatives are not all dependent
    spanned = extra @ (extra.T @ (M[:, None] * psi))
    assert np.abs(psi - spanned).max() < 1e-4 * np.abs(psi).max()


def stiff_model(kinds, modes=(4, 3)):
    scene = contact_scene()
    bodies = tuple(replace(b, kind=k, modes=n) for b, k, n in zip(scene.bodies, kinds, modes, strict=True))
    return build_model(replace(scene, bodies=bodies))


def dense_basis(basis):
    return np.column_stack([basis.expand(e).ravel() for e in np.eye(basis.n_q)])


@pytest.mark.parametrize("kinds", [("stiff", "deformable"), ("rigid", "stiff"), ("stiff", "stiff")])
def test_reductions_are_the_transpose_products_of_the_dense_basis(kinds):
    m = stiff_model(kinds)
    b = m.basis
    Bd = dense_basis(b)
    sizes = [len(m.rest[m.body_slices[i]]) for i in range(2)]
    stiff = [(nv, k) for kind, nv, k in zip(kinds, sizes, (4, 3), strict=True) if kind == "stiff"]
    # a stiff body: 6 affine + k modes + r <= d(d+1)/2 derivative directions, d = min(k, 6),
    # all within its 2 nv DOFs
    for (nv, k), w in zip(stiff, b.width, strict=True):
        d = min(k, modal.DERIVATIVE_MODES)
        assert 6 + min(k, 2 * nv - 6) <= w <= 6 + min(k + d * (d + 1) // 2, 2 * nv - 6)
    plain = sum(2 * nv for kind, nv in zip(kinds, sizes, strict=True) if kind == "deformable")
    rigid = 6 * kinds.count("rigid")
    assert b.n_q == 2 * (m.n - sum(sizes)) + plain + rigid + b.width.sum()  # the collider's DOFs first
    rng = np.random.default_rng(1)
    g = rng.normal(size=2 * m.n)
    np.testing.assert_allclose(b.reduce_gradient(g), Bd.T @ g, atol=1e-12)
    H = rng.normal(size=(2 * m.n, 2 * m.n)) * (rng.random((2 * m.n, 2 * m.n)) < 0.3)
    rows, cols = np.nonzero(H)
    r, c, v = b.reduce_triplets(rows, cols, H[rows, cols])
    reduced = np.zeros((b.n_q, b.n_q))
    np.add.at(reduced, (r, c), v)
    np.testing.assert_allclose(reduced, Bd.T @ H @ Bd, atol=1e-12)
    # the reduced bodies' mass matrix: B^T M B over their vertex DOFs (the plain ones' stays in x)
    M = np.where(b.rigid_dof, np.repeat(m.mass, 2), 0.0)
    r, c, v = b.reduced_mass(m.mass)
    reduced = np.zeros((b.n_q, b.n_q))
    np.add.at(reduced, (r, c), v)
    np.testing.assert_allclose(reduced, Bd.T @ (M[:, None] * Bd), atol=1e-12 * m.mass.max())
    # B's rows one by one (the friction columns' map)
    slots, weights = b.dof_weights(np.arange(2 * m.n))
    rows = np.zeros((2 * m.n, b.n_q))
    np.add.at(rows, (np.arange(2 * m.n)[:, None], slots), weights)
    np.testing.assert_array_equal(rows, Bd)
    q = rng.normal(size=b.n_q)
    np.testing.assert_allclose(b.coords(b.expand(q)), q, atol=1e-10)
    fixed = np.repeat(m.is_collider, 2)
    np.testing.assert_array_equal(np.abs(Bd[fixed][:, b.fixed(fixed)]).sum(axis=0), 1.0)


def test_stiff_bodies_keep_their_elastic_energy_and_inversion_guard():
    """A stiff body's triangles leave the vertex-space Elasticity term for
    ModalElasticity (the same energy, its Hessian in q) and all stay guarded
    against inversion."""
    m = stiff_model(("stiff", "deformable"))
    s = m.body_slices[0]
    mine = (m.elements.tris[:, 0] >= s.start) & (m.elements.tris[:, 0] < s.stop)
    assert len(m.elastic_elements.tris) == np.sum(~mine)
    np.testing.assert_array_equal(m.basis.stiff_tris, np.flatnonzero(mine))
    ip = IncrementalPotential(m, configuration("convergent", 0)[1])
    x = m.rest + 0.01 * np.random.default_rng(3).normal(size=m.rest.shape)
    full = elasticity.value(m.elements, x)
    split = sum(t.value(x, None) for t in ip.terms if t.stage == "elasticity")
    assert split == pytest.approx(full, rel=1e-12)
    assert len(m.inversion_tris) == len(m.elements.tris)
    both = stiff_model(("stiff", "rigid"))
    assert len(both.inversion_tris) == np.sum(mine) + 1  # and one for the rigid body
    assert both.elastic_elements is None and both.basis.n_rigid == 1


def stiff_configuration(seed, kinds):
    """The registry's configuration (every term active) with the bodies of
    kinds, at positions in the basis' range: (ip, basis, q, cs)."""
    _, consts, x, cs = configuration("convergent", seed)
    scene = contact_scene("convergent", mu_static=0.6)
    scene = replace(scene, links=links_of_every_kind(scene))
    bodies = tuple(replace(b, kind=k, modes=3) for b, k in zip(scene.bodies, kinds, strict=True))
    m = build_model(replace(scene, bodies=bodies))
    basis = m.basis
    q = basis.coords(x) + 2e-3 * np.random.default_rng(seed).normal(size=basis.n_q)
    return IncrementalPotential(m, consts), basis, q, cs


@pytest.mark.parametrize(("seed", "kinds"), [(0, ("stiff", "deformable")), (1, ("rigid", "stiff"))])
def test_the_potential_through_the_modal_basis_matches_finite_differences(seed, kinds):
    ip, basis, q, cs = stiff_configuration(seed, kinds)
    assert (ip.rigidity is None) == ("rigid" not in kinds)
    assert_reduced_system_matches_finite_differences(ip, basis, q, cs)


def dropped_square(kind, modes, steps=40):
    v, t = grid_square(0.2, 2, angle=0.3)
    body = Body("square", v, t, Material(E=3e3, density=500.0, mu=0.3), kind=kind, modes=modes)
    ground = HalfPlane((0.0, -0.13), (0.0, 1.0), 0.3, "ground")
    sim = Simulation(Scene(bodies=(body,), half_planes=(ground,), params=SimParams()))
    for _ in range(steps):
        assert sim.step().converged
        assert signed_areas(sim.x, sim.model.elements.tris).min() > 0.0
    return sim.x


def test_a_stiff_body_with_every_mode_is_the_deformable_body():
    """9 vertices: 18 DOFs, 6 affine + 12 modes span them all, so the reduced
    body moves as the full one (landing, tumbling, friction)."""
    full = dropped_square("deformable", 6)
    reduced = dropped_square("stiff", 12)
    assert np.abs(full - reduced).max() < 1e-6 * 0.2
    few = dropped_square("stiff", 2)
    assert np.abs(full - few).max() > 1e-4 * 0.2  # fewer modes do differ


def tutorial_square(kind, E=2e4, duration=1.2):
    """The tutorial's chapter 9 scene: a 1 m square (10 x 10 cells, E = 2e4,
    nu = 0.4, rho = 1000) dropped from 0.5 m onto frictionless ground; the
    height of its centroid above the ground after every step."""
    v, t = grid_square(1.0, 10)
    body = Body("square", v, t, Material(E=E, nu=0.4, density=1000.0, mu=0.0), kind=kind)
    ground = HalfPlane((0.0, -1.0), (0.0, 1.0), 0.0, "ground")
    sim = Simulation(Scene(bodies=(body,), half_planes=(ground,), params=SimParams(dt=0.01)))
    return np.array(
        [sim.step() and sim.body_positions(0)[:, 1].mean() + 1.0 for _ in range(round(duration / 0.01))]
    )


def rebound(heights):
    """The highest centroid height after the deepest compression."""
    low = np.argmin(heights)
    return heights[low:].max()


# The check, at the default settings (6 modes, h = 10 ms): deformable
# 0.552 m; stiff 0.554 m (+0.4 %) at E = 2e4, where the landing squashes the
# square to about half its height.  Its 6 lowest linear modes alone rebound to 0.586 m (+6 %), and 8
# to 64 of them do no better (0.587 to 0.582): the modal derivatives are what
# brings it within 2 % (docs/design/19-modal-bodies.md).  E = 2e5: 0.588 against
# 0.589 m.
@pytest.mark.parametrize("E", [2e4, 2e5])
def test_the_tutorial_square_rebounds_as_a_stiff_body_as_high_as_a_deformable_one(E):
    full, reduced = rebound(tutorial_square("deformable", E)), rebound(tutorial_square("stiff", E))
    assert 0.5 < full < 1.0  # it bounced, losing energy to implicit Euler
    assert reduced == pytest.approx(full, rel=0.02)


def test_mixed_pile_with_stiff_bodies_stays_clean():
    scene = rigid(pile(8, 4, n_seg=4, n_rings=2, n_boundary=16), which={0, 5})
    bodies = tuple(
        replace(b, kind="stiff", modes=4) if i in (1, 3, 4, 6) else b for i, b in enumerate(scene.bodies)
    )
    sim = assert_clean_run(replace(scene, bodies=bodies), 60)
    assert sim.model.basis.n_rigid == 2 and len(sim.model.basis.first) == 4


def test_stiff_kind_is_validated_and_round_trips_through_json():
    scene = contact_scene()
    A, B = scene.bodies
    stiff = replace(scene, bodies=(replace(A, kind="stiff", modes=5), B))
    data = scene_to_dict(stiff)
    assert data["bodies"][0]["modes"] == 5 and "modes" not in data["bodies"][1]
    back = scene_from_dict(data)
    assert (back.bodies[0].kind, back.bodies[0].modes) == ("stiff", 5)
    for bad in (0, modal.MAX_MODES + 1, 2.5, True):
        with pytest.raises(SolverInputError, match="modes"):
            build_model(replace(scene, bodies=(replace(A, kind="stiff", modes=bad), B)))
    pinned = build_model(replace(scene, bodies=(replace(A, kind="stiff", pins=(Pin(np.array([0])),)), B)))
    assert pinned.links.names == (f"{A.name}.pin0",)  # springs through the basis (test_rigid_pins.py)


NUMPY_ONLY_CHILD = """
import importlib.abc, json, sys


class HideScipy(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "scipy" or name.startswith("scipy."):
            raise ImportError("scipy hidden by the test")


sys.meta_path.insert(0, HideScipy())
sys.path.insert(0, "tests/solver")
from solver import modal
from solver.linsolve import linalg
import test_modal

assert not linalg.HAVE_SCIPY
modal.DENSE_DOFS = 10  # the iterated modes, on the numpy Cholesky
_, lams, _ = test_modal.modes_of(*test_modal.square_body(n_seg=6), 5)
x = test_modal.dropped_square("stiff", 4, steps=25)
print(json.dumps({"lams": lams.tolist(), "x": x.tolist()}))
"""


def test_stiff_bodies_on_the_numpy_only_path(monkeypatch):
    """With scipy hidden (stock Blender): the iterated modes and a stiff body's
    trajectory as on the scipy path."""
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run(
        [sys.executable, "-c", NUMPY_ONLY_CHILD], cwd=root, capture_output=True, text=True, check=True
    )
    child = json.loads(out.stdout.strip().splitlines()[-1])
    monkeypatch.setattr(modal, "DENSE_DOFS", 10)
    _, lams, _ = modes_of(*square_body(n_seg=6), 5)
    np.testing.assert_allclose(child["lams"], lams, rtol=1e-8)
    x = dropped_square("stiff", 4, steps=25)
    assert np.abs(np.array(child["x"]) - x).max() < 1e-6 * 0.2


def test_a_stiff_scene_continues_bit_for_bit_from_a_checkpoint():
    """The modes are rebuilt from the scene, deterministically."""
    scene = rigid(pile(4, 2, n_seg=2, n_rings=1, n_boundary=8), which={0})
    scene = replace(
        scene,
        bodies=tuple(
            replace(b, kind="stiff", modes=3) if i in (1, 2) else b for i, b in enumerate(scene.bodies)
        ),
    )
    runs = [Simulation(scene)]
    for _ in range(15):
        runs[0].step()
    runs.append(Simulation.from_checkpoint(scene, runs[0].checkpoint()))
    for run in runs:
        for _ in range(5):
            run.step()
    first, second = ([run.x, run.v] for run in runs)
    np.testing.assert_array_equal(np.concatenate(second), np.concatenate(first))
