"""Continuous collision detection for the line search.

* :func:`accd_point_edge` -- additive CCD (Li et al. 2021), vectorised over
  all candidate point-edge pairs: advance each pair by a conservative lower
  bound of its time of impact, d / l_p, until it either passes ``t_max`` or
  its distance falls below ``eta`` times the starting distance.  The returned
  time is always collision-free (every advance is a lower bound).
* :func:`point_edge_step` -- what the line search uses: the exact first time
  each pair's distance falls to ``eta`` times its starting value (ACCD's
  margin), from closed-form roots (quadratics; a quartic solved by root
  isolation for edges that turn a lot), every root checked against the
  distance itself.  A pair sliding at a tiny gap gets the whole step where
  ACCD would crawl at d / l_p per iteration; ACCD only takes pairs where
  rounding defeats the exact path.
* :func:`half_plane_step` -- exact for points against half-planes (linear);
  :func:`half_plane_steps` per point, to a given distance.
* :func:`inversion_step` -- largest step keeping every triangle's signed area
  above ``eta`` times its current value (a quadratic in the step).
"""

import numpy as np

from .geometry import cross as _cross
from .geometry import dot as _dot
from .geometry import point_segment_distance


def _dist(X):
    """Point-segment distance of stencils (n,3,2) by clamped projection: the
    same distance as solver.distance, in a few fused operations because the
    ACCD loop below calls it hundreds of times for pairs sliding in contact."""
    return point_segment_distance(X[:, 0], X[:, 1], X[:, 2])


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


# Pairs the exact path cannot settle (rounding at gaps far below the motion's
# size) go to ACCD; at a gap d they advance ~d / l_p per iteration, so the cap,
# not the answer, decides their cost.  What the cap returns is still safe
# (every advance is a lower bound).
ACCD_FALLBACK_ITERS = 200

# Largest relative overestimate of the edge length the closed-form path
# accepts (see _Pair.quadratics); pairs beyond it take the exact quartic.
CHORD_SLACK = 0.01


def point_edge_step(X, dX, eta=0.1, t_max=1.0):
    """Per-pair collision-free step sizes, (n,).

    X: (n,3,2) stencils [p, e0, e1] at the start; dX: (n,3,2) displacements.
    The step is the first time the point-segment distance falls to eta times
    its starting value d0 (t_max if it never does), the margin ACCD keeps,
    computed exactly: the moving point enters the capsule of radius
    r = eta d0 around the moving segment either through a disk around an end
    point (|p - e_i| = r: a quadratic in t) or through a side of the strip
    (|cross(e1 - e0, p - e0)| = r |e1 - e0| while the point projects onto the
    segment).  A pair starting at zero distance gets 0.
    """
    n = len(X)
    step = np.full(n, t_max)
    if n == 0:
        return step
    # Conservative filter: a pair whose distance exceeds its largest relative
    # motion by the margin cannot lose (1 - eta) of its gap (most candidates).
    d0 = _dist(X)
    rel = dX - dX[:, 1:2]
    motion = np.sqrt(rel[:, 0, 0] ** 2 + rel[:, 0, 1] ** 2) + np.sqrt(rel[:, 2, 0] ** 2 + rel[:, 2, 1] ** 2)
    near = np.flatnonzero((motion * t_max > (1.0 - eta) * d0) & (d0 > 0.0))
    if len(near):
        step[near] = _near_step(X[near], dX[near], eta, t_max, d0[near])
    step[d0 <= 0.0] = 0.0
    return step


