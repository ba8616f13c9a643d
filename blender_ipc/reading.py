"""Reading deformable bodies: which objects a bake takes, whether they can be baked, each body's
mesh as solver arrays, the solver scene built from bodies, colliders and settings, and solver
messages in Blender's words.

A deformable body is its mesh at the start frame in world space: the mesh data posed by the
evaluated world matrix (the add-on refuses foreign shape keys and modifiers that change the shape
in the plane; detail modifiers apply on top of the bake, see :mod:`.modifier_stack`),
triangulated through ``loop_triangles`` (n-gons included) and projected to the plane.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
from mathutils import Vector
from mathutils.geometry import delaunay_2d_cdt

from .colliders import ColliderInput
from .common import (
    PLANE_AXES,
    IPCError,
    compact_indices,
    format_length,
    is_our_bake,
    local_coords,
    matrix_of,
    project,
    sim_dt,
    transform,
)
from .modifier_stack import shape_changing, type_label
from .solver import Body, Collider, HalfPlane, Material, Pin, Scene, SimParams
from .solver.geometry import cross, orientation, point_segment_distance, points_in_triangles, signed_areas

FLAT_TOL_REL = 1e-4  # allowed out-of-plane spread relative to the body size
FLAT_TOL_ABS = 1e-6  # ... but never below this [m] (float32 mesh coordinates)


def _triangles(mesh):
    """(m, 3) vertex indices of the loop triangles and (m,) the face each belongs to."""
    mesh.calc_loop_triangles()
    tris = np.empty(len(mesh.loop_triangles) * 3, dtype=np.int32)
    mesh.loop_triangles.foreach_get("vertices", tris)
    faces = np.empty(len(mesh.loop_triangles), dtype=np.int32)
    mesh.loop_triangles.foreach_get("polygon_index", faces)
    return tris.reshape(-1, 3), faces


# Object types a collider (or an unselected deformable body, an obstacle) can be: their
# evaluated mesh is read (a curve without fill evaluates to a polyline: its edges).
COLLIDER_TYPES = {"MESH": "mesh", "CURVE": "curve", "FONT": "text"}
# Object types Object > Convert > Mesh turns into a mesh.
_CONVERTIBLE = {"CURVE": "Curve", "FONT": "Text", "SURFACE": "Surface", "META": "Metaball"}


BODY_KINDS = {"DEFORMABLE": "deformable", "RIGID": "rigid", "STIFF": "stiff"}  # body_type -> Body.kind


def body_type_problem(obj, depsgraph=None) -> str:
    """'' if obj can be baked as a deformable body, else what the artist has to do: shape keys
    are baked onto a mesh only, so a text, curve, ... object has to become a mesh first. With a
    depsgraph, a curve that evaluates to no faces is told how to get some."""
    if obj.type == "MESH":
        return ""
    kind = _CONVERTIBLE.get(obj.type)
    if kind is None:
        kind = obj.type.replace("_", " ").title()
        return f"'{obj.name}' is {_article(kind)} {kind} object: only a mesh can be a deformable body"
    how = "convert it to a mesh first (Object > Convert > Mesh)"
    if _has_operator("ipc", "make_sim_mesh"):
        how += ", or press Make Simulation Mesh in its IPC panel"
    text = f"'{obj.name}' is {_article(kind)} {kind} object: shape keys are baked onto a mesh only; {how}"
    if depsgraph is not None and obj.type in {"CURVE", "FONT"} and not _evaluated_faces(obj, depsgraph):
        text += (
            ". It has no filled area yet: close the curve, set its Shape > Fill Mode (2D) "
            "or give it a Geometry > Bevel"
        )
    return text


def role_problem(obj) -> str:
    """Why obj cannot take its IPC role (for the panel; cheap, no evaluation), or ''."""
    if obj.ipc.role == "BODY":
        return body_type_problem(obj)
    if obj.ipc.role == "COLLIDER" and obj.type not in COLLIDER_TYPES:
        return f"'{obj.name}' is of type {obj.type}: a collider must be a mesh, curve or text object"
    return ""


def _article(word: str) -> str:
    return "an" if word[0] in "AEIOU" else "a"


def _has_operator(category: str, name: str) -> bool:
    import bpy

    return name in dir(getattr(bpy.ops, category))


def _evaluated_faces(obj, depsgraph) -> int:
    ob_eval = obj.evaluated_get(depsgraph)
    mesh = ob_eval.to_mesh()
    try:
        return 0 if mesh is None else len(mesh.polygons)
    finally:
        ob_eval.to_mesh_clear()


def gather_objects(context, target: str):
    """Bodies to bake (selected or all in the view layer) and all colliders of the view layer.
    A deformable body that is no mesh is refused with what to do, never skipped."""
    # Objects linked by a script moments ago appear in view_layer.objects only after an update.
    context.view_layer.update()
    objs = list(context.view_layer.objects)
    pool = [o for o in objs if o.select_get()] if target == "SELECTED" else objs
    for obj in sorted(pool, key=lambda o: o.name):
        if obj.ipc.role == "BODY" and obj.type != "MESH":
            raise IPCError(body_type_problem(obj, context.evaluated_depsgraph_get()))
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
    return obj.ipc.role == "BODY" and obj not in bodies


def unselected_bodies(context) -> int:
    """How many deformable bodies Bake Selected would leave as obstacles (for the panel)."""
    objs = context.view_layer.objects
    bodies = [o for o in objs if o.ipc.role == "BODY"]
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
        s = obj.ipc
        if s.use_static_friction and s.static_friction < s.friction:
            raise IPCError(
                f"'{obj.name}': Static Friction ({s.static_friction:.3g}) is below Friction "
                f"({s.friction:.3g}); a contact holds at least as well as it slides: raise Static "
                "Friction or switch it off"
            )
        changing = shape_changing(obj)
        if changing:
            mod = changing[0]
            raise IPCError(
                f"'{obj.name}': modifier '{mod.name}' ({type_label(mod)}) changes the shape in the "
                "simulation plane, which the bake does not see; apply or disable it before baking "
                "(Subdivision Surface, Solidify, Bevel and other detail modifiers may stay)"
            )
        key = obj.data.shape_keys
        if key and not is_our_bake(obj):
            names = ", ".join(kb.name for kb in key.key_blocks[:3])
            raise IPCError(
                f"'{obj.name}' has its own shape keys ({names}); the bake would "
                "overwrite them - remove them or bake a copy of the object"
            )
    for obj in colliders:
        if obj.type in COLLIDER_TYPES:
            continue
        if obj.ipc.role == "BODY":  # an unselected body left as an obstacle
            raise IPCError(body_type_problem(obj))
        raise IPCError(
            f"Collider '{obj.name}' is not a mesh, curve or text object (it is of type {obj.type}); "
            "give the Collider role to one of those"
        )


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
    kind: str = "deformable"  # the solver's Body.kind: 'deformable', 'rigid' or 'stiff'
    modes: int = 6  # the solver's Body.modes (stiff bodies)


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
    local = local_coords(mesh)
    world = transform(matrix_of(obj.matrix_world), local.astype(np.float64))
    extent = float(np.ptp(world[:, [u, v]], axis=0).max())
    spread = float(np.ptp(world[:, w]))
    tol = max(FLAT_TOL_ABS, FLAT_TOL_REL * extent)
    if spread > tol:
        axis = "XYZ"[w]
        raise IPCError(
            f"'{obj.name}' is not flat in the {plane} plane: its world {axis} "
            f"coordinates span {spread:.3g} m (tolerance {tol:.2g} m)"
        )
    all_tris, faces = _retriangulated(mesh, world[:, [u, v]], *_triangles(mesh))
    used, tris = compact_indices(all_tris, len(local))
    pins = _pinned_vertices(obj, mesh, obj.ipc.pin_group)
    pinned = np.searchsorted(used, np.intersect1d(pins, used))
    loose = np.setdiff1d(np.arange(len(local)), used)
    x = world[used][:, [u, v]]
    # Faces wound the other way (a flipped normal) are turned round in the solver's copy only:
    # in a flat mesh every face's winding is visible from its signed area in the plane.
    flipped = signed_areas(x, tris) < 0
    tris[flipped] = tris[flipped][:, [0, 2, 1]]
    loose_tri, loose_bary = attach_to_nearest_triangle(world[loose][:, [u, v]], x, tris)
    kind = BODY_KINDS.get(obj.ipc.body_type, "deformable")
    parts = (local, world, used, tris, pinned, loose, loose_tri, loose_bary, faces)
    return BodyInput(obj.name, *parts, kind, int(obj.ipc.modes))


# A loop triangle this flat (|area| relative to the body's size squared) is replaced.
FLAT_TRIANGLE_REL = 1e-10


def _retriangulated(mesh, xy: np.ndarray, tris: np.ndarray, faces: np.ndarray):
    """Faces whose loop triangles include a zero-area one (an n-gon with vertices on a straight
    side: knife cuts, imports; Blender's own triangulation may fan across them) triangulated
    again as a constrained Delaunay triangulation of the face's outline (mathutils, Blender
    3.4+), in the solver's copy only. A face that cannot be (a sliver, an outline crossing
    itself) keeps Blender's triangles, and the solver names it."""
    scale = max(float(np.ptp(xy, axis=0).max()), 1e-300)
    flat = np.abs(2.0 * signed_areas(xy, tris)) <= FLAT_TRIANGLE_REL * scale * scale
    if not flat.any():
        return tris, faces
    keep, new_tris, new_faces = np.ones(len(tris), bool), [tris], [faces]
    for f in np.unique(faces[flat]):
        outline = np.array(mesh.polygons[int(f)].vertices, dtype=np.int64)
        cdt = _outline_triangles(xy[outline], FLAT_TRIANGLE_REL * scale * scale)
        if cdt is not None:
            keep &= faces != f
            new_tris.append(outline[cdt])
            new_faces.append(np.full(len(cdt), f, dtype=faces.dtype))
    tris = np.concatenate(new_tris)
    faces = np.concatenate(new_faces)
    keep = np.concatenate([keep, np.ones(len(tris) - len(keep), bool)])
    return tris[keep].astype(np.int32), faces[keep]


