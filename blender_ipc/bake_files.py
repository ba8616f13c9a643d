"""Where the files of a bake live, and which exist: every file the add-on writes besides the
.blend (PC2 caches, Alembic and USD exports) is in ``//<blend name>_ipc/`` next to the .blend,
referred to by relative paths, so the .blend and the folder can be moved together (to a farm).

The exports (Alembic, USD) are listed in the scene's ID property ``_ipc_exports`` (path relative
to the .blend -> names of the objects in it), so Delete Bake removes an export that holds a body
whose bake is deleted. A PC2 cache is found through its Mesh Cache modifier (:mod:`pc2`).
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import bpy

from .common import IPCError

EXPORTS_PROPERTY = "_ipc_exports"


def cache_folder() -> Path:
    """The absolute folder of the open .blend's files (``<blend dir>/<blend name>_ipc``)."""
    if not bpy.data.filepath:
        raise IPCError("Save the .blend first: the files of a bake are written next to it")
    blend = Path(bpy.data.filepath)
    return blend.parent / f"{blend.stem}_ipc"


def file_name(obj, ext: str) -> str:
    return f"{bpy.path.clean_name(obj.name)}.{ext}"


def relative(path: Path) -> str:
    """path relative to the .blend, as Blender writes it (``//folder/file``)."""
    return bpy.path.relpath(str(path))


def remove_folder_if_empty(folder: Path):
    """The folder goes with its last file."""
    try:
        if folder.name.endswith("_ipc") and folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()
    except OSError:
        pass  # e.g. a read-only parent: an empty folder left behind is harmless


def set_aside(paths) -> list[tuple[Path, Path]]:
    """Rename the existing files of paths to ``<name>.old`` before a new bake replaces them
    (a read-only folder fails here, before the scene changes: all are put back and IPCError
    names the file). Returns the pairs for :func:`put_back` and :func:`discard`."""
    moved: list[tuple[Path, Path]] = []
    for path in paths:
        if not path.is_file():
            continue
        old = path.with_name(path.name + ".old")
        try:
            path.rename(old)
        except OSError as err:
            put_back(moved)
            raise IPCError(
                f"Could not remove '{path}': {err.strerror or err}; nothing was changed (the earlier "
                "bake and its files are as they were)"
            ) from err
        moved.append((path, old))
    return moved


def put_back(moved):
    for path, old in reversed(moved):
        old.rename(path)


def discard(moved):
    """The files set aside go, and their folder with the last of them."""
    for _path, old in moved:
        with contextlib.suppress(OSError):  # renamed there a moment ago; a leftover is harmless
            old.unlink(missing_ok=True)
        remove_folder_if_empty(old.parent)


def record_export(scene, path: Path, objs):
    exports = dict(scene.get(EXPORTS_PROPERTY, {}))
    exports[relative(path)] = [o.name for o in objs]
    scene[EXPORTS_PROPERTY] = exports


def recorded_exports(scene) -> dict[str, list[str]]:
    return {k: list(v) for k, v in scene.get(EXPORTS_PROPERTY, {}).items()}


def exports_holding(scene, names) -> list[str]:
    """The recorded exports (paths relative to the .blend) holding any object of names."""
    names = set(names)
    return sorted(rel for rel, held in recorded_exports(scene).items() if names & set(held))


def remove_exports_of(scene, obj) -> list[str]:
    """Remove the exports that hold obj (its bake is being deleted); returns the files removed.
    A file that cannot be removed raises IPCError before anything else changes."""
    exports = recorded_exports(scene)
    doomed = [rel for rel, names in exports.items() if obj.name in names]
    removed = []
    for rel in doomed:
        path = Path(bpy.path.abspath(rel))
        try:
            path.unlink(missing_ok=True)
        except OSError as err:
            raise IPCError(
                f"Could not remove '{path}': {err.strerror or err}; the bake of '{obj.name}' is unchanged"
            ) from err
        removed.append(str(path))
        del exports[rel]
        remove_folder_if_empty(path.parent)
    if doomed:
        scene[EXPORTS_PROPERTY] = exports
    return removed
