"""Pins on rigid (affine) bodies (issue 34; solver/links.py, rigid_pin_rows).

A rigid body's vertices are not unknowns of their own (x = A X + p), so a
pinned vertex of a rigid body is held by a zero-length spring to its track,
of the rigid links' stiffness, through the basis:

* the springs' energy matches finite differences in the reduced unknowns q;
* a rigid square pinned at one corner swings as a compound pendulum, its
  period within 2 % of 2 pi sqrt(I / (m g d)) (the continuous square's I);
* a pin on a rigid body that lets go (an engaged schedule, as the add-on's
  keyed Engaged) leaves it in free fall: g dt^2 n (n + 1) / 2 after n
  implicit-Euler steps (g t^2 / 2 as dt -> 0);
* an animated pin drags a rigid body along its track.

Expected values come from the formulas, not from the solver.
"""

import math

import numpy as np
import pytest
from invariants import assert_close_rel, fd_gradient, fd_jacobian, grid_square

from solver import Body, Material, Scene, SimParams, Simulation
from solver.assembly import Triplets
from solver.links import LinkSprings, step_springs
from solver.model import build_model
from solver.scene import Link, LinkAnchor, Pin

G = 9.81
SIDE = 0.2
DENSITY = 1000.0


def pinned_scene():
    """A rigid box with an animated pin (vertex 0) and a fixed one (vertices 3, 15), and a
    deformable box with a pin of its own."""
    v, t = grid_square(SIDE, 3, (0.5 * SIDE, 0.5 * SIDE))
    track = Pin(np.array([0]), times=np.array([0.0, 1.0]), positions=np.array([[[0.0, 0.0]], [[0.1, 0.05]]]))
    fixed = Pin(np.array([3, 15]))
    box = Body("box", v, t, Material(density=DENSITY), pins=(track, fixed), kind="rigid")
    soft = Body("soft", v + np.array([0.5, 0.0]), t, Material(density=DENSITY), pins=(Pin(np.array([0])),))
    return Scene(bodies=(box, soft), params=SimParams())


def test_a_rigid_bodys_pins_are_springs_and_a_deformable_bodys_stay_prescribed():
    m = build_model(pinned_scene())
    assert m.links.names == ("box.pin0", "box.pin1")
    assert [len(g.vertices) for g in m.kin_groups] == [1]  # the soft box's pin only
    assert m.kin_groups[0].vertices[0] == m.body_slices[1].start
    mass = SIDE * SIDE * DENSITY
    dt = SimParams().dt
    np.testing.assert_allclose(m.links.stiffness, 100.0 * mass / dt**2, rtol=1e-12)
    assert np.all(np.isinf(m.links.break_force))


def spring_term(seed):
    """(the model, its pin springs as a term at a step start moved at random, q in the basis)."""
    m = build_model(pinned_scene())
    rng = np.random.default_rng(seed)
    h = SimParams().dt
    x_prev = m.rest + rng.uniform(-0.01, 0.01, m.rest.shape)
    springs = step_springs(m.links, np.ones(len(m.links), bool), x_prev, 0.3, 0.3 + h)
    q = m.basis.coords(m.rest)
    q += rng.uniform(-0.02, 0.02, q.shape)
    return m, LinkSprings(springs, h * h), q


@pytest.mark.parametrize("seed", [0, 1])
def test_rigid_pin_springs_match_finite_differences_through_the_basis(seed):
    m, term, q = spring_term(seed)
    basis = m.basis

    def value(w):
        return term.weight * term.value(basis.expand(w), None)

    def triplets(w):
        T = Triplets(2 * m.n)
        term.gradient_hessian(basis.expand(w), None, T, project=False)
        return T

    def gradient(w):
        return basis.reduce_gradient(triplets(w).grad)

    g = gradient(q)
    assert np.abs(g).max() > 0
    assert_close_rel(g, fd_gradient(value, q, 1e-7), 1e-6, "B^T g")
    r, c, v = basis.reduce_triplets(*triplets(q).arrays())
    H = np.zeros((basis.n_q, basis.n_q))
    np.add.at(H, (r, c), v)
    assert_close_rel(H, fd_jacobian(gradient, q, 1e-7), 1e-6, "B^T H B")


def corner_pendulum(theta0, n_seg=8):
    """A rigid square (side SIDE) pinned at its corner vertex 0, at the origin, its diagonal
    theta0 from the vertical below it."""
    v, t = grid_square(SIDE, n_seg, (0.5 * SIDE, 0.5 * SIDE))
    phi = -0.75 * math.pi + theta0  # the diagonal (1, 1) turned to theta0 from straight down
    R = np.array([[math.cos(phi), -math.sin(phi)], [math.sin(phi), math.cos(phi)]])
    body = Body("box", v @ R.T, t, Material(density=DENSITY), pins=(Pin(np.array([0])),), kind="rigid")
    return Simulation(Scene(bodies=(body,), params=SimParams()))


