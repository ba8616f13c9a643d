"""Continue Bake and the start frame (issue 14, points 3 and 4).

A finished bake stores the solver's state after its last frame in the .blend; Continue Bake
extends it to a later end frame with the shape keys (float32 coordinates, names, eval_time keys)
exactly those of a bake to that frame in one go; changed inputs are refused naming what changed,
with the scene left as it was; a cancelled continue leaves the earlier bake as it was; the state
survives saving and reloading the file. A bake from a later start frame starts from the bodies'
state at that frame and leaves the frames before it alone."""

import json
import os
import tempfile

import bpy
import harness
import numpy as np


def setup_function():
    harness.setup()


def teardown_function():
    harness.teardown()


def _scene(n_seg=2, end=8):
    """The compressing squares (the squares land and are pressed from about frame 20 on)."""
    top, bottom, ceiling = harness.sub("examples").build_compressing_squares(
        bpy.context, n_seg=n_seg, fps=25, substeps=2, n_frames=end
    )
    bpy.context.scene.frame_set(3)  # not the start frame: a bake must restore it
    return top, bottom, ceiling


def _keys(obj):
    """The bake as Blender stores it: per key its name, frame and float32 coordinates, and the
    eval_time F-curve's points."""
    key = obj.data.shape_keys
    out = []
    for kb in key.key_blocks:
        co = np.empty(len(kb.data) * 3, dtype=np.float32)
        kb.data.foreach_get("co", co)
        out.append((kb.name, kb.frame, kb.interpolation, co.tobytes()))
    fcurves = harness.sub("adapter").fcurves_of(key)
    points = [(tuple(p.co), p.interpolation) for fc in fcurves for p in fc.keyframe_points]
    return out, points


def _record(objs):
    s = bpy.context.scene.ipc
    stats = (
        s.stat_frames,
        s.stat_newton_iters,
        s.stat_min_distance,
        s.stat_collider_lag,
        s.stat_collider_distance,
        s.stat_lag_frames,
        s.stat_overlap_frames,
        s.stat_bake_hash,
    )
    props = [
        (o.ipc.is_baked, o.ipc.bake_hash, o.ipc.bake_frame_start, o.ipc.bake_frame_end, o.ipc.bake_partial)
        for o in objs
    ]
    return [_keys(o) for o in objs], props, stats


def _evaluated(objs, frames):
    scene = bpy.context.scene
    out = []
    for f in frames:
        scene.frame_set(f)
        out.append([harness.evaluated_local(o).tobytes() for o in objs])
    return out


def _one_go(objs, end):
    """Bake the same bodies to `end` in one go (replacing the bake) and record it."""
    scene = bpy.context.scene
    old = scene.frame_end
    scene.frame_end = end
    assert bpy.ops.ipc.bake(target="SCENE") == {"FINISHED"}
    scene.frame_end = old
    return _record(objs)


def test_continued_bake_is_the_bake_in_one_go():
    """n_seg 8: 164 vertices, the banded solve with its stored ordering; frames 1-22, then
    continued to 30 while the squares land on each other and the ceiling presses them."""
    top, bottom, _ceiling = _scene(n_seg=8, end=22)
    objs = [top, bottom]
    frame = bpy.context.scene.frame_current
    assert bpy.ops.ipc.bake() == {"FINISHED"}
    stored = bpy.context.scene[harness.sub("resume").PROPERTY]
    assert list(stored.keys()) == [top.ipc.bake_hash]
    assert bpy.ops.ipc.continue_bake(frame_end=30) == {"FINISHED"}
    assert bpy.context.scene.frame_current == frame
    assert top.ipc.bake_frame_end == 30 and len(top.data.shape_keys.key_blocks) == 30
    continued = _record(objs)
    shown = _evaluated(objs, range(1, 32))
    assert list(bpy.context.scene[harness.sub("resume").PROPERTY].keys()) == [top.ipc.bake_hash]
    one_go = _one_go(objs, 30)
    assert continued[0] == one_go[0], "shape keys differ from the bake in one go"
    assert continued[1:] == one_go[1:], "bake records or statistics differ"
    assert _evaluated(objs, range(1, 32)) == shown
    # and the squares did land and get pressed in the continued part
    kb = top.data.shape_keys.key_blocks
    z = [np.array([v.co[2] for v in kb[f - 1].data]) for f in (22, 30)]
    assert np.abs(z[1] - z[0]).max() > 1e-2


