"""Linear algebra: batched PSD projection and the linear solve of the systems
assembled by :mod:`solver.assembly`.

With scipy: dense Cholesky for tiny systems, banded Cholesky in a reverse
Cuthill-McKee order while the band stays narrow (meshes of a few shapes),
the multifrontal sparse Cholesky of solver/linsolve/sparse_cholesky.py beyond (nested
dissection; faster than SuperLU), SuperLU for a system that is not positive
definite.  numpy only (stock Blender): dense for tiny systems, the sparse
Cholesky beyond (faster than the block-tridiagonal Cholesky in band order it
replaced at every measured size); a matrix that is not positive definite
(only when Newton does not require it to be) is solved by LU up to
DENSE_LIMIT DOFs, Jacobi-preconditioned CG beyond.

``solve(..., require_pd=True)`` raises :class:`NotPositiveDefinite` when the
factorization (or CG) finds the matrix is not positive definite: Newton uses
it to try the exact Hessian first and fall back to the projected one.
"""

import weakref
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .sparse_cholesky import NotPositiveDefiniteFront, SparseCholesky, SparseCholeskyState, _common_prefix

try:  # scipy is optional: stock Blender ships numpy only
    import scipy.linalg.lapack as _lapack
    import scipy.sparse as _sp
    import scipy.sparse.linalg as _spla
    from scipy.sparse.csgraph import reverse_cuthill_mckee as _rcm

    HAVE_SCIPY = True
except ImportError:  # pragma: no cover - exercised by hiding scipy in tests
    _lapack = _sp = _spla = _rcm = None
    HAVE_SCIPY = False

DENSE_LIMIT = 3000  # numpy path: dense solve up to this many DOFs
TINY_DENSE = 128  # dense Cholesky (numpy path: dense Cholesky test + LU) up to this many DOFs
BAND_FLOPS = 4e8  # scipy path: banded Cholesky while n * band^2 is below this (S3-64: 2.9e8, 27 ms)
REORDER_GROWTH = 1.25  # recompute the band ordering when the band grows by this factor


class NotPositiveDefinite(np.linalg.LinAlgError):
    """The matrix handed to solve(require_pd=True) is not positive definite."""


def project_psd(H, deficit=None):
    """Clamp negative eigenvalues of symmetric matrices (n, k, k) to zero.

    deficit (optional list): gets (which (m,) indices of the matrices that
    had a negative eigenvalue, N (m, k, k) = projected - H for them, PSD)
    appended, what the projection added (see Triplets.add_deficit)."""
    if len(H) == 0:
        return H
    H = 0.5 * (H + np.swapaxes(H, 1, 2))
    w, V = np.linalg.eigh(H)
    if np.all(w >= 0.0):
        return H
    if deficit is not None:
        which = np.flatnonzero(w.min(axis=1) < 0.0)
        deficit.append((which, _from_eigen(V[which], np.maximum(-w[which], 0.0))))
    return _from_eigen(V, np.maximum(w, 0.0))


def _from_eigen(V, w):
    """Symmetric matrices (n, k, k) V diag(w) V^T from eigenvector columns V
    (n, k, k) and eigenvalues w (n, k)."""
    return np.einsum("nij,nj,nkj->nik", V, w, V)


@dataclass(frozen=True)
class BandOrderingState:
    """What a :class:`BandOrdering` keeps between solves: ``BandOrdering.state()``
    / ``BandOrdering.from_state(state)`` (a checkpoint stores it)."""

    perm: np.ndarray | None  # (n,) DOF at each position of the band ordering (None: none yet)
    band: int  # bandwidth when it was computed
    sparse_n: int | None  # systems of this size go to the sparse Cholesky
    sparse: SparseCholeskyState


