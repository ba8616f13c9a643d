"""Make Simulation Mesh (bpy side): the outline of a flat Mesh / Text / Curve object in the
simulation plane, meshed by the solver's :mod:`meshing` into a NEW object "<name>_sim"; and a cached
mesh-quality measure for the panel's hint."""

from __future__ import annotations

import numpy as np
from mathutils import Matrix, Vector
from mathutils.geometry import delaunay_2d_cdt

from .common import PLANE_AXES, IPCError, local_coords, matrix_of
from .presets import FIELDS
from .solver import meshing

SOURCE_TYPES = {"MESH", "FONT", "CURVE"}
FLAT_TOL_REL = 1e-4
FLAT_TOL_ABS = 1e-6
POOR_MIN_ANGLE = 10.0  # the panel recommends remeshing below this smallest triangle angle
# Settings copied from the source to the new object: what a preset sets, and the start motion.
COPIED_SETTINGS = (*FIELDS, "initial_velocity", "initial_angular_velocity")


def cdt(points: np.ndarray, edges: np.ndarray):
    """Constrained Delaunay triangulation of points with edges (mathutils, float32 inside):
    the input points are returned (float64) whenever no vertex was merged or added."""
    out = delaunay_2d_cdt([Vector(p) for p in points], [tuple(map(int, e)) for e in edges], [], 0, 0.0)
    faces = np.array([list(f) for f in out[2]], dtype=np.int64).reshape(-1, 3)
    if len(out[0]) == len(points) and all(len(o) == 1 for o in out[3]):
        to_input = np.array([o[0] for o in out[3]], dtype=np.int64)
        return points, to_input[faces]
    return np.array([tuple(v) for v in out[0]], dtype=np.float64), faces


def _evaluated_mesh_world(context, obj):
    """(world vertices (n, 3), polygons as lists of vertex indices) of the evaluated object."""
    depsgraph = context.evaluated_depsgraph_get()
    ev = obj.evaluated_get(depsgraph)
    mesh = ev.to_mesh()
    try:
        local = local_coords(mesh).astype(np.float64) if mesh is not None else np.zeros((0, 3))
        polys = [list(p.vertices) for p in mesh.polygons] if mesh is not None else []
    finally:
        ev.to_mesh_clear()
    m = matrix_of(obj.matrix_world)
    return local @ m[:3, :3].T + m[:3, 3], polys


def boundary_loops(polys) -> list[list[int]]:
    """Closed loops of the edges used by exactly one face (vertex indices)."""
    count = {}
    for p in polys:
        for a, b in zip(p, p[1:] + p[:1], strict=True):
            key = (min(a, b), max(a, b))
            count[key] = count.get(key, 0) + 1
    adj = {}
    for (a, b), c in count.items():
        if c == 1:
            adj.setdefault(a, []).append(b)
            adj.setdefault(b, []).append(a)
    used, loops = set(), []
    for (a, b), c in sorted(count.items()):
        if c != 1 or (a, b) in used:
            continue
        loop, prev, cur = [a], a, b
        used.add((a, b))
        while cur != a:
            loop.append(cur)
            nxt = [n for n in adj[cur] if (min(cur, n), max(cur, n)) not in used]
            if not nxt:
                break
            prev, cur = cur, nxt[0]
            used.add((min(prev, cur), max(prev, cur)))
        if cur == a and len(loop) >= 3:
            loops.append(loop)
    return loops


def outline_of(context, obj, plane: str):
    """Outline loops (in-plane coordinates), the out-of-plane coordinate and the size."""
    if obj.type not in SOURCE_TYPES:
        raise IPCError(
            f"'{obj.name}' is a {obj.type.title()}; Make Simulation Mesh needs a mesh, text or curve"
        )
    u, v, w = PLANE_AXES[plane]
    world, polys = _evaluated_mesh_world(context, obj)
    if not polys:
        raise IPCError(f"'{obj.name}' has no faces (a curve must be filled); nothing to mesh")
    extent = float(np.ptp(world[:, [u, v]], axis=0).max())
    spread = float(np.ptp(world[:, w]))
    tol = max(FLAT_TOL_ABS, FLAT_TOL_REL * extent)
    if spread > tol:
        raise IPCError(
            f"'{obj.name}' is not flat in the {plane} plane: its world {'XYZ'[w]} coordinates "
            f"span {spread:.3g} m (tolerance {tol:.2g} m)"
        )
    loops = [world[loop][:, [u, v]] for loop in boundary_loops(polys)]
    if not loops:
        raise IPCError(f"'{obj.name}': its faces have no closed outline; nothing to mesh")
    return loops, float(world[:, w].mean()), extent


def default_edge_length(context, obj, plane: str) -> float:
    """1/25 of the in-plane bounding-box diagonal of the evaluated object."""
    u, v, _w = PLANE_AXES[plane]
    world, _polys = _evaluated_mesh_world(context, obj)
    if len(world) == 0:
        return 0.0
    return float(np.linalg.norm(np.ptp(world[:, [u, v]], axis=0))) / 25.0


