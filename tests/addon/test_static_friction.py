"""Static and kinetic friction from the panel (issue 32, point 9): a box on a slope steeper than
its kinetic friction slides with the closed-form acceleration g (sin t - mu cos t) (the slope is
the ground with gravity tilted by t: the same physics; every frame checked for crossings and
inversions); the static coefficient reaches the solver when switched on; one below the kinetic
coefficient is refused."""

import math

import bpy
import harness
import numpy as np
import test_artist_input as artist

TAN = 0.45  # the slope: steeper than the kinetic friction 0.3
MU_GROUND = 0.3  # pair coefficients are geometric means: sqrt(0.3 * 0.3) = 0.3 kinetic


def setup_function():
    harness.setup()


def teardown_function():
    harness.teardown()


def _slide():
    """The box's mean x [m] at frames 7, 19 and 31 (t = 0.25, 0.75, 1.25 s)."""
    artist._frames(n_frames=31, fps=24, substeps=2)
    s = bpy.context.scene.ipc
    theta = math.atan(TAN)
    s.use_scene_gravity, s.gravity = False, (9.81 * math.sin(theta), -9.81 * math.cos(theta))
    s.ground_friction = MU_GROUND
    box = artist._quad("Box", -0.1, 0.004, 0.2, 0.2)
    box.ipc.youngs_modulus, box.ipc.friction = 1e6, 0.3
    artist._select_only(box)
    assert bpy.ops.ipc.bake() == {"FINISHED"}
    artist._assert_baked_frames_clean([box])
    xs = []
    for frame in (7, 19, 31):
        bpy.context.scene.frame_set(frame)
        xs.append(artist._world_xz(box)[:, 0].mean())
    return np.array(xs)


def test_box_slides_at_the_kinetic_closed_form():
    x = _slide()
    theta = math.atan(TAN)
    expected = 9.81 * (math.sin(theta) - 0.3 * math.cos(theta))
    measured = (x[2] - 2 * x[1] + x[0]) / 0.5**2
    assert abs(measured - expected) < 0.02 * expected, (measured, expected)


def test_static_friction_reaches_the_solver_only_when_switched_on():
    artist._frames()
    box = artist._quad("Box", -0.1, 0.2, 0.2, 0.2)
    box.ipc.friction, box.ipc.static_friction = 0.3, 0.9
    artist._select_only(box)
    job = harness.sub("adapter").BakeJob
    assert job(bpy.context, "SELECTED").solver_scene.bodies[0].material.mu_static is None
    box.ipc.use_static_friction = True
    mu_static = job(bpy.context, "SELECTED").solver_scene.bodies[0].material.mu_static
    assert abs(mu_static - 0.9) < 1e-6, mu_static  # a float32 property


def test_static_friction_below_friction_is_refused():
    artist._frames()
    box = artist._quad("Box", -0.1, 0.2, 0.2, 0.2)
    box.ipc.friction, box.ipc.use_static_friction, box.ipc.static_friction = 0.5, True, 0.2
    artist._select_only(box)
    before = harness.snapshot()
    message = harness.bake_error()
    for word in ("'Box'", "Static Friction (0.2)", "below Friction (0.5)"):
        assert word in message, f"{word!r} not in {message!r}"
    assert harness.snapshot() == before
