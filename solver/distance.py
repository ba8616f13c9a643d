"""Point-edge squared distance, batched, with its gradient and Hessian.

Stencils are gathered as ``X`` of shape (n, 3, 2): ``X[:, 0]`` the point,
``X[:, 1]`` and ``X[:, 2]`` the edge end points.  The closest-feature case is
decided once (:func:`point_edge_case`) and the same ``case`` array is handed
to value, gradient and Hessian so all three take the same branch:

* ``PP0``: point-point distance to ``e0`` (projection parameter <= 0)
* ``PP1``: point-point distance to ``e1`` (projection parameter >= 1)
* ``PL``:  point-line distance (projection strictly inside the edge)

Gradients are (n, 6) and Hessians (n, 6, 6) in the DOF order
``[p.x, p.y, e0.x, e0.y, e1.x, e1.y]``.
"""

import numpy as np

PP0, PP1, PL = 0, 1, 2


def _coordinates(X):
    """(px, py, e0x, e0y, e1x, e1y): the stencils' six coordinates, each (n,).
    The maths runs on them, not on (n, 2) views such as X[:, 0]: numpy loops
    over 2 numbers a row there (the same operations: the same bits)."""
    return tuple(X.reshape(len(X), 6).T)


def _edge_vectors(X):
    """(ax, ay, ex, ey): a = p - e0, e = e1 - e0, by coordinate (n,)."""
    px, py, e0x, e0y, e1x, e1y = _coordinates(X)
    return px - e0x, py - e0y, e1x - e0x, e1y - e0y


def edge_parameter(X):
    """Projection parameter of the point onto the edge line, (n,)."""
    ax, ay, ex, ey = _edge_vectors(X)
    ee = ex * ex + ey * ey
    return (ax * ex + ay * ey) / np.where(ee > 0, ee, 1.0)


def point_edge_case(X):
    """Closest-feature case per stencil, (n,) int8 in {PP0, PP1, PL}."""
    return _case_of(edge_parameter(X))


def _case_of(t):
    return np.where(t <= 0.0, PP0, np.where(t >= 1.0, PP1, PL)).astype(np.int8)


def distance_sq(X, case):
    """Squared point-edge distance, (n,)."""
    ax, ay, ex, ey = _edge_vectors(X)
    return _distance_sq(X, (ax, ay, ex, ey), case)


def _distance_sq(X, edge, case, L=None):
    """edge = (ax, ay, ex, ey) (:func:`_edge_vectors`), L = |e|^2 if known;
    PL as cross^2 / |e|^2, the PP cases with b = p - e1."""
    ax, ay, ex, ey = edge
    px, py, _, _, e1x, e1y = _coordinates(X)
    bx, by = px - e1x, py - e1y
    line = case == PL
    c = ax * ey - ay * ex  # geometry.cross
    if L is None:
        L = ex * ex + ey * ey
    pp = np.where(case == PP1, bx * bx + by * by, ax * ax + ay * ay)
    return np.where(line, c * c / np.where(line, L, 1.0), pp)


def case_and_distance_sq(X, forced_pp0=None):
    """(case (n,) int8, squared distance (n,)) sharing the edge vectors;
    forced_pp0: optional (n,) bool of stencils whose case is PP0 whatever t."""
    ax, ay, ex, ey = edge = _edge_vectors(X)
    ee = ex * ex + ey * ey
    case = _case_of((ax * ex + ay * ey) / np.where(ee > 0, ee, 1.0))
    if forced_pp0 is not None:
        case[forced_pp0] = PP0
    return case, _distance_sq(X, edge, case, ee)


def _closest(X, case):
    """Shared parts for the derivatives: (e, L, line mask, t, r, gamma).

    t is the closest-point parameter the case dictates (0 for PP0, 1 for PP1,
    the projection for PL), r = p - e0 - t e, gamma = [1, t - 1, -t] (n, 3).
    """
    ax, ay, ex, ey = edge = _edge_vectors(X)
    L = ex * ex + ey * ey
    line = case == PL
    t = np.where(line, (ax * ex + ay * ey) / np.where(line, L, 1.0), (case == PP1).astype(float))
    r = _pairs(ax - t * ex, ay - t * ey)
    gamma = np.empty((len(X), 3))
    gamma[:, 0] = 1.0
    np.subtract(t, 1.0, out=gamma[:, 1])
    np.negative(t, out=gamma[:, 2])
    return edge, L, line, r, gamma


