"""Rigid (affine) bodies against closed forms, at the default settings
(issue 34; solver/basis.py, solver/orthogonality.py):

* a rigid block on a slope slides with a = g (sin theta - mu cos theta)
  (within 2 %) and, when tan theta < mu, sticks (drifts less than eps_v t);
* a rigid disc spinning in free flight keeps its angular momentum (within
  0.1 % over 1 s at 0.2 rad/s), and at 5 rad/s turns by the increments of
  implicit Euler on an exactly rigid rotor, 2 sin phi' = sin(phi + phi')
  (within 0.1 %: the integrator's own damping, (4/3) phi^2 per step, no more);
* a rigid block and the same block as a very stiff deformable body follow
  the same trajectory (within 1 % of its size over 1 s) as it lands, tumbles
  and slides;
* a pile of rigid shapes, and one of rigid and deformable shapes, never
  cross nor invert, and the rigid ones stay rigid (strain below 1e-3),
  every step.

Reference values come from the formulas (or, for the stiff-body check, from
the deformable solver), never from the rigid path itself.
"""

import dataclasses
import math

import numpy as np
import pytest
from invariants import crossing_edge_pairs, grid_square, rotation_angle, signed_areas
from test_analytic import LAGGED, slope_scene, sticking_drift

from solver import Body, HalfPlane, Material, Scene, SimParams, Simulation
from solver import orthogonality as ortho
from solver.basis import RIGID_STRAIN_LIMIT
from solver.examples import _horizontal_ceiling, disc_mesh, pile, square_mesh
from solver.io import cli
from solver.newton import Mode
from solver.prescribed import PrescribedSettings
from solver.settings import SolverSettings

G = 9.81
SIDE = 0.1


def rigid(scene, which=None):
    """The scene with its bodies (or those whose index is in which) made rigid."""
    bodies = tuple(
        dataclasses.replace(b, kind="rigid") if which is None or i in which else b
        for i, b in enumerate(scene.bodies)
    )
    return dataclasses.replace(scene, bodies=bodies)


def slope_track(theta_deg, mu, duration=0.8, eps_v=1e-3, settings=None):
    """Up-slope coordinate of the rigid block's centroid after every step."""
    th = math.radians(theta_deg)
    scene = rigid(slope_scene(th, mu, dhat=SimParams().dhat, eps_v=eps_v))
    scene = dataclasses.replace(scene, params=SimParams(eps_v=eps_v))
    sim = Simulation(scene, settings=settings)
    up = np.array([math.cos(th), math.sin(th)])
    return np.array(
        [sim.step() and sim.body_positions(0).mean(axis=0) @ up for _ in range(round(duration / 0.01))]
    )


@pytest.mark.parametrize("settings", [None, LAGGED], ids=["lagged", "taken-at-solution"])
@pytest.mark.parametrize(("theta", "mu"), [(35.0, 0.2), (50.0, 0.5), (20.0, 0.1)])
def test_rigid_block_slides_at_the_coulomb_acceleration(theta, mu, settings):
    track = slope_track(theta, mu, settings=settings)
    t = 0.01 * np.arange(1, len(track) + 1)
    late = t > 0.2
    a = -2.0 * np.polyfit(t[late], track[late], 2)[0]
    exact = G * (math.sin(math.radians(theta)) - mu * math.cos(math.radians(theta)))
    assert a == pytest.approx(exact, rel=0.02)


@pytest.mark.parametrize(("theta", "mu"), [(20.0, 0.5), (35.0, 0.8)])
def test_rigid_block_sticks_when_tan_theta_is_below_mu(theta, mu):
    """From the first step, with the friction taken at each step's solution
    (LAGGED): it falls 0.5 dhat onto the slope, lands and sticks
    (sticking_drift: mu times its path across the slope plus eps_v t), and
    once landed it creeps less than eps_v t."""
    eps_v, th = 1e-3, math.radians(theta)
    scene = rigid(slope_scene(th, mu, dhat=SimParams().dhat, eps_v=eps_v))
    sim = Simulation(dataclasses.replace(scene, params=SimParams(eps_v=eps_v)), settings=LAGGED)
    along, bound, _ = sticking_drift(sim, th, mu, 80)
    assert np.all(np.abs(along) <= bound), (np.abs(along) / bound).max()
    settled = 20
    t = 0.01 * (len(along) - settled)
    assert np.abs(along[settled:] - along[settled]).max() < eps_v * t


