"""The unknowns of Newton's system (solver/unknowns.py): vertex-space vectors
and rank-1 updates mapped through a basis against its dense matrix, and the
regime rounds on a mixed system (rigid and deformable bodies)."""

import dataclasses

import numpy as np
import pytest
from test_basis import dense_basis, mixed_model
from test_modal import stiff_model
from test_newton import ALL_FEATURES
from test_rigid import rigid

from solver import Simulation, friction_kinks
from solver.examples import pile
from solver.linsolve import factorize, woodbury_solve
from solver.settings import SolverSettings
from solver.unknowns import BasisUnknowns, VertexUnknowns, dense_columns


def random_bends(n_x, rng, sets=(3, 5)):
    """Stencil vectors on random vertex DOFs: [(dofs (k, 6), w (k, 6), c (k,))]."""
    curvature = [rng.uniform(0.5, 2.0, k) * rng.choice([-1, 1], k) for k in sets]
    stencils = [(rng.integers(0, n_x, (k, 6)), rng.normal(size=(k, 6))) for k in sets]
    return [(d, w, c) for (d, w), c in zip(stencils, curvature, strict=True)]


def basis_cases():
    mixed = mixed_model()
    yield "rigid", mixed.basis, 2 * mixed.n
    stiff = stiff_model(("rigid", "stiff"))
    yield "stiff", stiff.basis, 2 * stiff.n


@pytest.mark.parametrize("case", list(basis_cases()), ids=lambda c: c[0])
@pytest.mark.parametrize("held_mode", ["none", "rows", "dropped"])
def test_rank_one_terms_map_to_the_transpose_product_of_the_basis(case, held_mode):
    """c w w^T in x is c (B^T w)(B^T w)^T on the unknowns: the columns equal
    B^T of the vertex-space columns, on the free unknowns only."""
    _, basis, n_x = case
    rng = np.random.default_rng(3)
    Bd = dense_basis(basis, n_x)
    held = np.zeros(basis.n_q, bool)
    if held_mode != "none":
        held[rng.choice(basis.n_q, 5, replace=False)] = True
    free = np.flatnonzero(~held) if held_mode == "dropped" else None
    unknowns = BasisUnknowns(basis, held, free)
    bends = random_bends(n_x, rng)
    W, c = unknowns.columns(bends)
    Wx, cx = dense_columns(bends, n_x)
    expected = np.where(held[:, None], 0.0, Bd.T @ Wx)
    np.testing.assert_allclose(W, expected if free is None else expected[free], atol=1e-12)
    np.testing.assert_array_equal(c, cx)
    v = rng.normal(size=n_x)
    reduced = np.where(held, 0.0, Bd.T @ v)
    np.testing.assert_allclose(unknowns.reduce(v), reduced if free is None else reduced[free], atol=1e-12)
    u = rng.normal(size=basis.n_q if free is None else len(free))
    np.testing.assert_allclose(unknowns.expand(u), Bd @ unknowns.q(u), atol=1e-12)


def test_a_woodbury_update_through_the_basis_solves_the_updated_reduced_system():
    """woodbury_solve on the reduced factorization with the mapped columns is
    the solve of B^T (H + W C W^T) B (the regime rounds' update in q)."""
    m = mixed_model()
    basis, n_x = m.basis, 2 * m.n
    rng = np.random.default_rng(4)
    Bd = dense_basis(basis, n_x)
    A = rng.normal(size=(n_x, n_x))
    H = A @ A.T / n_x + np.eye(n_x)
    K = Bd.T @ H @ Bd
    rows, cols = np.nonzero(np.ones_like(K))
    factor = factorize(rows, cols, K.ravel(), basis.n_q, "numpy")
    unknowns = BasisUnknowns(basis, np.zeros(basis.n_q, bool), None)
    bends = random_bends(n_x, rng, sets=(2,))
    bends = [(d, w, np.abs(c)) for d, w, c in bends]
    W, c = unknowns.columns(bends)
    b = rng.normal(size=n_x)
    u = woodbury_solve(factor, unknowns.reduce(b), W, c)
    Wx, _ = dense_columns(bends, n_x)
    updated = Bd.T @ (H + Wx @ np.diag(c) @ Wx.T) @ Bd
    np.testing.assert_allclose(u, np.linalg.solve(updated, Bd.T @ b), rtol=1e-9, atol=1e-12)


def test_an_affine_gatherer_reads_the_expanded_step_to_the_bit():
    """The rounds read B u on their DOFs from the DOFs' rows of an affine B,
    summed in the order the einsum over each row (and expand) sums them: the
    same bits as the einsum and as the whole expanded vector's entries."""
    m = mixed_model()
    basis = m.basis
    unknowns = BasisUnknowns(basis, np.zeros(basis.n_q, bool), None)
    rng = np.random.default_rng(11)
    dofs = rng.integers(0, 2 * m.n, (40, 6))
    read = unknowns.gatherer(dofs)
    for _ in range(50):  # a summation order of its own would differ in some of them
        u = rng.normal(size=basis.n_q) * 10.0 ** rng.uniform(-3, 3, basis.n_q)
        got = read(u)
        assert got.shape == dofs.shape
        rows = np.einsum("...j,...j->...", basis.weights[dofs], u[basis.slots[dofs]])
        np.testing.assert_array_equal(got, rows)
        np.testing.assert_array_equal(got, unknowns.expand(u)[dofs])


