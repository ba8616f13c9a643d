"""Per-frame diagnostics (issue 35, point 6): a bake keys, on the scene, one value per computed
frame of the smallest gap, active contacts, Newton iterations, non-converged steps, collider lag,
motion-check splits and crossings between frames. The expected values come from running the
solver on the bake's own scene step by step and combining each frame's substeps here."""

import math

import bpy
import harness
import numpy as np

FPS, SUBSTEPS, N_FRAMES = 25, 2, 6
NAMES = (
    "ipc_min_gap",
    "ipc_active_contacts",
    "ipc_newton_iterations",
    "ipc_nonconverged_steps",
    "ipc_collider_lag",
    "ipc_motion_splits",
    "ipc_frame_crossings",
)


def setup_function():
    harness.setup()


def teardown_function():
    harness.teardown()


def _scene():
    """A 0.2 m square 3 mm above a fixed slab, falling onto it."""
    scene = bpy.context.scene
    scene.render.fps, scene.render.fps_base = FPS, 1.0
    scene.frame_start, scene.frame_end = 1, N_FRAMES
    t = np.linspace(-0.1, 0.1, 3)
    xs, zs = np.meshgrid(t, t + 0.103)
    verts = np.column_stack([xs.ravel(), np.zeros(9), zs.ravel()])
    quads = [(0, 1, 4, 3), (1, 2, 5, 4), (3, 4, 7, 6), (4, 5, 8, 7)]
    block = harness.make_mesh_object("Block", verts, faces=quads)
    slab = [(-0.5, 0, -0.1), (0.5, 0, -0.1), (0.5, 0, 0), (-0.5, 0, 0)]
    harness.make_mesh_object("Floor", slab, faces=[(0, 1, 2, 3)], role="COLLIDER")
    s = scene.ipc
    s.plane, s.substeps = "XZ", SUBSTEPS
    s.dhat_mode, s.dhat = "ABSOLUTE", 0.002
    bpy.context.view_layer.update()
    for obj in bpy.context.view_layer.objects:
        obj.select_set(obj == block)


def _expected(solver_scene):
    """Per computed frame, the diagnostics from a fresh solver run of the bake's scene."""
    solver, motion_check = harness.sub("solver"), harness.sub("solver.motion_check")
    sim = solver.Simulation(solver_scene)
    rows = []
    for _ in range(N_FRAMES - 1):
        x0 = sim.positions
        st = [sim.step() for _ in range(SUBSTEPS)]
        gaps = [s.min_distance for s in st]
        crossing = motion_check.crossing_stencils(sim.model, x0, sim.x)
        rows.append(
            (
                min(gaps) if math.isfinite(min(gaps)) else -1.0,
                max(s.active_contacts for s in st),
                sum(s.newton_iters for s in st),
                sum(not s.converged for s in st),
                max(s.collider_lag for s in st),
                sum(s.motion_splits for s in st),
                len(crossing),
            )
        )
    return np.array(rows, float)


def _keys(scene, name):
    fcurves = harness.sub("adapter").fcurves_of(scene)
    (fc,) = [fc for fc in fcurves if fc.data_path == f'["{name}"]']
    co = np.empty(2 * len(fc.keyframe_points))
    fc.keyframe_points.foreach_get("co", co)
    return co.reshape(-1, 2), fc


def test_bake_keys_the_solver_stats_per_frame_on_the_scene():
    _scene()
    assert bpy.ops.ipc.bake(target="SELECTED") == {"FINISHED"}
    scene = bpy.context.scene
    job_scene = harness.sub("bake_job").BakeJob(bpy.context, "SELECTED").solver_scene
    expected = _expected(job_scene)
    assert expected[:, 1].max() > 0, "the block must reach the floor within the bake"
    frames = np.arange(2, N_FRAMES + 1, dtype=float)
    for k, name in enumerate(NAMES):
        co, fc = _keys(scene, name)
        np.testing.assert_array_equal(co[:, 0], frames, err_msg=name)
        np.testing.assert_allclose(co[:, 1], expected[:, k], rtol=1e-6, atol=1e-9, err_msg=name)
        # the Graph Editor's value at a frame is the frame's own (constant between frames)
        assert fc.evaluate(3.5) == co[1, 1], name
        assert fc.keyframe_points[0].interpolation == "CONSTANT"


