"""Linear algebra: PSD projection and the
solvers (scipy dense / banded Cholesky and sparse LU, numpy dense, sparse
Cholesky and PCG fallback) against numpy's dense solve, and their positive-definiteness test."""

import numpy as np
import pytest

from solver.linsolve import linalg


def spd_coo(rng, n, density=0.02):
    """Random sparse SPD matrix as COO triplets with duplicates (like assembly)."""
    k = max(1, int(density * n * n))
    r = rng.integers(0, n, k)
    c = rng.integers(0, n, k)
    v = rng.normal(size=k)
    # A = S + S^T + diagonal dominance, given as unsummed triplets
    rows = np.concatenate([r, c, np.arange(n)])
    cols = np.concatenate([c, r, np.arange(n)])
    A = np.zeros((n, n))
    np.add.at(A, (rows[: 2 * k], cols[: 2 * k]), np.concatenate([v, v]))
    diag = np.abs(A).sum(axis=1) + rng.uniform(0.5, 2.0, n)
    vals = np.concatenate([v, v, diag])
    A[np.arange(n), np.arange(n)] += diag
    return rows, cols, vals, A


def test_project_psd_matches_eigen_clamp():
    rng = np.random.default_rng(0)
    H = rng.normal(size=(50, 6, 6))
    H = H + np.swapaxes(H, 1, 2)
    P = linalg.project_psd(H)
    for k in range(50):
        w, V = np.linalg.eigh(H[k])
        assert np.allclose(P[k], (V * np.maximum(w, 0)) @ V.T, atol=1e-12)
    spd = np.einsum("nij,nkj->nik", H, H)
    assert np.allclose(linalg.project_psd(spd), spd)
    assert linalg.project_psd(np.zeros((0, 4, 4))).shape == (0, 4, 4)


def test_project_psd_records_what_it_added():
    """The deficit of the projection: the matrices with a negative
    eigenvalue, and for each a PSD N with projected - N = the matrix."""
    rng = np.random.default_rng(1)
    H = rng.normal(size=(40, 6, 6))
    H = H + np.swapaxes(H, 1, 2)
    H[:10] = np.einsum("nij,nkj->nik", H[:10], H[:10])  # some already PSD
    deficit = []
    P = linalg.project_psd(H, deficit)
    ((which, N),) = deficit
    np.testing.assert_array_equal(which, np.flatnonzero(np.linalg.eigvalsh(H).min(axis=1) < 0))
    assert 20 < len(which) <= 30
    np.testing.assert_allclose(P[which] - N, H[which], atol=1e-10)
    assert np.linalg.eigvalsh(N).min() > -1e-10
    untouched = []
    linalg.project_psd(H[:10], untouched)
    assert untouched == []


@pytest.mark.parametrize("method", ["auto", "scipy", "numpy"])
@pytest.mark.parametrize("n", [10, 500])
def test_solve_methods_agree_with_dense(method, n):
    rng = np.random.default_rng(n)
    rows, cols, vals, A = spd_coo(rng, n)
    b = rng.normal(size=n)
    x = linalg.solve(rows, cols, vals, b, method)
    assert np.allclose(A @ x, b, rtol=0, atol=1e-9 * np.abs(b).max())


def test_numpy_pcg_fallback_on_large_spd_system():
    """Above DENSE_LIMIT the numpy path uses Jacobi-preconditioned CG."""
    rng = np.random.default_rng(3)
    n = linalg.DENSE_LIMIT + 500
    # 1D Laplacian + random diagonal shift: SPD, sparse, moderately conditioned
    i = np.arange(n)
    rows = np.concatenate([i, i[:-1], i[1:]])
    cols = np.concatenate([i, i[1:], i[:-1]])
    vals = np.concatenate([2.0 + rng.uniform(0.01, 1.0, n), -np.ones(n - 1), -np.ones(n - 1)])
    b = rng.normal(size=n)
    x = linalg.solve(rows, cols, vals, b, "numpy")
    Ax = np.bincount(rows, weights=vals * x[cols], minlength=n)
    assert np.linalg.norm(Ax - b) <= 1e-8 * np.linalg.norm(b)


def test_conjugate_gradients_directly():
    rng = np.random.default_rng(4)
    M = rng.normal(size=(40, 40))
    A = M @ M.T + 40 * np.eye(40)
    b = rng.normal(size=40)
    x, ok, it = linalg.conjugate_gradients(lambda v: A @ v, lambda r: r / np.diag(A), b, 1e-12, 400)
    assert ok and 0 < it <= 400
    assert np.allclose(x, np.linalg.solve(A, b), rtol=1e-9, atol=1e-12)
    # an iteration cap that is too small is reported, not hidden
    x, ok, it = linalg.conjugate_gradients(lambda v: A @ v, lambda r: r, b, 1e-14, 2)
    assert not ok and it == 2