def spinning_disc(omega):
    v, t = disc_mesh(0.1, 3)
    velocity = omega * np.column_stack([-v[:, 1], v[:, 0]])
    body = Body("disc", v, t, Material(E=1e5, density=1000.0), velocity=velocity, kind="rigid")
    return Simulation(Scene(bodies=(body,), params=SimParams()))


def angular_momentum(sim):
    """About the centre of mass, from the vertices' lumped masses and velocities."""
    m, x, v = sim.model.mass, sim.x, sim.v
    r = x - (m[:, None] * x).sum(axis=0) / m.sum()
    u = v - (m[:, None] * v).sum(axis=0) / m.sum()
    return float(np.sum(m * (r[:, 0] * u[:, 1] - r[:, 1] * u[:, 0])))


def test_spinning_rigid_disc_keeps_its_angular_momentum():
    sim = spinning_disc(0.2)
    sim.step()
    first = angular_momentum(sim)
    for _ in range(100):
        sim.step()
    assert angular_momentum(sim) == pytest.approx(first, rel=1e-3)


def rotor_increments(phi, n):
    """n more angle increments of implicit Euler on an exactly rigid rotor
    (x = R(theta) X minimising 1/2 |x - x_n - h v_n|_M^2):
    2 sin phi' = sin(phi + phi'), solved by bisection on (0, phi]."""
    out = [phi]
    for _ in range(n):
        p, lo, hi = out[-1], 0.0, out[-1]
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if 2.0 * math.sin(mid) < math.sin(p + mid) else (lo, mid)
        out.append(0.5 * (lo + hi))
    return np.array(out)


def test_fast_spinning_rigid_disc_damps_as_implicit_euler_on_a_rigid_rotor():
    sim = spinning_disc(5.0)
    rest, angles = sim.model.rest, [0.0]
    for _ in range(100):
        sim.step()
        angles.append(rotation_angle(rest, sim.x))
    phi = np.diff(np.unwrap(angles))
    expected = rotor_increments(phi[1], len(phi) - 2)
    assert phi[-1] < 0.9 * phi[1]  # the damping is there to be matched
    np.testing.assert_allclose(phi[1:], expected, rtol=1e-3)


def tumbling_block(kind, E):
    """A tilted block thrown sideways onto tilted ground: it lands on a corner,
    tips over and slides."""
    v, t = grid_square(SIDE, 2, (0.0, 0.12), angle=0.4)
    mat = Material(E=E, nu=0.3, density=1000.0, mu=0.3)
    body = Body("block", v, t, mat, velocity=np.array([0.5, 0.0]), kind=kind)
    ground = HalfPlane((0.0, 0.0), (math.sin(0.1), math.cos(0.1)), 0.3, "ground")
    sim = Simulation(Scene(bodies=(body,), half_planes=(ground,), params=SimParams()))
    track = []
    for _ in range(100):
        sim.step()
        x = sim.body_positions(0)
        track.append([*x.mean(axis=0), 0.5 * SIDE * rotation_angle(sim.model.rest, x)])
    return np.array(track)


def test_rigid_block_follows_a_very_stiff_deformable_one():
    stiff = tumbling_block("deformable", 1e9)
    rigid_track = tumbling_block("rigid", 1e6)
    assert np.ptp(stiff[:, 1]) > 0.5 * SIDE and np.ptp(stiff[:, 2]) > 0.1 * SIDE  # it falls and turns
    assert np.abs(rigid_track - stiff).max() < 0.01 * SIDE


def assert_clean_run(scene, steps):
    """Every step: no boundary edges crossing, no inverted triangle, every
    rigid body's strain ||A^T A - I||_F below 1e-3; returns the simulation."""
    sim = Simulation(scene)
    m = sim.model
    body_edges = m.edges[~m.is_collider[m.edges[:, 0]]]
    worst, touching = 0.0, 0
    for k in range(steps):
        stats = sim.step()
        touching = max(touching, stats.active_contacts)
        assert max(stats.rigid_strains) < RIGID_STRAIN_LIMIT, f"reported strained at step {k + 1}"
        assert not len(crossing_edge_pairs(sim.x, body_edges)), f"crossing at step {k + 1}"
        assert signed_areas(sim.x, m.elements.tris).min() > 0.0, f"inversion at step {k + 1}"
        A = m.basis.affine(sim.x)
        strain = np.linalg.norm(np.swapaxes(A, 1, 2) @ A - np.eye(2), axis=(1, 2)).max()
        worst = max(worst, strain)
    assert worst < 1e-3
    assert touching > 10  # the shapes landed on each other and the ground
    return sim


