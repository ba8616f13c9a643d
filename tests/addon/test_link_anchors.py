"""Where links hold (issue 32, points 1, 3 and 6): the anchors of Springs and Ropes (Anchor 1,
Anchor 2: objects the artist places, the bodies' Origins without them), which link Empties
count (the view layer's, for the bake and its signature alike), a link whose Object 1 is gone
and an animated Empty whose motion is not used. Baked from scenes built with ordinary
operators; every frame checked independently; positions read from Blender."""

import bpy
import harness
import numpy as np
import test_artist_input as art
import test_links as tl


def setup_function():
    harness.setup()


def teardown_function():
    harness.teardown()


def _all_keys(*objs):
    out = []
    for obj in objs:
        for kb in obj.data.shape_keys.key_blocks:
            co = np.empty(len(kb.data) * 3, np.float32)
            kb.data.foreach_get("co", co)
            out.append(co.tobytes())
    return out


def _spring_pair():
    """A and B side by side without gravity, a Spring (rest length 0.1 m) between them."""
    tl._scene(n_frames=13)
    scene = bpy.context.scene
    scene.ipc.use_scene_gravity, scene.ipc.gravity = False, (0.0, 0.0)
    a = tl._square("A", (-0.3, 0.0))
    b = tl._square("B", (0.3, 0.0))
    spring = tl._empty("Spring", (0.0, 0.0, 0.0), "SPRING", a, b)
    s = spring.ipc_link
    s.stiffness, s.use_length, s.length = 50.0, True, 0.1
    return a, b, spring


def test_add_anchors_puts_them_on_the_origins_and_the_bake_is_the_same():
    """Add Anchors: one Empty per end, at its body's Origin, parented to it; the bake with them
    is the bake without them, bit for bit (the Origins are the default ends)."""
    a, b, spring = _spring_pair()
    tl._bake(a, b)
    without = _all_keys(a, b)
    bpy.context.view_layer.objects.active = spring
    assert "FINISHED" in bpy.ops.ipc.add_link_anchors()
    s = spring.ipc_link
    for anchor, body in ((s.anchor1, a), (s.anchor2, b)):
        assert anchor is not None and anchor.parent is body
        assert np.allclose(anchor.matrix_world.translation, body.matrix_world.translation)
    assert (s.anchor1.name, s.anchor2.name) == ("Spring_Anchor1", "Spring_Anchor2")
    err = harness.bake_error("add_link_anchors")
    assert "IPC link 'Spring': every end already has an Anchor" in err, err
    tl._bake(a, b)
    assert _all_keys(a, b) == without


def _rope_from_a_corner():
    """A welded still at its centre; B below it hanging on a Rope from Anchor 1 near A's lower
    right corner to Anchor 2 near B's top edge (not above B's centre)."""
    tl._scene(n_frames=25)
    a = tl._square("A", (0.0, 0.0))
    b = tl._square("B", (0.0, -0.35))
    tl._empty("Weld", (0.0, 0.0, 0.0), "WELD", a)
    rope = tl._empty("Rope", (0.0, 0.0, -0.2), "ROPE", a, b)
    anchors = []
    for name, (x, z) in (("Top", (0.08, -0.08)), ("Hook", (0.0, -0.27))):
        bpy.ops.object.empty_add(type="SPHERE", radius=0.02, location=(x, 0.0, z))
        bpy.context.active_object.name = name
        anchors.append(bpy.context.active_object)
    rope.ipc_link.anchor1, rope.ipc_link.anchor2 = anchors
    return a, b, rope


def test_a_rope_holds_its_anchors_not_the_origins():
    """Every frame: the anchors' material points no farther apart than the rope's length (their
    distance at the start) + 1 %; B swings towards under Anchor 1 (x = 0.08), which a rope
    between the Origins (both at x = 0) would not do."""
    a, b, _ = _rope_from_a_corner()
    scene = bpy.context.scene
    ends = tl._rest_point(a, (0.08, -0.08)), tl._rest_point(b, (0.0, -0.27))
    length = np.hypot(0.08, 0.19)
    tl._bake(a, b)
    art._assert_baked_frames_clean([a, b])
    for frame in range(1, 26):
        scene.frame_set(frame)
        span = tl._material_point(a, *ends[0]) - tl._material_point(b, *ends[1])
        assert np.hypot(*span) <= 1.01 * length, f"frame {frame}: the rope is {np.hypot(*span)} m long"
    assert art._world_xz(b)[:, 0].mean() > 0.02  # swung to the right, under Anchor 1


