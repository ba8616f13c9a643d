"""Scene reading: defaults, plane choice, n-gons, parented colliders, pins."""

import bpy
import harness
import numpy as np


def setup_function():
    harness.setup()


def teardown_function():
    harness.teardown()


def _job(target="SCENE"):
    return harness.sub("adapter").BakeJob(bpy.context, target)


def _square(name, x0, z0, side=0.4, role="BODY"):
    verts = [(x0, 0, z0), (x0 + side, 0, z0), (x0 + side, 0, z0 + side), (x0, 0, z0 + side)]
    return harness.make_mesh_object(name, verts, faces=[(0, 1, 2, 3)], role=role)


def test_defaults_relative_dhat_automatic_kappa_scene_gravity():
    scene = bpy.context.scene
    scene.render.fps, scene.frame_start, scene.frame_end = 24, 1, 3
    _square("A", 0.0, 0.0)
    _square("B", 0.0, 0.6)
    bpy.context.view_layer.update()
    p = _job().solver_scene.params
    diag = np.hypot(0.4, 1.0)  # bounding box of both squares
    assert np.isclose(p.dhat, 1e-3 * diag, rtol=1e-6)
    assert p.kappa is None
    assert np.isclose(p.dt, 1.0 / (24 * 4))  # default 4 substeps
    np.testing.assert_allclose(p.gravity, (0.0, -9.81), rtol=1e-6)
    scene.ipc.use_scene_gravity, scene.ipc.gravity = False, (1.0, -2.0)
    np.testing.assert_allclose(_job().solver_scene.params.gravity, (1.0, -2.0))


def test_ngon_triangulated_and_xy_plane():
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 2
    scene.ipc.plane = "XY"
    # A concave L-shaped hexagon in the XY plane (one n-gon face), rotated object.
    verts = [(0, 0, 0.5), (2, 0, 0.5), (2, 1, 0.5), (1, 1, 0.5), (1, 2, 0.5), (0, 2, 0.5)]
    obj = harness.make_mesh_object("L", verts, faces=[tuple(range(6))])
    obj.rotation_euler.z = np.pi / 2
    bpy.context.view_layer.update()
    scene_in = _job().solver_scene
    (body,) = scene_in.bodies
    assert len(body.triangles) == 4
    x = np.asarray(body.vertices)
    expect = np.array([(-y, vx) for vx, y, _ in verts])  # rotated by 90 deg about Z
    np.testing.assert_allclose(x, expect, atol=1e-6)
    area = (
        0.5
        * np.abs(
            np.cross(
                x[body.triangles[:, 1]] - x[body.triangles[:, 0]],
                x[body.triangles[:, 2]] - x[body.triangles[:, 0]],
            )
        ).sum()
    )
    assert np.isclose(area, 3.0)  # L shape: 4 - 1
    np.testing.assert_allclose(scene_in.params.gravity, (0.0, 0.0))  # -Z is out of plane


def test_parented_collider_motion_sampled_per_substep():
    scene = bpy.context.scene
    scene.render.fps, scene.frame_start, scene.frame_end = 10, 1, 3
    scene.ipc.substeps = 2
    _square("Body", 0.0, 0.0)
    handle = bpy.data.objects.new("Handle", None)
    scene.collection.objects.link(handle)
    for frame, x in ((1, 0.0), (3, 2.0)):
        handle.location.x = x
        handle.keyframe_insert("location", index=0, frame=frame)
    for fc in harness.sub("adapter").fcurves_of(handle):
        for kp in fc.keyframe_points:
            kp.interpolation = "LINEAR"
    wall = harness.make_mesh_object("Wall", [(1, 0, -1), (1, 0, 1)], edges=[(0, 1)], role="COLLIDER")
    wall.parent = handle
    scene.frame_set(2)
    bpy.context.view_layer.update()
    job = _job()
    (col,) = job.solver_scene.colliders
    # every substep of frames 1-3 and one beyond (see BakeJob._read)
    np.testing.assert_allclose(col.times, [0, 0.05, 0.1, 0.15, 0.2, 0.25])
    # Handle x moves 1 m per frame (2 samples per frame) and carries the wall along (keys
    # extrapolated constantly after frame 3).
    np.testing.assert_allclose(
        col.positions[:, :, 0].mean(axis=1), 1.0 + np.minimum(np.arange(6), 4) * 0.5, atol=1e-6
    )
    assert scene.frame_current == 2  # restored after sampling


