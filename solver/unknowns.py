"""The unknowns a Newton system is solved for, and how vertex-space vectors
map to them.

Without reduced bodies the unknowns are the vertex DOFs, the fixed ones held
as identity rows (:class:`VertexUnknowns`).  With rigid or stiff bodies
(:mod:`solver.basis`) they are q, x = B q (:class:`BasisUnknowns`): a
vertex-space gradient or update vector v maps to B^T v, a solution u back to
B u.  The features that reuse the system's factorization (the regime rounds'
Woodbury updates, CG on the exact Hessian) read and write through this map,
so they are one code for both: the reduced matrix K = B^T H B (+ the
Hessians given in q) is one sparse SPD matrix, a friction contact's rank-1
curvature change c w w^T in x is c (B^T w)(B^T w)^T in q, and the deficit N
that PSD projection added in x is B^T N B in q
(docs/design/17-affine-bodies.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .basis import AffineBasis, weighted_rows


@dataclass(frozen=True)
class VertexUnknowns:
    """The vertex DOFs (2N,), the fixed ones (fixed_dof (2N,) bool) held."""

    fixed_dof: np.ndarray

    @property
    def free(self):
        """(2N,) bool: the unknowns not held."""
        return ~self.fixed_dof

    @property
    def size(self):
        """How many unknowns the factorization solves for."""
        return len(self.fixed_dof)

    def reduce(self, v):
        """The vertex-space vector v (2N,) on the unknowns (held ones zeroed)."""
        return np.where(self.free, v, 0.0)

    def expand(self, u):
        """The unknowns' vector u as a vertex-space vector (2N,)."""
        return u

    def gatherer(self, dofs):
        """u -> (B u)[dofs]: the unknowns' vectors u at the vertex DOFs dofs (any shape)."""
        return lambda u: u[dofs]

    def stencils(self, dofs, w):
        """The stencil vectors w (m, s) on the vertex DOFs dofs (m, s) on these
        unknowns (:class:`Stencils`)."""
        return Stencils(dofs, w, dofs, w, self.gatherer(dofs))

    def reduce_rows(self, rows):
        """The vertex-space vector sum f w of rows, a list of (dofs (k, s), w (k, s),
        f (k,)) stencil vectors, on the unknowns (held ones zeroed)."""
        return self.reduce_forces([(self.stencils(d, w), slice(None), f) for d, w, f in rows])

    def reduce_forces(self, forces):
        """:meth:`reduce_rows` of forces, a list of (:class:`Stencils`, sel (k,),
        f (k,)): the sum f w of their stencils sel."""
        v = np.zeros(len(self.fixed_dof))
        for st, sel, f in forces:
            v += np.bincount(st.dofs[sel].ravel(), weights=(f[:, None] * st.w[sel]).ravel(), minlength=len(v))
        return self.reduce(v)

    def columns(self, bends):
        """(W (2N, r), curvature (r,)): the rank-1 terms c w w^T of bends, a list
        of (dofs (k, s), w (k, s), c (k,)) vertex stencil vectors, as dense
        columns on the unknowns (held rows zeroed)."""
        W, curvature = dense_columns(bends, len(self.fixed_dof))
        return W * self.free[:, None], curvature

    def stencil_columns(self, parts):
        """W (2N, r) of :meth:`columns` for parts, a list of (:class:`Stencils`,
        sel (k,)): their stencils sel's vectors w as dense columns."""
        return self.columns([(st.slots[sel], st.ww[sel], None) for st, sel in parts])[0]

    def deficit_product(self, T):
        """N p on the unknowns for the deficit N that T's projection recorded."""
        return T.deficit_product


