"""Shape keys versus the PC2 store for a long bake: .blend size, PC2 file size and playback
frames per second (a frame_set loop over every frame, which evaluates the depsgraph: the shape
keys or the Mesh Cache modifier of each body).

    .venv/bin/python scripts/measure_exports.py [--frames 1000] [--n-seg 40]

The bake is written by the add-on's own write_bake from a synthetic motion (every vertex on its
own circle): what the store costs does not depend on where the frames come from, and a real
1000-frame simulation of this size would take hours.
"""

import argparse
import sys
import tempfile
import time
from pathlib import Path

import bpy
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "addon"))
import harness  # noqa: E402


def playback_fps(scene, frames, bodies, expected) -> float:
    """Frames per second of a frame_set loop; then checks that the bodies played the bake."""
    scene.frame_set(frames[0])
    t0 = time.perf_counter()
    for f in frames:
        scene.frame_set(f)
    fps = len(frames) / (time.perf_counter() - t0)
    middle = frames[len(frames) // 2]
    scene.frame_set(middle)
    for obj, bake in zip(bodies, expected, strict=True):
        assert np.abs(harness.evaluated_local(obj) - bake[middle - frames[0]]).max() < 1e-6
    return fps


def blend_sizes(blend: Path) -> str:
    """The .blend's size saved plain and compressed (Blender 5.0 compresses by default)."""
    sizes = []
    for compress in (False, True):
        bpy.ops.wm.save_as_mainfile(filepath=str(blend), compress=compress)
        sizes.append(blend.stat().st_size / 1e6)
    return f"{sizes[0]:.2f} MB ({sizes[1]:.2f} MB compressed)"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--frames", type=int, default=1000)
    parser.add_argument("--n-seg", type=int, default=40)
    args = parser.parse_args(sys.argv[sys.argv.index("--") + 1 :] if "--" in sys.argv else sys.argv[1:])
    harness.setup()
    shape_keys = harness.sub("shape_keys")
    bodies = harness.sub("examples").build_compressing_squares(
        bpy.context, n_seg=args.n_seg, n_frames=args.frames
    )[:2]
    scene = bpy.context.scene
    t = np.arange(args.frames, dtype=np.float64)[:, None, None]
    expected = []
    for obj in bodies:
        rest = harness.local_coords(obj.data).astype(np.float64)
        phase = np.arange(len(rest))[None, :, None] * 0.01
        frames = rest[None] + 0.01 * np.concatenate(
            [np.cos(0.05 * t + phase), 0 * t + 0 * phase, np.sin(0.05 * t + phase)], axis=2
        )
        frames[0] = rest
        expected.append(frames.astype(np.float32))
        shape_keys.write_bake(obj, expected[-1], 1)
        obj.ipc.is_baked, obj.ipc.bake_frame_start, obj.ipc.bake_frame_end = True, 1, args.frames
    n_verts = sum(len(o.data.vertices) for o in bodies)
    frames = list(range(1, args.frames + 1))
    with tempfile.TemporaryDirectory() as tmp:
        blend = Path(tmp) / "long.blend"
        keys_size = blend_sizes(blend)
        keys_fps = playback_fps(scene, frames, bodies, expected)
        assert bpy.ops.ipc.store_pc2(target="SCENE") == {"FINISHED"}
        pc2_blend = blend_sizes(blend)
        pc2_files = sum(p.stat().st_size for p in (Path(tmp) / "long_ipc").iterdir())
        pc2_fps = playback_fps(scene, frames, bodies, expected)
    print(
        f"{args.frames} frames, {n_verts} vertices in {len(bodies)} bodies, Blender {bpy.app.version_string}"
    )
    print(f"shape keys: .blend {keys_size}, playback {keys_fps:.0f} frames/s")
    print(
        f"PC2 cache:  .blend {pc2_blend} + .pc2 files {pc2_files / 1e6:.2f} MB, "
        f"playback {pc2_fps:.0f} frames/s"
    )
    harness.teardown()


if __name__ == "__main__":
    main()
