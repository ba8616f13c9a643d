"""Animated force fields (issue 32, point 4: "animated values sampled per substep") as the bake
reads them: a Wind whose strength and place are keyed reaches the solver with Blender's own
values at every substep (F-curves and the evaluated object, read here independently), and the
bake of a plate in it, made with the operator, is clean in every frame and drifts only once the
wind blows."""

import math

import bpy
import harness
import numpy as np
import test_artist_input as art
import test_links as tl

SUBSTEPS = 4


def setup_function():
    harness.setup()


def teardown_function():
    harness.teardown()


def _keyed_wind():
    tl._scene(n_frames=13)
    scene = bpy.context.scene
    scene.ipc.substeps = SUBSTEPS
    scene.use_gravity = scene.ipc.use_scene_gravity = False
    scene.ipc.gravity = (0.0, 0.0)
    plate = tl._square("Plate", (0.0, 0.0))
    bpy.ops.object.effector_add(type="WIND", location=(-0.5, 0.0, 0.0), rotation=(0.0, math.pi / 2, 0.0))
    wind = bpy.context.active_object
    wind.field.flow = 0.0
    for frame, strength, z in ((1, 0.0, 0.0), (5, 0.0, 0.0), (9, 4.0, 0.3)):
        wind.field.strength, wind.location.z = strength, z
        wind.keyframe_insert("field.strength", frame=frame)
        wind.keyframe_insert("location", index=2, frame=frame)
    bpy.context.view_layer.update()
    return plate, wind


def _blender_samples(wind, n):
    """The wind's strength (its F-curve) and its evaluated place at every substep."""
    scene = bpy.context.scene
    curve = next(c for c in harness.sub("adapter").fcurves_of(wind) if c.data_path == "field.strength")
    strength, place = [], []
    for i in range(n):
        frame, sub = divmod(i, SUBSTEPS)
        scene.frame_set(1 + frame, subframe=sub / SUBSTEPS)
        strength.append(curve.evaluate(1 + i / SUBSTEPS))
        place.append([wind.matrix_world.translation.x, wind.matrix_world.translation.z])
    scene.frame_set(1)
    return np.array(strength), np.array(place)


def test_a_keyed_wind_reaches_the_solver_per_substep_and_blows_from_its_key():
    plate, wind = _keyed_wind()
    plate.select_set(True)
    job = harness.sub("adapter").BakeJob(bpy.context, "SELECTED")
    (field,) = job.solver_scene.fields
    n = 12 * SUBSTEPS + 1
    strength, place = _blender_samples(wind, n)
    np.testing.assert_allclose(field.strength[:n], strength, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(field.position[:n], place, atol=1e-6)
    assert len(set(np.round(field.strength[:n], 9).tolist())) > 8, "values between the keys"
    tl._bake(plate)
    art._assert_baked_frames_clean([plate])
    scene = bpy.context.scene
    scene.frame_set(5)
    assert abs(art._world_xz(plate)[:, 0].mean()) < 1e-6  # no wind until frame 5
    scene.frame_set(13)
    assert art._world_xz(plate)[:, 0].mean() > 0.01  # blown along +X after it
