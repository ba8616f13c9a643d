"""Linear algebra: batched PSD projection, sparse assembly from COO triplets,
and the linear solve (scipy sparse direct when importable, numpy-only
fallback otherwise: dense LU for small systems, Jacobi-preconditioned
CG for large ones)."""
import numpy as np

try:  # scipy is optional: stock Blender ships numpy only
    import scipy.sparse as _sp
    import scipy.sparse.linalg as _spla
    HAVE_SCIPY = True
except ImportError:  # pragma: no cover - exercised by hiding scipy in tests
    _sp = None
    _spla = None
    HAVE_SCIPY = False

DENSE_LIMIT = 3000  # numpy path: dense LU up to this many DOFs
TINY_DENSE = 200    # 'auto': below this many DOFs a dense solve beats sparse set-up


def project_psd(H):
    """Clamp negative eigenvalues of symmetric matrices (n, k, k) to zero."""
    if len(H) == 0:
        return H
    H = 0.5 * (H + np.swapaxes(H, 1, 2))
    w, V = np.linalg.eigh(H)
    if np.all(w >= 0.0):
        return H
    w = np.maximum(w, 0.0)
    return np.einsum("nij,nj,nkj->nik", V, w, V)


def stencil_dofs(idx):
    """DOF indices (n, 2k) of vertex stencils idx (n, k)."""
    return (2 * idx[:, :, None] + np.arange(2)).reshape(len(idx), -1)


def block_pattern(idx):
    """COO (rows, cols) of the local blocks of vertex stencils idx (n, k),
    each (n * 4k^2,), in the row-major order of H (n, 2k, 2k)."""
    dofs = stencil_dofs(idx)
    k = dofs.shape[1]
    return np.repeat(dofs, k, axis=1).ravel(), np.tile(dofs, (1, k)).ravel()


class Triplets:
    """Accumulates COO triplets of a symmetric global matrix and a gradient."""

    def __init__(self, n_dof):
        self.n_dof = n_dof
        self.rows, self.cols, self.vals = [], [], []
        self.grad = np.zeros(n_dof)

    def add_blocks(self, idx, H):
        """Scatter local Hessians H (n, 2k, 2k) of vertex stencils idx (n, k)."""
        if len(idx) == 0:
            return
        self.add_pattern(*block_pattern(idx), H)

    def add_pattern(self, rows, cols, H):
        """Scatter blocks H whose (rows, cols) pattern is precomputed (block_pattern)."""
        self.rows.append(rows)
        self.cols.append(cols)
        self.vals.append(H.ravel())

    def add_diagonal(self, dofs, vals):
        self.rows.append(dofs)
        self.cols.append(dofs)
        self.vals.append(vals)

    def add_gradient(self, idx, g):
        """Scatter local gradients g (n, 2k) of vertex stencils idx (n, k)."""
        if len(idx) == 0:
            return
        self.add_gradient_at(stencil_dofs(idx).ravel(), g)

    def add_gradient_at(self, dofs, g):
        """Scatter gradients g (n, 2k) at precomputed flat DOF indices (n * 2k,)."""
        self.grad += np.bincount(dofs, weights=g.ravel(), minlength=self.n_dof)

    def arrays(self):
        return (np.concatenate(self.rows), np.concatenate(self.cols),
                np.concatenate(self.vals))


def eliminate_fixed(rows, cols, vals, fixed_mask):
    """Replace the rows and columns of fixed DOFs by identity."""
    keep = ~(fixed_mask[rows] | fixed_mask[cols])
    fixed = np.flatnonzero(fixed_mask)
    return (np.concatenate([rows[keep], fixed]), np.concatenate([cols[keep], fixed]),
            np.concatenate([vals[keep], np.ones(len(fixed))]))


def solve(rows, cols, vals, rhs, method="auto"):
    """Solve the SPD(-ish) system given as COO triplets (duplicates summed)."""
    n = len(rhs)
    if method == "auto":
        method = "scipy" if HAVE_SCIPY and n > TINY_DENSE else "numpy"
    if method == "scipy":
        if not HAVE_SCIPY:
            raise ImportError("linear_solver='scipy' requested but scipy is not importable")
        A = _sp.csc_matrix((vals, (rows, cols)), shape=(n, n))
        return _spla.spsolve(A, rhs, permc_spec="MMD_AT_PLUS_A")
    if n <= DENSE_LIMIT:
        A = np.bincount(rows * n + cols, weights=vals, minlength=n * n).reshape(n, n)
        return _dense_spd_solve(A, rhs)
    return _pcg(rows, cols, vals, rhs)


def _dense_spd_solve(A, rhs):
    """One LU solve (numpy has no triangular solver, so Cholesky would cost
    three factorizations); a tiny diagonal shift rescues a singular matrix."""
    try:
        return np.linalg.solve(A, rhs)
    except np.linalg.LinAlgError:
        return np.linalg.solve(A + 1e-12 * np.abs(A).max() * np.eye(len(A)), rhs)


def _pcg(rows, cols, vals, rhs, rtol=1e-10, max_iter=None):
    """Jacobi-preconditioned conjugate gradients, numpy only."""
    n = len(rhs)

    def matvec(x):
        return np.bincount(rows, weights=vals * x[cols], minlength=n)

    diag = np.bincount(rows[rows == cols], weights=vals[rows == cols], minlength=n)
    inv_diag = 1.0 / np.where(diag > 0, diag, 1.0)
    return conjugate_gradients(matvec, lambda r: inv_diag * r, rhs, rtol, max_iter or 10 * n)[0]


def conjugate_gradients(matvec, precondition, rhs, rtol, max_iter):
    """Preconditioned CG for SPD systems. Returns (x, converged, iterations)."""
    x = np.zeros(len(rhs))
    r = rhs.copy()
    z = precondition(r)
    p = z.copy()
    rz = r @ z
    tol = rtol * np.linalg.norm(rhs)
    for it in range(max_iter):
        if np.linalg.norm(r) <= tol:
            return x, True, it
        Ap = matvec(p)
        alpha = rz / (p @ Ap)
        x += alpha * p
        r -= alpha * Ap
        z = precondition(r)
        rz_new = r @ z
        p = z + (rz_new / rz) * p
        rz = rz_new
    return x, bool(np.linalg.norm(r) <= tol), max_iter
