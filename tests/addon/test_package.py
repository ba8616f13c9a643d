"""The built zip: layout serving both install routes, embedded solver identical to solver/,
and (bpy wheel leg) a real install as a Blender >= 4.2 extension in a scratch user dir."""

import os
import re
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import harness
import tomllib

# Run by pytest (bpy 5.0 wheel). The legacy-install route is what run_in_blender.py exercises.
LEGS = {"pytest"}


def _build(tmp):
    return harness.build_zip(Path(tmp))


def test_zip_layout_and_metadata():
    with tempfile.TemporaryDirectory() as tmp:
        path = _build(tmp)
        with zipfile.ZipFile(path) as zf:
            names = zf.namelist()
            manifest = tomllib.loads(zf.read("blender_ipc/blender_manifest.toml").decode())
            init = zf.read("blender_ipc/__init__.py").decode()
            embedded = {
                n[len("blender_ipc/solver/") :]: zf.read(n)
                for n in names
                if n.startswith("blender_ipc/solver/")
            }
    # One top folder: a legacy install extracts it as the package, the extension installer
    # accepts a manifest inside a single top folder.
    assert {n.split("/")[0] for n in names} == {"blender_ipc"}
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
    version = manifest["version"]
    assert path.name == f"blender_ipc-{version}.zip"
    assert manifest["id"] == "blender_ipc" and manifest["type"] == "add-on"
    assert manifest["blender_version_min"] == "4.2.0"
    bl_version = re.search(r'"version":\s*\((\d+), (\d+), (\d+)\)', init).groups()
    assert ".".join(bl_version) == version
    assert '"blender": (3, 4, 0)' in init
    source = {
        p.relative_to(harness.ROOT / "solver").as_posix(): p.read_bytes()
        for p in (harness.ROOT / "solver").rglob("*.py")
        if "__pycache__" not in p.parts
    }
    assert embedded == source


def test_embedded_solver_is_imported_relatively():
    mod = harness.addon()
    solver = harness.sub("solver")
    assert solver.__name__ == f"{mod.__name__}.solver"
    assert Path(solver.__file__).parent == Path(mod.__file__).parent / "solver"


_EXTENSION_SCRIPT = """
import sys
import bpy
import addon_utils
zip_path, user_dir = sys.argv[1:3]
r = bpy.ops.extensions.package_install_files(filepath=zip_path, repo="user_default",
                                             enable_on_install=True)
assert r == {"FINISHED"}, r
name = "bl_ext.user_default.blender_ipc"
mod = sys.modules[name]
assert mod.__file__.startswith(user_dir), mod.__file__
ex = sys.modules[name + ".examples"]
top, bottom, _ = ex.build_compressing_squares(bpy.context, n_seg=2, fps=50, substeps=2,
                                              n_frames=4)
assert bpy.ops.ipc.bake() == {"FINISHED"}
assert len(top.data.shape_keys.key_blocks) == 4
addon_utils.disable(name, default_set=True)   # unregister, else the process may hang at exit
print("EXTENSION-OK")
"""


def test_installs_as_extension():
    with tempfile.TemporaryDirectory() as tmp:
        zip_path = _build(Path(tmp) / "dist")
        user_dir = str(Path(tmp) / "user")
        env = dict(os.environ, BLENDER_USER_RESOURCES=user_dir)
        proc = subprocess.run(
            [sys.executable, "-c", _EXTENSION_SCRIPT, str(zip_path), user_dir],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
    assert proc.returncode == 0 and "EXTENSION-OK" in proc.stdout, proc.stdout + proc.stderr


def test_wheels_option_lists_bundled_wheels_in_manifest():
    sys.path.insert(0, str(harness.ROOT))
    try:
        import build_addon
    finally:
        sys.path.remove(str(harness.ROOT))
    with tempfile.TemporaryDirectory() as tmp:
        wheels = Path(tmp) / "wheels"
        wheels.mkdir()
        name = "scipy-1.0.0-cp311-cp311-manylinux_2_17_x86_64.whl"
        (wheels / name).write_bytes(b"not a real wheel")
        path = build_addon.build(Path(tmp) / "dist", wheels)
        with zipfile.ZipFile(path) as zf:
            manifest = tomllib.loads(zf.read("blender_ipc/blender_manifest.toml").decode())
            assert zf.read(f"blender_ipc/wheels/{name}") == b"not a real wheel"
    assert manifest["wheels"] == [f"./wheels/{name}"]
