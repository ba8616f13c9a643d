"""Rigidity of affine bodies: the orthogonality energy
kappa_A V ||A^T A - I||_F^2 of each rigid body's affine map A (affine body
dynamics), zero exactly on rotations, and its term in the incremental
potential (:class:`Orthogonality`).

Kernels are batched over bodies, A (R, 2, 2), and written per unit
coefficient: with S = A^T A - I,

    E = sum_ij S_ij^2,   dE/dA = 4 A S,
    d2E/dA_kl dA_mn = 4 (delta_km S_nl + delta_ln (A A^T)_km + A_kn A_ml).

The term lives in vertex space for its value and gradient (A is a linear
fit of x, :meth:`~solver.basis.AffineBasis.affine`, so dE/dx_i = dE/dA w_i)
and in q for its Hessian (B^T L^T H_A L B = H_A on the body's A DOFs:
:meth:`Orthogonality.reduced_hessian`), where it is a 4 x 4 block per body
rather than a dense block over all the body's vertices.
"""

from __future__ import annotations

import numpy as np

from .linsolve import project_psd

_I = np.eye(2)


def strain(A):
    """S = A^T A - I (R, 2, 2)."""
    return np.einsum("rki,rkj->rij", A, A) - _I


def energy(A):
    """(R,) ||A^T A - I||_F^2."""
    S = strain(A)
    return np.einsum("rij,rij->r", S, S)


def energy_gradient(A):
    """(R, 2, 2) dE/dA = 4 A S."""
    return 4.0 * np.einsum("rkj,rjl->rkl", A, strain(A))


def energy_hessian(A):
    """(R, 4, 4) d2E/dA^2, A flattened row-major (A_kl at 2k + l)."""
    At = np.swapaxes(A, 1, 2)
    S = At @ A - _I  # strain(A), symmetric
    AAt = A @ At
    # [r, k, l, m, n]: delta_km S_nl + delta_ln (A A^T)_km + A_kn A_ml
    H = (
        _I[None, :, None, :, None] * S[:, None, :, None, :]
        + _I[None, None, :, None, :] * AAt[:, :, None, :, None]
        + A[:, :, None, None, :] * At[:, None, :, :, None]
    )
    return 4.0 * H.reshape(-1, 4, 4)


def energy_hessian_psd(A):
    """(R, 4, 4) :func:`energy_hessian` with its negative eigenvalues clamped to
    zero, without an eigensolver where it can.

    E depends on A through its singular values only, (s1^2 - 1)^2 + (s2^2 - 1)^2,
    so its Hessian's eigenvectors are those of every isotropic energy: in
    A = U diag(s) V^T, the scalings U e_i e_i^T V^T (eigenvalues 4 (3 s_i^2 - 1)),
    the flip U [[0, 1], [1, 0]] V^T / sqrt 2 (4 (|A|^2 + det A - 1)) and the
    twist U [[0, -1], [1, 0]] V^T / sqrt 2 = J R / sqrt 2, R the rotation
    closest to A (4 (|A|^2 - det A - 1)).  Near a rotation only the twist's can
    be negative (a body squeezed, |A|^2 - det A < 1), and it is removed in
    closed form.  Bodies with another negative eigenvalue (crushed: s^2 < 1/3,
    or |A|^2 + det A < 1) or without a closest rotation go through eigh."""
    H = energy_hessian(A)
    a, b, c, d = A[:, 0, 0], A[:, 0, 1], A[:, 1, 0], A[:, 1, 1]
    norm2 = a * a + b * b + c * c + d * d
    det = a * d - b * c
    twist = 4.0 * (norm2 - det - 1.0)
    flip = 4.0 * (norm2 + det - 1.0)
    # the smaller s^2, a root of t^2 - |A|^2 t + det^2 (discriminant (s1^2 - s2^2)^2)
    small = 0.5 * (norm2 - np.sqrt(np.maximum(norm2 * norm2 - 4.0 * det * det, 0.0)))
    cos, sin = a + d, c - b  # R = [[cos, -sin], [sin, cos]] / r maximizes tr(R^T A)
    r = np.hypot(cos, sin)
    closed = (flip >= 0.0) & (3.0 * small >= 1.0) & (r > 1e-8 * np.sqrt(norm2))
    r = np.where(closed, r, 1.0)
    t = np.stack([-sin, -cos, cos, -sin], axis=1) / (np.sqrt(2.0) * r)[:, None]  # J R / sqrt 2
    H = H - (np.minimum(twist, 0.0) * closed)[:, None, None] * t[:, :, None] * t[:, None, :]
    if not closed.all():
        H[~closed] = project_psd(H[~closed])
    return H


class Orthogonality:
    """The orthogonality energy of every rigid body (h^2-weighted, a potential):
    sum_b kappa_A,b V_b ||A_b^T A_b - I||_F^2.  Built only for models with a
    basis; its Hessian is given in q (:meth:`reduced_hessian`)."""

    per_h2, stage = True, "elasticity"

    def __init__(self, basis, weight):
        self.basis, self.weight = basis, weight
        self.coef = basis.stiffness * basis.area  # (R,) kappa_A V
        # A is read off the anchors (AffineBasis.affine): the gradient lives on them
        self.dofs = (2 * basis.anchors[:, :, None] + np.arange(2)).ravel()
        d = basis.a_dofs  # the Hessian's 4 x 4 blocks on A's q DOFs
        self.pattern = np.repeat(d, 4, axis=1).ravel(), np.tile(d, (1, 4)).ravel()

    @classmethod
    def build(cls, model, consts):
        basis = getattr(model, "basis", None)
        if basis is None or not basis.n_rigid:  # stiff bodies alone: no rigidity term
            return None
        return cls(basis, consts.h * consts.h)

    def value(self, x, cs):
        return float(np.dot(self.coef, energy(self.basis.affine(x))))

    def gradient(self, x, cs, T):
        b = self.basis
        D = self.coef[:, None, None] * energy_gradient(b.affine(x))  # (R, 2, 2)
        g = np.einsum("rkl,rjl->rjk", D, b.anchor_fit)  # dE/dx_j = D w_j at the anchors
        T.add_gradient_at(self.dofs, self.weight * g)

    def gradient_hessian(self, x, cs, T, project, majorize=None):
        self.gradient(x, cs, T)  # the Hessian is added in q (reduced_hessian)

    def strain_error(self, x, g):
        """(R,) the strain each rigid body is still off its balance by, for the
        vertex-space gradient g (2N,) at x: the stretching part of its A
        gradient, sym(A^T dE/dA), over the orthogonality energy's stiffness
        against stretching near a rotation (8 h^2 kappa_A V per unit of
        A^T dA, which changes the strain by twice that).  Newton's force test
        leaves it out: a rigid body's vertices balance only as a body."""
        A = self.basis.affine(x)
        G = self.basis.reduce_gradient(g)[self.basis.a_dofs].reshape(-1, 2, 2)
        M = np.einsum("rki,rkj->rij", A, G)
        stretch = np.linalg.norm(0.5 * (M + np.swapaxes(M, 1, 2)), axis=(1, 2))
        return stretch / (4.0 * self.weight * self.coef)

    def reduced_hessian(self, x, project):
        """(rows, cols, vals): the weighted Hessian in q, a 4 x 4 block on each
        body's A DOFs, PSD-projected if project."""
        A = self.basis.affine(x)
        H = (self.weight * self.coef)[:, None, None] * (
            energy_hessian_psd(A) if project else energy_hessian(A)
        )
        return (*self.pattern, H.ravel())
