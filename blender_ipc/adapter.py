"""Blender <-> solver adapter: reads objects into numpy arrays, runs the solver, writes shape keys.

Reading: a deformable body is its mesh at the start frame in world space (the add-on refuses
modifiers and foreign shape keys, so the mesh data + evaluated world matrix *is* the evaluated
mesh), triangulated through ``loop_triangles`` (n-gons included) and projected to the plane.
Colliders keep their start-frame evaluated shape and move rigidly with their evaluated world
matrix, sampled at every substep with ``frame_set(frame, subframe=...)``.

Writing: one absolute shape key per frame (``use_relative = False``); the first key (the basis)
is the untouched rest mesh, so frame_start shows the original coordinates bit for bit, and an
``eval_time`` F-curve with LINEAR keys maps scene frames onto the keys.
"""

from __future__ import annotations

import hashlib
import math
import re
import time
from dataclasses import dataclass, field

import bpy
import numpy as np

from . import blas_threads
from .solver import (
    Body,
    Collider,
    ConvergenceError,
    HalfPlane,
    Material,
    Pin,
    Scene,
    SimParams,
    Simulation,
    SolverInputError,
)
from .solver.collider_check import compact_ranges

KEY_PREFIX = "IPC_Bake_"
# (first in-plane axis, second in-plane axis, out-of-plane axis) in world XYZ.
PLANE_AXES = {"XZ": (0, 2, 1), "XY": (0, 1, 2)}
FLAT_TOL_REL = 1e-4  # allowed out-of-plane spread relative to the body size
FLAT_TOL_ABS = 1e-6  # ... but never below this [m] (float32 mesh coordinates)


class IPCError(Exception):
    """A user-facing problem with the scene; the message names the object and the problem."""


# ----------------------------------------------------------------------------- small helpers


def _matrix(m) -> np.ndarray:
    return np.array([list(row) for row in m], dtype=np.float64)


def _transform(mat: np.ndarray, pts: np.ndarray) -> np.ndarray:
    return pts @ mat[:3, :3].T + mat[:3, 3]


def _local_coords(mesh) -> np.ndarray:
    co = np.empty(len(mesh.vertices) * 3, dtype=np.float32)
    mesh.vertices.foreach_get("co", co)
    return co.reshape(-1, 3)


def _triangles(mesh):
    """(m, 3) vertex indices of the loop triangles and (m,) the face each belongs to."""
    mesh.calc_loop_triangles()
    tris = np.empty(len(mesh.loop_triangles) * 3, dtype=np.int32)
    mesh.loop_triangles.foreach_get("vertices", tris)
    faces = np.empty(len(mesh.loop_triangles), dtype=np.int32)
    mesh.loop_triangles.foreach_get("polygon_index", faces)
    return tris.reshape(-1, 3), faces


def fcurves_of(id_data):
    """F-curves of an ID's action in Blender 3.x/4.x (Action.fcurves) and 5.x (channelbags)."""
    anim = getattr(id_data, "animation_data", None)
    action = anim.action if anim else None
    if action is None:
        return []
    if hasattr(action, "fcurves"):
        return list(action.fcurves)
    slot = getattr(anim, "action_slot", None)
    curves = []
    for layer in action.layers:
        for strip in layer.strips:
            bag = strip.channelbag(slot) if slot is not None else None
            if bag is not None:
                curves.extend(bag.fcurves)
    return curves


def sim_dt(scene) -> float:
    fps = scene.render.fps / scene.render.fps_base
    return 1.0 / (fps * scene.ipc.substeps)


def frame_range(scene) -> tuple[int, int]:
    s = scene.ipc
    return (s.frame_start, s.frame_end) if s.use_frame_range else (scene.frame_start, scene.frame_end)


def is_our_bake(obj) -> bool:
    key = obj.data.shape_keys if obj.type == "MESH" else None
    return bool(key) and all(kb.name.startswith(KEY_PREFIX) for kb in key.key_blocks)


# ----------------------------------------------------------------------------- selection


def gather_objects(context, target: str):
    """Bodies to bake (selected or all in the view layer) and all colliders of the view layer."""
    # Objects linked by a script moments ago appear in view_layer.objects only after an update.
    context.view_layer.update()
    objs = list(context.view_layer.objects)
    pool = [o for o in objs if o.select_get()] if target == "SELECTED" else objs
    bodies = [o for o in pool if o.type == "MESH" and o.ipc.role == "BODY"]
    if not bodies:
        where = "selected" if target == "SELECTED" else "in the scene"
        raise IPCError(f"Nothing to bake: no mesh {where} has the IPC role 'Deformable Body'")
    return sorted(bodies, key=lambda o: o.name), obstacles(objs, bodies)


def obstacles(objs, bodies):
    """What the bodies collide with: every collider, and every deformable body that is not
    baked with them (Bake Selected leaves the unselected ones as they are: they keep their
    current motion, their own bake if they have one, and the selected bodies collide with it)."""
    return sorted(
        (o for o in objs if o.ipc.role == "COLLIDER" or is_obstacle_body(o, bodies)), key=lambda o: o.name
    )


