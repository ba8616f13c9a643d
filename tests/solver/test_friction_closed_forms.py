"""Friction and contact against closed forms, at the DEFAULT Newton settings
(issue 11): a user cannot be expected to tune newton_tol below eps_v, so
every check here runs with SimParams' own newton_tol and force_tol, for both
time steps an artist picks most (100 Hz, 4 substeps at 24 fps) and both
friction smoothings (eps_v = 1e-4 and 1e-3 m/s), with both friction
mollifiers (SimParams.friction_mollifier: 'linear', the default, and 'ipc').

* a block on a slope slides with a = g (sin theta - mu cos theta) (within
  2 %) when tan theta > mu; when it sticks it creeps less than eps_v t, and
  at its static law once settled (within 2 %): the static friction force
  is mu lambda f1(|v| / eps_v) up to mu lambda at eps_v, so holding a share
  c = tan theta / mu of the limit takes |v| = c eps_v with the linear
  f1(r) = r and (1 - sqrt(1 - c)) eps_v with the ipc f1(r) = 2r - r^2;
* a block pushed along flat ground stops after the implicit-Euler distance
  (within 2 %);
* a stack of three squares rests with a ground reaction equal to its weight
  (within 0.1 %).

Scenes are built here from invariants.grid_square; reference values come
from the formulas, never from the solver.  Tables of the measured values:
``python3 -m tests.solver.test_friction_closed_forms [linear|ipc]``.
"""

import dataclasses
import math
import sys

import numpy as np
import pytest
from invariants import grid_square
from test_analytic import LAGGED, slope_scene, sticking_drift

from solver import Body, HalfPlane, Material, Scene, SimParams, Simulation, barrier

G = 9.81
SIDE = 0.1
DENSITY = 1000.0
STEPS = (0.01, 1.0 / 96.0)  # 100 Hz; 24 fps x 4 substeps
SMOOTHING = (1e-4, 1e-3)
THETAS = (20.0, 35.0, 50.0)
MUS = (0.1, 0.2, 0.5)
STICKING = [(th, mu) for th in THETAS for mu in MUS if math.tan(math.radians(th)) < mu]
MOLLIFIERS = ("linear", "ipc")


GAP = 1.5 * SimParams().dhat  # the blocks start this far above what they land on


def _params(dt, eps_v, **kw):
    """Library defaults (contact gap, stiffness, both Newton tolerances) but for
    the time step and the friction smoothing under test."""
    return SimParams(dt=dt, eps_v=eps_v, **kw)


def _block(center, angle=0.0, mu=0.5, velocity=(0.0, 0.0), name="block"):
    v, t = grid_square(SIDE, 2, center, angle=angle)
    return Body(name, v, t, Material(E=1e6, nu=0.3, density=DENSITY, mu=mu), velocity=np.asarray(velocity))


def slope_simulation(theta_deg, mu, dt, eps_v, mollifier="linear", settings=None):
    """The block 0.5 dhat above the slope (test_analytic.slope_scene), at rest."""
    scene = slope_scene(math.radians(theta_deg), mu, dhat=SimParams().dhat, eps_v=eps_v)
    params = _params(dt, eps_v, friction_mollifier=mollifier)
    return Simulation(dataclasses.replace(scene, params=params), settings=settings)


def slope_track(theta_deg, mu, dt, eps_v, mollifier="linear", duration=0.8):
    """Up-slope coordinate of the block's centroid after every step, (steps,)."""
    th = math.radians(theta_deg)
    c, s = math.cos(th), math.sin(th)
    sim = slope_simulation(theta_deg, mu, dt, eps_v, mollifier)
    up = np.array([c, s])
    return np.array(
        [sim.step() and sim.body_positions(0).mean(axis=0) @ up for _ in range(round(duration / dt))]
    )


def sliding_acceleration(theta_deg, mu, dt, eps_v, mollifier="linear"):
    """Down-slope acceleration fitted after landing and settling (t > 0.2 s)."""
    track = slope_track(theta_deg, mu, dt, eps_v, mollifier)
    t = dt * np.arange(1, len(track) + 1)
    late = t > 0.2
    return -2.0 * np.polyfit(t[late], track[late], 2)[0]