def test_continue_to_the_extended_frame_range_twice():
    """The panel's flow: the scene's range is extended and Continue Bake (no end frame) bakes
    to its end; twice; the same bits as in one go."""
    top, bottom, _ = _scene(end=6)
    scene = bpy.context.scene
    assert bpy.ops.ipc.bake() == {"FINISHED"}
    assert not harness.sub("adapter").is_outdated(bpy.context, top), "a longer range is no change"
    try:
        bpy.ops.ipc.continue_bake()
        raise AssertionError("continued a bake that reaches the end of the range")
    except RuntimeError as err:
        assert "already reaches frame 6" in str(err)
    scene.frame_end = 9
    assert bpy.ops.ipc.continue_bake() == {"FINISHED"}
    scene.frame_end = 13
    bpy.ops.object.select_all(action="DESELECT")
    assert bpy.ops.ipc.continue_bake(target="SCENE") == {"FINISHED"}
    assert top.ipc.bake_frame_end == 13 and bottom.ipc.bake_frame_end == 13
    continued = _record([top, bottom])
    assert continued == _one_go([top, bottom], 13)


def _refused(**kwargs) -> str:
    return harness.bake_error("continue_bake", **kwargs)


def _full_snapshot():
    objs = sorted(
        (o for o in bpy.data.objects if o.type == "MESH" and o.data.shape_keys), key=lambda o: o.name
    )
    return harness.snapshot(), [_keys(o) for o in objs], dict(bpy.context.scene.get("_ipc_checkpoints", {}))


def test_changed_inputs_are_refused_naming_them_and_nothing_changes():
    top, bottom, ceiling = _scene(end=6)
    scene = bpy.context.scene
    assert bpy.ops.ipc.bake() == {"FINISHED"}
    before = _full_snapshot()

    top.ipc.youngs_modulus *= 2
    text = _refused(frame_end=9)
    assert "inputs changed since it was baked: body 'IPC_Square_Top'" in text, text
    assert _full_snapshot() == before
    top.ipc.youngs_modulus /= 2

    scene.ipc.substeps = 3
    text = _refused(frame_end=9)
    assert "setting 'Substeps' (2 -> 3)" in text, text
    scene.ipc.substeps = 2

    fc = harness.sub("adapter").fcurves_of(ceiling)[0]
    fc.keyframe_points[1].co.y -= 0.1
    text = _refused(frame_end=9)
    assert "the animation of 'IPC_Ceiling'" in text, text
    fc.keyframe_points[1].co.y += 0.1

    bottom.data.vertices[0].co.x += 1e-3
    text = _refused(frame_end=9)
    assert "the mesh of 'IPC_Square_Bottom'" in text, text
    bottom.data.vertices[0].co.x -= 1e-3

    scene.ipc.use_frame_range, scene.ipc.frame_start, scene.ipc.frame_end = True, 2, 9
    text = _refused()
    assert "the start frame (1 -> 2)" in text, text
    scene.ipc.use_frame_range = False

    extra = harness.make_mesh_object("Wall", [(2, 0, -1), (2, 0, 1)], edges=[(0, 1)], role="COLLIDER")
    text = _refused(frame_end=9)
    assert "changed since it was baked: collider 'Wall' (new). Undo" in text, text
    mesh = extra.data
    bpy.data.objects.remove(extra)
    bpy.data.meshes.remove(mesh)

    assert _full_snapshot() == before
    # everything back as it was: continuing works
    assert bpy.ops.ipc.continue_bake(frame_end=9) == {"FINISHED"}