def _near_step(X, dX, eta, t_max, d0):
    """point_edge_step (n,) of the pairs the conservative filter could not clear.

    Every candidate time (a root of one of the entry conditions) is checked
    against the distance itself: a root that rounding or a degenerate edge
    (one shrinking to a point) produced while the point is still far away
    does not count.  Safety net against rounding at gaps far below the
    motion: a pair whose step reaches a contact (a root of c on the
    segment) or leaves less than half of r goes to ACCD."""
    P, r, n = _Pair(X, dX), eta * d0, len(X)
    coef = P.quadratics(r, t_max)
    disc = _discriminants(coef)
    disc[:, 0:2] = P.disk_discriminants(r)
    roots = _quadratic_roots(coef, t_max, disc).reshape(n, 14)
    cands, contact = roots[:, :12], roots[:, 12:]
    exact = ~P.chord_is_tight(t_max)
    if exact.any():
        cands[exact, 4:] = np.inf
        cands[exact, 4:8] = _strip_candidates_exact(P.subset(exact), r[exact], t_max)
    step = np.minimum(_first_within(P, cands, (1.0 + 2.0 * CHORD_SLACK) * r), t_max)
    at_step = P.distance_at(np.arange(n), step)
    doubt = (_first_where(contact, P.onto_segment_at) <= step) | ~(at_step >= 0.5 * r)
    if doubt.any():
        step[doubt] = accd_point_edge(X[doubt], dX[doubt], eta, t_max, max_iter=ACCD_FALLBACK_ITERS)
    return step


def _first_where(t, holds):
    """Smallest finite time t[i, k] (n,) for which holds(i, t[i, k]) (arrays (m,)) is true,
    else inf.  Only finite times are evaluated (most candidates have no root)."""
    i, k = np.nonzero(np.isfinite(t))
    ok = np.zeros(t.shape, bool)
    ok[i, k] = holds(i, t[i, k])
    return np.where(ok, t, np.inf).min(axis=1)


def _first_within(P, t, radius):
    """First candidate time at which the distance is at most radius[i] (n,), else inf."""
    return _first_where(t, lambda i, ti: P.distance_at(i, ti) <= radius[i])


# _Pair's vectors as differences of stencil rows: A = p - e0, B = p - e1, E = e1 - e0
_HEAD, _TAIL = np.array([0, 0, 2]), np.array([1, 2, 1])
# ... and the dot products its quadratics need: |A|^2, |B|^2, A.E, B.E, |E|^2
_DOT_P, _DOT_Q = np.array([0, 1, 0, 1, 2]), np.array([0, 1, 2, 2, 2])


