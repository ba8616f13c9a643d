"""`make demo`: the compressing-squares scene end to end through the add-on, headless.

Runs in the bpy venv (``.venv/bin/python scripts/demo.py``):

1. imports the add-on from the built zip (``dist/blender_ipc-*.zip``, ``python build_addon.py``)
   and registers it in Blender 5.0 (bpy wheel);
2. builds the scene with ``blender_ipc.examples.build_compressing_squares`` (two squares in the
   XZ plane, a keyframed ceiling moving down, a ground line);
3. bakes with the add-on's operator ``bpy.ops.ipc.bake`` (shape keys, one per frame), printing
   progress per frame;
4. saves ``out/compressing_squares.blend``;
5. writes pictures from what Blender evaluates: ``out/filmstrip.png`` (Workbench render, or
   numpy drawing of the shape keys if rendering fails) and ``out/compressing_squares.gif``;
6. prints a summary (frames, wall time, Newton iterations, smallest gap, rotation of each
   square) and writes it to ``out/summary.txt``.
"""

from __future__ import annotations

import argparse
import contextlib
import glob
import inspect
import itertools
import os
import shutil
import sys
import threading
import time
import zipfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import render_filmstrip  # noqa: E402  (scripts/ is on sys.path above)


def say(msg: str) -> None:
    print(msg, flush=True)


def find_zip(explicit: str | None) -> str:
    if explicit:
        return explicit
    zips = sorted(glob.glob(os.path.join(ROOT, "dist", "blender_ipc-*.zip")), key=os.path.getmtime)
    if not zips:
        raise SystemExit(
            "demo: no dist/blender_ipc-*.zip; build it first with `python3 build_addon.py`"
            " (`make demo` does this)"
        )
    return zips[-1]


def import_addon(zip_path: str, out_dir: str):
    """Extract the zip as Blender would install it and import the package from there (not from
    the source tree, so the demo exercises exactly what users install)."""
    target = os.path.join(out_dir, "addon")
    shutil.rmtree(target, ignore_errors=True)
    with zipfile.ZipFile(zip_path) as zf:
        zf.extractall(target)
    sys.path.insert(0, target)
    for name in [m for m in sys.modules if m == "blender_ipc" or m.startswith("blender_ipc.")]:
        del sys.modules[name]
    import blender_ipc

    if not os.path.abspath(blender_ipc.__file__).startswith(os.path.abspath(target)):
        raise SystemExit(f"demo: imported blender_ipc from {blender_ipc.__file__}, not from the zip")
    return blender_ipc


