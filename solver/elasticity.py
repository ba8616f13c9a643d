"""Compressible Neo-Hookean elasticity on linear triangles (plane strain).

Energy density (2D)::

    Psi(F) = mu/2 (|F|_F^2 - 2) - mu ln J + lam/2 (ln J)^2,   J = det F

Per triangle e with rest area A_e: E_e = A_e Psi(F_e), F_e = Ds Dm^-1.
The energy is +inf for J <= 0 (inverted or degenerate triangles).

Index alphabet used in the einsums: n = element, a/b = local vertex (3),
i/k = world axis, j/l = material axis (2).
"""

from dataclasses import dataclass

import numpy as np

from .assembly import block_pattern, stencil_dofs


@dataclass(frozen=True)
class ElasticElements:
    """Per-triangle rest data.

    tris: (m, 3) global vertex indices; area: (m,) rest areas;
    D: (m, 3, 2) shape-function gradients (F = sum_a x_a D_a^T);
    B: (m, 4, 6) the same as the linear map vec(F) = B x_local
       (vec row-major: F_ij at 2i+j; x_local = [x0, y0, x1, y1, x2, y2]);
    mu, lam: (m,) Lame parameters;
    BT: (m, 6, 4) contiguous transpose of B;
    dofs (m*6,), rows/cols (m*36,): precomputed scatter pattern;
    tris_t (3, m), D_t (3, 2, m): tris and D element-last (contiguous rows
    for the deformation gradient's elementwise sums).
    """

    tris: np.ndarray
    area: np.ndarray
    D: np.ndarray
    B: np.ndarray
    BT: np.ndarray
    mu: np.ndarray
    lam: np.ndarray
    dofs: np.ndarray
    rows: np.ndarray
    cols: np.ndarray
    tris_t: np.ndarray
    D_t: np.ndarray


def lame(E, nu):
    """Plane-strain Lame parameters (mu, lambda) from Young's modulus and Poisson ratio."""
    E = np.asarray(E, float)
    nu = np.asarray(nu, float)
    return E / (2.0 * (1.0 + nu)), E * nu / ((1.0 + nu) * (1.0 - 2.0 * nu))


def make_elements(rest, tris, E, nu):
    """Precompute rest-shape data. rest (N,2), tris (m,3), E/nu (m,) or scalars."""
    Dm = np.stack(
        [rest[tris[:, 1]] - rest[tris[:, 0]], rest[tris[:, 2]] - rest[tris[:, 0]]], axis=2
    )  # (m, 2, 2) columns
    det = Dm[:, 0, 0] * Dm[:, 1, 1] - Dm[:, 0, 1] * Dm[:, 1, 0]
    Dm_inv = np.linalg.inv(Dm)
    D = np.concatenate([-Dm_inv.sum(axis=1, keepdims=True), Dm_inv], axis=1)  # (m,3,2)
    mu, lam = lame(np.broadcast_to(E, det.shape), np.broadcast_to(nu, det.shape))
    B = np.einsum("ik,naj->nijak", np.eye(2), D).reshape(len(tris), 4, 6)
    rows, cols = block_pattern(tris)
    BT = np.ascontiguousarray(np.swapaxes(B, 1, 2))
    return ElasticElements(
        tris,
        0.5 * det,
        D,
        B,
        BT,
        mu,
        lam,
        stencil_dofs(tris).ravel(),
        rows,
        cols,
        np.ascontiguousarray(tris.T),
        np.ascontiguousarray(D.transpose(1, 2, 0)),
    )


ROWS_MIN = 256  # elements from which F is summed on element-last rows (fewer numpy calls below)


def deformation_gradient(el, x):
    """F (m, 2, 2) for positions x (N, 2): sum over the corners a of x_a D_a^T,
    each entry F_ij = sum_a x_ai D_aj on contiguous element-last rows
    (einsum's generic loop took 1.6 ms on 16k triangles, broadcasting (m, 3,
    2) blocks 0.8 ms on 12.8k, this 0.15); below ROWS_MIN elements the
    broadcast, whose 7 numpy calls cost less than these 25 (S1: 16
    triangles).  Both are the same sums in the same order."""
    m = el.tris_t.shape[1]
    if m < ROWS_MIN:
        X, D = x[el.tris], el.D
        F = X[:, 0, :, None] * D[:, 0, None, :]
        F += X[:, 1, :, None] * D[:, 1, None, :]
        F += X[:, 2, :, None] * D[:, 2, None, :]
        return F
    F, term = np.empty((2, 2, m)), np.empty(m)
    for i in range(2):
        X = x[:, i][el.tris_t]  # (3, m) coordinate i of the corners
        for j in range(2):
            np.multiply(X[0], el.D_t[0, j], out=F[i, j])
            F[i, j] += np.multiply(X[1], el.D_t[1, j], out=term)
            F[i, j] += np.multiply(X[2], el.D_t[2, j], out=term)
    return np.ascontiguousarray(F.transpose(2, 0, 1))