def test_rigid_box_pinned_at_a_corner_swings_as_a_compound_pendulum():
    sim = corner_pendulum(0.1)
    dt = sim.params.dt
    angle, pivot = [], []
    for _ in range(200):
        assert sim.step().converged
        x = sim.body_positions(0)
        c = x.mean(axis=0)  # the centre of the square (its mesh is symmetric)
        angle.append(math.atan2(c[0], -c[1]))
        pivot.append(np.hypot(*x[0]))
    a = np.array(angle)
    i = np.flatnonzero((a[:-1] > 0) & (a[1:] <= 0))
    assert len(i) >= 2
    crossings = dt * (i + 1 + a[i] / (a[i] - a[i + 1]))
    period = float(np.mean(np.diff(crossings)))
    d = SIDE / math.sqrt(2)  # pivot to centre of mass
    inertia = SIDE**2 / 6 + d * d  # about the corner, per unit mass
    expected = 2 * math.pi * math.sqrt(inertia / (G * d))
    assert abs(period / expected - 1) < 0.02, (period, expected)
    assert max(pivot) < 1e-4  # the corner stays put: sag g dt^2 / 100 = 1e-5 m
    assert a.max() <= 0.1 + 1e-9  # implicit Euler: no energy gained


def test_a_rigid_pin_that_lets_go_leaves_the_body_in_free_fall():
    """Held at two corners until t_r = 0.1 s, then released (as the add-on's keyed Engaged)."""
    v, t = grid_square(SIDE, 4, (0.0, 0.0))
    box = Body("box", v, t, Material(density=DENSITY), kind="rigid")
    t_r, dt = 0.1, SimParams().dt
    corners = [(-0.5 * SIDE, 0.5 * SIDE), (0.5 * SIDE, 0.5 * SIDE)]
    holds = tuple(
        Link(
            f"hold{k}",
            "pin",
            _vertex_anchor(v, t, p),
            LinkAnchor(position=p),
            engaged_times=np.array([0.0, t_r]),
            engaged=np.array([True, False]),
        )
        for k, p in enumerate(corners)
    )
    sim = Simulation(Scene(bodies=(box,), links=holds, params=SimParams()))
    drop = []
    for _ in range(60):
        assert sim.step().converged
        if sim.time > t_r + 1e-9:
            drop.append(-sim.body_positions(0).mean(axis=0)[1])
    assert len(drop) == 50
    n = np.arange(1, len(drop) + 1)
    free_fall = G * dt * dt * n * (n + 1) / 2  # implicit Euler from rest
    # held, it sags by g dt^2 / 100 (1e-6 m); released, nothing but gravity acts
    np.testing.assert_allclose(drop, free_fall, rtol=1e-3, atol=1e-5)
    assert abs(drop[-1] / (0.5 * G * 0.5**2) - 1) < 0.03  # g t^2 / 2, t = 0.5 s (within dt / t)


def _vertex_anchor(v, t, p):
    """The box's anchor at its vertex nearest to p (2,): a corner of a triangle using it."""
    i = int(np.argmin(np.hypot(*(v - p).T)))
    tri, corner = np.argwhere(t == i)[0]
    w = np.zeros(3)
    w[corner] = 1.0
    return LinkAnchor(body="box", triangle=int(tri), barycentric=tuple(w.tolist()))


@pytest.mark.parametrize("kind", ["rigid", "stiff"])
def test_an_animated_pin_drags_a_rigid_body_along_its_track(kind):
    """A rigid (or stiff: affine + modes, the same springs through its basis) box hanging
    from one corner whose pin moves right at 0.5 m/s: the corner follows the track (to the
    springs' sag and lag, well below a millimetre)."""
    v, t = grid_square(SIDE, 4, (0.5 * SIDE, -0.5 * SIDE))
    corner = int(np.argmin(np.hypot(*v.T)))
    track = np.array([[[0.0, 0.0]], [[0.5, 0.0]]])
    pin = Pin(np.array([corner]), times=np.array([0.0, 1.0]), positions=track)
    box = Body("box", v, t, Material(density=DENSITY), pins=(pin,), kind=kind)
    sim = Simulation(Scene(bodies=(box,), params=SimParams()))
    for _ in range(50):
        assert sim.step().converged
        target = np.array([0.5 * sim.time, 0.0])
        assert np.hypot(*(sim.body_positions(0)[corner] - target)) < 1e-3
    assert sim.body_positions(0).mean(axis=0)[0] > 0.1  # the body came along
