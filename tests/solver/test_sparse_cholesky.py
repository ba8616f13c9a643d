"""numpy-only sparse Cholesky (solver/linsolve/sparse_cholesky.py) and its nested
dissection (solver/linsolve/ordering.py): random SPD systems and Newton systems
captured from example scenes against a dense solve, the not-positive-definite
test, reuse of the symbolic analysis, and the solver paths that use it."""

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import solver.linsolve.sparse_cholesky as sparse_cholesky
import solver.newton as newton_module
from solver import simulate
from solver.examples import compressing_squares, pile
from solver.linsolve import linalg
from solver.linsolve.ordering import nested_dissection, stencil_edges, vertex_edges, vertex_graph
from solver.linsolve.sparse_cholesky import (
    NotPositiveDefiniteFront,
    SparseCholesky,
    Symbolic,
    _amalgamate,
    _lower_triangles,
    _update_sets,
    triangular_inverse,
)
from solver.simulation import Simulation
from tests.solver.test_numpy_path import STEPS, _child_run


def random_spd(rng, n_vertex, block, n_edges, isolated=0.0):
    """Random SPD matrix of n_vertex * block DOFs coupling random vertex
    pairs (full block x block blocks), as unsummed COO triplets in random
    order with duplicates, and the dense matrix.  isolated: fraction of
    DOFs turned into identity rows (like fixed DOFs)."""
    n = n_vertex * block
    a = rng.integers(0, n_vertex, n_edges)
    b = rng.integers(0, n_vertex, n_edges)
    d = np.arange(block)
    # each edge: a (2 block) x (2 block) stencil over vertices a, b, like an element
    dofs = np.concatenate([block * a[:, None] + d, block * b[:, None] + d], axis=1)
    k = dofs.shape[1]
    M = rng.normal(size=(n_edges, k, k))
    H = M @ np.swapaxes(M, 1, 2)  # PSD stencils
    rows = np.repeat(dofs, k, axis=1).ravel()
    cols = np.tile(dofs, (1, k)).ravel()
    vals = H.ravel()
    # a positive diagonal for every DOF (mass), given in two duplicate pieces
    diag = rng.uniform(0.1, 2.0, n)
    rows = np.concatenate([rows, np.arange(n), np.arange(n)])
    cols = np.concatenate([cols, np.arange(n), np.arange(n)])
    vals = np.concatenate([vals, 0.5 * diag, 0.5 * diag])
    fixed = rng.random(n) < isolated
    if fixed.any():
        keep = ~(fixed[rows] | fixed[cols])
        f = np.flatnonzero(fixed)
        rows, cols, vals = (
            np.concatenate([rows[keep], f]),
            np.concatenate([cols[keep], f]),
            np.concatenate([vals[keep], np.ones(len(f))]),
        )
    shuffle = rng.permutation(len(rows))
    rows, cols, vals = rows[shuffle], cols[shuffle], vals[shuffle]
    return rows, cols, vals, dense(rows, cols, vals, n)


def dense(rows, cols, vals, n):
    A = np.zeros((n, n))
    np.add.at(A, (rows, cols), vals)
    return A