@contextlib.contextmanager
def progress_lines(addon, every: float = 0.0):
    """Print one line per baked frame (frame k of N, elapsed, estimate, Newton iterations).

    The operator's synchronous execute() is silent, so the demo wraps the bake job's per-frame
    step; if that hook is not there, a heartbeat thread prints the elapsed time instead."""
    job_cls = getattr(getattr(addon, "adapter", None), "BakeJob", None)
    original = getattr(job_cls, "step_frame", None)
    if original is None:
        stop = threading.Event()
        t0 = time.perf_counter()

        def beat():
            while not stop.wait(5.0):
                say(f"[bake] ... {time.perf_counter() - t0:.0f} s")

        thread = threading.Thread(target=beat, daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
        return

    last = [0.0]

    def step_frame(job):
        result = original(job)
        now = time.perf_counter()
        if now - last[0] >= every or job.done:
            last[0] = now
            eta = job.estimate_remaining() if hasattr(job, "estimate_remaining") else float("nan")
            stats = getattr(job, "stats", None)
            iters = getattr(stats, "newton_iters", "?")
            gap = getattr(stats, "min_distance", float("nan"))
            say(
                f"[bake] frame {job.frames_done:3d}/{job.n_frames}  {job.elapsed():6.1f} s elapsed"
                f"  ~{eta:5.0f} s left  Newton iterations so far {iters}  smallest gap {gap:.3g} m"
                + (f"  FAILED: {job.failure}" if getattr(job, "failure", None) else "")
            )
        return result

    job_cls.step_frame = step_frame
    try:
        yield
    finally:
        job_cls.step_frame = original


def shape_key_frames(obj) -> np.ndarray:
    """(frames, n, 3) local coordinates of the baked shape keys, in key order (the add-on writes
    one absolute key per frame, the first being the rest mesh at the start frame)."""
    blocks = obj.data.shape_keys.key_blocks
    n = len(obj.data.vertices)
    out = []
    for kb in blocks:
        co = np.empty(n * 3)
        kb.data.foreach_get("co", co)
        out.append(co.reshape(n, 3))
    return np.array(out)


def rotation_deg(p0: np.ndarray, p1: np.ndarray) -> float:
    """Best-fit rotation (degrees, counter-clockwise positive) taking point set p0 to p1 (2D)."""
    a, b = p0 - p0.mean(axis=0), p1 - p1.mean(axis=0)
    cross = np.sum(a[:, 0] * b[:, 1] - a[:, 1] * b[:, 0])
    dot = np.sum(a * b)
    return float(np.degrees(np.arctan2(cross, dot)))


def total_rotation_deg(frames: np.ndarray) -> float:
    """Accumulated rotation over a frame sequence (n_frames, n, 2): the sum of the
    frame-to-frame best-fit rotations, so a square that rolls 270 degrees reads
    +270, not -90."""
    return float(sum(rotation_deg(a, b) for a, b in itertools.pairwise(frames)))


# --scene: (example builder, output name, what the summary calls it)
SCENES = {
    "squares": ("build_compressing_squares", "compressing_squares", "compressing squares"),
    "chain": ("build_chain_in_wind", "chain_in_wind", "a chain on a hinge swinging into a wall in the wind"),
    "props": ("build_props_in_box", "props_in_box", "soft characters falling into a box of rigid props"),
}


def build_scene(addon, bpy, scene_name: str, n_seg: int, n_frames: int | None):
    """The example's deformable bodies, built in the current file."""
    builder = getattr(addon.examples, SCENES[scene_name][0])
    if scene_name in ("chain", "props"):
        kwargs = {} if n_frames is None else {"n_frames": n_frames}
        return builder(bpy.context, **kwargs)[0]
    kwargs = {"n_seg": n_seg}
    params = inspect.signature(addon.examples.build_compressing_squares).parameters
    if n_frames is not None:
        if "n_frames" not in params:
            raise SystemExit("demo: this add-on version's example has no n_frames parameter")
        kwargs["n_frames"] = n_frames
    return list(builder(bpy.context, **kwargs)[:2])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Bake an example scene through the add-on")
    ap.add_argument("--scene", choices=sorted(SCENES), default="squares", help="example (default squares)")
    ap.add_argument("--n-seg", type=int, default=8, help="grid cells per square side (default 8)")
    ap.add_argument("--frames", type=int, default=None, help="frames to bake (default: the example's)")
    ap.add_argument("--out", default=os.path.join(ROOT, "out"), help="output folder (default out/)")
    ap.add_argument("--zip", default=None, help="add-on zip (default: newest dist/blender_ipc-*.zip)")
    ap.add_argument(
        "--picture",
        choices=("auto", "workbench", "draw"),
        default="auto",
        help="filmstrip from a Workbench render or drawn with numpy (default auto)",
    )
    ap.add_argument("--width", type=int, default=320, help="width of one picture frame [px]")
    args = ap.parse_args(argv)

    t_total = time.perf_counter()
    out_dir = os.path.abspath(args.out)
    os.makedirs(out_dir, exist_ok=True)
    say("[demo] Blender as a Python module: importing bpy ...")
    import bpy

    say(f"[demo] Blender {bpy.app.version_string}, numpy {np.__version__}")
    bpy.ops.wm.read_factory_settings(use_empty=True)

    zip_path = find_zip(args.zip)
    addon = import_addon(zip_path, out_dir)
    addon.register()
    say(f"[demo] add-on registered from {os.path.relpath(zip_path, ROOT)}")
    try:
        return run(bpy, addon, args, out_dir, t_total)
    finally:
        # An operator left registered makes a bpy process hang at exit (team notes).
        addon.unregister()


def run(bpy, addon, args, out_dir, t_total) -> int:
    bodies = build_scene(addon, bpy, args.scene, args.n_seg, args.frames)
    _, stem, title = SCENES[args.scene]
    scene = bpy.context.scene
    n_frames = scene.frame_end - scene.frame_start + 1
    substeps = scene.ipc.substeps
    h = 1.0 / (scene.render.fps / scene.render.fps_base * substeps)
    n_verts = sum(len(o.data.vertices) for o in bodies)
    n_tris = sum(len(o.data.polygons) * 2 for o in bodies)
    say(
        f"[demo] scene: {title}, {len(bodies)} bodies ({n_verts} vertices, {n_tris} triangles), "
        f"{n_frames} frames x {substeps} substeps (h = {h:.4g} s)"
    )

    rest = {o.name: shape_key_frames(o) if o.data.shape_keys else None for o in bodies}
    assert all(v is None for v in rest.values()), "fresh scene should have no shape keys"
    say("[demo] baking with bpy.ops.ipc.bake(target='SCENE') ...")
    t0 = time.perf_counter()
    with progress_lines(addon):
        result = bpy.ops.ipc.bake(target="SCENE")
    bake_wall = time.perf_counter() - t0
    if "FINISHED" not in result:
        say(f"[demo] FAILED: the bake returned {result}; message: {scene.ipc.stat_message!r}")
        return 1

    keyed = {o.name: shape_key_frames(o) for o in bodies}
    for name, frames in keyed.items():
        if len(frames) != n_frames:
            say(f"[demo] FAILED: {name} has {len(frames)} baked shape keys, expected {n_frames}")
            return 1

    blend = os.path.join(out_dir, f"{stem}.blend")
    if os.path.exists(blend):  # replace, so Blender does not leave a .blend1 backup next to it
        os.remove(blend)
    bpy.ops.wm.save_as_mainfile(filepath=blend)
    say(f"[demo] saved {os.path.relpath(blend, ROOT)}")

    axes = render_filmstrip.plane_axes(scene)
    rot = {n: total_rotation_deg(f[:, :, list(axes)]) for n, f in keyed.items()}

    say("[demo] pictures ...")
    t_pic = time.perf_counter()
    film = os.path.join(out_dir, "filmstrip.png" if args.scene == "squares" else f"{stem}_filmstrip.png")
    gif = os.path.join(out_dir, f"{stem}.gif")
    method = render_filmstrip.make_pictures(
        bpy.context,
        film,
        gif,
        n_strip=6,
        n_gif=min(n_frames, 31),
        width=args.width,
        frames_dir=os.path.join(out_dir, "frames"),
        method=args.picture,
        columns=3,
        log=say,
    )
    pic_wall = time.perf_counter() - t_pic

    s = scene.ipc
    steps = (n_frames - 1) * substeps
    gap = s.stat_min_distance
    lines = [
        f"blender-ipc demo: {title} (baked through the add-on)",
        f"Blender              {bpy.app.version_string} (bpy wheel), numpy {np.__version__}",
        f"add-on zip           {os.path.relpath(args.zip or find_zip(None), ROOT)}",
        f"mesh                 {len(bodies)} bodies, {n_verts} vertices, {n_tris} triangles",
        f"frames               {s.stat_frames} baked (frames {scene.frame_start}..{scene.frame_end}), "
        f"{steps} time steps of {h:.4g} s",
        f"bake wall time       {s.stat_wall_time:.1f} s (operator call {bake_wall:.1f} s, "
        f"{bake_wall / max(steps, 1) * 1000:.0f} ms per step)",
        f"Newton iterations    {s.stat_newton_iters} total, "
        f"{s.stat_newton_iters / max(steps, 1):.2f} per step",
        f"smallest gap         {gap:.3e} m" if gap >= 0 else "smallest gap         no contact within d-hat",
    ]
    for name in sorted(rot):
        sense = "counter-clockwise" if rot[name] > 0 else "clockwise"
        lines.append(f"rotation {name:<12s}{abs(rot[name]):6.1f} deg {sense} (accumulated over the frames)")
    lines += [
        f"outputs              {os.path.relpath(blend, ROOT)}, {os.path.relpath(film, ROOT)} ({method}), "
        f"{os.path.relpath(gif, ROOT)}",
        f"total demo time      {time.perf_counter() - t_total:.1f} s (pictures {pic_wall:.1f} s)",
    ]
    text = "\n".join(lines) + "\n"
    with open(os.path.join(out_dir, "summary.txt"), "w") as f:
        f.write(text)
    say("\n" + text.rstrip())
    say(f"[demo] summary written to {os.path.relpath(os.path.join(out_dir, 'summary.txt'), ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
