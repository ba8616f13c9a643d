"""The documented wedge command, run as a separate `blender -b` process on a saved .blend
(Debian-blender leg only: needs the Blender executable and the installed add-on); Blender must
exit by itself with status 0 (a farm job hangs otherwise), and 1 when a setting is unknown."""

import os
import subprocess
import tempfile
from pathlib import Path

import bpy
import harness

LEGS = {"blender"}
SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "wedge.py"


def setup_function():
    harness.setup()


def teardown_function():
    harness.teardown()


def _wedge(blend, *args):
    cmd = [bpy.app.binary_path, "-b", "--factory-startup", str(blend), "--python", str(SCRIPT), "--", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=dict(os.environ), check=False)


def test_wedge_command_line():
    harness.sub("examples").build_compressing_squares(bpy.context, n_seg=2, fps=50, substeps=2, n_frames=20)
    with tempfile.TemporaryDirectory() as tmp:
        blend, out = Path(tmp) / "shot.blend", Path(tmp) / "wedge"
        bpy.ops.wm.save_as_mainfile(filepath=str(blend))
        proc = _wedge(blend, "--set", "mu=0,0.8", "--out", str(out))
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert sorted(p.name for p in out.iterdir()) == [
            "shot_friction-0.8.blend",
            "shot_friction-0.blend",
            "shot_wedge.png",
        ]
        bpy.ops.wm.open_mainfile(filepath=str(out / "shot_friction-0.8.blend"))
        top = bpy.data.objects["IPC_Square_Top"]
        assert top.ipc.is_baked and abs(top.ipc.friction - 0.8) < 1e-6
        proc = _wedge(blend, "--set", "bogus=1", "--out", str(out))
        assert proc.returncode == 1 and "Unknown setting 'bogus'" in proc.stderr, proc.stdout + proc.stderr
