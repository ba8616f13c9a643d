"""Continuous collision detection for the line search.

* :func:`accd_point_edge` -- additive CCD (Li et al. 2021), vectorised over
  all candidate point-edge pairs: advance each pair by a conservative lower
  bound of its time of impact, d / l_p, until it either passes ``t_max`` or
  its distance falls below ``eta`` times the starting distance.  The returned
  time is always collision-free (every advance is a lower bound).
* :func:`point_edge_step` -- what the line search uses: in 2D a point meets a
  linearly moving segment only where the collinearity quadratic vanishes,
  so most pairs get their time of impact from its roots in a few array
  operations; pairs whose quadratic is ill-conditioned (collinear motion,
  grazing double roots) or whose answer fails the distance check go to ACCD.
  This matters for pairs sliding at tiny gaps, where ACCD needs hundreds of
  advancement iterations.
* :func:`half_plane_step` -- exact for points against half-planes (linear).
* :func:`inversion_step` -- largest step keeping every triangle's signed area
  above ``eta`` times its current value (a quadratic in the step).
"""

import numpy as np


def _dist(X):
    """Point-segment distance of stencils (n,3,2) by clamped projection: the
    same distance as solver.distance, in a few fused operations because the
    ACCD loop below calls it hundreds of times for pairs sliding in contact."""
    w0, w1 = X[:, 0, 0] - X[:, 1, 0], X[:, 0, 1] - X[:, 1, 1]
    e0, e1 = X[:, 2, 0] - X[:, 1, 0], X[:, 2, 1] - X[:, 1, 1]
    ee = e0 * e0 + e1 * e1
    s = np.clip((w0 * e0 + w1 * e1) / np.where(ee > 0.0, ee, 1.0), 0.0, 1.0)
    r0, r1 = w0 - s * e0, w1 - s * e1
    return np.sqrt(r0 * r0 + r1 * r1)


def accd_point_edge(X, dX, eta=0.1, t_max=1.0, max_iter=1000):
    """Per-pair collision-free step sizes, (n,).

    X: (n,3,2) stencils [p, e0, e1] at the start; dX: (n,3,2) displacements.
    A pair starting at zero distance gets 0.
    """
    n = len(X)
    toi = np.full(n, t_max)
    if n == 0:
        return toi
    dX = dX - dX.mean(axis=1, keepdims=True)  # only relative motion matters
    norms = np.linalg.norm(dX, axis=2)
    lp = norms[:, 0] + np.maximum(norms[:, 1], norms[:, 2])
    d0 = _dist(X)
    toi[d0 <= 0.0] = 0.0
    act = np.flatnonzero((lp > 0.0) & (d0 > 0.0))
    # working copies shrink with the active set (no re-gather from the full arrays)
    Xa, dXa, lpa = X[act], dX[act], lp[act]
    g = eta * d0[act]
    t = np.zeros(len(act))
    tl = (1.0 - eta) * d0[act] / lpa
    for _ in range(max_iter):
        if len(act) == 0:
            break
        d = _dist(Xa + (t + tl)[:, None, None] * dXa)
        hit = (t > 0.0) & (d < g)
        toi[act[hit]] = t[hit]
        t_new = t + tl
        keep = ~hit & (t_new <= t_max)
        if not keep.all():
            act, Xa, dXa, lpa, g, d = act[keep], Xa[keep], dXa[keep], lpa[keep], g[keep], d[keep]
            t_new = t_new[keep]
        t = t_new
        tl = 0.9 * d / lpa
    else:
        toi[act] = t  # iteration cap: what was reached so far is safe
    return toi


def _cross(a0, a1, b0, b1):
    return a0 * b1 - a1 * b0


# Pairs left to ACCD by the exact path are crushed to a tiny fraction of their
# size (|c0| below rounding) or grazing; at a gap d they advance ~d / l_p per
# iteration, so the cap, not the answer, decides their cost.  What the cap
# returns is still safe (every advance is a lower bound).
ACCD_FALLBACK_ITERS = 200


def point_edge_step(X, dX, eta=0.1, t_max=1.0):
    """Per-pair collision-free step sizes, (n,): exact-root CCD with ACCD fallback.

    For A(t) = p - e0 and E(t) = e1 - e0 (linear in t), contact needs
    c(t) = cross(E, A) = c0 + c1 t + c2 t^2 = 0 with the projection of the
    point inside the segment.  The earliest such root t* in [0, t_max] gives
    (1 - eta) t* (the same margin ACCD keeps); no root gives t_max.  Every
    answer is checked to keep at least eta of the starting distance, like ACCD.
    """
    n = len(X)
    step = np.full(n, t_max)
    if n == 0:
        return step
    # Conservative filter: a pair whose distance exceeds its largest relative
    # motion by the margin cannot lose (1 - eta) of its gap (most candidates).
    rel = dX - dX[:, 1:2]
    motion = np.sqrt(rel[:, 0, 0] ** 2 + rel[:, 0, 1] ** 2) + np.sqrt(rel[:, 2, 0] ** 2 + rel[:, 2, 1] ** 2)
    near = np.flatnonzero(motion * t_max > (1.0 - eta) * _dist(X))
    if len(near):
        step[near] = _exact_step(X[near], dX[near], eta, t_max)
    return step


