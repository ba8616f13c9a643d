"""solver/prescribed.py: colliders and pins follow their targets, snapping
where the motion is collision-free and driven by a growing penalty where it
is not (the penalty schedule)."""

import dataclasses

import numpy as np

from solver import Collider, HalfPlane, Scene, SimParams, Simulation
from solver.examples import free_fall
from solver.prescribed import PenaltyRound, PrescribedMotion, PrescribedSettings
from solver.settings import SolverSettings


def _square_under_lid(lid_to, settings=None):
    """A 0.2 m square (top at y = 0.1) at rest without gravity on the ground,
    under a lid (a collider segment at y = 0.15) that moves to y = lid_to at
    t = dt."""
    body = free_fall().bodies[0]
    dt = SimParams().dt
    lid = Collider.from_rigid(
        "lid",
        [(-0.3, 0.15), (0.3, 0.15)],
        [(0, 1)],
        [0.0, dt],
        [[[1, 0, 0], [0, 1, 0]], [[1, 0, 0], [0, 1, lid_to - 0.15]]],
    )
    ground = HalfPlane(point=(0.0, -0.1 - 0.5 * SimParams().dhat), normal=(0.0, 1.0))
    params = SimParams(gravity=(0.0, 0.0), strict=False)
    scene = Scene(bodies=(body,), colliders=(lid,), half_planes=(ground,), params=params)
    sim = Simulation(scene, settings=settings)
    return sim, sim.model.is_collider


def test_a_collision_free_motion_snaps_to_the_target():
    sim, lid = _square_under_lid(0.2)  # up, away from the square
    target = sim._prescribed.targets(sim.x, sim.params.dt)
    np.testing.assert_allclose(target[lid, 1], 0.2, rtol=0, atol=1e-15)
    np.testing.assert_array_equal(target[~lid], sim.x[~lid])
    x, penalty, _ = sim._prescribed.first_round(sim.x, target)
    np.testing.assert_array_equal(x, target)
    assert penalty == PenaltyRound((), 1e3, 0)


def test_a_blocked_motion_stays_pending_under_the_penalty():
    """Through the square's top: the lid stays where it is, pending, its
    vertices penalized and free, the square's vertices neither."""
    sim, lid = _square_under_lid(0.0)
    target = sim._prescribed.targets(sim.x, sim.params.dt)
    blocked = sim._prescribed.blocked_vertices(sim.x, np.where(lid[:, None], target - sim.x, 0.0))
    assert blocked[lid].all() and blocked[~lid].any()
    x, penalty, _ = sim._prescribed.first_round(sim.x, target)
    np.testing.assert_array_equal(x, sim.x)
    assert penalty == PenaltyRound((0,), 1e3, 0)
    fixed, penalized = sim._prescribed.masks(penalty.pending)
    np.testing.assert_array_equal(penalized, lid)
    assert not fixed.any()
    fixed, penalized = sim._prescribed.masks(())
    np.testing.assert_array_equal(fixed, lid)
    assert not penalized.any()


def test_the_penalty_stiffens_after_each_solve_that_leaves_the_group_short():
    """While the lid stays blocked, each round multiplies the stiffness by
    penalty_growth, penalty_rounds times, then the step is done there."""
    settings = PrescribedSettings(penalty_start=5.0, penalty_growth=3.0, penalty_rounds=2)
    sim, _ = _square_under_lid(0.0, SolverSettings(prescribed=settings))
    prescribed = sim._prescribed
    target = prescribed.targets(sim.x, sim.params.dt)
    x, penalty, _ = prescribed.first_round(sim.x, target)
    schedule = [penalty]
    while penalty is not None:
        x_next, penalty = prescribed.next_round(x, target, penalty)
        np.testing.assert_array_equal(x_next, x)  # no snap: nothing moved
        schedule.append(penalty)
    assert schedule == [
        PenaltyRound((0,), 5.0, 0),
        PenaltyRound((0,), 15.0, 1),
        PenaltyRound((0,), 45.0, 2),
        None,
    ]


def test_a_group_snaps_once_its_way_is_free_and_the_schedule_ends_with_nothing_pending():
    """After a solve that moved the square out of the way, the pending lid
    snaps to its target (the stiffness unchanged); the next solve ends it."""
    sim, lid = _square_under_lid(0.0)
    target = sim._prescribed.targets(sim.x, sim.params.dt)
    x = sim.x.copy()
    x[~lid, 1] -= 0.5  # the square far below
    current = PenaltyRound((0,), 1e4, 1)
    x_next, penalty = sim._prescribed.next_round(x, target, current)
    np.testing.assert_array_equal(x_next[lid], target[lid])
    np.testing.assert_array_equal(x_next[~lid], x[~lid])
    assert penalty == PenaltyRound((), 1e4, 1)
    assert sim._prescribed.next_round(x_next, target, penalty) == (x_next, None)


def test_a_snap_onto_a_half_plane_is_blocked_within_its_clearance():
    """A pinned vertex carried to 0.05 dhat above a half-plane (within
    plane_clearance = 0.1 dhat) is blocked; with a clearance of 0.01 dhat it
    snaps."""
    from solver import Pin

    dhat = SimParams().dhat
    body = free_fall().bodies[0]
    lowest = int(np.argmin(body.vertices[:, 1]))
    y = float(body.vertices[lowest, 1])
    start = body.vertices[[lowest]]
    pin = Pin(np.array([lowest]), np.array([0.0, 1.0]), np.stack([start, start - [0.0, 0.95 * dhat]]))
    body = dataclasses.replace(body, pins=(pin,))
    ground = HalfPlane(point=(0.0, y - dhat), normal=(0.0, 1.0))
    scene = Scene(bodies=(body,), half_planes=(ground,), params=SimParams(gravity=(0.0, 0.0)))
    for clearance, pending in ((0.1, (0,)), (0.01, ())):
        prescribed = PrescribedMotion(
            Simulation(scene).model, dhat, PrescribedSettings(plane_clearance=clearance)
        )
        x0 = Simulation(scene).x
        _, penalty, _ = prescribed.first_round(x0, prescribed.targets(x0, 1.0))
        assert penalty.pending == pending


def test_a_step_drives_the_blocked_lid_by_the_schedule():
    """Simulation.step runs the schedule: a Newton solve per round, the
    stiffness of each as the schedule gives it (recorded at the masks)."""
    settings = PrescribedSettings(penalty_start=2.0, penalty_growth=4.0, penalty_rounds=3)
    sim, _ = _square_under_lid(0.0, SolverSettings(prescribed=settings))
    rounds = []
    real = sim._prescribed.next_round
    object.__setattr__(sim._prescribed, "next_round", lambda *a: rounds.append(real(*a)[1]) or real(*a))
    stats = sim.step()
    assert stats.converged and stats.collider_lag > 1e-3  # short of its target
    assert [r and r.k_pen for r in rounds] == [8.0, 32.0, 128.0, None]
