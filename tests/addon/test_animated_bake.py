"""Animated settings (issue 32, points 2 and 5) through the bake operator: a bake does not
depend on the frame it is started from (keyed values are read at the start frame, then per
substep), and keyed gravity reaches a pin released at a keyed frame."""

import bpy
import harness
import test_artist_input as art
import test_links as tl
from test_link_anchors import _all_keys


def setup_function():
    harness.setup()


def teardown_function():
    harness.teardown()


def test_keyed_gravity_and_a_released_pin_bake_the_same_from_any_current_frame():
    """A plate hung by its Pinned Group, Engaged keyed off at frame 7, the scene's gravity keyed
    to double there (constant interpolation), its Young's modulus keyed: started with the frame
    cursor on frame 1 or on frame 13 the bake gives the same keys bit for bit (before the fix
    the gravity setting was read at the current frame); every frame clean; held until frame 7,
    then falling 19.62 t^2 / 2 (to implicit Euler's lag of g h t / 2)."""
    tl._scene(n_frames=13)
    scene = bpy.context.scene
    scene.ipc.substeps = 4
    scene.use_gravity, scene.ipc.use_scene_gravity = True, True
    plate = tl._pinned_plate()
    for frame, g, e, on in ((1, -9.81, 1e7, True), (7, -19.62, 2e7, False)):
        scene.gravity[2] = g
        scene.keyframe_insert("gravity", index=2, frame=frame)
        plate.ipc.youngs_modulus, plate.ipc.pin_engaged = e, on
        plate.keyframe_insert("ipc.youngs_modulus", frame=frame)
        plate.keyframe_insert("ipc.pin_engaged", frame=frame)
    for fc in harness.sub("adapter").fcurves_of(scene):
        for point in fc.keyframe_points:
            point.interpolation = "CONSTANT"
    baked = []
    for current in (1, 13):
        scene.frame_set(current)
        tl._bake(plate)
        assert scene.frame_current == current
        baked.append(_all_keys(plate))
    assert baked[0] == baked[1], "the bake depends on the frame it was started from"
    art._assert_baked_frames_clean([plate])
    tl.assert_held_then_falling(plate, 7, 19.62)
