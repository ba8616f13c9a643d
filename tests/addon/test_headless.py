"""Headless use: bake_cli on a saved .blend (open, bake all bodies, save)."""

import tempfile
from pathlib import Path

import bpy
import harness


def setup_function():
    harness.setup()


def teardown_function():
    harness.teardown()


def test_bake_cli_on_saved_file():
    harness.sub("examples").build_compressing_squares(bpy.context, n_seg=2, fps=50, substeps=2, n_frames=6)
    for obj in bpy.context.view_layer.objects:
        obj.select_set(False)  # target="SCENE" needs no selection
    with tempfile.TemporaryDirectory() as tmp:
        src, out = str(Path(tmp) / "scene.blend"), str(Path(tmp) / "baked.blend")
        bpy.ops.wm.save_as_mainfile(filepath=src)
        bpy.ops.wm.read_factory_settings(use_empty=True)
        _reregister()
        assert harness.addon().bake_cli(filepath=src, output=out) == {"FINISHED"}
        bpy.ops.wm.open_mainfile(filepath=out)
        for name in ("IPC_Square_Top", "IPC_Square_Bottom"):
            obj = bpy.data.objects[name]
            assert obj.ipc.is_baked and len(obj.data.shape_keys.key_blocks) == 6
        bpy.ops.wm.open_mainfile(filepath=src)  # the source file itself is untouched
        assert bpy.data.objects["IPC_Square_Top"].data.shape_keys is None


def _reregister():
    # read_factory_settings resets the preferences, which disables add-ons enabled there.
    harness.teardown()
    harness.setup()
