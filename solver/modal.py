"""Stiff bodies: an affine motion plus a few low elastic modes, x = B q.

A stiff body's vertex DOFs are x_b = U_b a + Phi_b m: U_b the affine columns
(x_i = A X_i + p, X_i about the rest centroid, 6 unknowns ordered as in
:mod:`solver.basis`) and Phi_b its k lowest linear elastic modes at the rest
shape: the generalized eigenproblem K phi = lambda M phi (K the Neo-Hookean
Hessian at rest, M the lumped masses) restricted to the M-orthogonal
complement of the affine span (the tutorial's chapter 9, reduced DOFs).  The
body keeps its full Neo-Hookean energy, evaluated in x: its gradient in q is
B^T g and its Hessian B^T H B (given in q per triangle by
:class:`ModalElasticity`), there is no extra rigidity term, and its triangles
stay in the line search's inversion guard.

The basis composes with the rigid bodies' one (:class:`~solver.basis.AffineBasis`,
the "inner" basis; None without rigid bodies): x = B_in C z.  In the inner
unknowns a stiff body's vertices are plain DOFs; C keeps every other inner
DOF and replaces a stiff body's DOFs by its 6 + k columns [U_b Phi_b].  The
unknowns z are the other inner DOFs (in order) followed by 6 + k per stiff
body.  Modes are scaled by sqrt(body mass) in B, so that a unit amplitude is
a mass-weighted RMS displacement of 1 m.

Mode computation (:func:`elastic_basis`), once per scene: dense ``eigh`` up to
DENSE_DOFS DOFs per body (2 per vertex; O(n^3), 0.7 s at 1152 DOFs); above,
block inverse iteration on K + s M with the solver's own sparse Cholesky
(numpy or scipy path alike; about 3 s for 6 modes of 13k DOFs).  See
docs/design/19-modal-bodies.md.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from . import elasticity
from .linsolve import factorize

DENSE_DOFS = 400  # bodies with at most this many DOFs get their modes by dense eigh (0.7 s at 1152)
MAX_MODES = 32  # per body (validation)
ITERATION_TOL = 1e-10  # inverse iteration: relative change of the k eigenvalues
MAX_ITERATIONS = 200
DERIVATIVE_MODES = 6  # modal derivatives of every pair among this many lowest modes: 21 columns
DERIVATIVE_STEP = 1e-4  # their Hessian differences: largest vertex step / smallest triangle height
RANK_TOL = 1e-8  # a derivative direction below this (relative) is dependent and dropped


def affine_columns(X):
    """(2n, 6) the affine motions of centred rest positions X (n, 2):
    DOF (i, k) on q 3k + (0, 1, 2) with weights (X_i0, X_i1, 1)."""
    n = len(X)
    U = np.zeros((2 * n, 6))
    w = np.column_stack([X, np.ones(n)])
    U[0::2, 0:3] = w
    U[1::2, 3:6] = w
    return U


@dataclass(frozen=True)
class _RestBody:
    """A body's elasticity linearized at rest: element Hessians H (m, 6, 6)
    of its elements el (local vertex indices, at the rest positions rest
    (n, 2)), lumped DOF masses m (2n,) and affine columns U (2n, 6)."""

    el: object
    rest: np.ndarray
    H: np.ndarray
    m: np.ndarray
    U: np.ndarray


def _rest_body(rest, tris, mu, lam, mass):
    el = elasticity.make_elements(rest, tris, 1.0, 0.0)
    el = dataclasses.replace(el, mu=np.asarray(mu, float), lam=np.asarray(lam, float))
    return _RestBody(
        el,
        rest,
        elasticity.hessian(el, rest, project=False),
        np.repeat(np.asarray(mass, float), 2),
        affine_columns(rest - rest.mean(axis=0)),
    )


def elastic_basis(rest, tris, mu, lam, mass, k):
    """(2n, k + r): a stiff body's elastic columns (rest (n, 2), tris (m, 3)
    local, Lame mu/lam (m,), lumped vertex masses (n,)): its k lowest modes,
    the eigenvectors of K phi = lambda M phi on the M-orthogonal complement of
    its affine span (phi^T M phi = I, U^T M phi = 0; k clipped to the 2n - 6
    there are), followed by r M-orthonormal directions spanning
    the modal derivatives of every pair among its lowest min(k,
    DERIVATIVE_MODES) modes, all M-orthogonal to the affine span and to each
    other; r <= 2n - 6 - k (dependent directions are dropped).

    A modal derivative (Barbic and James 2005) is the static response
    K psi_ij = -(dK/d eta_j) phi_i: the shape a body takes to second order
    when modes i and j are large.  Linear modes describe small motions about
    the rest shape; a body squashed by a quarter (the tutorial's soft square
    on landing) deforms through shapes they do not span, and without these
    columns rebounds several per cent higher than the deformable body."""
    body = _rest_body(rest, tris, mu, lam, mass)
    n2 = len(body.m)
    k = int(min(k, n2 - 6))
    if k <= 0:
        return np.zeros((n2, 0))
    phi, _, static = _modes(body, k)
    if k == n2 - 6:
        return phi
    loads = _derivative_loads(body, phi[:, : min(k, DERIVATIVE_MODES)])
    extra = _m_orthonormal_beyond(static(loads), np.hstack([body.U, phi]), body.m)
    return np.hstack([phi, extra[:, : n2 - 6 - k]])


def _modes(body, k):
    """(phi, lambdas, static): the k modes and the static solve on the
    complement of the affine span, F (2n, p) -> psi with K psi = F - M U mu,
    U^T M psi = 0 (a free body's loads balanced by its affine inertia)."""
    if len(body.m) <= DENSE_DOFS:
        return _dense_modes(body, k)
    return _iterated_modes(body, k)


def _dense_modes(body, k):
    """The modes by one dense symmetric eigensolve of
    L = M^-1/2 K M^-1/2 with the (scaled) affine span Q shifted to the top;
    the static solve from the same eigenpairs (every one of the complement's)."""
    m, U = body.m, body.U
    n2 = len(m)
    K = np.zeros((n2, n2))
    np.add.at(K, (body.el.rows, body.el.cols), body.H.ravel())
    s = 1.0 / np.sqrt(m)
    L = K * s[:, None] * s[None, :]
    Q, _ = np.linalg.qr(U * np.sqrt(m)[:, None])
    P = np.eye(n2) - Q @ Q.T
    shift = 2.0 * np.trace(L) + 1.0  # above every eigenvalue of L (PSD, trace bounds them)
    lam, Y = np.linalg.eigh(P @ L @ P + shift * (Q @ Q.T))
    Yc, lam_c = Y[:, : n2 - 6], lam[: n2 - 6]  # the complement's (the affine span's are on top)

    def static(F):
        return s[:, None] * (Yc @ ((Yc.T @ (s[:, None] * F)) / lam_c[:, None]))

    return Y[:, :k] * s[:, None], lam[:k], static


def _iterated_modes(body, k):
    """The modes by block inverse iteration on (K + s M) restricted to the
    M-orthogonal complement of the affine span, with Rayleigh-Ritz (large
    bodies); the static solve is the same constrained inverse (its shift s,
    1e-6 of the stiffness, changes a static response by as little)."""
    H, m, U = body.H, body.m, body.U
    n2 = len(m)
    rows, cols = body.el.rows, body.el.cols  # H's entries, row-major per element
    s = 1e-6 * float(np.median(np.diagonal(H, axis1=1, axis2=2).sum(axis=1) / 6.0)) / float(np.mean(m))
    shifted = factorize(
        np.concatenate([rows, np.arange(n2)]),
        np.concatenate([cols, np.arange(n2)]),
        np.concatenate([H.ravel(), s * m]),
        n2,
    )
    Um = U * m[:, None]
    # the inverse on the complement: y = (K + s M)^-1 (F - M U mu) with mu
    # such that U^T M y = 0 (the constrained problem's own inverse, not a
    # projection of the unconstrained one, whose fixed points are not its modes)
    Z = shifted.solve(Um)
    S = np.linalg.inv(Um.T @ Z)

    def static(F):
        Y = shifted.solve(F)
        return Y - Z @ (S @ (Um.T @ Y))

    K_times = _product(rows, cols, H.ravel(), n2)
    p = min(2 * k + 4, n2 - 6)
    V = np.random.default_rng(0).standard_normal((n2, p))
    previous = None
    for _ in range(MAX_ITERATIONS):
        V = static(m[:, None] * V)
        Kr = V.T @ K_times(V)
        Mr = V.T @ (m[:, None] * V)
        lam, W = _generalized_eigh(Kr, Mr)
        V = V @ W
        if previous is not None and np.all(
            np.abs(lam[:k] - previous) <= ITERATION_TOL * np.abs(lam[:k]).max()
        ):
            break
        previous = lam[:k]
    return V[:, :k], lam[:k], static


def _derivative_loads(body, phi):
    """(2n, d(d+1)/2): the loads -(dK/d eta_j) phi_i, i <= j, of the d modes
    phi, whose static responses are their modal derivatives: dK/d eta_j by
    central differences of the element Hessians along phi_j (a step moving
    no vertex more than DERIVATIVE_STEP of the body's smallest triangle
    height: strains of 1e-4 at most, so that no sliver inverts)."""
    corners = body.rest[body.el.tris]  # (m, 3, 2)
    longest = np.linalg.norm(corners - np.roll(corners, 1, axis=1), axis=2).max(axis=1)
    size = float((2.0 * body.el.area / longest).min())
    per_element = phi[body.el.dofs].reshape(-1, 6, phi.shape[1])  # (m, 6, d)
    loads = []
    for j in range(phi.shape[1]):  # once per mode, at scene setup
        step = DERIVATIVE_STEP * size / float(np.abs(phi[:, j]).max())
        dx = (step * phi[:, j]).reshape(-1, 2)
        dH = elasticity.hessian(body.el, body.rest + dx, project=False)
        dH -= elasticity.hessian(body.el, body.rest - dx, project=False)
        f = -np.matmul(dH, per_element[:, :, : j + 1]) / (2.0 * step)  # (m, 6, j + 1)
        out = np.zeros((len(body.m), j + 1))
        np.add.at(out, body.el.dofs, f.reshape(-1, j + 1))
        loads.append(out)
    return np.hstack(loads)


def _m_orthonormal_beyond(D, C, m):
    """M-orthonormal columns spanning the part of span(D) M-orthogonal to
    span(C), largest first; a column of D (nearly) in span(C), or dependent
    on the others below RANK_TOL, adds none."""
    before = np.sqrt(np.einsum("ij,ij->j", D, m[:, None] * D))
    MC = m[:, None] * C
    D = D - C @ np.linalg.solve(C.T @ MC, MC.T @ D)
    after = np.sqrt(np.einsum("ij,ij->j", D, m[:, None] * D))
    keep = after > RANK_TOL * before
    if not np.any(keep):
        return np.zeros((len(m), 0))
    root = np.sqrt(m)[:, None]
    W, sv, _ = np.linalg.svd(root * (D[:, keep] / after[keep]), full_matrices=False)
    return W[:, sv > RANK_TOL * sv[0]] / root


def _product(rows, cols, vals, n):
    """K V for K given as COO triplets, V (n, p)."""

    def times(V):
        out = np.zeros((n, V.shape[1]))
        np.add.at(out, rows, vals[:, None] * V[cols])
        return out

    return times


def _generalized_eigh(K, M):
    """Eigenpairs of K w = lambda M w (M PD), w^T M w = 1, ascending."""
    L = np.linalg.cholesky(M)
    Li = np.linalg.inv(L)
    lam, Y = np.linalg.eigh(Li @ K @ Li.T)
    return lam, Li.T @ Y


@dataclass(frozen=True)
class ModalBasis:
    """x = B q with stiff bodies (see the module docstring).

    inner: the rigid bodies' AffineBasis or None; n_a: its number of unknowns
    (2N without it); keep (n_a,): each inner DOF's q index, -1 on stiff DOFs;
    stiff_of (n_a,): the stiff body of each inner DOF, -1 elsewhere; row_of
    (n_a,): its row in phi; phi (R, W): per stiff DOF its weights on its body's
    6 + k q DOFs (zero-padded to W); first, width (S,): each stiff body's first
    q DOF and count; stiff_bodies (S,): their model body indices; rigid_dof
    (2N,): the vertex DOFs moving with a reduced body (rigid or stiff), which
    Newton's per-vertex force test leaves out; vertex_body, a_dofs: the rigid
    bodies' (as in AffineBasis, a_dofs in q), for the orthogonality term.
    """

    inner: object
    n_q: int
    n_a: int
    keep: np.ndarray
    stiff_of: np.ndarray
    row_of: np.ndarray
    phi: np.ndarray
    first: np.ndarray
    width: np.ndarray
    stiff_bodies: np.ndarray
    rigid_dof: np.ndarray
    vertex_body: np.ndarray
    a_dofs: np.ndarray
    # the stiff bodies' triangles (indices into the model's elements), their body
    # index, their rest data (Lame parameters: the model's, per step) and
    # G (m, 4, W): vec(F) per unit q of the body, B_e Phi_e (constant)
    stiff_tris: np.ndarray
    tri_body: np.ndarray
    tri_elements: object
    tri_G: np.ndarray
    tri_starts: np.ndarray  # (S,) each stiff body's first triangle among stiff_tris
    stiff_vertex: np.ndarray  # (N,) bool
    row_starts: np.ndarray  # (S,) each stiff body's first row in phi (its rows are consecutive)

    @property
    def n_rigid(self):
        return 0 if self.inner is None else self.inner.n_rigid

    def __getattr__(self, name):  # the rigid bodies' data (fit, area, stiffness, affine, ...)
        inner = self.__dict__.get("inner")
        if inner is None:
            raise AttributeError(name)
        return getattr(inner, name)

    # ------------------------------------------- constant index arrays (once)
    @cached_property
    def kept_a(self):
        """The inner DOFs kept one to one (their q DOFs: kept_q)."""
        return np.flatnonzero(self.keep >= 0)

    @cached_property
    def kept_q(self):
        return self.keep[self.kept_a]

    @cached_property
    def stiff_a(self):
        """The stiff bodies' inner DOFs, in inner order: phi's rows in order."""
        return np.flatnonzero(self.keep < 0)

    @cached_property
    def stiff_dofs(self):
        """The vertex DOF of each of phi's rows (inner order is vertex order for
        a stiff body's DOFs: plain DOFs come first in the inner basis)."""
        return np.flatnonzero(np.repeat(self.stiff_vertex, 2))

    @cached_property
    def body_slots(self):
        """(S, W): each stiff body's q DOFs, padded with its first (weight 0)."""
        idx, _ = self._slots(np.arange(len(self.first)))
        return np.where(self.body_valid, idx, self.first[:, None])

    @cached_property
    def body_valid(self):
        """(S, W) bool: which of body_slots are the body's own."""
        return self._slots(np.arange(len(self.first)))[1]

    @cached_property
    def body_q(self):
        """The stiff bodies' q DOFs, body by body (body_slots[body_valid])."""
        return self.body_slots[self.body_valid]

    @cached_property
    def own_blocks(self):
        """(rows, cols, valid (S, W, W)): the triplets' rows and columns of
        one dense block per stiff body on its own q DOFs (blocks[valid])."""
        idx, valid = self._slots(np.arange(len(self.first)))
        on = valid[:, :, None] & valid[:, None, :]
        return (
            np.broadcast_to(idx[:, :, None], on.shape)[on],
            np.broadcast_to(idx[:, None, :], on.shape)[on],
            on,
        )

    def _slots(self, body):
        """(idx (n, W), valid (n, W)): the q DOFs of stiff bodies body (n,)."""
        W = self.phi.shape[1]
        j = np.arange(W)
        return self.first[body][:, None] + j, j < self.width[body][:, None]

    # ----------------------------------------------------------- vectors
    def reduce_gradient(self, g):
        """B^T g for a vertex-space vector g (2N,)."""
        ga = g if self.inner is None else self.inner.reduce_gradient(g)
        out = np.zeros(self.n_q)
        out[self.kept_q] = ga[self.kept_a]
        # the stiff DOFs, in inner order, are phi's rows in order: Phi_s^T g_s per body
        per_body = np.add.reduceat(self.phi * ga[self.stiff_a][:, None], self.row_starts, axis=0)
        out[self.body_q] += per_body[self.body_valid]
        return out

    def expand(self, dq):
        """B dq as vertex positions (N, 2)."""
        da = np.zeros(self.n_a)
        da[self.kept_a] = dq[self.kept_q]
        coefficients = np.where(self.body_valid, dq[self.body_slots], 0.0)  # (S, W), zero-padded
        da[self.stiff_a] = np.einsum("dj,dj->d", self.phi, coefficients[self.stiff_of[self.stiff_a]])
        return da.reshape(-1, 2) if self.inner is None else self.inner.expand(da)

    def dof_weights(self, dofs):
        """(slots (..., W), weights (..., W)): the rows of B of the vertex DOFs
        dofs (...): the q DOFs each depends on and its weights (unused slots:
        a valid q DOF, weight 0).  Through the inner basis first: a rigid
        DOF's 3 slots, a plain one's own (weights 1, 0, 0), mapped to q one
        to one; a stiff DOF's its body's 6 + k with its row of phi."""
        if self.inner is None:
            a, wa = dofs[..., None], np.ones((*dofs.shape, 1))
        else:
            a, wa = self.inner.slots[dofs], self.inner.weights[dofs]
        shape = (*dofs.shape, self.phi.shape[1])
        slots, weights = np.zeros(shape, np.intp), np.zeros(shape)
        body = self.stiff_of[a[..., 0]]
        kept = body < 0
        slots[kept, : a.shape[-1]] = self.keep[a[kept]]
        weights[kept, : a.shape[-1]] = wa[kept]
        on = ~kept
        slots[on] = self.body_slots[body[on]]
        weights[on] = self.phi[self.row_of[a[on, 0]]]
        return slots, weights

    def reduced_mass(self, mass):
        """(rows, cols, vals): B^T M B on the reduced bodies' q DOFs for the
        lumped vertex masses (N,), constant: the rigid bodies' (AffineBasis.reduced_mass)
        renumbered, and per stiff body its dense block Phi_b^T M_b Phi_b.  Inertia
        gives its Hessian so, in q, and its vertex-space diagonal on plain DOFs only."""
        m = np.repeat(mass, 2)[self.stiff_dofs]
        blocks = _grouped_products(self.phi * m[:, None], self.phi, self.row_starts)
        rows, cols, on = self.own_blocks
        stiff = rows, cols, blocks[on]
        if self.inner is None:
            return stiff
        rows, cols, vals = self.inner.reduced_mass(mass)
        rigid = self.keep[rows], self.keep[cols], vals
        return tuple(np.concatenate(a) for a in zip(rigid, stiff, strict=True))

    def rotation_corrected(self, x, dq):
        """dq with each rigid body's rotation made exact (AffineBasis.rotation_corrected);
        a rigid body's DOFs are kept one to one, the stiff bodies' are left as they are."""
        if self.inner is None:
            return dq
        inner_dq = np.zeros(self.n_a)
        inner_dq[self.kept_a] = dq[self.kept_q]
        out = dq.copy()
        out[self.kept_q] = self.inner.rotation_corrected(x, inner_dq)[self.kept_a]
        return out

    def fixed(self, fixed_dof):
        """(n_q,) bool: the q DOFs of fixed vertex DOFs (a stiff body's pins are springs: none)."""
        fa = fixed_dof if self.inner is None else self.inner.fixed(fixed_dof)
        out = np.zeros(self.n_q, bool)
        out[self.kept_q] = fa[self.kept_a]
        return out

    def coords(self, x):
        """q of positions x (N, 2) in the range of B (least squares per stiff body)."""
        a = x.ravel() if self.inner is None else self.inner.coords(x)
        q = np.zeros(self.n_q)
        q[self.kept_q] = a[self.kept_a]
        for s in range(len(self.first)):  # once per stiff body, not in Newton's loop
            on = np.flatnonzero(self.stiff_of == s)
            w = self.width[s]
            sol = np.linalg.lstsq(self.phi[self.row_of[on], :w], a[on], rcond=None)[0]
            q[self.first[s] : self.first[s] + w] = sol
        return q

    # ----------------------------------------------------------- matrices
    def reduce_triplets(self, rows, cols, vals):
        """B^T H B for H given as COO triplets in vertex DOFs: triplets in q.
        Through the inner basis first; then entries between kept DOFs map one
        to one (first, in their order), and the nonzero ones touching a stiff
        DOF are reduced by :meth:`_reduce_stiff` (a stiff body's inertia is
        not among them: it is constant, :meth:`reduced_mass`)."""
        if self.inner is not None:
            rows, cols, vals = self.inner.reduce_triplets(rows, cols, vals)
        sr, sc = self.stiff_of[rows], self.stiff_of[cols]
        kept = (sr < 0) & (sc < 0)
        parts = [(self.keep[rows[kept]], self.keep[cols[kept]], vals[kept])]
        on = ~kept & (vals != 0.0)  # a dense diagonal's zeros on stiff DOFs add nothing
        if on.any():
            parts += self._reduce_stiff(rows[on], cols[on], vals[on], sr[on], sc[on])
        return tuple(np.concatenate([p[i] for p in parts]) for i in range(3))

    def _reduce_stiff(self, rows, cols, vals, sr, sc):
        """The triplets in q of entries (in inner DOFs) touching a stiff DOF
        (sr, sc: the stiff body of their row and column, -1 on kept DOFs),
        in two passes: columns first (H Phi, summed per (row, stiff body)),
        then rows (Phi^T of that, summed into one dense block per pair of
        stiff bodies)."""
        parts = []
        # stiff rows, kept columns: Phi^T H on the row side only
        on = sc < 0
        idx, valid = self._slots(sr[on])
        v = self.phi[self.row_of[rows[on]]] * vals[on][:, None]
        parts.append((idx[valid], np.broadcast_to(self.keep[cols[on]][:, None], idx.shape)[valid], v[valid]))
        # stiff columns: H Phi summed per (row, column body)
        on = ~on
        r, c, s_c = rows[on], cols[on], sc[on]
        S = len(self.first)
        keys, which = np.unique(r * S + s_c, return_inverse=True)
        W = self.phi.shape[1]
        v = self.phi[self.row_of[c]] * vals[on][:, None]
        Y = np.bincount(
            (which.ravel()[:, None] * W + np.arange(W)).ravel(), v.ravel(), len(keys) * W
        ).reshape(-1, W)
        yr, ys = keys // S, keys % S
        kept = self.stiff_of[yr] < 0
        idx, valid = self._slots(ys[kept])
        parts.append(
            (np.broadcast_to(self.keep[yr[kept]][:, None], idx.shape)[valid], idx[valid], Y[kept][valid])
        )
        # stiff rows of H Phi: Phi^T (H Phi), one dense block per pair of stiff bodies
        st = ~kept
        pr, pc = self.stiff_of[yr[st]], ys[st]
        pair_keys = pr * S + pc
        order = np.argsort(pair_keys, kind="stable")
        pairs, starts = np.unique(pair_keys[order], return_index=True)
        blocks = _grouped_products(self.phi[self.row_of[yr[st][order]]], Y[st][order], starts)
        parts.append(self._block_triplets(pairs // S, pairs % S, blocks))
        return parts

    def _block_triplets(self, a, b, blocks):
        """Triplets of the dense blocks (G, W, W) between stiff bodies a and b (G,)."""
        ia, va = self._slots(a)
        ib, vb = self._slots(b)
        valid = va[:, :, None] & vb[:, None, :]
        return (
            np.broadcast_to(ia[:, :, None], blocks.shape)[valid],
            np.broadcast_to(ib[:, None, :], blocks.shape)[valid],
            blocks[valid],
        )


def _grouped_products(P, Y, starts):
    """(G, W, W): P_g^T Y_g for the row groups of P, Y (n, W) starting at
    starts (G,): one matrix product per group (pairs of stiff bodies: one per
    body and per pair in contact), not an outer product per row."""
    ends = np.append(starts[1:], len(P))
    if len(starts) == 0:  # no entry between stiff bodies (free flight)
        return np.zeros((0, P.shape[1], P.shape[1]))
    return np.stack([P[s:e].T @ Y[s:e] for s, e in zip(starts, ends, strict=True)])


def build_modal_basis(inner, model_parts, stiff, modes):
    """The basis of a model with stiff bodies (stiff: bool per body, modes:
    k per body) over the inner basis of its rigid bodies (or None).
    model_parts: (rest (N, 2), body_slices, elements (all triangles, with
    their Lame parameters), mass (N,))."""
    rest, slices, elements, mass = model_parts
    n = len(rest)
    rigid_dof = np.zeros(2 * n, bool) if inner is None else inner.rigid_dof.copy()
    n_a = 2 * n if inner is None else inner.n_q
    # inner index of each plain vertex DOF: they come first, in vertex order (solver/basis.py)
    a_index = np.where(rigid_dof, -1, np.cumsum(~rigid_dof) - 1)
    stiff_ids = np.flatnonzero(stiff)
    columns, dof_lists = [], []
    for b in stiff_ids:  # once per scene, per body
        s = slices[b]
        local = rest[s]
        mine = (elements.tris[:, 0] >= s.start) & (elements.tris[:, 0] < s.stop)
        tris = elements.tris[mine] - s.start
        phi = elastic_basis(local, tris, elements.mu[mine], elements.lam[mine], mass[s], modes[b])
        body_mass = float(mass[s].sum())
        columns.append(
            np.column_stack([affine_columns(local - local.mean(axis=0)), phi * np.sqrt(body_mass)])
        )
        dof_lists.append(np.arange(2 * s.start, 2 * s.stop))
    width = np.array([c.shape[1] for c in columns], np.intp)
    W = int(width.max())
    stiff_dof = np.concatenate(dof_lists)
    stiff_a = a_index[stiff_dof]
    stiff_of = np.full(n_a, -1, np.intp)
    stiff_of[stiff_a] = np.repeat(np.arange(len(stiff_ids)), [len(d) for d in dof_lists])
    row_of = np.full(n_a, -1, np.intp)
    row_of[stiff_a] = np.arange(len(stiff_a))
    phi = np.zeros((len(stiff_a), W))
    phi[:] = np.concatenate([np.pad(c, ((0, 0), (0, W - c.shape[1]))) for c in columns])
    n_kept = n_a - len(stiff_a)
    keep = np.full(n_a, -1, np.intp)
    keep[stiff_of < 0] = np.arange(n_kept)
    first = n_kept + np.concatenate([[0], np.cumsum(width)[:-1]])
    rigid_dof[stiff_dof] = True
    vertex_body = np.full(n, -1, np.intp) if inner is None else inner.vertex_body
    a_dofs = np.zeros((0, 4), np.intp) if inner is None else keep[inner.a_dofs]
    stiff_vertex = np.zeros(n, bool)
    stiff_vertex[stiff_dof[0::2] // 2] = True
    stiff_tris = np.flatnonzero(stiff_vertex[elements.tris[:, 0]])
    tri_dofs = (2 * elements.tris[stiff_tris][:, :, None] + np.arange(2)).reshape(-1, 6)
    tri_rows = row_of[a_index[tri_dofs]]
    tri_body = stiff_of[a_index[tri_dofs[:, 0]]]
    tri_elements = elasticity.make_elements(rest, elements.tris[stiff_tris], 1.0, 0.0)
    return ModalBasis(
        inner,
        int(n_kept + width.sum()),
        n_a,
        keep,
        stiff_of,
        row_of,
        phi,
        first,
        width,
        stiff_ids,
        rigid_dof,
        vertex_body,
        a_dofs,
        stiff_tris,
        tri_body,
        tri_elements,
        np.matmul(tri_elements.B, phi[tri_rows]),
        np.flatnonzero(np.diff(tri_body, prepend=-1)),
        stiff_vertex,
        np.concatenate([[0], np.cumsum([len(d) for d in dof_lists])[:-1]]).astype(np.intp),
    )


class ModalElasticity:
    """The Neo-Hookean energy of the stiff bodies' triangles (h^2-weighted):
    value and gradient in vertex space, as :class:`~solver.terms.Elasticity`
    (the line search and the force test read them), Hessian in q
    (:meth:`reduced_hessian`): per triangle Phi_e^T H_e Phi_e, summed into one
    dense (6 + k)^2 block per body, rather than B^T H B over every entry."""

    per_h2, stage = True, "elasticity"

    def __init__(self, basis, mu, lam, weight):
        """mu, lam: the stiff triangles' Lame parameters (the model's: animated ones change)."""
        self.basis, self.weight = basis, weight
        self.el = dataclasses.replace(basis.tri_elements, mu=mu, lam=lam)
        self.G = basis.tri_G
        self.G_rows = self.G.reshape(-1, self.G.shape[2])
        self.block_ends = np.append(basis.tri_starts[1:], len(self.G))

    @classmethod
    def build(cls, model, consts):
        basis = getattr(model, "basis", None)
        if not isinstance(basis, ModalBasis):
            return None
        keep = basis.stiff_tris
        return cls(basis, model.elements.mu[keep], model.elements.lam[keep], consts.h * consts.h)

    def value(self, x, cs):
        return elasticity.value(self.el, x)

    def gradient(self, x, cs, T):
        T.add_gradient_at(self.el.dofs, self.weight * elasticity.gradient(self.el, x))

    def gradient_hessian(self, x, cs, T, project, majorize=None):
        self.gradient(x, cs, T)  # the Hessian is added in q (reduced_hessian)

    def reduced_hessian(self, x, project):
        """(rows, cols, vals): the weighted Hessian in q, one dense block per
        stiff body (element Hessians PSD-projected first if project)."""
        el = self.el
        F = elasticity.deformation_gradient(el, x)
        if project:
            C = elasticity.projected_stress_derivative(el, F)
        else:
            C = elasticity.stress_derivative(el, F).reshape(-1, 4, 4)
        # H_e = A B^T C B, so Phi_e^T H_e Phi_e = A G^T C G with G = B Phi_e
        # (4 x W, constant): a body's block is one product over its triangles
        CG = np.matmul(C * (self.weight * el.area)[:, None, None], self.G)  # (m, 4, W)
        blocks = np.stack(
            [  # once per stiff body; its triangles are consecutive (bodies' elements are)
                self.G_rows[4 * s : 4 * e].T @ CG[s:e].reshape(-1, CG.shape[2])
                for s, e in zip(self.basis.tri_starts, self.block_ends, strict=True)
            ]
        )
        rows, cols, on = self.basis.own_blocks  # every stiff body has triangles, in body order
        return rows, cols, blocks[on]