def is_obstacle_body(obj, bodies) -> bool:
    return obj.type == "MESH" and obj.ipc.role == "BODY" and obj not in bodies


def unselected_bodies(context) -> int:
    """How many deformable bodies Bake Selected would leave as obstacles (for the panel)."""
    objs = context.view_layer.objects
    bodies = [o for o in objs if o.type == "MESH" and o.ipc.role == "BODY"]
    return sum(1 for o in bodies if not o.select_get()) if any(o.select_get() for o in bodies) else 0


def check_bakeable(context, bodies, colliders):
    if context.mode != "OBJECT" or any(o.mode != "OBJECT" for o in bodies + colliders):
        raise IPCError("Leave Edit Mode (switch to Object Mode) before baking")
    for obj in bodies:
        if obj.data.users > 1:
            raise IPCError(
                f"'{obj.name}': its mesh '{obj.data.name}' is shared by "
                f"{obj.data.users} objects; make it single-user before baking"
            )
        mods = [m.name for m in obj.modifiers if m.show_viewport or m.show_render]
        if mods:
            raise IPCError(
                f"'{obj.name}': modifier '{mods[0]}' would be applied on top of the "
                "baked shape keys; apply or disable it before baking"
            )
        key = obj.data.shape_keys
        if key and not is_our_bake(obj):
            names = ", ".join(kb.name for kb in key.key_blocks[:3])
            raise IPCError(
                f"'{obj.name}' has its own shape keys ({names}); the bake would "
                "overwrite them - remove them or bake a copy of the object"
            )
    for obj in colliders:
        if obj.type != "MESH":
            raise IPCError(f"Collider '{obj.name}' is not a mesh (it is of type {obj.type})")


# ----------------------------------------------------------------------------- reading


@dataclass(frozen=True)
class BodyInput:
    name: str
    local_rest: np.ndarray  # (n, 3) float32, mesh data coordinates (bit-exact original)
    world_rest: np.ndarray  # (n, 3) float64 at the start frame
    used: np.ndarray  # (k,) vertex indices referenced by triangles (= solver vertices)
    triangles: np.ndarray  # (m, 3) indices into `used`
    pinned: np.ndarray  # (p,) indices into `used`
    # Loose vertices (in no face: lone vertices, ends of loose edges) ride along with the
    # nearest triangle: (q,) vertex indices, (q,) triangle indices, (q, 3) barycentric weights.
    loose: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    loose_tri: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    loose_bary: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    faces: np.ndarray = field(
        default_factory=lambda: np.zeros(0, dtype=np.int64)
    )  # (m,) face of each triangle


@dataclass(frozen=True)
class ColliderInput:
    name: str
    local: np.ndarray  # (k, 3) start-frame evaluated vertices (object space)
    edges: np.ndarray  # (l, 2) indices into `local`
    vertex_ids: np.ndarray | None = None  # (k,) indices into the evaluated mesh's vertices


def _compact(tris: np.ndarray, n: int):
    used = np.unique(tris)
    remap = np.full(n, -1, dtype=np.int64)
    remap[used] = np.arange(len(used))
    return used, remap[tris]


def _pinned_vertices(obj, mesh, group_name: str) -> np.ndarray:
    if not group_name:
        return np.zeros(0, dtype=np.int64)
    group = obj.vertex_groups.get(group_name)
    if group is None:
        raise IPCError(f"'{obj.name}': pinned vertex group '{group_name}' does not exist")
    gi = group.index
    # Vertex-group membership has no foreach accessor; this runs once per bake, not per step.
    return np.array(
        [v.index for v in mesh.vertices if any(g.group == gi and g.weight > 0.0 for g in v.groups)],
        dtype=np.int64,
    )


def read_body(obj, plane: str) -> BodyInput:
    u, v, w = PLANE_AXES[plane]
    mesh = obj.data
    if len(mesh.polygons) == 0:
        raise IPCError(f"'{obj.name}' has no faces; a deformable body needs a filled mesh")
    local = _local_coords(mesh)
    world = _transform(_matrix(obj.matrix_world), local.astype(np.float64))
    extent = float(np.ptp(world[:, [u, v]], axis=0).max())
    spread = float(np.ptp(world[:, w]))
    tol = max(FLAT_TOL_ABS, FLAT_TOL_REL * extent)
    if spread > tol:
        axis = "XYZ"[w]
        raise IPCError(
            f"'{obj.name}' is not flat in the {plane} plane: its world {axis} "
            f"coordinates span {spread:.3g} m (tolerance {tol:.2g} m)"
        )
    all_tris, faces = _triangles(mesh)
    used, tris = _compact(all_tris, len(local))
    pins = _pinned_vertices(obj, mesh, obj.ipc.pin_group)
    pinned = np.searchsorted(used, np.intersect1d(pins, used))
    loose = np.setdiff1d(np.arange(len(local)), used)
    x = world[used][:, [u, v]]
    # Faces wound the other way (a flipped normal) are turned round in the solver's copy only:
    # in a flat mesh every face's winding is visible from its signed area in the plane.
    a, b, c = x[tris[:, 0]], x[tris[:, 1]], x[tris[:, 2]]
    flipped = _cross2(b - a, c - a) < 0
    tris[flipped] = tris[flipped][:, [0, 2, 1]]
    loose_tri, loose_bary = attach_to_nearest_triangle(world[loose][:, [u, v]], x, tris)
    return BodyInput(obj.name, local, world, used, tris, pinned, loose, loose_tri, loose_bary, faces)


