"""A small scene for trying the farm jobs: the add-on's compressing-squares example, unbaked,
with an orthographic camera and Workbench render settings, saved to a .blend.

    blender -b --factory-startup --python-exit-code 1 --python farm/example_scene.py -- \\
        --addon dist/blender_ipc-0.1.0.zip --output scene.blend [--frames 6] [--n-seg 2] [--width 160]

The camera and colours come from scripts/render_filmstrip.py (the demo's pictures), so a render
of any frame shows the two squares.
"""

from __future__ import annotations

import argparse
import os
import sys

import bpy

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "scripts"))
import ipc_bake  # noqa: E402  (farm/ is on sys.path above)
import render_filmstrip  # noqa: E402  (scripts/ is on sys.path above)


def parse_args(argv):
    ap = argparse.ArgumentParser(prog="example_scene.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--output", required=True, help="the .blend to write")
    ap.add_argument("--addon", help="the add-on zip or a folder holding the blender_ipc package")
    ap.add_argument("--frames", type=int, default=6, help="frames of the scene (from frame 1)")
    ap.add_argument("--n-seg", type=int, default=2, help="quads per side of each square")
    ap.add_argument("--width", type=int, default=160, help="render width [px]")
    return ap.parse_args(argv)


def build(args) -> None:
    bpy.ops.wm.read_factory_settings(use_empty=True)
    with ipc_bake.addon_enabled(args.addon) as addon:
        context = bpy.context
        addon.examples.build_compressing_squares(
            context, n_seg=args.n_seg, fps=25, substeps=2, n_frames=args.frames
        )
        scene = context.scene
        box = render_filmstrip.view_box(context, [scene.frame_start], render_filmstrip.plane_axes(scene))
        render_filmstrip.setup_workbench(context, box, args.width)
        scene.frame_set(scene.frame_start)
        bpy.ops.wm.save_as_mainfile(filepath=os.path.abspath(args.output))
    print(f"example scene: {args.frames} frames, {args.width} px wide -> {args.output}", flush=True)


if __name__ == "__main__":
    build(parse_args(ipc_bake.script_args(sys.argv)))