def test_an_anchor_outside_its_body_is_refused_naming_the_link_and_the_anchor():
    a, b, rope = _rope_from_a_corner()
    rope.ipc_link.anchor2.location = (0.5, 0.0, -0.27)
    err = tl._refused(a, b)
    assert "IPC link 'Rope': Anchor 2 'Hook' is outside 'B' (at 0.5, -0.27 in the plane)" in err, err


def test_moving_an_anchor_marks_the_bake_outdated_and_continue_names_the_link():
    a, b, rope = _rope_from_a_corner()
    bpy.context.scene.frame_end = 7
    tl._bake(a, b)
    signature = harness.sub("signature")
    assert not signature.is_outdated(bpy.context, a)
    rope.ipc_link.anchor1.location.x = 0.07
    bpy.context.view_layer.update()
    assert signature.is_outdated(bpy.context, a)
    bpy.context.scene.frame_end = 9
    err = harness.bake_error("continue_bake")
    assert "inputs changed since it was baked: link 'Rope'" in err, err


def test_links_of_an_excluded_collection_count_neither_in_the_bake_nor_its_signature():
    """The bake and its signature take the link Empties from the same place, the view layer:
    a hinge in a collection excluded from it (Blender does not evaluate it) holds nothing
    (the plate falls freely) and is no input; included again it holds the plate and is one."""
    tl._scene()
    scene = bpy.context.scene
    plate = tl._square("Plate", (0.0, 0.0))
    hinge = tl._empty("Hinge", (0.0, 0.0, 0.05), "PIN", plate)
    hidden = bpy.data.collections.new("Hidden")
    scene.collection.children.link(hidden)
    for coll in list(hinge.users_collection):
        coll.objects.unlink(hinge)
    hidden.objects.link(hinge)
    layer = bpy.context.view_layer.layer_collection.children["Hidden"]
    layer.exclude = True
    bpy.context.view_layer.update()
    signature = harness.sub("signature")
    assert "link 'Hinge'" not in signature.signature_parts(scene, [plate], [])
    tl._bake(plate)
    scene.frame_set(13)
    t = 12 / scene.render.fps
    assert abs(-tl._centre_z(plate) - 0.5 * 9.81 * t * t) < 0.1 * 0.5 * 9.81 * t * t
    assert not signature.is_outdated(bpy.context, plate)
    layer.exclude = False
    bpy.context.view_layer.update()
    assert "link 'Hinge'" in signature.signature_parts(scene, [plate], [])
    assert signature.is_outdated(bpy.context, plate)
    tl._bake(plate)
    scene.frame_set(13)
    assert abs(tl._centre_z(plate)) < 0.01 * tl.SIDE


def test_an_animated_empty_with_object_2_counts_at_its_start_place_and_is_named():
    """A Pin between A (welded still) and B whose Empty is keyed to move away: the hinge stays
    where the Empty was at the start frame (as a Rigid Body Constraint's frame), the bake is the
    one with the Empty left there, bit for bit, and its note names the Empty."""
    tl._scene()
    scene = bpy.context.scene
    a = tl._square("A", (0.0, 0.0))
    b = tl._square("B", (0.15, 0.0))
    tl._empty("Weld", (0.0, 0.0, 0.0), "WELD", a)
    joint = tl._empty("Joint", (0.09, 0.0, 0.0), "PIN", a, b)
    tl._bake(a, b)
    still = _all_keys(a, b)
    assert "IPC link 'Joint'" not in scene.ipc.stat_notes
    for frame, x in ((1, 0.09), (13, 0.5)):
        joint.location.x = x
        joint.keyframe_insert("location", index=0, frame=frame)
    scene.frame_set(1)
    tl._bake(a, b)
    assert _all_keys(a, b) == still
    note = "IPC link 'Joint' moves, but with Object 2 set only its place at the start frame counts"
    assert note in scene.ipc.stat_notes, scene.ipc.stat_notes