def attach_to_nearest_triangle(points: np.ndarray, x: np.ndarray, tris: np.ndarray):
    """For each point (q, 2): the nearest triangle of the mesh (x, tris) and the point's
    barycentric coordinates in it (unclamped: a point outside follows the triangle's affine
    motion). Loose vertices and edges of a body are carried along this way."""
    tri_of = np.zeros(len(points), dtype=np.int64)
    a, b, c = x[tris[:, 0]], x[tris[:, 1]], x[tris[:, 2]]
    for start in range(0, len(points), 256):  # (chunk, m) distance table
        p = points[start : start + 256, None]
        d = np.minimum(
            np.minimum(_segment_distance(p, a, b), _segment_distance(p, b, c)), _segment_distance(p, c, a)
        )
        s1, s2, s3 = _cross2(b - a, p - a), _cross2(c - b, p - b), _cross2(a - c, p - c)
        inside = ((s1 >= 0) & (s2 >= 0) & (s3 >= 0)) | ((s1 <= 0) & (s2 <= 0) & (s3 <= 0))
        tri_of[start : start + 256] = np.argmin(np.where(inside, -1.0, d), axis=1)
    t = tris[tri_of]
    a, b, c = x[t[:, 0]], x[t[:, 1]], x[t[:, 2]]
    area = _cross2(b - a, c - a)
    wb = _cross2(points - a, c - a) / area
    wc = _cross2(b - a, points - a) / area
    return tri_of, np.column_stack([1.0 - wb - wc, wb, wc])


def _cross2(p, q):
    return p[..., 0] * q[..., 1] - p[..., 1] * q[..., 0]


def _segment_distance(p, a, b):
    ab = b - a
    t = np.clip(((p - a) * ab).sum(-1) / np.maximum((ab * ab).sum(-1), 1e-300), 0.0, 1.0)
    return np.linalg.norm(p - (a + t[..., None] * ab), axis=-1)


def _collider_edges(mesh) -> np.ndarray:
    edges = np.empty(len(mesh.edges) * 2, dtype=np.int64)
    mesh.edges.foreach_get("vertices", edges)
    loop_edges = np.empty(len(mesh.loops), dtype=np.int64)
    mesh.loops.foreach_get("edge_index", loop_edges)
    faces_per_edge = np.bincount(loop_edges, minlength=len(mesh.edges))
    # Boundary edges (one face) and loose edges (no face); interior edges are hidden inside.
    return edges.reshape(-1, 2)[faces_per_edge <= 1]


def read_collider(obj, depsgraph, plane: str) -> ColliderInput:
    ob_eval = obj.evaluated_get(depsgraph)
    mesh = ob_eval.to_mesh()
    try:
        local = _local_coords(mesh).astype(np.float64)
        edges = _collider_edges(mesh)
    finally:
        ob_eval.to_mesh_clear()
    u, v, _ = PLANE_AXES[plane]
    proj = _transform(_matrix(ob_eval.matrix_world), local)[:, [u, v]]
    lengths = np.linalg.norm(proj[edges[:, 0]] - proj[edges[:, 1]], axis=1) if len(edges) else []
    edges = edges[np.asarray(lengths) > 1e-9] if len(edges) else edges
    if len(edges) == 0:
        raise IPCError(
            f"{'Collider' if obj.ipc.role == 'COLLIDER' else 'Unselected deformable body'} "
            f"'{obj.name}' has no boundary or loose edges in the {plane} "
            "plane; give it a face or edges"
        )
    used, compact = _compact(edges, len(local))
    return ColliderInput(obj.name, local[used], compact, used)


