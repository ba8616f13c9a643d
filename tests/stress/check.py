"""Independent invariant checker for simulated states (issue 6).

Deliberately shares no code with ``solver/``: topology (boundary edges) is
rebuilt from the scene's triangles, and every geometric predicate is an
exact sign test.  Orientation signs use the float determinant with a
Shewchuk-style forward error bound; whenever the determinant is within that
bound of zero the sign is recomputed with ``fractions.Fraction`` (every float
is an exact rational), so the answer is always the exact one.

Invariants (all strict: touching counts as a violation, IPC keeps d > 0):

* ``nonfinite``  -- a NaN / inf coordinate;
* ``inverted``   -- a triangle with zero area or with the opposite orientation
  to its rest shape;
* ``crossing``   -- two boundary edges (body-body, body-self non-adjacent,
  body-collider) intersect or touch; adjacent edges folded onto each other;
* ``inside``     -- a body boundary vertex or a collider vertex lies in (or on)
  a triangle of another body (catches whole-body tunnelling, which crosses
  no edge at the sampled instants);
* ``half_plane`` -- a body vertex on or beyond a half-plane.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

_EPS = np.finfo(float).eps / 2  # unit roundoff
_CCW_BOUND = (3.0 + 16.0 * _EPS) * _EPS  # Shewchuk's ccwerrboundA


@dataclass(frozen=True)
class Violation:
    kind: str
    detail: str


# ------------------------------------------------------------- exact predicates


def _exact_orient(a, b, c):
    ax, ay = Fraction(float(a[0])), Fraction(float(a[1]))
    bx, by = Fraction(float(b[0])), Fraction(float(b[1]))
    cx, cy = Fraction(float(c[0])), Fraction(float(c[1]))
    d = (ax - cx) * (by - cy) - (ay - cy) * (bx - cx)
    return (d > 0) - (d < 0)


def orient(a, b, c):
    """Exact sign (n,) int8 of the orientation of triangles (a, b, c), arrays (n, 2):
    +1 counter-clockwise, -1 clockwise, 0 collinear."""
    a, b, c = (np.asarray(v, float).reshape(-1, 2) for v in (a, b, c))
    left = (a[:, 0] - c[:, 0]) * (b[:, 1] - c[:, 1])
    right = (a[:, 1] - c[:, 1]) * (b[:, 0] - c[:, 0])
    det = left - right
    with np.errstate(invalid="ignore"):
        sign = np.sign(det).astype(np.int8)
        unsure = ~(np.abs(det) > _CCW_BOUND * (np.abs(left) + np.abs(right)))
    unsure &= np.isfinite(det) | ~np.isfinite(left + right)  # NaNs are reported elsewhere
    for i in np.flatnonzero(unsure):
        if np.all(np.isfinite([a[i], b[i], c[i]])):
            sign[i] = _exact_orient(a[i], b[i], c[i])
    return sign


def _exact_dot_sign(u0, u1, v0, v1):
    """Sign of (u1 - u0) . (v1 - v0), exactly."""
    f = [Fraction(float(t)) for t in (*u0, *u1, *v0, *v1)]
    d = (f[2] - f[0]) * (f[6] - f[4]) + (f[3] - f[1]) * (f[7] - f[5])
    return (d > 0) - (d < 0)


def segments_intersect(p0, p1, q0, q1):
    """(n,) bool: closed segments p0p1 and q0q1 share at least one point (exact)."""
    o1, o2 = orient(p0, p1, q0), orient(p0, p1, q1)
    o3, o4 = orient(q0, q1, p0), orient(q0, q1, p1)
    general = (o1 * o2 <= 0) & (o3 * o4 <= 0)
    collinear = (o1 == 0) & (o2 == 0)
    # Collinear segments meet iff their bounding boxes overlap (exact float compares).
    lo_p, hi_p = np.minimum(p0, p1), np.maximum(p0, p1)
    lo_q, hi_q = np.minimum(q0, q1), np.maximum(q0, q1)
    boxes = np.all((lo_p <= hi_q) & (lo_q <= hi_p), axis=1)
    return np.where(collinear, boxes, general)


def plane_side(x, point, normal):
    """Exact sign of normal . (x - point) for points x (n, 2)."""
    x = np.asarray(x, float)
    p = np.asarray(point, float)
    n = np.asarray(normal, float)
    t0, t1 = n[0] * (x[:, 0] - p[0]), n[1] * (x[:, 1] - p[1])
    d = t0 + t1
    sign = np.sign(d).astype(np.int8)
    unsure = ~(np.abs(d) > 8 * _EPS * (np.abs(t0) + np.abs(t1)))
    for i in np.flatnonzero(unsure & np.all(np.isfinite(x), axis=1)):
        f = Fraction(n[0]) * (Fraction(x[i, 0]) - Fraction(p[0])) + Fraction(n[1]) * (
            Fraction(x[i, 1]) - Fraction(p[1])
        )
        sign[i] = (f > 0) - (f < 0)
    return sign


# ------------------------------------------------------------- topology


def boundary_edges(tris):
    """Undirected edges used by exactly one triangle, (k, 2) int."""
    e = np.concatenate([tris[:, [0, 1]], tris[:, [1, 2]], tris[:, [2, 0]]])
    e = np.sort(e, axis=1)
    und, counts = np.unique(e, axis=0, return_counts=True)
    return und[counts == 1]


def _box_pairs(lo_a, hi_a, lo_b, hi_b, chunk=2048):
    """All (i, j) whose closed boxes overlap, chunked to bound memory."""
    out_i, out_j = [], []
    for s in range(0, len(lo_a), chunk):
        ov = np.all(
            (lo_a[s : s + chunk, None] <= hi_b[None]) & (lo_b[None] <= hi_a[s : s + chunk, None]), axis=2
        )
        i, j = np.nonzero(ov)
        out_i.append(i + s)
        out_j.append(j)
    if not out_i:
        return np.zeros(0, np.intp), np.zeros(0, np.intp)
    return np.concatenate(out_i), np.concatenate(out_j)


class Checker:
    """Checks states of one scene.  ``check(body_positions, collider_positions)``
    returns a list of :class:`Violation` (empty when every invariant holds)."""

    def __init__(self, scene):
        self.names = [b.name for b in scene.bodies] + [c.name for c in scene.colliders]
        self.n_bodies = len(scene.bodies)
        offs, tris, edges, owner, sign, is_col = 0, [], [], [], [], []
        for bi, b in enumerate(scene.bodies):
            v = np.asarray(b.vertices, float)
            t = np.asarray(b.triangles, np.intp)
            tris.append(t + offs)
            edges.append(boundary_edges(t) + offs)
            owner.append(np.full(len(v), bi))
            is_col.append(np.zeros(len(v), bool))
            sign.append(orient(v[t[:, 0]], v[t[:, 1]], v[t[:, 2]]))
            offs += len(v)
        self.n_body_vertices = offs
        for ci, c in enumerate(scene.colliders):
            k = len(np.asarray(c.vertices))
            edges.append(np.asarray(c.edges, np.intp) + offs)
            owner.append(np.full(k, self.n_bodies + ci))
            is_col.append(np.ones(k, bool))
            offs += k
        self.tris = np.concatenate(tris)
        self.rest_sign = np.concatenate(sign)
        self.edges = np.concatenate(edges)
        self.owner = np.concatenate(owner)
        self.is_col = np.concatenate(is_col)
        self.planes = [
            (np.asarray(h.point, float), np.asarray(h.normal, float), h.name) for h in scene.half_planes
        ]
        body_edges = self.edges[~self.is_col[self.edges[:, 0]]]
        # Boundary vertices of bodies and all collider vertices: the probes of the 'inside' test.
        self.probes = np.unique(np.concatenate([body_edges.ravel(), np.flatnonzero(self.is_col)]))
        self._edge_pairs_topology()

    def _edge_pairs_topology(self):
        """Vertex-sharing edge pairs (i < j), with their shared and other vertices."""
        e = self.edges
        inc = {}
        for k, (a, b) in enumerate(e.tolist()):
            inc.setdefault(a, []).append(k)
            inc.setdefault(b, []).append(k)
        rows = []
        for v, ks in inc.items():
            for i in range(len(ks)):
                for j in range(i + 1, len(ks)):
                    ea, eb = ks[i], ks[j]
                    oa = e[ea, 1] if e[ea, 0] == v else e[ea, 0]
                    ob = e[eb, 1] if e[eb, 0] == v else e[eb, 0]
                    rows.append((v, oa, ob))
        self.adjacent = np.array(rows, np.intp).reshape(-1, 3)

    # ---------------------------------------------------------------- checks
    def check(self, body_positions, collider_positions=()):
        x = np.concatenate(
            [np.asarray(p, float).reshape(-1, 2) for p in (*body_positions, *collider_positions)]
        )
        if not np.all(np.isfinite(x)):
            bad = int(np.flatnonzero(~np.all(np.isfinite(x), axis=1))[0])
            return [
                Violation("nonfinite", f"'{self.names[self.owner[bad]]}' vertex has a NaN/inf coordinate")
            ]
        out = []
        out += self._inverted(x)
        out += self._crossings(x)
        out += self._inside(x)
        out += self._half_planes(x)
        return out

    def _inverted(self, x):
        t = self.tris
        s = orient(x[t[:, 0]], x[t[:, 1]], x[t[:, 2]])
        bad = s != self.rest_sign
        if not bad.any():
            return []
        k = int(np.flatnonzero(bad)[0])
        what = "zero-area" if s[k] == 0 else "inverted"
        return [
            Violation(
                "inverted",
                f"'{self.names[self.owner[t[k, 0]]]}': {int(bad.sum())} triangle(s) "
                f"{what} or flipped (first: triangle {k} {t[k].tolist()})",
            )
        ]

    def _crossings(self, x):
        e = self.edges
        a, b = x[e[:, 0]], x[e[:, 1]]
        lo, hi = np.minimum(a, b), np.maximum(a, b)
        i, j = _box_pairs(lo, hi, lo, hi)
        ei, ej = e[i], e[j]
        keep = (i < j) & ~(self.is_col[ei[:, 0]] & self.is_col[ej[:, 0]])
        share = (ei[:, :, None] == ej[:, None, :]).any(axis=(1, 2))
        keep &= ~share
        i, j = i[keep], j[keep]
        hit = segments_intersect(x[e[i, 0]], x[e[i, 1]], x[e[j, 0]], x[e[j, 1]])
        out = []
        if hit.any():
            k = int(np.flatnonzero(hit)[0])
            na, nb = self.names[self.owner[e[i[k], 0]]], self.names[self.owner[e[j[k], 0]]]
            out.append(
                Violation(
                    "crossing",
                    f"{int(hit.sum())} boundary edge pair(s) intersect, first "
                    f"'{na}' edge {e[i[k]].tolist()} x '{nb}' edge {e[j[k]].tolist()}",
                )
            )
        out += self._folds(x)
        return out

    def _folds(self, x):
        """Two boundary edges sharing a vertex lying on top of each other."""
        adj = self.adjacent
        if not len(adj):
            return []
        both_col = self.is_col[adj[:, 0]]
        s, p, q = x[adj[:, 0]], x[adj[:, 1]], x[adj[:, 2]]
        col = (orient(s, p, q) == 0) & ~both_col
        for k in np.flatnonzero(col):
            if _exact_dot_sign(s[k], p[k], s[k], q[k]) > 0:
                return [
                    Violation(
                        "crossing",
                        f"'{self.names[self.owner[adj[k, 0]]]}': boundary edges "
                        f"folded onto each other at vertex {int(adj[k, 0])}",
                    )
                ]
        return []

    def _inside(self, x):
        t = self.tris
        A, B, C = x[t[:, 0]], x[t[:, 1]], x[t[:, 2]]
        tlo = np.minimum(np.minimum(A, B), C)
        thi = np.maximum(np.maximum(A, B), C)
        pts = self.probes
        P = x[pts]
        pi, ti = _box_pairs(P, P, tlo, thi)
        keep = self.owner[pts[pi]] != self.owner[t[ti, 0]]
        pi, ti = pi[keep], ti[keep]
        if not len(pi):
            return []
        q = P[pi]
        sgn = self.rest_sign[ti]  # orientation of the triangle in its rest shape
        d1 = orient(A[ti], B[ti], q) * sgn
        d2 = orient(B[ti], C[ti], q) * sgn
        d3 = orient(C[ti], A[ti], q) * sgn
        inside = (d1 >= 0) & (d2 >= 0) & (d3 >= 0)
        if not inside.any():
            return []
        k = int(np.flatnonzero(inside)[0])
        v = pts[pi[k]]
        return [
            Violation(
                "inside",
                f"vertex {int(v)} of '{self.names[self.owner[v]]}' lies in or on "
                f"body '{self.names[self.owner[t[ti[k], 0]]]}' "
                f"({len(np.unique(pi[inside]))} vertices)",
            )
        ]

    def _half_planes(self, x):
        xb = x[: self.n_body_vertices]
        out = []
        for p, n, name in self.planes:
            s = plane_side(xb, p, n)
            if np.any(s <= 0):
                v = int(np.flatnonzero(s <= 0)[0])
                out.append(
                    Violation(
                        "half_plane",
                        f"{int(np.sum(s <= 0))} vertex(es) on or beyond half-plane "
                        f"'{name}', first vertex {v} of '{self.names[self.owner[v]]}'",
                    )
                )
        return out


def min_separation(scene):
    """Smallest distance between boundary primitives of different objects
    (point to segment, both directions) at the scene's initial state.
    Independent of the solver; used to check that generated scenes start > dhat apart."""
    ck = Checker(scene)
    x = np.concatenate(
        [np.asarray(b.vertices, float) for b in scene.bodies]
        + [np.asarray(c.vertices, float).reshape(-1, 2) for c in scene.colliders]
    )
    e = ck.edges
    pts = np.unique(e.ravel())
    best = np.inf
    for s in range(0, len(pts), 512):
        p = pts[s : s + 512]
        P = x[p][:, None]
        a, b = x[e[:, 0]][None], x[e[:, 1]][None]
        ab = b - a
        t = np.clip(np.sum((P - a) * ab, -1) / np.maximum(np.sum(ab * ab, -1), 1e-300), 0, 1)
        d = np.linalg.norm(P - (a + t[..., None] * ab), axis=-1)
        other = ck.owner[p][:, None] != ck.owner[e[:, 0]][None]
        both_col = ck.is_col[p][:, None] & ck.is_col[e[:, 0]][None]
        d = np.where(other & ~both_col, d, np.inf)
        best = min(best, float(d.min()))
    return best