class BandOrdering:
    """Orderings kept between the solves of one simulation: the Hessian's
    pattern changes only where contacts come and go, so one ordering serves
    many Newton iterations.  The reverse Cuthill-McKee permutation is
    recomputed when the system size changes or the band grows by
    REORDER_GROWTH; ``sparse`` is the sparse Cholesky with its nested
    dissection and symbolic analysis (see SparseCholesky for its reuse)."""

    def __init__(self):
        self.perm = None  # (n,) DOF at each position of the ordering
        self.inv = None  # (n,) position of each DOF in the ordering
        self.band = 0  # bandwidth when the ordering was computed
        self.sparse = SparseCholesky()
        # systems of this size go to the sparse Cholesky without a look at the band: it was
        # too wide once (a simulation's band grows with its contacts and seldom shrinks back)
        self.sparse_n = None

    def state(self) -> BandOrderingState:
        """The state (copies of its arrays)."""
        perm = None if self.perm is None else self.perm.copy()
        return BandOrderingState(perm, int(self.band), self.sparse_n, self.sparse.state())

    @classmethod
    def from_state(cls, state: BandOrderingState):
        """An ordering continuing from ``state`` with the same bits."""
        out = cls()
        if state.perm is not None:
            out.perm = np.array(state.perm, np.intp)
            out.inv = np.empty(len(out.perm), np.intp)
            out.inv[out.perm] = np.arange(len(out.perm))
        out.band = int(state.band)
        out.sparse_n = state.sparse_n
        out.sparse = SparseCholesky.from_state(state.sparse)
        return out

    def banded(self, rows, cols, n, limit):
        """(band-storage positions of the entries, bandwidth) when the banded
        Cholesky is to be used (n * (band + 1)^2 <= limit), else None (and
        for every later system of this size); see :func:`_band_storage`."""
        if self.sparse_n == n:
            return None
        _, _, band = self.band_of(rows, cols, n)
        if n * (band + 1) ** 2 <= limit:
            return _band_entries(self).positions(n, band, len(rows)), band
        self.sparse_n = n
        return None

    def band_of(self, rows, cols, n):
        """(permuted rows, permuted cols, bandwidth) under the current ordering
        (views of buffers the next call reuses: the entries of the prefix its
        pattern shares with this one are not permuted again)."""
        if self.inv is None or len(self.inv) != n:
            self._reorder(rows, cols, n)
        entries = _band_entries(self)
        pr, pc, band = entries.permute(self.inv, rows, cols)
        if band > REORDER_GROWTH * self.band + 2:
            self._reorder(rows, cols, n)
            pr, pc, band = entries.permute(self.inv, rows, cols)
        return pr, pc, band

    def _reorder(self, rows, cols, n):
        graph = _sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(n, n))
        self.perm = _rcm(graph, symmetric_mode=True).astype(np.intp)
        self.inv = np.empty(n, np.intp)
        self.inv[self.perm] = np.arange(n)
        self.band = int(np.abs(self.inv[rows] - self.inv[cols]).max()) if len(rows) else 0


_BAND_ENTRIES = weakref.WeakKeyDictionary()  # BandOrdering -> _BandEntries (not part of its state)


def _band_entries(ordering):
    if ordering not in _BAND_ENTRIES:
        _BAND_ENTRIES[ordering] = _BandEntries()
    return _BAND_ENTRIES[ordering]


