"""Writing and deleting a bake: one absolute shape key per frame (``use_relative = False``); the
first key (the basis) is the untouched rest mesh, so frame_start shows the original coordinates
bit for bit, and an ``eval_time`` F-curve with LINEAR keys maps scene frames onto the keys."""

from __future__ import annotations

import bpy
import numpy as np

from . import frame_diagnostics
from .bake_files import remove_exports_of
from .common import KEY_PREFIX, PLANE_AXES, IPCError, fcurves_of, is_our_bake
from .pc2 import cache_modifier, remove_cache
from .reading import BodyInput


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
    """Remove the bake: shape keys, their Key datablock and the eval_time action, or its PC2
    cache (Mesh Cache modifier and file), and the Alembic/USD exports that hold it."""
    if obj.type == "MESH" and obj.data.shape_keys is not None and not is_our_bake(obj):
        raise IPCError(f"'{obj.name}' has shape keys that are not an IPC bake; not deleting them")
    # the files first: one that cannot be removed leaves this object's bake as it was
    remove_exports_of(obj.users_scene[0] if obj.users_scene else bpy.context.scene, obj)
    remove_cache(obj)
    if obj.type == "MESH" and obj.data.shape_keys is not None:
        _remove_key_action(obj.data.shape_keys)
        obj.shape_key_clear()
    s = obj.ipc
    s.is_baked, s.bake_hash, s.bake_partial, s.bake_message = False, "", False, ""
    s.bake_frame_start = s.bake_frame_end = s.bake_frame_goal = 0


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
    frame_diagnostics.remove(context.scene)


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


def begin_keys(obj, frame_start: int):
    """The basis key (the untouched rest mesh, shown at frame_start), the absolute Key and its
    own eval_time action; returns the Key. The object must have no shape keys."""
    basis = obj.shape_key_add(name=f"{KEY_PREFIX}{frame_start:05d}", from_mix=False)
    key = obj.data.shape_keys
    key.name = f"{KEY_PREFIX}{obj.name}"
    key.use_relative = False
    basis.interpolation = "KEY_LINEAR"
    # Our own action, assigned before keying: Blender 4.4+ would otherwise key eval_time into
    # the object's action (a new slot in the user's own animation) that Delete Bake must keep.
    key.animation_data_create()
    key.animation_data.action = bpy.data.actions.new(f"{KEY_PREFIX}{obj.name}")
    _key_frame(key, basis, frame_start)
    return key


def add_frame_key(obj, key, local: np.ndarray, frame: int):
    """The next absolute key (object-local coordinates (n, 3)), shown at `frame`."""
    kb = obj.shape_key_add(name=f"{KEY_PREFIX}{frame:05d}", from_mix=False)
    kb.data.foreach_set("co", local.ravel())
    kb.interpolation = "KEY_LINEAR"
    _key_frame(key, kb, frame)


def _key_frame(key, kb, frame: int):
    # kb.frame is where Blender placed the key on the eval_time axis (steps of ~10).
    key.eval_time = kb.frame
    key.keyframe_insert("eval_time", frame=frame)
    for fc in fcurves_of(key):
        if fc.data_path == "eval_time" and len(fc.keyframe_points):
            fc.keyframe_points[-1].interpolation = "LINEAR"


def remove_keys(obj):
    """Shape keys, Key datablock and their eval_time action; nothing else (no properties).
    Blender 3.4's shape_key_clear() leaves the Key datablock in bpy.data (until the file is
    saved and reloaded; 5.0 frees it), so a Key left behind is removed here explicitly."""
    key = obj.data.shape_keys
    if key is not None:
        _remove_key_action(key)
        pointer = key.as_pointer()
        obj.shape_key_clear()
        left = [k for k in bpy.data.shape_keys if k.as_pointer() == pointer]
        if left:
            bpy.data.batch_remove(left)


def append_bake(obj, local_frames: np.ndarray, first_frame: int):
    """Continue Bake: the next absolute keys after the existing bake's, from first_frame on,
    keyed as write_bake keys them."""
    key = obj.data.shape_keys
    for k, co in enumerate(local_frames):
        add_frame_key(obj, key, co, first_frame + k)
    _set_linear(key, "eval_time")
    obj.active_shape_key_index = 0
    obj.data.update()


def write_bake(obj, local_frames: np.ndarray, frame_start: int):
    """One absolute shape key per frame; key 0 is the untouched rest mesh (= frame_start)."""
    if obj.data.shape_keys is not None or cache_modifier(obj) is not None:
        delete_bake(obj)
    key = begin_keys(obj, frame_start)
    for k in range(1, len(local_frames)):
        add_frame_key(obj, key, local_frames[k], frame_start + k)
    _set_linear(key, "eval_time")
    obj.active_shape_key_index = 0
    obj.data.update()