def assert_solves(A, x, b, tol=1e-9):
    scale = np.abs(A).max() * np.abs(x).max() + np.abs(b).max()
    assert np.abs(A @ x - b).max() <= tol * scale


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n_vertex=st.integers(1, 90),
    block=st.sampled_from([1, 2, 2, 3]),
    density=st.floats(0.0, 3.0),
    leaf=st.sampled_from([1, 2, 5, 24]),
    isolated=st.sampled_from([0.0, 0.1]),
)
def test_random_spd_systems_match_dense_solve(seed, n_vertex, block, density, leaf, isolated):
    """Random SPD patterns (disconnected, dense-ish, odd sizes, identity rows)
    and leaf sizes down to single vertices (deep trees, many groups)."""
    rng = np.random.default_rng(seed)
    rows, cols, vals, A = random_spd(rng, n_vertex, block, int(density * n_vertex), isolated)
    n = len(A)
    b = rng.normal(size=n)
    x = SparseCholesky(leaf=leaf).solve(rows, cols, vals, b)
    assert_solves(A, x, b)
    np.testing.assert_allclose(x, np.linalg.solve(A, b), rtol=1e-8, atol=1e-10 * np.abs(x).max())


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n_vertex=st.integers(1, 90),
    block=st.sampled_from([1, 2]),
    density=st.floats(0.0, 3.0),
    r=st.integers(1, 5),
)
def test_many_right_hand_sides_and_the_forward_half(seed, n_vertex, block, density, r):
    """solve(B) for B (n, r) equals r single solves; half(B)^T half(B) = B^T A^-1 B."""
    rng = np.random.default_rng(seed)
    rows, cols, vals, A = random_spd(rng, n_vertex, block, int(density * n_vertex), 0.0)
    n = len(A)
    F = SparseCholesky(leaf=2).factor(rows, cols, vals, n)
    B = rng.normal(size=(n, r))
    X = F.solve(B)
    for j in range(r):
        np.testing.assert_allclose(X[:, j], F.solve(B[:, j]), rtol=1e-12, atol=1e-14 * np.abs(X).max())
    assert_solves(A, X, B)
    Y = F.half(B)
    np.testing.assert_allclose(Y.T @ Y, B.T @ np.linalg.solve(A, B), rtol=1e-8, atol=1e-10)


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n_vertex=st.integers(1, 120),
    density=st.floats(0.0, 3.0),
    r=st.integers(1, 6),
    support=st.integers(1, 6),
)
@example(seed=34, n_vertex=34, density=2.78125, r=4, support=3)
def test_sparse_right_hand_sides_sweep_only_the_fronts_they_reach(seed, n_vertex, density, r, support):
    """Woodbury's columns touch a few DOFs each: the forward sweep then works
    on the fronts they reach only, with the results of the sweep over all
    fronts (the subset path forced on every group, then off) to rounding (the
    example found by the property test: a segment of more than 8 update rows
    is summed pairwise, and the dead fronts' zeros regroup its terms), and half
    / solve stay right (B^T A^-1 B, A X = B), a column of zeros included."""
    rng = np.random.default_rng(seed)
    rows, cols, vals, A = random_spd(rng, n_vertex, 2, int(density * n_vertex), 0.0)
    n = len(A)
    F = SparseCholesky(leaf=2).factor(rows, cols, vals, n)
    B = np.zeros((n, r))
    for j in range(r - 1):  # the last column stays zero
        B[rng.choice(n, min(support, n), replace=False), j] = rng.normal(size=min(support, n))
    results = {}
    for fraction in (1.0, -1.0):  # subset whenever a front is dead; never
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(sparse_cholesky, "SUBSET_SWEEP", fraction)
            results[fraction] = F.half(B), F.solve(B)
    for subset, full in zip(results[1.0], results[-1.0], strict=True):
        np.testing.assert_allclose(subset, full, rtol=1e-12, atol=1e-15 * np.abs(full).max())
    Y, X = results[1.0]
    assert not Y[:, -1].any() and not X[:, -1].any()
    assert_solves(A, X, B)
    np.testing.assert_allclose(Y.T @ Y, B.T @ np.linalg.solve(A, B), rtol=1e-8, atol=1e-10)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_vertex=st.integers(2, 200), density=st.floats(0.5, 4.0))