def banded_spd_coo(rng, n, band):
    """SPD matrix coupling only DOFs less than `band` apart, rows shuffled so
    that the band must be found by the reordering."""
    i, j = np.triu_indices(n, 1)
    near = (j - i) < band
    i, j = i[near], j[near]
    v = rng.normal(size=len(i))
    A = np.zeros((n, n))
    A[i, j] = v
    A += A.T
    A[np.arange(n), np.arange(n)] = np.abs(A).sum(axis=1) + 1.0
    shuffle = rng.permutation(n)
    A = A[np.ix_(shuffle, shuffle)]
    rows, cols = np.nonzero(A)
    return rows, cols, A[rows, cols], A


@pytest.mark.parametrize("path", ["dense", "banded", "superlu"])
def test_scipy_paths_solve_and_detect_indefinite(path, monkeypatch):
    """Each scipy path solves an SPD system; with require_pd the Cholesky paths
    reject an indefinite one, and without it every path still solves it."""
    rng = np.random.default_rng(7)
    n = 60 if path == "dense" else 400
    if path == "superlu":
        monkeypatch.setattr(linalg, "BAND_FLOPS", 0.0)
    rows, cols, vals, A = banded_spd_coo(rng, n, 5)
    b = rng.normal(size=n)
    calls = []
    real = linalg._lapack.dpbtrf  # the banded Cholesky
    monkeypatch.setattr(linalg._lapack, "dpbtrf", lambda *a, **k: calls.append(1) or real(*a, **k))
    x = linalg.solve(rows, cols, vals, b, "scipy", require_pd=True)
    assert np.allclose(A @ x, b, rtol=0, atol=1e-9 * np.abs(b).max())
    assert bool(calls) == (path == "banded")
    # make it indefinite: flip the sign of one diagonal entry
    k = int(np.flatnonzero(rows == cols)[3])
    vals = vals.copy()
    vals[k] = -vals[k]
    A[rows[k], rows[k]] = vals[k]
    with pytest.raises(linalg.NotPositiveDefinite):
        linalg.solve(rows, cols, vals, b, "scipy", require_pd=True)
    x = linalg.solve(rows, cols, vals, b, "scipy")
    assert np.allclose(A @ x, b, rtol=0, atol=1e-8 * np.abs(b).max())


def test_band_ordering_is_reused_and_recomputed_when_the_band_grows():
    rng = np.random.default_rng(8)
    rows, cols, vals, A = banded_spd_coo(rng, 300, 4)
    order = linalg.BandOrdering()
    _, _, band = order.band_of(rows, cols, 300)
    assert band <= 8  # RCM recovers a narrow band
    first = order.perm
    order.band_of(rows, cols, 300)
    assert order.perm is first  # same pattern: ordering kept
    # a long-range coupling (a new contact far along the band) widens it
    ends = int(first[0]), int(first[-1])
    far_r = np.concatenate([rows, ends])
    far_c = np.concatenate([cols, ends[::-1]])
    order.band_of(far_r, far_c, 300)
    assert order.perm is not first
    b = rng.normal(size=300)
    vals2 = np.concatenate([vals, [0.1, 0.1]])
    A2 = A.copy()
    A2[ends[0], ends[1]] = A2[ends[1], ends[0]] = 0.1
    x = linalg.solve(far_r, far_c, vals2, b, "scipy", ordering=order)
    assert np.allclose(A2 @ x, b, rtol=0, atol=1e-9)


def _reference_band_storage(order, rows, cols, vals, n, band):
    """Upper band storage ab[band + i - j, j] of the matrix in the ordering's
    order, from the dense matrix (written here)."""
    A = np.zeros((n, n))
    np.add.at(A, (order.inv[rows], order.inv[cols]), vals)
    ab = np.zeros((band + 1, n))
    for i in range(n):
        for j in range(i, min(n, i + band + 1)):
            ab[band + i - j, j] = A[i, j]
    return ab


