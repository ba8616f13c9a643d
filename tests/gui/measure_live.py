"""What the modal bake's live view (issue 14) costs: the compressing-squares example (the
add-on's defaults) baked with the modal operator, alternately without and with the live view,
in Blender's GUI under Xvfb; prints the bake's own wall time and the time from invoke to the end
of the modal bake. Run with tests/gui/measure_live.sh."""

import json
import sys
import time
from pathlib import Path

import bpy

sys.path.insert(0, str(Path(__file__).resolve().parent))
import driver

ZIP, RESULT = driver.args()[:2]
ROUNDS = int(driver.args()[2]) if len(driver.args()) > 2 else 2
addon = driver.install_addon(ZIP)
ops = addon.operators
times = {"off": [], "on": []}


def _timed(cls, name, acc):
    orig = getattr(cls, name)

    def wrapper(*a):
        t0 = time.perf_counter()
        try:
            return orig(*a)
        finally:
            acc[name] = acc.get(name, 0.0) + time.perf_counter() - t0
            acc[name + "_n"] = acc.get(name + "_n", 0) + 1

    setattr(cls, name, wrapper)
    return orig


def one_bake(live):
    driver.clear_scene()
    addon.examples.build_compressing_squares(bpy.context)
    yield 0.5
    ops.RunningBake.live = live
    ops.RunningBake.live_share = float(
        __import__("os").environ.get("LIVE_SHARE", str(ops.RunningBake.live_share))
    )
    t0 = time.perf_counter()
    with driver.override("PROPERTIES"):
        assert bpy.ops.ipc.bake("INVOKE_DEFAULT") == {"RUNNING_MODAL"}
    job = ops.RunningBake.job
    acc = {}
    saved = [(c, n, _timed(c, n, acc)) for c, n in ((job, "step"), (job, "update_preview"))]
    try:
        yield from driver.wait_until(lambda: ops.RunningBake.job is None, 600, "the bake", poll=0.01)
    finally:
        for c, n, _ in saved:
            delattr(c, n)
    total = time.perf_counter() - t0
    print({k: round(v, 3) for k, v in acc.items()}, "extra", round(ops.RunningBake._ui_extra, 2), flush=True)
    assert job.stats.frames == job.n_frames, "the bake did not finish"
    times["on" if live else "off"].append((round(job.stats.wall_time, 2), round(total, 2)))
    print(
        f"live {'on ' if live else 'off'}: bake {job.stats.wall_time:.2f} s, modal {total:.2f} s", flush=True
    )


def measure():
    try:
        for _ in range(ROUNDS):
            yield from one_bake(False)
            yield from one_bake(True)
    finally:
        ops.RunningBake.live = True
    for k, v in times.items():
        best = min(w for w, _ in v)
        print(f"live {k}: bake wall times {[w for w, _ in v]} s (best {best:.2f} s)", flush=True)
    ratio = min(w for w, _ in times["on"]) / min(w for w, _ in times["off"])
    print(f"live view / no live view (best of {ROUNDS}): {ratio:.3f}", flush=True)
    Path(RESULT).with_suffix(".times.json").write_text(json.dumps(times))


driver.run([measure], RESULT)