def test_nested_dissection_is_an_elimination_tree(seed, n_vertex, density):
    """The order is a permutation, nodes are in postorder, and every edge joins
    a node to itself or to an ancestor (what the multifrontal method needs)."""
    rng = np.random.default_rng(seed)
    m = int(density * n_vertex)
    rows, cols = rng.integers(0, n_vertex, m), rng.integers(0, n_vertex, m)
    indptr, indices = vertex_graph(np.concatenate([rows, cols]), np.concatenate([cols, rows]), n_vertex, 1)
    order, bounds, parent = nested_dissection(indptr, indices, leaf=4)
    assert np.array_equal(np.sort(order), np.arange(n_vertex))
    assert bounds[0] == 0 and bounds[-1] == n_vertex and np.all(np.diff(bounds) > 0)
    assert np.all((parent == -1) | (parent > np.arange(len(parent))))
    pos = np.empty(n_vertex, np.int64)
    pos[order] = np.arange(n_vertex)
    node = np.searchsorted(bounds, pos, side="right") - 1
    src = np.repeat(np.arange(n_vertex), np.diff(indptr))
    lo, hi = np.minimum(node[src], node[indices]), np.maximum(node[src], node[indices])
    for a, b in zip(lo, hi, strict=True):
        up = a
        while up != b:
            up = parent[up]
            assert up != -1, "an edge joins two nodes of which neither is an ancestor of the other"


def grid_edges(side, offset=0):
    """Vertex pairs (i, j) of a side x side grid with diagonals, vertices offset on."""
    v = np.arange(side * side).reshape(side, side) + offset
    pairs = [(v[:, :-1], v[:, 1:]), (v[:-1, :], v[1:, :]), (v[:-1, :-1], v[1:, 1:])]
    return np.concatenate([np.stack([a.ravel(), b.ravel()], axis=1) for a, b in pairs])


@pytest.mark.parametrize("budget", [-1.0, 2e-5, np.inf])
def test_amalgamated_tree_is_the_tree_of_the_merged_nodes(budget, monkeypatch):
    """Two grids dissected apart, then coupled by contacts (a refront: the old
    order, chains of small separators): the merged nodes are runs of nodes
    each the parent of the one before, and their update sets and parents are
    those computed afresh for the merged ranges.  The merged analysis still
    factors the matrix, with fewer groups."""
    monkeypatch.setattr(sparse_cholesky, "AMALGAMATE_COST", budget)
    rng = np.random.default_rng(3)
    side = 14
    nv = 2 * side * side
    apart = np.concatenate([grid_edges(side), grid_edges(side, side * side)])
    first, second = rng.integers(0, side * side, (2, 6))
    both = np.concatenate([apart, np.stack([first, side * side + second], axis=1)])
    graph_apart = vertex_graph(apart[:, 0], apart[:, 1], nv, 1, symmetric=False)
    order, bounds, _ = nested_dissection(*graph_apart, leaf=8)
    vpos = np.empty(nv, np.intp)
    vpos[order] = np.arange(nv)
    indptr, indices = vertex_graph(both[:, 0], both[:, 1], nv, 1, symmetric=False)
    update, parent = _update_sets(indptr, indices, order, vpos, bounds)
    merged_bounds, merged_update, merged_parent = _amalgamate(bounds, update, parent, 2)
    # each merged node is a run of original nodes, each the parent of the one before
    assert merged_bounds[0] == 0 and merged_bounds[-1] == nv
    assert np.all(np.isin(merged_bounds, bounds))
    joined = ~np.isin(bounds[1:-1], merged_bounds)  # node k + 1 joined node k
    assert np.all(parent[:-1][joined] == np.flatnonzero(joined) + 1)
    if budget < 0.0:
        assert not joined.any()
    if budget == np.inf:  # every node that is its parent's predecessor joins it
        assert np.array_equal(joined, parent[:-1] == np.arange(1, len(parent)))
    fresh_update, fresh_parent = _update_sets(indptr, indices, order, vpos, merged_bounds)
    assert np.array_equal(merged_parent, fresh_parent)
    for a, b in zip(merged_update, fresh_update, strict=True):
        assert np.array_equal(a, b)
    # the factorization on the merged tree (a refront of the coupled pattern)
    keys = vertex_edges(both[:, 0], both[:, 1], nv, 1, symmetric=False)
    lo, hi = keys // nv, keys % nv
    d = np.arange(2)
    stencil = np.concatenate([2 * lo[:, None] + d, 2 * hi[:, None] + d], axis=1)
    rows = np.concatenate([np.repeat(stencil, 4, axis=1).ravel(), np.arange(2 * nv)])
    cols = np.concatenate([np.tile(stencil, (1, 4)).ravel(), np.arange(2 * nv)])
    M = rng.normal(size=(len(keys), 4, 4))
    vals = np.concatenate([(M @ np.swapaxes(M, 1, 2)).ravel(), np.full(2 * nv, 0.5)])
    sym = Symbolic(rows, cols, 2 * nv, ordering=(order, bounds), edges=keys)
    assert len(sym.bounds) == len(merged_bounds)
    b = rng.normal(size=2 * nv)
    assert_solves(dense(rows, cols, vals, 2 * nv), sym.factor(vals).solve(b), b)
    if budget > 0.0:
        monkeypatch.setattr(sparse_cholesky, "AMALGAMATE_COST", -1.0)
        unmerged = Symbolic(rows, cols, 2 * nv, ordering=(order, bounds), edges=keys)
        assert len(sym.groups) < len(unmerged.groups)


