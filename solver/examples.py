"""Built-in example scenes and simple mesh generators.

All meshes are counter-clockwise triangle meshes in SI units.  ``EXAMPLES``
maps a CLI name (``python -m solver example NAME``) to a factory returning a
:class:`~solver.scene.Scene`; ``DEFAULT_STEPS`` gives a sensible run length.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from .scene import Body, Collider, HalfPlane, Material, Scene, SimParams

__all__ = [
    "DEFAULT_STEPS",
    "EXAMPLES",
    "block_on_slope",
    "compressing_squares",
    "disc_mesh",
    "free_fall",
    "pile",
    "square_mesh",
]


# --------------------------------------------------------------------------
# mesh generators
# --------------------------------------------------------------------------


def square_mesh(side, n_seg, center=(0.0, 0.0)):
    """Regular grid of n_seg x n_seg cells, each split into 2 CCW triangles.

    Returns (vertices (n_seg+1)^2 x 2, triangles 2 n_seg^2 x 3).  Vertex
    ``j * (n_seg + 1) + i`` sits in column i (x) and row j (y).
    """
    n_seg = int(n_seg)
    if n_seg < 1:
        raise ValueError(f"square_mesh: n_seg must be >= 1, got {n_seg}")
    s = np.linspace(-0.5 * side, 0.5 * side, n_seg + 1)
    x, y = np.meshgrid(s, s)  # rows = y, columns = x
    verts = np.stack([x.ravel(), y.ravel()], axis=1) + np.asarray(center, float)
    j, i = np.meshgrid(np.arange(n_seg), np.arange(n_seg), indexing="ij")
    v00 = (j * (n_seg + 1) + i).ravel()
    v10, v01 = v00 + 1, v00 + n_seg + 1
    v11 = v01 + 1
    tris = np.concatenate([np.stack([v00, v10, v11], 1), np.stack([v00, v11, v01], 1)])
    return verts, tris.astype(np.int64)


def disc_mesh(radius, n_rings, center=(0.0, 0.0), n_boundary=None):
    """Ring-triangulated disc: a centre vertex plus n_rings concentric rings.

    Ring k (1..n_rings) has round(n_boundary * k / n_rings) vertices (at least
    3); n_boundary defaults to 6 * n_rings and must be >= 4 * n_rings.  Neighbouring rings are stitched by
    walking both rings by increasing angle, so every triangle is CCW.
    """
    n_rings = int(n_rings)
    if n_rings < 1:
        raise ValueError(f"disc_mesh: n_rings must be >= 1, got {n_rings}")
    n_boundary = 6 * n_rings if n_boundary is None else int(n_boundary)
    if n_boundary < 4 * n_rings:
        # Coarser rings than this give slivers (arc spacing >> ring spacing).
        raise ValueError(f"disc_mesh: n_boundary must be >= 4 * n_rings = {4 * n_rings}, got {n_boundary}")
    counts = [max(3, round(n_boundary * k / n_rings)) for k in range(1, n_rings + 1)]
    pts, starts, tris = [np.zeros((1, 2))], [], []
    first = 1
    for k, count in enumerate(counts, start=1):
        # Odd rings rotated by half a spacing so rings interleave nicely.
        phase = math.pi / count * (k % 2)
        ang = phase + 2 * math.pi * np.arange(count) / count
        pts.append(radius * k / n_rings * np.stack([np.cos(ang), np.sin(ang)], 1))
        starts.append((first, count, phase))
        first += count
    # Fan from the centre to ring 1.
    f, c, _ = starts[0]
    ring = f + np.arange(c)
    tris.append(np.stack([np.zeros(c, int), ring, np.roll(ring, -1)], 1))
    for (fa, a, pa), (fb, b, pb) in itertools.pairwise(starts):
        tris.append(_stitch_rings(fa, a, pa, fb, b, pb))
    verts = np.concatenate(pts) + np.asarray(center, float)
    return verts, np.concatenate(tris).astype(np.int64)


def _stitch_rings(fa, a, pa, fb, b, pb):
    """Triangles between inner ring (first index fa, a vertices, phase pa) and outer ring."""
    out, i, j = [], 0, 0
    while i < a or j < b:
        next_in = pa + 2 * math.pi * (i + 1) / a
        next_out = pb + 2 * math.pi * (j + 1) / b
        if j == b or (i < a and next_in < next_out):
            out.append((fa + i % a, fb + j % b, fa + (i + 1) % a))
            i += 1
        else:
            out.append((fa + i % a, fb + j % b, fb + (j + 1) % b))
            j += 1
    return np.array(out, dtype=np.int64)


def _rotate(points, angle, pivot=(0.0, 0.0)):
    c, s = math.cos(angle), math.sin(angle)
    p = np.asarray(pivot, float)
    return (np.asarray(points, float) - p) @ np.array([[c, s], [-s, c]]) + p


def _horizontal_ceiling(name, x_min, x_max, y_start, y_stop, speed, mu=0.0):
    """Segment at y_start moving down at `speed` until y_stop, then holding.

    Two samples: t=0 and the exact arrival time; positions are clamped after
    the last sample, so the ceiling stays at y_stop.
    """
    verts = np.array([[x_min, y_start], [x_max, y_start]])
    t_stop = (y_start - y_stop) / speed
    final = verts + np.array([0.0, y_stop - y_start])
    return Collider(
        name=name,
        vertices=verts,
        edges=np.array([[0, 1]]),
        times=np.array([0.0, t_stop]),
        positions=np.stack([verts, final]),
        mu=mu,
    )


# --------------------------------------------------------------------------
# scenes
# --------------------------------------------------------------------------


def compressing_squares(n_seg=2, formulation="original", kappa=1e5):
    """Two squares dropped on the ground and squeezed by a descending ceiling.

    Side 0.45 m; top square centred at (0, 0), bottom at (0.045, -0.495);
    rho = 1000, E = 1e5, nu = 0.4, mu = 0.4; ground y >= -1 (mu 0.4);
    frictionless ceiling from y = 0.27 down at 0.5 m/s to y = -0.7;
    h = 0.01, dhat = 0.01, kappa = 1e5, eps_v = 1e-3, newton_tol = 1e-2.
    """
    mat = Material(E=1e5, nu=0.4, density=1000.0, mu=0.4)
    bodies = []
    for name, center in (("top", (0.0, 0.0)), ("bottom", (0.045, -0.495))):
        v, t = square_mesh(0.45, n_seg, center)
        bodies.append(Body(name=name, vertices=v, triangles=t, material=mat))
    ceiling = _horizontal_ceiling("ceiling", -4.0, 4.0, 0.27, -0.7, 0.5, mu=0.0)
    ground = HalfPlane(point=(0.0, -1.0), normal=(0.0, 1.0), mu=0.4, name="ground")
    params = SimParams(dt=0.01, dhat=0.01, kappa=kappa, formulation=formulation, eps_v=1e-3, newton_tol=1e-2)
    return Scene(bodies=tuple(bodies), colliders=(ceiling,), half_planes=(ground,), params=params)


def block_on_slope(theta=0.3, mu=0.5, n_seg=2, side=0.1, E=1e6, dt=0.01, gap=None):
    """A square block resting on an inclined half-plane through the origin.

    The slope rises to the right at angle theta [rad]; its outward normal is
    (-sin theta, cos theta).  The block's bottom face is parallel to the slope,
    `gap` above it (default 1.5 * dhat, so the start is contact-free), centred
    over the origin.  Friction mu on both the block and the slope.  Analytic
    behaviour: sticks when tan(theta) < mu, otherwise slides down-slope with
    acceleration g (sin theta - mu cos theta).
    """
    dhat = 1e-3
    gap = 1.5 * dhat if gap is None else float(gap)
    v, t = square_mesh(side, n_seg, (0.0, 0.5 * side + gap))
    v = _rotate(v, theta)
    normal = (-math.sin(theta), math.cos(theta))
    mat = Material(E=E, nu=0.3, density=1000.0, mu=mu)
    params = SimParams(dt=dt, dhat=dhat, kappa=0.1 * E, formulation="original", eps_v=1e-4, newton_tol=1e-3)
    return Scene(
        bodies=(Body("block", v, t, mat),),
        half_planes=(HalfPlane((0.0, 0.0), normal, mu, "slope"),),
        params=params,
    )


def free_fall(n_seg=2, side=0.2, velocity=(0.0, 0.0), dt=0.01):
    """One square falling freely from rest (or from `velocity`); no contact at all.

    Implicit Euler gives v_k = v_0 + k h g and x_k = x_0 + k h v_0 + h^2 g k(k+1)/2.
    """
    v, t = square_mesh(side, n_seg)
    body = Body(
        "square", v, t, Material(E=1e5, nu=0.4, density=1000.0, mu=0.0), velocity=np.asarray(velocity, float)
    )
    return Scene(bodies=(body,), params=SimParams(dt=dt))


def pile(
    n_shapes=12,
    n_columns=4,
    shape="mixed",
    n_seg=8,
    n_rings=4,
    n_boundary=32,
    size=0.2,
    ceiling_speed=0.25,
    seed=0,
):
    """Squares and discs (about 80 vertices each) dropped into a walled box.

    Shapes sit on a jittered grid with n_columns columns; the box has a ground
    (y >= 0), two walls and a frictionless ceiling that descends at
    ceiling_speed until the shapes' total area fills ~85% of the space below it.
    shape: 'mixed' (alternating), 'square' or 'disc'.
    """
    if shape not in ("mixed", "square", "disc"):
        raise ValueError(f"pile: shape must be 'mixed', 'square' or 'disc', got {shape!r}")
    rng = np.random.default_rng(seed)
    pitch = 1.3 * size
    width = n_columns * pitch
    mat = Material(E=1e5, nu=0.4, density=1000.0, mu=0.3)
    bodies, area = [], 0.0
    for k in range(n_shapes):
        row, col = divmod(k, n_columns)
        cx = -0.5 * width + (col + 0.5) * pitch + rng.uniform(-0.05, 0.05) * size
        cy = 0.5 * pitch + row * pitch + rng.uniform(0.0, 0.1) * size
        is_disc = shape == "disc" or (shape == "mixed" and k % 2 == 1)
        if is_disc:
            v, t = disc_mesh(0.5 * size, n_rings, (cx, cy), n_boundary)
            name = f"disc_{k}"
        else:
            v, t = square_mesh(0.85 * size, n_seg, (cx, cy))
            v = _rotate(v, rng.uniform(-0.4, 0.4), (cx, cy))
            name = f"square_{k}"
        bodies.append(Body(name, v, t, mat))
        area += _mesh_area(v, t)
    top = max(float(b.vertices[:, 1].max()) for b in bodies) + 0.25 * size
    stop = min(top, area / (0.85 * width))
    walls = (
        HalfPlane((0.0, 0.0), (0.0, 1.0), 0.3, "ground"),
        HalfPlane((-0.5 * width, 0.0), (1.0, 0.0), 0.3, "left_wall"),
        HalfPlane((0.5 * width, 0.0), (-1.0, 0.0), 0.3, "right_wall"),
    )
    colliders = ()
    if ceiling_speed > 0 and stop < top:
        colliders = (
            _horizontal_ceiling("ceiling", -0.5 * width - 0.5, 0.5 * width + 0.5, top, stop, ceiling_speed),
        )
    params = SimParams(dt=0.01, dhat=0.005, kappa=1e5, eps_v=1e-3, newton_tol=1e-2)
    return Scene(bodies=tuple(bodies), colliders=colliders, half_planes=walls, params=params)


def _mesh_area(v, t):
    a, b, c = v[t[:, 0]], v[t[:, 1]], v[t[:, 2]]
    return 0.5 * float(np.sum((b - a)[:, 0] * (c - a)[:, 1] - (b - a)[:, 1] * (c - a)[:, 0]))


EXAMPLES = {
    "compressing-squares": compressing_squares,
    "block-on-slope": block_on_slope,
    "free-fall": free_fall,
    "pile": pile,
}

DEFAULT_STEPS = {
    "compressing-squares": 300,
    "block-on-slope": 100,
    "free-fall": 50,
    "pile": 300,
}