def test_band_storage_reuses_the_shared_prefix_of_the_last_pattern():
    """The banded path keeps the last pattern's entries in band order and
    recomputes only those after the prefix a new pattern shares with it (all
    of them when the band or the ordering changes): over a sequence of
    patterns (the same twice, one more contact at the end, a longer band, a
    shorter pattern, a far coupling that reorders) the band storage equals
    the one written here from the dense matrix, and it is what the solve
    factors."""
    rng = np.random.default_rng(11)
    n = 120
    rows, cols, vals, _ = banded_spd_coo(rng, n, 3)
    order = linalg.BandOrdering()
    _, _, band0 = order.band_of(rows, cols, n)
    # couplings in the ordering's order: one inside the band, one widening it a
    # little (positions recomputed, no new ordering)
    near = [(order.perm[p], order.perm[p + d]) for p, d in ((5, band0 // 2), (30, band0 + 2))]
    patterns = [(rows, cols), (rows, cols)]
    for a, b in near:
        r, c = patterns[-1]
        patterns.append((np.concatenate([r, [a, b]]), np.concatenate([c, [b, a]])))
    # the first coupling replaced by another one (the patterns differ before the last's end)
    a, b = order.perm[60], order.perm[60 + band0 // 2]
    patterns.insert(3, (np.concatenate([rows, [a, b]]), np.concatenate([cols, [b, a]])))
    patterns.append((rows, cols))  # shorter again
    patterns.append((np.concatenate([rows, [0, n - 1]]), np.concatenate([cols, [n - 1, 0]])))
    bands = []
    for r, c in patterns:
        v = np.concatenate([vals, rng.uniform(-0.05, 0.05, len(r) - len(vals))])
        perm_before = order.perm
        got = order.banded(r, c, n, 1e12)
        assert got is not None
        positions, band = got
        bands.append((band, order.perm is perm_before))
        ab = linalg._band_storage(positions, band, v, n)
        np.testing.assert_array_equal(ab, _reference_band_storage(order, r, c, v, n, band))
    assert bands[4] == (band0 + 2, True)  # the band grew, in the same order
    assert not bands[-1][1]  # and the far coupling reordered


def test_numpy_paths_detect_indefinite(monkeypatch):
    rng = np.random.default_rng(9)
    rows, cols, vals, _ = banded_spd_coo(rng, 50, 3)
    vals = vals.copy()
    k = int(np.flatnonzero(rows == cols)[0])
    vals[k] = -10 * abs(vals[k])
    b = rng.normal(size=50)
    with pytest.raises(linalg.NotPositiveDefinite):
        linalg.solve(rows, cols, vals, b, "numpy", require_pd=True)
    monkeypatch.setattr(linalg, "DENSE_LIMIT", 4)  # PCG branch
    with pytest.raises(linalg.NotPositiveDefinite):
        linalg.solve(rows, cols, vals, b, "numpy", require_pd=True)


def test_numpy_path_above_tiny_dense_uses_the_sparse_cholesky_and_detects_indefinite():
    """Above TINY_DENSE the numpy path factors with the sparse Cholesky (kept
    on the ordering object); an indefinite matrix is detected, and without
    require_pd solved by the dense LU."""
    rng = np.random.default_rng(12)
    rows, cols, vals, A = banded_spd_coo(rng, 400, 5)
    b = rng.normal(size=400)
    order = linalg.BandOrdering()
    x = linalg.solve(rows, cols, vals, b, "numpy", require_pd=True, ordering=order)
    assert sum(order.sparse.counts.values()) == 1
    assert np.allclose(A @ x, b, rtol=0, atol=1e-9 * np.abs(b).max())
    vals = vals.copy()
    vals[int(np.flatnonzero(rows == cols)[7])] *= -1.0
    with pytest.raises(linalg.NotPositiveDefinite):
        linalg.solve(rows, cols, vals, b, "numpy", require_pd=True, ordering=order)
    A2 = np.zeros_like(A)
    np.add.at(A2, (rows, cols), vals)
    x = linalg.solve(rows, cols, vals, b, "numpy", ordering=order)  # falls back to the dense LU
    assert np.allclose(A2 @ x, b, rtol=0, atol=1e-8 * np.abs(b).max())


@pytest.mark.parametrize("method", ["scipy", "numpy"])
@pytest.mark.parametrize("path", ["dense", "banded", "sparse"])
def test_factorize_solves_many_right_hand_sides_and_halves(method, path, monkeypatch):
    """factorize() on each path: solve(b) = A^-1 b for one or many right-hand
    sides, half(B)^T half(B) = B^T A^-1 B (the Woodbury update's small
    system), and NotPositiveDefinite for an indefinite matrix."""
    rng = np.random.default_rng(11)
    n = 60 if path == "dense" else 400
    if path == "sparse":
        monkeypatch.setattr(linalg, "BAND_FLOPS", 0.0)
    rows, cols, vals, A = banded_spd_coo(rng, n, 5)
    F = linalg.factorize(rows, cols, vals, n, method)
    B = rng.normal(size=(n, 4))
    scale = np.abs(np.linalg.solve(A, B)).max()
    assert np.abs(F.solve(B) - np.linalg.solve(A, B)).max() <= 1e-10 * scale
    assert np.abs(F.solve(B[:, 2]) - np.linalg.solve(A, B[:, 2])).max() <= 1e-10 * scale
    Y = F.half(B)
    assert np.allclose(Y.T @ Y, B.T @ np.linalg.solve(A, B), rtol=1e-10, atol=1e-12)
    # the backward sweep completes the forward one, for one or many columns
    assert np.abs(F.back(Y) - np.linalg.solve(A, B)).max() <= 1e-10 * scale
    y = F.half(B[:, 1])
    assert y.shape == (n,) and np.allclose(y, Y[:, 1], rtol=1e-12, atol=1e-14)
    assert np.abs(F.back(y) - np.linalg.solve(A, B[:, 1])).max() <= 1e-10 * scale
    k = int(np.flatnonzero(rows == cols)[3])
    vals = vals.copy()
    vals[k] = -vals[k]
    with pytest.raises(linalg.NotPositiveDefinite):
        linalg.factorize(rows, cols, vals, n, method)


@pytest.mark.parametrize("method", ["scipy", "numpy"])
def test_woodbury_solve_matches_the_updated_matrix(method):
    """woodbury_solve on A's factorization solves A + W diag(c) W^T, with
    curvatures of either sign (an update may remove curvature)."""
    rng = np.random.default_rng(12)
    n, r = 300, 6
    rows, cols, vals, A = banded_spd_coo(rng, n, 4)
    W = np.zeros((n, r))
    for j in range(r):  # sparse columns, as a friction contact's w
        W[rng.choice(n, 6, replace=False), j] = rng.normal(size=6)
    c = rng.uniform(0.1, 0.5, r) * rng.choice([-1.0, 1.0], r)
    b = rng.normal(size=n)
    F = linalg.factorize(rows, cols, vals, n, method)
    x = linalg.woodbury_solve(F, b, W, c)
    np.testing.assert_allclose(x, np.linalg.solve(A + W @ np.diag(c) @ W.T, b), rtol=1e-9, atol=1e-12)
    assert np.array_equal(linalg.woodbury_solve(F, b, W[:, :0], c[:0]), F.solve(b))


@pytest.mark.parametrize("scipy_path", [True, False])
def test_row_sums_match_bincount_to_the_bit(monkeypatch, scipy_path):
    """RowSums sums each row in its entries' order, as np.bincount does (its
    callers keep their bits): duplicate entries, rows given out of order,
    empty rows, zero weights on an infinite entry (NaN, as bincount's)."""
    if scipy_path and not linalg.HAVE_SCIPY:
        pytest.skip("scipy not importable")
    monkeypatch.setattr(linalg, "HAVE_SCIPY", scipy_path)
    rng = np.random.default_rng(3)
    n_rows, n_cols, k = 40, 300, 5000
    rows = rng.integers(0, n_rows - 3, k)  # the last rows stay empty
    cols = rng.integers(0, n_cols, k)
    vals = rng.normal(size=k) * 10.0 ** rng.integers(-8, 8, k)
    vals[:7] = 0.0
    v = rng.normal(size=n_cols) * 10.0 ** rng.integers(-8, 8, n_cols)
    v[cols[0]] = np.inf
    with np.errstate(invalid="ignore"):
        got = linalg.RowSums(rows, cols, vals, n_rows, n_cols)(v)
        expected = np.bincount(rows, vals * v[cols], n_rows)
    assert np.isnan(expected[rows[0]]) and np.all(expected[-3:] == 0.0)
    finite = ~np.isnan(expected)
    np.testing.assert_array_equal(np.isnan(got), ~finite)
    assert np.array_equal(got[finite].view(np.int64), expected[finite].view(np.int64))  # bits, signed zeros


@pytest.mark.parametrize("scipy_path", [True, False])
def test_group_sums_match_bincount_to_the_bit(monkeypatch, scipy_path):
    """group_sums adds each group's columns in their order, as the bincount
    it stands for (the rigid stencils' reduction keeps its bits); groups
    without columns give zeros."""
    if scipy_path and not linalg.HAVE_SCIPY:
        pytest.skip("scipy not importable")
    monkeypatch.setattr(linalg, "HAVE_SCIPY", scipy_path)
    rng = np.random.default_rng(4)
    k, m, n_groups = 36, 3000, 50
    groups = rng.integers(0, n_groups - 2, m)
    X = rng.normal(size=(k, m)) * 10.0 ** rng.integers(-8, 8, (k, m))
    got = linalg.group_sums(groups, n_groups, X)
    where = (groups + n_groups * np.arange(k)[:, None]).ravel()
    expected = np.bincount(where, X.ravel(), k * n_groups).reshape(k, n_groups)
    assert got.shape == (k, n_groups) and np.all(expected[:, -2:] == 0.0)
    assert np.array_equal(np.asarray(got).view(np.int64), expected.view(np.int64))
    assert linalg.group_sums(groups[:0], n_groups, X[:, :0]).shape == (k, n_groups)
