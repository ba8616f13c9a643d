"""Assembly (solver/assembly.py): per-stencil gradients and Hessians scattered
into a global gradient and COO triplets, against a dense accumulation written
here, and the elimination of fixed DOFs."""

import numpy as np
import pytest
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


@pytest.mark.parametrize("whole_up_to", [0, 10**9])
def test_system_is_eliminate_fixed_of_the_arrays(whole_up_to, monkeypatch):
    """Triplets.system skips the blocks whose DOFs are all free: the same
    arrays as eliminating the fixed DOFs from all of them, whichever blocks
    a fixed DOF touches (stencils, a pattern with its DOFs, one without,
    the diagonal), and the plain arrays when nothing is fixed; small systems
    (all at once) and large ones (block by block) alike."""
    monkeypatch.setattr(assembly, "WHOLE_ELIMINATION", whole_up_to)
    rng = np.random.default_rng(3)
    n_v = 9
    T = assembly.Triplets(2 * n_v)
    T.add_diagonal(np.arange(2 * n_v), rng.normal(size=2 * n_v))
    free_idx = rng.integers(0, 4, (6, 3))  # vertices 0-3 only
    free_dofs = assembly.stencil_dofs(free_idx)
    T.add_pattern(*assembly.block_pattern(free_idx), rng.normal(size=(6, 6, 6)), free_dofs)
    T.add_stencils(rng.integers(0, n_v, (5, 2)), rng.normal(size=(5, 4)), rng.normal(size=(5, 4, 4)))
    T.add_pattern(*assembly.block_pattern(np.array([[8], [1], [5], [2]])), rng.normal(size=(4, 2, 2)))
    for fixed_vertices in ([], [8], [1, 8], [0, 1, 2, 3]):
        fixed = np.zeros(2 * n_v, bool)
        fixed[np.repeat(np.asarray(fixed_vertices, int), 2) * 2 + np.tile([0, 1], len(fixed_vertices))] = True
        expected = assembly.eliminate_fixed(*T.arrays(), fixed)
        for got, want in zip(T.system(fixed), expected, strict=True):
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("seed", range(4))
def test_few_gradient_dofs_are_summed_to_the_bincounts_bits(seed, monkeypatch):
    """add_gradient_at's sums over the distinct DOFs alone (few DOFs) give the
    bits of the n_dof-long bincounts: repeated DOFs, -0.0 terms, sums that
    cancel, on top of a gradient already summed."""
    rng = np.random.default_rng(seed)
    n_dof = 400
    dense = np.where(rng.random(n_dof) < 0.5, 0.0, rng.normal(size=n_dof))
    calls = []
    for m in (6, 12, 30, 3, 48):
        dofs = rng.integers(0, 40, m)  # a narrow range: most DOFs repeat
        g = rng.normal(size=m)
        g[rng.random(m) < 0.2] = -0.0
        g[1] = -g[0] if dofs[1] == dofs[0] else g[1]
        calls.append((dofs, g))

    def scattered(compact):
        monkeypatch.setattr(assembly, "COMPACT_SCATTER", compact)
        T = assembly.Triplets(n_dof)
        T.add_dense_gradient(dense)
        for dofs, g in calls:
            assert (len(dofs) * compact <= n_dof) == (compact == 8)  # the path asked for
            T.add_gradient_at(dofs, g)
        return T.grad.tobytes(), T.magnitude.tobytes()

    assert scattered(8) == scattered(10**9)