def _det(F):
    return F[:, 0, 0] * F[:, 1, 1] - F[:, 0, 1] * F[:, 1, 0]


def _cofactor(F):
    """dJ/dF for 2x2 F, (m, 2, 2)."""
    cof = np.empty_like(F)
    cof[:, 0, 0], cof[:, 1, 1] = F[:, 1, 1], F[:, 0, 0]
    np.negative(F[:, 1, 0], out=cof[:, 0, 1])
    np.negative(F[:, 0, 1], out=cof[:, 1, 0])
    return cof


def element_energies(el, x):
    """(m,) energies; inf where J <= 0."""
    F = deformation_gradient(el, x)
    J = _det(F)
    ok = J > 0
    lnJ = np.log(np.where(ok, J, 1.0))
    psi = 0.5 * el.mu * (np.einsum("nij,nij->n", F, F) - 2.0) - el.mu * lnJ + 0.5 * el.lam * lnJ**2
    return np.where(ok, el.area * psi, np.inf)


def value(el, x):
    return float(element_energies(el, x).sum())


def _stress(el, F, J, cof):
    """First Piola-Kirchhoff stress P = mu F + (lam ln J - mu)/J cof(F)."""
    lnJ = np.log(J)
    return el.mu[:, None, None] * F + ((el.lam * lnJ - el.mu) / J)[:, None, None] * cof


def gradient(el, x):
    """Per-element gradients (m, 6) in the vertex order of el.tris."""
    F = deformation_gradient(el, x)
    J = _det(F)
    P = _stress(el, F, J, _cofactor(F)).reshape(len(F), 1, 4)
    return el.area[:, None] * (P @ el.B)[:, 0]


# d^2 J / dF_ij dF_kl for J = F00 F11 - F01 F10
_D2J = np.zeros((2, 2, 2, 2))
_D2J[0, 0, 1, 1] = _D2J[1, 1, 0, 0] = 1.0
_D2J[0, 1, 1, 0] = _D2J[1, 0, 0, 1] = -1.0
_I4 = np.einsum("ik,jl->ijkl", np.eye(2), np.eye(2))


# Orthonormal bases of the +1 / -1 eigenspaces of d2J (vec row-major):
# E+ = conformal directions (rotation/scale), E- = anti-conformal (shear/flip).
_UP = np.array([[1.0, 0.0, 0.0, 1.0], [0.0, 1.0, -1.0, 0.0]]) / np.sqrt(2.0)
_UM = np.array([[1.0, 0.0, 0.0, -1.0], [0.0, 1.0, 1.0, 0.0]]) / np.sqrt(2.0)


