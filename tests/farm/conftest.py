"""Shared set-up of the farm tests (scripts/run_tests.sh leg `farm`, run by .venv-np2's pytest):
the add-on zip and the example scene, built once per session in a temporary folder.

Programs: Debian's `blender` (or $BLENDER), `openjd` next to this interpreter (the `farm` extra),
the bpy 5.0.1 wheel's interpreter in .venv (or $BPY_PYTHON). A missing program fails the test
that needs it with the command that installs it: a farm test that did not run did not pass.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FARM = ROOT / "farm"
BAKE_SCRIPT = FARM / "ipc_bake.py"
# Enough for a few tiny bakes and renders on a busy CI machine; a hang ends here instead.
TIMEOUT = 240
SCENE_FRAMES = 6
RENDER_WIDTH = 160


def blender_exe() -> str:
    exe = shutil.which(os.environ.get("BLENDER", "blender"))
    if exe is None:
        pytest.fail("no `blender` on PATH: scripts/setup_env.sh blender installs Debian's", pytrace=False)
    return exe


def bpy_python() -> str:
    exe = Path(os.environ.get("BPY_PYTHON", ROOT / ".venv" / "bin" / "python"))
    if not exe.exists():
        pytest.fail(f"no bpy interpreter at {exe}: scripts/setup_env.sh bpy creates it", pytrace=False)
    return str(exe)


def run(cmd, env, timeout=TIMEOUT, cwd=None) -> subprocess.CompletedProcess:
    """Run cmd (no stdin), output captured; a timeout fails the test with what it printed."""
    try:
        return subprocess.run(
            [str(c) for c in cmd],
            env=env,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as err:
        out = (err.stdout or b"").decode(errors="replace") if isinstance(err.stdout, bytes) else err.stdout
        pytest.fail(f"{cmd[0]} did not end within {timeout} s (hang at exit?):\n{out}", pytrace=False)


def output_of(proc) -> str:
    return f"exit {proc.returncode}\n--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}"


@pytest.fixture(scope="session")
def farm_env(tmp_path_factory) -> dict:
    """The whole environment, with Blender's user folders in a scratch place (the farm runs
    must not depend on, or change, the preferences of whoever runs the tests)."""
    home = tmp_path_factory.mktemp("blender_user")
    env = dict(os.environ)
    env.update(
        BLENDER_USER_SCRIPTS=str(home / "scripts"),
        BLENDER_USER_CONFIG=str(home / "config"),
        PYTHONDONTWRITEBYTECODE="1",
    )
    return env


@pytest.fixture(scope="session")
def addon_zip(tmp_path_factory, farm_env) -> Path:
    out = tmp_path_factory.mktemp("dist")
    proc = run([sys.executable, ROOT / "build_addon.py", "--out", out], farm_env, cwd=ROOT)
    assert proc.returncode == 0, output_of(proc)
    (zip_path,) = out.glob("blender_ipc-*.zip")
    return zip_path


@pytest.fixture(scope="session")
def example_blend(tmp_path_factory, farm_env, addon_zip) -> Path:
    """The compressing squares (unbaked, SCENE_FRAMES frames) with a Workbench camera."""
    path = tmp_path_factory.mktemp("scene") / "scene.blend"
    cmd = [blender_exe(), "-b", "--factory-startup", "--python-exit-code", "1"]
    cmd += ["--python", FARM / "example_scene.py", "--", "--addon", addon_zip, "--output", path]
    cmd += ["--frames", SCENE_FRAMES, "--width", RENDER_WIDTH]
    proc = run(cmd, farm_env)
    assert proc.returncode == 0 and path.exists(), output_of(proc)
    return path


# Printed by blender_facts(): what a baked file holds, read back by Blender itself.
_FACTS = """
import bpy, json
scene = bpy.context.scene
facts = {"resolution": [scene.render.resolution_x * scene.render.resolution_percentage // 100,
                        scene.render.resolution_y * scene.render.resolution_percentage // 100],
         "fps": scene.render.fps / scene.render.fps_base, "gravity": list(scene.gravity),
         "bodies": {}}
for obj in scene.objects:
    keys = obj.data.shape_keys if obj.type == "MESH" else None
    if keys is None:
        continue
    frames = []
    for kb in keys.key_blocks:
        co = [0.0] * (3 * len(kb.data))
        kb.data.foreach_get("co", co)
        frames.append([sum(co[axis::3]) / len(kb.data) for axis in range(3)])
    facts["bodies"][obj.name] = {"keys": [kb.name for kb in keys.key_blocks], "centroids": frames,
                                 "friction": obj["ipc"]["friction"] if "ipc" in obj else None}
print("FACTS " + json.dumps(facts))
"""


def blender_facts(blend: Path, env) -> dict:
    """Shape keys (names, per-key centroid in object space), friction and render size of a .blend,
    read by a separate `blender -b` without the add-on (what a render node sees)."""
    cmd = [blender_exe(), "-b", "--factory-startup", blend, "--python-exit-code", "1"]
    proc = run([*cmd, "--python-expr", _FACTS], env)
    assert proc.returncode == 0, output_of(proc)
    (line,) = [ln for ln in proc.stdout.splitlines() if ln.startswith("FACTS ")]
    return json.loads(line.removeprefix("FACTS "))
