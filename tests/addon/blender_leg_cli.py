"""The documented render-farm command, run as a separate `blender -b` process on a saved .blend
(Debian-blender leg only: needs the Blender executable and the installed add-on)."""

import os
import subprocess
import tempfile
from pathlib import Path

import bpy
import harness

LEGS = {"blender"}


def setup_function():
    harness.setup()


def teardown_function():
    harness.teardown()


def test_command_line_bake_of_saved_file():
    harness.sub("examples").build_compressing_squares(bpy.context, n_seg=2, fps=50, substeps=2, n_frames=5)
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "scene.blend")
        bpy.ops.wm.save_as_mainfile(filepath=path)
        cmd = [
            bpy.app.binary_path,
            "-b",
            "--factory-startup",
            path,
            "--addons",
            harness.addon().__name__,
            "--python-exit-code",
            "1",
            "--python-expr",
            "import bpy; bpy.ops.ipc.bake(target='SCENE'); bpy.ops.wm.save_mainfile()",
        ]
        proc = subprocess.run(
            cmd, capture_output=True, text=True, timeout=300, env=dict(os.environ), check=False
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
        bpy.ops.wm.open_mainfile(filepath=path)
        top = bpy.data.objects["IPC_Square_Top"]
        assert len(top.data.shape_keys.key_blocks) == 5

        # A failing bake exits non-zero (here: nothing to bake).
        bpy.data.objects["IPC_Square_Top"].ipc.role = "NONE"
        bpy.data.objects["IPC_Square_Bottom"].ipc.role = "NONE"
        bpy.ops.wm.save_mainfile()
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)
        assert proc.returncode != 0 and "Nothing to bake" in proc.stdout + proc.stderr
