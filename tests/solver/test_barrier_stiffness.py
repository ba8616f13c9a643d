"""solver/barrier_stiffness.py: the adaptive barrier stiffness (kappa=None):
its start, the balance when contact first appears (against a closed form),
its cap, and the doubling after a step that ends closer than dhat/100."""

import dataclasses
import math

import numpy as np
import pytest

from solver import HalfPlane, Material, SimParams, Simulation
from solver.barrier_stiffness import BarrierStiffnessSettings, auto_kappa, balanced, stiffened
from solver.examples import free_fall
from solver.settings import SolverSettings

G = 9.81


def _resting_square(gap, E=1e4, density=1e4, settings=None):
    """A square at rest, its bottom row of vertices gap [m] above the ground,
    with the automatic stiffness."""
    scene = free_fall()
    body = dataclasses.replace(scene.bodies[0], material=Material(E=E, nu=0.3, density=density, mu=0.0))
    lowest = float(np.min(body.vertices[:, 1]))
    ground = HalfPlane(point=(0.0, lowest - gap), normal=(0.0, 1.0), mu=0.0)
    params = SimParams(kappa=None, gravity=(0.0, -G))
    return Simulation(
        dataclasses.replace(scene, bodies=(body,), half_planes=(ground,), params=params), settings=settings
    )


def _closed_form_kappa(sim, gap):
    """The balance of gravity by the ground's barrier on the bottom row at
    rest: vertex i (mass m_i, quadrature weight w_i) feels the inertia
    gradient m_i h^2 g up and the barrier gradient h^2 kappa dhat w_i B'(s)
    2 d / dhat^2 (s = d^2 / dhat^2, B(s) = -(s - 1)^2 ln s, so B'(s) =
    -2 (s - 1) ln s - (s - 1)^2 / s); least squares over the bottom row."""
    m, dhat = sim.model, sim.params.dhat
    bottom = np.flatnonzero(np.isclose(sim.x[:, 1], sim.x[:, 1].min()))
    s = (gap / dhat) ** 2
    b1 = -2.0 * (s - 1.0) * math.log(s) - (s - 1.0) ** 2 / s
    c = dhat * m.weight[bottom] * b1 * 2.0 * gap / dhat**2  # barrier gradient per unit kappa / h^2
    return -float(np.sum(m.mass[bottom] * G * c)) / float(np.sum(c * c))


def test_the_automatic_stiffness_starts_at_a_tenth_of_the_softest_modulus():
    scene = free_fall()
    soft = dataclasses.replace(scene.bodies[0], name="soft", material=Material(E=3e4))
    hard = dataclasses.replace(scene.bodies[0], name="hard", material=Material(E=1e6))
    scene = dataclasses.replace(scene, bodies=(hard, soft))
    assert auto_kappa(scene) == pytest.approx(3e3, rel=1e-15)
    assert auto_kappa(scene, BarrierStiffnessSettings(min_modulus_fraction=0.5)) == pytest.approx(1.5e4)


def test_rigid_bodies_do_not_set_the_automatic_stiffness():
    scene = free_fall()
    body = scene.bodies[0]
    soft = dataclasses.replace(body, name="soft", material=Material(E=3e4))
    rigid = dataclasses.replace(body, name="rigid", material=Material(E=1e3), kind="rigid")
    assert auto_kappa(dataclasses.replace(scene, bodies=(rigid, soft))) == pytest.approx(3e3, rel=1e-15)
    # all rigid: the softest of them
    assert auto_kappa(dataclasses.replace(scene, bodies=(rigid,))) == pytest.approx(1e2, rel=1e-15)


def test_first_contact_balances_gravity_against_the_barrier_in_closed_form():
    gap = 0.9 * SimParams().dhat
    sim = _resting_square(gap)
    expected = _closed_form_kappa(sim, gap)
    assert sim.kappa_min < expected < 1e4 * sim.kappa_min  # neither the floor nor the cap
    h = sim.params.dt
    x_tilde = sim.x + h * sim.v + h * h * sim.gravity
    assert sim._balance_kappa(sim.x, x_tilde, sim._contact_set_at_state())
    assert sim.kappa == pytest.approx(expected, rel=1e-9)
    # through a step: balanced once, at the first step
    sim = _resting_square(gap)
    stats = sim.step()
    assert sim.kappa_balanced and stats.kappa == pytest.approx(expected, rel=1e-9)


def test_no_contact_no_balance():
    sim = _resting_square(2.0 * SimParams().dhat)
    h = sim.params.dt
    x_tilde = sim.x + h * sim.v + h * h * sim.gravity
    assert not sim._balance_kappa(sim.x, x_tilde, sim._contact_set_at_state())
    assert sim.kappa == sim.kappa_min