def _exact_step(X, dX, eta, t_max):
    """point_edge_step on the pairs the conservative filter could not clear."""
    A0, dA = X[:, 0] - X[:, 1], dX[:, 0] - dX[:, 1]
    E0, dE = X[:, 2] - X[:, 1], dX[:, 2] - dX[:, 1]
    c0 = _cross(E0[:, 0], E0[:, 1], A0[:, 0], A0[:, 1])
    c1 = _cross(E0[:, 0], E0[:, 1], dA[:, 0], dA[:, 1]) + _cross(dE[:, 0], dE[:, 1], A0[:, 0], A0[:, 1])
    c2 = _cross(dE[:, 0], dE[:, 1], dA[:, 0], dA[:, 1])
    # magnitude of the terms that make up c: the rounding scale of c(t)
    size = (np.linalg.norm(A0, axis=1) + np.linalg.norm(dA, axis=1) * t_max) * (
        np.linalg.norm(E0, axis=1) + np.linalg.norm(dE, axis=1) * t_max
    )
    tiny = 1e-9 * size
    quad = np.abs(c2) * t_max * t_max > tiny
    disc = c1 * c1 - 4.0 * c2 * c0
    sq = np.sqrt(np.maximum(disc, 0.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        q = -0.5 * (c1 + np.copysign(sq, c1))  # stable pair of quadratic roots
        r1 = np.where(quad, q / c2, -c0 / c1)
        r2 = np.where(quad, c0 / q, np.inf)
    roots = np.stack([r1, r2], axis=1)
    real = ~quad | (disc >= 0.0)  # complex roots: c never vanishes
    roots = np.where(real[:, None] & np.isfinite(roots) & (roots >= 0.0) & (roots <= t_max), roots, np.inf)
    # keep roots where the point projects onto the segment (widened: a near
    # miss at an end point counts as a hit, which only shortens the step)
    rt = np.where(np.isfinite(roots), roots, 0.0)
    At = A0[:, None, :] + rt[:, :, None] * dA[:, None, :]
    Et = E0[:, None, :] + rt[:, :, None] * dE[:, None, :]
    with np.errstate(invalid="ignore"):
        s = np.einsum("nki,nki->nk", At, Et) / np.einsum("nki,nki->nk", Et, Et)
    roots = np.where((s >= -1e-6) & (s <= 1.0 + 1e-6), roots, np.inf)
    first = roots.min(axis=1)
    step = np.where(np.isfinite(first), (1.0 - eta) * first, t_max)
    # ill-conditioned pairs: c nearly zero throughout (collinear motion), a
    # near-double root (grazing), or a degenerate linear case
    lin_degenerate = ~quad & (np.abs(c1) * t_max <= tiny)
    grazing = quad & (np.abs(disc) <= 1e-9 * (c1 * c1 + np.abs(4.0 * c2 * c0)))
    doubtful = lin_degenerate | grazing | (np.abs(c0) <= tiny)
    # safety net, and ACCD's margin: at the returned step the pair must keep at
    # least eta of its starting distance (else ACCD decides, as it would have)
    # collinear throughout (c ~ 0 at all times): the distance is to an end
    # point, exactly solvable, where ACCD would crawl at d / l_p per iteration
    collinear = doubtful & (np.abs(c0) + np.abs(c1) * t_max + np.abs(c2) * t_max * t_max <= 3.0 * tiny)
    if collinear.any():
        col_step = _collinear_step(X[collinear], dX[collinear], 3.0 * tiny[collinear], eta, t_max)
        solved = np.isfinite(col_step)
        idx = np.flatnonzero(collinear)[solved]
        step[idx] = col_step[solved]
        doubtful[idx] = False
    ok = ~doubtful
    ok[ok] = _dist(X[ok] + step[ok, None, None] * dX[ok]) >= eta * _dist(X[ok])
    if not ok.all():
        step[~ok] = accd_point_edge(X[~ok], dX[~ok], eta, t_max, max_iter=ACCD_FALLBACK_ITERS)
    return step


def _collinear_step(X, dX, c_bound, eta, t_max):
    """Step (n,) for pairs collinear throughout (|c(t)| <= c_bound), or NaN
    where this does not apply.

    A point that starts beyond an end of the segment and stays on its line is
    |p - e0| or |p - e1| away; it can only reach the segment through an end
    point.  So the earliest t at which either end distance falls to eta d0 (a
    quadratic in t) is the step that keeps eta of the gap.  Applies while the
    offset from the line, |c| / |e|, stays below half of that margin.
    """
    A0, dA = X[:, 0] - X[:, 1], dX[:, 0] - dX[:, 1]
    B0, dB = X[:, 0] - X[:, 2], dX[:, 0] - dX[:, 2]
    E0, dE = X[:, 2] - X[:, 1], dX[:, 2] - dX[:, 1]
    ee, ede, dede = _dot(E0, E0), _dot(E0, dE), _dot(dE, dE)
    t_min = np.clip(-ede / np.where(dede > 0, dede, 1.0), 0.0, t_max)  # shortest edge on [0, t_max]
    e_min = np.sqrt(np.maximum(ee + 2.0 * t_min * ede + t_min * t_min * dede, 0.0))
    s0 = _dot(A0, E0) / np.where(ee > 0, ee, 1.0)
    target = eta * _dist(X)
    with np.errstate(divide="ignore", invalid="ignore"):
        usable = ((s0 < 0.0) | (s0 > 1.0)) & (e_min > 0) & (c_bound / e_min <= 0.5 * target)
    hit = np.minimum(_first_reach(A0, dA, target, t_max), _first_reach(B0, dB, target, t_max))
    step = np.where(np.isfinite(hit), (1.0 - 1e-9) * hit, t_max)
    return np.where(usable, step, np.nan)


def _dot(a, b):
    return a[:, 0] * b[:, 0] + a[:, 1] * b[:, 1]


def _first_reach(P0, dP, r, t_max):
    """Earliest t in [0, t_max] with |P0 + t dP| = r for |P0| > r, else inf."""
    a, b, c = _dot(dP, dP), 2.0 * _dot(P0, dP), _dot(P0, P0) - r * r
    disc = b * b - 4.0 * a * c
    with np.errstate(divide="ignore", invalid="ignore"):
        q = -0.5 * (b + np.copysign(np.sqrt(np.maximum(disc, 0.0)), b))
        roots = np.stack([q / a, c / q], axis=1)
    roots = np.where(
        (disc >= 0.0)[:, None] & (a > 0)[:, None] & (roots >= 0.0) & (roots <= t_max), roots, np.inf
    )
    return roots.min(axis=1)


def half_plane_step(x, dx, point, normal, eta=0.1, t_max=1.0):
    """Largest step (scalar) keeping points x (n,2) moving by dx on the free side,
    with at least eta of their current distance left.  point/normal: (n,2)."""
    if len(x) == 0:
        return t_max
    d = np.einsum("ni,ni->n", x - point, normal)
    v = np.einsum("ni,ni->n", dx, normal)
    approaching = v < 0.0
    if not approaching.any():
        return t_max
    return float(min(t_max, np.min((1.0 - eta) * d[approaching] / -v[approaching])))


def inversion_step(x, dx, tris, eta=0.1, t_max=1.0):
    """Largest step such that every triangle keeps det >= eta * det(now)."""
    a = x[tris[:, 1]] - x[tris[:, 0]]
    b = x[tris[:, 2]] - x[tris[:, 0]]
    da = dx[tris[:, 1]] - dx[tris[:, 0]]
    db = dx[tris[:, 2]] - dx[tris[:, 0]]
    c0 = a[:, 0] * b[:, 1] - a[:, 1] * b[:, 0]
    c1 = a[:, 0] * db[:, 1] + da[:, 0] * b[:, 1] - a[:, 1] * db[:, 0] - da[:, 1] * b[:, 0]
    c2 = da[:, 0] * db[:, 1] - da[:, 1] * db[:, 0]
    # roots of c2 t^2 + c1 t + (1 - eta) c0 = 0; smallest positive one
    c = (1.0 - eta) * c0
    # det(t) - eta det(0) >= c - |c1| t - |c2| t^2 > 0 on [0, t_max] clears a triangle
    risky = np.abs(c1) * t_max + np.abs(c2) * t_max * t_max >= c
    if not risky.any():
        return t_max
    c0, c1, c2, c = c0[risky], c1[risky], c2[risky], c[risky]
    roots = np.full(len(c0), np.inf)
    lin = np.abs(c2) <= 1e-14 * (np.abs(c1) + np.abs(c0))
    with np.errstate(divide="ignore", invalid="ignore"):
        r_lin = np.where(c1 < 0, -c / c1, np.inf)
        roots[lin] = r_lin[lin]
        q = ~lin
        disc = c1[q] ** 2 - 4.0 * c2[q] * c[q]
        sq = np.sqrt(np.maximum(disc, 0.0))
        # numerically stable pair of roots
        qq = -0.5 * (c1[q] + np.copysign(sq, c1[q]))
        r1 = qq / c2[q]
        r2 = np.where(qq != 0, c[q] / qq, np.inf)
        rr = np.stack([r1, r2], axis=1)
        rr = np.where((rr > 0) & (disc >= 0)[:, None], rr, np.inf)
        roots[q] = rr.min(axis=1)
    return float(min(t_max, roots.min())) if len(roots) else t_max
