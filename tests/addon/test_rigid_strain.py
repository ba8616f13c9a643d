"""A rigid body crushed by an animated collider (issue 34, point 1: rigid bodies hold their shape
to 1e-3 strain unless something forces them): nothing can push the collider back, so the body
is squashed as a very stiff material would be. The bake must say so, naming the body, how far it
was squashed (checked against its baked height) and the frames; a bake that leaves it room says
nothing."""

import bpy
import harness
import numpy as np
import test_artist_input as artist
import test_collider_lag as lid_scene

SIDE = 0.2  # the block's side [m]; it rests on the ground at z = 0


def setup_function():
    harness.setup()


def teardown_function():
    harness.teardown()


def _bake(stop):
    """Bake a rigid block under the Lid keyed down to stop; the operator's reports."""
    scene = bpy.context.scene
    scene.render.fps, scene.render.fps_base = lid_scene.FPS, 1.0
    scene.frame_start, scene.frame_end = 1, lid_scene.N_FRAMES
    s = scene.ipc
    s.plane, s.substeps, s.use_ground = "XZ", lid_scene.SUBSTEPS, True
    block = artist._quad("Block", -0.5 * SIDE, 0.001, SIDE, SIDE)
    block.ipc.body_type = "RIGID"
    lid_scene._ceiling(stop)
    artist._select_only(block)
    job = harness.sub("adapter").BakeJob(bpy.context, "SELECTED")
    job.run()
    stand_in = harness.Reports()
    assert harness.sub("operators").IPC_OT_bake._finish(stand_in, bpy.context, job) == {"FINISHED"}
    return block, stand_in.reports


def test_a_rigid_block_crushed_by_a_collider_is_named_with_its_squash_and_frames():
    block, reports = _bake(stop=0.9 * SIDE)
    assert [kind for kind, _ in reports] == [{"INFO"}, {"WARNING"}], reports
    warning = reports[-1][1]
    scene = bpy.context.scene
    scene.frame_set(lid_scene.N_FRAMES)
    squash = 1.0 - float(np.ptp(artist._world_xz(block)[:, 1])) / SIDE  # from what Blender shows
    assert squash > 0.09, squash  # the lid stops at 0.9 of its side
    assert "rigid bodies were squashed or stretched ('Block' by up to" in warning, warning
    assert f"{100 * squash:.2g} %" in warning and f"-{lid_scene.N_FRAMES}" in warning, warning
    assert "Stiff or Deformable" in warning
    s = scene.ipc
    assert s.stat_strained.startswith("'Block' up to") and s.stat_strained.endswith(f"-{lid_scene.N_FRAMES})")
    labels = []
    box = type("Box", (), {"label": lambda self, text="", **_: labels.append(text)})()
    harness.sub("frame_motion").draw_report(box, s)
    assert f"Rigid bodies squashed: {s.stat_strained}" in labels, labels


def test_a_rigid_block_with_room_is_not_reported():
    _, reports = _bake(stop=SIDE + 0.02)
    assert [kind for kind, _ in reports] == [{"INFO"}], reports
    assert bpy.context.scene.ipc.stat_strained == ""
