"""Shared set-up for the add-on tests, used both by pytest (bpy wheel) and by
run_in_blender.py (Debian `blender -b`, add-on installed from the zip like a user would).

- pytest: the zip is built into a temp dir, extracted, and `blender_ipc` imported from there;
  each test registers the add-on in setup and unregisters it in teardown.
- run_in_blender.py: sets IPC_ADDON_MODULE to the installed module name; setup/teardown use
  addon_utils.enable/disable as the Preferences checkbox does.
"""

import importlib
import os
import sys
import tempfile
import zipfile
from pathlib import Path

import bpy
import numpy as np

ROOT = Path(__file__).resolve().parents[2]
_state = {"module": None, "tmp": None}


def build_zip(out_dir) -> Path:
    sys.path.insert(0, str(ROOT))
    try:
        import build_addon
    finally:
        sys.path.remove(str(ROOT))
    return build_addon.build(Path(out_dir))


def addon():
    """The add-on package: installed module (Blender leg) or imported from the built zip."""
    if _state["module"] is not None:
        return _state["module"]
    name = os.environ.get("IPC_ADDON_MODULE")
    if not name:
        _state["tmp"] = tempfile.TemporaryDirectory(prefix="ipc_addon_")
        tmp = Path(_state["tmp"].name)
        with zipfile.ZipFile(build_zip(tmp / "dist")) as zf:
            zf.extractall(tmp / "site")
        sys.path.insert(0, str(tmp / "site"))
        name = "blender_ipc"
        module = importlib.import_module(name)
        # Must come from the built zip, not from the source tree.
        assert Path(module.__file__).is_relative_to(tmp / "site"), module.__file__
    else:
        module = importlib.import_module(name)
    _state["module"] = module
    return module


def sub(name):
    return importlib.import_module(f"{addon().__name__}.{name}")


def setup():
    bpy.ops.wm.read_factory_settings(use_empty=True)
    mod = addon()
    if os.environ.get("IPC_ADDON_MODULE"):
        import addon_utils

        addon_utils.enable(mod.__name__, default_set=True, handle_error=_raise)
    else:
        mod.register()


def teardown():
    sub("operators").RunningBake.cancel()
    mod = addon()
    if os.environ.get("IPC_ADDON_MODULE"):
        import addon_utils

        addon_utils.disable(mod.__name__, default_set=True, handle_error=_raise)
    else:
        mod.unregister()


def _raise(err):
    raise err


# ----------------------------------------------------------------------------- scene helpers


def local_coords(mesh) -> np.ndarray:
    co = np.empty(len(mesh.vertices) * 3, dtype=np.float32)
    mesh.vertices.foreach_get("co", co)
    return co.reshape(-1, 3)


def evaluated_local(obj) -> np.ndarray:
    depsgraph = bpy.context.evaluated_depsgraph_get()
    return local_coords(obj.evaluated_get(depsgraph).data)


def snapshot(during_bake=False):
    """Everything a failed/cancelled bake must leave untouched.

    during_bake: the artist's data under the running modal bake's live view, which must be
    untouched too: the body objects show scratch meshes with the frames computed so far, so their
    own meshes are read instead, the scratch meshes with their keys and actions are not counted
    and the frame is the one the bake started at (the cursor follows the newest frame)."""
    scene = bpy.context.scene
    running = sub("operators").RunningBake
    if during_bake is True:  # animated objects where they were when the bake started
        now = (scene.frame_current, scene.frame_subframe)
        scene.frame_set(running.frame_before[0], subframe=running.frame_before[1])
        try:
            return snapshot(during_bake="at the start frame")
        finally:
            scene.frame_set(now[0], subframe=now[1])
    bpy.context.view_layer.update()  # matrix_world of objects moved by the test itself
    preview = running.job.preview if during_bake and running.job is not None else None
    own = {obj.name: mesh for obj, mesh, _ in preview.meshes} if preview else {}
    objs = {}
    for obj in bpy.data.objects:
        entry = [tuple(map(tuple, obj.matrix_world)), obj.ipc.is_baked, obj.ipc.bake_hash]
        if obj.type == "MESH":
            mesh = own.get(obj.name, obj.data)
            key = mesh.shape_keys
            entry += [
                local_coords(mesh).tobytes(),
                None if key is None else [kb.name for kb in key.key_blocks],
            ]
        objs[obj.name] = entry
    counts = {name: len(getattr(bpy.data, name)) for name in ("objects", "meshes", "actions", "shape_keys")}
    frame = (scene.frame_current, scene.frame_subframe)
    if during_bake:
        n = len(own)
        counts["meshes"] -= n
        counts["actions"] -= n
        counts["shape_keys"] -= n
        frame = running.frame_before
    stats = (scene.ipc.stat_frames, scene.ipc.stat_wall_time, scene.ipc.stat_message)
    return objs, counts, *frame, stats


def bake_error(operator="bake", **kwargs) -> str:
    """Run ipc.<operator> expecting failure; return the error text (bpy.ops raises on ERROR
    reports)."""
    try:
        result = getattr(bpy.ops.ipc, operator)(**kwargs)
    except RuntimeError as err:
        return str(err)
    raise AssertionError(f"{operator} did not fail: {result}")


class Reports:
    """Stands in for an operator's report(): records (kind set, message) pairs."""

    def __init__(self):
        self.reports = []

    def report(self, kind, message):
        self.reports.append((set(kind), message))


def make_mesh_object(name, verts, faces=(), edges=(), location=(0, 0, 0), role="BODY"):
    mesh = bpy.data.meshes.new(name)
    mesh.from_pydata([tuple(map(float, v)) for v in verts], list(edges), list(faces))
    mesh.update()
    obj = bpy.data.objects.new(name, mesh)
    obj.location = location
    bpy.context.scene.collection.objects.link(obj)
    obj.ipc.role = role
    return obj


def pinned_block(side):
    """A 2 x 2 quad block of the given side on z = 0, glued in place: every vertex in its
    pinned vertex group."""
    t = np.linspace(-side / 2, side / 2, 3)
    xs, zs = np.meshgrid(t, t + side / 2)
    verts = np.column_stack([xs.ravel(), np.zeros(9), zs.ravel()])
    quads = [(0, 1, 4, 3), (1, 2, 5, 4), (3, 4, 7, 6), (4, 5, 8, 7)]
    obj = make_mesh_object("Block", verts, faces=quads)
    group = obj.vertex_groups.new(name="glue")
    group.add(list(range(len(obj.data.vertices))), 1.0, "REPLACE")
    obj.ipc.pin_group = "glue"
    return obj
