"""Hand-over from the animation at a later start frame (issue 14, point 4).

A bake from a Start Frame after the scene's first frame starts each body with the velocity its
animation has there, (position at the start frame - position one frame before) x fps, plus its
Initial Velocity and Spin; a body at rest there starts with the Initial Velocity alone. The
handed-over velocity is an input of the bake: changing the animation (also before the start
frame) makes Continue Bake refuse, naming it.

Free space (no gravity): a square keyed to fly at a known velocity, one keyed to turn at a known
rate, one whose keys stopped before the start frame (with an Initial Velocity) and one keyed to
fly that also has an Initial Velocity; a wall in the flyer's way (checked exactly afterwards)."""

import bpy
import harness
import numpy as np
from checks import assert_intersection_free

FPS, FPS_BASE = 30, 1.001  # 29.97 frames per second: fps_base counts
START, END = 20, 30
HALF = 0.1  # half the side of each square


def setup_function():
    harness.setup()


def teardown_function():
    harness.teardown()


def _square(name, x, z):
    verts = [(-HALF, 0, -HALF), (HALF, 0, -HALF), (HALF, 0, HALF), (-HALF, 0, HALF)]
    obj = harness.make_mesh_object(name, verts, [(0, 1, 2, 3)])
    obj.location = (x, 0.0, z)
    return obj


def _key(obj, path, index, frames_values):
    for frame, value in frames_values:
        getattr(obj, path)[index] = value
        obj.keyframe_insert(path, index=index, frame=frame)
    for fc in harness.sub("adapter").fcurves_of(obj):
        for point in fc.keyframe_points:
            point.interpolation = "LINEAR"


def _scene():
    scene = bpy.context.scene
    scene.render.fps, scene.render.fps_base = FPS, FPS_BASE
    scene.frame_start, scene.frame_end = 1, END
    scene.use_gravity = False
    flyer = _square("Flyer", 0.0, 1.0)  # keyed: 1.45 m and -0.58 m over frames 1-30
    _key(flyer, "location", 0, [(1, 0.0), (30, 1.45)])
    _key(flyer, "location", 2, [(1, 1.0), (30, 0.42)])
    spinner = _square("Spinner", -3.0, 1.0)  # keyed: turns 1.16 rad about world Y
    _key(spinner, "rotation_euler", 1, [(1, 0.0), (30, 1.16)])
    resting = _square("Resting", 3.0, 1.0)  # keyed to move until frame 10, then still
    _key(resting, "location", 0, [(1, 2.5), (10, 3.0), (30, 3.0)])
    resting.ipc.initial_velocity = (0.4, 0.0)
    thrown = _square("Thrown", 0.0, -2.0)  # keyed along x, plus an Initial Velocity
    _key(thrown, "location", 0, [(1, 0.0), (30, 1.45)])
    thrown.ipc.initial_velocity = (0.0, 0.5)
    # the flyer's right side is at x 1.0 + 0.1 at frame 20: the wall stops it a few frames later
    wall = harness.make_mesh_object("Wall", [(1.3, 0, -1.0), (1.3, 0, 2.0)], edges=[(0, 1)], role="COLLIDER")
    s = scene.ipc
    s.substeps, s.use_ground = 2, False
    s.use_frame_range = True
    s.frame_start, s.frame_end = START, 26
    return flyer, spinner, resting, thrown, wall


def _world(obj, frame):
    """(4, 2) world XZ positions of obj's evaluated (baked or modelled) vertices at frame."""
    bpy.context.scene.frame_set(frame)
    local = harness.evaluated_local(obj).astype(np.float64)
    m = np.array(obj.matrix_world, dtype=np.float64)
    return (local @ m[:3, :3].T + m[:3, 3])[:, [0, 2]]


def _angle(a, b):
    """The rotation angle (counter-clockwise in XZ seen from the front) taking a to b."""
    p, q = a - a.mean(axis=0), b - b.mean(axis=0)
    return float(np.arctan2((p[:, 0] * q[:, 1] - p[:, 1] * q[:, 0]).sum(), (p * q).sum()))


