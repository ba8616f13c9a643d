"""Run the add-on tests inside a real Blender (Debian's `blender`, which has no pytest).

Usage (see scripts/test_blender_debian.sh):
    blender -b --factory-startup --python-exit-code 1 --python tests/addon/run_in_blender.py \
        -- dist/blender_ipc-<version>.zip [-k SUBSTRING]

Installs the zip the way Preferences > Add-ons > Install does (into BLENDER_USER_SCRIPTS, which
the runner script points at a temp dir), then runs every test_* function of
tests/addon/test_*.py and blender_leg_*.py with its module's setup_function/teardown_function
(modules whose LEGS excludes "blender" are left to the pytest leg). Any failure raises at the
end, so Blender exits with code 1.
"""

import importlib
import os
import sys
import time
import traceback
from pathlib import Path

import addon_utils
import bpy

HERE = Path(__file__).resolve().parent


def _args():
    argv = sys.argv[sys.argv.index("--") + 1 :] if "--" in sys.argv else []
    if not argv:
        raise SystemExit("usage: ... run_in_blender.py -- ADDON.zip [-k SUBSTRING]")
    zip_path, keyword = argv[0], None
    if "-k" in argv:
        keyword = argv[argv.index("-k") + 1]
    return zip_path, keyword


def install(zip_path):
    user_scripts = os.environ.get("BLENDER_USER_SCRIPTS")
    if not user_scripts:
        raise SystemExit("set BLENDER_USER_SCRIPTS to a scratch dir (do not touch the real one)")
    result = bpy.ops.preferences.addon_install(filepath=str(Path(zip_path).resolve()), overwrite=True)
    assert result == {"FINISHED"}, result
    addon_utils.modules(refresh=True)
    installed = Path(user_scripts) / "addons" / "blender_ipc" / "__init__.py"
    assert installed.is_file(), f"not installed at {installed}"
    os.environ["IPC_ADDON_MODULE"] = "blender_ipc"
    print(f"installed {zip_path} -> {installed.parent}")


def collect(keyword):
    sys.path.insert(0, str(HERE))
    tests = []
    for path in sorted(HERE.glob("test_*.py")) + sorted(HERE.glob("blender_leg_*.py")):
        module = importlib.import_module(path.stem)
        if "blender" not in getattr(module, "LEGS", {"blender", "pytest"}):
            print(f"not in this leg: {path.name} (runs under pytest)")
            continue
        for name in sorted(vars(module)):
            wanted = keyword is None or keyword in f"{path.stem}::{name}"
            if name.startswith("test_") and callable(getattr(module, name)) and wanted:
                tests.append((module, name))
    return tests


def run(tests):
    failures = []
    for module, name in tests:
        label = f"{module.__name__}::{name}"
        t0 = time.perf_counter()
        try:
            getattr(module, "setup_function", lambda: None)()
            try:
                getattr(module, name)()
            finally:
                getattr(module, "teardown_function", lambda: None)()
        except Exception:  # report every failure, keep running the others
            failures.append(label)
            print(f"FAIL {label}\n{traceback.format_exc()}", flush=True)
        else:
            print(f"PASS {label} ({time.perf_counter() - t0:.1f} s)", flush=True)
    return failures


def main():
    zip_path, keyword = _args()
    print(f"Blender {bpy.app.version_string}, Python {sys.version.split()[0]}")
    install(zip_path)
    tests = collect(keyword)
    if not tests:
        raise RuntimeError("no tests collected")
    failures = run(tests)
    print(f"{len(tests) - len(failures)} passed, {len(failures)} failed")
    if failures:
        raise RuntimeError("failed: " + ", ".join(failures))


main()
