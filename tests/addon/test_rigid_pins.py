"""A Pinned Group on a body of Type Rigid (issue 34): Hard, Pull and a keyed Engaged, baked through
the add-on; every frame checked (no inverted face, no crossing) and the motion against the pinned
places and closed forms read from Blender."""

import bpy
import harness
import numpy as np
import test_artist_input as art
import test_links as tl

SIDE = tl.SIDE


def setup_function():
    harness.setup()


def teardown_function():
    harness.teardown()


def _rigid(body):
    body.ipc.body_type = "RIGID"
    return body


def _corner_pinned(name="Box"):
    """A rigid square whose top-left corner vertex is its Pinned Group."""
    body = _rigid(tl._square(name, (0.0, 0.0), n=4))
    x = art._world_xz(body)
    corner = int(np.argmin(x[:, 0] - x[:, 1]))  # leftmost, topmost
    body.vertex_groups.new(name="Corner").add([corner], 1.0, "REPLACE")
    body.ipc.pin_group = "Corner"
    return body, corner


def test_a_hard_pin_holds_a_rigid_body_by_its_corner_and_it_swings():
    tl._scene(n_frames=13)
    body, corner = _corner_pinned()
    start = art._world_xz(body)
    tl._bake(body)
    art._assert_baked_frames_clean([body])
    scene = bpy.context.scene
    for frame in range(scene.frame_start, scene.frame_end + 1):
        scene.frame_set(frame)
        x = art._world_xz(body)
        moved = np.hypot(*(x[corner] - start[corner]))
        assert moved < 1e-3, f"frame {frame}: the pinned corner moved {moved:.2e} m"
        edges = np.hypot(*(x[1:] - x[:-1]).T) - np.hypot(*(start[1:] - start[:-1]).T)
        assert np.abs(edges).max() < 1e-3 * SIDE, f"frame {frame}: the rigid body deformed"
    centre = art._world_xz(body).mean(axis=0) - start[corner]
    assert centre[0] < 0.5 * SIDE * 0.9, "it did not swing towards below its pin"


def test_a_keyed_engaged_releases_a_rigid_body_into_free_fall():
    tl._scene(n_frames=19)
    scene = bpy.context.scene
    body = _rigid(tl._pinned_plate())
    for frame, on in ((1, True), (7, False)):
        body.ipc.pin_engaged = on
        body.keyframe_insert("ipc.pin_engaged", frame=frame)
    tl._bake(body)
    art._assert_baked_frames_clean([body])
    scene.frame_set(7)
    released = tl._centre_z(body)
    assert abs(released) < 0.01 * SIDE  # held until then
    g, fps, h = 9.81, scene.render.fps, 1.0 / (scene.render.fps * scene.ipc.substeps)
    for frame in range(8, 20):
        scene.frame_set(frame)
        t = (frame - 7) / fps
        fall = released - tl._centre_z(body)
        assert abs(fall - 0.5 * g * t * t) <= 0.5 * g * h * t + 0.002, f"frame {frame}: fell {fall}"


def test_a_pulling_pin_holds_a_rigid_body_softly():
    tl._scene(n_frames=13)
    body = _rigid(tl._pinned_plate())
    body.ipc.pin_strength, body.ipc.pin_stiffness = "PULL", 2000.0
    tl._bake(body)
    art._assert_baked_frames_clean([body])
    bpy.context.scene.frame_set(13)
    sag = -tl._centre_z(body)
    # the plate's weight m g hangs on the three pinned vertices' springs: about m g / (3 k)
    mass = SIDE * SIDE * body.ipc.density
    assert 0.2 * mass * 9.81 / (3 * 2000.0) < sag < 3.0 * mass * 9.81 / (3 * 2000.0)
