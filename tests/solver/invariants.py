"""Independent checkers shared by the solver tests.

Everything here is written from the textbook formulas and deliberately does
NOT import from ``solver`` (so the tests never check the code against itself):
point-segment distance, orientation predicates and segment intersection,
boundary edges of a triangle mesh, signed areas, a least-squares rotation
angle, and central finite differences.
"""

import dataclasses
import math

import numpy as np

# ------------------------------------------------------------------ geometry


def cross2(a, b):
    """z-component of the 2D cross product, broadcasting over leading axes."""
    return a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]


def point_segment_distance(p, a, b):
    """Exact Euclidean distance of points p to segments [a, b] (arrays (..., 2)).

    Orthogonal projection onto the segment's line, parameter clamped to [0, 1].
    Degenerate segments (a == b) fall back to |p - a|.
    """
    p, a, b = (np.asarray(v, float) for v in (p, a, b))
    e = b - a
    ee = np.sum(e * e, axis=-1)
    t = np.sum((p - a) * e, axis=-1) / np.where(ee > 0, ee, 1.0)
    t = np.clip(np.where(ee > 0, t, 0.0), 0.0, 1.0)
    q = a + t[..., None] * e
    return np.sqrt(np.sum((p - q) ** 2, axis=-1))


def segments_intersect(a0, a1, b0, b1):
    """Closed segments [a0,a1] and [b0,b1] share a point (touching counts).

    Exact: the stress checker's orientation signs (float determinant with an
    error bound, rational arithmetic when the bound cannot decide).  A plain
    float sign reports collinear, disjoint edges of a straight boundary as
    crossing whenever rounding gives inconsistent signs.  Arrays (n, 2) -> (n,) bool.
    """
    from tests.stress.check import segments_intersect as exact

    return exact(a0, a1, b0, b1)


def points_in_triangles(q, x, tris):
    """(len(q),) bool: point q_i lies in (or on) some CCW triangle of (x, tris)."""
    a, b, c = x[tris[:, 0]][None], x[tris[:, 1]][None], x[tris[:, 2]][None]
    q = np.asarray(q, float)[:, None]
    inside = (cross2(b - a, q - a) >= 0) & (cross2(c - b, q - b) >= 0) & (cross2(a - c, q - c) >= 0)
    return inside.any(axis=1)


def signed_areas(x, tris):
    x = np.asarray(x, float)
    return 0.5 * cross2(x[tris[:, 1]] - x[tris[:, 0]], x[tris[:, 2]] - x[tris[:, 0]])


def boundary_edges(tris):
    """Undirected edges used by exactly one triangle, (k, 2) sorted per row."""
    tris = np.asarray(tris)
    e = np.sort(np.concatenate([tris[:, [0, 1]], tris[:, [1, 2]], tris[:, [2, 0]]]), axis=1)
    uniq, count = np.unique(e, axis=0, return_counts=True)
    return uniq[count == 1]


def crossing_edge_pairs(x, edges):
    """All pairs (i, j), i < j, of edges (k,2) that do not share a vertex but
    intersect (touching included), for positions x (N, 2).  O(k^2) on purpose."""
    k = len(edges)
    i, j = np.triu_indices(k, 1)
    ei, ej = edges[i], edges[j]
    share = (ei[:, :, None] == ej[:, None, :]).any(axis=(1, 2))
    i, j, ei, ej = i[~share], j[~share], ei[~share], ej[~share]
    hit = segments_intersect(x[ei[:, 0]], x[ei[:, 1]], x[ej[:, 0]], x[ej[:, 1]])
    return np.column_stack([i[hit], j[hit]])


def rotation_angle(rest, x):
    """Angle [rad] of the rotation R minimising sum |(x - c) - R (X - C)|^2
    (2D Procrustes / polar fit about the centroids)."""
    X = rest - rest.mean(axis=0)
    y = x - x.mean(axis=0)
    A = y.T @ X  # sum y X^T
    return float(np.arctan2(A[1, 0] - A[0, 1], A[0, 0] + A[1, 1]))


