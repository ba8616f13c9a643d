"""Plane geometry shared by the solver and the add-on, batched over leading axes.

Points are arrays (..., 2); every function broadcasts its arguments like numpy does, so one
call handles one pair, n pairs, or an all-pairs table (``p[:, None]`` against ``a[None]``).

* :func:`cross`, :func:`dot`, :func:`orientation`, :func:`signed_areas`: the 2D cross product
  and its uses (orientation > 0: counter-clockwise);
* :func:`edge_use`, :func:`boundary_edges`: a triangle mesh's edges and its directed boundary;
* :func:`segments_cross` (the interiors cross at one point: touching does not count) and
  :func:`segments_intersect` (the closed segments share a point: touching counts);
* :func:`closest_on_segment`, :func:`point_segment_distance`;
* :func:`points_in_triangles` (counter-clockwise triangles, edges in or out) and
  :func:`points_in_polygon` (even-odd rule over loops, so holes work).

The arithmetic of :func:`cross`, :func:`dot` and :func:`point_segment_distance` is the one the
line search's CCD was measured with: rewriting it (another summation order, ``np.linalg.norm``
of the difference of closest points) changes results in the last bits.
"""

import numpy as np


def cross(a, b):
    """z-component of the cross product, (...)."""
    return a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]


def dot(a, b):
    """Dot product, (...)."""
    return a[..., 0] * b[..., 0] + a[..., 1] * b[..., 1]


def orientation(p, q, r):
    """Twice the signed area of the triangle p, q, r (...): > 0 counter-clockwise, < 0
    clockwise, 0 when the three points are on one line."""
    return cross(q - p, r - p)


def signed_areas(x, tris):
    """(m,) signed areas of triangles tris (m, 3) of vertices x (n, 2), > 0 counter-clockwise."""
    return 0.5 * cross(x[tris[:, 1]] - x[tris[:, 0]], x[tris[:, 2]] - x[tris[:, 0]])


def _directed_edges(tris):
    return np.concatenate([tris[:, [0, 1]], tris[:, [1, 2]], tris[:, [2, 0]]])


def edge_use(tris):
    """Undirected edges (k, 2) sorted per row, with the number of triangles using each (k,)."""
    return np.unique(np.sort(_directed_edges(tris), axis=1), axis=0, return_counts=True)


def boundary_edges(tris):
    """Directed boundary edges (k, 2): edges used by exactly one triangle, in that triangle's
    orientation (so a counter-clockwise mesh gives counter-clockwise outer loops, clockwise
    holes), in the order of the triangles' edges 01, 12, 20."""
    directed = _directed_edges(tris)
    und, counts = edge_use(tris)
    once = und[counts == 1]
    key_once = once[:, 0].astype(np.int64) * (tris.max() + 1) + once[:, 1]
    s = np.sort(directed, axis=1)
    key = s[:, 0].astype(np.int64) * (tris.max() + 1) + s[:, 1]
    return directed[np.isin(key, key_once)]


def segments_cross(p, q, a, b, margin=0.0):
    """(...) bool: segments p-q and a-b cross properly: each one's end points lie strictly on
    either side of the other's line, so their interiors meet in one point. Touching (an end
    point on the other segment) and collinear overlaps do not count. margin > 0 asks more:
    every end point is more than margin from the other segment's line (a crossing deeper than
    margin, for coordinates that carry rounding)."""
    d1, d2 = orientation(a, b, p), orientation(a, b, q)
    d3, d4 = orientation(p, q, a), orientation(p, q, b)
    out = (np.sign(d1) * np.sign(d2) < 0) & (np.sign(d3) * np.sign(d4) < 0)
    if margin > 0.0:
        l_ab, l_pq = np.sqrt(dot(b - a, b - a)), np.sqrt(dot(q - p, q - p))
        deep_pq = np.minimum(np.abs(d1), np.abs(d2)) > margin * l_ab
        deep_ab = np.minimum(np.abs(d3), np.abs(d4)) > margin * l_pq
        out &= deep_pq & deep_ab
    return out


def segments_intersect(p, q, a, b):
    """(...) bool: the closed segments p-q and a-b share at least one point: a proper
    crossing, an end point on the other segment, or collinear segments that overlap."""
    s1, s2 = np.sign(orientation(a, b, p)), np.sign(orientation(a, b, q))
    s3, s4 = np.sign(orientation(p, q, a)), np.sign(orientation(p, q, b))
    collinear = (s1 == 0) & (s2 == 0)
    general = (s1 * s2 <= 0) & (s3 * s4 <= 0) & ~collinear
    boxes_meet = np.all(
        (np.minimum(p, q) <= np.maximum(a, b)) & (np.minimum(a, b) <= np.maximum(p, q)), axis=-1
    )
    return general | (collinear & boxes_meet)


def closest_on_segment(p, a, b):
    """(...) parameter s in [0, 1] of the point a + s (b - a) of segment a-b closest to p
    (0 for a segment of zero length)."""
    e = b - a
    ee = dot(e, e)
    return np.clip(dot(p - a, e) / np.where(ee > 0.0, ee, 1.0), 0.0, 1.0)


def point_segment_distance(p, a, b):
    """(...) distance of points p from segments a-b (by clamped projection)."""
    w, e = p - a, b - a
    ee = dot(e, e)
    s = np.clip(dot(w, e) / np.where(ee > 0.0, ee, 1.0), 0.0, 1.0)
    r0, r1 = w[..., 0] - s * e[..., 0], w[..., 1] - s * e[..., 1]
    return np.sqrt(r0 * r0 + r1 * r1)


def points_in_triangles(q, a, b, c, closed=True):
    """(...) bool: point q lies in the counter-clockwise triangle a, b, c; closed: a point on
    an edge counts as inside, else only the interior does."""
    s1, s2, s3 = orientation(a, b, q), orientation(b, c, q), orientation(c, a, q)
    if closed:
        return (s1 >= 0) & (s2 >= 0) & (s3 >= 0)
    return (s1 > 0) & (s2 > 0) & (s3 > 0)


def points_in_polygon(points, loops, chunk=2048):
    """(k,) bool: points (k, 2) inside the region bounded by loops (each (m, 2), closed
    implicitly), by the even-odd rule: a ray from the point towards +x crosses the loops an
    odd number of times (so a loop inside another is a hole). Points on an edge may go either
    way."""
    inside = np.zeros(len(points), dtype=bool)
    for loop in loops:
        a = np.asarray(loop, dtype=np.float64)
        b = np.roll(a, -1, axis=0)
        for s in range(0, len(points), chunk):
            p = points[s : s + chunk, None]
            straddle = (a[None, :, 1] > p[..., 1]) != (b[None, :, 1] > p[..., 1])
            with np.errstate(divide="ignore", invalid="ignore"):
                t = (p[..., 1] - a[None, :, 1]) / (b[None, :, 1] - a[None, :, 1])
            x_cross = a[None, :, 0] + t * (b[None, :, 0] - a[None, :, 0])
            odd = np.count_nonzero(straddle & (x_cross > p[..., 0]), axis=1) % 2
            inside[s : s + chunk] ^= odd.astype(bool)
    return inside
