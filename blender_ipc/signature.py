"""The bake's input signature: a hash of meshes, materials, collider motion and settings, which
marks a bake *outdated* when its inputs change."""

from __future__ import annotations

import hashlib

import bpy
import numpy as np

from . import link_sig
from .animated import keyed_paths
from .common import fcurves_of, frame_range, local_coords, matrix_of
from .fields import field_objects, fields_text
from .frame_diagnostics import PROPERTIES as DIAGNOSTICS
from .reading import has_handoff, is_obstacle_body, obstacles

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


# The scene's per-frame diagnostics are keyed by the bake itself: an output, not an input.
_BAKE_OUTPUTS = frozenset(f'["{name}"]' for name, _ in DIAGNOSTICS)


def _curves_signature(id_data, h):
    """Hash id_data's F-curve keys; returns its drivers (for the caller to hash) and the animated
    (data_path, index) pairs, whose current values depend on the frame and stay out of the hash."""
    curves = [fc for fc in fcurves_of(id_data) if fc.data_path not in _BAKE_OUTPUTS]
    anim = id_data.animation_data
    drivers = list(anim.drivers) if anim else []
    for fc in sorted(curves, key=lambda c: (c.data_path, c.array_index)):
        pts = np.empty(len(fc.keyframe_points) * 2, dtype=np.float32)
        fc.keyframe_points.foreach_get("co", pts)
        h.update(f"{fc.data_path}{fc.array_index}{fc.extrapolation}".encode())
        h.update(pts.tobytes())
        h.update(",".join(k.interpolation for k in fc.keyframe_points).encode())
    return drivers, {(fc.data_path, fc.array_index) for fc in curves + drivers}


def _drivers_signature(drivers, h):
    for drv in drivers:
        h.update(f"{drv.data_path}{drv.array_index}{drv.driver.expression}".encode())


def _deformation_signature(obj, h):
    """What deforms a collider's mesh (see colliders.may_deform), without evaluating frames: its
    shape keys (vertices, settings, F-curves and drivers; a value only if it is not animated)
    and its modifiers' types, names, viewport visibility and target objects."""
    key = obj.data.shape_keys
    if key is not None:
        drivers, animated = _curves_signature(key, h)
        _drivers_signature(drivers, h)
        eval_time = "" if ("eval_time", 0) in animated else round(float(key.eval_time), 9)
        h.update(f"{key.use_relative}{eval_time}".encode())
        for kb in key.key_blocks:
            co = np.empty(len(kb.data) * 3, dtype=np.float32)
            kb.data.foreach_get("co", co)
            h.update(co.tobytes())
            value = "" if (kb.path_from_id("value"), 0) in animated else round(float(kb.value), 9)
            h.update(
                f"{kb.name}{value}{kb.mute}{kb.slider_min}{kb.slider_max}{kb.vertex_group}"
                f"{kb.interpolation}{kb.relative_key.name}".encode()
            )
    for mod in obj.modifiers:
        target = getattr(getattr(mod, "object", None), "name", "")
        h.update(f"{mod.type}{mod.name}{mod.show_viewport}{target}".encode())


_SIMPLE = {"BOOLEAN", "INT", "FLOAT", "STRING", "ENUM"}
_SPLINE_POINT_FIELDS = {
    "points": ("co", "radius", "tilt", "weight_softbody"),
    "bezier_points": ("co", "handle_left", "handle_right", "radius", "tilt"),
}


def _rna_values(data, skip=()) -> str:
    """data's simple RNA properties (and the names of the IDs it points to) as text."""
    parts = []
    for prop in data.bl_rna.properties:
        name = prop.identifier
        if name in skip or name == "rna_type":
            continue
        if prop.type in _SIMPLE:
            value = getattr(data, name)
            if prop.type in {"FLOAT", "INT", "BOOLEAN"} and getattr(prop, "is_array", False):
                value = tuple(value)
            parts.append(f"{name}={value};")
        elif prop.type == "POINTER":
            target = getattr(data, name)
            if isinstance(target, bpy.types.ID):
                parts.append(f"{name}={target.name};")
    return "".join(parts)