def sample_matrices(context, objects, frame_start: int, n_steps: int, substeps: int, deforming=()):
    """(n_steps+1, len(objects), 4, 4) evaluated world matrices, one sample per substep, and
    for each object index in `deforming` its evaluated vertices in world space
    (n_steps+1, n, 3) (shape keys and modifiers included: a deformable body that is an obstacle
    moves with its own bake).

    Keyframes, parents, constraints and drivers all count because the depsgraph is evaluated.
    The caller restores the current frame.
    """
    scene = context.scene
    out = np.empty((n_steps + 1, len(objects), 4, 4))
    shapes = {j: [] for j in deforming}
    for i in range(n_steps + 1):
        frame, sub = divmod(i, substeps)
        scene.frame_set(frame_start + frame, subframe=sub / substeps)
        depsgraph = context.evaluated_depsgraph_get()
        for j, obj in enumerate(objects):
            ob_eval = obj.evaluated_get(depsgraph)
            out[i, j] = _matrix(ob_eval.matrix_world)
            if j in shapes:
                mesh = ob_eval.to_mesh()
                try:
                    shapes[j].append(_transform(out[i, j], _local_coords(mesh).astype(np.float64)))
                finally:
                    ob_eval.to_mesh_clear()
                if len(shapes[j][-1]) != len(shapes[j][0]):
                    raise IPCError(f"'{obj.name}': its vertex count changes during the frame range")
    return out, {j: np.stack(v) for j, v in shapes.items()}


# ----------------------------------------------------------------------------- solver scene


def _material(obj) -> Material:
    s = obj.ipc
    return Material(E=s.youngs_modulus, nu=s.poisson_ratio, density=s.density, mu=s.friction)


def _gravity(scene) -> tuple[float, float]:
    s = scene.ipc
    if not s.use_scene_gravity:
        return (float(s.gravity[0]), float(s.gravity[1]))
    u, v, _ = PLANE_AXES[s.plane]
    g = scene.gravity if scene.use_gravity else (0.0, 0.0, 0.0)
    return (float(g[u]), float(g[v]))


def sim_params(scene, bodies_2d: list[np.ndarray]) -> SimParams:
    s = scene.ipc
    if s.dhat_mode == "RELATIVE":
        pts = np.concatenate(bodies_2d)
        dhat = s.dhat_relative * float(np.linalg.norm(np.ptp(pts, axis=0)))
    else:
        dhat = s.dhat
    return SimParams(
        dt=sim_dt(scene),
        dhat=dhat,
        kappa=None if s.kappa_auto else s.kappa,
        formulation=s.formulation,
        eps_v=s.eps_v,
        newton_tol=s.newton_tol,
        force_tol=s.force_tol,
        max_newton_iters=s.max_newton_iters,
        gravity=_gravity(scene),
        strict=True,
    )


def _project(mats: np.ndarray, local: np.ndarray, axes) -> np.ndarray:
    """(T,4,4) matrices x (k,3) points -> (T,k,2) in-plane positions."""
    world = np.einsum("tij,kj->tki", mats[:, :3, :3], local) + mats[:, None, :3, 3]
    return world[:, :, list(axes)]


def build_scene(
    scene,
    bodies: list[BodyInput],
    colliders: list[ColliderInput],
    materials,
    mats: np.ndarray,
    times: np.ndarray,
    shapes=None,
) -> Scene:
    """mats: (T, n_bodies + n_colliders, 4, 4) sampled matrices, bodies first; shapes: sampled
    world vertices (T, n, 3) of the deforming colliders by their index in mats."""
    shapes = shapes or {}
    u, v, _ = PLANE_AXES[scene.ipc.plane]
    solver_bodies = []
    for j, b in enumerate(bodies):
        pins = ()
        if len(b.pinned):
            local = b.local_rest[b.used[b.pinned]].astype(np.float64)
            pins = (Pin(b.pinned.copy(), times, _project(mats[:, j], local, (u, v))),)
        solver_bodies.append(
            Body(b.name, b.world_rest[b.used][:, [u, v]], b.triangles, materials[j], pins=pins)
        )
    solver_colliders = []
    for j, c in enumerate(colliders):
        if len(bodies) + j in shapes:
            pos = shapes[len(bodies) + j][:, c.vertex_ids][:, :, [u, v]]
        else:
            pos = _project(mats[:, len(bodies) + j], c.local, (u, v))
        solver_colliders.append(
            Collider(c.name, pos[0].copy(), c.edges, times, pos, mu=materials[len(bodies) + j].mu)
        )
    planes = ()
    if scene.ipc.use_ground:
        planes = (
            HalfPlane(
                point=(0.0, scene.ipc.ground_height),
                normal=(0.0, 1.0),
                mu=scene.ipc.ground_friction,
                name="Ground",
            ),
        )
    params = sim_params(scene, [sb.vertices for sb in solver_bodies])
    return Scene(tuple(solver_bodies), tuple(solver_colliders), planes, params)


# ----------------------------------------------------------------------------- messages