@dataclass(frozen=True)
class BasisUnknowns:
    """q of the basis (x = B q), the held ones (held (n_q,) bool) zeroed; the
    factorization solves for them all (free None, held as identity rows) or
    for the free ones only, renumbered (free: their ids in q)."""

    basis: object
    held: np.ndarray
    free_ids: np.ndarray | None

    @property
    def free(self):
        """(n,) bool on the factorization's unknowns: those not held."""
        return ~self.held if self.free_ids is None else np.ones(len(self.free_ids), bool)

    @property
    def size(self):
        """How many unknowns the factorization solves for."""
        return len(self.held) if self.free_ids is None else len(self.free_ids)

    def q(self, u):
        """(n_q,) the factorization's unknowns u as q (held ones zero)."""
        return u if self.free_ids is None else np.bincount(self.free_ids, u, len(self.held))

    def reduce(self, v):
        """B^T v for a vertex-space vector v (2N,), held unknowns zeroed."""
        vq = np.where(self.held, 0.0, self.basis.reduce_gradient(v))
        return vq if self.free_ids is None else vq[self.free_ids]

    def expand(self, u):
        """B u as a vertex-space vector (2N,)."""
        return self.basis.expand(self.q(u)).ravel()

    def gatherer(self, dofs, rows=None):
        """u -> (B u)[dofs]: the unknowns' vectors u at the vertex DOFs dofs (any
        shape), from their rows of B only (each as :meth:`expand` computes it),
        looked up once for all the vectors read on them (rows: :meth:`_rows`
        of dofs, if looked up already)."""
        slots, weights = self._rows(dofs) if rows is None else rows
        if slots.shape[-1] != 3:
            return lambda u: np.einsum("...j,...j->...", weights, self.q(u)[slots])
        # an affine basis' rows of 3, laid out per weight, summed as expand sums them
        s, w = np.moveaxis(slots, -1, 0).copy(), np.moveaxis(weights, -1, 0).copy()
        return lambda u: weighted_rows(w, np.take(self.q(u), s))

    def reduce_rows(self, rows):
        """B^T of the vertex-space vector sum f w of rows (see
        :meth:`VertexUnknowns.reduce_rows`) on the unknowns, from the rows' DOFs'
        rows of B only (held unknowns zeroed)."""
        return self.reduce_forces([(self.stencils(d, w), slice(None), f) for d, w, f in rows])

    def stencils(self, dofs, w):
        """The stencil vectors w (m, s) on the vertex DOFs dofs (m, s) on these
        unknowns (:class:`Stencils`), their DOFs' rows of B looked up once."""
        slots, weights = self._rows(dofs)
        k = (len(dofs), dofs.shape[1] * slots.shape[-1])
        ww = (w[:, :, None] * weights).reshape(k)
        return Stencils(dofs, w, slots.reshape(k), ww, self.gatherer(dofs, (slots, weights)), weights)

    def reduce_forces(self, forces):
        """:meth:`reduce_rows` of forces, a list of (:class:`Stencils`, sel (k,),
        f (k,)): the sum f w of their stencils sel, through their rows of B."""
        vq = np.zeros(self.basis.n_q)
        for st, sel, f in forces:
            wf = (f[:, None] * st.w[sel])[..., None] * st.weights[sel]
            vq += np.bincount(st.slots[sel].ravel(), wf.ravel(), len(vq))
        vq = np.where(self.held, 0.0, vq)
        return vq if self.free_ids is None else vq[self.free_ids]

    def _rows(self, dofs):
        """(slots (..., W), weights (..., W)): the rows of B of the vertex DOFs dofs
        (an affine basis: three q DOFs each; with stiff bodies: a stiff body's
        6 + k, :meth:`~solver.modal.ModalBasis.dof_weights`)."""
        b = self.basis
        if not isinstance(b, AffineBasis):
            return b.dof_weights(dofs)
        # np.take: indexing rows of 3 as b.slots[dofs] copies them one by one
        return np.take(b.slots, dofs, axis=0), np.take(b.weights, dofs, axis=0)

    def columns(self, bends):
        """(W (n, r), curvature (r,)): the rank-1 terms c w w^T of bends (see
        :meth:`VertexUnknowns.columns`) as c (B^T w)(B^T w)^T, dense columns
        on the factorization's unknowns.  Each stencil vector is mapped on its
        own: a vertex DOF's entry to the q DOFs of its row of B, with B's
        weights (:meth:`_rows`)."""
        parts = [(self.stencils(d, w), slice(None)) for d, w, _ in bends]
        return self.stencil_columns(parts), np.concatenate([np.zeros(0)] + [c for _, _, c in bends])

    def stencil_columns(self, parts):
        """W (n, r) of :meth:`columns` for parts, a list of (:class:`Stencils`,
        sel (k,)): their stencils sel's vectors as dense columns."""
        W = dense_columns([(st.slots[sel], st.ww[sel], None) for st, sel in parts], self.basis.n_q)[0]
        W = W * (~self.held)[:, None]
        return W if self.free_ids is None else W[self.free_ids]

    def vertex_stencils(self, idx):
        """Vertex stencils idx (s, k) as stencils (s, 6 k) of the q DOF pairs
        (the sparse Cholesky's vertices, q DOFs 2j and 2j + 1) their DOFs
        depend on: a rigid vertex's the three of its body; None when the
        factorization solves for the free unknowns only (renumbered) or the
        basis is not an affine one."""
        b = self.basis
        if self.free_ids is not None or not isinstance(b, AffineBasis):
            return None
        dofs = 2 * idx[:, :, None] + np.arange(2)  # (s, k, 2)
        # np.take: indexing rows of 3 as b.slots[dofs] copies them one by one
        slots = np.take(b.slots, dofs, axis=0)  # (s, k, 2, 3)
        used = np.take(b.weights, dofs, axis=0) != 0.0
        slots = np.where(used, slots, slots[..., :1])  # unused slots: the first
        return (slots // 2).reshape(len(idx), 6 * idx.shape[1])

    def deficit_product(self, T):
        """B^T N B p for the deficit N (in x) that T's projection recorded."""
        return lambda p: self.reduce(T.deficit_product(self.expand(p)))


@dataclass(frozen=True)
class Stencils:
    """Stencil vectors w (m, s) on the vertex DOFs dofs (m, s) (a step's friction
    contacts) mapped once to the unknowns, for the many reads, forces and
    columns of the step's regime rounds: slots, ww (m, S): each vector's entries
    on the unknowns' slots (a basis: a vertex DOF's entry w on the q DOFs of its
    row of B, w times B's weights; vertex unknowns: dofs, w); read: u -> (B u)[dofs]
    (:meth:`BasisUnknowns.gatherer`); weights (m, s, W): the DOFs' rows of B
    (None: vertex unknowns)."""

    dofs: np.ndarray
    w: np.ndarray
    slots: np.ndarray
    ww: np.ndarray
    read: object
    weights: np.ndarray | None = None


def dense_columns(bends, n):
    """(W (n, r), curvature (r,)) of bends, a list of (dofs (k, s), w (k, s),
    c (k,) or None) stencil vectors: one dense column per stencil (its w
    scattered to its DOFs, repeated DOFs summed)."""
    columns, curvatures = [np.zeros((n, 0))], [np.zeros(0)]
    for dofs, w, dc in bends:
        k = len(dofs)
        flat = (dofs * k + np.arange(k)[:, None]).ravel()
        columns.append(np.bincount(flat, weights=w.ravel(), minlength=n * k).reshape(n, k))
        curvatures.append(np.zeros(0) if dc is None else dc)
    return np.concatenate(columns, axis=1), np.concatenate(curvatures)
