"""PSD projection of the point-edge barrier Hessians in closed form.

A stencil's barrier Hessian is ``H = c1 Hd + c2 g g^T`` (Hd, g: the Hessian
and gradient of the squared distance, c1 = coef B'/dhat^2, c2 = coef
B''/dhat^4).  Its eigen-structure is known without a 6 x 6 eigensolver
(batched ``eigh`` cost 4 us a stencil, most of R1000's projection).  Write
vectors of the stencil's 6 DOFs as 3 x 2 matrices (vertex x coordinate),
gamma = [1, t - 1, -t] (t the closest point's parameter), n the unit
contact normal, tau the unit direction across it, d the distance:

* point-point (PP0, PP1, the convergent duplicates): Hd = 2 (gamma gamma^T)
  (x) I, g = 2 d gamma (x) n, so H has the eigenvectors A = gamma^ (x) n and
  T = gamma^ (x) tau (gamma^ = gamma / |gamma|) with the eigenvalues
  (2 c1 + 4 c2 d^2) |gamma|^2 and 2 c1 |gamma|^2, and none other.
* point-line (PL, tau along the edge): with C = c (x) n / sqrt(2), c = [0, -1, 1],
  Hd = 2 |gamma|^2 A A^T - beta (T C^T + C T^T) - delta C C^T, beta =
  2 sqrt(2) d |gamma| / |e|, delta = 4 d^2 / |e|^2 (Hd's form in
  solver/distance.py: 2 (gamma gamma^T) (x) I - v v^T / (2 |e|^2), v = -2 (|e|
  gamma (x) tau + d c (x) n)).  H lives in the 3-D span of A, T and C; in the
  orthonormal basis (A, Z, T), Z = (C - k A) / s, k = A.C = (1 - 2t) /
  (sqrt(2) |gamma|), s = sqrt(3 / 2) / |gamma|, it is the 3 x 3 matrix M
  below.  With c1 < 0 < 2 c1 + 4 c2 d^2 (a barrier, coef > 0) M = a e0 e0^T
  + K, K of rank 2 with one negative eigenvalue, det M = -a b^2 s^2 <= 0:
  exactly one eigenvalue is negative.  The largest comes from the
  trigonometric solution of M's characteristic cubic, the negative one from
  the other two's sum and product, its eigenvector from the adjugate of
  M - lambda I (k v v^T, k its trace).

What the projection adds, N = sum over negative eigenvalues of -lambda u u^T,
is returned, so that the projected Hessian is H + N (the deficit Newton
records, see Triplets.add_deficit).  Stencils outside these cases (a
point-line term of negative coefficient, non-finite values) are left to
the generic :func:`~solver.linsolve.linalg.project_psd`.
"""

import numpy as np

from .linsolve import project_psd

SQRT2 = np.sqrt(2.0)


