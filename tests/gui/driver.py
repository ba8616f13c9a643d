"""Drive Blender's GUI from Python: scenarios are generators run step by step from a
`bpy.app.timers` callback, so Blender's event loop (modal operators, redraws, timers) runs
between the steps. A scenario yields the number of seconds to wait before its next step.

Used by gui_tests.py (tests) and screenshots.py (README pictures), both started by
run_gui_tests.sh / scripts/screenshots.sh with `blender --enable-event-simulate FILE.blend
--python SCRIPT -- ADDON.zip RESULT.json [OUT_DIR]` under Xvfb.

The result goes to a JSON file: an exception raised in a timer callback, or sys.exit() there, does
not reach Blender's exit code, so the shell script reads the file instead.
"""

import json
import os
import sys
import time
import traceback
from pathlib import Path

import addon_utils
import bpy

ROOT = Path(__file__).resolve().parents[2]
# The headless tests' snapshot() (what a cancelled bake must leave untouched) is reused as is.
sys.path.insert(0, str(ROOT / "tests" / "addon"))


def args():
    argv = sys.argv[sys.argv.index("--") + 1 :] if "--" in sys.argv else []
    if len(argv) < 2:
        raise SystemExit("usage: blender ... --python SCRIPT -- ADDON.zip RESULT.json [OUT_DIR]")
    return argv


def install_addon(zip_path):
    """Install the built zip as Preferences > Add-ons > Install does, then tick it."""
    if not os.environ.get("BLENDER_USER_SCRIPTS"):
        raise SystemExit("set BLENDER_USER_SCRIPTS to a scratch dir (do not touch the real one)")
    result = bpy.ops.preferences.addon_install(filepath=str(Path(zip_path).resolve()), overwrite=True)
    assert result == {"FINISHED"}, result
    addon_utils.modules(refresh=True)
    addon_utils.enable("blender_ipc", default_set=True, handle_error=_raise)
    os.environ["IPC_ADDON_MODULE"] = "blender_ipc"
    import blender_ipc

    installed = Path(os.environ["BLENDER_USER_SCRIPTS"]) / "addons" / "blender_ipc"
    assert Path(blender_ipc.__file__).parent == installed, blender_ipc.__file__
    return blender_ipc


def _raise(err):
    raise err


# ----------------------------------------------------------------------------- UI context


def window():
    return bpy.context.window_manager.windows[0]


def area(kind):
    for a in window().screen.areas:
        if a.type == kind:
            return a
    raise LookupError(f"no {kind} area in the window")


def region(a, kind="WINDOW"):
    return next(r for r in a.regions if r.type == kind)


def override(kind="VIEW_3D"):
    """Context of a user acting in the given editor (timers run without window/area)."""
    a = area(kind)
    return bpy.context.temp_override(window=window(), screen=window().screen, area=a, region=region(a))


# ----------------------------------------------------------------------------- scene


def clear_scene():
    """Remove all objects and the data the example creates (read_homefile from a timer hangs
    Blender 3.4, so the scene is emptied by hand)."""
    for coll in (bpy.data.objects, bpy.data.meshes, bpy.data.actions):
        bpy.data.batch_remove(list(coll))
    # The meshes' shape keys (Key datablocks) stay behind without their mesh; the next undo
    # would drop them ("invalid 'from' pointer") and change the datablock counts a test compares.
    bpy.data.batch_remove(list(bpy.data.shape_keys))
    scene = bpy.context.scene
    scene.frame_set(1)
    for name in ("stat_frames", "stat_wall_time", "stat_newton_iters", "stat_min_distance", "stat_message"):
        scene.ipc.property_unset(name)


def wait_until(condition, timeout, what, poll=0.05):
    """Generator: yields until condition() holds; AssertionError after `timeout` seconds."""
    t0 = time.perf_counter()
    while not condition():
        if time.perf_counter() - t0 > timeout:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        yield poll


# ----------------------------------------------------------------------------- runner


def run(scenarios, result_path, cleanup=lambda: None):
    """Run the generator functions one after the other from a timer; write
    {"passed": [...], "failed": {name: traceback}, "timings": {name: s}} and quit."""
    state = {"i": -1, "gen": None, "t0": 0.0}
    result = {"passed": [], "failed": {}, "timings": {}, "blender": bpy.app.version_string}

    def finish_current(error=None):
        name = scenarios[state["i"]].__name__
        result["timings"][name] = round(time.perf_counter() - state["t0"], 2)
        if error is None:
            result["passed"].append(name)
            print(f"PASS {name} ({result['timings'][name]} s)", flush=True)
        else:
            result["failed"][name] = error
            print(f"FAIL {name}\n{error}", flush=True)
        try:
            cleanup()
        except Exception:
            traceback.print_exc()

    def drive():
        while True:
            if state["gen"] is None:
                state["i"] += 1
                if state["i"] >= len(scenarios):
                    Path(result_path).write_text(json.dumps(result, indent=1))
                    print(f"{len(result['passed'])} passed, {len(result['failed'])} failed", flush=True)
                    bpy.ops.wm.quit_blender()
                    return None
                print(f"---- {scenarios[state['i']].__name__}", flush=True)
                state["gen"], state["t0"] = scenarios[state["i"]](), time.perf_counter()
            try:
                wait = next(state["gen"])
            except StopIteration:
                state["gen"] = None
                finish_current()
                continue
            except Exception:
                state["gen"] = None
                finish_current(traceback.format_exc())
                continue
            return max(float(wait or 0.0), 0.0)

    bpy.app.timers.register(drive, first_interval=0.5)