def test_pinned_group_holds_vertices_during_the_bake():
    scene = bpy.context.scene
    scene.render.fps, scene.frame_start, scene.frame_end = 25, 1, 6
    # A 2x1 strip of quads, left edge pinned: it hangs under gravity, the pins stay put.
    verts = [(0, 0, 0), (0.5, 0, 0), (1, 0, 0), (0, 0, 0.5), (0.5, 0, 0.5), (1, 0, 0.5)]
    obj = harness.make_mesh_object("Strip", verts, faces=[(0, 1, 4, 3), (1, 2, 5, 4)])
    obj.ipc.youngs_modulus = 1e4
    group = obj.vertex_groups.new(name="pins")
    group.add([0, 3], 1.0, "REPLACE")
    obj.ipc.pin_group = "pins"
    bpy.context.view_layer.update()
    (body,) = _job().solver_scene.bodies
    (pin,) = body.pins
    assert sorted(pin.indices.tolist()) == [0, 3]
    assert bpy.ops.ipc.bake(target="SCENE") == {"FINISHED"}
    scene.frame_set(6)
    moved = harness.evaluated_local(obj)
    rest = harness.local_coords(obj.data)
    np.testing.assert_allclose(moved[[0, 3]], rest[[0, 3]], atol=1e-6)
    assert (moved[[2, 5], 2] < rest[[2, 5], 2] - 1e-3).all()  # free end sags


def test_pin_group_missing_is_an_error():
    _square("Body", 0.0, 0.0).ipc.pin_group = "nope"
    bpy.context.view_layer.update()
    before = harness.snapshot()
    message = harness.bake_error(target="SCENE")
    assert "Body" in message and "'nope'" in message
    assert harness.snapshot() == before


def _two_squares():
    """Squares A (returned) and B, A under B, over two frames."""
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 2
    a = _square("A", 0.0, 0.0)
    _square("B", 0.0, 0.6)
    bpy.context.view_layer.update()
    return a


def test_body_type_rigid_reaches_the_solver_and_the_signature():
    a = _two_squares()
    signature = harness.sub("signature")
    before = signature._object_text(a)
    assert [b.kind for b in _job().solver_scene.bodies] == ["deformable", "deformable"]
    a.ipc.body_type = "RIGID"
    assert [b.kind for b in _job().solver_scene.bodies] == ["rigid", "deformable"]
    rigid = signature._object_text(a)
    assert rigid != before
    a.ipc.poisson_ratio = 0.2  # not used by a rigid body: the bake stays current
    assert _job().solver_scene.bodies[0].kind == "rigid" and signature._object_text(a) == rigid
    a.ipc.youngs_modulus *= 10  # used (an all-rigid scene's contacts start from it)
    assert signature._object_text(a) != rigid


def test_body_type_stiff_and_its_modes_reach_the_solver_and_the_signature():
    a = _two_squares()
    signature = harness.sub("signature")
    before = signature._object_text(a)
    a.ipc.body_type = "STIFF"
    a.ipc.modes = 3
    bodies = _job().solver_scene.bodies
    assert (bodies[0].kind, bodies[0].modes) == ("stiff", 3)
    assert bodies[1].kind == "deformable"
    stiff = signature._object_text(a)
    assert stiff != before
    a.ipc.modes = 4
    assert signature._object_text(a) != stiff
