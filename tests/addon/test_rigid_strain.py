"""A rigid body under an animated collider keyed into it (issue 34, point 1: rigid bodies hold
their shape to 1e-3 strain unless something forces them): it cannot make room, so the collider
stops on it and the bake says the collider could not follow its animation; a bake that leaves it
room says nothing. A rigid body strained by anything else is named with its strain and frames."""

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


def test_a_collider_keyed_into_a_rigid_block_stops_on_it():
    """The Lid keyed down to 0.9 of the block's side: the block cannot make room, so the Lid
    stops on it (docs/design/10-prescribed-motion.md) and the block keeps its shape; the
    warning names the Lid as not following its animation, by the overlap Blender shows."""
    block, reports = _bake(stop=0.9 * SIDE)
    assert [kind for kind, _ in reports] == [{"INFO"}, {"WARNING"}], reports
    warning = reports[-1][1]
    scene = bpy.context.scene
    for frame in range(1, lid_scene.N_FRAMES + 1):
        scene.frame_set(frame)
        height = float(np.ptp(artist._world_xz(block)[:, 1]))  # from what Blender shows
        assert abs(height / SIDE - 1.0) < 1e-3, (frame, height)
    top = float(artist._world_xz(block)[:, 1].max())
    lid = bpy.data.objects["Lid"]
    overlap = top - lid.matrix_world.translation.z  # the Lid as animated, at the last frame
    assert overlap > 0.09 * SIDE, overlap
    assert "collider 'Lid' could not follow its animation" in warning, warning
    assert f"overlap it as animated by up to {harness.sub('adapter').format_length(overlap)}" in warning, (
        overlap,
        warning,
    )
    assert "squashed" not in warning and scene.ipc.stat_strained == "", warning


def test_strained_rigid_bodies_are_named_with_their_strain_and_frames():
    """What a bake says of rigid bodies squashed or stretched beyond the limit by what no
    collider stop prevents (pins, links): per frame, from the steps' strains, the body, its
    largest strain and its frames, in the warning and the panel's line."""
    bake_job, messages = harness.sub("bake_job"), harness.sub("messages")
    stats = harness.sub("solver.simulation").StepStats

    def step(strains):
        return stats(1, 0.01, 3, True, 0.001, 1, 1.0, 0.0, 0.0, 1e5, rigid_strains=strains)

    strained = {}
    limit = harness.sub("solver.basis").RIGID_STRAIN_LIMIT
    frames = ((5, (0.0, 0.5 * limit)), (6, (0.03, 2 * limit)), (7, (0.05, 0.0)), (9, (0.02, 0.0)))
    for frame, strains in frames:
        bake_job.note_strained(strained, frame, [step((0.0, 0.0)), step(strains)])
    assert strained == {0: [0.05, [6, 7, 9]], 1: [2 * limit, [6]]}, strained
    names = ["Crate", "Coin"]
    warning = messages.rigid_strain_warning(strained, names)
    assert "('Crate' by up to 5 % at frames 6-7, 9, 'Coin' by up to 0.2 % at frames 6)" in warning, warning
    assert "Stiff or Deformable" in warning
    s = bpy.context.scene.ipc
    s.stat_strained = bake_job.strained_summary(strained, names)
    assert s.stat_strained == "'Crate' up to 5 % (frames 6-7, 9) and 1 more", s.stat_strained
    labels = []
    box = type("Box", (), {"label": lambda self, text="", **_: labels.append(text)})()
    harness.sub("frame_motion").draw_report(box, s)
    assert f"Rigid bodies squashed: {s.stat_strained}" in labels, labels


def test_a_rigid_block_with_room_is_not_reported():
    _, reports = _bake(stop=SIDE + 0.02)
    assert [kind for kind, _ in reports] == [{"INFO"}], reports
    assert bpy.context.scene.ipc.stat_strained == ""
