"""solver/start.py: where Newton starts a step (coasting bodies, falling
free bodies, landing bodies stopped near where they will rest)."""

import dataclasses

import numpy as np
import pytest

from solver import SimParams, Simulation
from solver.examples import free_fall
from solver.scene import HalfPlane
from solver.settings import SolverSettings
from solver.start import StartSettings


def _two_squares_over_ground(gap, velocity, settings=None):
    """Square A with its lowest vertices gap [m] above the ground, square B far
    from everything, both moving at velocity (2,) [m/s]: the simulation, the
    start, the motions asked for (B: x_tilde; A: x_tilde, or x + h v if
    within dhat of the ground), which vertices are A's, A's gap at the start."""
    scene = free_fall(velocity=velocity)
    a = scene.bodies[0]
    b = dataclasses.replace(a, name="far", vertices=a.vertices + np.array([1.0, 1.0]))
    lowest = float(np.min(a.vertices[:, 1]))
    ground = HalfPlane(point=(0.0, lowest - gap), normal=(0.0, 1.0), mu=0.0, name="ground")
    sim = Simulation(dataclasses.replace(scene, bodies=(a, b), half_planes=(ground,)), settings=settings)
    h = sim.params.dt
    x_tilde = sim.x + h * sim.v + h * h * sim.gravity
    x_coast = sim.x + h * sim.v
    touching = sim._touching_bodies(sim._contact_set_at_state())
    x, _ = sim._start.guess(sim.x, x_coast, x_tilde, touching)
    on_a = sim.model.owner == 0
    return sim, x, np.where(on_a[:, None], x_coast, x_tilde), on_a, float(np.min(x[on_a, 1])) - (lowest - gap)


def test_the_start_lands_a_body_where_it_will_rest_and_lets_the_others_fall():
    """A body whose start would carry it deep into a half-plane's barrier zone
    stops at rest x dhat (0.9), where a landing contact settles (0.3 of its gap
    left, Newton reopened it about x2 per iteration: S4's first landings 5
    iterations, now 2-4); a body touching nothing else moves in full, not
    held back by the landing one; a vertex that would only dip into the zone
    moves in full too."""
    rest, deep = StartSettings().rest, StartSettings().deep
    assert (rest, deep) == (0.9, 0.8)
    dhat = SimParams().dhat
    sim, x, target, on_a, gap = _two_squares_over_ground(2.0 * dhat, (0.0, -2.0))
    assert gap == pytest.approx(rest * dhat, rel=1e-9)
    np.testing.assert_array_equal(x[~on_a], target[~on_a])
    # A within dhat (it coasts, x + h v) and ending just above deep x dhat:
    # the whole motion is taken
    start = 0.95 * dhat
    speed = (start - 1.01 * deep * dhat) / sim.params.dt
    sim, x, target, on_a, gap = _two_squares_over_ground(start, (0.0, -speed))
    np.testing.assert_allclose(x, target, rtol=0, atol=1e-15)
    assert deep * dhat < gap < rest * dhat


def test_the_landing_rule_follows_its_settings():
    """The landing height and depth are settings: rest = 0.6, deep = 0.5 stop
    a fall from 2 dhat at 0.6 dhat, and take a motion from 0.95 to 0.55
    dhat in full, which the defaults (a landing: from above 0.9 to below
    0.8 dhat) stop at 0.9 dhat."""
    dhat = SimParams().dhat
    settings = SolverSettings(start=StartSettings(rest=0.6, deep=0.5))
    _, _, _, _, gap = _two_squares_over_ground(2.0 * dhat, (0.0, -2.0), settings)
    assert gap == pytest.approx(0.6 * dhat, rel=1e-9)
    start = 0.95 * dhat
    speed = (start - 0.55 * dhat) / SimParams().dt
    _, x, target, _, gap = _two_squares_over_ground(start, (0.0, -speed), settings)
    np.testing.assert_allclose(x, target, rtol=0, atol=1e-15)
    assert gap == pytest.approx(0.55 * dhat, rel=1e-9)
    _, _, _, _, gap = _two_squares_over_ground(start, (0.0, -speed))
    assert gap == pytest.approx(0.9 * dhat, rel=1e-9)


