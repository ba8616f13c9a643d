"""Deforming colliders (issue 12, point 3): a collider whose evaluated mesh changes (animated
shape keys, armatures, modifiers) is followed at every substep, not frozen at its start-frame
shape. Checked against the collider as Blender evaluates it in each frame, read here through the
depsgraph (not through the add-on)."""

import bpy
import checks
import harness
import numpy as np
import test_artist_input as art

BUMP = 0.04  # how far the shape key raises the strip's plateau [m]
TOP = 0.0  # the strip's top at rest
KEY_FRAMES = (3, 15)  # the key value goes 0 -> 1 between these frames, then holds


def setup_function():
    harness.setup()


def teardown_function():
    harness.teardown()


def _strip():
    """A 1.2 m strip (z from -0.1 to TOP) as a collider; its shape key 'Bump' raises the top
    vertices at x = -0.15 and 0.15 by BUMP: a trapezoid bump with a flat 0.3 m plateau."""
    xs = (-0.6, -0.3, -0.15, 0.15, 0.3, 0.6)
    verts = [(x, 0, -0.1) for x in xs] + [(x, 0, TOP) for x in xs]
    n = len(xs)
    faces = [(i, i + 1, n + i + 1, n + i) for i in range(n - 1)]
    strip = harness.make_mesh_object("Strip", verts, faces=faces, role="COLLIDER")
    strip.ipc.friction = 0.0
    strip.shape_key_add(name="Basis")
    bump = strip.shape_key_add(name="Bump", from_mix=False)
    for i in (n + 2, n + 3):
        bump.data[i].co.z += BUMP
    for frame, value in zip(KEY_FRAMES, (0.0, 1.0), strict=True):
        bump.value = value
        bump.keyframe_insert("value", frame=frame)
    for fc in harness.sub("adapter").fcurves_of(strip.data.shape_keys):
        for kp in fc.keyframe_points:
            kp.interpolation = "LINEAR"
        fc.update()
    return strip


def _rigid_lid():
    """A collider keyed to slide sideways far from everything: rigid motion only."""
    corners = [(2.0, 0, 0.5), (2.5, 0, 0.5), (2.5, 0, 0.6), (2.0, 0, 0.6)]
    lid = harness.make_mesh_object("Lid", corners, faces=[(0, 1, 2, 3)], role="COLLIDER")
    for frame, x in ((1, 0.0), (20, 0.3)):
        lid.location.x = x
        lid.keyframe_insert("location", index=0, frame=frame)
    return lid


def _collider_xz(obj, depsgraph):
    """The collider's evaluated vertices in world XZ, straight from Blender's depsgraph."""
    ob_eval = obj.evaluated_get(depsgraph)
    mesh = ob_eval.to_mesh()
    try:
        co = harness.local_coords(mesh).astype(np.float64)
    finally:
        ob_eval.to_mesh_clear()
    m = np.array([list(r) for r in ob_eval.matrix_world])
    return (co @ m[:3, :3].T + m[:3, 3])[:, [0, 2]]


def _assert_clear_of_collider(body, collider, frame):
    """Exact checks at the current frame: no boundary edge of the body crosses one of the
    collider as evaluated, no body vertex inside the collider's faces, none below its top."""
    depsgraph = bpy.context.evaluated_depsgraph_get()
    col = _collider_xz(collider, depsgraph)
    col_tris = art._face_triangles(collider)
    x = art._world_xz(body)
    body_tris = art._face_triangles(body)
    be, ce = checks.boundary_edges(body_tris), checks.boundary_edges(col_tris)
    segs = np.concatenate([x[be], col[ce]])
    ids = np.concatenate([be, ce + len(x)])
    n = checks.crossing_pairs(segs, ids)
    assert n == 0, f"frame {frame}: {n} crossings between the body and the collider as animated"
    assert not checks.point_in_triangles(x, col, col_tris).any(), f"frame {frame}: body inside collider"
    return float(x[:, 1].min()), float(col[:, 1].max())


def test_shape_keyed_bump_lifts_the_body_resting_on_it():
    art._frames(n_frames=25, fps=24, substeps=2)
    scene = bpy.context.scene
    scene.ipc.use_ground = False  # the strip is the ground
    scene.ipc.dhat_mode, scene.ipc.dhat = "ABSOLUTE", 0.002
    strip = _strip()
    lid = _rigid_lid()
    body = art._quad("Box", -0.1, TOP + 0.003, 0.2, 0.1)
    adapter = harness.sub("adapter")
    # The bump's collider is sampled from its evaluated mesh; the rigid lid is not.
    assert adapter.may_deform(strip) and not adapter.may_deform(lid)
    scene.frame_set(scene.frame_start)  # the keyed values, as the bake leaves them
    before = harness.snapshot()[0]
    assert bpy.ops.ipc.bake(target="SCENE") == {"FINISHED"}
    after = harness.snapshot()[0]
    for name in ("Strip", "Lid"):  # the colliders are untouched
        assert after[name] == before[name], name
    art._assert_baked_frames_clean([body])
    bottoms, tops = {}, {}
    for frame in range(scene.frame_start, scene.frame_end + 1):
        scene.frame_set(frame)
        bottoms[frame], tops[frame] = _assert_clear_of_collider(body, strip, frame)
        assert bottoms[frame] >= tops[frame], f"frame {frame}: body below the plateau"
    end = scene.frame_end
    bump = tops[end] - tops[1]
    rise = bottoms[end] - bottoms[1]
    np.testing.assert_allclose(bump, BUMP, atol=1e-6)  # the key did raise the plateau
    # The body rides up on the plateau: it rises by the bump height, up to the contact gap.
    assert abs(rise - bump) < 0.003, f"body rose {rise * 1000:.2f} mm on a {bump * 1000:.2f} mm bump"
    assert bottoms[end] - tops[end] < 0.003, "the body does not rest on the bump"
    gap = bottoms[end] - tops[end]
    print(f"bump {bump * 1e3:.3f} mm, body rise {rise * 1e3:.3f} mm, final gap {gap * 1e3:.3f} mm")
    # The bump's keys are inputs of the bake (its animated value at the current frame is not).
    assert not adapter.is_outdated(bpy.context, body), "outdated after scrubbing the frames"
    curve = adapter.fcurves_of(strip.data.shape_keys)[0]
    curve.keyframe_points[1].co.x += 2.0
    assert adapter.is_outdated(bpy.context, body), "the bump's timing changed"
    curve.keyframe_points[1].co.x -= 2.0
    assert not adapter.is_outdated(bpy.context, body)
    strip.data.shape_keys.key_blocks["Bump"].data[8].co.z += 0.01
    assert adapter.is_outdated(bpy.context, body), "the bump's height changed"
