"""Analytic checks: implicit-Euler free fall, and a block on a slope that
sticks when tan(theta) < mu and slides with a = g (sin theta - mu cos theta)
when tan(theta) > mu.  Scenes are built here (not taken from examples.py)."""

import math

import numpy as np
import pytest
from invariants import grid_square

from solver import Body, HalfPlane, Material, Scene, SimParams, Simulation, simulate
from solver.newton import NewtonSettings
from solver.settings import SolverSettings

G = 9.81
# friction taken again at each step's solution (docs/design/20-friction-lag-updates.md):
# the normal force of the step's end, as Coulomb's law in sticking_drift has it
LAGGED = SolverSettings(newton=NewtonSettings(friction_lags=1))


def test_free_fall_matches_implicit_euler_closed_form():
    """No contact: x_{k+1} = x_k + h v_{k+1}, v_{k+1} = v_k + h g, i.e.
    v_k = v0 + k h g and x_k = x0 + k h v0 + h^2 g k (k+1) / 2 (a rigid
    translation, so elasticity exerts no force).  Newton stops when
    |dx|_inf / h < tol, so each step is exact up to tol * h; the bound below
    accumulates that per step."""
    v, t = grid_square(0.2, 3, (0.3, 2.0))
    v0 = np.array([0.7, 1.5])
    g = np.array([0.0, -G])
    params = SimParams(dt=0.01, gravity=(0.0, -G), newton_tol=1e-6)
    scene = Scene(
        bodies=(Body("box", v, t, Material(E=1e5, nu=0.3, density=500.0), velocity=v0),), params=params
    )
    steps = 40
    traj = simulate(scene, steps)
    h = params.dt
    for k in range(steps + 1):
        exact = v + k * h * v0 + h * h * g * k * (k + 1) / 2
        err = np.abs(traj.body_positions[0][k] - exact).max()
        assert err <= params.newton_tol * h * max(k, 1), (k, err)
        assert np.isclose(traj.times[k], k * h)


def slope_scene(theta, mu, dhat=1e-3, eps_v=1e-4, E=1e6, side=0.1, gap=1.5):
    """Half-plane through the origin rising at angle theta (outward normal
    (-sin, cos)); a square block, bottom face parallel to the slope, gap * dhat
    above it (1.5: contact-free at the start, within reach after a short drop;
    below 1: resting in contact).  Same mu on block and slope, so the pair
    coefficient is mu."""
    v, t = grid_square(side, 2, (0.0, 0.5 * side + gap * dhat), angle=theta)
    # grid_square rotates about the centre; rotate the centre too so the bottom face
    # is gap * dhat from the slope line
    c, s = math.cos(theta), math.sin(theta)
    centre = np.array([0.0, 0.5 * side + gap * dhat])
    v = v - centre + np.array([[c, -s], [s, c]]) @ centre
    normal = (-s, c)
    mat = Material(E=E, nu=0.3, density=1000.0, mu=mu)
    params = SimParams(dt=0.01, dhat=dhat, kappa=0.1 * E, eps_v=eps_v, newton_tol=1e-4)
    return Scene(
        bodies=(Body("block", v, t, mat),),
        half_planes=(HalfPlane((0.0, 0.0), normal, mu, "slope"),),
        params=params,
    )


def tangential_track(theta, mu, steps):
    scene = slope_scene(theta, mu)
    sim = Simulation(scene)
    down = np.array([math.cos(theta), math.sin(theta)])  # up-slope unit tangent
    nrm = np.array([-math.sin(theta), math.cos(theta)])
    s, gap = [], []
    for _ in range(steps):
        sim.step()
        x = sim.body_positions(0)
        s.append(x.mean(axis=0) @ down)
        gap.append((x @ nrm).min())
    return np.array(s), np.array(gap), scene.params