class _Pair:
    """Relative motion of point-edge pairs, each (n,2): A = p - e0, B = p - e1,
    E = e1 - e0 at t = 0 and their displacements, plus the coefficients of
    c(t) = cross(E, A) = c0 + c1 t + c2 t^2 (twice the signed area of the
    triangle p, e0, e1), (n,3), and of |A|^2, |B|^2, A.E, B.E, |E|^2 in t
    (dots, (n,5,3); ee = its last row, |E(t)|^2 = ee0 + ee1 t + ee2 t^2)."""

    def __init__(self, X, dX):
        # the vectors A, B, E side by side (n, 3, 2), and their displacements
        V0, dV = X[:, _HEAD] - X[:, _TAIL], dX[:, _HEAD] - dX[:, _TAIL]
        self.A0, self.B0, self.E0 = V0[:, 0], V0[:, 1], V0[:, 2]
        self.dA, self.dB, self.dE = dV[:, 0], dV[:, 1], dV[:, 2]
        A0, dA, E0, dE = self.A0, self.dA, self.E0, self.dE
        self.c = np.empty((len(X), 3))
        self.c[:, 0] = _cross(E0, A0)
        self.c[:, 1] = _cross(E0, dA) + _cross(dE, A0)
        self.c[:, 2] = _cross(dE, dA)
        # |A|^2, |B|^2, A.E, B.E, |E|^2 as quadratics in t, (n, 5, 3), in one pass
        P0, dP, Q0, dQ = V0[:, _DOT_P], dV[:, _DOT_P], V0[:, _DOT_Q], dV[:, _DOT_Q]
        self.dots = np.empty((len(X), 5, 3))
        self.dots[..., 0] = _dot(P0, Q0)
        self.dots[..., 1] = _dot(P0, dQ) + _dot(dP, Q0)
        self.dots[..., 2] = _dot(dP, dQ)
        self.ee = self.dots[:, 4]
        self.cross_e = _cross(E0, dE)  # E(t) x dE: constant; the edge's turning

    def subset(self, mask):
        sub = object.__new__(_Pair)
        for name in ("A0", "dA", "B0", "dB", "E0", "dE", "c", "dots", "ee", "cross_e"):
            setattr(sub, name, getattr(self, name)[mask])
        return sub

    def quadratics(self, r, t_max):
        """Every closed-form entry condition as quadratic coefficients (n,7,3):

        0, 1  |A|^2 = r^2, |B|^2 = r^2: the disks around e0 and e1;
        2, 3  c = -r U, c = +r U: the sides of the strip around the edge's
              line, widened by U(t) >= |E(t)|, the chord of |E| over
              [0, t_max] (|E(t)| is convex: the norm of an affine function);
              tight while the edge turns little (chord_is_tight);
        4, 5  A.E = 0, B.E = 0: the ends of that strip, which reach past the
              disks by as much as it is widened;
        6     c = 0: contact (the safety net's check).
        """
        e_start, e_end = np.sqrt(self.ee[:, 0]), np.sqrt(self.ee @ [1.0, t_max, t_max * t_max])
        out = np.empty((len(r), 7, 3))
        out[:, 0:2] = self.dots[:, 0:2]
        out[:, 0:2, 0] -= (r * r)[:, None]
        u0, u1 = e_start * r, (e_end - e_start) / t_max * r
        out[:, 2] = self.c
        out[:, 2, 0] -= u0
        out[:, 2, 1] -= u1
        out[:, 3] = self.c
        out[:, 3, 0] += u0
        out[:, 3, 1] += u1
        out[:, 4:6] = self.dots[:, 2:4]
        out[:, 6] = self.c
        return out

    def disk_discriminants(self, r):
        """(n, 2) discriminants of the disk conditions |A(t)|^2 = r^2, |B(t)|^2 =
        r^2 (quadratics 0, 1), by Lagrange's identity (V.dV)^2 - |V|^2 |dV|^2 =
        -cross(V, dV)^2: 4 (|dV|^2 r^2 - cross(V0, dV)^2).  From the expanded
        coefficients, b^2 - 4ac cancels to rounding noise when r is far below
        |V|: a point that passes an end point at a gap of r then gets a time
        off by 1e-11, past the margin (found by the property test)."""
        out = np.empty((len(r), 2))
        for k, (V, dV) in enumerate(((self.A0, self.dA), (self.B0, self.dB))):
            cross = _cross(V, dV)
            out[:, k] = 4.0 * (_dot(dV, dV) * r * r - cross * cross)
        return out

    def chord_is_tight(self, t_max):
        """(n,) bool: the chord overestimates |E(t)| by a factor below
        1 + CHORD_SLACK.  Chord minus function is at most t_max^2 / 8 times the
        largest curvature, cross(E, dE)^2 / |E|^3, so the factor is at most
        1 + t_max^2 cross(E, dE)^2 / (8 min|E|^4).  False for an edge that
        shrinks to a point."""
        e_min2 = self.min_edge_sq(t_max)
        return self.cross_e * self.cross_e * t_max * t_max < 8.0 * CHORD_SLACK * e_min2 * e_min2

    def min_edge_sq(self, t_max):
        """Smallest |E(t)|^2 on [0, t_max], (n,).  Inside the interval it is the
        squared distance of the line E0 + t dE from the origin, cross(E0, dE)^2
        / |dE|^2: expanding |E(t)|^2 there would cancel to rounding noise for an
        edge that shrinks to a point."""
        e0, e1, e2 = self.ee.T
        e_end = e0 + t_max * (e1 + t_max * e2)
        inside = (e1 < 0.0) & (-e1 < 2.0 * t_max * e2)
        with np.errstate(divide="ignore", invalid="ignore"):
            e_line = self.cross_e * self.cross_e / e2
        return np.where(inside, e_line, np.minimum(e0, e_end))

    def at(self, i, t):
        """A, E (m,2) of pairs i (m,) at times t (m,)."""
        return self.A0[i] + t[:, None] * self.dA[i], self.E0[i] + t[:, None] * self.dE[i]

    def distance_at(self, i, t):
        """Point-segment distance (m,) of pairs i (m,) at times t (m,)."""
        A, E = self.at(i, t)
        return point_segment_distance(A, 0.0, E)

    def within_segment_at(self, i, t):
        """(m,) bool: the point of pair i projects onto the segment at time t, up
        to CROSSING_SLACK of its length past either end."""
        A, E = self.at(i, t)
        ae, ee = _dot(A, E), _dot(E, E)
        return (ae >= -CROSSING_SLACK * ee) & (ae <= (1.0 + CROSSING_SLACK) * ee) & (ee > 0.0)

    def onto_segment_at(self, i, t):
        """(m,) bool: the point of pair i projects onto the segment at time t."""
        A, E = self.at(i, t)
        ae, ee = _dot(A, E), _dot(E, E)
        return (ae >= 0.0) & (ae <= ee) & (ee > 0.0)