def pe_projection_deficit(H, closest, c1, c2, d2):
    """(N (n, 6, 6), closed (n,) bool): what clamping the negative eigenvalues
    of H (n, 6, 6) = c1 Hd + c2 g g^T adds, for the stencils where ``closed``
    (N = 0 elsewhere).  closest: (gamma (n, 3), r = p - e0 - t e (n, 2), e =
    e1 - e0 (n, 2), line (n,) bool (PL)); c1, c2 (n,); d2 (n,) the squared
    distances."""
    gamma, r, e, line = closest
    gg = gamma[:, 0] * gamma[:, 0] + gamma[:, 1] * gamma[:, 1] + gamma[:, 2] * gamma[:, 2]
    gnorm = np.sqrt(gg)
    ghat = gamma / gnorm[:, None]
    normal, across = _frame(r, e, line)
    a = (2.0 * c1 + 4.0 * c2 * d2) * gg  # the eigenvalue along A (PP and PL alike)
    # point-point: along A and along T; point-line: the one negative eigenvalue of M
    mu_a = np.where(line, 0.0, np.maximum(-a, 0.0))
    mu_t = np.where(line, 0.0, np.maximum(-2.0 * c1 * gg, 0.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        closed = np.isfinite(a) & np.isfinite(c1) & (d2 > 0.0)
    pl = line & closed & (c1 < 0.0) & (a > 0.0)
    closed &= ~line | pl | ((c1 == 0.0) & (c2 == 0.0))
    # one term per stencil (PP: the negative one of A's and T's eigenvalues; both
    # negative only for a point-point term of c1 < 0 with B'' too small, then T's added)
    u_a = (ghat[:, :, None] * normal[:, None, :]).reshape(-1, 6)
    u_t = (ghat[:, :, None] * across[:, None, :]).reshape(-1, 6)
    u_z = (_zeta(gamma, gnorm)[:, :, None] * normal[:, None, :]).reshape(-1, 6)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        mu_pl, u_pl = _point_line_negative(H, np.stack([u_a, u_z, u_t], axis=2))
    on_a = mu_a > 0.0
    mu = np.where(closed, np.where(line, np.where(pl, mu_pl, 0.0), np.where(on_a, mu_a, mu_t)), 0.0)
    u = np.where(line[:, None], u_pl, np.where(on_a[:, None], u_a, u_t))
    N = _outer(np.where(closed[:, None], u, 0.0), mu)
    both = np.flatnonzero(closed & on_a & (mu_t > 0.0))
    if len(both):
        N[both] += _outer(u_t[both], mu_t[both])
    return N, closed


def _frame(r, e, line):
    """(n, 2) unit contact normals, along r (that of the gradient g = 2 gamma
    (x) r, H's largest term), and (n, 2) unit directions across them (PL:
    along the edge, to which r is perpendicular up to rounding)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        normal = r / np.sqrt(r[:, 0] * r[:, 0] + r[:, 1] * r[:, 1])[:, None]
    across = np.stack([-normal[:, 1], normal[:, 0]], axis=1)
    flip = line & (across[:, 0] * e[:, 0] + across[:, 1] * e[:, 1] < 0.0)
    return normal, np.where(flip[:, None], -across, across)


def _zeta(gamma, gnorm):
    """(n, 3) Z's vertex part: (c / sqrt 2 - k gamma^) / s, unit and orthogonal to gamma."""
    k = (1.0 - 2.0 * (-gamma[:, 2])) / (SQRT2 * gnorm)  # t = -gamma_2
    s = np.sqrt(1.5) / gnorm
    c = np.array([0.0, -1.0, 1.0]) / SQRT2
    return (c - (k / gnorm)[:, None] * gamma) / s[:, None]


def _point_line_negative(H, Q):
    """(-lambda (n,), u (n, 6)): the negative eigenvalue lambda of H (n, 6, 6)
    in the span of Q's orthonormal columns (n, 6, 3) (PL: its only one, see
    the module docstring) and its unit eigenvector, 0 where there is none.
    M = Q^T H Q is taken from H as computed (its rounding too: that of the
    distance's gradient, along A, reaches the other entries at a close
    contact), not from its exact form."""
    M = np.matmul(np.swapaxes(Q, 1, 2), np.matmul(H, Q))
    m00, m11, m22 = M[:, 0, 0], M[:, 1, 1], M[:, 2, 2]
    m01, m02, m12 = (0.5 * (M[:, i, j] + M[:, j, i]) for i, j in ((0, 1), (0, 2), (1, 2)))
    # the largest eigenvalue by the trigonometric solution of the cubic (accurate for
    # it); the two others from their sum (the trace's rest) and product (det M / it):
    # the trigonometric solution loses sqrt(eps) of M's largest entry on them as they
    # near each other (a close contact: B'' >> |B'|)
    big = _largest_eigenvalue(m00, m01, m02, m11, m12, m22)
    det = m00 * (m11 * m22 - m12 * m12) - m01 * (m01 * m22 - m12 * m02) + m02 * (m01 * m12 - m11 * m02)
    rest_sum = (m00 + m11 + m22) - big
    product = det / big
    root = np.sqrt(rest_sum * rest_sum - 4.0 * product)
    lam = np.where(rest_sum >= 0.0, 2.0 * product / (rest_sum + root), 0.5 * (rest_sum - root))
    d00, d11, d22 = m00 - lam, m11 - lam, m22 - lam
    # adjugate of M - lambda I: k v v^T (k its trace), the column of its largest diagonal entry
    W = np.stack(
        [
            np.stack([d11 * d22 - m12 * m12, m02 * m12 - m01 * d22, m01 * m12 - m02 * d11], axis=1),
            np.stack([m02 * m12 - m01 * d22, d00 * d22 - m02 * m02, m01 * m02 - d00 * m12], axis=1),
            np.stack([m01 * m12 - m02 * d11, m01 * m02 - d00 * m12, d00 * d11 - m01 * m01], axis=1),
        ],
        axis=1,
    )  # (n, 3 columns, 3)
    diag = np.stack([W[:, 0, 0], W[:, 1, 1], W[:, 2, 2]], axis=1)
    j = np.argmax(diag, axis=1)
    rows = np.arange(len(H))
    col, wjj = W[rows, j], diag[rows, j]
    v = col / np.sqrt(wjj * (diag[:, 0] + diag[:, 1] + diag[:, 2]))[:, None]
    ok = np.isfinite(v).all(axis=1) & (lam < 0.0)
    u = np.matmul(Q, np.where(ok[:, None], v, 0.0)[:, :, None])[:, :, 0]
    return np.where(ok, -lam, 0.0), u


def _largest_eigenvalue(m00, m01, m02, m11, m12, m22):
    """(n,) largest eigenvalue of the symmetric [[m00, m01, m02], [m01, m11,
    m12], [m02, m12, m22]] by the trigonometric solution of its cubic."""
    q = (m00 + m11 + m22) / 3.0
    a00, a11, a22 = m00 - q, m11 - q, m22 - q
    p2 = a00 * a00 + a11 * a11 + a22 * a22 + 2.0 * (m01 * m01 + m02 * m02 + m12 * m12)
    p = np.sqrt(p2 / 6.0)
    scale = np.where(p > 0.0, 1.0 / np.where(p > 0.0, p, 1.0), 0.0)
    b00, b11, b22, b01, b02, b12 = (z * scale for z in (a00, a11, a22, m01, m02, m12))
    det = b00 * (b11 * b22 - b12 * b12) - b01 * (b01 * b22 - b12 * b02) + b02 * (b01 * b12 - b11 * b02)
    return q + 2.0 * p * np.cos(np.arccos(np.clip(0.5 * det, -1.0, 1.0)) / 3.0)


def _outer(u, mu):
    """(n, 6, 6) mu u u^T of u (n, 6), mu (n,) >= 0."""
    scaled = u * np.sqrt(mu)[:, None]
    return scaled[:, :, None] * scaled[:, None, :]


def project_pe_hessian(H, closest, c1, c2, d2, deficit=None):
    """The barrier Hessians H (n, 6, 6) = c1 Hd + c2 g g^T with their negative
    eigenvalues clamped to zero, as project_psd(H, deficit) (deficit: see
    there), in closed form where it applies.  closest: (gamma, r, e, line)
    of the stencils (:func:`~solver.distance.distance_sq_derivatives_closest`)."""
    if len(H) == 0:
        return H
    N, closed = pe_projection_deficit(H, closest, c1, c2, d2)
    rest = np.flatnonzero(~closed)
    found = None if deficit is None else []
    out = H + N
    if len(rest):
        out[rest] = project_psd(H[rest], found)
    if deficit is not None:
        which = np.flatnonzero(closed & (N != 0.0).any(axis=(1, 2)))
        if len(which):
            deficit.append((which, N[which]))
        deficit.extend((rest[w], Nw) for w, Nw in found)
    return out
