"""Other stores and files of a finished bake: the PC2 point cache played by a Mesh Cache
modifier (instead of the shape keys, for long bakes), and Alembic / USD files written by
Blender's own exporters where the build has them.

Moving a bake to PC2 (and back) is lossless: both stores hold the same float32 object-local
coordinates per frame. The bake itself (and Continue Bake) works on shape keys; a bake stored
as PC2 is moved back to shape keys before it is continued.

Every file lives in ``//<blend name>_ipc/`` next to the .blend (:mod:`bake_files`). A
failed write (read-only folder, full disk) leaves the scene and the earlier bake unchanged and
raises :class:`IPCError` saying which file and why.
"""

from __future__ import annotations

from pathlib import Path

import bpy
import numpy as np

from . import bake_files, pc2
from .common import IPCError, is_our_bake
from .shape_keys import remove_keys, write_bake


def baked_frames(obj) -> np.ndarray:
    """The bake of obj as object-local coordinates per frame (F, n, 3) float32, from its shape
    keys (key 0 = the first baked frame) or its PC2 cache."""
    mod = pc2.cache_modifier(obj)
    if mod is not None:
        return pc2.read(bpy.path.abspath(mod.filepath))[2]
    if not (obj.ipc.is_baked and is_our_bake(obj)):
        raise IPCError(f"'{obj.name}' holds no IPC bake")
    blocks = obj.data.shape_keys.key_blocks
    out = np.empty((len(blocks), len(obj.data.vertices) * 3), dtype=np.float32)
    for k, kb in enumerate(blocks):
        kb.data.foreach_get("co", out[k])
    return out.reshape(len(blocks), -1, 3)


def files_of(scene, objs) -> list[Path]:
    """The files a new bake of objs replaces: their PC2 caches and the exports holding them."""
    paths = [Path(bpy.path.abspath(m.filepath)) for m in map(pc2.cache_modifier, objs) if m is not None]
    exports = bake_files.exports_holding(scene, [o.name for o in objs])
    return paths + [Path(bpy.path.abspath(rel)) for rel in exports]


def is_stored_as_pc2(obj) -> bool:
    return obj.type == "MESH" and pc2.cache_modifier(obj) is not None


def _write_failure(path: Path, err: OSError, what: str) -> IPCError:
    reason = err.strerror or str(err)
    return IPCError(f"Could not write '{path}': {reason}; {what}")


def move_to_pc2(objs) -> list[Path]:
    """Store the bakes of objs (shape keys) as PC2 files with a Mesh Cache modifier each and
    remove their shape keys. All files are written before the scene changes; if one cannot be
    written, those written so far are removed and nothing changes."""
    todo = [o for o in objs if not is_stored_as_pc2(o)]
    for obj in todo:
        if not (obj.ipc.is_baked and is_our_bake(obj)):
            raise IPCError(f"'{obj.name}' has no baked shape keys to store as PC2")
    folder = bake_files.cache_folder()
    written: list[Path] = []
    target = folder
    try:
        folder.mkdir(exist_ok=True)
        for obj in todo:
            target = folder / bake_files.file_name(obj, "pc2")
            pc2.write(target, baked_frames(obj), start=obj.ipc.bake_frame_start)
            written.append(target)
    except OSError as err:
        for path in written:
            path.unlink(missing_ok=True)
        bake_files.remove_folder_if_empty(folder)
        raise _write_failure(target, err, "the bake is unchanged (still in shape keys)") from err
    for obj, path in zip(todo, written, strict=True):
        remove_keys(obj)
        pc2.add_modifier(obj, bake_files.relative(path), obj.ipc.bake_frame_start)
        obj.data.update()
    return written


def move_to_keys(objs) -> int:
    """Put the bakes of objs stored as PC2 back into shape keys; the modifier and the file go.
    Returns how many were moved."""
    todo = [o for o in objs if is_stored_as_pc2(o)]
    for obj in todo:
        frames = baked_frames(obj)
        if frames.shape[1] != len(obj.data.vertices):
            raise IPCError(
                f"'{obj.name}': its PC2 cache has {frames.shape[1]} points for "
                f"{len(obj.data.vertices)} vertices; bake again"
            )
        path = Path(bpy.path.abspath(pc2.cache_modifier(obj).filepath))
        try:  # the file first (the frames are in memory): one that cannot go changes nothing
            path.unlink(missing_ok=True)
        except OSError as err:
            raise IPCError(
                f"Could not remove '{path}': {err.strerror or err}; the bake of '{obj.name}' is "
                "unchanged (still in PC2)"
            ) from err
        pc2.remove_cache(obj, keep_file=True)  # write_bake must not delete the bake (its records)
        write_bake(obj, frames, obj.ipc.bake_frame_start)
        bake_files.remove_folder_if_empty(path.parent)
    return len(todo)