def _curve_signature(curve, h):
    """A curve's or text's shape without evaluating it: its settings (fill, bevel, extrude,
    resolution, text, font, ...; animated ones by their F-curves, not their current value) and
    its splines' points."""
    drivers, animated = _curves_signature(curve, h)
    _drivers_signature(drivers, h)
    h.update(_rna_values(curve, {path for path, _ in animated}).encode())
    for spline in getattr(curve, "splines", ()):
        h.update(_rna_values(spline).encode())
        for points, fields in _SPLINE_POINT_FIELDS.items():
            pts = getattr(spline, points)
            if not len(pts):
                continue
            for name in fields:
                first = getattr(pts[0], name)
                width = 1 if isinstance(first, float) else len(first)
                values = np.empty(len(pts) * width, dtype=np.float32)
                pts.foreach_get(name, values)
                h.update(values.tobytes())


def _motion_signature(obj, h):
    """What determines an object's motion, without evaluating frames: F-curve keys, the values of
    un-animated transform channels, parenting, constraints and drivers."""
    while obj is not None:
        drivers, animated = _curves_signature(obj, h)
        for path in _TRANSFORM_CHANNELS:
            values = getattr(obj, path)
            h.update(
                repr([round(float(x), 9) for i, x in enumerate(values) if (path, i) not in animated]).encode()
            )
        h.update(f"{obj.rotation_mode}{obj.parent_type}{obj.parent_bone}".encode())
        h.update(matrix_of(obj.matrix_parent_inverse).tobytes())
        for con in obj.constraints:
            h.update(
                f"{con.type}{con.influence}{con.mute}"
                f"{getattr(getattr(con, 'target', None), 'name', '')}".encode()
            )
        _drivers_signature(drivers, h)
        obj = obj.parent


# Settings that are not inputs of the simulated motion up to a frame: the end of the frame range
# (a bake to frame 100 is the first 100 frames of a bake to frame 200, which Continue Bake
# relies on; the start frame is an input, see _settings_items), statistics, keep-partial, the
# frames between stored solver states.
_NOT_INPUTS = {
    "rna_type",
    "name",
    "keep_partial",
    "state_every",
    "use_frame_range",
    "frame_start",
    "frame_end",
}
# Settings added after bakes were made, with the value that reproduces those bakes: hashed only
# away from that value, so that a bake made before the setting existed stays current (and can be
# continued), while changing the setting still marks the bake outdated.
_LATER_SETTINGS = {
    "friction_mollifier": ("Friction Mollifier", "linear"),
    "use_deactivation": ("Deactivation", False),
    "friction_updates": ("Friction Updates", 0),
}
_LATER_DEFAULTS = {f"setting '{label}'": value for label, value in _LATER_SETTINGS.values()}


def _settings_items(scene) -> list[tuple[str, str]]:
    """The scene settings that shape the simulated motion, as (label, value text) (cheap)."""
    settings = scene.ipc
    items = []
    keyed = keyed_paths(scene) - _BAKE_OUTPUTS
    for name in sorted(settings.bl_rna.properties.keys()):
        if name not in _NOT_INPUTS and not name.startswith("stat_"):
            value = "keyed" if f"ipc.{name}" in keyed else getattr(settings, name)
            if name in _LATER_SETTINGS and value == _LATER_SETTINGS[name][1]:
                continue
            if not isinstance(value, (str, int, float, bool)):
                value = tuple(value)  # vector properties
            label = f"setting '{settings.bl_rna.properties[name].name or name}'"
            if any(label == other for other, _ in items):
                label = f"setting '{name}'"  # two settings with one display name
            items.append((label, f"{value}"))
    items += [
        ("the start frame", f"{frame_range(scene)[0]}"),
        ("the frame rate", f"{scene.render.fps}/{scene.render.fps_base}"),
        (
            "the scene gravity",
            "keyed" if "gravity" in keyed else f"{tuple(scene.gravity)}{scene.use_gravity}",
        ),
    ]
    if keyed:  # the scene's keyed settings (gravity, ground friction, ...): their keys
        items.append(
            (
                "keyframes of the scene settings",
                _digest(lambda h: _drivers_signature(_curves_signature(scene, h)[0], h)),
            )
        )
    if field_objects(scene):  # only then: bakes made before fields were read stay current
        items.append(("the force fields", fields_text(scene)))
    start = frame_range(scene)[0]
    if has_handoff(scene, start):  # the bodies' keys etc. are in "the animation of ..."
        items.append(("the start frame's animated velocity", f"frames {start - 1}-{start}"))
    return items


