"""Touching starts: objects snapped onto the ground, onto a collider or onto each other.

The solver refuses a start in which two bodies are closer than the contact gap d^ or a body
touches a collider or the ground (its barrier would be infinite). Artists snap objects exactly
(distance 0), so :func:`separate` moves the *solver's copy* of such bodies apart, rigidly and
along the contact normal, by a tiny amount that it reports:

- a body touching the ground or a collider (distance 0, up to the snapping tolerance) ends
  ``PLANE_GAP`` x d^ away from it (inside the barrier's reach, so it rests there);
- two bodies closer than d^ end ``BODY_GAP`` x d^ apart (the solver needs at least d^);
- which body moves: never a collider, an obstacle or a pinned body; of two free bodies the
  upper one (against gravity; without gravity the later by name).

The meshes are not changed: the first baked frame shows them as modelled, the simulation
starts from the separated positions. Real overlaps (boundary edges that cross, a vertex
inside another body, deeper than the snapping tolerance) are not touching: they raise an
error naming both objects (SolverInputError). Objects that do not collide (no collision group
in common, or joined by a link that does not collide) may overlap: they are neither moved nor
refused. The add-on words the report of the moves (``blender_ipc/reading.py``).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from .errors import SolverInputError
from .geometry import boundary_edges, closest_on_segment, points_in_triangles, segments_cross

BODY_GAP = 1.1  # [d^] distance between two bodies after separation
PLANE_GAP = 0.5  # [d^] distance to the ground or a collider after separation
SNAP_TOL_ABS = 1e-6  # [m] distances up to this count as touching (float32 snapping) ...
SNAP_TOL_REL = 1e-5  # ... or up to this fraction of the scene's size
MAX_ROUNDS = 50


def _point_edge(p: np.ndarray, a: np.ndarray, b: np.ndarray):
    """Distances (P, E) of points to segments and the closest points (P, E, 2)."""
    s = closest_on_segment(p[:, None], a[None], b[None])
    q = a[None] + s[..., None] * (b - a)[None]
    return np.linalg.norm(p[:, None] - q, axis=-1), q


class _Shape:
    """A body (triangles, oriented boundary) or a collider (edges only) at the start."""

    def __init__(self, name, x, edges, tris=None, movable=False):
        self.name, self.x, self.edges, self.tris, self.movable = name, x, edges, tris, movable
        self.verts = np.unique(edges)

    def box(self):
        p = self.x[self.verts]
        return p.min(axis=0), p.max(axis=0)


def _inside(point, body: _Shape) -> bool:
    t = body.tris
    x0, x1, x2 = body.x[t[:, 0]], body.x[t[:, 1]], body.x[t[:, 2]]
    return bool(points_in_triangles(point, x0, x1, x2, closed=False).any())


def _closest(a: _Shape, b: _Shape, tol: float):
    """Smallest signed distance between the boundaries of a and b (negative: a vertex inside the
    other body, pushed there by an earlier separation) and the unit normal pointing from a
    towards b there. Where they touch (within tol) the normal is that of a touching edge, the
    one that points most from a's centre towards b's (a shared corner touches two edges)."""
    best, touching = (np.inf, None), []
    towards = b.x[b.verts].mean(axis=0) - a.x[a.verts].mean(axis=0)
    for src, dst, sign in ((b, a, 1.0), (a, b, -1.0)):  # vertices of src against edges of dst
        p = src.x[src.verts]
        e0, e1 = dst.x[dst.edges[:, 0]], dst.x[dst.edges[:, 1]]
        d, q = _point_edge(p, e0, e1)
        for j in np.nonzero(d <= tol)[1]:
            t = e1[j] - e0[j]
            n = np.array([t[1], -t[0]]) / np.linalg.norm(t)  # outward for a body's boundary
            if dst.tris is None:  # a collider's edge has no outside: the side of the other shape
                side = p.mean(axis=0) - e0[j]
                n = n if side @ n >= 0 else -n
            touching.append(sign * n)
        i, j = np.unravel_index(int(np.argmin(d)), d.shape)
        dist = float(d[i, j])
        if dst.tris is not None and _inside(p[i], dst):
            dist = -dist  # pushed in by an earlier separation: the normal turns round
        if dist < best[0]:
            best = (dist, sign * (p[i] - q[i, j]) / dist if dist != 0 else None)
    if touching and best[0] <= tol:
        normals = np.array(touching)
        return min(best[0], 0.0), normals[int(np.argmax(normals @ towards))]
    return best


def _real_overlap(a: _Shape, b: _Shape, tol: float) -> bool:
    """Boundary edges that cross by more than tol, or a vertex more than tol inside a body."""
    ea, eb = a.x[a.edges], b.x[b.edges]
    if segments_cross(ea[:, None, 0], ea[:, None, 1], eb[None, :, 0], eb[None, :, 1], margin=tol).any():
        return True
    for host, guest in ((a, b), (b, a)):
        if host.tris is None:
            continue
        pts = guest.x[guest.verts]
        t = host.tris
        x0, x1, x2 = (host.x[t[:, k]][None] for k in range(3))
        # closed: a vertex on an edge between two of the host's triangles is inside it too (on
        # its boundary it is at depth 0, which the depth test below lets through)
        inside = points_in_triangles(pts[:, None], x0, x1, x2, closed=True).any(axis=1)
        if inside.any():
            depth, _ = _point_edge(pts[inside], host.x[host.edges[:, 0]], host.x[host.edges[:, 1]])
            if depth.min(axis=1).max() > tol:
                return True
    return False


def _up(gravity) -> np.ndarray:
    g = np.asarray(gravity, float)
    norm = np.linalg.norm(g)
    return -g / norm if norm > 0 else np.zeros(2)


class _Moves:
    """The rigid moves made so far, summed per (moved, other) pair for the report."""

    def __init__(self):
        self.total: dict[tuple[str, str], float] = {}

    def __call__(self, shape: _Shape, other: str, delta: np.ndarray):
        shape.x += delta
        key = (shape.name, other)
        self.total[key] = self.total.get(key, 0.0) + float(np.linalg.norm(delta))


def _shapes(scene):
    """The bodies and colliders of the scene as shapes at the start (copies of the positions)."""
    bodies = []
    for b in scene.bodies:
        tris = np.asarray(b.triangles, dtype=np.int64)
        x = np.array(b.vertices, dtype=np.float64)
        bodies.append(_Shape(b.name, x, boundary_edges(tris), tris, movable=not b.pins))
    colliders = [
        _Shape(c.name, np.array(c.positions[0], dtype=np.float64), np.asarray(c.edges, dtype=np.int64))
        for c in scene.colliders
    ]
    return bodies, colliders


def _may_touch(scene):
    """(name, name) -> whether two objects collide at all: they share a collision group and no
    link that does not collide joins them (the rule of model.owner_contact). Others may
    overlap: they are neither separated nor refused."""
    groups = {o.name: set(o.collision_groups) for o in (*scene.bodies, *scene.colliders)}
    apart = {frozenset((k.a.body, k.b.body)) for k in scene.links if not k.collide}
    return lambda a, b: bool(groups[a] & groups[b]) and frozenset((a, b)) not in apart


def _near_pairs(bodies, colliders, dhat, tol, may_touch):
    """The (body, body or collider) pairs that collide and whose boxes are within separating
    reach; raises SolverInputError on a real overlap."""
    pairs = []
    for i, a in enumerate(bodies):
        for b in bodies[i + 1 :] + colliders:
            if not may_touch(a.name, b.name):
                continue
            lo_a, hi_a = a.box()
            lo_b, hi_b = b.box()
            reach = 2 * BODY_GAP * dhat  # what separating may move a body by, and more
            if (lo_a > hi_b + reach).any() or (lo_b > hi_a + reach).any():
                continue
            if _real_overlap(a, b, tol):
                raise SolverInputError(
                    f"'{a.name}' and '{b.name}' overlap at the start (their outlines cross or one "
                    "is inside the other); move them apart - objects that only touch are "
                    "separated automatically"
                )
            pairs.append((a, b))
    return pairs


def _separate_pair(a, b, dhat, tol, up, move) -> bool:
    """Move one shape of a touching pair apart; whether one moved."""
    d, n = _closest(a, b, tol)
    is_body = b.tris is not None
    if (d >= dhat) if is_body else (d > tol):
        return False
    target = (BODY_GAP if is_body else PLANE_GAP) * dhat
    if is_body and b.movable and (not a.movable or (b.x @ up).mean() >= (a.x @ up).mean()):
        move(b, a.name, (target - d) * n)  # the upper one (resting on the other)
    elif a.movable:
        move(a, b.name, -(target - d) * n)
    else:
        return False  # neither may move: the solver reports it
    return True


def _lift_off_planes(half_planes, bodies, dhat, tol, move) -> bool:
    """Lift bodies touching a half-plane to PLANE_GAP x d^ above it; whether one moved."""
    moved = False
    for hp in half_planes:
        n = np.asarray(hp.normal, float) / np.linalg.norm(hp.normal)
        for s in bodies:
            sd = float(((s.x[s.verts] - np.asarray(hp.point, float)) @ n).min())
            if s.movable and -tol <= sd <= tol:  # deeper: the solver's 'below the ground'
                move(s, f"the {hp.name}", (PLANE_GAP * dhat - sd) * n)
                moved = True
    return moved


def separate(scene):
    """The scene with touching bodies moved apart, and one line per move for the report:
    ``(scene, [(moved, other, distance [m]), ...])``. Raises SolverInputError on a real
    overlap."""
    dhat = scene.params.dhat
    bodies, colliders = _shapes(scene)
    pts = np.concatenate([s.x for s in bodies + colliders])
    tol = max(SNAP_TOL_ABS, SNAP_TOL_REL * float(np.linalg.norm(np.ptp(pts, axis=0))))
    up = _up(scene.params.gravity)
    move = _Moves()
    pairs = _near_pairs(bodies, colliders, dhat, tol, _may_touch(scene))
    for _ in range(MAX_ROUNDS):
        # Bodies first, the ground after: a lift then opens no new contact between bodies.
        moved = False
        for a, b in pairs:
            moved = _separate_pair(a, b, dhat, tol, up, move) or moved
        moved = _lift_off_planes(scene.half_planes, bodies, dhat, tol, move) or moved
        if not moved:
            break
    new_bodies = tuple(
        replace(b, vertices=s.x.copy()) if any(k[0] == b.name for k in move.total) else b
        for b, s in zip(scene.bodies, bodies, strict=True)
    )
    return replace(scene, bodies=new_bodies), [(a, b, d) for (a, b), d in move.total.items()]