def test_rigid_pile_stays_clean():
    sim = assert_clean_run(rigid(pile(8, 4, n_seg=4, n_rings=2, n_boundary=16)), 60)
    assert sim.model.basis.n_rigid == 8


def test_mixed_pile_stays_clean():
    scene = rigid(pile(8, 4, n_seg=4, n_rings=2, n_boundary=16), which={0, 3, 4, 7})
    sim = assert_clean_run(scene, 60)
    assert sim.model.basis.n_rigid == 4 and len(sim.model.elastic_elements.tris)


def crushed_block(stop):
    """A rigid square (side 0.2 m) on the ground under a ceiling collider that
    descends to stop times its side: rigid bodies cannot give way, so the
    orthogonality energy lets the block be squashed."""
    side = 0.2
    v, t = square_mesh(side, 2, (0.0, 0.5 * side + 0.001))
    block = Body("block", v, t, Material(E=1e5, nu=0.4, density=1000.0, mu=0.3), kind="rigid")
    ceiling = _horizontal_ceiling("ceiling", -0.3, 0.3, side + 0.01, stop * side, 0.25)
    ground = HalfPlane((0.0, 0.0), (0.0, 1.0), 0.3, "ground")
    return Scene(bodies=(block,), colliders=(ceiling,), half_planes=(ground,), params=SimParams()), side


def test_a_collider_keyed_into_a_rigid_block_stops_on_it():
    """The ceiling keyed down to 0.9 of the block's side: the step whose ceiling would squash
    the block beyond the strain a rigid body holds is taken again with the ceiling stopped
    where it was (docs/design/10-prescribed-motion.md); the block keeps its shape."""
    scene, side = crushed_block(0.9)
    sim = Simulation(scene)
    with pytest.warns(RuntimeWarning, match="collider 'ceiling' stopped where it was"):
        stats = [sim.step() for _ in range(15)]
    assert all(s.converged and s.rigid_strains[0] < RIGID_STRAIN_LIMIT for s in stats)
    height = np.ptp(sim.body_positions(0)[:, 1])  # from the positions
    assert abs(height / side - 1.0) < RIGID_STRAIN_LIMIT
    ceiling = sim.collider_positions(0)[:, 1]
    assert stats[-1].stopped_colliders == ("ceiling",) and np.ptp(ceiling) == 0.0
    assert 0.0 < ceiling[0] - sim.body_positions(0)[:, 1].max() < scene.params.dhat  # on the block
    # its keys went on down to 0.9 of the side: the lag is the rest of that way
    assert stats[-1].collider_lag == pytest.approx(ceiling[0] - 0.9 * side, rel=1e-9)


def test_a_rigid_block_crushed_by_a_driven_collider_is_reported_strained():
    """With the ceiling driven on to its keys (not stopped: PrescribedSettings.stop_pressed),
    the orthogonality energy gives way and the block is squashed: each step reports its
    strain, and the command line names it."""
    scene, side = crushed_block(0.9)
    sim = Simulation(scene, settings=SolverSettings(prescribed=PrescribedSettings(stop_pressed=False)))
    stats = [sim.step() for _ in range(15)]
    strains = [s.rigid_strains[0] for s in stats]
    squash = 1.0 - np.ptp(sim.body_positions(0)[:, 1]) / side  # its height, from the positions
    assert squash > 0.09  # the ceiling stops at 0.9 of its side
    assert strains[-1] == pytest.approx(squash, abs=1e-3)
    assert strains[0] < RIGID_STRAIN_LIMIT  # before the ceiling reaches it
    # the command line names the body, the steps and the largest strain
    first = next(s.step for s in stats if s.rigid_strains[0] > RIGID_STRAIN_LIMIT)
    (line,) = cli.rigid_strain_lines(scene, stats)
    assert "'block'" in line and f"steps {first}-15" in line and f"{100 * max(strains):.2g} %" in line, line