class _BandEntries:
    """The last pattern's entries in band order, kept between Newton's systems:
    permuted rows and columns, the running maximum of |row - column| (the
    band of every prefix) and each entry's position in the band storage, in
    buffers reused from call to call.  Newton's patterns share a long prefix
    (the inertia diagonal and the elastic blocks): only the entries after it
    are permuted again, and their positions recomputed (all of them when
    the band changes).  Without it each system cost two gathers, a
    subtraction and a compression of every entry, in fresh arrays (S3-32:
    2.5 ms a system)."""

    def __init__(self):
        self.rows = self.cols = self.inv = None  # the last pattern and its ordering
        self.pr = self.pc = self.reach = self.pos = np.zeros(0, np.intp)
        self.pos_valid, self.pos_band, self.pos_n = 0, -1, -1  # positions computed for pos[:pos_valid]

    def permute(self, inv, rows, cols):
        """(pr, pc, band) of the pattern (rows, cols) under the ordering inv."""
        same = 0
        if inv is self.inv and self.rows is not None:
            same = _common_prefix(rows, cols, self.rows, self.cols)
        m = len(rows)
        if len(self.pr) < m:
            self._grow(max(m, 5 * len(self.pr) // 4), same)
        np.take(inv, rows[same:], out=self.pr[same:m])
        np.take(inv, cols[same:], out=self.pc[same:m])
        reach = self.reach[same:m]
        np.abs(self.pr[same:m] - self.pc[same:m], out=reach)
        if same:
            np.maximum(reach, self.reach[same - 1], out=reach)
        np.maximum.accumulate(reach, out=reach)
        self.rows, self.cols, self.inv = rows, cols, inv
        self.pos_valid = min(self.pos_valid, same)
        return self.pr[:m], self.pc[:m], int(self.reach[m - 1]) if m else 0

    def positions(self, n, band, m):
        """(m,) position of each entry of the last pattern in the band storage
        ab[band + i - j, j] flattened, (band + 1) n for the entries below the
        diagonal (a sink :func:`_band_storage` drops)."""
        if (band, n) != (self.pos_band, self.pos_n):
            self.pos_valid, self.pos_band, self.pos_n = 0, band, n
        start = self.pos_valid
        pr, pc = self.pr[start:m], self.pc[start:m]
        self.pos[start:m] = np.where(pr <= pc, (band + pr - pc) * n + pc, (band + 1) * n)
        self.pos_valid = m
        return self.pos[:m]

    def _grow(self, size, keep):
        for name in ("pr", "pc", "reach", "pos"):
            grown = np.empty(size, np.intp)
            grown[:keep] = getattr(self, name)[:keep]
            setattr(self, name, grown)


def solve(rows, cols, vals, rhs, method="auto", require_pd=False, ordering=None, expected=None):
    """Solve the symmetric system given as COO triplets (duplicates summed).

    method: 'auto' (scipy if importable), 'scipy' or 'numpy'.
    require_pd: raise NotPositiveDefinite when the factorization shows the
    matrix is not positive definite.  ordering: a BandOrdering reused
    between calls; expected: vertex stencils (s, k) that may couple soon,
    for the sparse Cholesky's analysis (see SparseCholesky).
    """
    if method == "auto":
        method = "scipy" if HAVE_SCIPY else "numpy"
    n = len(rhs)
    # the Cholesky factorization of factorize, except for a tiny system that need
    # not be definite on the numpy path: the dense LU at once, no Cholesky test first
    if method == "scipy" or n > TINY_DENSE or require_pd:
        try:
            return factorize(rows, cols, vals, n, method, ordering, expected).solve(rhs)
        except NotPositiveDefinite:
            if require_pd:
                raise
    # not positive definite: dense LU for small systems, else SuperLU (scipy) or PCG
    if n <= (TINY_DENSE if method == "scipy" else DENSE_LIMIT):
        return _dense_solve(_dense(rows, cols, vals, n), rhs)
    if method == "scipy":
        return _superlu(rows, cols, vals, rhs)
    return _pcg(rows, cols, vals, rhs, require_pd=require_pd)


@dataclass(frozen=True)
class Factorization:
    """The Cholesky factorization A = L L^T of a positive definite matrix.

    solve(b): A^-1 b for b (n,) or (n, r); half(B): L^-1 B (in the
    factorization's order) for B (n,) or (n, r), so that B^T A^-1 B =
    half(B)^T half(B) at half the cost of solve (a low-rank update's small
    system); back(Y): L^-T Y for Y (n,) or (n, r) in the factorization's
    order, returned in the matrix's, so that solve(B) = back(half(B))."""

    solve: Callable
    half: Callable
    back: Callable


def factorize(rows, cols, vals, n, method="auto", ordering=None, expected=None):
    """Factorization of the (n, n) positive definite matrix given by COO
    triplets, by the solver :func:`solve` would use for it (dense, banded or
    sparse Cholesky); raises NotPositiveDefinite when it is not.  expected:
    see :func:`solve`."""
    if method == "auto":
        method = "scipy" if HAVE_SCIPY else "numpy"
    ordering = ordering or BandOrdering()
    if method == "scipy" and not HAVE_SCIPY:
        raise ImportError("linear_solver='scipy' requested but scipy is not importable")
    if n <= TINY_DENSE:
        A = _dense(rows, cols, vals, n)
        if method == "scipy":
            c, info = _lapack.dpotrf(A, lower=True, clean=False, overwrite_a=True)
            if info != 0:
                raise NotPositiveDefinite("dense Cholesky failed")
            return Factorization(
                lambda b: _lapack.dpotrs(c, b, lower=True)[0],
                lambda B: _lapack.dtrtrs(c, B, lower=1)[0],
                lambda Y: _lapack.dtrtrs(c, Y, lower=1, trans=1)[0],
            )
        try:
            L = np.linalg.cholesky(A)
        except np.linalg.LinAlgError:
            raise NotPositiveDefinite("dense Cholesky failed") from None
        return Factorization(
            lambda b: _dense_solve(A, b), lambda B: np.linalg.solve(L, B), lambda Y: np.linalg.solve(L.T, Y)
        )
    if method == "scipy":
        banded = ordering.banded(rows, cols, n, BAND_FLOPS)
        if banded:
            c, info = _lapack.dpbtrf(_band_storage(*banded, vals, n), lower=0, overwrite_ab=True)
            if info != 0:
                raise NotPositiveDefinite("banded Cholesky failed")
            perm, inv = ordering.perm, ordering.inv  # A[perm][:, perm] = U^T U
            return Factorization(
                lambda b: _lapack.dpbtrs(c, b[perm], lower=0)[0][inv],
                lambda B: _lapack.dtbtrs(c, B[perm], uplo="U", trans="T")[0],
                lambda Y: _lapack.dtbtrs(c, Y, uplo="U", trans="N")[0][inv],
            )
    try:
        F = ordering.sparse.factor(rows, cols, vals, n, expected)
    except NotPositiveDefiniteFront:
        raise NotPositiveDefinite("sparse Cholesky failed") from None
    return Factorization(F.solve, F.half, F.back)


def woodbury_solve(factor, b, W, curvature, swept=False):
    """x (n,) with (A + W diag(curvature) W^T) x = b, on the factorization of
    A = L L^T (a :class:`Factorization`): W (n, r), curvature (r,) nonzero.
    Woodbury, on the forward-swept y = L^-1 b and Y = L^-1 W: with the small
    system S = diag(1/curvature) + Y^T Y, x = L^-T (y - Y S^-1 Y^T y).  Costs
    the forward sweeps of b and of W's r columns and one backward sweep (a
    solve and a half: two solves before).  None when S is singular.  swept: W
    is given as L^-1 W already (its columns' sweeps done once for many solves)."""
    if W.shape[1] == 0:
        return factor.solve(b)
    y = factor.half(b)
    Y = W if swept else factor.half(W)
    S = Y.T @ Y
    S.flat[:: len(S) + 1] += 1.0 / curvature  # diag(1/curvature) + Y^T Y, no (r, r) diagonal built
    try:
        t = np.linalg.solve(S, Y.T @ y)
    except np.linalg.LinAlgError:
        return None
    return factor.back(y - Y @ t)


class RowSums:
    """v -> M v for a fixed sparse matrix M (n_rows, n_cols) given as entries
    (rows, cols, vals), each row summed over its entries in their order: the
    sums np.bincount(rows, vals * v[cols], n_rows) takes, to the bit.  With
    scipy by its CSR product (rows sorted stably: each row's entries keep
    their order; R1000's B^T g, 486k entries: 1.2 ms against 4.3), else by
    that bincount."""

    def __init__(self, rows, cols, vals, n_rows, n_cols):
        self.n_rows = n_rows
        if HAVE_SCIPY:
            order = np.argsort(rows, kind="stable")
            starts = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=n_rows))])
            self._csr = _sp.csr_matrix((vals[order], cols[order], starts), shape=(n_rows, n_cols))
        else:  # pragma: no cover - exercised by hiding scipy in tests
            self._csr, self._entries = None, (rows, cols, vals)

    def __call__(self, v):
        if self._csr is not None:
            return self._csr @ v
        rows, cols, vals = self._entries
        return np.bincount(rows, vals * v[cols], self.n_rows)


