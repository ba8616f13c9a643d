"""Data safety: a bake that dies part-way changes nothing, the user's own animation survives a
bake and a Delete Bake, and a bake reloaded from a .blend re-bakes to the very same keys."""

import tempfile
from pathlib import Path

import bpy
import harness
import numpy as np

FAIL_FRAME = 5  # the frame whose computation raises


def setup_function():
    harness.setup()


def teardown_function():
    harness.teardown()


def _squares(n_frames=11):
    top, bottom, ceiling = harness.sub("examples").build_compressing_squares(
        bpy.context, n_seg=2, fps=50, substeps=2, n_frames=n_frames
    )
    bpy.context.scene.frame_set(3)  # not the start frame: must be restored too
    return top, bottom, ceiling


class _ExplodingStep:
    """Replaces Simulation.step on the class (both bake paths create their own Simulation inside
    BakeJob) with one that raises a plain RuntimeError, i.e. a solver bug rather than a
    ConvergenceError, on the first substep of FAIL_FRAME. Restores the method on exit."""

    def __init__(self, substeps):
        self.cls = harness.sub("adapter").Simulation
        self.fail_at = (FAIL_FRAME - 2) * substeps + 1  # frame 2 is computed by steps 1..substeps
        self.calls = 0

    def __enter__(self):
        original = self.original = self.cls.step

        def step(sim):
            self.calls += 1
            if self.calls == self.fail_at:
                raise RuntimeError("boom: simulated solver bug")
            return original(sim)

        self.cls.step = step
        return self

    def __exit__(self, *exc):
        self.cls.step = self.original
        return False


def _assert_untouched(before, rest, action_names):
    assert harness.snapshot() == before, "the failed bake changed the scene"
    for name, co in rest.items():
        obj = bpy.data.objects[name]
        assert obj.data.shape_keys is None and not obj.ipc.is_baked, name
        assert harness.local_coords(obj.data).tobytes() == co, name
        assert harness.evaluated_local(obj).tobytes() == co, name
    assert len(bpy.data.shape_keys) == 0
    assert sorted(a.name for a in bpy.data.actions) == action_names


def _rest(objs):
    return {o.name: harness.local_coords(o.data).tobytes() for o in objs}


def test_exception_mid_bake_in_operator_changes_nothing():
    top, bottom, _ = _squares()
    rest = _rest([top, bottom])
    actions = sorted(a.name for a in bpy.data.actions)
    before = harness.snapshot()
    with _ExplodingStep(bpy.context.scene.ipc.substeps) as boom:
        message = harness.bake_error()
    assert boom.calls == boom.fail_at, "the bake never reached the failing frame"
    assert f"frame {FAIL_FRAME}" in message and "RuntimeError" in message, message
    assert "boom" in message and "nothing was changed" in message, message
    _assert_untouched(before, rest, actions)
    # The add-on is not left stuck: the next bake runs and writes keys.
    assert harness.sub("operators").RunningBake.job is None
    assert bpy.ops.ipc.bake() == {"FINISHED"}
    assert len(top.data.shape_keys.key_blocks) == 11


def test_exception_mid_bake_in_modal_steps_changes_nothing():
    top, bottom, _ = _squares()
    ops = harness.sub("operators")
    rest = _rest([top, bottom])
    actions = sorted(a.name for a in bpy.data.actions)
    before = harness.snapshot()
    with _ExplodingStep(bpy.context.scene.ipc.substeps) as boom:
        job = ops.RunningBake.start(bpy.context, "SELECTED")
        ticks = 0
        while not ops.RunningBake.tick(0.0):  # one frame per tick, as the modal does
            ticks += 1
            assert harness.snapshot(during_bake=True) == before, (
                "user data changed while the bake was running"
            )
    assert boom.calls == boom.fail_at and ticks == FAIL_FRAME - 2
    assert job.frames_done == FAIL_FRAME - 1
    assert job.failure.startswith(f"Solver failed at frame {FAIL_FRAME}: RuntimeError"), job.failure
    # The operator's end-of-modal step: reports the error, writes nothing (keep_partial off).
    stand_in = harness.Reports()
    result = ops.IPC_OT_bake._finish(stand_in, bpy.context, ops.RunningBake.take())
    assert result == {"CANCELLED"}
    assert [kind for kind, _ in stand_in.reports] == [{"ERROR"}]
    assert "boom" in stand_in.reports[0][1]
    _assert_untouched(before, rest, actions)
    assert bpy.ops.ipc.bake.poll()