def in_blender_words(message: str, bodies: list[BodyInput], scene: Scene) -> str:
    """A solver message in the artist's terms: Blender's face and vertex indices instead of the
    solver's triangle and compacted vertex numbers, the panel's names (Contact Gap, Ground)."""
    by_name = {b.name: b for b in bodies}
    m = re.match(r"body '([^']*)': (.*)", message, re.S)
    if m and m.group(1) in by_name:
        body = by_name[m.group(1)]
        rest = re.sub(r"\btriangle (\d+)", lambda t: f"face {body.faces[int(t.group(1))]}", m.group(2))
        rest = re.sub(
            r"\bedge \((\d+), (\d+)\)",
            lambda e: f"edge between vertices {body.used[int(e.group(1))]} and {body.used[int(e.group(2))]}",
            rest,
        )
        rest = re.sub(r"\bvertex (\d+)", lambda v: f"vertex {body.used[int(v.group(1))]}", rest)
        message = f"'{body.name}': {rest}"
    gap = format_length(scene.params.dhat)
    message = re.sub(r"\bdhat=[-+.e0-9]+", f"the Contact Gap ({gap})", message)
    message = re.sub(
        r"\(distance ([-+.e0-9]+)\)", lambda d: f"(distance {format_length(float(d.group(1)))})", message
    )
    for hp in scene.half_planes:
        height = format_length(float(hp.point[1]))
        message = message.replace(f"half-plane '{hp.name}'", f"the {hp.name} (height {height})")
    return re.sub(r"\bbod(y|ies) '", "'", message)


# ----------------------------------------------------------------------------- signature

_TRANSFORM_CHANNELS = (
    "location",
    "rotation_euler",
    "rotation_quaternion",
    "rotation_axis_angle",
    "scale",
    "delta_location",
    "delta_rotation_euler",
    "delta_rotation_quaternion",
    "delta_scale",
)


def _motion_signature(obj, h):
    """What determines an object's motion, without evaluating frames: F-curve keys, the values of
    un-animated transform channels, parenting, constraints and drivers."""
    while obj is not None:
        curves = fcurves_of(obj)
        anim = obj.animation_data
        drivers = list(anim.drivers) if anim else []
        animated = {(fc.data_path, fc.array_index) for fc in curves + drivers}
        for fc in sorted(curves, key=lambda c: (c.data_path, c.array_index)):
            pts = np.empty(len(fc.keyframe_points) * 2, dtype=np.float32)
            fc.keyframe_points.foreach_get("co", pts)
            h.update(f"{fc.data_path}{fc.array_index}{fc.extrapolation}".encode())
            h.update(pts.tobytes())
            h.update(",".join(k.interpolation for k in fc.keyframe_points).encode())
        for path in _TRANSFORM_CHANNELS:
            values = getattr(obj, path)
            h.update(
                repr([round(float(x), 9) for i, x in enumerate(values) if (path, i) not in animated]).encode()
            )
        h.update(f"{obj.rotation_mode}{obj.parent_type}{obj.parent_bone}".encode())
        h.update(_matrix(obj.matrix_parent_inverse).tobytes())
        for con in obj.constraints:
            h.update(
                f"{con.type}{con.influence}{con.mute}"
                f"{getattr(getattr(con, 'target', None), 'name', '')}".encode()
            )
        for drv in drivers:
            h.update(f"{drv.data_path}{drv.array_index}{drv.driver.expression}".encode())
        obj = obj.parent


def input_signature(scene, bodies, colliders) -> str:
    """Hash of meshes, materials, collider motion and settings (cheap: no frame evaluation)."""
    h = hashlib.sha1()
    settings = scene.ipc
    for name in sorted(settings.bl_rna.properties.keys()):
        # Statistics and the keep-partial switch do not change the simulated motion.
        if name not in ("rna_type", "name", "keep_partial") and not name.startswith("stat_"):
            value = getattr(settings, name)
            if not isinstance(value, (str, int, float, bool)):
                value = tuple(value)  # vector properties
            h.update(f"{name}={value};".encode())
    h.update(
        f"{frame_range(scene)}{scene.render.fps}/{scene.render.fps_base}"
        f"{tuple(scene.gravity)}{scene.use_gravity}".encode()
    )
    for obj in list(bodies) + list(colliders):
        s = obj.ipc
        h.update(
            f"{obj.name}{s.role}{s.youngs_modulus}{s.poisson_ratio}{s.density}"
            f"{s.friction}{s.pin_group}".encode()
        )
        h.update(_local_coords(obj.data).tobytes())
        loops = np.empty(len(obj.data.loops), dtype=np.int32)
        obj.data.loops.foreach_get("vertex_index", loops)
        h.update(loops.tobytes())
        if is_obstacle_body(obj, bodies):
            h.update(f"{obj.ipc.is_baked}{obj.ipc.bake_hash}".encode())  # moves with its bake
        _motion_signature(obj, h)
    return h.hexdigest()


def is_outdated(context, obj) -> bool:
    """True if the inputs of obj's bake changed. Objects baked together share one stored hash,
    which identifies the group to re-hash together with the current colliders."""
    if not obj.ipc.is_baked:
        return False
    objs = list(context.view_layer.objects)
    group = sorted(
        (o for o in objs if o.type == "MESH" and o.ipc.is_baked and o.ipc.bake_hash == obj.ipc.bake_hash),
        key=lambda o: o.name,
    )
    colliders = obstacles(objs, group)
    try:
        return input_signature(context.scene, group, colliders) != obj.ipc.bake_hash
    except (AttributeError, TypeError):  # e.g. a collider that is no mesh
        return True


