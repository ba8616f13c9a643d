"""PC2 point caches: the file format, where the files live, and the Mesh Cache modifier that
plays them.

A PC2 file is a 32-byte little-endian header followed by the samples, as Blender's Mesh Cache
modifier reads it (MOD_meshcache_pc2): ``char[12] "POINTCACHE2\\0"``, ``int32`` version (1),
``int32`` number of points, ``float32`` start frame, ``float32`` sample rate (frames per
sample), ``int32`` number of samples; then per sample and per point ``float32`` x, y, z.

The files live next to the .blend (:mod:`bake_files`); a file is written to a temporary name
first and renamed into place, so a failed write leaves the earlier file as it was.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

import bpy
import numpy as np

from .bake_files import remove_folder_if_empty
from .common import IPCError

MAGIC = b"POINTCACHE2\0"
HEADER = struct.Struct("<12siiffi")
# The add-on's modifier is known by its type and name (modifiers hold no custom properties); an
# artist's own Mesh Cache modifier under another name is left alone.
MODIFIER_NAME = "IPC Cache"


def write(path: str | Path, frames: np.ndarray, start: float, rate: float = 1.0) -> None:
    """Write frames (F, n, 3) as a PC2 file at path, atomically: into ``path.tmp`` first, then
    renamed over path; on any failure the temporary file is removed and path is untouched."""
    frames = np.ascontiguousarray(frames, dtype="<f4")
    n_samples, n_points, _ = frames.shape
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    try:
        with open(tmp, "wb") as f:
            f.write(HEADER.pack(MAGIC, 1, n_points, float(start), float(rate), n_samples))
            f.write(frames.tobytes())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def read(path: str | Path):
    """(start, rate, frames (F, n, 3) float32) of a PC2 file; ValueError if it is not one."""
    data = Path(path).read_bytes()
    if len(data) < HEADER.size:
        raise ValueError(f"{path}: too short for a PC2 header")
    magic, _version, n_points, start, rate, n_samples = HEADER.unpack_from(data)
    if magic != MAGIC:
        raise ValueError(f"{path}: not a PC2 file")
    body = np.frombuffer(data, dtype="<f4", offset=HEADER.size)
    if body.size != n_samples * n_points * 3:
        raise ValueError(f"{path}: {body.size} floats for {n_samples} samples of {n_points} points")
    return start, rate, body.reshape(n_samples, n_points, 3)


def cache_modifier(obj):
    """The add-on's Mesh Cache modifier on obj, or None."""
    for mod in obj.modifiers:
        if mod.type == "MESH_CACHE" and mod.name == MODIFIER_NAME:
            return mod
    return None


def add_modifier(obj, filepath: str, frame_start: int):
    """A Mesh Cache modifier (first in the stack) that plays the PC2 file at filepath so that
    its first sample is shown at frame_start, one sample per scene frame."""
    mod = obj.modifiers.new(MODIFIER_NAME, "MESH_CACHE")
    mod.cache_format = "PC2"
    mod.filepath = filepath
    mod.time_mode = "FRAME"
    mod.play_mode = "SCENE"
    mod.frame_start = float(frame_start)
    mod.frame_scale = 1.0
    mod.interpolation = "LINEAR"
    mod.deform_mode = "OVERWRITE"
    mod.forward_axis, mod.up_axis = "POS_Y", "POS_Z"  # the file is in object space as is
    if obj.modifiers[0] != mod:  # first: the cache replaces the rest coordinates
        _move_first(obj, mod)
    return mod


def _move_first(obj, mod):
    index = list(obj.modifiers).index(mod)
    if hasattr(obj.modifiers, "move"):  # Blender 3.5+
        obj.modifiers.move(index, 0)
    else:
        with bpy.context.temp_override(object=obj):
            bpy.ops.object.modifier_move_to_index(modifier=mod.name, index=0)


def remove_cache(obj, keep_file: bool = False) -> list[str]:
    """Remove the add-on's Mesh Cache modifier and (unless keep_file) its PC2 file, the file
    first: if it cannot be removed, nothing changes (IPCError). Returns the files removed."""
    mod = cache_modifier(obj)
    if mod is None:
        return []
    path = Path(bpy.path.abspath(mod.filepath))
    removed = []
    if not keep_file and path.is_file():
        try:
            path.unlink()
        except OSError as err:
            raise IPCError(
                f"Could not remove '{path}': {err.strerror or err}; the bake of '{obj.name}' is unchanged"
            ) from err
        removed.append(str(path))
        remove_folder_if_empty(path.parent)
    obj.modifiers.remove(mod)
    return removed
