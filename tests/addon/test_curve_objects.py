"""Curve and text objects (issue 12, point 4): a curve is a collider through its evaluated
polyline; a text or curve object given the Deformable Body role is refused with what to do
(shape keys are baked onto meshes only), never skipped. The exact checks use the curve as
Blender evaluates it, read here through the depsgraph (not through the add-on)."""

import bpy
import checks
import harness
import numpy as np
import test_artist_input as art

# A trough in the object's XZ plane: its flat floor is 0.4 m wide at z = 0 (object space).
TROUGH = [(-0.6, 0.3), (-0.2, 0.0), (0.2, 0.0), (0.6, 0.3)]
LIFT = 0.05  # the curve object's location z: the floor is at z = LIFT in the world


def setup_function():
    harness.setup()


def teardown_function():
    harness.teardown()


def _trough():
    """The trough as the only ground (contact gap 2 mm)."""
    scene = bpy.context.scene
    scene.ipc.use_ground = False
    scene.ipc.dhat_mode, scene.ipc.dhat = "ABSOLUTE", 0.002
    curve = bpy.data.curves.new("Trough", "CURVE")
    curve.dimensions = "3D"
    spline = curve.splines.new("POLY")
    spline.points.add(len(TROUGH) - 1)
    for p, (x, z) in zip(spline.points, TROUGH, strict=True):
        p.co = (x, 0.0, z, 1.0)
    obj = bpy.data.objects.new("Trough", curve)
    bpy.context.scene.collection.objects.link(obj)
    obj.location = (0.02, 0.0, LIFT)
    obj.ipc.role, obj.ipc.friction = "COLLIDER", 0.3
    return obj


def _polyline_xz(obj):
    """The curve's evaluated vertices in world XZ and its edges, from Blender's depsgraph."""
    depsgraph = bpy.context.evaluated_depsgraph_get()
    ob_eval = obj.evaluated_get(depsgraph)
    mesh = ob_eval.to_mesh()
    try:
        co = harness.local_coords(mesh).astype(np.float64)
        edges = np.empty(len(mesh.edges) * 2, dtype=np.int64)
        mesh.edges.foreach_get("vertices", edges)
    finally:
        ob_eval.to_mesh_clear()
    m = np.array([list(r) for r in ob_eval.matrix_world])
    return (co @ m[:3, :3].T + m[:3, 3])[:, [0, 2]], edges.reshape(-1, 2)


def test_box_falls_into_a_curve_trough_and_rests_on_it():
    art._frames(n_frames=30, fps=24, substeps=2)
    trough = _trough()
    body = art._quad("Box", -0.1, LIFT + 0.05, 0.2, 0.1)
    scene = bpy.context.scene
    bpy.context.view_layer.update()
    assert harness.sub("adapter").role_problem(trough) == ""
    scene.frame_set(scene.frame_start)
    before = harness.snapshot()[0]
    assert bpy.ops.ipc.bake(target="SCENE") == {"FINISHED"}
    assert harness.snapshot()[0] == before | {"Box": harness.snapshot()[0]["Box"]}
    art._assert_baked_frames_clean([body])
    tris = art._face_triangles(body)
    be = checks.boundary_edges(tris)
    bottoms = {}
    for frame in range(scene.frame_start, scene.frame_end + 1):
        scene.frame_set(frame)
        col, ce = _polyline_xz(trough)
        assert len(ce) == len(TROUGH) - 1
        x = art._world_xz(body)
        segs = np.concatenate([x[be], col[ce]])
        ids = np.concatenate([be, ce + len(x)])
        n = checks.crossing_pairs(segs, ids)
        assert n == 0, f"frame {frame}: {n} crossings between the body and the curve"
        # Above the polyline everywhere: the curve's height under each body vertex.
        under = np.interp(x[:, 0], col[:, 0], col[:, 1])
        assert (x[:, 1] > under).all(), f"frame {frame}: body below the curve"
        bottoms[frame] = float((x[:, 1] - under).min())
    floor = float(_polyline_xz(trough)[0][:, 1].min())
    np.testing.assert_allclose(floor, LIFT, atol=1e-6)
    end = scene.frame_end
    assert bottoms[1] > 0.04, bottoms[1]
    assert 0.0 < bottoms[end] < 0.003, f"the box does not rest on the curve: gap {bottoms[end]:.5f} m"
    print(f"start gap {bottoms[1] * 1e3:.3f} mm, final gap {bottoms[end] * 1e3:.3f} mm")
    adapter = harness.sub("adapter")
    assert not adapter.is_outdated(bpy.context, body), "outdated after scrubbing the frames"
    point = trough.data.splines[0].points[1]
    point.co.z += 0.01
    assert adapter.is_outdated(bpy.context, body), "the curve's shape changed"
    point.co.z = TROUGH[1][1]
    assert not adapter.is_outdated(bpy.context, body)


def _text_body():
    obj = bpy.data.objects.new("Text", bpy.data.curves.new("Text", "FONT"))
    bpy.context.scene.collection.objects.link(obj)
    obj.rotation_euler.x = np.pi / 2  # in the XZ plane
    obj.location = (1.0, 0.0, 0.5)
    obj.ipc.role = "BODY"
    return obj


def test_text_and_curve_bodies_are_refused_with_what_to_do():
    art._frames()
    art._quad("Box", -0.1, 0.05, 0.2, 0.1)
    text = _text_body()
    bpy.context.view_layer.update()
    problem = harness.sub("adapter").role_problem(text)  # what the panel shows on the object
    assert "'Text' is a Text object" in problem and "Object > Convert > Mesh" in problem, problem
    for target in ("SCENE", "SELECTED"):
        for obj in bpy.context.view_layer.objects:
            obj.select_set(obj is text)
        before = harness.snapshot()
        message = harness.bake_error(target=target)
        assert "'Text' is a Text object" in message, message
        assert "Object > Convert > Mesh" in message, message
        assert harness.snapshot() == before, "the refused bake changed the scene"
    # An open curve has no area: it is told how to get one as well.
    text.ipc.role = "NONE"
    curve = bpy.data.curves.new("Wire", "CURVE")
    curve.splines.new("POLY").points.add(2)
    wire = bpy.data.objects.new("Wire", curve)
    bpy.context.scene.collection.objects.link(wire)
    wire.ipc.role = "BODY"
    bpy.context.view_layer.update()
    message = harness.bake_error(target="SCENE")
    assert "'Wire' is a Curve object" in message and "no filled area" in message, message
