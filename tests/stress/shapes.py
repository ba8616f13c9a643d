"""Mesh builders for the stress corpus (counter-clockwise triangle meshes).

Each builder returns ``(vertices (n,2), triangles (m,3), feature)`` centred
near the origin, where ``feature`` is the smallest material thickness or gap
of the shape (dhat must stay well below it for the shape to be valid).
"""

from __future__ import annotations

import math

import numpy as np

from solver.examples import disc_mesh


def _orient(a, b, c):
    return (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0])


def ear_clip(poly):
    """Triangulate a simple counter-clockwise polygon (k,2) by ear clipping.
    Returns (k-2, 3) indices.  O(k^3), fine for the few dozen vertices used here."""
    idx = list(range(len(poly)))
    out = []
    guard = 0
    while len(idx) > 3:
        guard += 1
        if guard > 10 * len(poly) ** 2:
            raise ValueError("ear_clip: polygon is not simple")
        n = len(idx)
        for k in range(n):
            i0, i1, i2 = idx[k - 1], idx[k], idx[(k + 1) % n]
            a, b, c = poly[i0], poly[i1], poly[i2]
            if _orient(a, b, c) <= 0:
                continue  # reflex or flat corner: not an ear
            ok = True
            for j in idx:
                if j in (i0, i1, i2):
                    continue
                p = poly[j]
                if _orient(a, b, p) >= 0 and _orient(b, c, p) >= 0 and _orient(c, a, p) >= 0:
                    ok = False
                    break
            if ok:
                out.append((i0, i1, i2))
                idx.pop(k)
                break
        else:
            raise ValueError("ear_clip: no ear found (polygon not simple or not CCW)")
    out.append(tuple(idx))
    return np.array(out, np.int64)


def _point_segment_distance(p, a, b):
    ab = b - a
    t = np.clip(np.dot(p - a, ab) / max(np.dot(ab, ab), 1e-300), 0.0, 1.0)
    return float(np.linalg.norm(p - (a + t * ab)))


def polygon_feature(poly):
    """Smallest distance from a vertex to a non-incident polygon edge."""
    k = len(poly)
    best = np.inf
    for i in range(k):
        for j in range(k):
            if j == i or (j + 1) % k == i:
                continue
            best = min(best, _point_segment_distance(poly[i], poly[j], poly[(j + 1) % k]))
    return best


def star_polygon(rng, size, n_min=7, n_max=14, min_angle_deg=65.0):
    """Random star-shaped concave polygon (radii in [0.55, 1] x size/2),
    triangulated by ear clipping; convex corners are kept above min_angle."""
    for _ in range(200):
        k = int(rng.integers(n_min, n_max + 1))
        # jittered even angles: no two vertices bunch up
        ang = 2 * math.pi * (np.arange(k) + rng.uniform(-0.3, 0.3, k)) / k
        r = 0.5 * size * rng.uniform(0.55, 1.0, k)
        poly = np.stack([r * np.cos(ang), r * np.sin(ang)], 1)
        if _min_convex_angle(poly) < math.radians(min_angle_deg):
            continue
        try:
            tris = ear_clip(poly)
        except ValueError:
            continue
        return poly, tris, polygon_feature(poly)
    raise RuntimeError("star_polygon: no acceptable polygon")


def _min_convex_angle(poly):
    k = len(poly)
    best = math.pi
    for i in range(k):
        a, b, c = poly[i - 1], poly[i], poly[(i + 1) % k]
        if _orient(a, b, c) > 0:
            u, v = a - b, c - b
            cosang = np.dot(u, v) / (np.linalg.norm(u) * np.linalg.norm(v))
            best = min(best, math.acos(max(-1.0, min(1.0, cosang))))
    return best


def zigzag_polygon(rng, size):
    """A comb/zigzag: a bar with triangular teeth on top (deeply concave), ear clipped."""
    teeth = int(rng.integers(3, 6))
    w, h = size, 0.35 * size
    depth = rng.uniform(0.3, 0.6) * size
    xs = np.linspace(-0.5 * w, 0.5 * w, 2 * teeth + 1)
    top = [(x, 0.5 * h + (depth if i % 2 else 0.0)) for i, x in enumerate(xs)]
    poly = np.array([(-0.5 * w, -0.5 * h), (0.5 * w, -0.5 * h), *top[::-1]], float)
    poly -= poly.mean(axis=0)
    tris = ear_clip(poly)
    return poly, tris, polygon_feature(poly)