def test_a_body_landing_on_a_collider_does_not_hold_back_another_falling():
    """Point-edge contacts stop only their own free body: A falling onto a
    static collider stops short of it, B falling next to it moves in full."""
    from solver.scene import Collider

    dhat = SimParams().dhat
    scene = free_fall(velocity=(0.0, -2.0))
    a = scene.bodies[0]
    b = dataclasses.replace(a, name="b", vertices=a.vertices + np.array([1.0, 0.0]))
    lowest = float(np.min(a.vertices[:, 1]))
    floor = Collider.static("floor", [(-0.5, lowest - 2.0 * dhat), (0.5, lowest - 2.0 * dhat)], [(0, 1)])
    sim = Simulation(dataclasses.replace(scene, bodies=(a, b), colliders=(floor,)))
    h = sim.params.dt
    x_tilde = sim.x + h * sim.v + h * h * sim.gravity
    touching = sim._touching_bodies(sim._contact_set_at_state())
    assert not touching.any()
    x, _ = sim._start.guess(sim.x, sim.x + h * sim.v, x_tilde, touching)
    on_b = sim.model.owner == 1
    np.testing.assert_array_equal(x[on_b], x_tilde[on_b])
    gap = float(np.min(x[sim.model.owner == 0, 1])) - (lowest - 2.0 * dhat)
    assert 0.0 < gap < dhat  # A moved, and stopped short of the floor


def test_bodies_touching_something_share_the_smallest_fraction():
    """Two squares resting within dhat of the ground push on each other
    through it: the one whose start would squeeze its contact to below
    ccd_gap_kept of its gap stops there, and the other, touching too, takes
    the same fraction of its (harmless) motion; a third square touching
    nothing moves in full."""
    dhat = SimParams().dhat
    scene = free_fall()
    a = scene.bodies[0]
    lowest = float(np.min(a.vertices[:, 1]))
    b = dataclasses.replace(a, name="b", vertices=a.vertices + np.array([0.5, 0.0]))
    c = dataclasses.replace(a, name="c", vertices=a.vertices + np.array([1.0, 1.0]))
    gap = 0.5 * dhat
    ground = HalfPlane(point=(0.0, lowest - gap), normal=(0.0, 1.0), mu=0.0, name="ground")
    sim = Simulation(dataclasses.replace(scene, bodies=(a, b, c), half_planes=(ground,)))
    touching = sim._touching_bodies(sim._contact_set_at_state())
    np.testing.assert_array_equal(touching, [True, True, False])
    dx = np.zeros_like(sim.x)
    owner = sim.model.owner
    dx[owner == 0, 1] = -gap  # A: its whole gap
    dx[owner == 1, 1] = -0.1 * gap  # B: a tenth of it
    dx[owner == 2, 1] = -gap  # C: far from everything
    cs = sim._contact_set(sim.x, sim.x + dx)
    fractions = sim._start.fractions(sim.x, dx, cs, touching)
    kept = SolverSettings().ccd_gap_kept
    np.testing.assert_allclose(fractions, [1.0 - kept, 1.0 - kept, 1.0], rtol=1e-12)


def test_touching_bodies_reused_from_the_last_summary_match_a_fresh_measurement():
    """Which bodies touch something at the state (they coast; the others also
    fall) comes from the last step's contact summary, not measured again:
    the same answer as measuring it, every step and after a checkpoint
    restores the state (its stencils are new: measured afresh)."""
    from solver.examples import compressing_squares

    sim = Simulation(compressing_squares(n_seg=2))
    seen = set()
    for _ in range(120):
        sim.step()
        cs = sim._contact_set_at_state()
        reused = sim._touching_bodies(cs)
        assert sim._state_touching[0] is sim._state_stencils
        sim._state_touching = None
        np.testing.assert_array_equal(reused, sim._touching_bodies(cs))
        sim.step()  # the next step starts from the summary again
        seen.add(tuple(reused))
    assert len(seen) > 1  # bodies both free and touching were seen
    other = Simulation(compressing_squares(n_seg=2))
    for _ in range(30):
        other.step()  # its own summary is cached: stale once the checkpoint is restored
    other.restore(sim.checkpoint())
    cs = other._contact_set_at_state()
    np.testing.assert_array_equal(other._touching_bodies(cs), sim._touching_bodies(cs))
    other._state_touching = sim._state_touching = None
    np.testing.assert_array_equal(other._touching_bodies(cs), sim._touching_bodies(cs))