def test_triangular_inverse_matches_inverse():
    rng = np.random.default_rng(1)
    for k in (1, 5, 24, 25, 61, 130):
        M = rng.normal(size=(3, k, k))
        L = np.linalg.cholesky(M @ np.swapaxes(M, 1, 2) + k * np.eye(k))
        np.testing.assert_allclose(triangular_inverse(L), np.linalg.inv(L), rtol=1e-10, atol=1e-13)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_fronts_assembled_in_place_and_by_bincount_give_the_same_bits(seed, monkeypatch):
    """numpy >= 1.25 sums the fronts in place (ufunc.at into one reused
    buffer), older numpy by a bincount per group: the same sums in the same
    order, so the same factor bit for bit (and numpy 1.24 runs the other)."""
    rng = np.random.default_rng(seed)
    rows, cols, vals, A = random_spd(rng, 70, 2, 150)
    b = rng.normal(size=len(A))
    solutions = []
    for fast in (True, False):
        monkeypatch.setattr(sparse_cholesky, "_FAST_ADD_AT", fast)
        solver = SparseCholesky(leaf=4)
        for _ in range(2):  # the second factorization reuses the analysis and its buffers
            solutions.append(solver.factor(rows, cols, vals, len(A)).solve(b))
        assert solver.counts["same"] == 1
    assert_solves(A, solutions[0], b)
    for x in solutions[1:]:
        assert np.array_equal(x, solutions[0])


def test_lower_triangles_are_tril_indices_one_after_the_other():
    counts = np.array([3, 0, 1, 60, 2])
    tri, i, j = _lower_triangles(counts, 60)
    expect = np.concatenate([np.transpose(np.tril_indices(k)) for k in counts])
    assert tri.tolist() == [6, 0, 1, 1830, 3]
    assert np.array_equal(np.stack([i, j], axis=1), expect)


def captured_systems(scene, steps, keep=4, every=1):
    """Newton systems (rows, cols, vals, rhs) of the last solves of a run."""
    systems = []
    real = newton_module.solve

    def spy(r, c, v, rhs, method, require_pd=False, ordering=None, expected=None):
        systems.append((r.copy(), c.copy(), v.copy(), rhs.copy()))
        return real(r, c, v, rhs, method, require_pd=require_pd, ordering=ordering, expected=expected)

    newton_module.solve = spy
    try:
        sim = Simulation(replace(scene, params=replace(scene.params, strict=False)))
        for _ in range(steps):
            sim.step()
    finally:
        newton_module.solve = real
    return systems[-keep * every :: every]


