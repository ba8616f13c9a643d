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

# c = cross(a, e) = a^T M e with a = p - e0, e = e1 - e0.
_M = np.array([[0.0, 1.0], [-1.0, 0.0]])
_I2 = np.eye(2)
_Z2 = np.zeros((2, 2))
_SA = np.hstack([_I2, -_I2, _Z2])      # a = SA @ x
_SE = np.hstack([_Z2, -_I2, _I2])      # e = SE @ x
_HESS_C = _SA.T @ _M @ _SE + _SE.T @ _M.T @ _SA   # constant Hessian of c
_HESS_L = 2.0 * _SE.T @ _SE                       # constant Hessian of |e|^2
# Hessian of |p - q|^2 for q = e0 (PP0) and q = e1 (PP1)
_HESS_PP = np.zeros((2, 6, 6))
for _k, _q in ((0, 1), (1, 2)):
    _S = np.zeros((2, 6))
    _S[:, 0:2] = _I2
    _S[:, 2 * _q:2 * _q + 2] = -_I2
    _HESS_PP[_k] = 2.0 * _S.T @ _S


def edge_parameter(X):
    """Projection parameter of the point onto the edge line, (n,)."""
    e = X[:, 2] - X[:, 1]
    ee = np.einsum("ni,ni->n", e, e)
    return np.einsum("ni,ni->n", X[:, 0] - X[:, 1], e) / np.where(ee > 0, ee, 1.0)


def point_edge_case(X):
    """Closest-feature case per stencil, (n,) int8 in {PP0, PP1, PL}."""
    t = edge_parameter(X)
    case = np.full(len(X), PL, dtype=np.int8)
    case[t <= 0.0] = PP0
    case[t >= 1.0] = PP1
    return case


def _pp_other(X, case):
    """The edge end point involved in a point-point case, (n, 2)."""
    return np.where((case == PP1)[:, None], X[:, 2], X[:, 1])


def _line_parts(X):
    a = X[:, 0] - X[:, 1]
    e = X[:, 2] - X[:, 1]
    c = a[:, 0] * e[:, 1] - a[:, 1] * e[:, 0]
    L = np.einsum("ni,ni->n", e, e)
    return a, e, c, L


def distance_sq(X, case):
    """Squared point-edge distance, (n,)."""
    d_pp = X[:, 0] - _pp_other(X, case)
    out = np.einsum("ni,ni->n", d_pp, d_pp)
    line = case == PL
    if line.any():
        _, _, c, L = _line_parts(X[line])
        out[line] = c * c / L
    return out


def _grad_c_and_L(a, e):
    """Gradients (n, 6) of c = cross(a, e) and L = |e|^2."""
    Je = np.stack([e[:, 1], -e[:, 0]], axis=1)       # dc/da
    Ja = np.stack([-a[:, 1], a[:, 0]], axis=1)       # dc/de
    gc = np.concatenate([Je, -Je - Ja, Ja], axis=1)
    gL = np.concatenate([np.zeros_like(e), -2.0 * e, 2.0 * e], axis=1)
    return gc, gL


def distance_sq_gradient(X, case):
    """Gradient of the squared distance, (n, 6)."""
    n = len(X)
    g = np.zeros((n, 6))
    pp = case != PL
    if pp.any():
        diff = 2.0 * (X[pp, 0] - _pp_other(X[pp], case[pp]))
        g[pp, 0:2] = diff
        col = np.where(case[pp] == PP1, 4, 2)
        rows = np.flatnonzero(pp)
        g[rows, col] = -diff[:, 0]
        g[rows, col + 1] = -diff[:, 1]
    line = ~pp
    if line.any():
        a, e, c, L = _line_parts(X[line])
        gc, gL = _grad_c_and_L(a, e)
        g[line] = (2.0 * c / L)[:, None] * gc - (c * c / (L * L))[:, None] * gL
    return g


def distance_sq_hessian(X, case):
    """Hessian of the squared distance, (n, 6, 6)."""
    return distance_sq_derivatives(X, case)[2]


def distance_sq_derivatives(X, case):
    """Squared distance (n,), gradient (n,6) and Hessian (n,6,6) in one pass
    (shares the case split and the cross-product parts)."""
    n = len(X)
    d2 = np.empty(n)
    g = np.zeros((n, 6))
    H = np.zeros((n, 6, 6))
    pp = case != PL
    if pp.any():
        rows = np.flatnonzero(pp)
        diff = X[pp, 0] - _pp_other(X[pp], case[pp])
        d2[pp] = np.einsum("ni,ni->n", diff, diff)
        g[pp, 0:2] = 2.0 * diff
        col = np.where(case[pp] == PP1, 4, 2)
        g[rows, col] = -2.0 * diff[:, 0]
        g[rows, col + 1] = -2.0 * diff[:, 1]
        H[pp] = _HESS_PP[case[pp].astype(np.intp)]
    line = ~pp
    if line.any():
        a, e, c, L = _line_parts(X[line])
        gc, gL = _grad_c_and_L(a, e)
        cL = c / L
        d2[line] = c * cL
        g[line] = (2.0 * cL)[:, None] * gc - (cL * cL)[:, None] * gL
        gcL = np.einsum("ni,nj->nij", gc, gL)
        H[line] = (
            (2.0 / L)[:, None, None] * np.einsum("ni,nj->nij", gc, gc)
            + (2.0 * cL)[:, None, None] * _HESS_C
            - (2.0 * cL / L)[:, None, None] * (gcL + np.swapaxes(gcL, 1, 2))
            - (cL * cL)[:, None, None] * _HESS_L
            + (2.0 * cL * cL / L)[:, None, None] * np.einsum("ni,nj->nij", gL, gL)
        )
    return d2, g, H


def closest_point_parameter(X, case):
    """Barycentric parameter r of the closest point e0 + r (e1 - e0), (n,)."""
    r = np.clip(edge_parameter(X), 0.0, 1.0)
    r[case == PP0] = 0.0
    r[case == PP1] = 1.0
    return r


def segment_distance_sq(p, e0, e1):
    """Convenience: squared distance of points p (n,2) to segments (n,2),(n,2)."""
    X = np.stack([p, e0, e1], axis=1)
    return distance_sq(X, point_edge_case(X))
