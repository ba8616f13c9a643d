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

from .linalg import project_psd


@dataclass(frozen=True)
class ElasticElements:
    """Per-triangle rest data.

    tris: (m, 3) global vertex indices; area: (m,) rest areas;
    D: (m, 3, 2) shape-function gradients (F = sum_a x_a D_a^T);
    mu, lam: (m,) Lame parameters.
    """
    tris: np.ndarray
    area: np.ndarray
    D: np.ndarray
    mu: np.ndarray
    lam: np.ndarray


def lame(E, nu):
    """Plane-strain Lame parameters (mu, lambda) from Young's modulus and Poisson ratio."""
    E = np.asarray(E, float)
    nu = np.asarray(nu, float)
    return E / (2.0 * (1.0 + nu)), E * nu / ((1.0 + nu) * (1.0 - 2.0 * nu))


def make_elements(rest, tris, E, nu):
    """Precompute rest-shape data. rest (N,2), tris (m,3), E/nu (m,) or scalars."""
    Dm = np.stack([rest[tris[:, 1]] - rest[tris[:, 0]],
                   rest[tris[:, 2]] - rest[tris[:, 0]]], axis=2)      # (m, 2, 2) columns
    det = Dm[:, 0, 0] * Dm[:, 1, 1] - Dm[:, 0, 1] * Dm[:, 1, 0]
    Dm_inv = np.linalg.inv(Dm)
    D = np.concatenate([-Dm_inv.sum(axis=1, keepdims=True), Dm_inv], axis=1)  # (m,3,2)
    mu, lam = lame(np.broadcast_to(E, det.shape), np.broadcast_to(nu, det.shape))
    return ElasticElements(tris, 0.5 * det, D, mu, lam)


def deformation_gradient(el, x):
    """F (m, 2, 2) for positions x (N, 2)."""
    return np.einsum("nai,naj->nij", x[el.tris], el.D)


def _det(F):
    return F[:, 0, 0] * F[:, 1, 1] - F[:, 0, 1] * F[:, 1, 0]


def _cofactor(F):
    """dJ/dF for 2x2 F, (m, 2, 2)."""
    return np.stack([np.stack([F[:, 1, 1], -F[:, 1, 0]], axis=1),
                     np.stack([-F[:, 0, 1], F[:, 0, 0]], axis=1)], axis=1)


def element_energies(el, x):
    """(m,) energies; inf where J <= 0."""
    F = deformation_gradient(el, x)
    J = _det(F)
    ok = J > 0
    lnJ = np.log(np.where(ok, J, 1.0))
    psi = (0.5 * el.mu * (np.einsum("nij,nij->n", F, F) - 2.0)
           - el.mu * lnJ + 0.5 * el.lam * lnJ ** 2)
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
    P = _stress(el, F, J, _cofactor(F))
    return np.einsum("n,nij,naj->nai", el.area, P, el.D).reshape(len(F), 6)


# d^2 J / dF_ij dF_kl for J = F00 F11 - F01 F10
_D2J = np.zeros((2, 2, 2, 2))
_D2J[0, 0, 1, 1] = _D2J[1, 1, 0, 0] = 1.0
_D2J[0, 1, 1, 0] = _D2J[1, 0, 0, 1] = -1.0
_I4 = np.einsum("ik,jl->ijkl", np.eye(2), np.eye(2))


def stress_derivative(el, F):
    """dP/dF (m, 2, 2, 2, 2)."""
    J = _det(F)
    cof = _cofactor(F)
    lnJ = np.log(J)
    d1 = (el.lam * lnJ - el.mu) / J                 # phi'(J)
    d2 = (el.mu + el.lam - el.lam * lnJ) / (J * J)  # phi''(J)
    return (el.mu[:, None, None, None, None] * _I4
            + d2[:, None, None, None, None] * np.einsum("nij,nkl->nijkl", cof, cof)
            + d1[:, None, None, None, None] * _D2J)


def hessian(el, x, project=True):
    """Per-element Hessians (m, 6, 6); dP/dF is PSD-projected first (then
    the chain rule keeps it PSD) unless project=False."""
    F = deformation_gradient(el, x)
    C = stress_derivative(el, F)
    m = len(F)
    if project:
        C = project_psd(C.reshape(m, 4, 4)).reshape(m, 2, 2, 2, 2)
    H = np.einsum("n,naj,nijkl,nbl->naibk", el.area, el.D, C, el.D)
    return H.reshape(m, 6, 6)