def make_sim_mesh(context, obj, edge_length: float, min_angle: float):
    """Create "<name>_sim" next to obj (same world transform, IPC body, obj's material
    settings), hide obj (and set its role to None so it is no second body). Returns the new
    object, the (min angle before, min angle after) [deg] and how far the new outline strays
    from the source's [m, world units]. Raises IPCError with the scene unchanged."""
    plane = context.scene.ipc.plane
    u, v, w = PLANE_AXES[plane]
    loops, w_coord, _extent = outline_of(context, obj, plane)
    h = edge_length if edge_length > 0 else default_edge_length(context, obj, plane)
    mw = obj.matrix_world.copy()
    if abs(mw.to_3x3().determinant()) < 1e-12:
        raise IPCError(f"'{obj.name}' has a zero scale; apply a non-zero scale first")
    try:
        xy, tris = meshing.mesh_region(loops, h, min_angle, cdt=cdt)
    except ValueError as err:
        raise IPCError(f"'{obj.name}': {err}") from err
    if len(tris) == 0:
        raise IPCError(f"'{obj.name}': the outline encloses no area at this edge length")
    world = np.zeros((len(xy), 3))
    world[:, u], world[:, v], world[:, w] = xy[:, 0], xy[:, 1], w_coord
    inv = matrix_of(mw.inverted())
    local = world @ inv[:3, :3].T + inv[:3, 3]
    # Counter-clockwise in (u, v): the faces point at the plane's viewer (XZ: -Y, XY: +Z).
    faces = tris
    before = source_min_angle(context, obj, plane)

    mesh = bpy_data().meshes.new(obj.name + "_sim")
    mesh.from_pydata([tuple(p) for p in local], [], [tuple(map(int, f)) for f in faces])
    mesh.update()
    new = bpy_data().objects.new(obj.name + "_sim", mesh)
    collections = list(obj.users_collection) or [context.scene.collection]
    for coll in collections:
        coll.objects.link(new)
    new.matrix_world = Matrix(mw)
    new.ipc.role = "BODY"
    for name in COPIED_SETTINGS:
        setattr(new.ipc, name, getattr(obj.ipc, name))
    if obj.ipc.role == "BODY":
        obj.ipc.role = "NONE"
    obj.hide_set(True)
    obj.hide_render = True
    obj.select_set(False)
    new.select_set(True)
    context.view_layer.objects.active = new
    deviation = meshing.outline_deviation(loops, xy, tris)
    return new, (before, float(meshing.min_angles(xy, tris).min())), deviation


def bpy_data():
    import bpy

    return bpy.data


def source_min_angle(context, obj, plane: str) -> float:
    """Smallest angle [deg] of the evaluated object's loop triangles in the plane."""
    u, v, _w = PLANE_AXES[plane]
    depsgraph = context.evaluated_depsgraph_get()
    ev = obj.evaluated_get(depsgraph)
    mesh = ev.to_mesh()
    try:
        return _mesh_min_angle(mesh, matrix_of(obj.matrix_world), u, v)
    finally:
        ev.to_mesh_clear()


def _mesh_min_angle(mesh, m, u, v) -> float:
    mesh.calc_loop_triangles()
    tris = np.empty(len(mesh.loop_triangles) * 3, dtype=np.int64)
    mesh.loop_triangles.foreach_get("vertices", tris)
    tris = tris.reshape(-1, 3)
    if len(tris) == 0:
        return 180.0
    x = local_coords(mesh).astype(np.float64) @ m[:3, :3].T + m[:3, 3]
    return float(meshing.min_angles(x[:, [u, v]], tris).min())


_quality_cache: dict = {}


def mesh_quality(context, obj):
    """Smallest triangle angle [deg] of a body's mesh in the plane, or None (edit mode, no
    faces). Cached by mesh, sizes, plane and a checksum of the coordinates: the panel calls it
    on every redraw, and the loop triangulation is computed only when the mesh changed."""
    if obj.type != "MESH" or obj.mode != "OBJECT" or len(obj.data.polygons) == 0:
        return None
    mesh = obj.data
    plane = context.scene.ipc.plane
    co = local_coords(mesh)
    m = matrix_of(obj.matrix_world)
    key = (
        mesh.as_pointer(),
        len(mesh.vertices),
        len(mesh.polygons),
        len(mesh.loops),
        plane,
        float(co.sum(dtype=np.float64)),
        float((co * co).sum(dtype=np.float64)),
        m.tobytes(),
    )
    hit = _quality_cache.get(obj.name)
    if hit is not None and hit[0] == key:
        return hit[1]
    u, v, _w = PLANE_AXES[plane]
    value = _mesh_min_angle(mesh, m, u, v)
    if len(_quality_cache) > 256:
        _quality_cache.clear()
    _quality_cache[obj.name] = (key, value)
    return value
