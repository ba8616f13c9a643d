"""Peak memory of a headless bake (issue 33, point 5): the compressing-squares example at a
given resolution, baked through the add-on (bpy wheel) for a number of frames, with the solver
states stored every K frames.

    .venv/bin/python scripts/measure_bake_memory.py --frames 250 --n-seg 32

Prints the process's resident memory before the bake, its peak during the stepping and its
peak over the whole bake (stepping, writing the shape keys, storing the states), the size of
the bake's data (positions kept by the job, shape keys, stored states) and the wall time.
Run one frame count per process: the peak (ru_maxrss) only grows.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import bpy

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def import_addon(tmp):
    sys.path.insert(0, ROOT)
    import build_addon

    with zipfile.ZipFile(build_addon.build(Path(tmp) / "dist")) as zf:
        zf.extractall(os.path.join(tmp, "site"))
    sys.path.insert(0, os.path.join(tmp, "site"))
    import blender_ipc

    return blender_ipc


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--frames", type=int, default=250)
    ap.add_argument("--n-seg", type=int, default=32)
    ap.add_argument("--substeps", type=int, default=1)
    ap.add_argument("--every", type=int, default=10)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        addon = import_addon(tmp)
        bpy.ops.wm.read_factory_settings(use_empty=True)
        addon.register()
        objs = addon.examples.build_compressing_squares(
            bpy.context, n_seg=args.n_seg, fps=25, substeps=args.substeps, n_frames=args.frames
        )
        bpy.context.scene.ipc.state_every = args.every
        n_verts = sum(len(o.data.vertices) for o in objs[:2])
        job = addon.adapter.BakeJob(bpy.context, "SCENE")
        before = rss_mb()
        t0 = time.perf_counter()
        job.run()
        stepping = peak_mb()
        assert job.failure is None, job.failure
        job.finish()
        wall = time.perf_counter() - t0
        total = peak_mb()
        text = bpy.context.scene["_ipc_checkpoints"][job.signature]
        entry, entry_mb = json.loads(text), len(text) / 2**20
        states = entry["states"]
        state_kb = sum(len(s["solver"]) for s in states.values()) / len(states) / 1024
        keys_mb = sum(len(o.data.shape_keys.key_blocks) * len(o.data.vertices) * 12 for o in objs[:2]) / 2**20
        print(
            f"frames {args.frames}, n_seg {args.n_seg}, {n_verts} body vertices, substeps {args.substeps}, "
            f"states every {args.every}: RSS before the bake {before:.0f} MB, peak while stepping "
            f"{stepping:.0f} MB (+{stepping - before:.0f}), peak overall {total:.0f} MB "
            f"(+{total - before:.0f}); shape keys {keys_mb:.1f} MB; {len(states)} stored states of "
            f"{state_kb:.0f} kB; stored entry {entry_mb:.1f} MB; "
            f"{wall:.0f} s",
            flush=True,
        )
        addon.unregister()


main()