def _settings_text(scene) -> str:
    """The scene settings that shape the simulated motion, as text (cheap)."""
    return "".join(f"{label}={value};" for label, value in _settings_items(scene))


def _object_text(obj) -> str:
    """An object's name and IPC settings, as text (cheap).  A keyed material value is left
    out: its keys are in the object's animation, its current value depends on the frame."""
    s = obj.ipc
    keyed = keyed_paths(obj)
    E, rho, mu = (
        "keyed" if f"ipc.{name}" in keyed else getattr(s, name)
        for name in ("youngs_modulus", "density", "friction")
    )
    nu = "" if s.body_type == "RIGID" else s.poisson_ratio  # a rigid body has no elastic energy
    text = f"{obj.name}{s.role}{E}{nu}{rho}{mu}{s.pin_group}"
    text += f"{tuple(s.initial_velocity)}{s.initial_angular_velocity}"
    if s.stiffness_group:  # only then: bakes made before painted stiffness stay current
        text += f"{s.stiffness_group}{s.stiffness_min}{s.stiffness_max}"
    if s.body_type == "RIGID":  # only then: bakes made before body types stay current
        text += "RIGID"
    if s.body_type == "STIFF":
        text += f"STIFF{s.modes}"
    return text + link_sig.later_object_text(obj)  # '' at the defaults


def _digest(fill) -> str:
    h = hashlib.sha1()
    fill(h)
    return h.hexdigest()


def signature_parts(scene, bodies, colliders) -> dict[str, str]:
    """The bake's inputs, each as a short text or digest under a label that names it for the
    artist ("setting 'Substeps'", "the mesh of 'Box'", ...): :func:`input_signature` hashes
    them, :func:`changed_inputs` names the ones that differ between two such dicts."""
    parts = dict(_settings_items(scene))
    for obj in field_objects(scene):  # a field's motion and keyed settings
        parts[f"the animation of force field '{obj.name}'"] = _digest(
            lambda h, o=obj: _motion_signature(o, h)
        )
    for obj in list(bodies) + list(colliders):
        role = "body" if obj in bodies else ("obstacle" if is_obstacle_body(obj, bodies) else "collider")
        name = f"'{obj.name}'"
        parts[f"{role} {name}"] = _digest(lambda h, o=obj: h.update(_object_text(o).encode()))
        if obj.type == "MESH":

            def mesh(h, o=obj):
                h.update(local_coords(o.data).tobytes())
                loops = np.empty(len(o.data.loops), dtype=np.int32)
                o.data.loops.foreach_get("vertex_index", loops)
                h.update(loops.tobytes())

            parts[f"the mesh of {name}"] = _digest(mesh)
        else:
            parts[f"the shape of {name}"] = _digest(lambda h, o=obj: _curve_signature(o.data, h))
        if role == "obstacle":  # moves with its bake
            s = obj.ipc
            parts[f"the bake of {name}"] = f"{s.is_baked}{s.bake_hash}{s.bake_frame_start}-{s.bake_frame_end}"
        elif role == "collider":
            parts[f"the shape keys or modifiers of {name}"] = _digest(
                lambda h, o=obj: _deformation_signature(o, h)
            )
        parts[f"the animation of {name}"] = _digest(lambda h, o=obj: _motion_signature(o, h))
    for empty in link_sig.link_empties_of(scene, bodies):
        parts[f"link '{empty.name}'"] = _digest(
            lambda h, e=empty: (
                h.update(link_sig.link_text(e).encode()),
                [_motion_signature(o, h) for o in link_sig.moved_objects(e)],
            )
        )
    return parts


def input_signature(scene, bodies, colliders) -> str:
    """Hash of meshes, materials, collider motion and settings (cheap: no frame evaluation)."""
    h = hashlib.sha1()
    for label, value in signature_parts(scene, bodies, colliders).items():
        h.update(f"{label}\0{value}\0".encode())
    return h.hexdigest()


