"""Assembly of the global gradient and Hessian from per-stencil pieces.

Energies compute gradients (n, 2k) and Hessians (n, 2k, 2k) of vertex
stencils idx (n, k); :class:`Triplets` scatters them once into a global
gradient (bincount) and COO triplets of the Hessian, whose (rows, cols)
patterns (:func:`block_pattern`) can be precomputed per stencil set.
:func:`eliminate_fixed` turns the rows and columns of fixed DOFs into the
identity before the solve (:mod:`solver.linsolve.linalg`).
"""

import numpy as np

from .linsolve import sorted_unique


def stencil_dofs(idx):
    """DOF indices (n, 2k) of vertex stencils idx (n, k)."""
    return (2 * idx[:, :, None] + np.arange(2)).reshape(len(idx), -1)


_BLOCK_INDEX = {}  # k -> (row pick, col pick) of a (2k x 2k) block, row-major


def block_pattern(idx):
    """COO (rows, cols) of the local blocks of vertex stencils idx (n, k),
    each (n * 4k^2,), in the row-major order of H (n, 2k, 2k)."""
    return _dof_block_pattern(stencil_dofs(idx))


def _dof_block_pattern(dofs):
    k2 = dofs.shape[1]
    if k2 not in _BLOCK_INDEX:
        _BLOCK_INDEX[k2] = (np.repeat(np.arange(k2), k2), np.tile(np.arange(k2), k2))
    pick_r, pick_c = _BLOCK_INDEX[k2]
    return dofs[:, pick_r].ravel(), dofs[:, pick_c].ravel()


# add_gradient_at sums over the distinct DOFs alone when the DOFs given, times this,
# are at most the system's (sorting them then costs less than the n_dof-long sums)
COMPACT_SCATTER = 8

# Systems with at most this many triplets drop the fixed DOFs from all of them at once:
# testing block by block costs more calls than it saves there.
WHOLE_ELIMINATION = 20000


