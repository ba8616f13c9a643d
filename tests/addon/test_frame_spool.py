"""The computed frames of a bake wait on disk (frame_spool), not in memory: they come back with
the bits they were computed with, the memory of a bake does not grow with its frames, and a
full disk fails the bake with a message that says so and changes nothing."""

import errno
import os
import tracemalloc

import bpy
import harness
import numpy as np


def setup_function():
    harness.setup()


def teardown_function():
    harness.teardown()


def _squares(n_seg=2, n_frames=11):
    return harness.sub("examples").build_compressing_squares(
        bpy.context, n_seg=n_seg, fps=50, substeps=1, n_frames=n_frames
    )[:2]


def test_frames_come_back_with_their_bits():
    _squares(n_frames=9)
    job = harness.sub("adapter").BakeJob(bpy.context, "SCENE")
    computed = [[job.body_frames(j)[0].copy() for j in range(2)]]  # the rest shape
    while not job.done:
        job.step_frame()
        computed.append([job.sim.body_positions(j).copy() for j in range(2)])
    assert job.failure is None and job.frames_done == 9
    for j in range(2):
        expected = np.stack([frame[j] for frame in computed])
        assert np.abs(expected[-1] - expected[0]).max() > 1e-3  # the bodies moved
        assert job.body_frames(j).tobytes() == expected.tobytes()
    # Read back in any range, e.g. as the live view and the keys do.
    middle = job.frames.read(3, 7)
    for j in range(2):
        assert middle[j].tobytes() == np.stack([f[j] for f in computed[3:7]]).tobytes()


def test_memory_of_the_stepping_does_not_grow_with_the_frames():
    """What the bake job allocates while stepping 30 frames (the solver's own working memory
    aside, which depends on the contacts, not on the frames): kept in memory, as before the
    frames were spooled, the positions alone would be 30 frames x 2 bodies x 49 vertices x
    16 bytes = 47 kB."""
    _squares(n_seg=6, n_frames=45)
    bpy.context.scene.ipc.state_every = 1000  # no stored state on the way (they are the store)
    job = harness.sub("adapter").BakeJob(bpy.context, "SCENE")
    for _ in range(10):
        job.step_frame()
    positions_bytes = 30 * sum(job.sim.body_positions(j).nbytes for j in range(2))
    job_files = [tracemalloc.Filter(True, f"*{os.sep}{name}.py") for name in ("bake_job", "frame_spool")]
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot().filter_traces(job_files)
        for _ in range(30):
            job.step_frame()
        after = tracemalloc.take_snapshot().filter_traces(job_files)
    finally:
        tracemalloc.stop()
    assert job.failure is None and job.frames_done == 41
    grown = sum(d.size_diff for d in after.compare_to(before, "filename"))
    assert grown < positions_bytes / 4, (grown, positions_bytes)


def _keys(obj):
    return [kb.name for kb in obj.data.shape_keys.key_blocks], harness.evaluated_local(obj).tobytes()


def test_a_full_disk_fails_the_bake_and_changes_nothing():
    bodies = _squares()
    assert bpy.ops.ipc.bake(target="SCENE") == {"FINISHED"}
    bpy.context.scene.frame_set(7)
    earlier = {o.name: _keys(o) for o in bodies}
    before = harness.snapshot()
    spool = harness.sub("frame_spool")
    real, calls = spool.write_at, []

    def full_disk(fd, data, offset):
        calls.append(offset)
        if len(calls) == 5:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(fd, data, offset)

    spool.write_at = full_disk
    try:
        message = harness.bake_error(target="SCENE")
    finally:
        spool.write_at = real
    assert len(calls) == 5, "the bake never reached the failing write"
    assert "Could not keep frame 5 of the bake on disk (No space left on device)" in message, message
    assert "nothing was changed" in message, message
    assert harness.snapshot() == before
    assert {o.name: _keys(o) for o in bodies} == earlier