def _outline_triangles(pts: np.ndarray, tiny: float):
    """(t, 3) indices into pts triangulating the polygon pts, or None if that fails."""
    out = delaunay_2d_cdt([Vector(p) for p in pts], [], [list(range(len(pts)))], 1, 0.0)
    verts, tri_list, orig = out[0], out[2], out[3]
    if len(verts) != len(pts) or any(len(o) != 1 for o in orig) or not tri_list:
        return None  # vertices merged or added: the outline touches or crosses itself
    to_input = np.array([o[0] for o in orig], dtype=np.int64)
    cdt = to_input[np.array([list(t) for t in tri_list], dtype=np.int64)]
    if cdt.shape[1] != 3:
        return None
    area = np.abs(2.0 * signed_areas(pts, cdt))
    outline = abs(float(cross(pts, np.roll(pts, -1, axis=0)).sum()))
    if (area <= tiny).any() or abs(area.sum() - outline) > 1e-9 * max(outline, 1e-300):
        return None
    return cdt


def attach_to_nearest_triangle(points: np.ndarray, x: np.ndarray, tris: np.ndarray):
    """For each point (q, 2): the nearest counter-clockwise triangle of the mesh (x, tris) and the point's
    barycentric coordinates in it (unclamped: a point outside follows the triangle's affine
    motion). Loose vertices and edges of a body are carried along this way."""
    tri_of = np.zeros(len(points), dtype=np.int64)
    a, b, c = x[tris[:, 0]], x[tris[:, 1]], x[tris[:, 2]]
    for start in range(0, len(points), 256):  # (chunk, m) distance table
        p = points[start : start + 256, None]
        d = np.minimum(
            np.minimum(point_segment_distance(p, a, b), point_segment_distance(p, b, c)),
            point_segment_distance(p, c, a),
        )
        inside = points_in_triangles(p, a, b, c)
        tri_of[start : start + 256] = np.argmin(np.where(inside, -1.0, d), axis=1)
    t = tris[tri_of]
    a, b, c = x[t[:, 0]], x[t[:, 1]], x[t[:, 2]]
    area = orientation(a, b, c)
    wb = orientation(a, points, c) / area
    wc = orientation(a, b, points) / area
    return tri_of, np.column_stack([1.0 - wb - wc, wb, wc])