def test_a_second_bake_replaces_the_keys():
    _scene()
    assert bpy.ops.ipc.bake(target="SELECTED") == {"FINISHED"}
    scene = bpy.context.scene
    scene.frame_end = 4
    assert bpy.ops.ipc.bake(target="SELECTED") == {"FINISHED"}
    co, _ = _keys(scene, "ipc_newton_iterations")
    np.testing.assert_array_equal(co[:, 0], [2.0, 3.0, 4.0])


def _render_filmstrip():
    import sys

    sys.path.insert(0, str(harness.ROOT / "scripts"))
    try:
        import render_filmstrip
    finally:
        sys.path.remove(str(harness.ROOT / "scripts"))
    return render_filmstrip


def test_the_film_strip_plot_draws_the_keyed_values():
    render_filmstrip = _render_filmstrip()
    _scene()
    assert bpy.ops.ipc.bake(target="SELECTED") == {"FINISHED"}
    scene = bpy.context.scene
    frames, series = render_filmstrip.scene_diagnostics(scene, 1, N_FRAMES)
    assert frames == list(range(2, N_FRAMES + 1)) and len(series) == len(NAMES)
    for (label, values), name in zip(series, NAMES, strict=True):
        co, _ = _keys(scene, name)
        keyed = np.where(co[:, 1] < 0, np.nan, co[:, 1]) if name == "ipc_min_gap" else co[:, 1]
        np.testing.assert_allclose(values, keyed, err_msg=label)
    img = render_filmstrip.diagnostics_plot(frames, series, 400)
    assert img.shape == (44 * len(NAMES), 400, 3)
    # each strip has pixels of the plot's colour right of the labels
    blue = (img == render_filmstrip.PLOT_COLOR).all(axis=2)
    for k in range(len(NAMES)):
        assert blue[44 * k : 44 * (k + 1), 150:].any(), NAMES[k]


def test_the_plot_leaves_frames_without_a_gap_out():
    # "min gap" keys -1 on frames with no pair within the Contact Gap: a sentinel, not a
    # distance, so it must neither stretch the strip's range nor be drawn.
    render_filmstrip = _render_filmstrip()
    img = render_filmstrip.diagnostics_plot(
        [1, 2, 3, 4, 5], [("gap", [np.nan, np.nan, np.nan, 0.1, 0.2]), ("none", [np.nan] * 5)], 400
    )
    blue = (img == render_filmstrip.PLOT_COLOR).all(axis=2)
    first_known_px = 150 + 3 / 4 * (400 - 150 - 6)
    columns = np.flatnonzero(blue[:44].any(axis=0))
    assert columns.size and columns.min() >= first_known_px - 2
    assert not blue[44:].any()


def test_delete_bake_removes_the_diagnostics_and_their_action():
    _scene()
    n_actions = len(bpy.data.actions)
    assert bpy.ops.ipc.bake(target="SELECTED") == {"FINISHED"}
    scene = bpy.context.scene
    assert scene.get("ipc_min_gap") is not None and len(bpy.data.actions) == n_actions + 2
    assert bpy.ops.ipc.delete_bake() == {"FINISHED"}
    assert all(scene.get(name) is None for name in NAMES)
    assert len(bpy.data.actions) == n_actions and scene.animation_data.action is None


def test_a_scene_action_of_the_artist_keeps_its_own_curves():
    _scene()
    scene = bpy.context.scene
    scene["artist_value"] = 1.0
    scene.keyframe_insert('["artist_value"]', frame=1)  # the artist's own scene animation
    own = scene.animation_data.action
    assert bpy.ops.ipc.bake(target="SELECTED") == {"FINISHED"}
    assert scene.animation_data.action == own
    paths = {fc.data_path for fc in harness.sub("adapter").fcurves_of(scene)}
    assert paths == {'["artist_value"]', *(f'["{n}"]' for n in NAMES)}
    assert bpy.ops.ipc.delete_bake() == {"FINISHED"}
    assert scene.animation_data.action == own
    assert [fc.data_path for fc in harness.sub("adapter").fcurves_of(scene)] == ['["artist_value"]']