def test_what_cannot_be_continued_is_refused():
    top, bottom, _ = _scene(end=6)
    assert "no deformable body selected has an IPC bake" in _refused(frame_end=9)
    assert bpy.ops.ipc.bake() == {"FINISHED"}
    bpy.ops.object.select_all(action="DESELECT")
    top.select_set(True)
    harness.sub("adapter").delete_bake(bottom)
    text = _refused(frame_end=9)
    assert "'IPC_Square_Bottom' is no longer part of it" in text, text
    assert bpy.ops.ipc.bake(target="SCENE") == {"FINISHED"}
    top.ipc.bake_partial = bottom.ipc.bake_partial = True  # as a kept partial bake
    assert "stopped at a solver failure" in _refused(frame_end=9)
    top.ipc.bake_partial = bottom.ipc.bake_partial = False
    del bpy.context.scene["_ipc_checkpoints"]
    assert "no stored solver state" in _refused(frame_end=9)
    # Delete Bake drops the stored state with the bake
    assert bpy.ops.ipc.bake(target="SCENE") == {"FINISHED"}
    assert len(bpy.context.scene["_ipc_checkpoints"]) == 1
    bpy.ops.object.select_all(action="SELECT")
    assert bpy.ops.ipc.delete_bake() == {"FINISHED"}
    assert len(bpy.context.scene["_ipc_checkpoints"]) == 0


def test_modal_continue_cancelled_leaves_the_earlier_bake_and_finished_equals_execute():
    top, bottom, _ = _scene(end=6)
    ops, adapter = harness.sub("operators"), harness.sub("adapter")
    assert bpy.ops.ipc.bake() == {"FINISHED"}
    before = _full_snapshot()
    # cancelled part-way: the live view showed the earlier frames and the new ones
    job = ops.RunningBake.start(
        bpy.context,
        "SELECTED",
        job=adapter.BakeJob(bpy.context, resume=adapter.prepare_resume(bpy.context, frame_end=12)),
    )
    assert job.frames_done == 6 and job.n_frames == 12
    for _ in range(3):
        assert ops.RunningBake.tick(0.0) is False
    assert job.frames_done == 9
    assert len(top.data.shape_keys.key_blocks) == 9  # the scratch mesh: frames 1-9
    assert harness.snapshot(during_bake=True) == before[0]
    ops.RunningBake.cancel()
    assert _full_snapshot() == before, "the cancelled continue changed the earlier bake"
    # run to the end through the modal path: the same as execute()
    job = ops.RunningBake.start(
        bpy.context,
        "SELECTED",
        job=adapter.BakeJob(bpy.context, resume=adapter.prepare_resume(bpy.context, frame_end=12)),
    )
    while not ops.RunningBake.tick(0.0):
        pass
    assert ops.RunningBake.take().finish() is True
    modal = _record([top, bottom])
    assert bpy.ops.ipc.bake() == {"FINISHED"}  # back to frame 6 ...
    assert bpy.ops.ipc.continue_bake(frame_end=12) == {"FINISHED"}  # ... and continued by execute()
    assert _record([top, bottom])[:2] == modal[:2]


def test_stored_state_survives_save_and_reload():
    _scene(end=6)
    assert bpy.ops.ipc.bake() == {"FINISHED"}
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "baked.blend")
        bpy.ops.wm.save_as_mainfile(filepath=path)
        del bpy.context.scene[harness.sub("resume").PROPERTY]  # in memory only: must come from the file
        bpy.ops.wm.open_mainfile(filepath=path)
    assert harness.sub("resume").PROPERTY in bpy.context.scene
    objs = [bpy.data.objects["IPC_Square_Bottom"], bpy.data.objects["IPC_Square_Top"]]
    for o in objs:
        o.select_set(True)
    assert bpy.ops.ipc.continue_bake(frame_end=11) == {"FINISHED"}
    continued = _record(objs)
    assert continued == _one_go(objs, 11)


# ----------------------------------------------------------------------------- start frame


