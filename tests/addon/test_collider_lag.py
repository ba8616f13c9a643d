"""A collider keyed further than the bodies can give way (issue 11, point 5): the solver's
collider lags behind its animation, so the baked body overlaps the collider as the artist sees
it. The bake must warn (naming the collider and the frames), store the frames, and the panel's
smallest distance must not be positive. A normal bake gives no such warning."""

import bpy
import harness

FPS, SUBSTEPS, N_FRAMES = 50, 2, 31  # dt = 0.01 s
DHAT = 0.002
BLOCK = 0.2  # side [m]; the block sits on z = 0
CEILING_START, CEILING_STOP, STOP_FRAME = 0.25, 0.15, 26  # bottom face z; keyed 5 cm into it


def setup_function():
    harness.setup()


def teardown_function():
    harness.teardown()


def _ceiling(stop=CEILING_STOP):
    """A 1 m wide slab (a closed collider) whose bottom face descends linearly from
    CEILING_START at frame 1 to `stop` at STOP_FRAME, then holds."""
    corners = [(-0.5, 0, 0), (0.5, 0, 0), (0.5, 0, 0.1), (-0.5, 0, 0.1)]
    obj = harness.make_mesh_object("Lid", corners, faces=[(0, 1, 2, 3)], role="COLLIDER")
    obj.ipc.friction = 0.0
    for frame, z in ((1, CEILING_START), (STOP_FRAME, stop)):
        obj.location.z = z
        obj.keyframe_insert("location", index=2, frame=frame)
    for fc in harness.sub("adapter").fcurves_of(obj):
        for kp in fc.keyframe_points:
            kp.interpolation = "LINEAR"
        fc.update()
    return obj


def _scene(stop=CEILING_STOP):
    scene = bpy.context.scene
    scene.render.fps, scene.render.fps_base = FPS, 1.0
    scene.frame_start, scene.frame_end = 1, N_FRAMES
    block = harness.pinned_block(BLOCK)
    lid = _ceiling(stop)
    s = scene.ipc
    s.plane, s.substeps = "XZ", SUBSTEPS
    s.dhat_mode, s.dhat = "ABSOLUTE", DHAT
    bpy.context.view_layer.update()
    for obj in bpy.context.view_layer.objects:
        obj.select_set(obj == block)
    return block, lid


def _overlap_per_frame(block, lid):
    """Independently, from what Blender shows: how far the baked block's top sticks out above
    the animated slab's bottom face, per frame (negative: the gap)."""
    scene = bpy.context.scene
    out = {}
    for frame in range(1, N_FRAMES + 1):
        scene.frame_set(frame)
        top = harness.evaluated_local(block)[:, 2].max() + block.matrix_world.translation.z
        out[frame] = float(top - lid.matrix_world.translation.z)
    return out


class _Box:
    """Records the labels a panel draws."""

    def __init__(self):
        self.labels = []

    def label(self, text="", **kwargs):
        self.labels.append((text, kwargs.get("icon")))


def test_collider_keyed_into_a_pinned_body_warns_with_frames_and_overlap():
    block, lid = _scene()
    ops, adapter, panels = harness.sub("operators"), harness.sub("adapter"), harness.sub("panels")

    # The operator's report, captured as the modal bake's end step makes it.
    job = adapter.BakeJob(bpy.context, "SELECTED")
    job.run()
    stand_in = harness.Reports()
    assert ops.IPC_OT_bake._finish(stand_in, bpy.context, job) == {"FINISHED"}
    kinds = [kind for kind, _ in stand_in.reports]
    assert kinds == [{"INFO"}, {"WARNING"}], stand_in.reports
    warning = stand_in.reports[-1][1]

    s = bpy.context.scene.ipc
    overlap = _overlap_per_frame(block, lid)
    frames = [f for f, d in overlap.items() if d > 0.0]
    assert frames and frames[-1] == N_FRAMES and frames == list(range(frames[0], N_FRAMES + 1)), overlap
    expected_frames = f"{frames[0]}-{N_FRAMES}"
    depth = max(overlap.values())
    # keyed 5 cm into the block; its pins, held by a penalty themselves, give way by part of it
    assert depth > 0.01, depth

    # Stored statistics: the frames, the overlap depth, the lag.
    assert s.stat_overlap_frames == expected_frames, (s.stat_overlap_frames, overlap)
    assert s.stat_collider_near and s.stat_collider_distance < 0.0
    assert abs(-s.stat_collider_distance - depth) < 1e-5, (s.stat_collider_distance, depth)
    assert s.stat_collider_lag > depth
    assert s.stat_lag_frames.endswith(f"-{N_FRAMES}"), s.stat_lag_frames
    (col,) = s.stat_colliders
    assert col.name == "Lid" and col.overlap_frames == expected_frames and col.near
    assert abs(col.distance - s.stat_collider_distance) < 1e-9 and col.lag == s.stat_collider_lag
    assert s.stat_warning == warning
    # The solver's own gap stayed positive (its collider was held back) ...
    assert s.stat_min_distance > 0.0

    # The warning names the collider, the frames, the amounts and what to do.
    amount = adapter.format_length(-s.stat_collider_distance)
    for part in ("'Lid'", f"frames {expected_frames}", amount, "stop higher", "softer"):
        assert part in warning, (part, warning)

    # ... but the panel's smallest distance is the overlap, shown as such.
    assert panels.smallest_distance(s) == s.stat_collider_distance < 0.0
    box = _Box()
    panels.draw_distances(box, s)
    texts = [t for t, _ in box.labels]
    assert texts[0].startswith("Smallest distance: -") and texts[0].endswith("(overlap)"), texts
    assert any(t.startswith("Overlap ") and "Lid" in t and expected_frames in t for t in texts), texts

    # The same through bpy.ops (a WARNING report does not fail the operator).
    assert bpy.ops.ipc.bake() == {"FINISHED"}
    assert s.stat_overlap_frames == expected_frames and s.stat_warning


def test_collider_that_stops_above_the_body_gives_no_warning():
    """Keyed to stop 1 mm above the block (within the contact gap): it reaches every key,
    nothing to report."""
    _scene(stop=BLOCK + 0.001)
    job = harness.sub("adapter").BakeJob(bpy.context, "SELECTED")
    job.run()
    stand_in = harness.Reports()
    assert harness.sub("operators").IPC_OT_bake._finish(stand_in, bpy.context, job) == {"FINISHED"}
    assert [kind for kind, _ in stand_in.reports] == [{"INFO"}], stand_in.reports
    s = bpy.context.scene.ipc
    assert s.stat_warning == "" and s.stat_overlap_frames == "" and s.stat_lag_frames == ""
    assert s.stat_collider_lag < DHAT
    (col,) = s.stat_colliders
    assert col.overlap_frames == "" and col.lag_frames == ""
    assert harness.sub("panels").smallest_distance(s) >= 0.0


def test_compressing_squares_bake_gives_no_warning():
    harness.sub("examples").build_compressing_squares(bpy.context, n_seg=2, fps=50, substeps=2, n_frames=41)
    assert bpy.ops.ipc.bake() == {"FINISHED"}
    s = bpy.context.scene.ipc
    assert s.stat_warning == "" and s.stat_overlap_frames == "" and s.stat_lag_frames == ""
    assert s.stat_collider_lag < 1e-12  # rounding only: the ceiling reaches every key
    assert s.stat_collider_near and s.stat_collider_distance >= s.stat_min_distance > 0.0
    assert harness.sub("panels").smallest_distance(s) == s.stat_min_distance
