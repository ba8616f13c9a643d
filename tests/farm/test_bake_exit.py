"""farm/ipc_bake.py, the headless bake a farm task runs: it bakes, leaves nothing of the add-on
registered and the process quits by itself (a registered Operator hangs the bpy 4.5 wheel at
exit), in Debian's Blender 3.4 and in the bpy 5.0.1 wheel; a failed bake exits 1 with its message
and writes nothing."""

from __future__ import annotations

import json

import pytest
from conftest import BAKE_SCRIPT, FARM, blender_exe, bpy_python, output_of, run

EXIT_TIMEOUT = 120  # a tiny bake takes a few seconds; reaching this means the process hung

# Runs the bake script's main() in the process under test, then reports what is still
# registered and what the written file holds, and ends the way a farm task ends.
_PROBE = """
import json, os, sys
sys.path.insert(0, os.environ["IPC_FARM_DIR"])
import bpy, ipc_bake
code = ipc_bake.main(json.loads(os.environ["IPC_BAKE_ARGS"]))
left = [n for n in ("IPC_OT_bake", "IPC_OT_continue_bake", "IPC_OT_delete_bake")
        if bpy.types.Operator.bl_rna_get_subclass_py(n) is not None]
left += [f"{t.__name__}.ipc" for t in (bpy.types.Object, bpy.types.Scene) if "ipc" in t.bl_rna.properties]
keys = {}
if code == 0:
    bpy.ops.wm.open_mainfile(filepath=os.environ["IPC_BAKE_OUTPUT"])
    keys = {o.name: len(o.data.shape_keys.key_blocks) for o in bpy.data.objects
            if o.type == "MESH" and o.data.shape_keys is not None}
print("PROBE " + json.dumps({"code": code, "left": left, "keys": keys}), flush=True)
if code:
    sys.exit(code)
"""


def probe(runner: str, blend, output, env, *extra) -> tuple[dict, object]:
    args = ["--input", str(blend), "--output", str(output), *map(str, extra)]
    env = dict(env, IPC_FARM_DIR=str(FARM), IPC_BAKE_ARGS=json.dumps(args), IPC_BAKE_OUTPUT=str(output))
    if runner == "blender-3.4":
        cmd = [blender_exe(), "-b", "--factory-startup", "--python-exit-code", "1", "--python-expr", _PROBE]
    else:
        cmd = [bpy_python(), "-c", _PROBE]
    proc = run(cmd, env, timeout=EXIT_TIMEOUT)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("PROBE ")]
    assert len(lines) == 1, output_of(proc)
    return json.loads(lines[0].removeprefix("PROBE ")), proc


@pytest.mark.parametrize("runner", ["blender-3.4", "bpy-5.0"])
def test_bake_unregisters_and_quits(runner, tmp_path, farm_env, addon_zip, example_blend):
    output = tmp_path / "baked.blend"
    report, proc = probe(runner, example_blend, output, farm_env, "--addon", addon_zip, "--frames", "2-5")
    assert proc.returncode == 0 and report["code"] == 0, output_of(proc)
    assert "blender-ipc bake: OK frames 2-5, 2 bodies" in proc.stdout, output_of(proc)
    assert report["left"] == [], "still registered after the bake: " + ", ".join(report["left"])
    assert report["keys"] == {"IPC_Square_Bottom": 4, "IPC_Square_Top": 4}


def test_failed_bake_exits_1_with_message(tmp_path, farm_env, addon_zip, example_blend):
    """A scene without bodies (roles switched off) cannot be baked: the documented command line
    exits 1 by itself, prints the add-on's message and writes no output file."""
    no_bodies = tmp_path / "no_bodies.blend"
    strip = (
        f"import sys; sys.path.insert(0, {str(FARM)!r}); import bpy, ipc_bake\n"
        f"with ipc_bake.addon_enabled({str(addon_zip)!r}):\n"
        "    for obj in bpy.data.objects: obj.ipc.role = 'NONE'\n"
        f"    bpy.ops.wm.save_as_mainfile(filepath={str(no_bodies)!r})\n"
    )
    cmd = [blender_exe(), "-b", "--factory-startup", example_blend, "--python-exit-code", "1"]
    proc = run([*cmd, "--python-expr", strip], farm_env, timeout=EXIT_TIMEOUT)
    assert proc.returncode == 0 and no_bodies.exists(), output_of(proc)

    output = tmp_path / "baked.blend"
    cmd = [blender_exe(), "-b", "--factory-startup", no_bodies, "--python-exit-code", "1"]
    cmd += ["--python", BAKE_SCRIPT, "--", "--output", output, "--addon", addon_zip]
    proc = run(cmd, farm_env, timeout=EXIT_TIMEOUT)
    assert proc.returncode == 1, output_of(proc)
    assert "blender-ipc bake: FAILED: Nothing to bake" in proc.stderr, output_of(proc)
    assert not output.exists()


def test_bad_frames_exit_2(tmp_path, farm_env, example_blend):
    cmd = [blender_exe(), "-b", "--factory-startup", example_blend, "--python-exit-code", "1"]
    cmd += ["--python", BAKE_SCRIPT, "--", "--output", tmp_path / "b.blend", "--frames", "5-3"]
    proc = run(cmd, farm_env, timeout=EXIT_TIMEOUT)
    assert proc.returncode == 2 and "the end must come after the start" in proc.stderr, output_of(proc)