def test_start_frame_bakes_from_the_state_at_that_frame():
    """Custom range from frame 8: the body starts where its keyed animation puts it at frame 8,
    the collider is sampled from frame 8 on, frames 1-7 show the meshes as modelled."""
    scene = bpy.context.scene
    scene.render.fps, scene.frame_start, scene.frame_end = 25, 1, 30
    body = harness.make_mesh_object(
        "Box", [(-0.1, 0, 0), (0.1, 0, 0), (0.1, 0, 0.2), (-0.1, 0, 0.2)], [(0, 1, 2, 3)]
    )
    body.location = (0.0, 0.0, 0.5)
    body.keyframe_insert("location", index=0, frame=1)
    body.location.x = 0.7
    body.keyframe_insert("location", index=0, frame=15)
    lid = harness.make_mesh_object("Lid", [(-1, 0, 0), (1, 0, 0)], edges=[(0, 1)], role="COLLIDER")
    lid.location.z = 2.0
    lid.keyframe_insert("location", index=2, frame=1)
    lid.location.z = 1.0
    lid.keyframe_insert("location", index=2, frame=20)
    s = scene.ipc
    s.substeps, s.use_ground, s.ground_height = 2, True, 0.0
    s.use_frame_range = True
    assert (s.frame_start, s.frame_end) == (1, 30), "the custom range starts as the scene's"
    s.frame_start, s.frame_end = 8, 14
    body.select_set(True)
    rest = harness.local_coords(body.data).tobytes()
    shown_before = _evaluated([body], range(1, 8))

    job = harness.sub("adapter").BakeJob(bpy.context, "SELECTED")
    scene.frame_set(8)
    world = np.array([body.matrix_world @ v.co for v in body.data.vertices])
    assert np.allclose(
        job.solver_scene.bodies[0].vertices, world[:, [0, 2]], atol=1e-6, rtol=0
    )  # mathutils: float32
    lid_z = np.asarray(job.solver_scene.colliders[0].positions)[:, 0, 1]
    dt = 1.0 / (25 * 2)
    for i in (0, 1, 5, 12):  # sampled from frame 8 on, every substep
        scene.frame_set(8 + i // 2, subframe=(i % 2) / 2)
        assert abs(lid_z[i] - lid.matrix_world.translation.z) < 1e-6
    assert job.solver_scene.params.dt == dt

    assert bpy.ops.ipc.bake() == {"FINISHED"}
    kb = body.data.shape_keys.key_blocks
    assert [k.name for k in kb] == [f"IPC_Bake_{f:05d}" for f in range(8, 15)]
    assert (body.ipc.bake_frame_start, body.ipc.bake_frame_end) == (8, 14)
    assert _evaluated([body], range(1, 8)) == shown_before, "frames before the start changed"
    assert _evaluated([body], [8]) == [[rest]]
    assert harness.local_coords(body.data).tobytes() == rest
    # it fell from where it was at frame 8 (the object itself keeps moving with its keys)
    scene.frame_set(14)
    z14 = min(
        (body.matrix_world @ v.co).z
        for v in body.evaluated_get(bpy.context.evaluated_depsgraph_get()).data.vertices
    )
    assert z14 < 0.5 - 0.05
    # and it can be continued from there: the same as baking frames 8-20 in one go
    assert bpy.ops.ipc.continue_bake(frame_end=20) == {"FINISHED"}
    continued = _record([body])
    s.frame_end = 20
    assert bpy.ops.ipc.bake() == {"FINISHED"}
    assert _record([body]) == continued


def test_continue_with_a_keyed_pinned_body_and_an_obstacle_body_equals_one_go():
    """Pins that follow their object's keys, an unselected baked body as an obstacle (moving
    with its own bake) and a rotating collider: continued 5 -> 12 is the bake in one go."""
    scene = bpy.context.scene
    scene.render.fps, scene.frame_start, scene.frame_end = 25, 1, 5
    scene.ipc.substeps, scene.ipc.use_ground, scene.ipc.ground_height = 2, True, -1.0
    verts = [(0, 0, 0), (0.5, 0, 0), (1, 0, 0), (0, 0, 0.5), (0.5, 0, 0.5), (1, 0, 0.5)]
    strip = harness.make_mesh_object("Strip", verts, faces=[(0, 1, 4, 3), (1, 2, 5, 4)])
    strip.ipc.youngs_modulus = 1e4
    strip.vertex_groups.new(name="pins").add([0, 3], 1.0, "REPLACE")
    strip.ipc.pin_group = "pins"
    for frame, x in ((1, 0.0), (12, 0.3)):
        strip.location.x = x
        strip.keyframe_insert("location", index=0, frame=frame)
    box = harness.make_mesh_object(
        "Box", [(0.6, 0, -0.6), (0.9, 0, -0.6), (0.9, 0, -0.3), (0.6, 0, -0.3)], [(0, 1, 2, 3)]
    )
    paddle = harness.make_mesh_object("Paddle", [(-0.4, 0, 0), (0.4, 0, 0)], edges=[(0, 1)], role="COLLIDER")
    paddle.location = (0.3, 0.0, -0.8)
    for frame, angle in ((1, 0.0), (12, 0.6)):
        paddle.rotation_euler.y = angle
        paddle.keyframe_insert("rotation_euler", index=1, frame=frame)
    bpy.context.view_layer.update()
    bpy.ops.object.select_all(action="DESELECT")
    box.select_set(True)
    scene.frame_end = 12
    assert bpy.ops.ipc.bake() == {"FINISHED"}  # the box alone: it falls onto the paddle
    scene.frame_end = 5
    bpy.ops.object.select_all(action="DESELECT")
    strip.select_set(True)
    assert bpy.ops.ipc.bake() == {"FINISHED"}  # the strip, with the baked box as an obstacle
    assert bpy.ops.ipc.continue_bake(frame_end=12) == {"FINISHED"}
    continued = _record([strip])
    scene.frame_end = 12
    assert bpy.ops.ipc.bake() == {"FINISHED"}
    assert _record([strip]) == continued
    kb = strip.data.shape_keys.key_blocks
    assert (
        np.abs(np.array([v.co[2] for v in kb[-1].data]) - np.array([v.co[2] for v in kb[4].data])).max()
        > 1e-3
    )


def test_a_bake_stored_by_another_solver_build_of_the_same_state_format_continues():
    """The stored state names the solver build that took it (a hash of its source), which
    is not checked: after an add-on update that left the state format alone the bake
    continues (here, with the same arithmetic, bit for bit as in one go)."""
    top, bottom, _ = _scene(end=6)
    checkpoint = harness.sub("solver.io.checkpoint")
    build = checkpoint.solver_build
    checkpoint.solver_build = lambda: "0123456789abcdef"  # baked by an earlier release
    try:
        assert bpy.ops.ipc.bake() == {"FINISHED"}
    finally:
        checkpoint.solver_build = build
    entry = json.loads(bpy.context.scene[harness.sub("resume").PROPERTY][top.ipc.bake_hash])
    assert harness.sub("solver").Checkpoint.from_text(entry["solver"]).solver_build == "0123456789abcdef"
    assert bpy.ops.ipc.continue_bake(frame_end=9) == {"FINISHED"}
    continued = _record([top, bottom])
    assert continued == _one_go([top, bottom], 9)


def test_a_bake_stored_in_another_state_format_is_refused_and_nothing_changes():
    """A stored state of another format (an add-on release whose solver stored other fields)
    cannot be continued: Continue Bake says so, naming both formats, instead of failing
    inside the solver, and changes nothing; baking again works."""
    _scene(end=6)
    checkpoint = harness.sub("solver.io.checkpoint")
    current = checkpoint.STATE_FORMAT
    checkpoint.STATE_FORMAT = current - 1  # as if baked by an earlier release
    try:
        assert bpy.ops.ipc.bake() == {"FINISHED"}
    finally:
        checkpoint.STATE_FORMAT = current
    before = _full_snapshot()
    text = _refused(frame_end=9)
    assert "made by another version of the add-on" in text, text
    assert f"format {current - 1}; this version reads format {current}" in text, text
    assert "bake it again from the start" in text, text
    assert _full_snapshot() == before
    assert bpy.ops.ipc.bake() == {"FINISHED"}
    assert bpy.ops.ipc.continue_bake(frame_end=9) == {"FINISHED"}