# ----------------------------------------------------------------------------- writing


def _remove_key_action(key):
    action = key.animation_data.action if key.animation_data else None
    key.animation_data_clear()
    if action is not None and action.users == 0:
        bpy.data.actions.remove(action)


def _set_linear(id_data, data_path: str):
    for fc in fcurves_of(id_data):
        if fc.data_path == data_path:
            for kp in fc.keyframe_points:
                kp.interpolation = "LINEAR"
            fc.update()


def delete_bake(obj):
    """Remove the bake: shape keys, their Key datablock and the eval_time action."""
    if obj.type == "MESH" and obj.data.shape_keys is not None:
        if not is_our_bake(obj):
            raise IPCError(f"'{obj.name}' has shape keys that are not an IPC bake; not deleting them")
        _remove_key_action(obj.data.shape_keys)
        obj.shape_key_clear()
    s = obj.ipc
    s.is_baked, s.bake_hash, s.bake_partial, s.bake_message = False, "", False, ""
    s.bake_frame_start = s.bake_frame_end = 0


def clear_stats_if_gone(context):
    """After Delete Bake: once no object of the last bake is baked any more, the panel's
    statistics of that bake (frames, time, distances, collider lag) are cleared."""
    s = context.scene.ipc
    if any(o.ipc.is_baked and o.ipc.bake_hash == s.stat_bake_hash for o in context.view_layer.objects):
        return
    for name in (p.identifier for p in s.bl_rna.properties):
        if name.startswith("stat_") and name != "stat_colliders":
            s.property_unset(name)
    s.stat_colliders.clear()


def to_local_frames(body: BodyInput, positions: np.ndarray, mats: np.ndarray, plane: str):
    """Solver positions (F, k, 2) -> object-local coordinates (F, n, 3) float32.

    The out-of-plane coordinate keeps its rest value; loose vertices (in no face) follow their
    triangle (barycentric weights of :func:`attach_to_nearest_triangle`).
    mats: (F, 4, 4) the object's world matrix at each frame.
    """
    u, v, _ = PLANE_AXES[plane]
    world = np.repeat(body.world_rest[None], len(positions), axis=0)
    world[:, body.used[:, None], [u, v]] = positions
    if len(body.loose):
        corners = positions[:, body.triangles[body.loose_tri]]  # (F, q, 3, 2)
        world[:, body.loose[:, None], [u, v]] = np.einsum("fqkd,qk->fqd", corners, body.loose_bary)
    inv = np.linalg.inv(mats)
    local = np.einsum("fij,fnj->fni", inv[:, :3, :3], world) + inv[:, None, :3, 3]
    return local.astype(np.float32)


def write_bake(obj, local_frames: np.ndarray, frame_start: int):
    """One absolute shape key per frame; key 0 is the untouched rest mesh (= frame_start)."""
    if obj.data.shape_keys is not None:
        delete_bake(obj)
    basis = obj.shape_key_add(name=f"{KEY_PREFIX}{frame_start:05d}", from_mix=False)
    key = obj.data.shape_keys
    key.name = f"{KEY_PREFIX}{obj.name}"
    key.use_relative = False
    blocks = [basis]
    for k in range(1, len(local_frames)):
        kb = obj.shape_key_add(name=f"{KEY_PREFIX}{frame_start + k:05d}", from_mix=False)
        kb.data.foreach_set("co", local_frames[k].ravel())
        blocks.append(kb)
    for kb in blocks:
        kb.interpolation = "KEY_LINEAR"
    # Our own action, assigned before keying: Blender 4.4+ would otherwise key eval_time into
    # the object's action (a new slot in the user's own animation) that Delete Bake must keep.
    key.animation_data_create()
    key.animation_data.action = bpy.data.actions.new(f"{KEY_PREFIX}{obj.name}")
    for k, kb in enumerate(blocks):
        # kb.frame is where Blender placed the key on the eval_time axis (steps of ~10).
        key.eval_time = kb.frame
        key.keyframe_insert("eval_time", frame=frame_start + k)
    _set_linear(key, "eval_time")
    obj.active_shape_key_index = 0
    obj.data.update()


# ----------------------------------------------------------------------------- bake job


@dataclass
class BakeStats:
    frames: int = 0
    wall_time: float = 0.0
    newton_iters: int = 0
    min_distance: float = math.inf
    # Per computed frame (frame_start + 1, ...), per collider: the largest lag behind its
    # animation and the smallest signed distance to the bodies at its animated position
    # (negative: overlap), over the frame's substeps [m].
    collider_lag: list = field(default_factory=list)
    collider_distance: list = field(default_factory=list)


def format_length(metres: float) -> str:
    """'34 µm', '3.4 mm', '0.12 m': three significant digits in a readable unit."""
    a = abs(metres)
    for unit, scale in (("m", 1.0), ("mm", 1e-3), ("µm", 1e-6)):
        if a >= scale:
            return f"{metres / scale:.3g} {unit}"
    return f"{metres / 1e-9:.3g} nm"