def grid_union(mask, cell):
    """Union of grid cells (mask[j, i] True = cell in row j, column i), two CCW
    triangles per cell, unused lattice points dropped.  Masks must be 4-connected
    and free of diagonal-only contacts (those would give a non-manifold boundary)."""
    mask = np.asarray(mask, bool)
    ny, nx = mask.shape
    _check_mask(mask)
    j, i = np.nonzero(mask)
    v00 = j * (nx + 1) + i
    v10, v01 = v00 + 1, v00 + nx + 1
    v11 = v01 + 1
    tris = np.concatenate([np.stack([v00, v10, v11], 1), np.stack([v00, v11, v01], 1)])
    gy, gx = np.meshgrid(np.arange(ny + 1), np.arange(nx + 1), indexing="ij")
    verts = np.stack([gx.ravel(), gy.ravel()], 1) * float(cell)
    used = np.unique(tris)
    remap = np.full(len(verts), -1)
    remap[used] = np.arange(len(used))
    verts = verts[used]
    verts = verts - 0.5 * (verts.min(0) + verts.max(0))
    return verts, remap[tris].astype(np.int64), float(cell)


def _check_mask(mask):
    ny, nx = mask.shape
    for j in range(ny - 1):
        for i in range(nx - 1):
            q = mask[j : j + 2, i : i + 2]
            if (q[0, 0] and q[1, 1] and not q[0, 1] and not q[1, 0]) or (
                q[0, 1] and q[1, 0] and not q[0, 0] and not q[1, 1]
            ):
                raise ValueError("grid_union: diagonal-only contact in mask")


def mask_shape(kind, rng):
    """Boolean masks of concave / holed grid shapes."""
    if kind == "L":
        n = int(rng.integers(3, 5))
        m = np.zeros((n, n), bool)
        m[0, :] = True
        m[:, 0] = True
    elif kind == "U":
        n = int(rng.integers(3, 5))
        m = np.zeros((n, n + 1), bool)
        m[0, :] = True
        m[:, 0] = True
        m[:, -1] = True
    elif kind == "C":
        n = int(rng.integers(3, 5))
        m = np.ones((2 * n - 1, n), bool)
        m[1:-1, 1:] = False
    elif kind == "T":
        n = 2 * int(rng.integers(1, 3)) + 1
        m = np.zeros((n, n), bool)
        m[-1, :] = True
        m[:, n // 2] = True
    elif kind == "frame":
        n = int(rng.integers(3, 6))
        m = np.ones((n, n), bool)
        m[1:-1, 1:-1] = False
    elif kind == "holes":
        n = 5 if rng.random() < 0.5 else 7
        m = np.ones((n, n), bool)
        m[1:-1:2, 1:-1:2] = False
    else:
        raise ValueError(kind)
    return m


def rectangle(w, h, nx, ny):
    """Grid rectangle w x h with nx x ny cells (a sliver when h << w)."""
    m = np.ones((ny, nx), bool)
    v, t, _ = grid_union(m, 1.0)
    v = v * np.array([w / nx, h / ny])
    return v, t, float(min(w, h))


def annulus(r_out, r_in, n_theta, n_r):
    """Ring between r_in and r_out: n_r layers of n_theta quads, split into triangles."""
    ang = 2 * math.pi * np.arange(n_theta) / n_theta
    radii = np.linspace(r_in, r_out, n_r + 1)
    verts = np.concatenate([np.stack([r * np.cos(ang), r * np.sin(ang)], 1) for r in radii])
    tris = []
    for layer in range(n_r):
        a = layer * n_theta + np.arange(n_theta)
        b = layer * n_theta + (np.arange(n_theta) + 1) % n_theta
        c, d = a + n_theta, b + n_theta  # outer ring
        tris += [np.stack([a, b, d], 1), np.stack([a, d, c], 1)]
    feature = min(r_out - r_in, 2 * r_in)
    return verts, np.concatenate(tris).astype(np.int64), float(feature)


def disc(radius, n_rings, n_boundary):
    v, t = disc_mesh(radius, n_rings, (0.0, 0.0), n_boundary)
    return v, t, float(radius)


def random_shape(rng, kind, size):
    """One shape of the given kind with overall extent about `size`."""
    if kind == "square":
        n = int(rng.integers(2, 6))
        return rectangle(size, size, n, n)
    if kind == "sliver":
        aspect = rng.uniform(15, 40)
        nx = int(rng.integers(6, 16))
        return rectangle(size, size / aspect, nx, 1)
    if kind == "disc":
        rings = int(rng.integers(1, 4))
        return disc(0.5 * size, rings, int(rng.integers(4 * rings, 6 * rings + 1)) if rings > 1 else 8)
    if kind == "annulus":
        ratio = rng.uniform(0.45, 0.85)
        return annulus(0.5 * size, 0.5 * size * ratio, int(rng.integers(12, 29)), int(rng.integers(1, 3)))
    if kind == "star":
        return star_polygon(rng, size)
    if kind == "zigzag":
        return zigzag_polygon(rng, size)
    if kind in ("L", "U", "C", "T", "frame", "holes"):
        m = mask_shape(kind, rng)
        cell = size / max(m.shape)
        return grid_union(m, cell)
    raise ValueError(kind)


SHAPE_KINDS = ("square", "sliver", "disc", "annulus", "star", "zigzag", "L", "U", "C", "T", "frame", "holes")


def rotate(v, angle):
    c, s = math.cos(angle), math.sin(angle)
    return np.asarray(v, float) @ np.array([[c, s], [-s, c]])