def _user_animation(obj, frames):
    """The user's animation as Blender evaluates it (no Action.fcurves needed: Blender 5.0
    dropped it), plus the raw keyframe points through the add-on's version-neutral reader."""
    scene = bpy.context.scene
    evaluated = []
    for frame, sub in frames:
        scene.frame_set(frame, subframe=sub)
        evaluated.append((tuple(obj.location), obj["stiffness_hint"]))
    curves = sorted(
        (fc.data_path, fc.array_index, tuple(tuple(kp.co) for kp in fc.keyframe_points))
        for fc in harness.sub("adapter").fcurves_of(obj)
    )
    return evaluated, curves


def test_users_animation_and_properties_survive_bake_and_delete():
    scene = bpy.context.scene
    scene.render.fps, scene.frame_start, scene.frame_end = 25, 1, 6
    scene.ipc.substeps = 2
    obj = harness.make_mesh_object(
        "Mover", [(0, 0, 0), (0.5, 0, 0), (0.5, 0, 0.5), (0, 0, 0.5)], faces=[(0, 1, 2, 3)]
    )
    obj["stiffness_hint"] = 1.0
    obj["note"] = "hand-made"
    obj.data["mesh_note"] = "keep"
    for frame, x, z, hint in ((1, 0.0, 0.0, 1.0), (3, 0.4, 0.2, 2.5), (6, 1.0, -0.3, 4.0)):
        obj.location = (x, 0.0, z)  # in the XZ simulation plane
        obj["stiffness_hint"] = hint
        obj.keyframe_insert("location", frame=frame)
        obj.keyframe_insert('["stiffness_hint"]', frame=frame)
    bpy.context.view_layer.update()
    frames = [(1, 0.0), (2, 0.0), (2, 0.5), (3, 0.0), (4, 0.25), (6, 0.0)]
    action = obj.animation_data.action
    action_name, action_ptr = action.name, action.as_pointer()
    n_slots = len(getattr(action, "slots", ()))  # Blender 4.4+: one slot per animated ID
    anim = _user_animation(obj, frames)
    # The animation really moves the object (else the comparisons below prove nothing).
    assert len({e[0] for e in anim[0]}) == len(frames) and len(anim[1]) == 4
    n_actions = len(bpy.data.actions)
    rest = harness.local_coords(obj.data).tobytes()
    scene.frame_set(2)

    assert bpy.ops.ipc.bake(target="SCENE") == {"FINISHED"}
    assert obj.ipc.is_baked and len(obj.data.shape_keys.key_blocks) == 6
    # The bake keys eval_time into an action of its own, never into the user's (Blender 4.4+
    # would add a slot for the Key to the object's action if not told otherwise).
    assert len(bpy.data.actions) == n_actions + 2  # and one for the scene's diagnostics
    assert obj.data.shape_keys.animation_data.action.as_pointer() != action_ptr
    assert obj.animation_data.action.as_pointer() == action_ptr
    assert obj.animation_data.action.name == action_name
    assert len(getattr(obj.animation_data.action, "slots", ())) == n_slots
    assert _user_animation(obj, frames) == anim, "the bake changed the user's animation"

    obj.select_set(True)
    assert bpy.ops.ipc.delete_bake() == {"FINISHED"}
    assert obj.data.shape_keys is None and not obj.ipc.is_baked
    assert harness.local_coords(obj.data).tobytes() == rest
    assert len(bpy.data.actions) == n_actions and action_name in bpy.data.actions
    assert obj.animation_data.action.as_pointer() == action_ptr
    assert obj.animation_data.action.name == action_name
    assert len(getattr(obj.animation_data.action, "slots", ())) == n_slots
    assert _user_animation(obj, frames) == anim, "Delete Bake changed the user's animation"
    assert obj["note"] == "hand-made" and obj.data["mesh_note"] == "keep"