def group_sums(groups, n_groups, X):
    """(k, n_groups): the columns of X (k, m) summed per group (groups (m,)),
    each group's in their order: the sums of np.bincount((groups + n_groups
    * arange(k)[:, None]).ravel(), X.ravel(), k * n_groups), to the bit.
    With scipy by a product with the (n_groups, m) CSC matrix of ones at
    (groups[j], j), which adds the columns in turn without sorting them
    (R1000's stencil blocks, 36 x 18k: a third of bincount's instructions)."""
    k, m = X.shape
    if not HAVE_SCIPY or m == 0:
        where = (groups + n_groups * np.arange(k)[:, None]).ravel()
        return np.bincount(where, X.ravel(), k * n_groups).reshape(k, n_groups)
    ones = _sp.csc_matrix((np.ones(m), groups, np.arange(m + 1)), shape=(n_groups, m))
    return (ones @ X.T).T


def _band_storage(positions, band, vals, n):
    """LAPACK upper band storage ab[band + i - j, j] (band + 1, n) of the
    triplets with values vals at band-storage positions (see
    _BandEntries.positions; the entries below the diagonal go to a last
    slot, dropped)."""
    return np.bincount(positions, weights=vals, minlength=(band + 1) * n + 1)[:-1].reshape(band + 1, n)


