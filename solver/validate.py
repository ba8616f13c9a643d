"""Input validation. Every problem raises SolverInputError naming the object.

:func:`check_scene` checks parameters, materials, colliders, pins and body
meshes; :func:`check_initial_geometry` checks the assembled start state
(no overlap, no body pair closer than dhat, nothing through a half-plane or
a collider).
"""

import math

import numpy as np

from . import mesh
from .broad_phase import candidates, edge_boxes
from .contacts import candidate_stencils
from .distance import distance_sq, point_edge_case
from .errors import SolverInputError
from .friction import MOLLIFIERS

FORMULATIONS = ("original", "convergent")
LINEAR_SOLVERS = ("auto", "scipy", "numpy")
FRICTION_MOLLIFIERS = tuple(MOLLIFIERS)


def _positive(value, what):
    if (
        not isinstance(value, (int, float, np.integer, np.floating))
        or isinstance(value, bool)
        or not math.isfinite(value)
        or value <= 0
    ):
        raise SolverInputError(f"{what} must be a positive finite number, got {value!r}")


def _non_negative(value, what):
    if (
        not isinstance(value, (int, float, np.integer, np.floating))
        or isinstance(value, bool)
        or not math.isfinite(value)
        or value < 0
    ):
        raise SolverInputError(f"{what} must be a non-negative finite number, got {value!r}")


def check_params(p):
    _positive(p.dt, "params.dt (time step h)")
    _positive(p.dhat, "params.dhat")
    if p.kappa is not None:
        _positive(p.kappa, "params.kappa")
    if p.formulation not in FORMULATIONS:
        raise SolverInputError(f"params.formulation must be one of {FORMULATIONS}, got {p.formulation!r}")
    _positive(p.eps_v, "params.eps_v")
    if p.friction_mollifier not in FRICTION_MOLLIFIERS:
        raise SolverInputError(
            f"params.friction_mollifier must be one of {FRICTION_MOLLIFIERS}, got {p.friction_mollifier!r}"
        )
    _positive(p.newton_tol, "params.newton_tol")
    _positive(p.force_tol, "params.force_tol")
    if not isinstance(p.max_newton_iters, (int, np.integer)) or p.max_newton_iters < 1:
        raise SolverInputError(f"params.max_newton_iters must be an integer >= 1, got {p.max_newton_iters!r}")
    g = np.asarray(p.gravity, float)
    if g.shape != (2,) or not np.all(np.isfinite(g)):
        raise SolverInputError(f"params.gravity must be two finite numbers, got {p.gravity!r}")
    if p.linear_solver not in LINEAR_SOLVERS:
        raise SolverInputError(
            f"params.linear_solver must be one of {LINEAR_SOLVERS}, got {p.linear_solver!r}"
        )


def check_material(name, m):
    what = f"body '{name}': material"
    _positive(m.E, f"{what}.E (Young's modulus)")
    _positive(m.density, f"{what}.density")
    if not isinstance(m.nu, (int, float, np.integer, np.floating)) or not (-1.0 < m.nu < 0.5):
        raise SolverInputError(f"{what}.nu (Poisson ratio) must lie in (-1, 0.5), got {m.nu!r}")
    _non_negative(m.mu, f"{what}.mu (friction)")
    if m.mu_static is not None:
        _non_negative(m.mu_static, f"{what}.mu_static")
        if m.mu_static < m.mu:
            raise SolverInputError(
                f"{what}.mu_static ({m.mu_static!r}) must not be below the kinetic mu ({m.mu!r})"
            )


def _check_samples(what, times, positions, k):
    t = np.asarray(times, float)
    if t.ndim != 1 or len(t) == 0 or not np.all(np.isfinite(t)):
        raise SolverInputError(f"{what}: times must be a non-empty finite 1D array")
    if np.any(np.diff(t) <= 0):
        raise SolverInputError(f"{what}: times must be strictly increasing")
    pos = np.asarray(positions, float)
    if pos.shape != (len(t), k, 2):
        raise SolverInputError(f"{what}: positions must have shape ({len(t)}, {k}, 2), got {pos.shape}")
    if not np.all(np.isfinite(pos)):
        raise SolverInputError(f"{what}: positions contain NaN or infinite values")


