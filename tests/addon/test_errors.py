"""Bad inputs: each gives a clear error naming the object and leaves the scene unchanged."""

import bpy
import harness


def setup_function():
    harness.setup()


def teardown_function():
    harness.teardown()


def _scene(n_frames=11):
    return harness.sub("examples").build_compressing_squares(
        bpy.context, n_seg=2, fps=50, substeps=2, n_frames=n_frames
    )


def _assert_refused(expected_words, **kwargs):
    before = harness.snapshot()
    message = harness.bake_error(**kwargs)
    for word in expected_words:
        assert word.lower() in message.lower(), f"{word!r} not in {message!r}"
    assert harness.snapshot() == before, "the failed bake changed the scene"
    return message


def test_nothing_selected():
    _scene()
    for obj in bpy.context.view_layer.objects:
        obj.select_set(False)
    _assert_refused(["nothing to bake", "selected"])


def test_no_bodies_in_scene():
    top, bottom, _ = _scene()
    top.ipc.role = bottom.ipc.role = "NONE"
    _assert_refused(["nothing to bake"], target="SCENE")


def test_non_flat_mesh():
    top, _, _ = _scene()
    top.data.vertices[4].co.y += 0.01  # out of the XZ plane
    _assert_refused(["IPC_Square_Top", "not flat", "XZ"])


def test_mesh_flat_in_the_wrong_plane():
    _scene()
    bpy.context.scene.ipc.plane = "XY"
    _assert_refused(["IPC_Square", "not flat", "XY"])


def test_body_without_faces():
    _scene()
    obj = harness.make_mesh_object("Wire", [(2, 0, 0), (3, 0, 0), (3, 0, 1)], edges=[(0, 1), (1, 2)])
    bpy.context.view_layer.update()
    obj.select_set(True)
    _assert_refused(["Wire", "no faces"])


def test_overlapping_bodies():
    _, bottom, _ = _scene()
    bottom.location.z = -0.3  # overlaps the top square (bottom edge at -0.225)
    _assert_refused(["IPC_Square_Bottom", "IPC_Square_Top", "overlap"])


def test_collider_without_edges():
    _scene()
    harness.make_mesh_object("Dots", [(0, 0, 0.8), (0.5, 0, 0.8)], role="COLLIDER")
    bpy.context.view_layer.update()
    _assert_refused(["Dots", "no boundary or loose edges"])


def test_collider_that_is_not_a_mesh():
    _scene()
    empty = bpy.data.objects.new("Handle", None)
    bpy.context.scene.collection.objects.link(empty)
    empty.ipc.role = "COLLIDER"
    bpy.context.view_layer.update()
    _assert_refused(["Handle", "not a mesh"])


def test_edit_mode():
    top, _, _ = _scene()
    bpy.context.view_layer.objects.active = top
    bpy.ops.object.mode_set(mode="EDIT")
    try:
        _assert_refused(["edit mode"])
    finally:
        bpy.ops.object.mode_set(mode="OBJECT")


def test_users_own_shape_keys_are_never_overwritten():
    top, _, _ = _scene()
    top.shape_key_add(name="Basis")
    top.shape_key_add(name="Smile")
    _assert_refused(["IPC_Square_Top", "own shape keys", "Smile"])
    assert [kb.name for kb in top.data.shape_keys.key_blocks] == ["Basis", "Smile"]


def test_deforming_modifier():
    top, _, _ = _scene()
    top.modifiers.new("Bend", "SIMPLE_DEFORM")
    _assert_refused(["IPC_Square_Top", "modifier 'Bend' (Simple Deform)", "changes the body's shape"])


def test_shared_mesh():
    top, _, _ = _scene()
    twin = bpy.data.objects.new("Twin", top.data)
    bpy.context.scene.collection.objects.link(twin)
    twin.location = (3.0, 0.0, 0.0)
    _assert_refused(["IPC_Square_Top", "shared"])


def test_empty_frame_range():
    _scene()
    s = bpy.context.scene.ipc
    s.use_frame_range, s.frame_start, s.frame_end = True, 5, 5
    _assert_refused(["frame range"])


def test_delete_bake_with_nothing_baked():
    _scene()
    before = harness.snapshot()
    try:
        bpy.ops.ipc.delete_bake()
    except RuntimeError as err:
        assert "no baked" in str(err).lower()
    else:
        raise AssertionError("delete_bake did not report an error")
    assert harness.snapshot() == before
