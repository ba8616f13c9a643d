"""Animated settings (solver/animated.py): gravity, the bodies' E, density and
friction, the half-planes' friction sampled at each step's start, and the
per-vertex stiffness of a painted vertex group."""

from dataclasses import replace

import numpy as np
import pytest

from solver import Body, HalfPlane, Material, Scene, SimParams, Simulation, SolverInputError
from solver.examples import square_mesh
from solver.scene import Animation, MaterialAnimation, Pin, Track

E0 = 1e3
SWITCH = 0.5  # E doubles here: steps starting at 0.49 see E0, from 0.5 on 2 E0
STEP_TRACK = Track(np.array([0.4951, 0.4999]), np.array([E0, 2 * E0]))


def shearing_block(E=E0, animation=None):
    """A 0.2 m block, bottom row pinned, sheared by an initial velocity growing with height."""
    v, t = square_mesh(side=0.2, n_seg=2, center=(0.0, 0.1))
    bottom = np.flatnonzero(v[:, 1] < 1e-9)
    body = Body(
        "block",
        v,
        t,
        Material(E=E, nu=0.3, density=100.0, mu=0.0),
        velocity=np.column_stack([2.0 * v[:, 1], np.zeros(len(v))]),
        pins=(Pin(bottom),),
    )
    return Scene((body,), params=SimParams(gravity=(0.0, 0.0)), animation=animation)


def top_sway(sim, steps):
    """(steps,) the top centre vertex's x after each step."""
    top = int(np.argmax(sim.model.rest[:, 1] - np.abs(sim.model.rest[:, 0])))
    out = []
    for _ in range(steps):
        assert sim.step().converged
        out.append(sim.x[top, 0])
    return np.array(out)


def period(xs, h):
    """The mean period of xs from its upward zero crossings (linear between samples)."""
    xs = xs - xs.mean()
    i = np.flatnonzero((xs[:-1] < 0) & (xs[1:] >= 0))
    t = (i + xs[i] / (xs[i] - xs[i + 1])) * h
    assert len(t) >= 3, "at least two full periods"
    return float(np.diff(t).mean())


def test_doubling_E_makes_a_fresh_body_with_that_E():
    """After the switch the block moves exactly as a block built with 2 E0 and
    continued from the same state; its period is 1/sqrt(2) of before within 2 %."""
    anim = Animation(materials=(MaterialAnimation("block", E=STEP_TRACK),))
    sim = Simulation(shearing_block(animation=anim))
    h = sim.params.dt
    before = top_sway(sim, 50)
    cp = sim.checkpoint()
    fresh = Simulation.from_checkpoint(shearing_block(E=2 * E0), cp)
    after = top_sway(sim, 200)
    np.testing.assert_array_equal(after, top_sway(fresh, 200))
    constant = top_sway(Simulation(shearing_block()), 300)
    np.testing.assert_array_equal(before, constant[:50])  # nothing changes before the switch
    ratio = period(constant, h) / period(after, h)
    assert ratio == pytest.approx(np.sqrt(2.0), rel=0.02)


def test_painted_stiffness_scales_each_triangle_by_its_mean_weight():
    """Weights 1 on the top row, 0 elsewhere, factors (0.5, 3): a triangle with
    k of its 3 vertices on the top row has E scaled by 0.5 + 2.5 k / 3."""
    scene = shearing_block()
    body = scene.bodies[0]
    w = (body.vertices[:, 1] > 0.2 - 1e-9).astype(float)
    painted = MaterialAnimation("block", stiffness_weights=w, stiffness_factors=(0.5, 3.0))
    plain = Simulation(scene).model.elements
    model = Simulation(replace(scene, animation=Animation(materials=(painted,)))).model
    k = w[body.triangles].sum(axis=1)
    np.testing.assert_allclose(model.elements.mu / plain.mu, 0.5 + 2.5 * k / 3.0, rtol=1e-12)
    np.testing.assert_allclose(model.elements.lam / plain.lam, 0.5 + 2.5 * k / 3.0, rtol=1e-12)


def free_fall_scene(animation=None, ground_mu=0.4):
    v, t = square_mesh(side=0.1, n_seg=1, center=(0.0, 0.06))
    body = Body("box", v, t, Material(E=1e5, density=100.0, mu=0.5))
    return Scene((body,), half_planes=(HalfPlane(mu=ground_mu),), animation=animation)