def _strip_candidates_exact(P, r, t_max):
    """Candidate strip entry times (n,4) from the exact condition c(t)^2 = r^2 |E(t)|^2, a
    quartic g, for pairs whose edge turns a lot (rare): its roots are
    isolated between the roots of g' (found the same way between the roots
    of g'', a quadratic) and bisected where g changes sign."""
    c, ee, r2 = P.c, P.ee, (r * r)[:, None]
    g = _poly_mul(c, c)  # c^2 - r^2 |E|^2, (n,5)
    g[:, :3] -= r2 * ee
    g1 = g[:, 1:] * np.arange(1.0, 5.0)  # g'
    g2 = g1[:, 1:] * np.arange(1.0, 4.0)  # g''
    knots2 = _knots(_quadratic_roots(g2[:, None, :], t_max).reshape(len(r), 2), t_max)
    crit = _bisect_roots(lambda t: _poly_eval(g1, t), knots2)
    # g from the geometry, not its expanded coefficients (they cancel)

    def g_eval(t):
        i = np.repeat(np.arange(len(r)), t.shape[1])
        A, E = P.at(i, t.ravel())
        cross = _cross(E, A).reshape(t.shape)
        return cross * cross - r2 * _dot(E, E).reshape(t.shape)

    return _bisect_roots(g_eval, _knots(crit, t_max))


def _knots(points, t_max):
    """Sorted interval ends (n, k+2): 0, the finite points in [0, t_max], t_max."""
    inner = np.where(np.isfinite(points), points, t_max)
    n = len(points)
    return np.sort(np.concatenate([np.zeros((n, 1)), inner, np.full((n, 1), t_max)], axis=1), axis=1)


def _bisect_roots(f, knots, iters=60):
    """The root (n, k) of f in each interval [knots[:, j], knots[:, j+1]] where
    f changes sign (f monotone there), else inf.  Returns the end of the
    final bracket where f has its sign at the interval's start: the side the
    motion comes from, so a root is never reported late."""
    lo, hi = knots[:, :-1].copy(), knots[:, 1:].copy()
    f_lo, f_hi = f(lo), f(hi)
    has = (f_lo == 0.0) | (np.sign(f_lo) * np.sign(f_hi) < 0.0)
    s_lo = np.sign(f_lo)
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        same = np.sign(f(mid)) == s_lo
        lo, hi = np.where(same, mid, lo), np.where(same, hi, mid)
    root = np.where(f_lo == 0.0, knots[:, :-1], lo)
    return np.where(has, root, np.inf)


def _discriminants(coef):
    """c1^2 - 4 c2 c0 (n,k) of quadratics coef (n,k,3)."""
    return coef[..., 1] * coef[..., 1] - 4.0 * coef[..., 2] * coef[..., 0]


def _quadratic_roots(coef, t_max, disc=None):
    """Real roots in [0, t_max] of c0 + c1 t + c2 t^2, coef (n,k,3): (n,k,2), inf
    where there is none; disc (n,k): their discriminants, when known more
    accurately than from the coefficients.  The stable pair q / c2, c0 / q also
    covers the linear case (c2 -> 0 sends q / c2 out of range) and the constant one."""
    c0, c1, c2 = coef[..., 0], coef[..., 1], coef[..., 2]
    if disc is None:
        disc = _discriminants(coef)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        q = -0.5 * (c1 + np.copysign(np.sqrt(np.maximum(disc, 0.0)), c1))
        roots = np.stack([q / c2, c0 / q], axis=-1)
    ok = (disc >= 0.0)[..., None] & (roots >= 0.0) & (roots <= t_max)
    return np.where(ok, roots, np.inf)


def _poly_eval(coef, t):
    """sum_j coef[:, j] t^j for t (n,k): (n,k); inf t gives inf or nan (callers mask)."""
    out = np.zeros_like(t)
    with np.errstate(invalid="ignore", over="ignore"):
        for j in range(coef.shape[1] - 1, -1, -1):
            out = out * t + coef[:, j : j + 1]
    return out