def stopping_distance(mu, v0, dt, eps_v, mollifier="linear"):
    """Distance a block resting on flat ground slides after it is given the
    velocity v0 (it settles at rest first, so the normal force is its weight)."""
    scene = Scene(
        bodies=(_block((0.0, 0.5 * SIDE + GAP), mu=mu),),
        half_planes=(HalfPlane((0.0, 0.0), (0.0, 1.0), mu, "ground"),),
        params=_params(dt, eps_v, friction_mollifier=mollifier),
    )
    sim = Simulation(scene)
    for _ in range(round(0.3 / dt)):
        sim.step()
    sim.v[:, 0] += v0
    x0 = sim.body_positions(0).mean(axis=0)[0]
    for _ in range(round(1.5 * v0 / (mu * G) / dt)):
        sim.step()
    return sim.body_positions(0).mean(axis=0)[0] - x0


def implicit_euler_stopping_distance(mu, v0, dt):
    """v_k+1 = v_k - h mu g while sliding, x_k+1 = x_k + h v_k+1, stopping at 0."""
    a = mu * G
    n = math.floor(v0 / (a * dt))
    return dt * (n * v0 - a * dt * n * (n + 1) / 2.0)


def stack_reaction(dt, eps_v, mollifier="linear"):
    """(ground reaction [N], weight [N]) of three stacked squares after 1 s."""
    gap = GAP
    bodies = tuple(_block((0.0, gap + (k + 0.5) * SIDE + k * gap), name=f"square{k}") for k in range(3))
    scene = Scene(
        bodies=bodies,
        half_planes=(HalfPlane((0.0, 0.0), (0.0, 1.0), 0.5, "ground"),),
        params=_params(dt, eps_v, friction_mollifier=mollifier),
    )
    sim = Simulation(scene)
    for _ in range(round(1.0 / dt)):
        sim.step()
    m = sim.model
    pts = np.flatnonzero(~m.is_collider)
    coef = sim.kappa * scene.params.dhat * m.weight[pts]
    normal = np.tile([0.0, 1.0], (len(pts), 1))
    force = barrier.hp_contact_force(sim.x[pts], np.zeros_like(normal), normal, coef, scene.params.dhat)
    weight = 3 * DENSITY * SIDE * SIDE * G
    return float(force.sum()), weight


@pytest.mark.parametrize("mollifier", MOLLIFIERS)
@pytest.mark.parametrize("dt", STEPS)
@pytest.mark.parametrize("eps_v", SMOOTHING)
@pytest.mark.parametrize(
    "theta, mu", [(th, mu) for th in THETAS for mu in MUS if math.tan(math.radians(th)) > mu]
)
def test_slope_sliding_acceleration_within_2_percent(theta, mu, dt, eps_v, mollifier):
    exact = G * (math.sin(math.radians(theta)) - mu * math.cos(math.radians(theta)))
    assert sliding_acceleration(theta, mu, dt, eps_v, mollifier) == pytest.approx(exact, rel=0.02)


@pytest.mark.parametrize("mollifier", MOLLIFIERS)
@pytest.mark.parametrize("dt", STEPS)
@pytest.mark.parametrize("eps_v", SMOOTHING)
@pytest.mark.parametrize("theta, mu", STICKING)
def test_slope_sticking_drifts_less_than_eps_v_t(theta, mu, dt, eps_v, mollifier):
    sim = slope_simulation(theta, mu, dt, eps_v, mollifier, settings=LAGGED)
    track, bound, _ = sticking_drift(sim, math.radians(theta), mu, round(0.8 / dt))
    # from the first step, as it falls onto the slope and lands: Coulomb's bound
    # (with the friction taken at each step's solution, LAGGED)
    assert np.all(np.abs(track) <= bound), (np.abs(track) / bound).max()
    settled = round(0.2 / dt)
    t = dt * (len(track) - settled)
    # once landed, smooth static friction lets a stuck block creep below eps_v
    assert np.abs(track[settled:] - track[settled]).max() < eps_v * t


def creep_speed(theta_deg, mu, dt, eps_v, mollifier="linear"):
    """Down-slope speed of a sticking block over the last 0.1 s of slope_track [m/s]."""
    track = slope_track(theta_deg, mu, dt, eps_v, mollifier)
    last = round(0.1 / dt)
    return float(track[-1 - last] - track[-1]) / (last * dt)


