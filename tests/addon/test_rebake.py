"""Bake from Here (issue 33, point 1).

A bake stores the solver state every K frames; Bake from Here at frame F keeps the frames
before F, restarts from the stored state before F and bakes F..end. With nothing changed the
result is the bake in one go bit for bit: shape keys, records, statistics, every stored solver
state and the final one. With a collider's animation changed from F on, the frames from F follow
it (the bake in one go of the changed scene, bit for bit) and the frames before F are the
earlier bake's. An animation change before F, or a change that holds for all frames, is refused
naming it, and nothing changes; so does a failure while storing. Esc in the modal bake leaves
everything as it was; Delete Bake removes the stored states."""

import json

import bpy
import harness
import numpy as np
from test_continue import _full_snapshot, _keys, _record

PROPERTY = "_ipc_checkpoints"
# Debian's Blender 3.4 does not repeat the solver's float64 bits from one run to the next in one
# process (np.log there, see scripts/repeatability.py): the float32 shape keys and the records
# agree, the stored float64 states not always. There the stored entries are compared without them.
FLOAT64_REPEATABLE = bpy.app.version >= (4, 0, 0)


def setup_function():
    harness.setup()


def teardown_function():
    harness.teardown()


def _scene(n_seg=4, end=30, every=4):
    """The compressing squares (they land on each other and the ceiling presses them from about
    frame 20 on); the ceiling also has an x channel keyed LINEAR at frames 20 and 30 (at rest:
    x = 0), which the tests change to move it sideways after frame 20 only."""
    top, bottom, ceiling = harness.sub("examples").build_compressing_squares(
        bpy.context, n_seg=n_seg, fps=25, substeps=2, n_frames=end
    )
    for frame in (20, 30):
        ceiling.keyframe_insert("location", index=0, frame=frame)
    for fc in harness.sub("adapter").fcurves_of(ceiling):
        for kp in fc.keyframe_points:
            kp.interpolation = "LINEAR"
    bpy.context.scene.ipc.state_every = every
    bpy.context.scene.frame_set(3)
    return top, bottom, ceiling


def _ceiling_x(ceiling):
    return next(
        fc
        for fc in harness.sub("adapter").fcurves_of(ceiling)
        if fc.data_path == "location" and fc.array_index == 0
    )


def _entry(obj):
    return json.loads(bpy.context.scene[PROPERTY][obj.ipc.bake_hash])


def _stored(obj):
    """The stored entry without wall times (which differ between runs), and without the
    solver's float64 states where this Python does not repeat them (FLOAT64_REPEATABLE)."""
    entry = _entry(obj)
    del entry["stats"]["wall_time"]
    for state in entry["states"].values():
        del state["wall_time"]
        if not FLOAT64_REPEATABLE:
            del state["solver"], state["min_distance"]
    if not FLOAT64_REPEATABLE:
        del entry["solver"], entry["stats"]["collider_distance"], entry["stats"]["min_distance"]
    return entry


def _differences(a: dict, b: dict, where="") -> list[str]:
    """The paths at which two stored entries differ (for the failure message)."""
    if not isinstance(a, dict) or not isinstance(b, dict):
        return [] if a == b else [where]
    return [d for k in sorted(set(a) | set(b)) for d in _differences(a.get(k), b.get(k), f"{where}/{k}")]


def _bake_from(frame, **kwargs):
    bpy.context.scene.frame_set(frame)
    return bpy.ops.ipc.bake_from_here(**kwargs)


def test_bake_from_here_unchanged_is_the_bake_in_one_go():
    """n_seg 8 (164 vertices, the stored orderings matter); states every 4 frames; from frames
    2 (restart at the first frame), 13 (the state at 9: frames 10-12 computed again) and 26
    (in contact, state at 25): each the bake in one go, shape keys, records, statistics, stored
    states and final state."""
    top, bottom, _ = _scene(n_seg=8)
    objs = [top, bottom]
    assert bpy.ops.ipc.bake(target="SCENE") == {"FINISHED"}
    one_go, stored = _record(objs), _stored(top)
    assert sorted(map(int, stored["states"])) == [1, 5, 9, 13, 17, 21, 25, 29]
    assert bpy.context.scene.ipc.stat_states == 8 and bpy.context.scene.ipc.stat_state_bytes > 1000
    for frame in (2, 13, 26):
        assert _bake_from(frame) == {"FINISHED"}
        assert bpy.context.scene.frame_current == frame
        again = _record(objs)
        assert again[0] == one_go[0], f"from {frame}: shape keys differ from the bake in one go"
        assert again[1:] == one_go[1:], f"from {frame}: records or statistics differ"
        assert _stored(top) == stored, (
            f"from {frame}: stored entry differs: {_differences(_stored(top), stored)}"
        )
    # and the squares were pressed after frame 13
    kb = top.data.shape_keys.key_blocks
    z = [np.array([v.co[2] for v in kb[f - 1].data]) for f in (13, 30)]
    assert np.abs(z[1] - z[0]).max() > 1e-2


