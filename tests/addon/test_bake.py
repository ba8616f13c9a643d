"""End-to-end: build the compressing-squares scene in Blender, bake through the operator and
check the shape keys against the solver run directly on the adapter's arrays."""

import tempfile
from pathlib import Path

import bpy
import checks
import harness
import numpy as np

# dt = 1 / (FPS * SUBSTEPS) = 0.01 s as in the reference scene; substeps > 1 so frames and steps
# differ. 61 frames = 1.2 s: the ceiling has descended 0.6 m and squeezes both squares.
N_SEG, FPS, SUBSTEPS, N_FRAMES = 3, 50, 2, 61
DT = 1.0 / (FPS * SUBSTEPS)


def setup_function():
    harness.setup()


def teardown_function():
    harness.teardown()


def _world_xz(obj, local):
    m = np.array([list(r) for r in obj.matrix_world])
    world = local.astype(np.float64) @ m[:3, :3].T + m[:3, 3]
    return world[:, [0, 2]], world[:, 1]


def _expected_square(centre, n_seg, side=0.45):
    t = np.linspace(-side / 2, side / 2, n_seg + 1)
    xs, zs = np.meshgrid(t, t)
    return np.column_stack([xs.ravel() + centre[0], zs.ravel() + centre[1]])


def _check_adapter_arrays(scene_in):
    """The arrays handed to the solver describe the scene we built (values from the spec)."""
    assert [b.name for b in scene_in.bodies] == ["IPC_Square_Bottom", "IPC_Square_Top"]
    np.testing.assert_allclose(scene_in.bodies[1].vertices, _expected_square((0, 0), N_SEG), atol=1e-6)
    np.testing.assert_allclose(
        scene_in.bodies[0].vertices, _expected_square((0.045, -0.495), N_SEG), atol=1e-6
    )
    assert len(scene_in.bodies[0].triangles) == 2 * N_SEG * N_SEG
    (ceiling,) = scene_in.colliders
    t = ceiling.times
    np.testing.assert_allclose(np.diff(t), DT, rtol=1e-9)
    # one sample per substep, and one beyond the last frame (so that a longer bake, or one
    # continued, interpolates the collider at the last step exactly as this one does)
    assert len(t) == (N_FRAMES - 1) * SUBSTEPS + 2
    lowest = ceiling.positions[:, :, 1].min(axis=1)
    np.testing.assert_allclose(lowest, np.maximum(0.27 - 0.5 * t, -0.7), atol=1e-5)
    assert ceiling.mu == 0.0
    (ground,) = scene_in.half_planes
    assert tuple(ground.point)[1] == -1.0 and tuple(ground.normal) == (0.0, 1.0)
    p = scene_in.params
    # dt is 1 / (fps * substeps) in float64; the others are Blender float (float32) properties
    assert abs(p.dt - DT) < 1e-12
    assert p.formulation == "original"
    np.testing.assert_allclose((p.dhat, p.kappa, p.eps_v, p.newton_tol), (0.01, 1e5, 1e-3, 1e-2), rtol=1e-6)
    np.testing.assert_allclose(p.gravity, (0.0, -9.81), rtol=1e-6)
    for body in scene_in.bodies:
        m = body.material
        np.testing.assert_allclose((m.E, m.nu, m.density, m.mu), (1e5, 0.4, 1000, 0.4), rtol=1e-6)


def _frame_positions(objs, frame, subframe=0.0):
    bpy.context.scene.frame_set(frame, subframe=subframe)
    out = []
    for obj in objs:
        xz, y = _world_xz(obj, harness.evaluated_local(obj))
        assert np.all(y == 0.0), "out-of-plane coordinate changed"
        out.append(xz)
    return out