@pytest.mark.parametrize("mollifier", MOLLIFIERS)
@pytest.mark.parametrize("dt", STEPS)
@pytest.mark.parametrize("eps_v", SMOOTHING)
@pytest.mark.parametrize("theta, mu", STICKING)
def test_slope_sticking_creeps_at_the_static_law(theta, mu, dt, eps_v, mollifier):
    assert STICKING
    expected = static_law_speed(math.tan(math.radians(theta)) / mu, mollifier) * eps_v
    assert creep_speed(theta, mu, dt, eps_v, mollifier) == pytest.approx(expected, rel=0.02)


def static_law_speed(c, mollifier):
    """The slip speed, in units of eps_v, at which the static friction force is
    the share c < 1 of its limit mu lambda: holding the block (m g sin theta
    against mu m g cos theta) takes c = tan theta / mu.  f1(r) = c solved for r:
    linear r = c; ipc 2r - r^2 = c, r = 1 - sqrt(1 - c) (the root below 1)."""
    return c if mollifier == "linear" else 1.0 - math.sqrt(1.0 - c)


@pytest.mark.parametrize("mollifier", MOLLIFIERS)
@pytest.mark.parametrize("dt", STEPS)
@pytest.mark.parametrize("eps_v", SMOOTHING)
@pytest.mark.parametrize("mu", [0.2, 0.5])
def test_stopping_distance_within_2_percent_of_implicit_euler(mu, dt, eps_v, mollifier):
    v0 = 1.0
    assert stopping_distance(mu, v0, dt, eps_v, mollifier) == pytest.approx(
        implicit_euler_stopping_distance(mu, v0, dt), rel=0.02
    )


@pytest.mark.parametrize("mollifier", MOLLIFIERS)
@pytest.mark.parametrize("dt", STEPS)
@pytest.mark.parametrize("eps_v", SMOOTHING)
def test_stack_ground_reaction_equals_weight(dt, eps_v, mollifier):
    reaction, weight = stack_reaction(dt, eps_v, mollifier)
    assert reaction == pytest.approx(weight, rel=1e-3)


def resting_gap(theta, dhat, kappa):
    """The gap [m] at which the barrier of SIDE's block bottom face carries its
    weight's normal component: each of its three vertices (grid_square(SIDE,
    2)) has the quadrature weight w = SIDE / 2 (half its two boundary edges)
    and pushes with kappa dhat w (-dB/dd), B(s) = -(s - 1)^2 ln s, s = d^2 /
    dhat^2 (solver/barrier.py's formula, written out): solved by bisection."""
    weight = DENSITY * SIDE * SIDE * G * math.cos(theta)

    def push(d):
        s = d * d / (dhat * dhat)
        dB_ds = -2.0 * (s - 1.0) * math.log(s) - (s - 1.0) ** 2 / s
        return -3.0 * kappa * dhat * (0.5 * SIDE) * dB_ds * 2.0 * d / (dhat * dhat)

    lo, hi = 1e-9 * dhat, dhat
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if push(mid) > weight else (lo, mid)
    return 0.5 * (lo + hi)


@pytest.mark.parametrize("settings", [None, LAGGED], ids=["lagged", "taken-at-solution"])
def test_static_friction_holds_a_block_at_rest_that_kinetic_friction_cannot(settings):
    """mu_k = 0.3 < tan theta = 0.45 < mu_s = 0.52 (the pair's; the slope has
    mu 0.3, so the block's mu_s is 0.52^2 / 0.3): a rigid block placed at rest
    on the slope, at the gap where the barrier carries its weight, sticks from
    the first step (its bottom face drifts less than eps_v t); sliding, at
    mu_k, it could not stop."""
    theta, p = math.atan(0.45), SimParams()
    scene = slope_scene(theta, 0.3, dhat=p.dhat, gap=resting_gap(theta, p.dhat, p.kappa) / p.dhat)
    block = scene.bodies[0]
    material = dataclasses.replace(block.material, mu_static=0.52**2 / 0.3)
    block = dataclasses.replace(block, kind="rigid", material=material)
    sim = Simulation(dataclasses.replace(scene, bodies=(block,), params=p), settings=settings)
    tangent = np.array([math.cos(theta), math.sin(theta)])
    normal = np.array([-math.sin(theta), math.cos(theta)])
    bottom = np.argsort(sim.x @ normal)[:3]
    start = sim.x[bottom] @ tangent
    for k in range(1, round(0.8 / p.dt) + 1):
        sim.step()
        drift = np.abs(sim.x[bottom] @ tangent - start).max()
        assert drift < p.eps_v * p.dt * k, (k, drift)


