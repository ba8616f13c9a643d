"""Assembly (solver/assembly.py): per-stencil gradients and Hessians scattered
into a global gradient and COO triplets, against a dense accumulation written
here, and the elimination of fixed DOFs."""

import numpy as np
from test_linalg import spd_coo

from solver import assembly


def test_triplets_assembly_matches_dense_accumulation():
    rng = np.random.default_rng(1)
    n_v = 7
    T = assembly.Triplets(2 * n_v)
    A = np.zeros((2 * n_v, 2 * n_v))
    g = np.zeros(2 * n_v)
    for k in (1, 2, 3):
        idx = rng.integers(0, n_v, (5, k))
        H = rng.normal(size=(5, 2 * k, 2 * k))
        gl = rng.normal(size=(5, 2 * k))
        T.add_stencils(idx, gl, H)
        for s in range(5):
            dofs = np.array([[2 * v, 2 * v + 1] for v in idx[s]]).ravel()
            for a in range(2 * k):
                g[dofs[a]] += gl[s, a]
                for b in range(2 * k):
                    A[dofs[a], dofs[b]] += H[s, a, b]
    n_triplets = len(T.arrays()[0])
    T.add_stencils(np.zeros((0, 3), int), np.zeros((0, 6)), np.zeros((0, 6, 6)))  # no-op
    assert len(T.arrays()[0]) == n_triplets
    T.add_diagonal(np.arange(2 * n_v), np.arange(2 * n_v, dtype=float))
    A += np.diag(np.arange(2 * n_v, dtype=float))
    r, c, v = T.arrays()
    B = np.zeros_like(A)
    np.add.at(B, (r, c), v)
    assert np.allclose(B, A) and np.allclose(T.grad, g)


def test_eliminate_fixed_gives_identity_rows():
    rng = np.random.default_rng(2)
    rows, cols, vals, A = spd_coo(rng, 20)
    fixed = np.zeros(20, bool)
    fixed[[0, 5, 19]] = True
    r, c, v = assembly.eliminate_fixed(rows, cols, vals, fixed)
    B = np.zeros((20, 20))
    np.add.at(B, (r, c), v)
    expected = A.copy()
    expected[fixed] = 0
    expected[:, fixed] = 0
    expected[fixed, fixed] = 1
    assert np.allclose(B, expected)