def sticking_drift(sim, theta, mu, steps, body=0):
    """(along, bound, gap), each (steps,): how far body's centroid has moved
    up the slope after every step (negative: down), the most Coulomb's law
    lets it slide from rest by then, |along| <= mu times the path of the
    centroid across the slope plus eps_v t, and the body's smallest distance
    to the slope line.

    Why: while the body slides down, friction is mu times the normal force
    of the same instant, so m dv_t = (m g sin theta - mu N) dt and
    m dv_n = (N - m g cos theta) dt (n out of the slope) give
    d(v_t + mu v_n) = g (sin theta - mu cos theta) dt < 0 when tan theta < mu.
    From rest v_t + mu v_n starts at 0, so v_t <= mu (-v_n): the body slides
    no faster than mu times its speed towards the slope, and in all no farther
    than mu times its path across it (in free fall, tan theta times it).
    Implicit Euler has the same increments, with the normal force of the
    step's end.  While it sticks, the smoothed static friction lets it creep
    below eps_v (the friction force reaches mu lambda only at |v| >= eps_v):
    eps_v t at most.  Friction whose normal force lags (is taken at the
    step's start, NewtonSettings.friction_lags = 0, the default) lets a
    landing block slide well beyond this: sim should take it at the step's
    end (LAGGED)."""
    tangent = np.array([math.cos(theta), math.sin(theta)])
    normal = np.array([-math.sin(theta), math.cos(theta)])
    centroids, gap = [sim.body_positions(body).mean(axis=0)], []
    for _ in range(steps):
        sim.step()
        x = sim.body_positions(body)
        centroids.append(x.mean(axis=0))
        gap.append((x @ normal).min())
    c = np.array(centroids)
    path = np.cumsum(np.abs(np.diff(c @ normal)))
    t = sim.params.dt * np.arange(1, steps + 1)
    return (c[1:] - c[0]) @ tangent, mu * path + sim.params.eps_v * t, np.array(gap)


def test_block_sticks_when_tan_theta_below_mu():
    theta, mu = 0.3, 0.5  # tan = 0.309 < 0.5
    scene = slope_scene(theta, mu)
    p = scene.params
    s, bound, gap = sticking_drift(Simulation(scene, settings=LAGGED), theta, mu, 100)
    # from the first step: it falls 0.5 dhat before it touches, and lands
    assert np.all(np.abs(s) <= bound), (np.abs(s) / bound).max()
    assert np.all(gap > 0) and np.all(gap[20:] < p.dhat)  # resting in contact, never through
    window = s[20:] - s[20]
    T = 0.8
    # Smooth static friction: while sticking the slip speed stays below eps_v
    # (the friction force reaches mu lambda only at |v| >= eps_v), so the creep
    # over T seconds is at most eps_v T = 8e-5 m -- versus 0.5 g sin(theta) T^2
    # = 0.93 m frictionless, or 0.5 * 0.6 * T^2 ~ 0.2 m for the slowest slide.
    assert np.abs(window).max() <= p.eps_v * T


@pytest.mark.parametrize("theta, mu", [(0.5, 0.2), (0.6, 0.3)])
def test_block_slides_with_coulomb_acceleration(theta, mu):
    assert math.tan(theta) > mu
    steps = 80
    s, gap, p = tangential_track(theta, mu, steps)
    assert np.all(gap > 0)
    h = p.dt
    t = h * np.arange(1, steps + 1)
    sel = slice(20, steps)  # after landing and settling (0.2 s)
    a_fit = 2.0 * np.polyfit(t[sel], s[sel], 2)[0]
    a_exact = -G * (math.sin(theta) - mu * math.cos(theta))  # down-slope = negative tangent
    # Tolerance 3%: implicit Euler reproduces a constant acceleration exactly;
    # the remaining error comes from the lagged normal force (lambda frozen at
    # the start of each step, settled after landing), the mollified friction
    # (|v| >> eps_v here, so f1 = 1), the Newton tolerance (1e-4 m/s) and the
    # block's small elastic oscillation.
    assert a_fit == pytest.approx(a_exact, rel=0.03)