def test_compressing_squares_bake_matches_solver_and_roundtrips():
    ctx = bpy.context
    adapter, solver = harness.sub("adapter"), harness.sub("solver")
    top, bottom, _ceiling = harness.sub("examples").build_compressing_squares(
        ctx, n_seg=N_SEG, fps=FPS, substeps=SUBSTEPS, n_frames=N_FRAMES
    )
    bodies = [bottom, top]  # solver order: sorted by name
    rest = {o.name: harness.local_coords(o.data).tobytes() for o in bodies}
    n_actions = len(bpy.data.actions)

    # Reference: the solver run directly on the arrays the adapter produced.
    scene_in = adapter.BakeJob(ctx, "SELECTED").solver_scene
    _check_adapter_arrays(scene_in)
    n_steps = (N_FRAMES - 1) * SUBSTEPS
    ref = solver.simulate(scene_in, n_steps)

    assert bpy.ops.ipc.bake() == {"FINISHED"}

    # One absolute key per frame, LINEAR eval_time animation.
    for obj in bodies:
        key = obj.data.shape_keys
        assert not key.use_relative
        assert len(key.key_blocks) == N_FRAMES
        assert all(kb.name.startswith(adapter.KEY_PREFIX) for kb in key.key_blocks)
        curves = adapter.fcurves_of(key)
        assert [c.data_path for c in curves] == ["eval_time"]
        assert {kp.interpolation for kp in curves[0].keyframe_points} == {"LINEAR"}
        assert obj.ipc.is_baked and not adapter.is_outdated(ctx, obj)

    # Statistics recorded from the same run.
    s = ctx.scene.ipc
    assert s.stat_frames == N_FRAMES
    assert s.stat_newton_iters == sum(st.newton_iters for st in ref.stats)
    assert np.isclose(s.stat_min_distance, min(st.min_distance for st in ref.stats), rtol=1e-5)

    # Evaluated meshes equal the trajectory at frames and at a sub-frame (linear in between).
    for frame in (1, 2, 17, 40, N_FRAMES):
        got = _frame_positions(bodies, frame)
        for i in range(2):
            np.testing.assert_allclose(
                got[i], ref.body_positions[i][(frame - 1) * SUBSTEPS], atol=2e-6, err_msg=f"frame {frame}"
            )
    got = _frame_positions(bodies, 30, subframe=0.5)
    for i in range(2):
        expect = 0.5 * (ref.body_positions[i][29 * SUBSTEPS] + ref.body_positions[i][30 * SUBSTEPS])
        np.testing.assert_allclose(got[i], expect, atol=2e-6, err_msg="sub-frame 30.5")

    # The squares really got squeezed (else the checks below would be vacuous).
    final = _frame_positions(bodies, N_FRAMES)
    assert final[1][:, 1].max() < 0.225 - 0.2

    # No penetration or inversion in any frame, ground and ceiling respected.
    tris = [np.asarray(b.triangles) for b in scene_in.bodies]
    for frame in range(1, N_FRAMES + 1):
        xs = _frame_positions(bodies, frame)
        checks.assert_intersection_free(list(zip(xs, tris, strict=True)), label=f"frame {frame}")
        t = (frame - 1) / FPS
        ceiling_z = max(0.27 - 0.5 * t, -0.7)
        for x in xs:
            assert x[:, 1].min() > -1.0 and x[:, 1].max() < ceiling_z, f"frame {frame}"

    # Save + reload keeps the bake.
    before = _frame_positions(bodies, 40)
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "baked.blend")
        bpy.ops.wm.save_as_mainfile(filepath=path)
        bpy.ops.wm.open_mainfile(filepath=path)
    bodies = [bpy.data.objects[name] for name in ("IPC_Square_Bottom", "IPC_Square_Top")]
    assert [len(o.data.shape_keys.key_blocks) for o in bodies] == [N_FRAMES, N_FRAMES]
    after = _frame_positions(bodies, 40)
    for a, b in zip(before, after, strict=True):
        np.testing.assert_array_equal(a, b)

    # Delete Bake restores the original coordinates bit for bit and leaves nothing behind.
    for obj in bpy.context.view_layer.objects:
        obj.select_set(obj.name in rest)
    assert bpy.ops.ipc.delete_bake() == {"FINISHED"}
    for obj in bodies:
        assert obj.data.shape_keys is None and not obj.ipc.is_baked
        assert harness.local_coords(obj.data).tobytes() == rest[obj.name]
        assert harness.evaluated_local(obj).tobytes() == rest[obj.name]
    assert len(bpy.data.shape_keys) == 0
    assert len(bpy.data.actions) == n_actions
    assert not [a.name for a in bpy.data.actions if a.name.startswith(adapter.KEY_PREFIX)]