def _dense(rows, cols, vals, n):
    return np.bincount(rows * n + cols, weights=vals, minlength=n * n).reshape(n, n)


def _superlu(rows, cols, vals, rhs, require_pd=False):
    """Sparse LU pivoting on the diagonal only (symmetric mode): the scipy
    path's fallback when a Cholesky factorization failed and require_pd is
    off (positive definite systems go to the sparse Cholesky, which is
    faster: S3-64 31 ms, S4 9 ms against 56 and 19).  A is positive
    definite iff every pivot (diagonal of U) is positive; when one is not,
    require_pd raises, otherwise partial pivoting solves the system."""
    n = len(rhs)
    A = _sp.csc_matrix((vals, (rows, cols)), shape=(n, n))
    try:
        lu = _spla.splu(A, permc_spec="MMD_AT_PLUS_A", diag_pivot_thresh=0.0, options={"SymmetricMode": True})
        definite = np.array_equal(lu.perm_r, lu.perm_c) and bool(np.all(lu.U.diagonal() > 0.0))
    except RuntimeError:  # exactly singular pivot
        lu, definite = None, False
    if definite:
        return lu.solve(rhs)
    if require_pd:
        raise NotPositiveDefinite("sparse LU found a non-positive pivot")
    return _spla.spsolve(A, rhs, permc_spec="MMD_AT_PLUS_A")


def _dense_solve(A, rhs):
    """One LU solve (numpy has no triangular solver, so Cholesky would cost
    three factorizations); a tiny diagonal shift rescues a singular matrix."""
    try:
        return np.linalg.solve(A, rhs)
    except np.linalg.LinAlgError:
        return np.linalg.solve(A + 1e-12 * np.abs(A).max() * np.eye(len(A)), rhs)


def _pcg(rows, cols, vals, rhs, rtol=1e-10, max_iter=None, require_pd=False):
    """Jacobi-preconditioned conjugate gradients, numpy only."""
    n = len(rhs)

    def matvec(x):
        return np.bincount(rows, weights=vals * x[cols], minlength=n)

    diag = np.bincount(rows[rows == cols], weights=vals[rows == cols], minlength=n)
    inv_diag = 1.0 / np.where(diag > 0, diag, 1.0)
    x, _, _, curvature_ok = _cg(matvec, lambda r: inv_diag * r, rhs, rtol, max_iter or 10 * n)
    if require_pd and not curvature_ok:
        raise NotPositiveDefinite("CG met non-positive curvature")
    return x


def conjugate_gradients(matvec, precondition, rhs, rtol, max_iter):
    """Preconditioned CG for SPD systems. Returns (x, converged, iterations)."""
    return _cg(matvec, precondition, rhs, rtol, max_iter)[:3]


def _cg(matvec, precondition, rhs, rtol, max_iter):
    """CG; returns (x, converged, iterations, no non-positive curvature met).
    It stops at the first non-positive curvature p^T A p <= 0."""
    x = np.zeros(len(rhs))
    r = rhs.copy()
    z = precondition(r)
    p = z.copy()
    rz = r @ z
    tol = rtol * np.linalg.norm(rhs)
    for it in range(max_iter):
        if np.linalg.norm(r) <= tol:
            return x, True, it, True
        Ap = matvec(p)
        pAp = p @ Ap
        if not pAp > 0.0:
            return x, False, it, False
        alpha = rz / pAp
        x += alpha * p
        r -= alpha * Ap
        z = precondition(r)
        rz_new = r @ z
        p = z + (rz_new / rz) * p
        rz = rz_new
    return x, bool(np.linalg.norm(r) <= tol), max_iter, True
