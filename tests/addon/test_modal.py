"""The modal bake (driven through the same start/tick/cancel calls its modal() uses, because
timers never fire in background mode) and solver-failure handling."""

import bpy
import harness
import numpy as np


def setup_function():
    harness.setup()


def teardown_function():
    harness.teardown()


def _scene(n_frames=8):
    top, bottom, ceiling = harness.sub("examples").build_compressing_squares(
        bpy.context, n_seg=2, fps=50, substeps=2, n_frames=n_frames
    )
    bpy.context.scene.frame_set(4)  # not the start frame: must be restored
    return top, bottom, ceiling


def test_cancel_part_way_leaves_scene_as_before():
    _scene()
    ops = harness.sub("operators")
    before = harness.snapshot()
    job = ops.RunningBake.start(bpy.context, "SELECTED")
    for _ in range(3):
        assert ops.RunningBake.tick(0.0) is False  # zero budget: one frame per tick
    assert job.frames_done == 4 and job.n_frames == 8
    assert harness.snapshot(during_bake=True) == before, "user data changed while the bake was running"
    ops.RunningBake.cancel()
    assert ops.RunningBake.job is None
    assert harness.snapshot() == before
    assert bpy.ops.ipc.bake.poll()  # a new bake can start


def test_modal_ticks_give_the_same_bake_as_execute():
    top, _, _ = _scene()
    ops = harness.sub("operators")
    job = ops.RunningBake.start(bpy.context, "SELECTED")
    ticks = 1
    while not ops.RunningBake.tick(0.0):
        ticks += 1
    assert ticks == 7 and job.estimate_remaining() == 0.0
    assert ops.RunningBake.take().finish() is True
    modal = [[kb.data[i].co[:] for i in range(len(kb.data))] for kb in top.data.shape_keys.key_blocks]
    assert bpy.ops.ipc.bake() == {"FINISHED"}
    direct = [[kb.data[i].co[:] for i in range(len(kb.data))] for kb in top.data.shape_keys.key_blocks]
    assert len(modal) == 8 and modal == direct


class _FailingSim:
    """Wraps the solver and raises ConvergenceError at the given step (1-based)."""

    def __init__(self, sim, fail_at, error_cls):
        self.sim, self.fail_at, self.error_cls, self.calls = sim, fail_at, error_cls, 0

    def step(self):
        self.calls += 1
        if self.calls == self.fail_at:
            raise self.error_cls("no convergence after 100 iterations", step=self.calls)
        return self.sim.step()

    def body_positions(self, i):
        return self.sim.body_positions(i)

    def __getattr__(self, name):  # the rest (model, positions, x: the check between frames)
        return getattr(self.sim, name)


def _failing_job(fail_at):
    ops = harness.sub("operators")
    job = ops.RunningBake.start(bpy.context, "SELECTED")
    job.sim = _FailingSim(job.sim, fail_at, harness.sub("solver").ConvergenceError)
    assert ops.RunningBake.tick(None) is True
    return ops.RunningBake.take()


def test_solver_failure_reports_frame_and_changes_nothing_by_default():
    _scene()
    before = harness.snapshot()
    job = _failing_job(fail_at=6)  # step 6 = 2nd substep of the 3rd computed frame
    assert job.failure.startswith("Solver failed at frame 4:"), job.failure
    assert "no convergence" in job.failure
    assert job.finish(keep_partial=False) is False
    assert harness.snapshot() == before


def test_solver_failure_keeps_partial_bake_when_asked():
    top, bottom, _ = _scene()
    job = _failing_job(fail_at=6)
    assert job.finish(keep_partial=True) is True
    for obj in (top, bottom):
        assert len(obj.data.shape_keys.key_blocks) == 3  # frames 1..3
        assert obj.ipc.bake_partial and obj.ipc.bake_frame_end == 3
        assert "frame 4" in obj.ipc.bake_message
    assert "frame 4" in bpy.context.scene.ipc.stat_message
    # The partial keys are real simulation output: frame 3 differs from the rest pose.
    kb = top.data.shape_keys.key_blocks
    first = np.array([v.co[:] for v in kb[0].data])
    last = np.array([v.co[:] for v in kb[2].data])
    assert np.abs(last - first).max() > 1e-4


class _OperatorStandIn:
    """Plays the operator instance for IPC_OT_bake.modal(): in background mode invoke() falls
    through to execute() and no event loop delivers timer events, so the test sends them."""

    def __init__(self, cls):
        self.cls, self.time_budget_ms, self.reports = cls, 0, []  # 0: one frame per tick

    def report(self, kind, message):
        self.reports.append((set(kind), message))

    def __getattr__(self, name):  # _begin_modal, _end_modal, _finish from the class
        return getattr(self.cls, name).__get__(self)