def test_changed_animation_after_the_frame_is_followed_and_before_it_is_kept():
    top, bottom, ceiling = _scene()
    objs = [top, bottom]
    assert bpy.ops.ipc.bake(target="SCENE") == {"FINISHED"}
    before = [_keys(o) for o in objs]
    _ceiling_x(ceiling).keyframe_points[1].co.y = 0.3  # moves sideways from frame 20 on
    # frame 20 samples the motion after it (its last substep's hair): from 21 is refused
    text = harness.bake_error("bake_from_here", frame=21)
    assert "the animation of 'IPC_Ceiling' changed at frame 20, before it" in text, text
    assert "Bake from frame 20 or earlier" in text, text
    assert _bake_from(20) == {"FINISHED"}
    rebaked = _record(objs)
    stored = _stored(top)
    after = [_keys(o) for o in objs]
    for b, a in zip(before, after, strict=True):
        assert a[0][:19] == b[0][:19], "a frame before 20 changed"
        assert a[1][:19] == b[1][:19], "an eval_time key before 20 changed"
        assert a[0][-1][3] != b[0][-1][3], "the last frame did not follow the new animation"
    # the bake in one go of the changed scene, bit for bit
    assert bpy.ops.ipc.bake(target="SCENE") == {"FINISHED"}
    assert _record(objs) == rebaked
    assert _stored(top) == stored, _differences(_stored(top), stored)


def test_changes_that_hold_for_all_frames_are_refused_naming_them_and_nothing_changes():
    top, bottom, ceiling = _scene(end=12)
    scene = bpy.context.scene
    assert bpy.ops.ipc.bake(target="SCENE") == {"FINISHED"}
    scene.frame_set(8)
    before = _full_snapshot()

    top.ipc.youngs_modulus *= 2
    text = harness.bake_error("bake_from_here")
    assert "inputs changed since it was baked: body 'IPC_Square_Top'" in text, text
    top.ipc.youngs_modulus /= 2

    scene.ipc.substeps = 3
    assert "setting 'Substeps' (2 -> 3)" in harness.bake_error("bake_from_here")
    scene.ipc.substeps = 2

    bottom.data.vertices[0].co.x += 1e-3
    assert "the mesh of 'IPC_Square_Bottom'" in harness.bake_error("bake_from_here")
    bottom.data.vertices[0].co.x -= 1e-3

    fc = next(fc for fc in harness.sub("adapter").fcurves_of(ceiling) if fc.array_index == 2)
    fc.keyframe_points[1].co.y -= 0.1  # the descent: every frame from the start
    text = harness.bake_error("bake_from_here")
    assert "the animation of 'IPC_Ceiling' changed at frame 1, before it" in text, text
    fc.keyframe_points[1].co.y += 0.1

    assert "use Bake" in harness.bake_error("bake_from_here", frame=1)
    assert "use Continue Bake" in harness.bake_error("bake_from_here", frame=13)
    assert _full_snapshot() == before
    # the stored-state interval is no input: changing it keeps the bake current
    scene.ipc.state_every = 3
    assert not harness.sub("adapter").is_outdated(bpy.context, top)
    assert bpy.ops.ipc.bake_from_here() == {"FINISHED"}


def test_modal_cancel_restores_everything_and_finished_equals_execute():
    top, bottom, _ = _scene(end=14)
    ops, rebake = harness.sub("operators"), harness.sub("rebake")
    assert bpy.ops.ipc.bake(target="SCENE") == {"FINISHED"}
    bpy.context.scene.frame_set(11)
    before = _full_snapshot()
    job = ops.RunningBake.start(bpy.context, "SELECTED", job=rebake.prepare(bpy.context, "SCENE", 11))
    assert job.frames_done == 9  # restarted at the state of frame 9
    for _ in range(3):
        assert ops.RunningBake.tick(0.0) is False
    assert len(top.data.shape_keys.key_blocks) == 12  # the live view: frames 1-12
    assert harness.snapshot(during_bake=True) == before[0]
    ops.RunningBake.cancel()  # Esc
    assert _full_snapshot() == before, "the cancelled Bake from Here changed something"
    job = ops.RunningBake.start(bpy.context, "SELECTED", job=rebake.prepare(bpy.context, "SCENE", 11))
    while not ops.RunningBake.tick(0.0):
        pass
    assert ops.RunningBake.take().finish() is True
    modal = _record([top, bottom])
    assert bpy.ops.ipc.bake(target="SCENE") == {"FINISHED"}
    assert _bake_from(11, target="SCENE") == {"FINISHED"}
    assert _record([top, bottom]) == modal


def test_a_failure_while_storing_changes_nothing_and_delete_removes_the_states():
    _scene(end=10)
    assert bpy.ops.ipc.bake(target="SCENE") == {"FINISHED"}
    bpy.context.scene.frame_set(7)
    before = _full_snapshot()
    bake_job = harness.sub("bake_job")
    entry = bake_job.checkpoint_entry

    def full_disk(job):
        raise OSError(28, "No space left on device")

    bake_job.checkpoint_entry = full_disk
    try:
        text = harness.bake_error("bake_from_here", target="SCENE")
    finally:
        bake_job.checkpoint_entry = entry
    assert "Could not store the solver states of the bake" in text, text
    assert "No space left on device" in text and "nothing was changed" in text, text
    assert _full_snapshot() == before
    assert bpy.ops.ipc.bake_from_here(target="SCENE") == {"FINISHED"}
    bpy.ops.object.select_all(action="SELECT")
    assert bpy.ops.ipc.delete_bake() == {"FINISHED"}
    assert len(bpy.context.scene[PROPERTY]) == 0
    assert bpy.context.scene.ipc.stat_states == 0