def test_the_balance_is_capped_and_never_lowers_kappa():
    gap = 0.9 * SimParams().dhat
    sim = _resting_square(
        gap, settings=SolverSettings(barrier_stiffness=BarrierStiffnessSettings(max_factor=3.0))
    )
    assert _closed_form_kappa(sim, gap) > 3.0 * sim.kappa_min
    sim.step()
    assert sim.kappa == 3.0 * sim.kappa_min
    # a contact the barrier holds with less than the current kappa leaves it
    light = _resting_square(gap, density=10.0)
    assert _closed_form_kappa(light, gap) < light.kappa_min
    light.step()
    assert light.kappa_balanced and light.kappa == light.kappa_min


def test_balanced_uses_the_free_dofs_only():
    """Least squares over the free DOFs: the collider DOFs (free False) do not
    count, whatever their gradients."""
    g_b = np.array([-2.0, 0.0, -1.0, 5.0])
    g_o = np.array([3.0, 7.0, 1.0, 100.0])
    free = np.array([True, True, True, False])
    assert balanced(1.0, 1.0, g_o, g_b, free) == pytest.approx(7.0 / 5.0, rel=1e-15)
    assert balanced(1.0, 1.0, g_o, g_b, np.ones(4, bool)) == 1.0  # pulled towards the barrier: no raise


def test_stiffened_doubles_below_a_hundredth_of_dhat_up_to_the_cap():
    dhat = 0.01
    assert stiffened(10.0, 1.0, 0.0099 * dhat, dhat) == 20.0
    assert stiffened(10.0, 1.0, 0.0101 * dhat, dhat) == 10.0
    assert stiffened(10.0, 1.0, math.inf, dhat) == 10.0
    assert stiffened(6000.0, 1.0, 0.0, dhat) == 1e4  # the cap: 1e4 x kappa_min
    settings = BarrierStiffnessSettings(close=0.5, growth=3.0, max_factor=100.0)
    assert stiffened(10.0, 1.0, 0.4 * dhat, dhat, settings) == 30.0
    assert stiffened(40.0, 1.0, 0.4 * dhat, dhat, settings) == 100.0


def test_a_step_ending_close_stiffens_the_next():
    """Simulation applies the doubling after each step that ends closer than
    close x dhat (here close = 1: any contact), up to the cap, and only with
    the automatic stiffness."""
    gap = 0.5 * SimParams().dhat
    settings = BarrierStiffnessSettings(close=1.0, max_factor=1e6)
    sim = _resting_square(gap, settings=SolverSettings(barrier_stiffness=settings))
    kappas = [sim.step().kappa for _ in range(3)]
    assert sim.kappa_balanced
    assert kappas[1] == 2.0 * kappas[0] and kappas[2] == 2.0 * kappas[1]
    scene = sim.scene
    scene = dataclasses.replace(scene, params=dataclasses.replace(scene.params, kappa=1e5))
    fixed = Simulation(scene, settings=SolverSettings(barrier_stiffness=settings))
    assert [fixed.step().kappa for _ in range(3)] == [1e5] * 3


def test_the_opposed_gradient_is_that_of_inertia_and_elasticity():
    """Central differences of 1/2 |x - x_tilde|_M^2 + h^2 Psi(x) on a
    deformed square (its elastic gradient is not zero)."""
    from solver import elasticity
    from solver.barrier_stiffness import opposed_gradient

    sim = _resting_square(2.0 * SimParams().dhat)
    m, h = sim.model, sim.params.dt
    rng = np.random.default_rng(3)
    x = sim.x + 0.01 * rng.normal(size=sim.x.shape)
    x_tilde = sim.x + 0.02 * rng.normal(size=sim.x.shape)

    def energy(y):
        d = y - x_tilde
        return 0.5 * np.sum(m.mass * np.einsum("ni,ni->n", d, d)) + h * h * elasticity.value(m.elements, y)

    g = opposed_gradient(m, h, x, x_tilde)
    eps = 1e-6
    fd = np.empty(x.size)
    for k in range(x.size):
        e = np.zeros(x.size)
        e[k] = eps
        fd[k] = (energy(x + e.reshape(x.shape)) - energy(x - e.reshape(x.shape))) / (2 * eps)
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-9 * np.abs(fd).max())
    assert np.abs(g - (m.mass[:, None] * (x - x_tilde)).ravel()).max() > 1e-3 * np.abs(g).max()
