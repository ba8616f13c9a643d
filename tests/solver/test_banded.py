"""numpy-only banded Cholesky (solver/banded.py): the reverse Cuthill-McKee
order narrows a shuffled band, and the block-tridiagonal Cholesky solves
SPD band systems like numpy's dense solve and rejects indefinite ones."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solver import banded


def band_spd(rng, n, band, shuffle=True):
    """SPD matrix (dense) with entries only within `band` of the diagonal,
    optionally with rows/columns shuffled; returns (A, rows, cols, vals)."""
    i, j = np.triu_indices(n, 1)
    near = (j - i) <= band
    A = np.zeros((n, n))
    A[i[near], j[near]] = rng.normal(size=near.sum())
    A += A.T
    A[np.arange(n), np.arange(n)] = np.abs(A).sum(axis=1) + rng.uniform(0.5, 2.0, n)
    if shuffle:
        p = rng.permutation(n)
        A = A[np.ix_(p, p)]
    rows, cols = np.nonzero(A)
    return A, rows, cols, A[rows, cols]


def bandwidth(perm, rows, cols):
    inv = np.empty(len(perm), np.intp)
    inv[perm] = np.arange(len(perm))
    return int(np.abs(inv[rows] - inv[cols]).max())


@pytest.mark.parametrize("n, band", [(200, 1), (300, 4), (500, 9)])
def test_rcm_is_a_permutation_that_narrows_a_shuffled_band(n, band):
    rng = np.random.default_rng(n)
    _, rows, cols, _ = band_spd(rng, n, band)
    perm = banded.reverse_cuthill_mckee(rows, cols, n)
    assert np.array_equal(np.sort(perm), np.arange(n))
    assert bandwidth(np.arange(n), rows, cols) > 10 * band  # shuffled: wide
    assert bandwidth(perm, rows, cols) <= 2 * band  # recovered


def test_rcm_handles_components_and_isolated_vertices():
    # two separate paths 0-1-2 and 3-4, vertex 5 only on the diagonal
    rows = np.array([0, 1, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4])
    cols = np.array([1, 0, 2, 1, 4, 3, 5, 0, 1, 2, 3, 4])
    perm = banded.reverse_cuthill_mckee(rows, cols, 6)
    assert sorted(perm.tolist()) == list(range(6))
    assert bandwidth(perm, rows, cols) == 1


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 260), band=st.integers(0, 60), seed=st.integers(0, 2**32 - 1))
def test_block_cholesky_solves_spd_band_systems(n, band, seed):
    rng = np.random.default_rng(seed)
    band = min(band, max(n - 1, 0))
    A, rows, cols, vals = band_spd(rng, n, band, shuffle=False)
    b = rng.normal(size=n)
    x = banded.block_tridiagonal_cholesky_solve(rows, cols, vals, b, band)
    np.testing.assert_allclose(A @ x, b, rtol=0, atol=1e-10 * max(1.0, np.abs(b).max()))


def test_block_cholesky_rejects_an_indefinite_matrix():
    rng = np.random.default_rng(3)
    _, rows, cols, vals = band_spd(rng, 150, 5, shuffle=False)
    vals = vals.copy()
    k = np.flatnonzero((rows == 120) & (cols == 120))[0]
    vals[k] = -vals[k]  # one negative diagonal entry, deep in block 2
    with pytest.raises(banded.NotPositiveDefiniteBlock):
        banded.block_tridiagonal_cholesky_solve(rows, cols, vals, np.ones(150), 5)