@dataclass(frozen=True)
class ColliderReport:
    """How one collider followed its animation during a bake (frames are scene frames)."""

    name: str
    lag: float  # largest distance of a vertex behind its animation [m]
    distance: float  # smallest signed distance to the bodies as animated [m]; inf: never near
    lag_frames: str  # frames with a lag above the contact gap, e.g. "37-61"
    overlap_frames: str  # frames in which the bodies overlap it as animated

    @property
    def overlap(self) -> float:
        return max(0.0, -self.distance)


def collider_reports(names, frame_start, lags, distances, dhat):
    """Per collider, from per-frame arrays (F, C) of the frames frame_start + 1 ...; a lag
    counts from the contact gap dhat on: a collider held off a body by the barrier stays up
    to dhat short of its key, which is the gap the user accepted as invisible."""
    frames = frame_start + 1 + np.arange(len(lags))
    out = []
    for j, name in enumerate(names):
        lag, dist = lags[:, j], distances[:, j]
        out.append(
            ColliderReport(
                name,
                float(lag.max(initial=0.0)),
                float(dist.min(initial=math.inf)),
                compact_ranges(frames[lag > dhat]),
                compact_ranges(frames[dist < 0.0]),
            )
        )
    return out


def lag_warning(reports, dhat) -> str:
    """The bake's warning about colliders that could not follow their animation ('' if none)."""
    parts = []
    for r in reports:
        if not (r.overlap_frames or r.lag_frames):
            continue
        text = f"collider '{r.name}' could not follow its animation: "
        if r.overlap_frames:
            text += (
                f"the baked bodies overlap it as animated by up to {format_length(r.overlap)} "
                f"at frames {r.overlap_frames}; "
            )
        text += f"it lags up to {format_length(r.lag)} behind its keys"
        if r.lag_frames:
            text += f" (more than the contact gap {format_length(dhat)} at frames {r.lag_frames})"
        parts.append(text)
    if not parts:
        return ""
    return (
        "IPC: "
        + "; ".join(parts)
        + ". It is keyed further than the bodies can be compressed: key it to stop higher, "
        "or make the bodies softer"
    )