def test_keyframed_gravity_is_sampled_at_each_step_start():
    """Gravity off, then (3, -9.81) from 0.05 s: the free body's velocity after
    0.1 s is the sampled gravity summed over the steps, times h."""
    g = Track(np.array([0.0, 0.045, 0.0499]), np.array([[0.0, 0.0], [0.0, 0.0], [3.0, -9.81]]))
    v, t = square_mesh(side=0.1, n_seg=1, center=(0.0, 1.0))
    scene = Scene((Body("box", v, t),), animation=Animation(gravity=g))
    sim = Simulation(scene)
    for _ in range(10):
        sim.step()
    np.testing.assert_allclose(sim.v.mean(axis=0), [5 * 0.01 * 3.0, 5 * 0.01 * -9.81], rtol=1e-9)


def sliding_speeds(mu_ground, steps):
    """(steps,) the box's mean x velocity after each step, launched at 1 m/s
    just above the ground (it lands within 0.05 s)."""
    v, t = square_mesh(side=0.1, n_seg=1, center=(0.0, 0.0605))
    body = Body("box", v, t, Material(E=1e5, density=100.0, mu=1.0), velocity=(1.0, 0.0))
    anim = Animation(plane_mu=(("ground", mu_ground),))
    sim = Simulation(Scene((body,), half_planes=(HalfPlane(mu=1.0),), animation=anim))
    out = []
    for _ in range(steps):
        assert sim.step().converged
        out.append(float(sim.v[:, 0].mean()))
    return np.array(out)


def test_keyframed_ground_friction_brakes_a_sliding_box_from_its_key():
    """Ground friction keyed from 0 to 0.25 at 0.3 s (body mu 1: the pair's
    sqrt(1 x 0.25) = 0.5): the box slides at 1 m/s until then and loses
    0.5 g per second after it."""
    track = Track(np.array([0.0, 0.295, 0.2999]), np.array([0.0, 0.0, 0.25]))
    v = sliding_speeds(track, 40)
    assert v[29] == pytest.approx(1.0, abs=1e-3)
    assert v[39] == pytest.approx(1.0 - 0.5 * 9.81 * 0.1, abs=0.01)


@pytest.mark.parametrize(
    ("animation", "message"),
    [
        (Animation(materials=(MaterialAnimation("nobody"),)), "no body named 'nobody'"),
        (
            Animation(materials=(MaterialAnimation("box", E=Track(np.array([0.0]), np.array([-1.0]))),)),
            "body 'box': animation.E.values: expected values > 0",
        ),
        (
            Animation(materials=(MaterialAnimation("box", stiffness_weights=np.ones(3)),)),
            "body 'box': animation.stiffness_weights: expected one weight per vertex",
        ),
        (Animation(gravity=Track(np.array([0.0, 0.0]), np.zeros((2, 2)))), "gravity.times"),
        (
            Animation(plane_mu=(("floor", Track(np.array([0.0]), np.array([0.1]))),)),
            "no half-plane named 'floor'",
        ),
    ],
)
def test_invalid_animation_is_refused_naming_what(animation, message):
    with pytest.raises(SolverInputError, match=message):
        Simulation(free_fall_scene(animation))


def test_keyed_density_scales_the_masses_and_keyed_mu_the_friction():
    """At each time the stepped model has the body's masses times density(t) / density
    and its friction mu(t) (static: the material's when higher)."""
    anim = Animation(
        materials=(
            MaterialAnimation(
                "box",
                density=Track(np.array([0.0, 1.0]), np.array([100.0, 300.0])),
                mu=Track(np.array([0.0, 1.0]), np.array([0.2, 1.0])),
            ),
        )
    )
    scene = free_fall_scene(anim)
    scene = replace(
        scene,
        bodies=(replace(scene.bodies[0], material=Material(E=1e5, density=100.0, mu=0.5, mu_static=0.6)),),
    )
    sim = Simulation(scene)
    at = sim._animated.at(0.5)
    np.testing.assert_allclose(at.mass, 2.0 * sim.model.mass, rtol=1e-12)
    np.testing.assert_allclose(at.mu, 0.6)
    np.testing.assert_allclose(at.mu_static, 0.6)
    np.testing.assert_allclose(sim._animated.at(1.0).mu_static, 1.0)
    assert sim._animated.at(0.5).plane_mu.tolist() == sim.model.plane_mu.tolist()
