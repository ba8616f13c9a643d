"""Simulation-quality triangle meshes of a flat region (numpy only; the add-on's Make
Simulation Mesh passes Blender's constrained Delaunay triangulation in).

Input: the outline loops of a region (holes allowed: a point is inside when a ray from it
crosses the loops an odd number of times), a target edge length ``h`` and a minimum angle.
Output: vertices (n, 2) and counter-clockwise triangles (m, 3) covering the region.

Steps: (0) the outline is simplified: vertices at edges shorter than h/4 (a font's tiny serif
steps and notches, points nearly on top of each other) are merged away where the outline moves
by at most h/20 (:func:`simplify_loops`); (1) it is resampled at about ``h``, keeping sharp
corners and every vertex whose edges are at least h/2 long, and putting the other points on the
outline by arc length (more points where the outline curves, so the chords stay within h/10 of
it); (2) interior points on a hexagonal grid of spacing h, at least 0.6 h from the outline;
(3) a constrained Delaunay triangulation (a callable, ``cdt(points, edges) -> (vertices,
triangles)``: the add-on passes mathutils' ``delaunay_2d_cdt``; which triangles are inside is
found by walking it from its convex hull across the outline edges) refined a la Ruppert: the
circumcentre of a triangle below the minimum angle is inserted, or, when it would encroach on
an outline segment (lie in the segment's diametral circle) or fall outside, that segment is
split at its arc-length midpoint on the outline (at a power-of-two distance from a corner
sharper than 60 degrees: concentric shells). One round inserts the circumcentres of the worst
triangles that are independent (none inside another's circumcircle), which is what inserting
them one at a time would do; inserting every circumcentre of a round at once put neighbouring
ones next to each other and made new slivers (Text 'IPC' stuck at 15 degrees); (4) a few
Laplacian smoothing passes of interior vertices, each move kept only where it makes no
incident triangle worse than the minimum angle.

Every output boundary vertex lies on the simplified outline; :func:`outline_deviation`
measures how far the boundary strays from the input outline (about h/10 for text: the chords).
Angles smaller than the minimum that the input itself has (a corner sharper than it) cannot be
removed, and near corners sharper than about 60 degrees the target may be missed: refinement
leaves triangles with an edge below h/32 alone and stops after a bounded number of rounds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .geometry import (
    boundary_edges,
    cross,
    edge_use,
    point_segment_distance,
    points_in_polygon,
    segments_cross,
    signed_areas,
)

CORNER_TURN_DEG = 30.0  # an outline vertex turning by at least this much is kept as a corner
SAG_REL = 0.1  # outline chords stay within SAG_REL * h of the input outline
INTERIOR_CLEARANCE = 0.6  # interior grid points keep this many h from the outline
MAX_ROUNDS = 40
SMOOTH_PASSES = 4
SIMPLIFY_SHORT_REL = 0.25  # outline edges shorter than this many h are merged away ...
SIMPLIFY_TOL_REL = 0.05  # ... where the outline moves by at most this many h
SHARP_DEG = 60.0  # outline corners sharper than this (on either side) get concentric shells
MIN_EDGE_REL = 1.0 / 32.0  # no refinement of triangles / outline segments shorter than h / 32


def triangle_angles(x: np.ndarray, tris: np.ndarray) -> np.ndarray:
    """(m, 3) interior angles [degrees] at the three corners of each triangle."""
    p = x[tris]
    out = np.empty((len(tris), 3))
    for k in range(3):
        e1 = p[:, (k + 1) % 3] - p[:, k]
        e2 = p[:, (k + 2) % 3] - p[:, k]
        out[:, k] = np.degrees(np.arctan2(np.abs(cross(e1, e2)), (e1 * e2).sum(axis=1)))
    return out


def min_angles(x: np.ndarray, tris: np.ndarray) -> np.ndarray:
    return triangle_angles(x, tris).min(axis=1) if len(tris) else np.zeros(0)


def distance_to_segments(points: np.ndarray, a: np.ndarray, b: np.ndarray, chunk=1024) -> np.ndarray:
    """(k,) distance of each point to the nearest segment a[i]-b[i]."""
    out = np.full(len(points), np.inf)
    for s in range(0, len(points), chunk):
        out[s : s + chunk] = point_segment_distance(points[s : s + chunk, None], a, b).min(axis=1)
    return out


@dataclass
class _Loop:
    """An input outline loop and the arc-length parameters of its sample points."""

    pts: np.ndarray  # (k, 2) input vertices
    cum: np.ndarray  # (k + 1,) arc length at each vertex, cum[k] = total length
    t: np.ndarray  # sorted sample parameters in [0, length)
    sharp: np.ndarray = None  # arc length of the corners sharper than SHARP_DEG (either side)

    @property
    def length(self) -> float:
        return float(self.cum[-1])

    def at(self, t: np.ndarray) -> np.ndarray:
        closed = np.vstack([self.pts, self.pts[:1]])
        t = np.mod(t, self.length)
        return np.column_stack([np.interp(t, self.cum, closed[:, 0]), np.interp(t, self.cum, closed[:, 1])])

    def sag(self, t0: float, t1: float) -> float:
        """Largest distance of the input outline between t0 < t1 from the chord."""
        inner = self.cum[:-1][(self.cum[:-1] > t0) & (self.cum[:-1] < t1)]
        inner = np.concatenate(
            [
                inner,
                self.cum[:-1][(self.cum[:-1] + self.length > t0) & (self.cum[:-1] + self.length < t1)]
                + self.length,
            ]
        )
        if len(inner) == 0:
            return 0.0
        a, b = self.at(np.array([t0, t1]))
        return float(distance_to_segments(self.at(inner), a[None], b[None]).max())


def _clean_loop(loop: np.ndarray, tol: float) -> np.ndarray | None:
    loop = np.asarray(loop, dtype=np.float64)
    keep = np.linalg.norm(loop - np.roll(loop, 1, axis=0), axis=1) > tol
    loop = loop[keep]
    return loop if len(loop) >= 3 else None


def simplify_loops(loops, short: float, tol: float):
    """Merge away outline vertices at edges shorter than ``short`` (tiny serif steps, notches,
    vertices nearly on top of each other): a vertex at such an edge is dropped when every input
    vertex between its kept neighbours stays within ``tol`` of their new chord and the chord
    crosses no outline edge; the vertex whose removal moves the outline least goes first.
    Returns the simplified loops (each keeps at least 3 vertices)."""
    work = [np.asarray(lp, dtype=np.float64) for lp in loops]
    keeps = [np.ones(len(lp), dtype=bool) for lp in work]

    def current_edges():
        a = [lp[k] for lp, k in zip(work, keeps, strict=True)]
        return np.vstack(a), np.vstack([np.roll(c, -1, axis=0) for c in a])

    for li, lp in enumerate(work):
        n, keep = len(lp), keeps[li]
        while keep.sum() > 3:  # passes: each removes vertices whose neighbours stay
            seg_a, seg_b = current_edges()
            idx = np.flatnonzero(keep)
            m = len(idx)
            q = lp[idx]
            short_edges = np.flatnonzero(np.linalg.norm(np.roll(q, -1, axis=0) - q, axis=1) < short)
            cands = []
            for k in np.unique(np.concatenate([short_edges, (short_edges + 1) % m])):
                prev, nxt = idx[(k - 1) % m], idx[(k + 1) % m]
                span = np.arange(prev + 1, prev + 1 + (nxt - prev - 1) % n) % n
                dev = float(distance_to_segments(lp[span], lp[prev][None], lp[nxt][None]).max())
                if dev <= tol:
                    cands.append((dev, int(k)))
            touched, left = set(), m
            for _dev, k in sorted(cands):
                if left <= 3:
                    break
                if {k, (k - 1) % m, (k + 1) % m} & touched:
                    continue
                i, prev, nxt = idx[k], idx[(k - 1) % m], idx[(k + 1) % m]
                # The new chord must not cross the outline (other loops or this one elsewhere).
                other = ~(
                    np.all(seg_a == lp[i], axis=1)
                    | np.all(seg_b == lp[i], axis=1)
                    | np.all(seg_a == lp[nxt], axis=1)
                    | np.all(seg_b == lp[prev], axis=1)
                )
                if segments_cross(lp[prev], lp[nxt], seg_a[other], seg_b[other]).any():
                    continue
                keep[i] = False
                touched |= {k, (k - 1) % m, (k + 1) % m}
                left -= 1
            if left == m:
                break
    return [lp[k] for lp, k in zip(work, keeps, strict=True)]


def outline_deviation(loops, x: np.ndarray, tris: np.ndarray, samples: int = 16) -> float:
    """How far the mesh's boundary strays from the input outline (two-sided, in the units of
    the coordinates): the larger of the distance of every input vertex to the boundary edges
    and of points along every boundary edge (``samples`` per edge) to the input outline."""
    if len(tris) == 0:
        return float("inf")
    bnd = boundary_edges(tris)
    ba, bb = x[bnd[:, 0]], x[bnd[:, 1]]
    ia = np.vstack(loops)
    ib = np.vstack([np.roll(np.asarray(lp), -1, axis=0) for lp in loops])
    s = np.linspace(0.0, 1.0, samples + 1)
    along = (ba[:, None] + s[None, :, None] * (bb - ba)[:, None]).reshape(-1, 2)
    # Input edges sampled too: a long input edge may pass a boundary vertex between its ends.
    along_in = (ia[:, None] + s[None, :, None] * (ib - ia)[:, None]).reshape(-1, 2)
    return float(max(distance_to_segments(along_in, ba, bb).max(), distance_to_segments(along, ia, ib).max()))


def _resample(loop: np.ndarray, h: float) -> _Loop:
    k = len(loop)
    seg = np.linalg.norm(np.roll(loop, -1, axis=0) - loop, axis=1)
    cum = np.concatenate([[0.0], np.cumsum(seg)])
    e_in, e_out = loop - np.roll(loop, 1, axis=0), np.roll(loop, -1, axis=0) - loop
    turn = np.degrees(np.abs(np.arctan2(cross(e_in, e_out), (e_in * e_out).sum(axis=1))))
    long_edges = np.minimum(seg, np.roll(seg, 1)) >= 0.5 * h
    fixed = np.flatnonzero((turn >= CORNER_TURN_DEG) | long_edges)
    lp = _Loop(loop, cum, np.zeros(0), cum[:-1][turn >= 180.0 - SHARP_DEG])
    if len(fixed) == 0:
        fixed = np.array([0])
    anchors = cum[fixed]
    ts = []
    for i, t0 in enumerate(anchors):
        t1 = anchors[i + 1] if i + 1 < len(anchors) else anchors[0] + lp.length
        n = max(1, round((t1 - t0) / h))
        if len(anchors) == 1:
            n = max(n, 3)
        while True:  # enough points that every chord follows the outline within SAG_REL * h
            tt = t0 + (t1 - t0) * np.arange(n + 1) / n
            if n >= 4 * k or all(lp.sag(tt[j], tt[j + 1]) <= SAG_REL * h for j in range(n)):
                break
            n *= 2
        ts.append(tt[:-1])
    lp.t = np.sort(np.mod(np.concatenate(ts), lp.length))
    return lp


def _hex_grid(lo: np.ndarray, hi: np.ndarray, h: float) -> np.ndarray:
    dy = h * math.sqrt(3.0) / 2.0
    ys = np.arange(lo[1], hi[1] + dy, dy)
    xs = np.arange(lo[0], hi[0] + h, h)
    gx, gy = np.meshgrid(xs, ys)
    gx = gx + (np.arange(len(ys))[:, None] % 2) * 0.5 * h
    return np.column_stack([gx.ravel(), gy.ravel()])


def _circumcentres(p: np.ndarray) -> np.ndarray:
    a, b, c = p[:, 0], p[:, 1], p[:, 2]
    bb, cc = b - a, c - a
    d = 2.0 * cross(bb, cc)
    b2, c2 = (bb * bb).sum(axis=1), (cc * cc).sum(axis=1)
    ux = (cc[:, 1] * b2 - bb[:, 1] * c2) / d
    uy = (bb[:, 0] * c2 - cc[:, 0] * b2) / d
    return a + np.column_stack([ux, uy])


def _initial_points(loops, h: float):
    """The cleaned and simplified outline loops, their resampled outline, and the interior points
    (a hexagonal grid inside, kept clear of the outline)."""
    size = max(float(np.ptp(np.vstack(loops), axis=0).max()), 1e-300)
    cleaned = [c for c in (_clean_loop(loop, 1e-9 * size) for loop in loops) if c is not None]
    if not cleaned:
        raise ValueError("the outline has no area")
    cleaned = simplify_loops(cleaned, SIMPLIFY_SHORT_REL * h, SIMPLIFY_TOL_REL * h)
    outline = [_resample(c, h) for c in cleaned]
    seg_a = np.vstack(cleaned)
    seg_b = np.vstack([np.roll(c, -1, axis=0) for c in cleaned])
    allpts = np.vstack(cleaned)
    grid = _hex_grid(allpts.min(axis=0), allpts.max(axis=0), h)
    grid = grid[points_in_polygon(grid, cleaned)]
    grid = grid[distance_to_segments(grid, seg_a, seg_b) >= INTERIOR_CLEARANCE * h]
    return cleaned, outline, grid


def _circumcentres_to_insert(p, split, seg_a, seg_b, cleaned, h):
    """The circumcentres of the bad triangles (corners ``p``, worst first) that go in as new
    interior points; marks in ``split`` (in place) the outline segments (``seg_a`` to ``seg_b``)
    that they encroach or that lie nearest to those outside."""
    cc = _circumcentres(p)
    ok = np.isfinite(cc).all(axis=1)
    cc = _independent(cc[ok], np.linalg.norm(cc[ok] - p[ok, 0], axis=1))
    enc = _encroaching(cc, seg_a, seg_b)
    inside = points_in_polygon(cc, cleaned)
    hit = enc >= 0
    split[enc[hit]] = True
    cand = cc[~hit & inside]
    split_out = ~hit & ~inside
    if split_out.any():  # outside but not encroaching: split the nearest segment
        near = _nearest_segment(cc[split_out], seg_a, seg_b)
        split[near] = True
    return _spaced(cand, h * 1e-3)


def _drop_unused(x: np.ndarray, tris: np.ndarray):
    """The vertices that some triangle uses, and the triangles renumbered to them."""
    used = np.unique(tris)
    remap = np.full(len(x), -1, dtype=np.int64)
    remap[used] = np.arange(len(used))
    return x[used], remap[tris]


def mesh_region(loops, h: float, min_angle: float = 28.0, cdt=None):
    """Triangulate the region bounded by ``loops`` (list of (k, 2) arrays): see the module doc.
    Returns (vertices (n, 2), triangles (m, 3) counter-clockwise)."""
    if cdt is None:
        raise ValueError("mesh_region needs a constrained Delaunay triangulation (cdt=...)")
    if not h > 0:
        raise ValueError("target edge length must be positive")
    cleaned, outline, interior = _initial_points(loops, h)
    limit = 20 * (len(interior) + sum(len(lp.t) for lp in outline)) + 1000

    for _round in range(MAX_ROUNDS):
        x, tris, bnd_a, bnd_b, seg_ref = _triangulate(outline, interior, cleaned, cdt)
        # Triangles already this small are left alone: near an input corner sharper than
        # min_angle refinement would never end.
        bad = (min_angles(x, tris) < min_angle) & (_shortest_edges(x, tris) > MIN_EDGE_REL * h)
        # Outline segments encroached by an outline vertex of another segment get split first.
        split = _encroached_by_vertices(x, bnd_a, bnd_b)
        if not bad.any() and not split.any():
            break
        if len(interior) + sum(len(lp.t) for lp in outline) > limit:
            break
        new_pts = []
        if bad.any():
            # Worst triangles first; circumcentres outside or encroaching split segments instead.
            order = np.flatnonzero(bad)[np.argsort(min_angles(x, tris[bad]))]
            p = x[tris[order]]
            new_pts = _circumcentres_to_insert(p, split, x[bnd_a], x[bnd_b], cleaned, h)
        before = len(interior) + sum(len(lp.t) for lp in outline)
        _split_segments(outline, seg_ref, np.flatnonzero(split), MIN_EDGE_REL * h, h)
        if len(new_pts):
            # Drop circumcentres too close to the new outline points or each other.
            interior = np.vstack([interior, new_pts])
        if len(interior) + sum(len(lp.t) for lp in outline) == before:
            break
    x, tris, *_ = _triangulate(outline, interior, cleaned, cdt)
    x, tris = _drop_unused(x, tris)
    x = _smooth(x, tris, min_angle)
    return x, tris


def _independent(centres: np.ndarray, radii: np.ndarray) -> np.ndarray:
    """The circumcentres (worst triangle first) that one round may insert together: each
    accepted one lies outside the circumcircles of those accepted before it and they outside
    its own, so inserting them at once gives the triangulation that inserting them one after
    the other would (every triangle whose circumcentre is accepted is still there when its
    turn comes). Inserting all of them at once puts the circumcentres of neighbouring bad
    triangles next to each other and makes new slivers."""
    keep: list[int] = []
    for i in range(len(centres)):
        if keep:
            d = np.linalg.norm(centres[keep] - centres[i], axis=1)
            if (d < np.maximum(radii[keep], radii[i])).any():
                continue
        keep.append(i)
    return centres[keep]


def _spaced(points: np.ndarray, tol: float) -> np.ndarray:
    if len(points) < 2:
        return points
    key = np.round(points / tol).astype(np.int64)
    _, first = np.unique(key, axis=0, return_index=True)
    return points[np.sort(first)]


def _triangulate(outline, interior, cleaned, cdt):
    pts, edges, seg_ref, start = [], [], [], 0
    for li, lp in enumerate(outline):
        n = len(lp.t)
        pts.append(lp.at(lp.t))
        idx = start + np.arange(n)
        edges.append(np.column_stack([idx, np.roll(idx, -1)]))
        seg_ref += [(li, j) for j in range(n)]
        start += n
    nb = start
    pts.append(interior)
    allp = np.vstack(pts)
    edges = np.vstack(edges)
    x, tris = cdt(allp, edges)
    x = np.asarray(x, dtype=np.float64)
    tris = np.asarray(tris, dtype=np.int64).reshape(-1, 3)
    same = len(x) == len(allp) and np.allclose(x[:nb], allp[:nb])
    inside = _inside_by_parity(tris, edges) if same else None
    if inside is None:
        inside = points_in_polygon(x[tris].mean(axis=1), cleaned)
    tris = tris[inside]
    area = signed_areas(x, tris)
    tris[area < 0] = tris[area < 0][:, [0, 2, 1]]
    # Three outline points on a straight side make a flat triangle outside the region whose
    # centroid the inside test cannot place: drop every triangle this flat.
    scale = float(np.ptp(allp, axis=0).max())
    tris = tris[np.abs(area) > 1e-10 * scale * scale]
    if not same:
        # The triangulation merged or added vertices: map outline segments by position.
        bnd = _match(x, allp[:nb])
        return x, tris, bnd[edges[:, 0]], bnd[edges[:, 1]], seg_ref
    return x, tris, edges[:, 0], edges[:, 1], seg_ref


def _inside_by_parity(tris: np.ndarray, edges: np.ndarray) -> np.ndarray | None:
    """(m,) bool: triangles inside the region, found by walking the triangulation from its
    convex hull (outside) and flipping inside/outside at every outline edge crossed. Exact
    where a point-in-polygon test of the centroid is not (a flat triangle between three
    outline points on one straight line). None when an outline edge is not a triangle edge."""
    m = len(tris)
    if m == 0:
        return np.zeros(0, dtype=bool)
    e = np.sort(np.vstack([tris[:, [0, 1]], tris[:, [1, 2]], tris[:, [2, 0]]]), axis=1)
    owner = np.tile(np.arange(m), 3)
    key = e[:, 0] * (int(e.max()) + 1) + e[:, 1]
    con = np.sort(edges, axis=1)
    con_key = con[:, 0] * (int(e.max()) + 1) + con[:, 1]
    if not np.isin(con_key, key).all():
        return None
    constrained = np.isin(key, con_key)
    order = np.argsort(key, kind="stable")
    ks = key[order]
    pair = np.flatnonzero(ks[1:] == ks[:-1])
    nbr = [[] for _ in range(m)]
    for i in pair:
        a, b = order[i], order[i + 1]
        flip = bool(constrained[a])
        nbr[owner[a]].append((owner[b], flip))
        nbr[owner[b]].append((owner[a], flip))
    count = np.bincount(np.searchsorted(ks, key), minlength=len(key))
    hull = count[np.searchsorted(ks, key)] == 1
    state = np.full(m, -1, dtype=np.int8)
    stack = []
    for k in np.flatnonzero(hull):
        t = owner[k]
        if state[t] < 0:
            state[t] = 1 if constrained[k] else 0
            stack.append(t)
    while stack:
        t = stack.pop()
        for u, flip in nbr[t]:
            if state[u] < 0:
                state[u] = state[t] ^ flip
                stack.append(u)
    return state == 1


def _match(x, pts):
    out = np.empty(len(pts), dtype=np.int64)
    for i, p in enumerate(pts):
        out[i] = int(np.argmin(((x - p) ** 2).sum(axis=1)))
    return out


def _encroached_by_vertices(x, bnd_a, bnd_b) -> np.ndarray:
    """(s,) segments whose diametral circle strictly contains another outline vertex."""
    a, b = x[bnd_a], x[bnd_b]
    verts = np.unique(np.concatenate([bnd_a, bnd_b]))
    mid, r2 = 0.5 * (a + b), 0.25 * ((b - a) ** 2).sum(axis=1)
    out = np.zeros(len(a), dtype=bool)
    for s in range(0, len(verts), 1024):
        v = verts[s : s + 1024]
        d2 = ((x[v][:, None] - mid[None]) ** 2).sum(axis=2)
        own = (v[:, None] == bnd_a[None]) | (v[:, None] == bnd_b[None])
        out |= ((d2 < r2[None] * (1 - 1e-9)) & ~own).any(axis=0)
    return out


def _encroaching(points, a, b) -> np.ndarray:
    """(k,) index of a segment whose diametral circle contains the point, or -1."""
    mid, r2 = 0.5 * (a + b), 0.25 * ((b - a) ** 2).sum(axis=1)
    out = np.full(len(points), -1, dtype=np.int64)
    for s in range(0, len(points), 1024):
        d2 = ((points[s : s + 1024, None] - mid[None]) ** 2).sum(axis=2) - r2[None]
        j = np.argmin(d2, axis=1)
        hit = d2[np.arange(len(j)), j] < 0
        out[s : s + 1024] = np.where(hit, j, -1)
    return out


def _nearest_segment(points, a, b) -> np.ndarray:
    return np.argmin(point_segment_distance(points[:, None], a, b), axis=1)


def _shortest_edges(x, tris):
    p = x[tris]
    return np.linalg.norm(p - np.roll(p, 1, axis=1), axis=2).min(axis=1)


def _split_point(lp: _Loop, t0: float, t1: float, unit: float) -> float:
    """Where to split the outline segment t0 < t1: its arc-length midpoint, or, when exactly
    one end is a sharp corner, the point at a power-of-two multiple of ``unit`` from that
    corner nearest the midpoint (concentric shells: the segments at a sharp corner end at the
    same distances from it, so splitting them does not cascade into ever smaller ones)."""
    length = t1 - t0

    def at_sharp(t):
        if lp.sharp is None or len(lp.sharp) == 0:
            return False
        d = np.mod(t - lp.sharp + 0.5 * lp.length, lp.length) - 0.5 * lp.length
        return bool((np.abs(d) < 1e-9 * lp.length).any())

    a0, a1 = at_sharp(t0), at_sharp(t1)
    if a0 == a1:
        return 0.5 * (t0 + t1)
    d = unit * 2.0 ** round(math.log2(0.5 * length / unit))
    return t0 + d if a0 else t1 - d


def _split_segments(outline, seg_ref, segs, min_len, unit):
    add = {}
    for s in segs:
        li, j = seg_ref[int(s)]
        lp = outline[li]
        t0 = lp.t[j]
        t1 = lp.t[j + 1] if j + 1 < len(lp.t) else lp.t[0] + lp.length
        if t1 - t0 < 2 * min_len:
            continue
        add.setdefault(li, []).append(_split_point(lp, t0, t1, unit))
    for li, ts in add.items():
        lp = outline[li]
        lp.t = np.unique(np.mod(np.concatenate([lp.t, ts]), lp.length))


def _smooth(x, tris, min_angle):
    """Laplacian smoothing of interior vertices; a vertex move is undone when an incident
    triangle would turn over or fall below min(its angle before, min_angle)."""
    if len(tris) == 0:
        return x
    uniq, counts = edge_use(tris)
    boundary = np.zeros(len(x), dtype=bool)
    boundary[uniq[counts == 1].ravel()] = True
    boundary[np.setdiff1d(np.arange(len(x)), tris.ravel())] = True
    i, j = uniq[:, 0], uniq[:, 1]
    deg = np.bincount(np.concatenate([i, j]), minlength=len(x)).astype(np.float64)
    for _ in range(SMOOTH_PASSES):
        s = np.zeros_like(x)
        np.add.at(s, i, x[j])
        np.add.at(s, j, x[i])
        target = np.where((deg[:, None] > 0) & ~boundary[:, None], s / np.maximum(deg, 1)[:, None], x)
        old_q = min_angles(x, tris)
        floor = np.minimum(old_q, min_angle)
        moved = ~boundary
        for _attempt in range(10):
            y = np.where(moved[:, None], target, x)
            q = min_angles(y, tris)
            worse = (signed_areas(y, tris) <= 0) | (q < floor - 1e-9)
            if not worse.any():
                break
            moved[tris[worse].ravel()] = False
        else:
            y = x
        x = y
    return x