def changed_inputs(old: dict, new: dict) -> list[str]:
    """What differs between two :func:`signature_parts`, in words: "setting 'Substeps' (4 -> 8)",
    "the mesh of 'Box'", "collider 'Lid' (new)", "body 'Ball' (gone)"."""
    roles = ("body '", "collider '", "obstacle '")
    old, new = {**_LATER_DEFAULTS, **old}, {**_LATER_DEFAULTS, **new}  # left out at their default
    added = [label for label in new if label not in old]
    gone = [label for label in old if label not in new]
    # an object that came or went is named once, by its role
    whole = [label[label.index("'") :] for label in added + gone if label.startswith(roles)]
    out = []
    for label, value in new.items():
        if label in old and old[label] != value:
            plain = label.startswith(("setting", "the start", "the frame", "the scene"))
            out.append(f"{label} ({old[label]} -> {value})" if plain else label)
    for labels, what in ((added, "new"), (gone, "gone")):
        for label in labels:
            if label.startswith(roles) or not any(label.endswith(name) for name in whole):
                out.append(f"{label} ({what})")
    return out


def is_outdated(context, obj) -> bool:
    """True if the inputs of obj's bake changed. Objects baked together share one stored hash,
    which identifies the group to re-hash together with the current colliders."""
    if not obj.ipc.is_baked:
        return False
    group, colliders = _bake_group(context, obj)
    try:
        return input_signature(context.scene, group, colliders) != obj.ipc.bake_hash
    except (AttributeError, TypeError):  # e.g. a collider that is no mesh
        return True


def _bake_group(context, obj):
    """The objects baked together with obj (sorted by name) and their current obstacles."""
    objs = list(context.view_layer.objects)
    group = sorted(
        (o for o in objs if o.type == "MESH" and o.ipc.is_baked and o.ipc.bake_hash == obj.ipc.bake_hash),
        key=lambda o: o.name,
    )
    return group, obstacles(objs, group)


# ----------------------------------------------------------------------------- panel cache
#
# The panel redraws often (mouse moves, progress, playback); hashing every mesh of the bake
# each time would make it sluggish with big meshes. is_outdated_cached() re-hashes only when
# something may have changed, judged by a key made of two parts:
#
# - a generation counter bumped by depsgraph_update_post, undo_post, redo_post and load_post:
#   every edit of a mesh (edit mode, Python with mesh.update(), operators), of an F-curve,
#   a constraint, a driver or a transform tags the depsgraph, and Blender evaluates it (and
#   runs the handler) before the UI redraws. A frame change does not run depsgraph_update_post,
#   so playback does not re-hash (the signature does not depend on the current frame).
# - what can be read cheaply without the depsgraph: the scene settings and, for each object of
#   the bake and each obstacle, its name, pointers of the object and its data, vertex and loop
#   counts and its IPC settings. This catches a property set from Python that has not been
#   evaluated yet (no depsgraph update ran since), and objects added, removed or renamed.

_generation = [0]
_cache: dict = {}
CACHE_HANDLERS = ("depsgraph_update_post", "undo_post", "redo_post", "load_post")


@bpy.app.handlers.persistent
def _data_changed(*_args):
    _generation[0] += 1
    _cache.clear()


def add_handlers():
    for name in CACHE_HANDLERS:
        handlers = getattr(bpy.app.handlers, name)
        if _data_changed not in handlers:
            handlers.append(_data_changed)


def remove_handlers():
    for name in CACHE_HANDLERS:
        handlers = getattr(bpy.app.handlers, name)
        while _data_changed in handlers:
            handlers.remove(_data_changed)
    _cache.clear()


def _cheap_key(context, obj):
    group, colliders = _bake_group(context, obj)
    objs = []
    for o in group + colliders:
        data = o.data
        counts = (len(data.vertices), len(data.loops)) if o.type == "MESH" else ()
        objs.append(
            (
                _object_text(o),
                o.as_pointer(),
                data.as_pointer() if data is not None else 0,
                counts,
                o.ipc.is_baked,
                o.ipc.bake_hash,
            )
        )
    scene = context.scene
    return (_generation[0], scene.as_pointer(), obj.ipc.bake_hash, _settings_text(scene), tuple(objs))


def is_outdated_cached(context, obj) -> bool:
    """:func:`is_outdated` for the panel: recomputed only when the key above changes."""
    if not obj.ipc.is_baked:
        return False
    key = _cheap_key(context, obj)
    if key not in _cache:
        if len(_cache) > 256:
            _cache.clear()
        _cache[key] = is_outdated(context, obj)
    return _cache[key]