# ------------------------------------------------------------------ finite differences


def fd_gradient(f, x, h):
    """Central-difference gradient of scalar f at flat x."""
    x = np.asarray(x, float)
    g = np.empty_like(x)
    for i in range(len(x)):
        xp, xm = x.copy(), x.copy()
        xp[i] += h
        xm[i] -= h
        g[i] = (f(xp) - f(xm)) / (2.0 * h)
    return g


def fd_jacobian(g, x, h):
    """Central-difference Jacobian of vector function g at flat x: J[:, i] = dg/dx_i."""
    x = np.asarray(x, float)
    cols = []
    for i in range(len(x)):
        xp, xm = x.copy(), x.copy()
        xp[i] += h
        xm[i] -= h
        cols.append((np.asarray(g(xp), float) - np.asarray(g(xm), float)) / (2.0 * h))
    return np.stack(cols, axis=-1)


def assert_close_rel(actual, expected, rtol, what=""):
    """|actual - expected| <= rtol * max(|expected|, |actual|), Frobenius norms
    over the whole array (so entries that are ~0 do not need their own scale)."""
    actual = np.asarray(actual, float)
    expected = np.asarray(expected, float)
    scale = max(np.linalg.norm(expected), np.linalg.norm(actual), 1e-300)
    err = np.linalg.norm(actual - expected)
    assert err <= rtol * scale, (
        f"{what}: relative error {err / scale:.3e} > {rtol:g}\nactual={actual}\nexpected={expected}"
    )


def random_stencil(rng, kind):
    """A point-edge stencil [p, e0, e1] (3, 2) well inside one closest-feature
    region: kind 'PP0' (projection parameter in [-1, -0.2]), 'PP1' ([1.2, 2])
    or 'PL' ([0.2, 0.8]); small finite-difference steps never change the case."""
    e0 = rng.uniform(-1, 1, 2)
    ang = rng.uniform(0, 2 * np.pi)
    e1 = e0 + rng.uniform(0.3, 1.0) * np.array([np.cos(ang), np.sin(ang)])
    e = e1 - e0
    n = np.array([-e[1], e[0]]) / np.linalg.norm(e)
    t = {"PP0": rng.uniform(-1.0, -0.2), "PP1": rng.uniform(1.2, 2.0), "PL": rng.uniform(0.2, 0.8)}[kind]
    p = e0 + t * e + rng.uniform(0.05, 0.5) * rng.choice([-1, 1]) * n
    return np.array([p, e0, e1])


def sampled_motion_crossings(x0, x1, edges, spacing):
    """Edge pairs (i, j) that cross somewhere on the straight motion x0 -> x1
    (N, 2), by brute force: at evenly spaced times, so fine that no vertex moves
    more than ``spacing`` between two samples (choose it below half the
    thinnest feature: a vertex cannot then jump over an edge it should have
    been seen crossing).  Returns the sorted unique pairs, (k, 2)."""
    x0, x1 = np.asarray(x0, float), np.asarray(x1, float)
    longest = float(np.linalg.norm(x1 - x0, axis=1).max(initial=0.0))
    n = max(2, int(np.ceil(longest / spacing)) + 1)
    found = [crossing_edge_pairs(x0 + t * (x1 - x0), edges) for t in np.linspace(0.0, 1.0, n)]
    return np.unique(np.concatenate(found).reshape(-1, 2), axis=0)