def test_a_bake_from_a_later_start_frame_carries_on_with_the_animated_velocity():
    flyer, spinner, resting, thrown, _wall = _scene()
    fps = FPS / FPS_BASE
    keyed_step = np.array([1.45, -0.58]) / 29  # per frame
    thrown_step = np.array([1.45, 0.0]) / 29
    keyed_turn = _angle(_world(spinner, START - 1), _world(spinner, START))
    assert abs(keyed_turn) > 0.03
    resting_start = _world(resting, START)

    job = harness.sub("adapter").BakeJob(bpy.context, "SCENE")
    names = [b.name for b in job.solver_scene.bodies]
    velocity = dict(zip(names, (b.velocity for b in job.solver_scene.bodies), strict=True))
    assert velocity["Flyer"] is not None and velocity["Spinner"] is not None, "no hand-over"
    assert np.allclose(velocity["Flyer"], keyed_step * fps, rtol=0, atol=1e-5)
    assert np.array_equal(velocity["Resting"], np.tile([np.float32(0.4), 0.0], (4, 1))), (
        "at rest: Initial Velocity"
    )
    assert np.allclose(velocity["Thrown"], thrown_step * fps + np.array([0.0, 0.5]), rtol=0, atol=1e-5)

    assert bpy.ops.ipc.bake(target="SCENE") == {"FINISHED"}
    for obj in (flyer, spinner, resting, thrown):
        assert (obj.ipc.bake_frame_start, obj.ipc.bake_frame_end) == (START, 26)
    frames = {o.name: [_world(o, f) for f in range(START, 27)] for o in (flyer, spinner, resting, thrown)}
    assert np.array_equal(frames["Resting"][0], resting_start)
    for f in range(3):  # free flight before the flyer nears the wall: the keyed speed
        step = frames["Flyer"][f + 1] - frames["Flyer"][f]
        assert np.allclose(step, keyed_step, rtol=0, atol=2e-6), (f, step, keyed_step)
        step = frames["Thrown"][f + 1] - frames["Thrown"][f]
        assert np.allclose(step, thrown_step + np.array([0.0, 0.5 / fps]), rtol=0, atol=2e-6), (f, step)
        step = frames["Resting"][f + 1] - frames["Resting"][f]
        assert np.allclose(step, [0.4 / fps, 0.0], rtol=0, atol=2e-6), (f, step)
        turn = _angle(frames["Spinner"][f], frames["Spinner"][f + 1])
        assert abs(turn - keyed_turn) < 0.02 * abs(keyed_turn), (f, turn, keyed_turn)
        centre = frames["Spinner"][f + 1].mean(axis=0) - frames["Spinner"][f].mean(axis=0)
        assert np.abs(centre).max() < 1e-3 * HALF, centre
    # the wall stopped the flyer: it never reaches the wall, nothing overlaps or inverts
    assert frames["Flyer"][-1][:, 0].max() - frames["Flyer"][0][:, 0].max() < 6 * keyed_step[0]
    tris = np.array([[0, 1, 2], [0, 2, 3]])
    for f in range(7):
        assert (frames["Flyer"][f][:, 0] < 1.3).all(), f
        assert_intersection_free([(frames[n][f], tris) for n in frames], f"frame {START + f}")


def _keys(obj):
    out = []
    for kb in obj.data.shape_keys.key_blocks:
        co = np.empty(len(kb.data) * 3, dtype=np.float32)
        kb.data.foreach_get("co", co)
        out.append((kb.name, co.tobytes()))
    return out


def test_the_handed_over_velocity_is_an_input_of_the_bake():
    """Continue Bake of a handed-over bake equals the bake in one go; changing the animation
    before the start frame, or moving the scene's first frame to the start frame (no hand-over
    any more), outdates the bake and Continue Bake refuses naming it."""
    flyer, spinner, resting, thrown, _wall = _scene()
    bodies = (flyer, spinner, resting, thrown)
    scene = bpy.context.scene
    outdated = harness.sub("signature").is_outdated
    assert bpy.ops.ipc.bake(target="SCENE") == {"FINISHED"}
    assert not outdated(bpy.context, flyer)
    for obj in bodies:
        obj.select_set(True)

    fc = next(c for c in harness.sub("adapter").fcurves_of(flyer) if c.array_index == 0)
    keyed = fc.keyframe_points[0].co.y
    fc.keyframe_points[0].co.y = keyed - 0.1  # frame 1: before the start frame
    assert outdated(bpy.context, flyer)
    text = harness.bake_error("continue_bake", frame_end=END)
    assert "the animation of 'Flyer'" in text, text
    fc.keyframe_points[0].co.y = keyed
    assert not outdated(bpy.context, flyer)

    scene.frame_start = START  # the start frame is the scene's first: no frame before it
    assert outdated(bpy.context, flyer)
    text = harness.bake_error("continue_bake", frame_end=END)
    assert "the start frame's animated velocity" in text, text
    scene.frame_start = 1

    assert bpy.ops.ipc.continue_bake(frame_end=END) == {"FINISHED"}
    continued = [_keys(o) for o in bodies]
    scene.ipc.frame_end = END
    assert bpy.ops.ipc.bake(target="SCENE") == {"FINISHED"}
    assert [_keys(o) for o in bodies] == continued


def test_from_the_scenes_first_frame_the_initial_velocity_alone():
    """At the scene's first frame there is no frame before it: the keyed flyer starts with its
    Initial Velocity (zero), the bake is what it was before the hand-over existed."""
    _scene()
    bpy.context.scene.ipc.frame_start = 1
    job = harness.sub("adapter").BakeJob(bpy.context, "SCENE")
    velocity = {b.name: b.velocity for b in job.solver_scene.bodies}
    assert velocity["Flyer"] is None and velocity["Spinner"] is None
    assert np.array_equal(velocity["Thrown"], np.tile([0.0, np.float32(0.5)], (4, 1)))
