"""Mesh topology and validation: orientation, boundary, masses, weights."""

import numpy as np

from .errors import SolverInputError


def signed_areas(x, tris):
    """(m,) signed triangle areas (positive = counter-clockwise)."""
    a = x[tris[:, 1]] - x[tris[:, 0]]
    b = x[tris[:, 2]] - x[tris[:, 0]]
    return 0.5 * (a[:, 0] * b[:, 1] - a[:, 1] * b[:, 0])


def edge_use(tris):
    """Undirected edges (k,2) sorted per row, with the number of triangles using each."""
    e = np.sort(np.concatenate([tris[:, [0, 1]], tris[:, [1, 2]], tris[:, [2, 0]]]), axis=1)
    return np.unique(e, axis=0, return_counts=True)


def boundary_edges(tris):
    """Directed boundary edges (k,2): edges used by exactly one triangle, in
    that triangle's orientation (so CCW meshes give CCW outer loops)."""
    directed = np.concatenate([tris[:, [0, 1]], tris[:, [1, 2]], tris[:, [2, 0]]])
    und, counts = edge_use(tris)
    once = und[counts == 1]
    key_once = once[:, 0].astype(np.int64) * (tris.max() + 1) + once[:, 1]
    s = np.sort(directed, axis=1)
    key = s[:, 0].astype(np.int64) * (tris.max() + 1) + s[:, 1]
    return directed[np.isin(key, key_once)]


def lumped_mass(x, tris, density):
    """(N,) vertex masses: a third of each incident triangle's area times density."""
    m = np.zeros(len(x))
    area = np.abs(signed_areas(x, tris)) * np.broadcast_to(density, (len(tris),))
    np.add.at(m, tris.ravel(), np.repeat(area / 3.0, 3))
    return m


def vertex_weights(x, edges, n):
    """(n,) quadrature weights: half the summed lengths of incident edges."""
    w = np.zeros(n)
    if len(edges):
        length = np.linalg.norm(x[edges[:, 1]] - x[edges[:, 0]], axis=1)
        np.add.at(w, edges.ravel(), np.repeat(0.5 * length, 2))
    return w


def _finite_array(value, shape_tail, what, dtype=float):
    try:
        arr = np.asarray(value, dtype=dtype)
    except (TypeError, ValueError) as exc:
        raise SolverInputError(f"{what}: not a numeric array ({exc})") from None
    if arr.ndim != 1 + len(shape_tail) or arr.shape[1:] != shape_tail:
        raise SolverInputError(
            f"{what}: expected shape (n, {', '.join(map(str, shape_tail))}), got {arr.shape}"
        )
    if dtype is float and not np.all(np.isfinite(arr)):
        raise SolverInputError(f"{what}: contains NaN or infinite values")
    return arr


def checked_body_mesh(name, vertices, triangles):
    """Validate a body mesh; returns (vertices (n,2) float, triangles (m,3) CCW)."""
    v = _finite_array(vertices, (2,), f"body '{name}': vertices")
    if len(v) < 3:
        raise SolverInputError(f"body '{name}': needs at least 3 vertices, got {len(v)}")
    try:
        t = np.asarray(triangles)
    except (TypeError, ValueError):
        raise SolverInputError(f"body '{name}': triangles are not an integer array") from None
    if t.ndim != 2 or t.shape[1] != 3 or len(t) == 0:
        raise SolverInputError(f"body '{name}': triangles must have shape (m, 3) with m >= 1, got {t.shape}")
    if not np.issubdtype(t.dtype, np.integer) and (
        not np.all(np.isfinite(t.astype(float))) or np.any(t != np.round(t))
    ):
        raise SolverInputError(f"body '{name}': triangle indices must be integers")
    t = t.astype(np.intp)
    if t.min() < 0 or t.max() >= len(v):
        raise SolverInputError(f"body '{name}': triangle index out of range [0, {len(v) - 1}]")
    if np.any((t[:, 0] == t[:, 1]) | (t[:, 1] == t[:, 2]) | (t[:, 0] == t[:, 2])):
        raise SolverInputError(f"body '{name}': a triangle repeats a vertex")
    unused = np.setdiff1d(np.arange(len(v)), t.ravel())
    if len(unused):
        raise SolverInputError(
            f"body '{name}': vertex {unused[0]} is not used by any triangle ({len(unused)} unused vertices)"
        )
    area = signed_areas(v, t)
    scale = max(float(np.ptp(v, axis=0).max()), 1e-300)
    tiny = np.abs(area) <= 1e-12 * scale * scale
    if tiny.any():
        i = int(np.flatnonzero(tiny)[0])
        raise SolverInputError(f"body '{name}': triangle {i} is degenerate (zero area)")
    if np.all(area < 0):
        t = t[:, [0, 2, 1]]
    elif np.any(area < 0):
        minority = area < 0 if (area > 0).sum() >= (area < 0).sum() else area > 0
        i = int(np.flatnonzero(minority)[0])
        raise SolverInputError(f"body '{name}': triangle {i} is inverted (inconsistent orientation)")
    und, counts = edge_use(t)
    if np.any(counts > 2):
        e = und[np.argmax(counts > 2)]
        raise SolverInputError(
            f"body '{name}': non-manifold edge ({e[0]}, {e[1]}) shared by more than two triangles"
        )
    _, first, counts = np.unique(np.sort(t, axis=1), axis=0, return_index=True, return_counts=True)
    if np.any(counts > 1):
        raise SolverInputError(f"body '{name}': triangle {int(first[np.argmax(counts > 1)])} is repeated")
    directed = np.concatenate([t[:, [0, 1]], t[:, [1, 2]], t[:, [2, 0]]])
    if len(np.unique(directed, axis=0)) < len(directed):
        # consistently oriented neighbours traverse a shared edge in opposite directions
        raise SolverInputError(
            f"body '{name}': two triangles fold over each other (same-direction shared edge)"
        )
    return v, t


def components(tris, n):
    """(n,) connected-component label of every vertex (min vertex index of its
    component); unused vertices label themselves.  Label propagation: each
    pass takes the minimum over triangles, until nothing changes."""
    label = np.arange(n)
    while True:
        tri_min = label[tris].min(axis=1)
        new = label.copy()
        np.minimum.at(new, tris.ravel(), np.repeat(tri_min, 3))
        new = new[new]  # pointer jumping: follow labels to their roots
        if np.array_equal(new, label):
            return label
        label = new


def check_boundary_simple(name, x, edges):
    """Raise if a body's boundary has vertices used by more than two boundary
    edges (a 'bow-tie' that makes contact ill-defined)."""
    deg = np.bincount(edges.ravel(), minlength=len(x))
    if np.any(deg > 2):
        i = int(np.argmax(deg > 2))
        raise SolverInputError(
            f"body '{name}': non-manifold boundary at vertex {i} ({deg[i]} boundary edges meet there)"
        )