def _keys(objs):
    """Every baked key's coordinates as bytes, plus the key and action names."""
    out = {}
    for obj in objs:
        key = obj.data.shape_keys
        blocks = []
        for kb in key.key_blocks:
            co = np.empty(len(kb.data) * 3, dtype=np.float32)
            kb.data.foreach_get("co", co)
            blocks.append((kb.name, kb.frame, co.tobytes()))
        out[obj.name] = (key.name, key.animation_data.action.name, blocks)
    return out


def test_rebake_after_reload_gives_identical_keys():
    # Save/reload playback is already checked in test_bake; here: the reloaded file still counts
    # as up to date, and baking it again reproduces the keys bit for bit with no leftovers.
    adapter = harness.sub("adapter")
    names = ("IPC_Square_Bottom", "IPC_Square_Top")
    _squares()
    assert bpy.ops.ipc.bake() == {"FINISHED"}
    first = _keys([bpy.data.objects[n] for n in names])
    counts = {n: len(getattr(bpy.data, n)) for n in ("actions", "shape_keys", "meshes")}
    assert all(len(v[2]) == 11 for v in first.values())
    assert first[names[1]][2][0][2] != first[names[1]][2][-1][2], "bake did not move the body"
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "baked.blend")
        bpy.ops.wm.save_as_mainfile(filepath=path)
        bpy.ops.wm.open_mainfile(filepath=path)
    objs = [bpy.data.objects[n] for n in names]
    assert _keys(objs) == first, "save + reload changed the keys"
    assert not any(adapter.is_outdated(bpy.context, o) for o in objs)
    for obj in bpy.context.view_layer.objects:
        obj.select_set(obj.name in names)
    assert bpy.ops.ipc.bake() == {"FINISHED"}
    assert _keys(objs) == first, "re-bake after reload differs"
    assert {n: len(getattr(bpy.data, n)) for n in counts} == counts


class _Modal:
    """Stand-in for the modal operator instance: collects reports; its timer and
    status-bar helpers are no-ops in background mode (there is no window)."""

    def __init__(self):
        self.reports = []
        self._timer = None

    def report(self, kind, text):
        self.reports.append((kind, text))


def test_loading_another_file_stops_a_running_bake_and_changes_nothing():
    """A modal bake interrupted by File > Open: the load handler asks the bake to stop, the
    operator's next event cancels it without writing, the newly opened file gets nothing and
    the original file on disk is exactly as before the bake."""
    top, bottom, _ = _squares()
    ops = harness.sub("operators")
    rest = _rest([top, bottom])
    with tempfile.TemporaryDirectory() as tmp:
        original = str(Path(tmp) / "original.blend")
        other = str(Path(tmp) / "other.blend")
        bpy.ops.wm.save_as_mainfile(filepath=original)
        bpy.data.objects[top.name].location.x += 1.0  # a different file to switch to
        bpy.ops.wm.save_as_mainfile(filepath=other)
        bpy.ops.wm.open_mainfile(filepath=original)
        job = ops.RunningBake.start(bpy.context, "SCENE")
        for _ in range(3):
            assert not ops.RunningBake.tick(0.0)
        assert job.frames_done >= 3
        bpy.ops.wm.open_mainfile(filepath=other)  # the user opens another file
        assert ops.RunningBake.cancel_requested, "the load handler did not stop the bake"
        modal = _Modal()
        if hasattr(ops.IPC_OT_bake, "_end_modal"):
            modal._end_modal = lambda context: None  # no timer/progress without a window
        result = ops.IPC_OT_bake.modal(modal, bpy.context, type("Event", (), {"type": "TIMER"})())
        assert result == {"CANCELLED"}
        assert ops.RunningBake.job is None
        assert "nothing was baked" in modal.reports[0][1], modal.reports
        assert len(bpy.data.shape_keys) == 0, "the bake wrote into the newly opened file"
        bpy.ops.wm.open_mainfile(filepath=original)
        for name, co in rest.items():
            obj = bpy.data.objects[name]
            assert obj.data.shape_keys is None and not obj.ipc.is_baked, name
            assert harness.local_coords(obj.data).tobytes() == co, name
        assert len(bpy.data.shape_keys) == 0
    assert bpy.ops.ipc.bake.poll()