def check_collider(c):
    what = f"collider '{c.name}'"
    v = mesh._finite_array(c.vertices, (2,), f"{what}: vertices")
    e = np.asarray(c.edges)
    if e.ndim != 2 or e.shape[1] != 2 or len(e) == 0:
        raise SolverInputError(
            f"{what}: needs at least one edge (edges of shape (l, 2)), got shape {e.shape}"
        )
    if not np.issubdtype(e.dtype, np.integer):
        raise SolverInputError(f"{what}: edge indices must be integers")
    if e.min() < 0 or e.max() >= len(v):
        raise SolverInputError(f"{what}: edge index out of range [0, {len(v) - 1}]")
    if np.any(e[:, 0] == e[:, 1]):
        raise SolverInputError(f"{what}: an edge joins a vertex to itself")
    _check_samples(what, c.times, c.positions, len(v))
    pos = np.asarray(c.positions, float)
    length = np.linalg.norm(pos[:, e[:, 1]] - pos[:, e[:, 0]], axis=2)
    if np.any(length <= 0):
        raise SolverInputError(f"{what}: an edge has zero length")
    _non_negative(c.mu, f"{what}: mu")


def check_pins(name, pins, n):
    for i, pin in enumerate(pins):
        what = f"body '{name}': pin {i}"
        idx = np.asarray(pin.indices)
        if idx.ndim != 1 or len(idx) == 0 or not np.issubdtype(idx.dtype, np.integer):
            raise SolverInputError(f"{what}: indices must be a non-empty integer array")
        if idx.min() < 0 or idx.max() >= n:
            raise SolverInputError(f"{what}: vertex index out of range [0, {n - 1}]")
        if (pin.times is None) != (pin.positions is None):
            raise SolverInputError(f"{what}: give both times and positions, or neither (fixed pin)")
        if pin.times is not None:
            _check_samples(what, pin.times, pin.positions, len(idx))


def check_half_planes(planes):
    for i, hp in enumerate(planes):
        what = f"half-plane {i} ('{hp.name}')"
        p = np.asarray(hp.point, float)
        n = np.asarray(hp.normal, float)
        if p.shape != (2,) or n.shape != (2,) or not np.all(np.isfinite(p)) or not np.all(np.isfinite(n)):
            raise SolverInputError(f"{what}: point and normal must be two finite numbers each")
        if np.linalg.norm(n) == 0:
            raise SolverInputError(f"{what}: normal must be non-zero")
        _non_negative(hp.mu, f"{what}: mu")


def check_scene(scene):
    """Check everything but the initial geometry; returns [(vertices, triangles)] per body."""
    check_params(scene.params)
    if len(scene.bodies) == 0:
        raise SolverInputError("scene: needs at least one body")
    names = [b.name for b in scene.bodies] + [c.name for c in scene.colliders]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise SolverInputError(f"scene: names must be unique, repeated: {sorted(dup)}")
    meshes = []
    for b in scene.bodies:
        check_material(b.name, b.material)
        v, t = mesh.checked_body_mesh(b.name, b.vertices, b.triangles)
        mesh.check_boundary_simple(b.name, v, mesh.boundary_edges(t))
        check_pins(b.name, b.pins, len(v))
        meshes.append((v, t))
    for c in scene.colliders:
        check_collider(c)
    check_half_planes(scene.half_planes)
    return meshes


def _segments_cross(a0, a1, b0, b1):
    """Proper or touching intersection of segments (n,2) pairs, (n,) bool."""

    def orient(p, q, r):
        return np.sign((q[:, 0] - p[:, 0]) * (r[:, 1] - p[:, 1]) - (q[:, 1] - p[:, 1]) * (r[:, 0] - p[:, 0]))

    o1, o2 = orient(a0, a1, b0), orient(a0, a1, b1)
    o3, o4 = orient(b0, b1, a0), orient(b0, b1, a1)
    return (o1 * o2 <= 0) & (o3 * o4 <= 0) & ~((o1 == 0) & (o2 == 0))


