"""The scene's Blender Force Field objects as solver force fields
(solver/fields.py), sampled at every substep and projected into the
simulation plane.

Read: Force, Wind, Drag and Vortex fields (``object.field.type``) with their
strength, flow, linear and quadratic drag, shape (Point, Plane), falloff
(Sphere: power, minimum and maximum distance) and the object's location and Z
axis, all as evaluated at each substep (keyframes, drivers, parents count).
The origin is projected into the plane; the Z axis's in-plane part is the
wind's direction (a tilted wind blows less in the plane, as its projection
does) and the plane shape's normal; a vortex turns about its Z axis's
out-of-plane part (its sign: which way it turns in the plane's view).

Not read, and named in a message: other field types (Turbulence, Harmonic,
Magnetic, ...), which are ignored; shapes other than Point and Plane (read as
Point), falloffs Tube and Cone (read as Sphere), a vortex's Plane shape (read
as Point), noise.  A field applies to every body, as to a Blender particle of
mass 1 kg (its force per kilogram of the body).
"""

from __future__ import annotations

import numpy as np

from .common import PLANE_AXES, fcurves_of, matrix_of
from .solver.scene import ForceField

KINDS = {"FORCE": "force", "WIND": "wind", "DRAG": "drag", "VORTEX": "vortex"}
_SHAPES = {"POINT": "point", "PLANE": "plane"}
_SAMPLED = ("strength", "flow", "linear_drag", "quadratic_drag")


def field_objects(scene):
    """The scene's objects carrying a force field (any type), by name."""
    objs = [o for o in scene.objects if o.field is not None and o.field.type != "NONE"]
    return sorted(objs, key=lambda o: o.name)


def _type_label(obj) -> str:
    return obj.field.bl_rna.properties["type"].enum_items[obj.field.type].name


def unsupported(objs) -> list[str]:
    """Messages naming what of the fields is not simulated (module doc)."""
    out = []
    for o in objs:
        f = o.field
        if f.type not in KINDS:
            out.append(f"force field '{o.name}' ({_type_label(o)}) is not supported and is ignored")
            continue
        if f.shape not in _SHAPES or (f.type == "VORTEX" and f.shape != "POINT"):
            out.append(f"force field '{o.name}': shape {f.shape.title()} is read as Point")
        if f.falloff_type != "SPHERE":
            out.append(f"force field '{o.name}': falloff {f.falloff_type.title()} is read as Sphere")
        if f.noise:
            out.append(f"force field '{o.name}': noise is ignored")
    return out


def _values(obj, plane):
    """One sample of a field object (evaluated): scalars, in-plane origin and axis."""
    f = obj.field
    u, v, w = PLANE_AXES[plane]
    m = matrix_of(obj.matrix_world)
    axis = m[:3, 2] / max(float(np.linalg.norm(m[:3, 2])), 1e-300)
    # Blender keeps a drag's coefficients in the slots of strength and damping: read each
    # kind's own values only
    if f.type == "DRAG":
        vals = {"strength": 0.0, "flow": 0.0}
        vals.update(linear_drag=float(f.linear_drag), quadratic_drag=float(f.quadratic_drag))
    else:
        vals = {
            "strength": float(f.strength),
            "flow": float(f.flow),
            "linear_drag": 0.0,
            "quadratic_drag": 0.0,
        }
    if f.type == "VORTEX":
        # e_w x (r_u e_u + r_v e_v) is counter-clockwise in (u, v) when e_u x e_v = e_w
        hand = float(np.dot(np.cross(np.eye(3)[u], np.eye(3)[v]), np.eye(3)[w]))
        vals["strength"] *= hand * float(np.sign(axis[w]))
    return vals, m[[u, v], 3], axis[[u, v]]


def _field(obj, samples, times):
    f = obj.field
    scalars = {name: np.array([s[0][name] for s in samples]) for name in _SAMPLED}
    shape = _SHAPES.get(f.shape, "point") if f.type != "VORTEX" else "point"
    return ForceField(
        name=obj.name,
        kind=KINDS[f.type],
        position=np.array([s[1] for s in samples]),
        direction=np.array([s[2] for s in samples]),
        shape=shape,
        falloff="sphere",
        falloff_power=float(f.falloff_power),
        min_distance=float(f.distance_min) if f.use_min_distance else None,
        max_distance=float(f.distance_max) if f.use_max_distance else None,
        times=times,
        **scalars,
    )


def read_fields(context, frame_start: int, n_samples: int, substeps: int, times, plane: str):
    """(fields, messages): the supported force fields sampled at every substep
    (n_samples + 1 samples from frame_start, at times), and what is not read.
    The caller restores the current frame."""
    objs = field_objects(context.scene)
    messages = unsupported(objs)
    objs = [o for o in objs if o.field.type in KINDS]
    if not objs:
        return (), messages
    samples = {o.name: [] for o in objs}
    for i in range(n_samples + 1):
        frame, sub = divmod(i, substeps)
        context.scene.frame_set(frame_start + frame, subframe=sub / substeps)
        depsgraph = context.evaluated_depsgraph_get()
        for o in objs:
            samples[o.name].append(_values(o.evaluated_get(depsgraph), plane))
    times = np.asarray(times, float)[: n_samples + 1]
    return tuple(_field(o, samples[o.name], times) for o in objs), messages


_SETTINGS = (
    "type",
    "shape",
    "strength",
    "flow",
    "linear_drag",
    "quadratic_drag",
    "falloff_type",
    "falloff_power",
    "use_min_distance",
    "distance_min",
    "use_max_distance",
    "distance_max",
    "noise",
)


def fields_text(scene) -> str:
    """The force fields' settings as text for the bake signature; keyed ones
    are left out (their F-curves are hashed with the object's animation, and
    their current value depends on the frame)."""
    parts = []
    for o in field_objects(scene):
        keyed = {fc.data_path for fc in fcurves_of(o)}
        values = [f"{k}={getattr(o.field, k)}" for k in _SETTINGS if f"field.{k}" not in keyed]
        parts.append(f"{o.name}:{','.join(values)};")
    return "".join(parts)