def test_rigid_strains_are_zero_for_deformable_bodies_and_absent_without_rigid_ones():
    scene = pile(8, 4, n_seg=4, n_rings=2, n_boundary=16)
    assert Simulation(scene).step().rigid_strains == ()
    stats = Simulation(rigid(scene, which={0, 3})).step()
    assert len(stats.rigid_strains) == 8
    assert all(s == 0.0 for i, s in enumerate(stats.rigid_strains) if i not in (0, 3))
    assert 0.0 < stats.rigid_strains[0] < RIGID_STRAIN_LIMIT


def hinged_box(kind):
    """A box hinged at its top-left corner to the world (a pin link), thrown
    sideways: it swings down; returns its vertices after 0.5 s."""
    from solver.links import anchor_at
    from solver.scene import Link, LinkAnchor

    v, t = grid_square(SIDE, 2, (0.5 * SIDE, -0.5 * SIDE))
    mat = Material(E=1e8, density=1000.0)
    body = Body("box", v, t, mat, velocity=np.array([1.0, 0.0]), kind=kind)
    hinge = Link("hinge", "pin", anchor_at(body, (0.0, 0.0)), LinkAnchor(position=(0.0, 0.0)))
    sim = Simulation(Scene(bodies=(body,), links=(hinge,), params=SimParams()))
    for _ in range(50):
        assert sim.step().converged
    return sim.body_positions(0)


def test_links_act_on_rigid_bodies_through_the_basis():
    rigid_x, stiff_x = hinged_box("rigid"), hinged_box("deformable")
    assert rotation_angle(grid_square(SIDE, 2, (0.5 * SIDE, -0.5 * SIDE))[0], rigid_x) < -1.0  # it swung
    assert np.abs(rigid_x - stiff_x).max() < 0.01 * SIDE


def test_a_rigid_scene_continues_bit_for_bit_from_a_checkpoint():
    scene = rigid(pile(4, 2, n_seg=2, n_rings=1, n_boundary=8), which={0, 3})
    sim = Simulation(scene)
    for _ in range(15):
        sim.step()
    again = Simulation.from_checkpoint(scene, sim.checkpoint())
    for _ in range(5):
        sim.step()
        again.step()
    np.testing.assert_array_equal(again.x, sim.x)
    np.testing.assert_array_equal(again.v, sim.v)


def next_potential(sim):
    """(ip, cs): the incremental potential of sim's next step and a contact
    set of its start (captured from Newton's first direction)."""
    newton = type(sim._newton)
    seen = []
    direction = newton._direction

    def capture(self, ip, x, cs, *rest):
        seen.append((ip, cs))
        return direction(self, ip, x, cs, *rest)

    newton._direction = capture
    try:
        sim.step()
    finally:
        newton._direction = direction
    return seen[0]


@pytest.mark.parametrize("omega", [2.0, 40.0])
def test_a_turn_cut_short_ends_on_a_rotation_not_on_its_chord(omega):
    """Newton's step from the start of a spinning disc's step turns it by
    omega dt; cut at half its length (as CCD would), its chord's end is
    shrunk, and for a fast turn (0.33 rad) the step cut in q with its turn
    made exact is taken instead: it ends on a rotation, turned by
    atan(tan(turn) / 2).  A slow turn (0.02 rad) keeps its chord."""
    sim = spinning_disc(omega)
    sim.step()  # a velocity to turn with
    ip, cs = next_potential(sim)
    x = ip.consts.x_prev  # on a rotation, the whole turn to make
    majorize = tuple(np.zeros(len(fs), int) for fs in ip.friction_sets)
    d = sim._newton._direction(ip, x, cs, np.zeros(2 * len(x), bool), majorize, Mode.EXACT)
    dx, alpha, _, _, _ = sim._newton._shortened_turn(ip, x, d.g, d, 0.5, cs, None)
    if omega < 10.0:
        assert dx is d.dx and alpha == 0.5
        return

    def strain(y):
        return float(np.abs(ortho.strain(ip.basis.affine(y))).max())

    def turn(step):
        return rotation_angle(sim.model.rest, x + step) - rotation_angle(sim.model.rest, x)

    assert strain(x + 0.5 * d.dx) > 1e-2  # the chord's end: shrunk by about (1 - cos 0.33) / 4
    assert alpha == 1.0  # nothing to collide with
    assert strain(x + dx) < 1e-4 * strain(x + 0.5 * d.dx)
    assert float(np.dot(d.g, dx.ravel())) < 0.0
    assert turn(dx) == pytest.approx(math.atan(0.5 * math.tan(turn(d.dx))), rel=1e-3)
