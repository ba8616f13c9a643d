"""Mesh quantities the model is built from: lumped masses, contact weights, components.

The geometry they rest on (signed areas, boundary edges) is in ``geometry.py``; the checks
that a body mesh is sound are in ``validate.py``.
"""

import numpy as np

from .geometry import signed_areas


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