def test_vertex_stencils_name_the_q_pairs_a_stencil_couples():
    """A stencil's q pairs (the sparse Cholesky's vertices): a rigid vertex
    stands for all three pairs of its body, a plain one for its own."""
    m = mixed_model()
    basis = m.basis
    Bd = dense_basis(basis, 2 * m.n)
    unknowns = BasisUnknowns(basis, np.zeros(basis.n_q, bool), None)
    rng = np.random.default_rng(5)
    idx = rng.integers(0, m.n, (20, 3))
    got = unknowns.vertex_stencils(idx)
    for stencil, pairs in zip(idx, got, strict=True):
        dofs = (2 * stencil[:, None] + np.arange(2)).ravel()
        touched = np.flatnonzero(np.abs(Bd[dofs]).sum(axis=0) > 0.0) // 2
        assert set(pairs) == set(touched)
    assert BasisUnknowns(basis, np.zeros(basis.n_q, bool), np.arange(basis.n_q)).vertex_stencils(idx) is None


@pytest.mark.parametrize("case", ["vertex", "rigid", "stiff"])
@pytest.mark.parametrize("held_mode", ["none", "rows", "dropped"])
def test_stencils_looked_up_once_give_the_bits_of_each_rounds_lookup(case, held_mode):
    """unknowns.stencils: a step's contacts mapped once, then read, reduced and
    turned into columns for some of them (sel), give the same bits as the
    stencils of those contacts alone (each round looked them up anew)."""
    rng = np.random.default_rng(8)
    if case == "vertex":
        n_x = 40
        unknowns = VertexUnknowns(np.isin(np.arange(n_x), rng.choice(n_x, 3, replace=False)))
    else:
        _, basis, n_x = next(c for c in basis_cases() if c[0] == case)
        held = np.zeros(basis.n_q, bool)
        if held_mode != "none":
            held[rng.choice(basis.n_q, 5, replace=False)] = True
        unknowns = BasisUnknowns(basis, held, np.flatnonzero(~held) if held_mode == "dropped" else None)
    (dofs, w, _), (dofs2, w2, _) = random_bends(n_x, rng, sets=(30, 12))
    st, st2 = unknowns.stencils(dofs, w), unknowns.stencils(dofs2, w2)
    sel, sel2 = np.sort(rng.choice(30, 9, replace=False)), np.array([4, 0, 7])
    f, f2 = rng.normal(size=9), rng.normal(size=3)
    u = rng.normal(size=unknowns.size)
    np.testing.assert_array_equal(st.read(u), unknowns.gatherer(dofs)(u))
    alone, alone2 = unknowns.stencils(dofs[sel], w[sel]), unknowns.stencils(dofs2[sel2], w2[sel2])
    got = unknowns.reduce_forces([(st, sel, f), (st2, sel2, f2)])
    np.testing.assert_array_equal(
        got, unknowns.reduce_forces([(alone, slice(None), f), (alone2, slice(None), f2)])
    )
    np.testing.assert_array_equal(
        got, unknowns.reduce_rows([(dofs[sel], w[sel], f), (dofs2[sel2], w2[sel2], f2)])
    )
    W = unknowns.stencil_columns([(st, sel), (st2, sel2)])
    np.testing.assert_array_equal(
        W, unknowns.columns([(dofs[sel], w[sel], f), (dofs2[sel2], w2[sel2], f2)])[0]
    )


def test_vertex_unknowns_hold_the_fixed_dofs():
    fixed = np.array([False, True, False, False, True, False])
    unknowns = VertexUnknowns(fixed)
    np.testing.assert_array_equal(unknowns.reduce(np.arange(6.0)), [0, 0, 2, 3, 0, 5])
    W, _ = unknowns.columns([(np.array([[0, 1, 4]]), np.array([[1.0, 2.0, 3.0]]), np.array([1.0]))])
    np.testing.assert_array_equal(W[:, 0], [1, 0, 0, 0, 0, 0])


def test_the_regime_rounds_run_on_a_mixed_pile(monkeypatch):
    """A pile of rigid and deformable shapes with the size switches at zero:
    the regime rounds re-solve steps on the reduced factorization, every
    step converges, and Newton takes fewer iterations than without them."""
    used = []
    real = friction_kinks.woodbury_step
    monkeypatch.setattr(friction_kinks, "woodbury_step", lambda *a: used.append(1) or real(*a))
    scene = rigid(pile(8, 4, n_seg=4, n_rings=2, n_boundary=16, seed=1), which={0, 2, 3, 5, 6})

    def iterations(rounds):
        settings = dataclasses.replace(ALL_FEATURES, regime_rounds=rounds)
        sim = Simulation(scene, settings=SolverSettings(newton=settings))
        stats = [sim.step() for _ in range(60)]
        assert all(s.converged for s in stats)
        return sum(s.newton_iters for s in stats)

    plain = iterations(0)
    assert not used
    with_rounds = iterations(5)
    assert used
    assert with_rounds < plain