class BakeJob:
    """A bake in progress: everything is read up front, nothing in the scene changes until
    :meth:`finish`, so cancelling is just dropping the job.

    The solver runs with ``blas_threads`` BLAS threads (None: the process's setting), set
    around each call and restored afterwards, so Blender keeps its own setting in between."""

    blas_threads: int | None = blas_threads.BAKE_THREADS

    def __init__(self, context, target: str = "SELECTED"):
        scene = context.scene
        self.scene = scene
        self.body_objs, self.collider_objs = gather_objects(context, target)
        check_bakeable(context, self.body_objs, self.collider_objs)
        self.frame_start, self.frame_end = frame_range(scene)
        if self.frame_end <= self.frame_start:
            raise IPCError(
                f"Frame range {self.frame_start}..{self.frame_end} is empty; "
                "the end frame must come after the start frame"
            )
        self.substeps = scene.ipc.substeps
        self.n_frames = self.frame_end - self.frame_start + 1
        self.signature = input_signature(scene, self.body_objs, self.collider_objs)
        self.inputs, self.frame_mats, self.solver_scene = self._read(context)
        try:
            with blas_threads.limited(self.blas_threads):
                self.sim = Simulation(self.solver_scene)
        except SolverInputError as err:
            text = in_blender_words(str(err), self.inputs, self.solver_scene)
            raise IPCError(f"Invalid simulation input: {text}") from err
        self.frames = [[b.world_rest[b.used][:, list(PLANE_AXES[scene.ipc.plane][:2])] for b in self.inputs]]
        self.stats = BakeStats(frames=1)
        self.failure: str | None = None
        self.started = time.perf_counter()

    def _read(self, context):
        scene = context.scene
        plane = scene.ipc.plane
        frame, subframe = scene.frame_current, scene.frame_subframe
        n_steps = (self.n_frames - 1) * self.substeps
        try:
            scene.frame_set(self.frame_start)
            depsgraph = context.evaluated_depsgraph_get()
            bodies = [read_body(o, plane) for o in self.body_objs]
            colliders = [read_collider(o, depsgraph, plane) for o in self.collider_objs]
            objs = self.body_objs + self.collider_objs
            deforming = [j for j, o in enumerate(objs) if is_obstacle_body(o, self.body_objs)]
            mats, shapes = sample_matrices(context, objs, self.frame_start, n_steps, self.substeps, deforming)
        finally:
            scene.frame_set(frame, subframe=subframe)
        times = np.arange(n_steps + 1) * sim_dt(scene)
        materials = [_material(o) for o in self.body_objs + self.collider_objs]
        solver_scene = build_scene(scene, bodies, colliders, materials, mats, times, shapes)
        frame_mats = mats[:: self.substeps, : len(bodies)]
        return bodies, frame_mats, solver_scene

    @property
    def frames_done(self) -> int:
        return len(self.frames)

    @property
    def done(self) -> bool:
        return self.failure is not None or self.frames_done >= self.n_frames

    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def estimate_remaining(self) -> float:
        computed = self.frames_done - 1
        if computed <= 0:
            return math.nan
        return self.elapsed() / computed * (self.n_frames - self.frames_done)

    def step_frame(self):
        """Advance one frame (all its substeps). Solver failures end the job with a message."""
        frame = self.frame_start + self.frames_done
        try:
            n_col = len(self.collider_objs)
            lag, dist = np.zeros(n_col), np.full(n_col, math.inf)
            for _ in range(self.substeps):
                st = self.sim.step()
                self.stats.newton_iters += st.newton_iters
                self.stats.min_distance = min(self.stats.min_distance, st.min_distance)
                lag = np.maximum(lag, st.collider_lags)
                dist = np.minimum(dist, st.animated_collider_distances)
        except (ConvergenceError, SolverInputError) as err:
            self.failure = f"Solver failed at frame {frame}: {err}"
            return
        except Exception as err:
            self.failure = f"Solver failed at frame {frame}: {type(err).__name__}: {err}"
            return
        self.frames.append([self.sim.body_positions(i).copy() for i in range(len(self.inputs))])
        self.stats.frames = self.frames_done
        self.stats.collider_lag.append(lag)
        self.stats.collider_distance.append(dist)

    def _collider_frames(self):
        """Per computed frame (F, C): largest lag and smallest animated distance [m]."""
        shape = (len(self.stats.collider_lag), len(self.collider_objs))
        lags = np.array(self.stats.collider_lag, float).reshape(shape)
        return lags, np.array(self.stats.collider_distance, float).reshape(shape)

    def collider_reports(self) -> list[ColliderReport]:
        """How each collider followed its animation over the frames computed so far."""
        lags, dists = self._collider_frames()
        names = [o.name for o in self.collider_objs]
        return collider_reports(names, self.frame_start, lags, dists, self.solver_scene.params.dhat)

    @property
    def warning(self) -> str:
        """Colliders that could not follow their animation, or ''."""
        return lag_warning(self.collider_reports(), self.solver_scene.params.dhat)

    def step(self, budget: float | None = None) -> bool:
        """Compute frames until done or `budget` seconds have passed; returns ``done``."""
        t0 = time.perf_counter()
        with blas_threads.limited(self.blas_threads):
            while not self.done:
                self.step_frame()
                if budget is not None and time.perf_counter() - t0 >= budget:
                    break
        return self.done

    def run(self) -> bool:
        return self.step(None)

    def finish(self, keep_partial: bool = False) -> bool:
        """Write the keys (all frames, or the partial result if allowed). Returns True if
        anything was written."""
        self.stats.wall_time = self.elapsed()
        partial = self.failure is not None
        if partial and (not keep_partial or self.frames_done < 2):
            return False
        plane = self.scene.ipc.plane
        n = self.frames_done
        for j, (obj, body) in enumerate(zip(self.body_objs, self.inputs, strict=True)):
            positions = np.stack([f[j] for f in self.frames])
            local = to_local_frames(body, positions, self.frame_mats[:n, j], plane)
            write_bake(obj, local, self.frame_start)
            s = obj.ipc
            s.is_baked, s.bake_hash, s.bake_partial = True, self.signature, partial
            s.bake_frame_start, s.bake_frame_end = self.frame_start, self.frame_start + n - 1
            s.bake_message = self.failure or ""
        self._record_stats()
        return True

    def _record_stats(self):
        s = self.scene.ipc
        s.stat_bake_hash = self.signature
        s.stat_frames = self.frames_done
        s.stat_wall_time = self.stats.wall_time
        s.stat_newton_iters = self.stats.newton_iters
        s.stat_min_distance = self.stats.min_distance if math.isfinite(self.stats.min_distance) else -1.0
        s.stat_message = self.failure or ""
        reports = self.collider_reports()
        near = [r.distance for r in reports if math.isfinite(r.distance)]
        s.stat_collider_near = bool(near)
        s.stat_collider_distance = min(near, default=0.0)
        s.stat_collider_lag = max((r.lag for r in reports), default=0.0)
        lags, dists = self._collider_frames()
        frames = self.frame_start + 1 + np.arange(len(lags))
        s.stat_lag_frames = compact_ranges(frames[(lags > self.solver_scene.params.dhat).any(axis=1)])
        s.stat_overlap_frames = compact_ranges(frames[(dists < 0.0).any(axis=1)])
        s.stat_warning = lag_warning(reports, self.solver_scene.params.dhat)
        s.stat_colliders.clear()
        for r in reports:
            item = s.stat_colliders.add()
            item.name, item.lag = r.name, r.lag
            item.near = math.isfinite(r.distance)
            item.distance = r.distance if item.near else 0.0
            item.lag_frames, item.overlap_frames = r.lag_frames, r.overlap_frames