def test_rebake_replaces_cleanly_and_outdated_marker():
    ctx = bpy.context
    adapter = harness.sub("adapter")
    top, bottom, ceiling = harness.sub("examples").build_compressing_squares(
        ctx, n_seg=2, fps=FPS, substeps=SUBSTEPS
    )
    s = ctx.scene.ipc
    s.use_frame_range, s.frame_start, s.frame_end = True, 1, 6
    rest = harness.local_coords(top.data).tobytes()
    n_actions = len(bpy.data.actions)
    assert bpy.ops.ipc.bake() == {"FINISHED"}
    assert len(top.data.shape_keys.key_blocks) == 6
    assert not adapter.is_outdated(ctx, top)

    # Inputs change -> outdated; restoring them -> up to date again.
    top.ipc.youngs_modulus = 2e5
    assert adapter.is_outdated(ctx, top) and adapter.is_outdated(ctx, bottom)
    top.ipc.youngs_modulus = 1e5
    assert not adapter.is_outdated(ctx, top)
    fc = adapter.fcurves_of(ceiling)[0]
    fc.keyframe_points[1].co.y -= 0.1  # collider motion changed
    assert adapter.is_outdated(ctx, top)
    ctx.scene.frame_set(3)  # merely changing the frame is no change
    fc.keyframe_points[1].co.y += 0.1
    assert not adapter.is_outdated(ctx, top)

    s.frame_end = 4
    assert bpy.ops.ipc.bake() == {"FINISHED"}
    assert [kb.name for kb in top.data.shape_keys.key_blocks] == [
        f"{adapter.KEY_PREFIX}{f:05d}" for f in range(1, 5)
    ]
    assert len(bpy.data.shape_keys) == 2
    # the two bodies' key actions and the scene's diagnostics (frame_diagnostics)
    assert len(bpy.data.actions) == n_actions + 3
    assert top.data.shape_keys.key_blocks[0].data[0].co == top.data.vertices[0].co
    assert harness.local_coords(top.data).tobytes() == rest


def test_moving_body_object_keys_are_in_its_local_space():
    """A body whose object itself is animated: keys are written relative to the object's
    transform at each frame, so the world-space result is the simulated one."""
    ctx = bpy.context
    adapter, solver = harness.sub("adapter"), harness.sub("solver")
    scene = ctx.scene
    scene.render.fps, scene.frame_start, scene.frame_end = 25, 1, 4
    scene.ipc.substeps = 2
    obj = harness.make_mesh_object(
        "Mover", [(0, 0, 0), (0.5, 0, 0), (0.5, 0, 0.5), (0, 0, 0.5)], faces=[(0, 1, 2, 3)]
    )
    for frame, x in ((1, 0.0), (4, 3.0)):
        obj.location.x = x
        obj.keyframe_insert("location", index=0, frame=frame)
    obj.rotation_euler.y = 0.3  # about the out-of-plane axis (XZ plane)
    ctx.view_layer.update()
    ref = solver.simulate(adapter.BakeJob(ctx, "SCENE").solver_scene, 6)
    assert bpy.ops.ipc.bake(target="SCENE") == {"FINISHED"}
    for frame in (1, 2, 4):
        scene.frame_set(frame)
        xz, y = _world_xz(obj, harness.evaluated_local(obj))
        np.testing.assert_allclose(xz, ref.body_positions[0][(frame - 1) * 2], atol=3e-6)
        np.testing.assert_allclose(y, 0.0, atol=1e-6)
