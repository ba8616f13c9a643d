"""Between frames (issue 35, point 2): a collider keyed to go over a pinned block within one
frame (left, above, right at frames 1, 1.5, 2) never touches it, each substep's motion is clean,
but the straight motion from frame 1 to frame 2, which motion blur shows, passes through the
block. The bake must say so (objects, frame, what to change); with Refine Crossing Frames it
computes that frame again with 2x and 4x the substeps and says that this did not help. A
collider keyed the same way but staying on the left gives no warning."""

import bpy
import harness
import numpy as np

FPS, SUBSTEPS, N_FRAMES = 25, 2, 3
BLOCK = 0.2  # side [m], on z = 0
PATH = ((1.0, -0.4, 0.1), (1.5, 0.0, 0.5), (2.0, 0.4, 0.1))  # (frame, x, z) of the mover


def setup_function():
    harness.setup()


def teardown_function():
    harness.teardown()


def _mover(path):
    h = 0.05
    corners = [(-h, 0, -h), (h, 0, -h), (h, 0, h), (-h, 0, h)]
    obj = harness.make_mesh_object("Mover", corners, faces=[(0, 1, 2, 3)], role="COLLIDER")
    for frame, x, z in path:
        obj.location = (x, 0.0, z)
        obj.keyframe_insert("location", frame=frame)
    for fc in harness.sub("adapter").fcurves_of(obj):
        for kp in fc.keyframe_points:
            kp.interpolation = "LINEAR"
        fc.update()
    return obj


def _scene(path=PATH, refine=False):
    scene = bpy.context.scene
    scene.render.fps, scene.render.fps_base = FPS, 1.0
    scene.frame_start, scene.frame_end = 1, N_FRAMES
    block = harness.pinned_block(BLOCK)
    _mover(path)
    s = scene.ipc
    s.plane, s.substeps, s.refine_crossing_frames = "XZ", SUBSTEPS, refine
    s.use_scene_gravity = False
    s.gravity = (0.0, 0.0)
    bpy.context.view_layer.update()
    for obj in bpy.context.view_layer.objects:
        obj.select_set(obj == block)
    return block


class _Box:
    def __init__(self):
        self.labels = []

    def label(self, text="", **kwargs):
        self.labels.append(text)


def _bake():
    ops, adapter = harness.sub("operators"), harness.sub("adapter")
    job = adapter.BakeJob(bpy.context, "SELECTED")
    job.run()
    out = harness.Reports()
    assert ops.IPC_OT_bake._finish(out, bpy.context, job) == {"FINISHED"}
    return job, out.reports


def _mover_path_crosses_block():
    """Independently of the add-on: the mover's corners at frames 1 and 2 (as keyed) and
    whether the straight segment of its lowest corners meets the block's square."""
    (_, x0, z0), _, (_, x1, z1) = PATH
    # the corner at (-h, -h) moves from (x0-h, z0-h) to (x1-h, z1-h): z stays 0.05 in [0, 0.2]
    return z0 == z1 and 0.0 < z0 - 0.05 < BLOCK and x0 < -BLOCK / 2 and x1 > BLOCK / 2


def test_motion_through_a_body_between_frames_is_reported():
    assert _mover_path_crosses_block()
    _scene()
    _, reports = _bake()
    s = bpy.context.scene.ipc
    warnings = [m for kind, m in reports if kind == {"WARNING"}]
    assert len(warnings) == 1, reports
    for part in ("'Block' and 'Mover'", "into frame 2", "Substeps (now 2)", "Refine Crossing Frames"):
        assert part in warnings[0], (part, warnings[0])
    assert s.stat_crossing_frames == "2" and s.stat_crossing_warning == warnings[0]
    assert s.stat_refined_frames == 0
    # the mover never came near the block: every state clean, no step of the solver crossed
    assert s.stat_min_distance < 0 or s.stat_min_distance > 0.05
    assert s.stat_motion_splits == 0
    box = _Box()
    harness.sub("frame_motion").draw_report(box, s)
    assert "Motion between frames crosses into frames 2" in box.labels, box.labels


def test_refine_recomputes_the_frame_and_says_it_did_not_help():
    _scene()
    plain, _ = _bake()
    harness.teardown()
    harness.setup()
    _scene(refine=True)
    job, reports = _bake()
    s = bpy.context.scene.ipc
    (crossing,) = job.stats.crossings
    assert crossing.frame == 2 and crossing.substeps == 4 * SUBSTEPS
    assert s.stat_refined_frames == 1
    warning = next(m for kind, m in reports if kind == {"WARNING"})
    assert f"even with {4 * SUBSTEPS} substeps" in warning and "frame rate" in warning
    # frame 1 (the start) is the same; the pinned block stays where it is either way
    np.testing.assert_allclose(plain.body_frames(0), job.body_frames(0), atol=1e-6)


def test_a_collider_that_stays_on_one_side_gives_no_warning():
    path = ((1.0, -0.4, 0.1), (1.5, -0.4, 0.5), (2.0, -0.5, 0.1))
    _scene(path)
    _, reports = _bake()
    s = bpy.context.scene.ipc
    assert not [m for kind, m in reports if kind == {"WARNING"}], reports
    assert s.stat_crossing_frames == "" and s.stat_crossing_warning == ""


def _landing_block(max_newton_iters):
    """A 20 cm block dropped from 1 m at 10 frames per second, one substep: its landing step
    needs about ten Newton iterations, each half of it fewer."""
    scene = bpy.context.scene
    scene.render.fps, scene.render.fps_base = 10, 1.0
    scene.frame_start, scene.frame_end = 1, 12
    t = np.linspace(-0.1, 0.1, 3)
    xs, zs = np.meshgrid(t, t + 1.0)
    verts = np.column_stack([xs.ravel(), np.zeros(9), zs.ravel()])
    quads = [(0, 1, 4, 3), (1, 2, 5, 4), (3, 4, 7, 6), (4, 5, 8, 7)]
    block = harness.make_mesh_object("Block", verts, faces=quads)
    s = scene.ipc
    s.plane, s.substeps, s.use_ground, s.max_newton_iters = "XZ", 1, True, max_newton_iters
    bpy.context.view_layer.update()
    block.select_set(True)


def test_steps_solved_again_in_halves_are_reported():
    _landing_block(200)
    _bake()
    assert bpy.context.scene.ipc.stat_failure_splits == 0
    harness.teardown()
    harness.setup()
    _landing_block(8)  # the landing does not settle in 8 iterations at full length
    _bake()
    s = bpy.context.scene.ipc
    assert s.stat_failure_splits >= 1
    box = _Box()
    harness.sub("frame_motion").draw_report(box, s)
    label = f"Steps solved again in halves (did not converge): {s.stat_failure_splits}"
    assert label in box.labels, box.labels
