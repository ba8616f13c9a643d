"""The reduced basis of rigid (affine) bodies: vertex positions x = B q.

A rigid body's vertices move by one affine map, x_i = A X_i + p (X_i its
rest position relative to its rest centroid): 6 unknowns in 2D instead of
2 per vertex.  Deformable bodies and colliders keep their vertex DOFs.
The system's unknowns q are the non-rigid vertices' DOFs (in vertex order)
followed by 6 per rigid body, ordered [A00, A01, p0, A10, A11, p1]: vertex
DOF (i, k) of a rigid body depends on the q DOFs 3k, 3k+1, 3k+2 of its body
with the weights (X_i0, X_i1, 1).

Every vertex-space term of the incremental potential works unchanged
through B: its gradient in q is B^T g_x and its Hessian B^T H_x B
(:meth:`AffineBasis.reduce_gradient`, :meth:`AffineBasis.reduce_triplets`),
and since x = B q is linear, a straight step in q is a straight step in x:
CCD, the line search and the motion check stay in vertex space.  A scene
without rigid bodies has no basis (None): nothing is multiplied by an
identity.  Rigidity itself comes from the orthogonality energy
(:mod:`solver.orthogonality`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from .linsolve import RowSums, group_sums

# kappa_A >= RIGIDITY rho L^2 / h^2: the orthogonality energy is this many times
# stiffer than the body's inertia against straining (see rigid_stiffness)
RIGIDITY = 1e4
# Newton balances each rigid body's strain to this (||A^T A - I||_F, see
# Orthogonality.strain_error): the step test alone would let the predictor's
# stretch (a rotation extrapolated along its tangent) pile up from step to step
STRAIN_TOL = 1e-5
# A rigid body holds its shape to this strain (its largest |stretch - 1|) unless
# something forces it (a collider crushing it, pins pulling it apart): beyond it
# the step reports the body as strained (StepStats.rigid_strains; issue 34, point 1)
RIGID_STRAIN_LIMIT = 1e-3


@dataclass(frozen=True)
class AffineBasis:
    """x = B q for a model with rigid bodies (see the module docstring).

    slots, weights (2N, 3): the q DOFs each vertex DOF depends on and their
    weights (a non-rigid DOF: its own q DOF with weight 1, then two zero
    weights); rigid_dof (2N,) bool; vertex_body (N,) the rigid body of each
    vertex (index into the rigid bodies), -1 elsewhere; fit (N, 2) w_i =
    G^-1 X_i with G = sum X_i X_i^T over the body, so that A = sum_i x_i w_i^T
    for any affine x; a_dofs (R, 4): the q DOFs of each body's A, row-major;
    bodies (R,): the model's body index of each rigid body; area (R,): rest
    areas; stiffness (R,): the orthogonality stiffness kappa_A [Pa].
    """

    n_q: int
    slots: np.ndarray
    weights: np.ndarray
    rigid_dof: np.ndarray
    vertex_body: np.ndarray
    fit: np.ndarray
    anchors: np.ndarray
    anchor_fit: np.ndarray
    a_dofs: np.ndarray
    bodies: np.ndarray
    area: np.ndarray
    stiffness: np.ndarray
    # the q DOFs in groups (each vertex's 2, each rigid body's 6): per vertex DOF its
    # group, per slot its place in the group; per group its first q DOF and size
    dof_group: np.ndarray
    slot_local: np.ndarray
    group_first: np.ndarray
    group_size: np.ndarray

    @cached_property
    def weights_t(self):
        return np.ascontiguousarray(self.weights.T)

    @cached_property
    def local_t(self):
        return np.ascontiguousarray(self.slot_local.T)

    @property
    def n_rigid(self):
        return len(self.bodies)

    def reduce_gradient(self, g):
        """B^T g for a vertex-space vector g (2N,)."""
        return self._transpose(g)

    @cached_property
    def _transpose(self):
        """B^T as RowSums: each q DOF's sum over its vertex DOFs in their order
        (the bincount over slots this replaced, to the bit, four times faster)."""
        dofs = np.repeat(np.arange(len(self.slots)), 3)
        return RowSums(self.slots.ravel(), dofs, self.weights.ravel(), self.n_q, len(self.slots))

    def expand(self, dq):
        """B dq as vertex positions (N, 2): per vertex DOF its 3 weighted q DOFs,
        summed as einsum("dj,dj->d") summed them ((0 + 2) + 1: the same bits),
        on the weights and slots laid out per weight (an einsum over rows of 3
        cost twice the instructions on R1000)."""
        return weighted_rows(self.weights_t, np.take(dq, self.slots_t)).reshape(-1, 2)

    @cached_property
    def slots_t(self):
        return np.ascontiguousarray(self.slots.T)

    def reduced_mass(self, mass):
        """(rows, cols, vals): B^T M B on the rigid bodies' q DOFs for the lumped
        vertex masses (N,), the exact reduced mass matrix: per body and
        coordinate k the 3 x 3 block sum_i m_i w_i w_i^T, w_i = (X_i0, X_i1, 1),
        on the DOFs first + 3k + (0, 1, 2).  Inertia gives its Hessian so, in q:
        the vertex-space diagonal would expand to 9 entries per vertex DOF."""
        on = self.vertex_body >= 0
        w = self.weights[2 * np.flatnonzero(on)]  # (n, 3): a rigid vertex's x DOF weights
        prod = mass[on][:, None, None] * w[:, :, None] * w[:, None, :]
        where = (9 * self.vertex_body[on][:, None] + np.arange(9)).ravel()
        M = np.bincount(where, prod.ravel(), 9 * self.n_rigid).reshape(-1, 1, 3, 3)
        dofs = self.a_dofs[:, 0, None, None] + 3 * np.arange(2)[:, None] + np.arange(3)  # (R, 2, 3)
        shape = (self.n_rigid, 2, 3, 3)
        rows = np.broadcast_to(dofs[:, :, :, None], shape).ravel()
        cols = np.broadcast_to(dofs[:, :, None, :], shape).ravel()
        return rows, cols, np.broadcast_to(M, shape).ravel()

    def rotation_corrected(self, x, dq):
        """dq (n_q,) with each rigid body's rotation made exact: a Newton step
        turns A by the linearized rotation, (I + W) A with W skew, whose end
        is stretched by 1 + w^2 (w = W_10), which the orthogonality energy
        resists RIGIDITY times more than inertia does: the line search cuts
        the step and the next iteration undoes the stretch.  Here (I + W) is
        scaled by 1 / sqrt(1 + w^2), a rotation by atan(w); the step's
        stretching part (the symmetric part of dA A^-1) and the translation
        are kept.  The motion stays straight in x (B dq)."""
        A = self.affine(x)
        dA = dq[self.a_dofs].reshape(-1, 2, 2)
        # M = dA A^-1 through the adjugate: a crushed body (det A = 0) gives
        # non-finite values, which the caller's descent test rejects
        adjugate = np.stack([A[:, 1, 1], -A[:, 0, 1], -A[:, 1, 0], A[:, 0, 0]], 1).reshape(-1, 2, 2)
        with np.errstate(divide="ignore", invalid="ignore"):
            M = (dA @ adjugate) / np.linalg.det(A)[:, None, None]
        w = 0.5 * (M[:, 1, 0] - M[:, 0, 1])
        turn = np.stack([np.ones_like(w), -w, w, np.ones_like(w)], 1).reshape(-1, 2, 2)  # I + W
        scale = 1.0 / np.sqrt(1.0 + w * w) - 1.0
        out = dq.copy()
        out[self.a_dofs] = (dA + scale[:, None, None] * (turn @ A)).reshape(-1, 4)
        return out

    def fixed(self, fixed_dof):
        """(n_q,) bool: the q DOFs of fixed vertex DOFs (fixed_dof (2N,)); rigid
        bodies have no fixed vertex (validation)."""
        out = np.zeros(self.n_q, bool)
        out[self.plain_q[self.plain_dofs]] = fixed_dof[self.plain_dofs]
        return out

    @cached_property
    def plain_dofs(self):
        """The non-rigid vertex DOFs' ids (a mask's ids looked up at every
        call cost R1000 1.5 ms a call of fixed)."""
        return np.flatnonzero(~self.rigid_dof)

    def affine(self, x):
        """(R, 2, 2) each rigid body's A from its anchors' positions in x (N, 2),
        exact when x = B q (Newton's iterates, steps B dq from such a start)."""
        P = np.take(x, self.anchors.T, axis=0).transpose(0, 2, 1)  # (3, 2, R): anchor, coordinate, body
        F = self.anchor_fit_t
        A = (P[0][:, None] * F[0][None] + P[1][:, None] * F[1][None]) + P[2][:, None] * F[2][None]
        return np.ascontiguousarray(A.transpose(2, 0, 1))  # the anchors summed in turn, as an einsum did

    @cached_property
    def anchor_fit_t(self):
        """(3, 2, R) anchor_fit with the bodies innermost (affine's products
        run over them, not over 2 or 3 numbers per body)."""
        return np.ascontiguousarray(self.anchor_fit.transpose(1, 2, 0))

    def affine_fit(self, x):
        """(R, 2, 2) each rigid body's A fitted to all of its vertices' positions
        x (N, 2) by least squares (exact when x = B q)."""
        on = self.vertex_body >= 0
        prod = x[on][:, :, None] * self.fit[on][:, None, :]  # x_i w_i^T
        b = self.vertex_body[on]
        return np.stack(
            [np.bincount(b, prod[:, k, j], self.n_rigid) for k in (0, 1) for j in (0, 1)], 1
        ).reshape(-1, 2, 2)

    def coords(self, x):
        """q (n_q,) of positions x (N, 2) in the range of B (B coords(x) = x):
        the non-rigid DOFs, and each rigid body's fitted A and centroid p."""
        q = np.zeros(self.n_q)
        plain = ~self.rigid_dof
        flat = x.ravel()
        q[self.slots[plain, 0]] = flat[plain]
        on = self.vertex_body >= 0
        b = self.vertex_body[on]
        count = np.bincount(b, minlength=self.n_rigid)
        p = np.stack([np.bincount(b, x[on, k], self.n_rigid) for k in (0, 1)], 1) / count[:, None]
        A = self.affine_fit(x)
        base = self.a_dofs[:, 0]
        for k in (0, 1):
            q[base + 3 * k] = A[:, k, 0]
            q[base + 3 * k + 1] = A[:, k, 1]
            q[base + 3 * k + 2] = p[:, k]
        return q

    @cached_property
    def vertex_weights_t(self):
        """(3, N) each vertex's weights on its group's q DOFs, (X_i0, X_i1, 1) on a
        rigid body, (1, 0, 0) elsewhere (both coordinates share them)."""
        return np.ascontiguousarray(self.weights[0::2].T)

    @cached_property
    def vertex_group(self):
        return self.dof_group[0::2]

    def reduce_system(self, T, fixed_dof=None):
        """B^T H B for the Hessian H assembled in T (a Triplets), as COO
        triplets in q: the concatenation of :meth:`system_parts`."""
        return tuple(np.concatenate(a) for a in zip(*self.system_parts(T, fixed_dof), strict=True))

    def system_parts(self, T, fixed_dof=None):
        """B^T H B for the Hessian H assembled in T (a Triplets), its fixed
        rows and columns (fixed_dof (2N,) bool, never a rigid DOF; None:
        none) made the identity first, as a list of COO triplets in q whose
        concatenation is the matrix (the caller adds its own parts and
        concatenates once).  Block by block: a block whose DOFs are all
        plain and free (a deformable body's elastic block: most entries of
        a mixed scene) is renumbered into q without a test per entry
        (:meth:`_renumbered_block`); the stencils of dense stencil Hessians
        that touch a rigid body are reduced per pair of vertices
        (:meth:`_reduce_stencils`); the other entries are split one by one
        (:meth:`_split`).  In order: the plain entries in block order, the
        fixed DOFs' identity, the rigid entries' reduction, the stencils'."""
        held = fixed_dof is not None and bool(fixed_dof.any())
        avoid = self.rigid_dof | fixed_dof if held else self.rigid_dof
        plain, rigid, stencils, renumbered = [], [], [], {}
        for block in zip(T.rows, T.cols, T.vals, T.block_dofs, T.block_stencils, strict=True):
            rows, cols, vals, dofs, idx = block
            if dofs is not None and not avoid[dofs].any():
                plain.append(self._renumbered_block(rows, cols, vals, renumbered))
                continue
            touched = None if idx is None else (self.vertex_body[idx] >= 0).any(axis=1)
            if touched is not None and touched.any():
                entry = np.repeat(touched, len(vals) // len(idx))
                stencils.append((idx[touched], vals[entry]))
                if touched.all():
                    continue
                rows, cols, vals = rows[~entry], cols[~entry], vals[~entry]
            if held:
                keep = ~(fixed_dof[rows] | fixed_dof[cols])
                rows, cols, vals = rows[keep], cols[keep], vals[keep]
            split = self._split(rows, cols, vals)
            plain.append(split[0])
            rigid.append(split[1])
        self._renumbering.clear()
        self._renumbering.update(renumbered)
        if held:
            ids = np.flatnonzero(fixed_dof)  # their rows and columns: the identity
            plain.append(self._renumbered(ids, ids, np.ones(len(ids))))
        if rigid:
            r, c, v = (np.concatenate(a) for a in zip(*rigid, strict=True))
            if len(v):
                plain.append(self._reduce_rigid(r, c, v))
        if stencils:
            r, c, v = self._reduce_stencils(stencils)
            if held:  # the fixed (plain) vertices' rows and columns
                fq = self.fixed(fixed_dof)
                keep = ~(fq[r] | fq[c])
                r, c, v = r[keep], c[keep], v[keep]
            plain.append((r, c, v))
        return plain

    @cached_property
    def _renumbering(self):
        """id(rows) -> (rows, cols, their renumbering into q) of the last
        system's plain blocks (see :meth:`_renumbered_block`)."""
        return {}

    def _renumbered_block(self, rows, cols, vals, renumbered):
        """_renumbered(rows, cols, vals) of a block of plain DOFs, the
        renumbering of its pattern reused from the last system when the
        block comes with the same pattern arrays (the elastic block's,
        precomputed once: most of a mixed pile's entries); renumbered
        collects this system's for the next."""
        hit = self._renumbering.get(id(rows))
        if hit is None or hit[0] is not rows or hit[1] is not cols:
            hit = (rows, cols, *self._renumbered(rows, cols, vals)[:2])
        renumbered[id(rows)] = hit
        return hit[2], hit[3], vals

    @cached_property
    def plain_q(self):
        """(2N,) each vertex DOF's first q DOF: a non-rigid DOF's own."""
        return np.ascontiguousarray(self.slots[:, 0])

    def _renumbered(self, rows, cols, vals):
        """Triplets between non-rigid DOFs, in q (one to one)."""
        return self.plain_q[rows], self.plain_q[cols], vals

    def _split(self, rows, cols, vals):
        """(the entries between non-rigid DOFs, in q; the nonzero entries touching a
        rigid DOF, in vertex DOFs) of COO triplets (a dense diagonal's zeros on
        rigid DOFs add nothing)."""
        touching = self.rigid_dof[rows] | self.rigid_dof[cols]
        on = touching & (vals != 0.0)
        plain = ~touching
        return self._renumbered(rows[plain], cols[plain], vals[plain]), (rows[on], cols[on], vals[on])

    def _reduce_stencils(self, stencils):
        """(rows, cols, vals) in q of dense stencil Hessians, stencils: a list of
        (idx (n, k), H (n * 4k^2,) row-major).  The 2 x 2 block H_ab of a vertex
        pair (a, b) reduces to the 6 x 6 block H_ab (x) w_a w_b^T between their
        groups (w: vertex_weights_t).  The blocks are summed per vertex pair
        first (the barrier's, the friction's and the point-point terms'
        stencils share most pairs), then reduced and summed per pair of groups,
        every array with the pairs innermost (numpy's loops then run over
        them, not over 2 or 3)."""
        n_v = len(self.vertex_body)
        keys, blocks = [], []
        for idx, H in stencils:
            n, k = idx.shape
            v = idx.astype(np.int64)
            keys.append((v[:, :, None] * n_v + v[:, None, :]).ravel())
            blocks.append(H.reshape(n, k, 2, k, 2).transpose(2, 4, 0, 1, 3).reshape(4, -1))
        vertex_pairs, which = np.unique(np.concatenate(keys), return_inverse=True)
        m = len(vertex_pairs)
        where = (which.ravel() + m * np.arange(4)[:, None]).ravel()
        H = np.bincount(where, np.concatenate(blocks, axis=1).ravel(), 4 * m)
        a, b = np.divmod(vertex_pairs, n_v)
        n_groups = len(self.group_first)
        pairs, which = self._numbered_pairs(self.vertex_group[a] * n_groups + self.vertex_group[b])
        wa = np.take(self.vertex_weights_t, a, axis=1)
        wb = np.take(self.vertex_weights_t, b, axis=1)
        # (k, i, l, j, m): H_kl w_a,i w_b,j, summed per pair of groups
        R = H.reshape(2, 1, 2, 1, m) * (wa[:, None, :] * wb[None, :, :])[None, :, None]
        n_p = len(pairs)
        blocks = group_sums(which, n_p, R.reshape(36, m))
        # q DOF of (coordinate k, weight i) in a group: 3k + i on a rigid body, k on a vertex (i = 0)
        ga, gb = pairs // n_groups, pairs % n_groups
        la, va = self._kron_slots(ga)
        lb, vb = self._kron_slots(gb)
        shape = (2, 3, 2, 3, n_p)
        valid = va[:, :, None, None] & vb[None, None]
        rows = np.broadcast_to(la[:, :, None, None], shape)[valid]
        cols = np.broadcast_to(lb[None, None], shape)[valid]
        return rows, cols, blocks.reshape(shape)[valid]

    @cached_property
    def _pair_table(self):
        """Scratch for :meth:`_numbered_pairs`, kept between calls: (seen, place)
        per possible pair of groups, seen all False between calls (the fill of a
        fresh table of n_groups^2 entries cost R1000 a fifth of a reduction)."""
        n_keys = len(self.group_first) ** 2
        return np.zeros(n_keys, bool), np.zeros(n_keys, np.intp)

    def _numbered_pairs(self, keys):
        """_numbered(keys, n_groups^2) for keys of group pairs (g_a n_groups + g_b),
        the same arrays, through a table kept between calls."""
        n_keys = len(self.group_first) ** 2
        if n_keys > DENSE_KEYS:
            return _numbered(keys, n_keys)
        seen, place = self._pair_table
        seen[keys] = True
        distinct = np.flatnonzero(seen)
        seen[distinct] = False
        place[distinct] = np.arange(len(distinct))
        return distinct, place[keys]

    def _kron_slots(self, groups):
        """(slots (2, 3, n), valid (2, 3, n)): the q DOF of (coordinate k,
        weight i) of each group, 3k + i after its first on a rigid body, k on
        a vertex (whose only weight is i = 0)."""
        rigid = self.group_size[groups] == 6
        local = np.where(rigid, _KRON[:, :, None], _KRON[:, :, None] // 3)
        return self.group_first[groups] + local, rigid | (_KRON[:, :, None] % 3 == 0)

    def reduce_triplets(self, rows, cols, vals):
        """B^T H B for H given as COO triplets in vertex DOFs: triplets in q.
        Entries between non-rigid DOFs map one to one (first, in their
        order); those touching a rigid DOF by :meth:`_reduce_rigid`."""
        out, (r, c, v) = self._split(rows, cols, vals)
        if not len(v):
            return out
        return tuple(np.concatenate(a) for a in zip(out, self._reduce_rigid(r, c, v), strict=True))

    def _reduce_rigid(self, r, c, vals):
        """B^T H B of COO entries (r, c, vals) touching a rigid DOF: each
        expands to 3 x 3 and they are summed per q entry, block by block:
        every q DOF is in a group (a rigid body's 6, a vertex's 2) and the
        entries of a pair of groups go to one dense 6 x 6 block (sorting the
        vertex entries by group pair costs a ninth of sorting the expanded
        ones)."""
        n_groups = len(self.group_first)
        gr, gc = self.dof_group[r], self.dof_group[c]
        pairs, which = self._numbered_pairs(gr * n_groups + gc)
        # (3, 3, k) with the entries innermost: numpy's loops run over k, not over 3
        wr = np.take(self.weights_t, r, axis=1) * vals
        v = wr[:, None, :] * np.take(self.weights_t, c, axis=1)[None, :, :]
        lr = np.take(self.local_t, r, axis=1)[:, None, :] * 6 + np.take(self.local_t, c, axis=1)[None, :, :]
        lr += 36 * which
        blocks = np.bincount(lr.ravel(), v.ravel(), 36 * len(pairs)).reshape(-1, 6, 6)
        a, b = pairs // n_groups, pairs % n_groups
        valid = (_LOCAL[None, :, None] < self.group_size[a][:, None, None]) & (
            _LOCAL[None, None, :] < self.group_size[b][:, None, None]
        )
        qr = np.broadcast_to((self.group_first[a][:, None] + _LOCAL)[:, :, None], blocks.shape)
        qc = np.broadcast_to((self.group_first[b][:, None] + _LOCAL)[:, None, :], blocks.shape)
        return qr[valid], qc[valid], blocks[valid]


def weighted_rows(w, Q):
    """Per row of B, its 3 weights w (3, n) times its 3 q values Q (3, n),
    summed in einsum("dj,dj->d")'s order ((0 + 2) + 1): the same bits as that
    einsum over rows of 3, laid out per weight (the einsum loops over 3
    numbers a row: twice the instructions on R1000)."""
    return (w[0] * Q[0] + w[2] * Q[2]) + w[1] * Q[1]


_LOCAL = np.arange(6)
_KRON = np.arange(6).reshape(2, 3)  # a rigid body's q DOFs by (coordinate, weight)
DENSE_KEYS = 1 << 22  # keys below this are numbered through a table, not by sorting


def _numbered(keys, n_keys):
    """(the distinct keys, sorted; each key's place among them), as np.unique
    with return_inverse: through a table of all n_keys possible keys when
    there are few (rigid bodies: group pairs), else by sorting."""
    if n_keys > DENSE_KEYS:
        distinct, which = np.unique(keys, return_inverse=True)
        return distinct, which.ravel()
    seen = np.zeros(n_keys, bool)
    seen[keys] = True
    distinct = np.flatnonzero(seen)
    table = np.zeros(n_keys, np.intp)
    table[distinct] = np.arange(len(distinct))
    return distinct, table[keys]


def _spanning_triangle(X):
    """Three of the points X (n, 2) spanning a large triangle: the point
    furthest from the centroid, the point furthest from it, and the point
    furthest from the line through both (well conditioned for A's fit)."""
    a = int(np.argmax(np.einsum("ij,ij->i", X, X)))
    d = X - X[a]
    b = int(np.argmax(np.einsum("ij,ij->i", d, d)))
    u = X[b] - X[a]
    c = int(np.argmax(np.abs(d[:, 0] * u[1] - d[:, 1] * u[0])))
    return np.array([a, b, c])


def rigid_strains(basis, x, n_bodies):
    """(n_bodies,) each body's largest principal strain |stretch - 1| at x (the
    singular values of its A) when it is rigid, 0 for the others (deformable,
    stiff: they are meant to bend); (0,) when no body is rigid.  basis: the
    model's (None, an AffineBasis, or a ModalBasis over the rigid bodies' one)."""
    rigid = getattr(basis, "inner", basis)
    if rigid is None or rigid.n_rigid == 0:
        return np.zeros(0)
    out = np.zeros(n_bodies)
    stretches = np.linalg.svd(rigid.affine(x), compute_uv=False)
    out[rigid.bodies] = np.abs(stretches - 1.0).max(axis=1)
    return out


def rigid_stiffness(density, area, size_sq, dt, E):
    """kappa_A [Pa] of rigid bodies: RIGIDITY times rho L^2 / h^2 (L^2 = size_sq,
    the body's rest second moment per area), so that the orthogonality energy
    resists straining RIGIDITY times more than the body's own inertia over a
    step, and never below the material's Young's modulus."""
    return np.maximum(RIGIDITY * density * size_sq / (dt * dt), E)


def build_basis(rest, body_slices, rigid, props):
    """The basis of a model (rest (N, 2), its body vertex ranges, which bodies
    are rigid (bool per body), props: per body (density, E, area) and dt as
    (densities, moduli, areas, dt)), or None without rigid bodies."""
    rigid_ids = np.flatnonzero(rigid)
    if not len(rigid_ids):
        return None
    n = len(rest)
    densities, moduli, areas, dt = props
    vertex_body = np.full(n, -1, np.intp)
    fit = np.zeros((n, 2))
    centred = np.zeros((n, 2))
    size_sq = np.zeros(len(rigid_ids))
    anchors = np.zeros((len(rigid_ids), 3), np.intp)
    anchor_fit = np.zeros((len(rigid_ids), 3, 2))
    for r, b in enumerate(rigid_ids):  # once per scene, per body
        s = body_slices[b]
        vertex_body[s] = r
        X = rest[s] - rest[s].mean(axis=0)
        G = X.T @ X
        centred[s] = X
        fit[s] = X @ np.linalg.inv(G)  # G symmetric
        size_sq[r] = np.trace(G) / (s.stop - s.start)
        local = _spanning_triangle(X)
        anchors[r] = s.start + local
        # [A p] = [x_j] C^-1 with C = [X_j; 1] (3 x 3): A's weights are C^-1's first two columns
        anchor_fit[r] = np.linalg.inv(np.vstack([X[local].T, np.ones(3)]))[:, :2]
    on = vertex_body >= 0
    n_plain = 2 * int(np.sum(~on))
    slots = np.zeros((2 * n, 3), np.intp)
    weights = np.zeros((2 * n, 3))
    rigid_dof = np.repeat(on, 2)
    slots[~rigid_dof, :] = np.arange(n_plain)[:, None]
    weights[~rigid_dof, 0] = 1.0
    first = n_plain + 6 * vertex_body[on]  # first q DOF of each rigid vertex's body
    for k in (0, 1):  # vertex DOF (i, k) <- q DOFs first + 3k + (0, 1, 2)
        dof = 2 * np.flatnonzero(on) + k
        slots[dof] = first[:, None] + 3 * k + np.arange(3)
        weights[dof] = np.column_stack([centred[on], np.ones(int(on.sum()))])
    base = n_plain + 6 * np.arange(len(rigid_ids))
    a_dofs = base[:, None] + np.array([0, 1, 3, 4])
    area = np.asarray(areas, float)[rigid_ids]
    stiffness = rigid_stiffness(
        np.asarray(densities, float)[rigid_ids], area, size_sq, dt, np.asarray(moduli, float)[rigid_ids]
    )
    n_q = n_plain + 6 * len(rigid_ids)
    group_first = np.concatenate([np.arange(0, n_plain, 2), base])
    group_size = np.concatenate([np.full(n_plain // 2, 2), np.full(len(base), 6)])
    q_group = np.repeat(np.arange(len(group_first)), group_size)
    dof_group = q_group[slots[:, 0]]
    slot_local = slots - group_first[dof_group][:, None]
    return AffineBasis(
        n_q,
        slots,
        weights,
        rigid_dof,
        vertex_body,
        fit,
        anchors,
        anchor_fit,
        a_dofs,
        rigid_ids,
        area,
        stiffness,
        dof_group,
        slot_local,
        group_first,
        group_size,
    )