def assert_same_values(a, b, path="scene"):
    """Deep equality of scenes / dicts / arrays, NaN == NaN, dtypes included."""
    if dataclasses.is_dataclass(a):
        assert type(a) is type(b), path
        for f in dataclasses.fields(a):
            assert_same_values(getattr(a, f.name), getattr(b, f.name), f"{path}.{f.name}")
    elif isinstance(a, np.ndarray):
        assert isinstance(b, np.ndarray) and a.dtype == b.dtype and a.shape == b.shape, path
        assert np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), f"{path} was modified"
    elif isinstance(a, dict):
        assert a.keys() == b.keys(), path
        for k in a:
            assert_same_values(a[k], b[k], f"{path}[{k!r}]")
    elif isinstance(a, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same_values(x, y, f"{path}[{i}]")
    elif isinstance(a, float) and math.isnan(a):
        assert isinstance(b, float) and math.isnan(b), path
    else:
        assert a == b, f"{path}: {a!r} != {b!r}"


def barrier_ref(s):
    """The log barrier b(s) of s = d^2 / dhat^2 (0 outside 0 < s < 1), written independently."""
    return np.where((s > 0) & (s < 1), -((s - 1) ** 2) * np.log(np.clip(s, 1e-300, 1)), 0.0)


# ------------------------------------------------------------------ input builders
# (These construct solver inputs; the checkers above never import solver.)


def grid_square(side, n_seg, center=(0.0, 0.0), angle=0.0):
    """Square of n_seg x n_seg cells, two CCW triangles per cell, rotated by angle
    about its centre.  Written here so the tests do not depend on examples.py."""
    s = np.linspace(-0.5 * side, 0.5 * side, n_seg + 1)
    X, Y = np.meshgrid(s, s)
    v = np.column_stack([X.ravel(), Y.ravel()])
    c, sn = np.cos(angle), np.sin(angle)
    v = v @ np.array([[c, sn], [-sn, c]]) + np.asarray(center, float)
    tris = []
    for j in range(n_seg):
        for i in range(n_seg):
            a = j * (n_seg + 1) + i
            tris += [[a, a + 1, a + n_seg + 2], [a, a + n_seg + 2, a + n_seg + 1]]
    return v, np.array(tris)


def contact_scene(formulation="original", dhat=0.05, E=1e3, density=100.0, mu=0.4, mu_static=None, kappa=1e5):
    """A small scene whose rest state has every kind of contact active (all
    distances in (0, dhat)): body-body point-line and point-point pairs
    (including a point near a vertex shared by two candidate edges, so the
    convergent formulation subtracts a duplicate), body vs a tilted
    half-plane, body vertices vs a collider edge and collider vertices vs body
    edges.  Only mesh validation is run on it (build_model), not the
    initial-geometry check."""
    from solver import Body, Collider, HalfPlane, Material, Scene, SimParams

    mat = Material(E=E, nu=0.3, density=density, mu=mu, mu_static=mu_static)
    va, ta = grid_square(0.3, 2)  # [-0.15, 0.15]^2
    vb, tb = grid_square(0.2, 1, angle=0.3)
    low = vb[np.argmin(vb[:, 1])]
    vb = vb - low + np.array([0.01, 0.15 + 0.5 * dhat])  # lowest corner above A's top
    col = Collider.static("wall", [[0.15 + 0.4 * dhat, -0.1], [0.15 + 0.4 * dhat, 0.1]], [[0, 1]], mu=0.3)
    tilt = 0.05
    ground = HalfPlane((0.0, -0.15 - 0.6 * dhat), (np.sin(tilt), np.cos(tilt)), 0.5, "ground")
    params = SimParams(dt=0.01, dhat=dhat, kappa=kappa, formulation=formulation, eps_v=0.05)
    return Scene(
        bodies=(Body("A", va, ta, mat), Body("B", vb, tb, mat)),
        colliders=(col,),
        half_planes=(ground,),
        params=params,
    )


def synthetic_set(rng, n, k, mu_static):
    """A FrictionSet of n random contacts on k vertices each (disjoint), mu_static optional."""
    from solver.friction import FrictionSet

    idx = np.arange(n * k).reshape(n, k)
    w = rng.normal(size=(n, 2 * k))
    mu_lam = rng.uniform(0.5, 5.0, n)
    mus = mu_lam * rng.uniform(1.2, 2.0, n) if mu_static else None
    return FrictionSet(idx, w, mu_lam, mus)