def material_of(obj) -> Material:
    s = obj.ipc
    static = s.static_friction if s.role == "BODY" and s.use_static_friction else None
    return Material(
        E=s.youngs_modulus, nu=s.poisson_ratio, density=s.density, mu=s.friction, mu_static=static
    )


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
        friction_mollifier=s.friction_mollifier,
        newton_tol=s.newton_tol,
        force_tol=s.force_tol,
        max_newton_iters=s.max_newton_iters,
        gravity=_gravity(scene),
        strict=True,
    )


def initial_velocity(obj):
    """The body's initial in-plane velocity [m/s] and angular velocity [rad/s] (counter-clockwise
    in the plane's view: front for XZ, top for XY) from its IPC settings."""
    s = obj.ipc
    return (float(s.initial_velocity[0]), float(s.initial_velocity[1])), float(s.initial_angular_velocity)


def has_handoff(scene, frame_start: int) -> bool:
    """Whether a bake from frame_start takes over the bodies' animated motion: from any frame
    after the scene's first one (at the scene's first frame there is no previous frame)."""
    return frame_start > scene.frame_start


def animated_velocity(body: BodyInput, before: np.ndarray, fps: float, plane: str):
    """The velocity [m/s] (k, 2) of the body's solver vertices that its object's animation has at
    the start frame: (position at the start frame - position one frame before) x fps, in the
    plane; None when the body does not move there. before: the object's world matrix (4, 4) one
    frame before the start. A body's simulated mesh is its mesh data posed by that matrix (the
    add-on refuses shape-changing modifiers and foreign shape keys; an earlier IPC bake is not
    an input)."""
    u, v, _ = PLANE_AXES[plane]
    prev = transform(before, body.local_rest.astype(np.float64))
    step = (body.world_rest - prev)[body.used][:, [u, v]]
    if not step.any():
        return None
    return step * fps