def _tables(mollifier="linear"):
    print(f"friction_mollifier = {mollifier!r}\n")
    print("| theta | mu | dt | eps_v | a measured | a exact | error |\n|---|---|---|---|---|---|---|")
    for th in THETAS:
        for mu in MUS:
            for dt in STEPS:
                for eps_v in SMOOTHING:
                    exact = G * (math.sin(math.radians(th)) - mu * math.cos(math.radians(th)))
                    if math.tan(math.radians(th)) > mu:
                        a = sliding_acceleration(th, mu, dt, eps_v, mollifier)
                        err = f"{100 * (a / exact - 1):+.2f} %"
                        print(f"| {th:g} | {mu:g} | {dt:.4g} | {eps_v:g} | {a:.4f} | {exact:.4f} | {err} |")
                    else:
                        track = slope_track(th, mu, dt, eps_v, mollifier)
                        k = round(0.2 / dt)
                        drift = np.abs(track[k:] - track[k]).max()
                        limit = eps_v * dt * (len(track) - k)
                        row = f"| {th:g} | {mu:g} | {dt:.4g} | {eps_v:g}"
                        creep = creep_speed(th, mu, dt, eps_v, mollifier)
                        law = static_law_speed(math.tan(math.radians(th)) / mu, mollifier) * eps_v
                        print(
                            f"{row} | sticks: drift {drift:.2e} m, creep {creep:.4e} m/s "
                            f"| < {limit:.1e} m, static law {law:.4e} m/s "
                            f"| {100 * (creep / law - 1):+.2f} % |"
                        )
    print("\n| mu | dt | eps_v | distance | implicit Euler | error |\n|---|---|---|---|---|---|")
    for mu in (0.2, 0.5):
        for dt in STEPS:
            for eps_v in SMOOTHING:
                d = stopping_distance(mu, 1.0, dt, eps_v, mollifier)
                ref = implicit_euler_stopping_distance(mu, 1.0, dt)
                print(
                    f"| {mu:g} | {dt:.4g} | {eps_v:g} | {d:.5f} | {ref:.5f} | {100 * (d / ref - 1):+.2f} % |"
                )
    print("\n| dt | eps_v | ground reaction [N] | weight [N] | error |\n|---|---|---|---|---|")
    for dt in STEPS:
        for eps_v in SMOOTHING:
            r, w = stack_reaction(dt, eps_v, mollifier)
            print(f"| {dt:.4g} | {eps_v:g} | {r:.5f} | {w:.5f} | {100 * (r / w - 1):+.4f} % |")


if __name__ == "__main__":
    sys.path.insert(0, "tests/solver")
    _tables(*sys.argv[1:])


@pytest.mark.parametrize("kind", ["deformable", "rigid"])
@pytest.mark.parametrize("mu", [0.2, 0.5])
def test_a_block_resting_at_the_start_and_thrown_slides_the_implicit_euler_distance(kind, mu):
    """A block placed 0.5 dhat above the ground (where the add-on puts objects that touch at
    the start; a contact gap of 0.1 mm, the add-on's for a 10 cm block) and thrown along it
    at 1 m/s slides as far as implicit Euler's Coulomb block, flat.  Its first step's friction
    came from the barrier's force where it was placed, many times its weight: it tipped onto
    its leading edge and stopped within 2-37 mm (the audit's case)."""
    from dataclasses import replace

    p = SimParams(dhat=1e-4)
    block = replace(_block((0.0, 0.5 * SIDE + 0.5 * p.dhat), mu=mu, velocity=(1.0, 0.0)), kind=kind)
    ground = HalfPlane((0.0, 0.0), (0.0, 1.0), mu, "ground")
    sim = Simulation(Scene(bodies=(block,), half_planes=(ground,), params=p))
    x0 = sim.body_positions(0).mean(axis=0)[0]
    for _ in range(round(1.5 / (mu * G) / p.dt)):
        sim.step()
        assert np.ptp(sim.body_positions(0)[:, 1]) < SIDE + 1e-4  # flat: no tipping
    slid = sim.body_positions(0).mean(axis=0)[0] - x0
    assert slid == pytest.approx(implicit_euler_stopping_distance(mu, 1.0, p.dt), rel=0.02)