def check_initial_geometry(model, x, dhat):
    """Raise if bodies overlap / are closer than dhat, or cross a collider or a half-plane."""
    names = model.names
    st = candidate_stencils(model, x, x, dhat)
    p, e = st[:, 0], st[:, 1:]
    X = x[st]
    d = np.sqrt(distance_sq(X, point_edge_case(X)))
    either_collider = model.is_collider[p] | model.is_collider[e[:, 0]]
    bad = np.where(either_collider, d <= 0.0, d < dhat)
    if bad.any():
        k = int(np.argmax(bad))
        a, b = names[model.owner[p[k]]], names[model.owner[e[k, 0]]]
        if either_collider[k]:
            raise SolverInputError(f"'{a}' and '{b}' touch or overlap at the start")
        pair = f"body '{a}' and itself" if a == b else f"bodies '{a}' and '{b}'"
        raise SolverInputError(
            f"{pair} overlap or are closer than dhat={dhat:g} at the start (distance {d[k]:.3g})"
        )
    _check_edge_crossings(model, x, names)
    _check_containment(model, x, names)
    for i in range(len(model.plane_point)):
        sd = (x[model.hp_points] - model.plane_point[i]) @ model.plane_normal[i]
        if np.any(sd <= 0.0):
            k = model.hp_points[int(np.argmin(sd))]
            raise SolverInputError(
                f"body '{names[model.owner[k]]}' starts on or below half-plane '{model.plane_names[i]}'"
            )


def _check_edge_crossings(model, x, names):
    edges = model.edges
    lo, hi = edge_boxes(x, x, edges)
    # reuse the point-edge broad phase with edge boxes as "points"
    ai, bi = candidates(lo, hi, lo, hi)
    ea, eb = edges[ai], edges[bi]
    share = (ea[:, 0] == eb[:, 0]) | (ea[:, 0] == eb[:, 1]) | (ea[:, 1] == eb[:, 0]) | (ea[:, 1] == eb[:, 1])
    both_col = model.is_collider[ea[:, 0]] & model.is_collider[eb[:, 0]]
    keep = (ai < bi) & ~share & ~both_col
    ea, eb = ea[keep], eb[keep]
    cross = _segments_cross(x[ea[:, 0]], x[ea[:, 1]], x[eb[:, 0]], x[eb[:, 1]])
    if cross.any():
        k = int(np.argmax(cross))
        a, b = names[model.owner[ea[k, 0]]], names[model.owner[eb[k, 0]]]
        raise SolverInputError(f"'{a}' and '{b}' overlap at the start (boundary edges cross)")


def _check_containment(model, x, names):
    """An object entirely inside another (no crossing edges): test one vertex
    of every mesh component (and of every collider) against the triangles of
    every other component, of other bodies and of its own body (a part nested
    inside another part).  A probe on a triangle's edge counts as inside."""
    tris = model.elements.tris
    comp = mesh.components(tris, model.n)  # colliders: every vertex its own label
    tri_comp = comp[tris[:, 0]]
    a, b, c = x[tris[:, 0]], x[tris[:, 1]], x[tris[:, 2]]
    probes = np.concatenate([np.unique(tri_comp), [sl.start for sl in model.collider_slices]])
    for r in probes.astype(np.intp):
        q = x[r]
        d1 = (b[:, 0] - a[:, 0]) * (q[1] - a[:, 1]) - (b[:, 1] - a[:, 1]) * (q[0] - a[:, 0])
        d2 = (c[:, 0] - b[:, 0]) * (q[1] - b[:, 1]) - (c[:, 1] - b[:, 1]) * (q[0] - b[:, 0])
        d3 = (a[:, 0] - c[:, 0]) * (q[1] - c[:, 1]) - (a[:, 1] - c[:, 1]) * (q[0] - c[:, 0])
        inside = (tri_comp != r) & (d1 >= 0) & (d2 >= 0) & (d3 >= 0)
        if inside.any():
            guest, host = names[model.owner[r]], names[model.owner[tris[int(np.argmax(inside)), 0]]]
            if guest == host:
                raise SolverInputError(
                    f"body '{guest}': a part of the mesh lies inside another part (self-overlap)"
                )
            raise SolverInputError(f"'{guest}' starts inside body '{host}'")