def _spin(x, tris, linear, omega):
    """Vertex velocities (n, 2) of a rigid motion: linear at the body's centre of area, turning
    at omega about it; None when the body starts at rest."""
    if not any(linear) and omega == 0.0:
        return None
    a, b, c = x[tris[:, 0]], x[tris[:, 1]], x[tris[:, 2]]
    area = np.abs(signed_areas(x, tris))
    centre = ((a + b + c) / 3.0 * area[:, None]).sum(axis=0) / area.sum()
    r = x - centre
    return np.asarray(linear, float) + omega * np.column_stack([-r[:, 1], r[:, 0]])


def build_scene(
    scene,
    bodies: list[BodyInput],
    colliders: list[ColliderInput],
    materials,
    mats: np.ndarray,
    times: np.ndarray,
    shapes=None,
    velocities=None,
    handoff=None,
) -> Scene:
    """mats: (T, n_bodies + n_colliders, 4, 4) sampled matrices, bodies first; shapes: sampled
    world vertices (T, n, 3) of the deforming colliders by their index in mats; velocities:
    per body its initial (linear (2,), angular) velocity, see :func:`initial_velocity`; handoff:
    per body the velocity of its animation at the start frame ((k, 2) or None, see
    :func:`animated_velocity`), to which the initial velocity is added."""
    shapes = shapes or {}
    u, v, _ = PLANE_AXES[scene.ipc.plane]
    solver_bodies = []
    for j, b in enumerate(bodies):
        pins = ()
        if len(b.pinned):
            local = b.local_rest[b.used[b.pinned]].astype(np.float64)
            pins = (Pin(b.pinned.copy(), times, project(mats[:, j], local, (u, v))),)
        x = b.world_rest[b.used][:, [u, v]]
        velocity = _spin(x, b.triangles, *velocities[j]) if velocities else None
        animated = handoff[j] if handoff else None
        if animated is not None:
            velocity = animated if velocity is None else animated + velocity
        solver_bodies.append(
            Body(
                b.name, x, b.triangles, materials[j], velocity=velocity, pins=pins, kind=b.kind, modes=b.modes
            )
        )
    solver_colliders = []
    for j, c in enumerate(colliders):
        if len(bodies) + j in shapes:
            pos = shapes[len(bodies) + j][:, c.vertex_ids][:, :, [u, v]]
        else:
            pos = project(mats[:, len(bodies) + j], c.local, (u, v))
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