class Triplets:
    """Accumulates COO triplets of a symmetric global matrix and a gradient.

    grad (n_dof,): the gradient; magnitude (n_dof,): the sum of the absolute
    values of every term added to it, the scale of the forces that grad
    balances (Newton's stop test measures grad against it).  Each block of
    triplets may come with the DOFs its rows and columns are drawn from, so
    that :meth:`system` skips the blocks no fixed DOF touches, and with the
    vertex stencils whose dense Hessians it holds (:meth:`add_stencil_hessians`),
    which a reduced basis reduces per pair of vertices rather than per entry
    (:meth:`~solver.basis.AffineBasis.system_parts`).

    record_deficit: the accumulator, not each energy, declares whether what
    PSD projection adds is recorded (:meth:`deficit_sink`, :meth:`add_deficits`)."""

    def __init__(self, n_dof, record_deficit=False):
        self.n_dof = n_dof
        self.rows, self.cols, self.vals = [], [], []
        self.block_dofs = []  # per block: the DOFs its entries use, or None (not known)
        self.block_stencils = []  # per block: its vertex stencils (n, k), or None (not dense blocks)
        self.grad = np.zeros(n_dof)
        self.magnitude = np.zeros(n_dof)
        self.record_deficit = record_deficit
        self.deficit = []  # (dofs (m, k), N (m, k, k)): what PSD projection added to the matrix
        self._diagonal = None  # the dense diagonal block, summed in place (add_dense_diagonal)

    def add_dense_gradient(self, g):
        """Add a gradient given for every DOF (n_dof,)."""
        self.grad += g
        self.magnitude += np.abs(g)

    def add_pattern(self, rows, cols, H, dofs=None):
        """Scatter blocks H whose (rows, cols) pattern is precomputed
        (block_pattern); dofs (optional): the DOFs that pattern uses."""
        self.rows.append(rows)
        self.cols.append(cols)
        self.vals.append(H.ravel())
        self.block_dofs.append(dofs)
        self.block_stencils.append(None)

    def add_diagonal(self, dofs, vals):
        self.add_pattern(dofs, dofs, vals, dofs)

    def add_dense_diagonal(self, vals):
        """Add a diagonal given for every DOF (n_dof,).  All of them share one
        block, at the place of the first, summed in place: the triplets are
        those of one add_diagonal of their sum."""
        if self._diagonal is None:
            self._diagonal = np.array(vals, float)
            self.add_diagonal(np.arange(self.n_dof), self._diagonal)
        else:
            self._diagonal += vals

    def add_stencils(self, idx, g, H):
        """Scatter gradients g (n, 2k) and Hessians H (n, 2k, 2k) of vertex
        stencils idx (n, k), sharing their DOF indices."""
        if len(idx) == 0:
            return
        dofs = stencil_dofs(idx)
        self.add_gradient_at(dofs.ravel(), g)
        self.add_stencil_hessians(idx, H, _dof_block_pattern(dofs), dofs)

    def add_stencil_hessians(self, idx, H, pattern=None, dofs=None):
        """Scatter Hessians H (n, 2k, 2k) of vertex stencils idx (n, k);
        pattern (optional): their block_pattern, dofs: their stencil_dofs."""
        if dofs is None:
            dofs = stencil_dofs(idx)
        if pattern is None:
            pattern = _dof_block_pattern(dofs)
        self.add_pattern(*pattern, H, dofs)
        self.block_stencils[-1] = idx

    def add_gradient_at(self, dofs, g):
        """Scatter gradients g (n, 2k) at precomputed flat DOF indices (n * 2k,).
        A few DOFs (contacts, rigid anchors) are summed over their distinct
        DOFs only: each sum is the full bincount's (the same terms in the same
        order from 0.0), and the other DOFs would only add 0.0, which changes
        no sum of terms started from +0.0 (the clearing and the additions of
        n_dof entries cost more than the rest of a small term)."""
        g = g.ravel()
        if len(dofs) * COMPACT_SCATTER > self.n_dof:
            self.grad += np.bincount(dofs, weights=g, minlength=self.n_dof)
            self.magnitude += np.bincount(dofs, weights=np.abs(g), minlength=self.n_dof)
            return
        at, inverse = sorted_unique(dofs, return_inverse=True)
        self.grad[at] += np.bincount(inverse, weights=g, minlength=len(at))
        self.magnitude[at] += np.bincount(inverse, weights=np.abs(g), minlength=len(at))

    def deficit_sink(self, project):
        """The list a kernel appends its projection deficits to, (which,
        N) pairs (see :func:`~solver.linsolve.linalg.project_psd`), or None when
        they are not recorded (or nothing is projected)."""
        return [] if project and self.record_deficit else None

    def add_deficits(self, dofs, found, scale):
        """Record the deficits a kernel appended to ``found`` (from
        :meth:`deficit_sink`; None: nothing) at the DOFs dofs (n, k) of its
        stencils, scaled as its Hessian was."""
        for which, N in found or ():
            self.add_deficit(dofs[which], scale * N)

    def add_deficit(self, dofs, N):
        """Record that PSD projection added the blocks N (m, k, k) (PSD) at
        the stencil DOFs dofs (m, k) to the matrix: the exact Hessian is
        the matrix minus their sum (:meth:`deficit_product`)."""
        if len(N):
            self.deficit.append((dofs, N))

    def deficit_product(self, p):
        """(n_dof,) the recorded deficits' sum times p (n_dof,)."""
        out = np.zeros(self.n_dof)
        for dofs, N in self.deficit:
            out += np.bincount(dofs.ravel(), np.einsum("nij,nj->ni", N, p[dofs]).ravel(), self.n_dof)
        return out

    def arrays(self):
        return (np.concatenate(self.rows), np.concatenate(self.cols), np.concatenate(self.vals))

    def blocks(self):
        """Per block: (rows, cols, vals, stencils (n, k) or None), see add_stencil_hessians."""
        return zip(self.rows, self.cols, self.vals, self.block_stencils, strict=True)

    def system(self, fixed_mask):
        """The triplets with the rows and columns of the fixed DOFs (fixed_mask
        (n_dof,) bool) replaced by the identity: the arrays of
        ``eliminate_fixed(*self.arrays(), fixed_mask)``, built without
        testing the entries of blocks whose DOFs are all free (the elastic
        block, most of the entries, when no body vertex is pinned)."""
        if not fixed_mask.any():
            return self.arrays()
        if sum(len(v) for v in self.vals) <= WHOLE_ELIMINATION:
            return eliminate_fixed(*self.arrays(), fixed_mask)
        parts = [], [], []
        for rows, cols, vals, dofs in zip(self.rows, self.cols, self.vals, self.block_dofs, strict=True):
            block = rows, cols, vals
            if dofs is None or fixed_mask[dofs].any():
                keep = ~(fixed_mask[rows] | fixed_mask[cols])
                block = rows[keep], cols[keep], vals[keep]
            for part, a in zip(parts, block, strict=True):
                part.append(a)
        fixed = np.flatnonzero(fixed_mask)
        for part, a in zip(parts, (fixed, fixed, np.ones(len(fixed))), strict=True):
            part.append(a)
        return tuple(np.concatenate(part) for part in parts)


def eliminate_fixed(rows, cols, vals, fixed_mask):
    """Replace the rows and columns of fixed DOFs by identity."""
    if not fixed_mask.any():  # the common case: no copy of the (large) triplets
        return rows, cols, vals
    keep = ~(fixed_mask[rows] | fixed_mask[cols])
    fixed = np.flatnonzero(fixed_mask)
    return (
        np.concatenate([rows[keep], fixed]),
        np.concatenate([cols[keep], fixed]),
        np.concatenate([vals[keep], np.ones(len(fixed))]),
    )