# ----------------------------------------------------------------------------- Alembic / USD

FORMATS = {
    # format: (exporter operator, importer operator, build option, file extension)
    "ALEMBIC": ("alembic_export", "alembic_import", "alembic", "abc"),
    "USD": ("usd_export", "usd_import", "usd", "usdc"),
}
TITLES = {"ALEMBIC": "Alembic", "USD": "USD"}


def has_operator(name: str) -> bool:
    """Whether bpy.ops.wm.<name> exists in this build (``hasattr`` is always True for
    bpy.ops, and Debian's Blender 3.4 is built without Alembic and USD)."""
    try:
        getattr(bpy.ops.wm, name).get_rna_type()
    except (KeyError, AttributeError, RuntimeError):
        return False
    return True


def available(fmt: str) -> bool:
    export, _imp, option, _ext = FORMATS[fmt]
    return bool(getattr(bpy.app.build_options, option, False)) and has_operator(export)


def _options(op_name: str, wanted: dict) -> dict:
    """The options this build's operator has (they differ between Blender versions)."""
    known = {p.identifier for p in getattr(bpy.ops.wm, op_name).get_rna_type().properties}
    return {k: v for k, v in wanted.items() if k in known}


def export_file(context, objs, fmt: str) -> Path:
    """Write the baked bodies objs over their baked frames to ``//<blend>_ipc/<blend>.<ext>``
    with Blender's exporter for fmt ("ALEMBIC" or "USD"). Selection, active object and frame
    range are restored; a failure leaves no file behind (an earlier export is kept)."""
    export, _imp, _option, ext = FORMATS[fmt]
    if not available(fmt):
        raise IPCError(
            f"This Blender build ({bpy.app.version_string}) has no {TITLES[fmt]} exporter; "
            "use PC2, or a Blender build from blender.org"
        )
    if not objs:
        raise IPCError(f"Nothing to export to {TITLES[fmt]}: no baked body")
    start = min(o.ipc.bake_frame_start for o in objs)
    end = max(o.ipc.bake_frame_end for o in objs)
    folder = bake_files.cache_folder()
    path = folder / f"{Path(bpy.data.filepath).stem}.{ext}"
    tmp = path.with_name(f"{path.stem}.tmp.{ext}")  # the exporter picks the format by extension
    scene = context.scene
    saved = (
        scene.frame_start,
        scene.frame_end,
        scene.frame_current,
        [o for o in context.view_layer.objects if o.select_get()],
        context.view_layer.objects.active,
    )
    try:
        folder.mkdir(exist_ok=True)
        _select_only(context, objs)
        scene.frame_start, scene.frame_end = start, end
        if fmt == "ALEMBIC":
            options = {"start": start, "end": end, "selected": True, "flatten": False}
            options.update(export_hair=False, export_particles=False, init_scene_frame_range=False)
        else:
            # Time-sampled points (not USD blend shapes), so any reader plays them as baked.
            options = {"selected_objects_only": True, "export_animation": True}
            options.update(export_shapekeys=False, export_materials=False, export_armatures=False)
        result = getattr(bpy.ops.wm, export)(filepath=str(tmp), **_options(export, options))
        if "FINISHED" not in result or not tmp.is_file():
            raise IPCError(f"Blender's {TITLES[fmt]} exporter did not write '{path}'")
        tmp.replace(path)
        bake_files.record_export(scene, path, objs)
    except OSError as err:
        raise _write_failure(path, err, "nothing was exported (an earlier export is kept)") from err
    finally:
        tmp.unlink(missing_ok=True)
        bake_files.remove_folder_if_empty(folder)
        scene.frame_start, scene.frame_end = saved[0], saved[1]
        scene.frame_set(saved[2])
        _select_only(context, saved[3])
        context.view_layer.objects.active = saved[4]
    return path


def _select_only(context, objs):
    for obj in context.view_layer.objects:
        obj.select_set(obj in objs)


def exported_files() -> list[Path]:
    """The files of the open .blend's cache folder (for the panel and Delete Bake's report)."""
    try:
        folder = bake_files.cache_folder()
    except IPCError:
        return []
    return sorted(folder.iterdir()) if folder.is_dir() else []
