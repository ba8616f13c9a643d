"""Per-frame diagnostics an artist can look at (issue 35, point 6).

The bake keeps one row per computed frame (from its substeps' StepStats and the check between
frames, blender_ipc/frame_motion.py) and keys the rows as animated custom properties of the
scene (``scene["ipc_min_gap"]`` ...), so they show in the Graph Editor next to the animation
and in scripts (scripts/render_filmstrip.py plots them under the film strip). A frame's value
is over its substeps: the smallest gap, the most active contacts, the Newton iterations summed,
the non-converged steps counted, the largest collider lag, the steps split by the solver's
motion check and the object pairs whose straight motion from the frame before crosses.
"""

from __future__ import annotations

import math

import bpy
import numpy as np

from .common import KEY_PREFIX, fcurves_of

# The scene's own action for the diagnostics when it has none (Delete Bake removes it).
ACTION_NAME = f"{KEY_PREFIX}Diagnostics"

# (custom property, what it is), in the order of a row's columns
PROPERTIES = (
    ("ipc_min_gap", "smallest gap between objects [m], -1: none within the Contact Gap"),
    ("ipc_active_contacts", "most contacts closer than the Contact Gap in one step"),
    ("ipc_newton_iterations", "Newton iterations of the frame's steps"),
    ("ipc_nonconverged_steps", "steps that did not converge"),
    ("ipc_collider_lag", "largest distance of a collider behind its animation [m]"),
    ("ipc_motion_splits", "steps the solver split because their straight motion crossed"),
    ("ipc_frame_crossings", "object pairs whose straight motion from the frame before crosses"),
)


def frame_row(advance) -> tuple[float, ...]:
    """One frame's diagnostics (PROPERTIES order) from a frame_motion.FrameAdvance."""
    st = advance.steps
    gap = min((s.min_distance for s in st), default=math.inf)
    return (
        gap if math.isfinite(gap) else -1.0,
        float(max((s.active_contacts for s in st), default=0)),
        float(sum(s.newton_iters for s in st)),
        float(sum(not s.converged for s in st)),
        float(max((s.collider_lag for s in st), default=0.0)),
        float(sum(s.motion_splits for s in st)),
        float(len(advance.pairs)),
    )


def key_scene(scene, first_frame: int, rows) -> None:
    """Key the rows (F, len(PROPERTIES)) on the scene's custom properties at frames first_frame,
    first_frame + 1, ...; keys of these properties from first_frame on are replaced (an earlier
    bake's, or a continued bake's frames after the one it continues from), earlier ones kept."""
    rows = np.asarray(rows, float).reshape(-1, len(PROPERTIES))
    if len(rows) == 0:
        return
    frames = first_frame + np.arange(len(rows), dtype=float)
    anim = scene.animation_data or scene.animation_data_create()
    if anim.action is None:  # our own (a scene action of the artist's gets the curves instead)
        anim.action = bpy.data.actions.new(ACTION_NAME)
    for k, (name, description) in enumerate(PROPERTIES):
        scene[name] = float(rows[-1, k])
        scene.id_properties_ui(name).update(description=description)
        _set_keys(scene, f'["{name}"]', frames, rows[:, k])


def _set_keys(scene, path, frames, values):
    """The f-curve `path` of the scene holds its keys before frames[0], then (frames, values)."""
    curve = _curve(scene, path)
    if curve is None:
        scene.keyframe_insert(path, frame=float(frames[0]))
        curve = _curve(scene, path)
    points = curve.keyframe_points
    old = np.empty(2 * len(points))
    points.foreach_get("co", old)
    old = old.reshape(-1, 2)
    kept = old[old[:, 0] < frames[0]]
    co = np.concatenate([kept, np.column_stack([frames, values])])
    points.clear()
    points.add(len(co))
    points.foreach_set("co", co.ravel())
    # constant: a frame's value holds until the next frame (no curve between the counts)
    points.foreach_set("interpolation", np.zeros(len(co), np.int32))
    curve.update()


def _curve(scene, path):
    return next((fc for fc in fcurves_of(scene) if fc.data_path == path), None)


def remove(scene) -> None:
    """Delete Bake: the diagnostics' properties and keys go (our own action with them)."""
    for name, _ in PROPERTIES:
        if scene.get(name) is not None:
            del scene[name]
    anim = scene.animation_data
    action = anim.action if anim else None
    if action is None:
        return
    if action.name.startswith(ACTION_NAME):
        anim.action = None
        if action.users == 0:
            bpy.data.actions.remove(action)
        return
    paths = {f'["{name}"]' for name, _ in PROPERTIES}
    for curves in _curve_collections(anim):
        for fc in [fc for fc in curves if fc.data_path in paths]:
            curves.remove(fc)


def _curve_collections(anim):
    """The f-curve collections of the scene's action: Action.fcurves (3.x/4.x) or its
    channelbags' (5.x)."""
    action = anim.action
    if hasattr(action, "fcurves"):
        return [action.fcurves]
    slot = getattr(anim, "action_slot", None)
    bags = [strip.channelbag(slot) for layer in action.layers for strip in layer.strips] if slot else []
    return [bag.fcurves for bag in bags if bag is not None]