@pytest.mark.parametrize(
    "name, scene, steps",
    [
        ("squares n_seg=10 in contact", compressing_squares(n_seg=10), 45),
        ("pile of 12 shapes", pile(n_shapes=12, n_columns=4, n_seg=4, n_rings=2, n_boundary=12), 30),
    ],
)
def test_captured_newton_systems_match_dense_solve(name, scene, steps):
    systems = captured_systems(scene, steps)
    sc = SparseCholesky()
    for r, c, v, rhs in systems:
        n = len(rhs)
        A = dense(r, c, v, n)
        if np.linalg.eigvalsh(A)[0] <= 0:  # an exact Hessian Newton rejected: must be detected
            with pytest.raises(NotPositiveDefiniteFront):
                sc.solve(r, c, v, rhs)
            continue
        x = sc.solve(r, c, v, rhs)
        assert_solves(A, x, rhs)
        np.testing.assert_allclose(x, np.linalg.solve(A, rhs), rtol=1e-7, atol=1e-9 * np.abs(x).max())
    assert sum(sc.counts.values()) == len(systems)


def test_not_positive_definite_is_detected():
    rng = np.random.default_rng(5)
    rows, cols, vals, A = random_spd(rng, 60, 2, 150)
    b = rng.normal(size=len(A))
    sc = SparseCholesky(leaf=4)
    sc.solve(rows, cols, vals, b)
    # an indefinite matrix on the same pattern: a negative diagonal entry
    k = int(np.flatnonzero(rows == cols)[7])
    bad = vals.copy()
    bad[k] -= 2 * A[rows[k], rows[k]]
    assert np.linalg.eigvalsh(dense(rows, cols, bad, len(A)))[0] < 0
    with pytest.raises(NotPositiveDefiniteFront):
        sc.solve(rows, cols, bad, b)
    # singular (positive semi-definite): a zero pivot is not positive either
    psd = np.where((rows == 0) | (cols == 0), 0.0, vals)
    assert abs(np.linalg.det(dense(rows, cols, psd, len(A))[:1, :1])) == 0
    with pytest.raises(NotPositiveDefiniteFront):
        Symbolic(rows, cols, len(A)).factor(psd)


def test_symbolic_analysis_is_reused_while_the_pattern_is_unchanged():
    rng = np.random.default_rng(6)
    rows, cols, vals, A = random_spd(rng, 150, 2, 400)
    n = len(A)
    b = rng.normal(size=n)
    sc = SparseCholesky(leaf=8)
    x1 = sc.solve(rows, cols, vals, b)
    sym = sc.sym
    # same pattern, other values: no new analysis, same answer as a fresh solver
    vals2 = 1.7 * vals + 3.0 * (rows == cols)  # still symmetric and positive definite
    x2 = sc.solve(rows, cols, vals2, b)
    assert sc.sym is sym and sc.counts == {"same": 1, "remap": 0, "refront": 0, "dissection": 1}
    assert np.array_equal(x2, SparseCholesky(leaf=8).solve(rows, cols, vals2, b))
    assert_solves(dense(rows, cols, vals2, n), x2, b)
    assert not np.allclose(x1, x2)
    # the same entries in another order, plus a coupling between DOFs already
    # coupled: a new assembly map only
    i, j = int(rows[0]), int(cols[0])
    r3 = np.concatenate([rows[::-1], [i, j]])
    c3 = np.concatenate([cols[::-1], [j, i]])
    v3 = np.concatenate([vals2[::-1], [0.25, 0.25]])
    x3 = sc.solve(r3, c3, v3, b)
    assert sc.sym is sym and sc.counts["remap"] == 1
    assert_solves(dense(r3, c3, v3, n), x3, b)


