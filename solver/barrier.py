"""Log barrier on squared distances and the contact-barrier energy trio.

Barrier shape on the normalised squared distance s = d^2 / dhat^2::

    B(s) = -(s - 1)^2 ln s      for 0 < s < 1
    B(s) = +inf                 for s <= 0
    B(s) = 0                    for s >= 1

(C^2 at s = 1).  A point-edge pair k contributes ``coef_k * B(s_k)`` where
``coef_k = w_a * kappa * dhat * sign_k / 2`` (w_a the point's quadrature
weight; sign -1 for the duplicate point-point terms subtracted by the
convergent formulation).  ``dhat * B`` has units of length, so kappa is a
pressure [Pa] -- the "physical barrier" of seed 004.

The domain is guarded NaN-safely: the formula is only evaluated on clipped
arguments and the out-of-range values are selected with ``np.where``.
"""

import numpy as np

from .barrier_psd import project_pe_hessian
from .distance import distance_sq, distance_sq_derivatives_closest, distance_sq_gradient


def _clip_unit(s):
    """s clipped to [1e-300, 1] (np.clip's values, at a fraction of its call cost on small arrays)."""
    return np.minimum(np.maximum(s, 1e-300), 1.0)


def barrier(s):
    """B(s), (n,) -> (n,). inf for s <= 0, 0 for s >= 1."""
    sc = _clip_unit(s)
    val = -((sc - 1.0) ** 2) * np.log(sc)
    return np.where(s <= 0.0, np.inf, np.where(s >= 1.0, 0.0, val))


def barrier_d1(s):
    """dB/ds; 0 for s >= 1 (undefined, returned as -inf, for s <= 0)."""
    return barrier_d1_d2(s)[0]


def barrier_d2(s):
    """d^2B/ds^2; 0 for s >= 1 (+inf for s <= 0)."""
    return barrier_d1_d2(s)[1]


def barrier_d1_d2(s):
    """(dB/ds, d^2B/ds^2) sharing one log, with the domain guards of B."""
    sc = _clip_unit(s)
    log_s, s1 = np.log(sc), sc - 1.0
    q = s1 / sc
    out = s <= 0.0
    zero = s >= 1.0
    d1 = np.where(out, -np.inf, np.where(zero, 0.0, -2.0 * s1 * log_s - s1 * q))
    d2 = np.where(out, np.inf, np.where(zero, 0.0, -2.0 * log_s - 4.0 * q + q * q))
    return d1, d2


# ---------------------------------------------------------------- point-edge


def pe_value(X, case, coef, dhat, d2=None):
    """Sum of coef_k B(d_k^2/dhat^2) over stencils X (n,3,2); d2: the squared
    distances if already known."""
    if len(X) == 0:
        return 0.0
    b = barrier((distance_sq(X, case) if d2 is None else d2) / (dhat * dhat))
    return float(np.dot(coef, b)) if np.all(np.isfinite(b)) else np.inf


def pe_gradient(X, case, coef, dhat):
    """Per-stencil gradients (n, 6)."""
    s = distance_sq(X, case) / (dhat * dhat)
    dB = barrier_d1(s) * coef / (dhat * dhat)
    return dB[:, None] * distance_sq_gradient(X, case)


def pe_hessian(X, case, coef, dhat, project=True):
    """Per-stencil Hessians (n, 6, 6), PSD-projected unless project=False."""
    return pe_gradient_hessian(X, case, coef, dhat, project)[1]


def pe_gradient_hessian(X, case, coef, dhat, project=True, deficit=None):
    """Per-stencil gradients (n, 6) and Hessians (n, 6, 6) in one pass;
    deficit: see :func:`~solver.linsolve.linalg.project_psd` (the projection
    in closed form: solver/barrier_psd.py)."""
    inv = 1.0 / (dhat * dhat)
    d2, g, H, closest = distance_sq_derivatives_closest(X, case)
    b1, b2 = barrier_d1_d2(d2 * inv)
    d1 = coef * b1 * inv
    d2_coef = coef * b2 * inv * inv
    H *= d1[:, None, None]
    H += d2_coef[:, None, None] * (g[:, :, None] * g[:, None, :])
    if project:
        H = project_pe_hessian(H, closest, d1, d2_coef, d2, deficit)
    return d1[:, None] * g, H