def projected_stress_derivative(el, F, deficit=None):
    """dP/dF (m, 4, 4) with negative eigenvalues clamped, in closed form;
    deficit: see :func:`~solver.linsolve.linalg.project_psd` (here in F's space).

    dP/dF = mu I + phi'' g g^T + phi' d2J with g = d2J vec(F) (J is quadratic).
    Split vec(F) = f+ + f- over the eigenspaces of d2J (eigenvalues +-1):
    g = f+ - f-, so the direction in E+ orthogonal to f+ has eigenvalue
    mu + phi', the one in E- orthogonal to f- has mu - phi', and the plane
    spanned by f+, f- carries the 2x2 block
    [[mu + phi' + phi'' |f+|^2, -phi'' |f+||f-|], [., mu - phi' + phi'' |f-|^2]].
    """
    m = len(F)
    f = F.reshape(m, 4)
    J = _det(F)
    lnJ = np.log(J)
    d1 = (el.lam * lnJ - el.mu) / J
    d2 = (el.mu + el.lam - el.lam * lnJ) / (J * J)
    a = f @ _UP.T  # (m,2) coordinates of f+ in E+
    b = f @ _UM.T  # (m,2) coordinates of f- in E-
    na = np.linalg.norm(a, axis=1)
    nb = np.linalg.norm(b, axis=1)
    a_dir = a / na[:, None]  # J > 0 implies f+ != 0
    b_dir = np.where((nb > 1e-300)[:, None], b / np.where(nb > 1e-300, nb, 1.0)[:, None], [1.0, 0.0])
    vp = a_dir @ _UP  # unit f+ direction (m,4)
    vm = b_dir @ _UM  # unit f- direction
    wp = np.stack([-a_dir[:, 1], a_dir[:, 0]], axis=1) @ _UP  # E+ orthogonal to f+
    wm = np.stack([-b_dir[:, 1], b_dir[:, 0]], axis=1) @ _UM  # E- orthogonal to f-
    # 2x2 block on (vp, vm), symmetric [[p, q], [q, r]]
    p = el.mu + d1 + d2 * na * na
    r = el.mu - d1 + d2 * nb * nb
    q = -d2 * na * nb
    half_tr, half_diff = 0.5 * (p + r), 0.5 * (p - r)
    rad = np.sqrt(half_diff * half_diff + q * q)
    l1, l2 = half_tr + rad, half_tr - rad
    theta = 0.5 * np.arctan2(2.0 * q, p - r)  # eigenvector of l1: (cos, sin)
    c, s = np.cos(theta), np.sin(theta)
    e1 = c[:, None] * vp + s[:, None] * vm
    e2 = -s[:, None] * vp + c[:, None] * vm
    Qt = np.stack([e1, e2, wp, wm], axis=1)  # (m, 4, 4) rows
    lam = np.stack([l1, l2, el.mu + d1, el.mu - d1], axis=1)
    if deficit is not None:
        which = np.flatnonzero(lam.min(axis=1) < 0.0)
        deficit.append((which, _from_eigen(Qt[which], np.maximum(-lam[which], 0.0))))
    return _from_eigen(Qt, np.maximum(lam, 0.0))  # clamped eigenvalues


def _from_eigen(Qt, lam):
    """Symmetric matrices (m, 4, 4) Q diag(lam) Q^T from eigenvectors as rows
    Qt (m, 4, 4) and eigenvalues lam (m, 4); both matmul operands contiguous
    (batched matmul is several times slower on swapped-axes views)."""
    return (np.swapaxes(Qt, 1, 2) * lam[:, None, :]) @ Qt


def stress_derivative(el, F):
    """dP/dF (m, 2, 2, 2, 2)."""
    J = _det(F)
    cof = _cofactor(F)
    lnJ = np.log(J)
    d1 = (el.lam * lnJ - el.mu) / J  # phi'(J)
    d2 = (el.mu + el.lam - el.lam * lnJ) / (J * J)  # phi''(J)
    return (
        el.mu[:, None, None, None, None] * _I4
        + d2[:, None, None, None, None] * np.einsum("nij,nkl->nijkl", cof, cof)
        + d1[:, None, None, None, None] * _D2J
    )


def _nodal(el, C, which=slice(None)):
    """Per-element Hessians (m, 6, 6) A B^T C B of the elements ``which``
    from their dP/dF blocks C (m, 4, 4) (the chain rule through F = Ds Dm^-1)."""
    return (el.BT[which] @ (C * el.area[which, None, None])) @ el.B[which]


def gradient_hessian(el, x, project=True, deficit=None):
    """Per-element gradients (m, 6) and Hessians (m, 6, 6) sharing F;
    deficit: see :func:`~solver.linsolve.linalg.project_psd`."""
    F = deformation_gradient(el, x)
    m = len(F)
    J = _det(F)
    cof = _cofactor(F)
    P = _stress(el, F, J, cof).reshape(m, 1, 4)
    if not project:
        C = stress_derivative(el, F).reshape(m, 4, 4)
    else:
        in_F = None if deficit is None else []
        C = projected_stress_derivative(el, F, in_F)
        if in_F:
            ((which, D),) = in_F
            deficit.append((which, _nodal(el, D, which)))
    return el.area[:, None] * (P @ el.B)[:, 0], _nodal(el, C)


def hessian(el, x, project=True):
    """Per-element Hessians (m, 6, 6); dP/dF is PSD-projected first (then
    the chain rule keeps it PSD) unless project=False."""
    return gradient_hessian(el, x, project)[1]