def test_pattern_change_triggers_new_analysis():
    """A coupling between DOFs of far-apart tree nodes (a new contact) is not
    in the fronts: the fronts are recomputed (same order while their cost
    stays within REORDER_GROWTH) or the dissection is redone."""
    rng = np.random.default_rng(7)
    rows, cols, vals, _ = random_spd(rng, 200, 2, 500)
    n = 400
    b = rng.normal(size=n)
    sc = SparseCholesky(leaf=8)
    sc.solve(rows, cols, vals, b)
    sym = sc.sym
    first, last = int(sym.perm[0]), int(sym.perm[-3])  # in the first leaf and in the root
    leaf2 = int(sym.perm[sym.bounds[1]])  # first DOF of the second node
    for a, c in [(first, last), (first, leaf2)]:
        r2 = np.concatenate([rows, [a, c, a, c]])
        c2 = np.concatenate([cols, [c, a, a, c]])
        v2 = np.concatenate([vals, [0.3, 0.3, 1.0, 1.0]])
        before = dict(sc.counts)
        x = sc.solve(r2, c2, v2, b)
        assert_solves(dense(r2, c2, v2, n), x, b)
        changed = {k for k in sc.counts if sc.counts[k] != before[k]}
        assert changed in ({"remap"}, {"refront"}, {"dissection"})
    assert sc.sym is not sym  # the second coupling was outside the first fronts
    # a very different pattern (another size) starts over
    rows, cols, vals, A = random_spd(rng, 30, 2, 60)
    b = rng.normal(size=60)
    before = sc.counts["dissection"]
    assert_solves(A, sc.solve(rows, cols, vals, b), b)
    assert sc.counts["dissection"] == before + 1


@pytest.mark.parametrize("method", ["numpy", "scipy"])
def test_linalg_solve_uses_the_sparse_cholesky_and_detects_indefinite(method, monkeypatch):
    monkeypatch.setattr(linalg, "BAND_FLOPS", 0.0)  # scipy path: no banded Cholesky
    rng = np.random.default_rng(8)
    rows, cols, vals, A = random_spd(rng, 120, 2, 300)
    b = rng.normal(size=len(A))
    order = linalg.BandOrdering()
    x = linalg.solve(rows, cols, vals, b, method, require_pd=True, ordering=order)
    assert_solves(A, x, b)
    assert order.sparse.counts["dissection"] == 1
    # scipy path: from then on systems of this size skip the band test (numpy: never made)
    assert order.sparse_n == (len(A) if method == "scipy" else None)
    perm = order.perm
    monkeypatch.setattr(linalg, "BAND_FLOPS", 1e30)
    linalg.solve(rows, cols, 2 * vals, b, method, require_pd=True, ordering=order)
    assert order.perm is perm and order.sparse.counts["same"] == 1
    k = int(np.flatnonzero(rows == cols)[3])
    bad = vals.copy()
    bad[k] -= 2 * A[rows[k], rows[k]]
    with pytest.raises(linalg.NotPositiveDefinite):
        linalg.solve(rows, cols, bad, b, method, require_pd=True, ordering=order)
    # without require_pd an indefinite system is still solved (LU)
    x = linalg.solve(rows, cols, bad, b, method, ordering=order)
    assert_solves(dense(rows, cols, bad, len(A)), x, b, tol=1e-8)


def test_sparse_path_with_scipy_hidden_matches_numpy_path_and_scipy(tmp_path):
    """The numpy path through the sparse Cholesky gives the same trajectory
    with scipy hidden as with scipy present, and stays within the Newton
    tolerance of the scipy path (which rounds differently)."""
    force = "linalg.BAND_FLOPS = 0.0  # the scipy path through the sparse Cholesky too"
    hidden, hidden_iters = _child_run(tmp_path, "hidden", True, "auto", 6, force)
    present, present_iters = _child_run(tmp_path, "present", False, "numpy", 6, force)
    # (a script named scipy.py would shadow the package)
    reference, _ = _child_run(tmp_path, "reference", False, "scipy", 6, force)
    assert hidden_iters == present_iters
    for key in hidden.files:
        np.testing.assert_array_equal(hidden[key], present[key])
        np.testing.assert_allclose(hidden[key], reference[key], rtol=0, atol=1e-3)
    scene = compressing_squares(6)
    traj = simulate(replace(scene, params=replace(scene.params, linear_solver="numpy")), STEPS)
    assert sum(s.active_contacts for s in traj.stats) > 0  # contacts change the pattern in the window


