"""Measure what limiting the BLAS threads during a bake does (issue 12, point 11).

Bakes the compressing-squares example through the add-on's operator, alternately with the
add-on's limit (``BakeJob.blas_threads = 1``, the default) and without it (``None``: the
BLAS pools keep the process's thread count), and prints the wall time of every bake and the
median of each mode. Start it WITHOUT OPENBLAS_NUM_THREADS / OMP_NUM_THREADS / MKL_NUM_THREADS
in the environment, or "without" is limited too (the script says which pools it found and
their thread counts). Load the machine yourself if you want the busy case, e.g. with
`python3 -c 'while True: pass' &` once per core, and kill those afterwards.

    .venv/bin/python scripts/measure_blas_threads.py --runs 5            # bpy 5.0.1 wheel
    blender -b --factory-startup --python scripts/measure_blas_threads.py -- --runs 5   # Debian

The add-on is built into a scratch folder (build_addon.py) and imported from there.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def import_addon(scratch: str):
    out = subprocess.run(
        ["python3", os.path.join(ROOT, "build_addon.py"), "--out", os.path.join(scratch, "dist")],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    zip_path = out.strip().splitlines()[-1]
    target = os.path.join(scratch, "addon")
    with zipfile.ZipFile(zip_path) as zf:
        zf.extractall(target)
    sys.path.insert(0, target)
    import blender_ipc

    return blender_ipc


def bake_once(bpy, addon, n_seg: int, n_frames: int, limit: bool) -> tuple[float, int]:
    bpy.ops.wm.read_factory_settings(use_empty=True)
    addon.examples.build_compressing_squares(bpy.context, n_seg=n_seg, n_frames=n_frames)
    job_cls = addon.adapter.BakeJob
    job_cls.blas_threads = addon.blas_threads.BAKE_THREADS if limit else None
    t0 = time.perf_counter()
    result = bpy.ops.ipc.bake(target="SCENE")
    wall = time.perf_counter() - t0
    if result != {"FINISHED"}:
        raise SystemExit(f"bake failed: {result}")
    return wall, bpy.context.scene.ipc.stat_newton_iters


def main(argv) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5, help="bakes per mode (alternating)")
    ap.add_argument("--n-seg", type=int, default=8, help="example mesh resolution (default 8)")
    ap.add_argument("--frames", type=int, default=61, help="frames of the bake (default 61)")
    args = ap.parse_args(argv)

    import bpy

    env = {
        k: os.environ[k]
        for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
        if k in os.environ
    }
    with tempfile.TemporaryDirectory() as scratch:
        addon = import_addon(scratch)
        addon.register()
        try:
            bake_once(bpy, addon, 2, 3, True)  # warm-up: imports, first solver set-up
            pools = addon.blas_threads.controls()
            print(f"Blender {bpy.app.version_string}, {os.cpu_count()} CPUs, load average {os.getloadavg()}")
            print(f"thread environment: {env or 'none set'}")
            for (name, _, _), n in zip(pools, addon.blas_threads.current(), strict=True):
                print(f"BLAS pool {name}: {n} threads")
            if not pools:
                print("no BLAS pool with a thread setter found: both modes are the same")
            times = {"limit": [], "default": []}
            for run in range(args.runs):
                order = ("limit", "default") if run % 2 == 0 else ("default", "limit")
                for mode in order:
                    wall, iters = bake_once(bpy, addon, args.n_seg, args.frames, mode == "limit")
                    times[mode].append(wall)
                    print(f"run {run + 1} {mode:>7}: {wall:7.2f} s ({iters} Newton iterations)", flush=True)
            print(f"load average at the end {os.getloadavg()}")
            for mode, ts in times.items():
                print(
                    f"{mode:>7}: median {statistics.median(ts):.2f} s, min {min(ts):.2f} s, "
                    f"max {max(ts):.2f} s over {len(ts)} bakes"
                )
            ratio = statistics.median(times["default"]) / statistics.median(times["limit"])
            print(f"default / limit (medians): {ratio:.2f}")
        finally:
            addon.unregister()
    return 0


if __name__ == "__main__":
    argv = sys.argv[sys.argv.index("--") + 1 :] if "--" in sys.argv else sys.argv[1:]
    sys.exit(main(argv))
