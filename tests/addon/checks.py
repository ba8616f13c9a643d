"""Independent geometric checks for baked frames (no add-on or solver code used)."""

import numpy as np


def boundary_edges(tris: np.ndarray) -> np.ndarray:
    """Edges used by exactly one triangle."""
    e = np.sort(np.concatenate([tris[:, [0, 1]], tris[:, [1, 2]], tris[:, [2, 0]]]), axis=1)
    uniq, counts = np.unique(e, axis=0, return_counts=True)
    return uniq[counts == 1]


def signed_areas(x: np.ndarray, tris: np.ndarray) -> np.ndarray:
    a, b, c = x[tris[:, 0]], x[tris[:, 1]], x[tris[:, 2]]
    return 0.5 * ((b[:, 0] - a[:, 0]) * (c[:, 1] - a[:, 1]) - (b[:, 1] - a[:, 1]) * (c[:, 0] - a[:, 0]))


def _orient(p, q, r):
    return (q[..., 0] - p[..., 0]) * (r[..., 1] - p[..., 1]) - (q[..., 1] - p[..., 1]) * (
        r[..., 0] - p[..., 0]
    )


def crossing_pairs(segments: np.ndarray, ids: np.ndarray) -> int:
    """Number of pairs of segments (S, 2, 2) that properly intersect, skipping pairs that share
    an endpoint id (ids: (S, 2) global vertex ids)."""
    a, b = segments[:, None, 0], segments[:, None, 1]
    c, d = segments[None, :, 0], segments[None, :, 1]
    d1, d2 = _orient(a, b, c), _orient(a, b, d)
    d3, d4 = _orient(c, d, a), _orient(c, d, b)
    cross = (d1 * d2 < 0) & (d3 * d4 < 0)
    shared = (ids[:, None, :, None] == ids[None, :, None, :]).any(axis=(2, 3))
    cross &= ~shared
    return int(np.triu(cross, 1).sum())


def point_in_triangles(points: np.ndarray, x: np.ndarray, tris: np.ndarray) -> np.ndarray:
    """(P,) bool: strictly inside any triangle of the mesh (x, tris)."""
    a, b, c = (x[tris[:, k]][None] for k in range(3))
    p = points[:, None]
    s1, s2, s3 = _orient(a, b, p), _orient(b, c, p), _orient(c, a, p)
    inside = ((s1 > 0) & (s2 > 0) & (s3 > 0)) | ((s1 < 0) & (s2 < 0) & (s3 < 0))
    return inside.any(axis=1)


def assert_intersection_free(bodies, label=""):
    """bodies: list of (x (n,2), tris (m,3)). No inverted triangle, no crossing boundary edges
    (within or between bodies), no vertex of one body inside another."""
    segs, ids, offset = [], [], 0
    for i, (x, tris) in enumerate(bodies):
        areas = signed_areas(x, tris)
        assert (areas > 0).all() or (areas < 0).all(), f"{label}: inverted triangle in body {i}"
        e = boundary_edges(tris)
        segs.append(x[e])
        ids.append(e + offset)
        offset += len(x)
        for j, (y, tris_j) in enumerate(bodies):
            if j != i:
                assert not point_in_triangles(x, y, tris_j).any(), (
                    f"{label}: a vertex of body {i} is inside body {j}"
                )
    n = crossing_pairs(np.concatenate(segs), np.concatenate(ids))
    assert n == 0, f"{label}: {n} crossing boundary-edge pairs"