def _with_pairs(rows, cols, vals, pairs, block=2):
    """The pattern plus a coupling of the first DOFs of each vertex pair (p, 2)."""
    i, j = block * pairs[:, 0], block * pairs[:, 1]
    return (
        np.concatenate([rows, i, j]),
        np.concatenate([cols, j, i]),
        np.concatenate([vals, np.full(2 * len(pairs), 0.01)]),
    )


def test_a_new_analysis_in_flux_covers_the_expected_pairs():
    """Expected stencils are ignored by an analysis long after the last one
    and by a first dissection; a new analysis within IN_FLUX_CALLS calls of the
    last covers their vertex pairs, so that those contacts, when they come,
    need only a new assembly map."""
    rng = np.random.default_rng(12)
    rows, cols, vals, _ = random_spd(rng, 200, 2, 500)
    b = rng.normal(size=400)
    expected = np.array([[3, 150, 77], [190, 5, 5], [60, 199, 200]])  # vertex 200: not in the system
    pairs = stencil_edges(expected, 200)
    sc = SparseCholesky(leaf=8)
    sc.solve(rows, cols, vals, b, expected)  # a first dissection: nothing in flux yet
    assert not np.isin(pairs, sc.edges).all()
    for _ in range(sparse_cholesky.IN_FLUX_CALLS):  # settled: the next analysis ignores expectations
        sc.solve(rows, cols, vals, b, expected)
    new = np.array([[int(sc.sym.perm[0]) // 2, int(sc.sym.perm[-1]) // 2]])  # first leaf to root
    r2, c2, v2 = _with_pairs(rows, cols, vals, new)
    sc.solve(r2, c2, v2, b, expected)
    assert sc.counts["refront"] == 1 and not np.isin(pairs, sc.edges).all()
    # an analysis right after it (contacts in flux) covers the expected pairs
    new2 = np.array([[int(sc.sym.perm[2]) // 2, int(sc.sym.perm[-5]) // 2]])
    r3, c3, v3 = _with_pairs(r2, c2, v2, new2)
    sc.solve(r3, c3, v3, b, expected)
    assert sc.counts["refront"] == 2 and np.isin(pairs, sc.edges).all()
    # the expected contacts arrive: a remap, and the right answer
    assert 60 * 200 + 199 not in pairs  # its stencil has a vertex outside
    r4, c4, v4 = _with_pairs(r3, c3, v3, np.stack([pairs // 200, pairs % 200], axis=1))
    before = dict(sc.counts)
    x = sc.solve(r4, c4, v4, b, expected)
    assert sc.counts["remap"] == before["remap"] + 1 and sc.counts["refront"] == before["refront"]
    assert_solves(dense(r4, c4, v4, 400), x, b)


@settings(max_examples=60, deadline=None)
@given(
    stencils=st.lists(st.lists(st.integers(-1, 12), min_size=3, max_size=3), max_size=20),
    n_vertex=st.integers(1, 12),
)
@example(stencils=[], n_vertex=1)
def test_stencil_edges_are_the_pairs_within_stencils_inside(stencils, n_vertex):
    keys = stencil_edges(np.array(stencils, np.int64).reshape(-1, 3), n_vertex)
    pairs = {
        (min(a, c), max(a, c))
        for s in stencils
        if all(0 <= v < n_vertex for v in s)
        for k, a in enumerate(s)
        for c in s[k + 1 :]
        if a != c
    }
    assert keys.tolist() == sorted(lo * n_vertex + hi for lo, hi in pairs)


def test_fronts_over_max_flops_are_given_up_before_their_maps():
    """A refront costing more than max_flops raises FrontsTooCostly (the
    solver then dissects anew); at max_flops exactly it is built, the same
    fronts as without the limit."""
    rng = np.random.default_rng(13)
    rows, cols, vals, _ = random_spd(rng, 150, 2, 350)
    sym = Symbolic(rows, cols, 300, leaf=8)
    r2, c2, _ = _with_pairs(rows, cols, vals, np.array([[int(sym.perm[0]) // 2, int(sym.perm[-1]) // 2]]))
    edges = np.union1d(sym.edges, vertex_edges(r2, c2, 150, 2))
    free = Symbolic(r2, c2, 300, 8, ordering=sym.ordering, edges=edges)
    with pytest.raises(sparse_cholesky.FrontsTooCostly):
        Symbolic(r2, c2, 300, 8, ordering=sym.ordering, edges=edges, max_flops=free.flops() - 1)
    kept = Symbolic(r2, c2, 300, 8, ordering=sym.ordering, edges=edges, max_flops=free.flops())
    assert np.array_equal(kept.bounds, free.bounds) and np.array_equal(kept.parent, free.parent)
    assert kept.flops() > sym.flops()


def test_pattern_with_entries_in_one_orientation_only():
    """Explicit zeros at (i, j) without (j, i), for pairs coupled nowhere else:
    the matrix is symmetric, its pattern is not; the analysis symmetrizes it."""
    rng = np.random.default_rng(9)
    rows, cols, vals, A = random_spd(rng, 40, 2, 30)
    i, j = np.nonzero(A == 0)
    pick = rng.choice(len(i), 50, replace=False)
    r, c = np.concatenate([rows, i[pick]]), np.concatenate([cols, j[pick]])
    v = np.concatenate([vals, np.zeros(50)])
    b = rng.normal(size=len(A))
    sc = SparseCholesky(leaf=4)
    assert_solves(A, sc.solve(r, c, v, b), b)
    assert_solves(A, sc.solve(r, c, v, b), b)


def test_state_is_small_and_a_copy_of_it_continues_with_the_same_bits():
    """The object keeps only its order, analysed vertex pairs and counters (a
    checkpoint stores its state()); a solver from_state() rebuilds the rest
    and solves the next patterns bit for bit like the original."""
    import dataclasses

    rng = np.random.default_rng(11)
    rows, cols, vals, _ = random_spd(rng, 200, 2, 500)
    b = rng.normal(size=400)
    sc = SparseCholesky(leaf=8)
    sc.solve(rows, cols, vals, b)
    first, last = int(sc.sym.perm[0]), int(sc.sym.perm[-3])
    r2, c2 = np.concatenate([rows, [first, last]]), np.concatenate([cols, [last, first]])
    v2 = np.concatenate([vals, [0.3, 0.3]])
    sc.solve(r2, c2, v2, b)  # new fronts on the union of the pairs
    state = sc.state()
    fields = {f.name: getattr(state, f.name) for f in dataclasses.fields(state)}
    assert sum(a.nbytes for a in fields.values() if isinstance(a, np.ndarray)) < 10_000
    assert state.order is not sc.ordering[0] and state.edges is not sc.edges  # copies
    clone = SparseCholesky.from_state(state, leaf=8)
    assert clone.sym is None  # derived data are not part of the state
    counts = dict(sc.counts)
    # the next call is a new analysis in flux: the expected pairs are covered
    expected = rng.integers(0, 200, (4, 3))
    r3, c3 = np.concatenate([r2, [first + 2, last - 4]]), np.concatenate([c2, [last - 4, first + 2]])
    v3 = np.concatenate([v2, [0.1, 0.1]])
    for r, c, v in ((r3, c3, v3), (r2, c2, 2 * v2), (rows, cols, vals), (r2[::-1], c2[::-1], v2[::-1])):
        assert np.array_equal(clone.solve(r, c, v, b, expected), sc.solve(r, c, v, b, expected))
    assert clone.counts == {k: sc.counts[k] - counts[k] for k in counts}
    assert clone.counts["refront"] + clone.counts["dissection"] == 1