def _modal_run(events):
    ops = harness.sub("operators")
    op = _OperatorStandIn(ops.IPC_OT_bake)
    job = ops.RunningBake.start(bpy.context, "SELECTED")
    op._begin_modal(bpy.context, job)
    result = None
    for kind in events:
        result = ops.IPC_OT_bake.modal(op, bpy.context, type("Event", (), {"type": kind}))
        if result not in ({"RUNNING_MODAL"}, {"PASS_THROUGH"}):
            break
    return op, result, job


def test_modal_escape_cancels_and_leaves_scene_unchanged():
    _scene()
    before = harness.snapshot()
    op, result, job = _modal_run(["TIMER", "MOUSEMOVE", "TIMER", "ESC"])
    assert result == {"CANCELLED"}
    assert job.frames_done == 3  # rest frame + one frame per timer event
    assert "cancelled" in op.reports[-1][1]
    assert harness.sub("operators").RunningBake.job is None
    assert harness.snapshot() == before


def test_modal_timer_events_run_the_bake_to_completion():
    top, _, _ = _scene()
    op, result, _ = _modal_run(["TIMER"] * 50)
    assert result == {"FINISHED"}
    assert op.reports[-1][0] == {"INFO"} and "baked 8 frames" in op.reports[-1][1]
    assert len(top.data.shape_keys.key_blocks) == 8
    assert harness.sub("operators").RunningBake.job is None


def _key_coords(kb):
    co = np.empty(len(kb.data) * 3, dtype=np.float32)
    kb.data.foreach_get("co", co)
    return co.reshape(-1, 3)


def test_live_view_shows_newest_frame_and_follows_with_the_cursor():
    """Issue 14: each computed frame is shown at once (a shape key on a scratch mesh), the
    cursor follows the newest frame unless the artist moved it, earlier frames can be scrubbed,
    and a cancel leaves everything (also an earlier bake) as it was."""
    top, bottom, _ = _scene(n_frames=10)
    ops = harness.sub("operators")
    scene = bpy.context.scene
    assert bpy.ops.ipc.bake() == {"FINISHED"}  # an earlier bake that a cancelled one must keep
    scene.frame_set(4)
    own = {o.name: o.data for o in (top, bottom)}
    old_keys = {
        o.name: [_key_coords(kb).tobytes() for kb in o.data.shape_keys.key_blocks] for o in (top, bottom)
    }
    before = harness.snapshot()
    job = ops.RunningBake.start(bpy.context, "SELECTED")
    for obj in (top, bottom):
        assert obj.data is not own[obj.name] and len(obj.data.shape_keys.key_blocks) == 1
    for k in range(1, 4):
        ops.RunningBake.tick(0.0)
        newest = job.frame_start + k
        assert scene.frame_current == newest, (scene.frame_current, newest)
        scene.frame_set(scene.frame_current)  # evaluate as the viewport does
        for obj in (top, bottom):
            keys = obj.data.shape_keys.key_blocks
            assert len(keys) == k + 1
            assert np.allclose(harness.evaluated_local(obj), _key_coords(keys[-1]), atol=1e-6)
        assert harness.snapshot(during_bake=True) == before
    # The artist scrubs back: the cursor stays there while the bake goes on; the frame shows.
    scene.frame_set(job.frame_start + 1)
    ops.RunningBake.tick(0.0)
    ops.RunningBake.tick(0.0)
    assert job.frames_done == 6 and scene.frame_current == job.frame_start + 1
    for obj in (top, bottom):
        keys = obj.data.shape_keys.key_blocks
        assert len(keys) == 6
        assert np.allclose(harness.evaluated_local(obj), _key_coords(keys[1]), atol=1e-6)
        assert not np.allclose(_key_coords(keys[1]), _key_coords(keys[5]), atol=1e-6)
    ops.RunningBake.cancel()
    assert harness.snapshot() == before
    for obj in (top, bottom):
        assert obj.data is own[obj.name]
        assert [_key_coords(kb).tobytes() for kb in obj.data.shape_keys.key_blocks] == old_keys[obj.name]


def test_live_bake_finished_equals_execute_and_cursor_returns():
    top, _, _ = _scene()
    ops = harness.sub("operators")
    scene = bpy.context.scene
    n_meshes, n_actions = len(bpy.data.meshes), len(bpy.data.actions)
    job = ops.RunningBake.start(bpy.context, "SELECTED")
    assert job.preview is not None
    while not ops.RunningBake.tick(0.0):
        pass
    assert scene.frame_current == job.frame_end
    assert ops.RunningBake.take().finish() is True
    assert scene.frame_current == 4  # the artist did not move it: back where the bake started
    # two key actions and the scene's diagnostics (frame_diagnostics)
    assert len(bpy.data.meshes) == n_meshes and len(bpy.data.actions) == n_actions + 3
    modal = [_key_coords(kb).tobytes() for kb in top.data.shape_keys.key_blocks]
    assert bpy.ops.ipc.bake() == {"FINISHED"}
    assert [_key_coords(kb).tobytes() for kb in top.data.shape_keys.key_blocks] == modal