def _poly_mul(a, b):
    """Coefficients (n, ka+kb-1) of the product of polynomials a (n,ka), b (n,kb)."""
    out = np.zeros((len(a), a.shape[1] + b.shape[1] - 1))
    for i in range(a.shape[1]):
        out[:, i : i + b.shape[1]] += a[:, i : i + 1] * b
    return out


def half_plane_step(x, dx, point, normal, eta=0.1, t_max=1.0):
    """Largest step (scalar) keeping points x (n,2) moving by dx on the free side,
    with at least eta of their current distance left.  point/normal: (n,2)."""
    if len(x) == 0:
        return t_max
    d = np.einsum("ni,ni->n", x - point, normal)
    v = np.einsum("ni,ni->n", dx, normal)
    return half_plane_step_at(d, v, eta, t_max)


def half_plane_step_at(d, v, eta=0.1, t_max=1.0):
    """half_plane_step from the points' distances d and normal motions v
    (arrays of one shape: e.g. (points, planes))."""
    approaching = v < 0.0
    if not approaching.any():
        return t_max
    return float(min(t_max, np.min((1.0 - eta) * d[approaching] / -v[approaching])))


def half_plane_steps(d, v, keep, t_max=1.0):
    """Per-point steps (n,): the fraction of its motion at which a point at
    distance d (n,) from a half-plane, moving by v (n,) along its normal, is
    left at distance keep (n,) <= d; t_max where it never gets that close."""
    approaching = v < 0.0
    return np.minimum(t_max, np.where(approaching, (d - keep) / np.where(approaching, -v, 1.0), t_max))


def inversion_step(x, dx, tris, eta=0.1, t_max=1.0):
    """Largest step such that every triangle keeps det >= eta * det(now)."""
    a = x[tris[:, 1]] - x[tris[:, 0]]
    b = x[tris[:, 2]] - x[tris[:, 0]]
    da = dx[tris[:, 1]] - dx[tris[:, 0]]
    db = dx[tris[:, 2]] - dx[tris[:, 0]]
    c0 = _cross(a, b)
    # not _cross(a, db) + _cross(da, b): this summation order is the one the bench was hashed with
    c1 = a[:, 0] * db[:, 1] + da[:, 0] * b[:, 1] - a[:, 1] * db[:, 0] - da[:, 1] * b[:, 0]
    c2 = _cross(da, db)
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


# A crossing's projection onto the segment may fall this far (relative to the
# segment) outside [0, 1]: a point passing exactly through a vertex is then
# seen by both edges at that vertex, not lost to rounding between them.
CROSSING_SLACK = 1e-9


def point_edge_crossings(X, dX):
    """(n,) bool: the point of each stencil meets its segment (distance 0) somewhere
    along the straight motion X -> X + dX, t in [0, 1].

    X, dX: (n,3,2) stencils [p, e0, e1] and their displacements.  Not a step
    size (those keep a margin) but the question whether a motion passes one
    primitive through another: the point lies on the segment's line where
    c(t) = cross(E, A) = 0 (a quadratic, _Pair.c) and on the segment itself
    where it also projects onto it.  In 2D two boundaries that do not
    intersect at the start can only begin to intersect where a vertex of one
    touches an edge of the other, so the point-edge pairs decide a motion.
    A pair whose relative motion is shorter than its starting distance
    cannot reach the segment and is cleared without solving (most pairs).
    """
    hit = np.zeros(len(X), bool)
    if len(X) == 0:
        return hit
    d0 = _dist(X)
    rel = dX - dX[:, 1:2]
    motion = np.sqrt(rel[:, 0, 0] ** 2 + rel[:, 0, 1] ** 2) + np.sqrt(rel[:, 2, 0] ** 2 + rel[:, 2, 1] ** 2)
    hit[d0 <= 0.0] = True
    near = np.flatnonzero((motion >= d0) & (d0 > 0.0))
    if len(near):
        P = _Pair(X[near], dX[near])
        roots = _quadratic_roots(P.c[:, None, :], 1.0)[:, 0]  # (m, 2)
        hit[near] = np.isfinite(_first_where(roots, P.within_segment_at))
    return hit