def pe_contact_force(X, case, coef, dhat):
    """Normal force magnitude lambda_k = -dE_k/dd (>= 0 for positive coef), (n,).

    With E = coef B(d^2/dhat^2): dE/dd = coef B'(s) 2 d / dhat^2.
    """
    d2 = distance_sq(X, case)
    s = d2 / (dhat * dhat)
    return -coef * barrier_d1(s) * 2.0 * np.sqrt(d2) / (dhat * dhat)


# ---------------------------------------------------------------- half-planes


def plane_distance(x, point, normal):
    """Signed distance of points x (n,2) to the planes (n,2)/(n,2), (n,)."""
    return np.einsum("ni,ni->n", x - point, normal)


def plane_distances(x, point, normal):
    """(n, H) signed distances of points x (n, 2) to each plane point/normal
    (H, 2), on the (n, H) grid from the points as given: no (n H, 2) gathers
    of points and planes.  plane_distance's sum, (x - p)_0 n_0 + (x - p)_1 n_1,
    written out: einsum is slow on the planes broadcast along the points.
    Computed plane by plane (:func:`plane_distances_by_plane`) and returned
    transposed: numpy's inner loops then run over the points, not over the
    few planes (half the time on R1000's 32k x 3)."""
    return plane_distances_by_plane(x, point, normal).T


def plane_distances_by_plane(x, point, normal):
    """(H, n) C-contiguous: plane_distances transposed, with one temporary
    summed in place.  The points' coordinates are made contiguous first:
    numpy's loops over strided operands (x[:, 0]) take several times the
    instructions of contiguous ones."""
    x0, x1 = np.ascontiguousarray(x.T)
    d = (x0 - point[:, 0:1]) * normal[:, 0:1]
    d += (x1 - point[:, 1:2]) * normal[:, 1:2]
    return d


def hp_value(x, point, normal, coef, dhat):
    d = plane_distance(x, point, normal)
    s = np.where(d > 0, d * d, -1.0) / (dhat * dhat)
    b = barrier(s)
    active = b != 0.0
    return float(np.sum(coef[active] * b[active]))


def hp_gradient(x, point, normal, coef, dhat):
    """(n, 2) gradients."""
    return hp_gradient_hessian(x, point, normal, coef, dhat)[0]


def hp_hessian(x, point, normal, coef, dhat):
    """(n, 2, 2) Hessians; PSD because B'' > 0 and B' < 0 give
    4 d^2 B'' + 2 B' > 0 along n (checked by tests) and zero across."""
    return hp_gradient_hessian(x, point, normal, coef, dhat)[1]


def hp_gradient_hessian(x, point, normal, coef, dhat):
    """Gradients (n, 2) and Hessians (n, 2, 2) sharing d and B', B''."""
    d = plane_distance(x, point, normal)
    inv = 1.0 / (dhat * dhat)
    s = d * d * inv
    b1, b2 = barrier_d1_d2(s)
    g = (coef * b1 * inv * 2.0 * d)[:, None] * normal
    k = np.maximum(coef * (b2 * inv * inv * 4.0 * d * d + b1 * inv * 2.0), 0.0)
    return g, k[:, None, None] * (normal[:, :, None] * normal[:, None, :])


def hp_contact_force(x, point, normal, coef, dhat):
    d = plane_distance(x, point, normal)
    inv = 1.0 / (dhat * dhat)
    return -coef * barrier_d1(d * d * inv) * 2.0 * d * inv