def _pairs(x, y):
    """(n, 2) from its columns x, y (n,)."""
    out = np.empty((len(x), 2))
    out[:, 0], out[:, 1] = x, y
    return out


def _kron_into(gamma, v, out):
    """out[2k + c] = gamma[:, k] v[:, c] for gamma (n, 3), v (n, 2): the six
    columns of gamma (x) v into out (6 writable (n,) arrays), one product
    each (the same products as a broadcast, without loops over 6 numbers)."""
    for k in range(3):
        for c in range(2):
            np.multiply(gamma[:, k], v[:, c], out=out[2 * k + c])


def _gradient(gamma, r):
    """2 gamma (x) r, (n, 6), column by column."""
    g = np.empty((len(r), 6))
    _kron_into(gamma, r, g.T)
    g *= 2.0
    return g


def distance_sq_gradient(X, case):
    """Gradient of the squared distance, (n, 6): 2 gamma (x) r (see distance_sq_derivatives)."""
    _, _, _, r, gamma = _closest(X, case)
    return _gradient(gamma, r)


def distance_sq_hessian(X, case):
    """Hessian of the squared distance, (n, 6, 6)."""
    return distance_sq_derivatives(X, case)[2]


def distance_sq_derivatives(X, case):
    """Squared distance (n,), gradient (n,6) and Hessian (n,6,6) in one pass.

    One formula for every case: with r = p - e0 - t e and gamma = [1, t-1, -t]
    (t = 0 for PP0, 1 for PP1, the projection for PL), the gradient is
    2 gamma (x) r (t optimal or fixed: no dt/dx term).  The Hessian is
    2 (gamma gamma^T) (x) I2, minus, for PL only, v v^T / (2 |e|^2) with
    v = d(df/dt)/dx = -2 (gamma (x) e + [0, -r, r]): eliminating t from
    f(x, t) = |p - e0 - t e|^2.
    """
    return distance_sq_derivatives_closest(X, case)[:3]


def distance_sq_derivatives_closest(X, case):
    """distance_sq_derivatives' (d2, g, H) and the parts they were made of,
    (gamma (n, 3), r (n, 2), e (n, 2), line (n,) bool): see there."""
    n = len(X)
    (ax, ay, ex, ey), L, line, r, gamma = _closest(X, case)
    c = ax * ey - ay * ex  # geometry.cross
    rx, ry = r[:, 0], r[:, 1]
    # PL: c^2 / L (no cancellation for a point far along a long edge)
    d2 = np.where(line, c * c / np.where(line, L, 1.0), rx * rx + ry * ry)
    g = _gradient(gamma, r)
    e = _pairs(ex, ey)
    G2 = 2.0 * (gamma[:, :, None] * gamma[:, None, :])  # (n, 3, 3)
    H = np.zeros((n, 3, 2, 3, 2))
    H[:, :, 0, :, 0] = G2
    H[:, :, 1, :, 1] = G2
    H = H.reshape(n, 6, 6)
    if line.all():  # the common case (resting and sliding contacts): no gathers
        H -= _line_term(gamma, e, r, L)
    elif line.any():
        H[line] -= _line_term(gamma[line], e[line], r[line], L[line])
    return d2, g, H, (gamma, r, e, line)


def _line_term(gamma, e, r, L):
    """v v^T / (2 |e|^2), (m, 6, 6), of PL stencils (see distance_sq_derivatives).
    Made with the stencils innermost, (6, 6, m), and returned as an (m, 6, 6)
    view: the same products as with v (m, 6), without loops over 6 numbers."""
    vt = np.empty((6, len(L)))
    _kron_into(gamma, e, vt)
    vt *= -2.0
    vt[2:4] += 2.0 * r.T
    vt[4:6] -= 2.0 * r.T
    return ((0.5 / L) * (vt[:, None, :] * vt[None, :, :])).transpose(2, 0, 1)


def closest_point_parameter(X, case):
    """Barycentric parameter r of the closest point e0 + r (e1 - e0), (n,)."""
    r = np.clip(edge_parameter(X), 0.0, 1.0)
    r[case == PP0] = 0.0
    r[case == PP1] = 1.0
    return r