# The solver's field names as the panel labels them.
_PANEL_FIELDS = {
    "material.E": "Young's Modulus",
    "material.nu": "Poisson Ratio",
    "material.density": "Density",
    "material.mu": "Friction",
    "material.mu_static": "Static Friction",
}


def _beside(metres: float, gap: str) -> str:
    """A distance with enough digits to differ from the Contact Gap it is compared with."""
    for digits in range(3, 18):
        text = format_length(metres, digits)
        if text != gap:
            return text
    return text


def in_blender_words(message: str, bodies: list[BodyInput], scene: Scene) -> str:
    """A solver message in the artist's terms: Blender's face and vertex indices instead of the
    solver's triangle and compacted vertex numbers, the panel's names (Contact Gap, Ground)."""
    by_name = {b.name: b for b in bodies}
    m = re.match(r"body '([^']*)': (.*)", message, re.S)
    if m and m.group(1) in by_name:
        body = by_name[m.group(1)]
        rest = m.group(2)
        for field, words in _PANEL_FIELDS.items():
            rest = rest.replace(f"{field}: ", f"{words}: ")
        rest = re.sub(
            r"\bedge \((\d+), (\d+)\)",
            lambda e: f"edge between vertices {body.used[int(e.group(1))]} and {body.used[int(e.group(2))]}",
            rest,
        )
        rest = re.sub(r"\bvertex (\d+)", lambda v: f"vertex {body.used[int(v.group(1))]}", rest)
        # the fields' paths last: their words ('vertex 12') must not be translated twice
        rest = re.sub(r"\btriangles\[(\d+)\]", lambda t: f"face {body.faces[int(t.group(1))]}", rest)
        rest = re.sub(r"\bvertices\[(\d+)\]", lambda v: f"vertex {body.used[int(v.group(1))]}", rest)
        message = f"'{body.name}': {rest}"
    gap = format_length(scene.params.dhat)
    message = re.sub(r"\bdhat=[-+.e0-9]+", f"the Contact Gap ({gap})", message)
    message = re.sub(
        r"\(distance ([-+.e0-9]+)\)", lambda d: f"(distance {_beside(float(d.group(1)), gap)})", message
    )
    for hp in scene.half_planes:
        height = format_length(float(hp.point[1]))
        message = message.replace(f"half-plane '{hp.name}'", f"the {hp.name} (height {height})")
    return re.sub(r"\bbod(y|ies) '", "'", message)


def _quoted(name: str) -> str:
    return name if name.startswith("the ") else f"'{name}'"


def separation_report(moves, dhat) -> str:
    """The bake's report of the bodies solver.touching moved apart ('' if none moved)."""
    if not moves:
        return ""
    parts = [f"'{a}' {format_length(d)} away from {_quoted(b)}" for a, b, d in moves]
    return (
        "IPC: objects touching at the start were separated for the simulation (the meshes are "
        f"unchanged, the Contact Gap is {format_length(dhat)}): moved " + ", ".join(parts)
    )
