"""A collider the bodies stop (docs/design/10-prescribed-motion.md): a step that moves a
collider into rigid bodies that cannot make room (touching it, or touching those that do), and
fails with it pressed into them or squashes one past the limit, is taken again with that
collider stopped where it was at the step's start; it stays there, fixed, until its straight
move to its keys is clear and ends farther than dhat from the bodies, then snaps back onto them.
The bake goes on instead of failing.

The first scenes: four rigid shapes in a box, the ceiling slammed down onto them at 4 m/s (the
step that fails without the stop is step 6: test_collider_lag.py), then keyed back up.  Every
expected position is computed here from the keys, every invariant from the geometry.  The last:
a lid on a rigid plate on rigid pebbles, and a lid on a rigid cube (the second review's cases)."""

import warnings
from dataclasses import replace

import numpy as np
import pytest

from solver import Simulation
from solver.examples import pile
from solver.io.checkpoint import Checkpoint
from solver.settings import SolverSettings
from solver.sleep import SleepSettings

DT = 0.01
DOWN, UP = 0.0717, 0.25  # the keys: the ceiling's way down ends at DOWN, it is back up at UP [s]


def _scene():
    """Rigid shapes under a ceiling keyed down at 4 m/s, held, then keyed back up."""
    scene = pile(n_shapes=4, n_columns=2, ceiling_speed=4.0)
    scene = replace(scene, bodies=tuple(replace(b, kind="rigid") for b in scene.bodies))
    (ceiling,) = scene.colliders
    top, bottom = ceiling.positions[0], ceiling.positions[-1]
    keyed = replace(
        ceiling,
        times=np.array([0.0, DOWN, 0.15, UP]),
        positions=np.stack([top, bottom, bottom, top]),
    )
    return replace(scene, colliders=(keyed,))


def _keyed_height(scene, t):
    c = scene.colliders[0]
    return float(np.interp(t, c.times, c.positions[:, 0, 1]))


def _run(sim, n):
    """n steps: per step (stats, the ceiling's vertices, the bodies' vertices); the messages
    of the RuntimeWarnings they gave."""
    rows = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RuntimeWarning)
        for _ in range(n):
            st = sim.step()
            rows.append((st, sim.collider_positions(0), sim.x[~sim.model.is_collider]))
    return rows, [str(w.message) for w in caught]


def test_a_collider_the_bodies_stop_stays_until_its_keys_move_clear():
    scene = _scene()
    assert scene.params.strict  # a step that does not converge would raise
    sim = Simulation(scene)
    rows, messages = _run(sim, 30)
    stopped = [st.step for st, _, _ in rows if st.stopped_colliders]
    first, last = stopped[0], stopped[-1]
    assert stopped == list(range(first, last + 1)), stopped
    assert first == 6  # where the step fails without the stop
    (warned,) = [w for w in messages if "stopped" in w]
    assert warned.startswith(f"step {first} ") and "collider 'ceiling' stopped where it was" in warned, warned
    # where it stopped: its keyed height at the start of that step (it had kept to its keys)
    held = _keyed_height(scene, (first - 1) * DT)
    np.testing.assert_array_equal(rows[first - 1][1][:, 1], held)
    for st, ceiling, bodies in rows:
        assert st.converged and st.min_distance > 0.0
        height = ceiling[:, 1]
        if st.stopped_colliders:
            assert st.stopped_colliders == ("ceiling",)
            assert np.ptp(height) == 0.0  # moved on, if at all, by a translation
            # where it stopped, or moved on (with its keys, back towards them) to 2 dhat at most
            # from the bodies, none crossed
            assert bodies[:, 1].max() < height[0] <= max(held, bodies[:, 1].max() + 2 * scene.params.dhat)
            keyed = _keyed_height(scene, st.time)
            assert st.collider_lag == pytest.approx(height[0] - keyed, rel=1e-9, abs=1e-12)
        else:
            assert st.collider_lag < 1e-12  # on its keys
            np.testing.assert_allclose(height, _keyed_height(scene, st.time), atol=1e-12)
            assert bodies[:, 1].max() < height.min()
    # released on the way back up, once its move to its keys clears the bodies: the keyed
    # height at the end of that step is above the bodies' top at its start
    released = last + 1
    assert 0.15 < released * DT < UP
    assert _keyed_height(scene, released * DT) > rows[last - 1][2][:, 1].max()


def test_a_checkpoint_taken_while_a_collider_is_stopped_continues_bit_for_bit():
    scene = _scene()
    sim = Simulation(scene)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for _ in range(8):
            sim.step()
        assert sim.step().stopped_colliders == ("ceiling",)
        text = sim.checkpoint().to_text()
        again = Simulation.from_checkpoint(scene, Checkpoint.from_text(text))
        for _ in range(14):  # on past where the keys rise above it
            a, b = sim.step(), again.step()
            assert a.stopped_colliders == b.stopped_colliders
            np.testing.assert_array_equal(sim.x, again.x)
    assert a.stopped_colliders == ()


def test_bodies_under_a_stopped_collider_fall_asleep():
    """A stopped collider does not move: the bodies it rests on sleep (sleeping on), though
    its keys go on down (held at the bottom here)."""
    scene = _scene()
    c = scene.colliders[0]
    c = replace(c, times=c.times[:3], positions=c.positions[:3])  # down, then held
    sleeping = SolverSettings(sleep=SleepSettings(enabled=True))
    sim = Simulation(replace(scene, colliders=(c,)), settings=sleeping)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for _ in range(60):
            st = sim.step()
    assert st.stopped_colliders == ("ceiling",) and st.collider_lag > 0.05
    assert st.sleep.sleeping == len(scene.bodies) and st.newton_iters == 0


def test_a_collider_is_not_stopped_for_a_strain_or_a_failure_it_did_not_cause():
    """A paddle keyed into a deformable box pushes it along (it is driven while the box gets
    moving), while 2 m away a rigid bar is pulled apart by its own pins (strained beyond the
    limit from its first step on); and a ceiling keyed into deformable bodies faster than they
    give way (stress scene 123, whose steps fail): neither collider is stopped."""
    from solver import Body, Collider, HalfPlane, Material, Scene, SimParams
    from solver.basis import RIGID_STRAIN_LIMIT
    from solver.examples import square_mesh
    from solver.scene import Pin
    from tests.stress.generate import make_scene

    v, t = square_mesh(0.1, 2, center=(0.0, 0.052))
    box = Body("box", v, t, Material(E=1e5, mu=0.2))
    pv = np.array([[-0.06, 0.0], [-0.06, 0.12]])
    paddle = Collider(
        "paddle", pv, np.array([[0, 1]]), np.array([0.0, 1.0]), np.stack([pv, pv + np.array([0.5, 0.0])])
    )
    bv, bt = square_mesh(0.1, 2, center=(2.0, 0.5))
    left, right = np.flatnonzero(bv[:, 0] < 1.96), np.flatnonzero(bv[:, 0] > 2.04)

    def pin(idx, dx):
        return Pin(idx, np.array([0.0, 0.05]), np.stack([bv[idx], bv[idx] + [dx, 0.0]]))

    bar = Body("bar", bv, bt, Material(E=1e6), kind="rigid", pins=(pin(left, -0.05), pin(right, 0.05)))
    params = SimParams(strict=False)
    sim = Simulation(Scene(bodies=(box, bar), colliders=(paddle,), half_planes=(HalfPlane(),), params=params))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        stats = [sim.step() for _ in range(40)]
    assert max(stats[-1].rigid_strains) > RIGID_STRAIN_LIMIT  # the bar, pulled apart
    assert all(st.stopped_colliders == () and st.collider_lag < 1e-9 for st in stats[5:])
    pushed = sim.body_positions(0)[:, 0].min() - sim.collider_positions(0)[:, 0].max()
    assert 0.0 < pushed < params.dhat  # the box in front of the paddle, on its keys at 0.14 m
    crushed = make_scene(123).scene
    crushed = replace(crushed, params=replace(crushed.params, strict=False))
    assert all(b.kind == "deformable" for b in crushed.bodies)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        first = Simulation(crushed).step()
    assert not first.converged and first.animated_collider_distance < 0.0  # pressed, failed
    assert first.stopped_colliders == ()


def _lid_scene(bodies, drop, t_down, gap=0.007, **params):
    """bodies on the ground under a one-edge lid gap [m] above the highest, keyed down by
    drop [m] over t_down [s], then held."""
    from solver import Collider, HalfPlane, Scene, SimParams

    top = max(float(b.vertices[:, 1].max()) for b in bodies)
    lv = np.array([[-0.6, top + gap], [0.6, top + gap]])
    lid = Collider(
        "lid",
        lv,
        np.array([[0, 1]]),
        np.array([0.0, t_down, 5.0]),
        np.stack([lv, lv - [0, drop], lv - [0, drop]]),
    )
    p = SimParams(dt=DT, dhat=0.005, kappa=1e5, eps_v=1e-3, newton_tol=1e-2, **params)
    return Scene(bodies=tuple(bodies), colliders=(lid,), half_planes=(HalfPlane(),), params=p)


def _plate_on_pebbles(t_down, plate_kind="rigid"):
    """A wide plate (rigid, or deformable and stiff: E = 1e7) resting 7 mm above two 3 cm rigid
    pebbles; the lid keyed 6 cm down onto the plate: the lid touches the plate only, the
    pebbles under it take the squeeze."""
    from solver import Body, Material
    from solver.examples import square_mesh

    mat = Material(E=1e5, nu=0.4, density=1000.0, mu=0.3)
    pebbles = [
        Body(f"pebble{i}", *square_mesh(0.03, 2, center=(x, 0.017)), mat, kind="rigid")
        for i, x in enumerate((-0.15, 0.15))
    ]
    pv, pt = square_mesh(1.0, 4, center=(0.0, 0.0))
    plate_mat = replace(mat, E=1e7) if plate_kind == "deformable" else mat
    plate = Body("plate", pv * [0.5, 0.1] + [0.0, 0.089], pt, plate_mat, kind=plate_kind)
    return _lid_scene([*pebbles, plate], 0.06, t_down)


def _strains(scene, n, stop=True, sim=None):
    """Per step (stopped colliders, the largest rigid strain) of n steps (stop: the stop on)."""
    from solver.prescribed import PrescribedSettings

    settings = SolverSettings(prescribed=PrescribedSettings(stop_pressed=stop))
    sim = sim or Simulation(scene, settings=settings)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return [(st.stopped_colliders, max(st.rigid_strains)) for st in (sim.step() for _ in range(n))]


@pytest.mark.parametrize("t_down, plate", [(0.1, "rigid"), (0.3, "rigid"), (0.1, "deformable")])
def test_a_lid_on_a_plate_stops_before_the_rigid_pebbles_under_it_are_crushed(t_down, plate):
    """The lid presses the pebbles through the plate: it touches no crushed body itself; at
    0.3 s it snaps onto its keys every step (2 mm a step, never driven by its penalty); a
    stiff deformable plate does not give way fast enough either."""
    from solver.basis import RIGID_STRAIN_LIMIT

    scene = _plate_on_pebbles(t_down, plate)
    unstopped = _strains(scene, 20, stop=False)
    assert max(s for _, s in unstopped) > 5 * RIGID_STRAIN_LIMIT  # what the stop prevents
    rows = _strains(scene, 20)
    assert max(s for _, s in rows) < RIGID_STRAIN_LIMIT
    first = next(k for k, (stopped, _) in enumerate(rows) if stopped)
    assert all(stopped == ("lid",) for stopped, _ in rows[first:])  # held: its keys stay down


def _cube_under_lid(speed, gap=0.006, **params):
    from solver import Body, Material
    from solver.examples import square_mesh

    v, t = square_mesh(0.05, 2, center=(0.0, 0.027))
    cube = Body("cube", v, t, Material(E=1e5, nu=0.4, density=1000.0, mu=0.3), kind="rigid")
    drop = gap + 0.03  # its keys end 3 cm into the cube
    return _lid_scene([cube], drop, drop / speed, gap=gap, **params)


def test_a_stopped_lid_closes_the_gap_its_stop_left_down_to_dhat():
    """A lid keyed at 4 m/s (4 cm a step) ends step 1 2.7 cm above a rigid cube and would
    crush it in step 2: stopped where it was, it moves on down its keys until just outside
    dhat above the cube (its top at the step's start), not lower: it presses nothing."""
    from solver.basis import RIGID_STRAIN_LIMIT
    from solver.prescribed import STOPPED_CLEARANCE, PrescribedSettings

    scene = _cube_under_lid(4.0, gap=0.07)
    dhat = scene.params.dhat
    sim = Simulation(scene)
    top = [float(sim.body_positions(0)[:, 1].max())]
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for _ in range(8):
            st = sim.step()
            rows.append((st, float(sim.collider_positions(0)[:, 1].min())))
            top.append(float(sim.body_positions(0)[:, 1].max()))
    assert rows[0][1] - top[1] > 5 * dhat  # where step 1 left it
    assert [st.stopped_colliders for st, _ in rows] == [()] + [("lid",)] * 7
    # moved on in the stop step, to outside dhat (where the barrier is zero)
    assert rows[1][1] - top[1] == pytest.approx(STOPPED_CLEARANCE * dhat, rel=1e-3)
    assert rows[1][1] - top[1] > dhat
    for k, (st, lid) in enumerate(rows[1:], start=2):
        assert top[k] < lid <= top[k - 1] + PrescribedSettings().stopped_gap * dhat
        assert max(st.rigid_strains) < RIGID_STRAIN_LIMIT


@pytest.mark.parametrize("speed", [6.0, 8.0])
def test_a_split_of_the_step_that_stops_a_lid_keeps_it_stopped(speed):
    """The lid of the test above (no gravity), and a small rigid block flying left past its end
    at a height between where it stood and where it moves on to: the motion check splits the
    step that stops the lid.  Every part keeps the lid stopped (a part's own target, 7 mm above
    the cube, was clear: released there, the lid crushed the cube by 16 %)."""
    from solver import Body
    from solver.basis import RIGID_STRAIN_LIMIT
    from solver.examples import square_mesh

    scene = _cube_under_lid(4.0, gap=0.07, strict=False, gravity=(0.0, 0.0))
    mat = scene.bodies[0].material
    bv, bt = square_mesh(0.01, 1, center=(0.6 + 0.03 + speed * DT, 0.068))
    block = Body("block", bv, bt, mat, kind="rigid", velocity=np.array([-speed, 0.0]))
    sim = Simulation(replace(scene, bodies=(*scene.bodies, block)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        rows = [sim.step() for _ in range(3)]
    assert rows[1].motion_splits > 0  # the case: a split step
    for st in rows:
        assert st.converged and st.min_distance > 0.0
        assert max(st.rigid_strains) < RIGID_STRAIN_LIMIT
    assert [st.stopped_colliders for st in rows] == [(), ("lid",), ("lid",)]


def _cube_between_walls(keys, times, **params):
    """A 5 cm rigid cube on the ground held between two walls, under a one-edge lid keyed to
    keys (k, 2, 2) at times (k,)."""
    from solver import Body, Collider, HalfPlane, Material, Scene, SimParams
    from solver.examples import square_mesh

    v, t = square_mesh(0.05, 2, center=(0.0, 0.027))
    cube = Body("cube", v, t, Material(E=1e5, nu=0.4, density=1000.0, mu=0.3), kind="rigid")
    lid = Collider("lid", keys[0], np.array([[0, 1]]), np.asarray(times, float), keys)
    walls = (HalfPlane(), HalfPlane((0.03, 0.0), (-1.0, 0.0)), HalfPlane((-0.03, 0.0), (1.0, 0.0)))
    p = SimParams(dt=DT, dhat=0.005, kappa=1e5, eps_v=1e-3, newton_tol=1e-2, **params)
    return Scene(bodies=(cube,), colliders=(lid,), half_planes=walls, params=p)


def test_a_stopped_lid_follows_its_keys_sideways_and_returns_onto_them_past_the_cube():
    """A lid keyed 9 cm down in 0.02 s onto a rigid cube held between two walls (stopped, and
    moved on to just outside dhat above it), then slid 0.6 m sideways at that height: it
    slides along with its keys, as far above them as where it stopped, and once past the cube
    its straight move onto them is clear: it returns."""
    from solver.basis import RIGID_STRAIN_LIMIT

    up = np.array([[-0.1, 0.122], [0.1, 0.122]])
    down = up - np.array([0.0, 0.09])
    side = down + np.array([0.6, 0.0])
    keys = np.stack([up, down, down, side, side])
    sim = Simulation(_cube_between_walls(keys, [0.0, 0.02, 0.1, 0.3, 5.0]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        rows = [sim.step() for _ in range(35)]
    stopped = [k for k, st in enumerate(rows) if st.stopped_colliders]
    first, last = stopped[0], stopped[-1]
    assert stopped == list(range(first, last + 1)) and rows[first].time <= 0.02
    held = [st for st in rows[first : last + 1] if st.time > 0.02]  # its keys down, then sliding
    for st in held:  # as far from its keys as where they went down, not farther
        assert st.collider_lag == pytest.approx(held[0].collider_lag, abs=1e-6)
    assert 0.1 < rows[last + 1].time < 0.3  # back onto its keys while they slide
    for st in rows:
        assert st.converged and st.min_distance > 0.0 and max(st.rigid_strains) < RIGID_STRAIN_LIMIT
    assert rows[-1].collider_lag < 1e-12
    np.testing.assert_allclose(sim.collider_positions(0), keys[-1], atol=1e-12)


def test_a_lid_stopped_pressing_a_cube_stays_while_its_keys_press_on():
    """A lid keyed slowly (1 mm a step) into a rigid cube held between walls stops within dhat
    of it, pressing it; its keys go on down for 2 s.  It stays where it stopped: a collider
    within dhat of a body does not follow its keys (following them within dhat, 0.1 % closer
    a step, it pressed the cube past the limit by step 168: the third review)."""
    from solver.basis import RIGID_STRAIN_LIMIT

    up = np.array([[-0.1, 0.058], [0.1, 0.058]])
    sim = Simulation(_cube_between_walls(np.stack([up, up - [0.0, 5.0]]), [0.0, 50.0]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        rows = [(sim.step(), sim.collider_positions(0).copy()) for _ in range(200)]
    first = next(k for k, (st, _) in enumerate(rows) if st.stopped_colliders)
    for st, lid in rows[first:]:
        assert st.stopped_colliders == ("lid",)
        np.testing.assert_array_equal(lid, rows[first][1])
        assert max(st.rigid_strains) < RIGID_STRAIN_LIMIT


def test_a_lid_stopped_pressing_a_cube_slides_off_it_with_its_keys():
    """The lid of the test above, keyed 3 cm down over 0.3 s (stopped within dhat of the
    cube, pressing it), then slid 0.6 m sideways at that height: it moves out of dhat and
    slides along with its keys, and once past the cube returns onto them (it used to stay on
    the cube for good, 0.6 m from its keys)."""
    from solver.basis import RIGID_STRAIN_LIMIT

    up = np.array([[-0.1, 0.058], [0.1, 0.058]])
    down = up - np.array([0.0, 0.03])
    side = down + np.array([0.6, 0.0])
    keys = np.stack([up, down, down, side, side])
    scene = _cube_between_walls(keys, [0.0, 0.3, 0.4, 0.6, 5.0])
    dhat = scene.params.dhat
    sim = Simulation(scene)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        rows = []
        for _ in range(70):
            st = sim.step()
            lid, cube = sim.collider_positions(0), sim.body_positions(0)
            rows.append((st, float(lid[:, 1].min() - cube[:, 1].max())))
    stopped = [k for k, (st, _) in enumerate(rows) if st.stopped_colliders]
    first, last = stopped[0], stopped[-1]
    assert stopped == list(range(first, last + 1))
    assert rows[first][1] < dhat and rows[39][1] < dhat  # pressing the cube until the keys slide
    assert last + 1 < len(rows) and 0.4 < rows[last + 1][0].time < 0.6  # back onto its keys as they slide
    for st, _ in rows:
        assert st.converged and st.min_distance > 0.0 and max(st.rigid_strains) < RIGID_STRAIN_LIMIT
    np.testing.assert_allclose(sim.collider_positions(0), keys[-1], atol=1e-12)


def test_a_platform_stopped_under_a_cube_glides_under_it_without_giving_way():
    """A wide platform keyed up 1 mm a step under a rigid cube held between walls under a
    ceiling stops pressing it up; its keys then slide it sideways at that height, the cube
    resting on it.  It glides along at the height where it stopped, the cube with it: it does
    not give way to the cube's weight (moved out of dhat to follow, it sank 0.58 mm a step:
    the fourth review)."""
    from solver import Body, Collider, HalfPlane, Material, Scene, SimParams
    from solver.basis import RIGID_STRAIN_LIMIT
    from solver.examples import square_mesh

    v, t = square_mesh(0.05, 2, center=(0.0, 0.068))
    cube = Body("cube", v, t, Material(E=1e5, nu=0.4, density=1000.0, mu=0.3), kind="rigid")
    low = np.array([[-1.5, 0.035], [1.5, 0.035]])
    high = low + np.array([0.0, 0.03])
    keys = np.stack([low, high, high, high + np.array([1.0, 0.0]), high + np.array([1.0, 0.0])])
    platform = Collider("platform", low, np.array([[0, 1]]), np.array([0.0, 0.3, 0.4, 1.4, 5.0]), keys)
    walls = (
        HalfPlane((0.0, 0.1), (0.0, -1.0)),
        HalfPlane((0.03, 0.0), (-1.0, 0.0)),
        HalfPlane((-0.03, 0.0), (1.0, 0.0)),
    )
    p = SimParams(dt=DT, dhat=0.005, kappa=1e5, eps_v=1e-3, newton_tol=1e-2)
    sim = Simulation(Scene(bodies=(cube,), colliders=(platform,), half_planes=walls, params=p))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        rows = [
            (sim.step(), sim.collider_positions(0).copy(), sim.body_positions(0).copy()) for _ in range(80)
        ]
    (st, at_stop, cube_at_stop), slid = rows[39], rows[40:]
    assert st.stopped_colliders == ("platform",) and cube_at_stop[:, 1].min() - at_stop[0, 1] < p.dhat
    for st, where, body in slid:
        assert st.stopped_colliders == ("platform",) and st.converged and st.min_distance > 0.0
        assert max(st.rigid_strains) < RIGID_STRAIN_LIMIT
        np.testing.assert_allclose(where[:, 1], at_stop[:, 1], atol=1e-9)  # its height: where it stopped
        np.testing.assert_allclose(body[:, 1], cube_at_stop[:, 1], atol=1e-6)
    assert slid[-1][1][0, 0] - at_stop[0, 0] == pytest.approx(0.4, abs=1e-9)  # along with its keys


def test_a_gliding_lid_lifted_far_crosses_nothing_beyond_its_keys_way():
    """A hook-shaped lid stopped over a finely meshed rigid cube (9 top vertices 0.5 dhat
    under its top edge, its tip 0.95 dhat beside the cube's side), a second cube 3 dhat above
    it; its keys' last step pushes it left into the side and a hair down, its keys far up to
    the right.  Gliding lifts it along the sum of the pairs' directions (mostly the top's), far
    from the keys' own short way: that whole move is checked against everything it passes
    (checked only near the keys' way, it went 32 cm up through the upper cube: the fifth
    review).  Audited against every pair: no crossing, nothing nearer than it was or than
    dhat."""
    from solver import Body, Collider, HalfPlane, Material, Scene, SimParams, ccd
    from solver.broad_phase import Groups
    from solver.contacts import candidate_stencils
    from solver.distance import case_and_distance_sq
    from solver.examples import square_mesh
    from solver.prescribed import MovingOn

    dhat, top = 0.005, 0.052
    mat = Material(E=1e5, nu=0.4, density=1000.0, mu=0.3)
    below = Body("below", *square_mesh(0.05, 8, center=(0.0, 0.027)), mat, kind="rigid")
    above = Body("above", *square_mesh(0.04, 2, center=(-0.06, top + 3.5 * dhat + 0.02)), mat, kind="rigid")
    hook = np.array(
        [
            (-0.1, top + 0.5 * dhat),
            (0.045, top + 0.5 * dhat),
            (0.045, 0.03325),
            (0.025 + 0.95 * dhat, 0.03325),
        ]
    )
    lid = Collider(
        "lid", hook, np.array([[0, 1], [1, 2], [2, 3]]), np.array([0.0, 5.0]), np.stack([hook, hook])
    )
    p = SimParams(dt=DT, dhat=dhat, kappa=1e5, eps_v=1e-3, newton_tol=1e-2)
    sim = Simulation(Scene(bodies=(below, above), colliders=(lid,), half_planes=(HalfPlane(),), params=p))
    m, motion, x = sim.model, sim._prescribed, sim.x.copy()
    v = m.kin_groups[0].vertices
    target = x.copy()
    target[v] += [0.15, 0.45]
    keys_before = target.copy()
    keys_before[v] -= np.array([-0.8, -0.05]) * dhat
    assert motion.blocked_vertices(x, target - x)[v].any()  # its straight way: through the upper cube
    y = motion.move_on(x, target, 0, MovingOn(keys_before, 0.5))
    assert np.abs(y[v] - x[v]).max() > 0.5 * dhat  # it glided, lifted well past its keys' way
    moves = np.zeros(m.n, bool)
    moves[v] = True
    st = candidate_stencils(m, x, y, 1.0, groups=Groups.moving(moves[m.points], moves[m.edges].any(axis=1)))
    assert ccd.point_edge_step(x[st], (y - x)[st], eta=1e-6).min() == 1.0
    before, after = (np.sqrt(case_and_distance_sq(z[st])[1]) for z in (x, y))
    assert np.all(after >= np.minimum(before, dhat) * (1.0 - 1e-9))


def test_a_hinged_lid_stopped_on_a_jammed_cube_keeps_its_length():
    """A lid hinged at its left end, keyed to turn 30 degrees down in 0.1 s onto a rigid cube
    held between two walls: stopped, it does not move on part of the way to its keys (that
    would shrink it: a turn is no straight move), so it keeps its length."""
    from solver import Body, Collider, HalfPlane, Material, Scene, SimParams
    from solver.basis import RIGID_STRAIN_LIMIT
    from solver.examples import square_mesh

    v, t = square_mesh(0.05, 2, center=(0.3, 0.027))
    cube = Body("cube", v, t, Material(E=1e5, nu=0.4, density=1000.0, mu=0.3), kind="rigid")
    turn = np.radians(np.linspace(0.0, -30.0, 11))
    keys = np.stack([[[0.0, 0.1], [0.5 * np.cos(a), 0.1 + 0.5 * np.sin(a)]] for a in turn])
    times = np.append(np.linspace(0.0, 0.1, 11), 5.0)
    lid = Collider("lid", keys[0], np.array([[0, 1]]), times, np.concatenate([keys, keys[-1:]]))
    walls = (HalfPlane(), HalfPlane((0.33, 0.0), (-1.0, 0.0)), HalfPlane((0.27, 0.0), (1.0, 0.0)))
    p = SimParams(dt=DT, dhat=0.005, kappa=1e5, eps_v=1e-3, newton_tol=1e-2)
    sim = Simulation(Scene(bodies=(cube,), colliders=(lid,), half_planes=walls, params=p))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        rows = [(sim.step(), sim.collider_positions(0)) for _ in range(12)]
    assert rows[-1][0].stopped_colliders == ("lid",)
    for st, (a, b) in rows:
        assert np.hypot(*(b - a)) == pytest.approx(0.5, abs=1e-12)
        assert max(st.rigid_strains) < RIGID_STRAIN_LIMIT


def test_a_body_already_past_the_limit_stops_the_lid_that_squeezes_it_further():
    """The stop off, the lid squeezes the cube past the limit; from a checkpoint of that step,
    with the stop on, the lid driven on into the cube is stopped: the strain grows no more."""
    from solver.basis import RIGID_STRAIN_LIMIT
    from solver.prescribed import PrescribedSettings

    scene = _cube_under_lid(0.45, strict=False)
    off = Simulation(scene, settings=SolverSettings(prescribed=PrescribedSettings(stop_pressed=False)))
    strain = 0.0
    while strain <= RIGID_STRAIN_LIMIT:
        ((_, strain),) = _strains(scene, 1, sim=off)
    past = off.checkpoint()
    assert max(s for _, s in _strains(scene, 5, sim=off)) > 2 * strain  # squashed on
    rows = _strains(scene, 5, sim=Simulation.from_checkpoint(scene, past))
    assert rows[0][0] == ("lid",)
    assert max(s for _, s in rows) < strain * 1.001  # (it settles under the stopped lid)


def test_a_step_that_fails_and_crushes_a_rigid_body_is_taken_again_with_the_lid_stopped():
    """With 10 Newton iterations a step, the step the lid is driven into the cube fails while
    the penalty squeezes the cube (strict: it raised); its collider is stopped and it passes."""
    from solver.basis import RIGID_STRAIN_LIMIT

    scene = _cube_under_lid(0.8, max_newton_iters=10)
    assert scene.params.strict
    rows = _strains(scene, 6)
    assert rows[0][0] == ("lid",) and max(s for _, s in rows) < RIGID_STRAIN_LIMIT


def test_a_paddle_is_not_stopped_by_a_body_its_own_pins_strain():
    """A paddle pushes a rigid box along a rigid bar whose pins pulled it past the limit and
    hold it there: the bar's strain rises by ~1e-7 a step under the moving box, which the
    paddle reaches through the box; it does not stop the paddle (the second review's case)."""
    from solver import Body, Collider, HalfPlane, Material, Scene, SimParams
    from solver.basis import RIGID_STRAIN_LIMIT
    from solver.examples import square_mesh
    from solver.scene import Pin

    mat = Material(E=1e5, nu=0.4, density=1000.0, mu=0.3)
    bv, bt = square_mesh(0.1, 4, center=(0.0, 0.0))
    bv = bv * [6.0, 0.5] + [0.0, 0.0251]  # a bar 0.6 x 0.05 on the ground
    left, right = np.flatnonzero(bv[:, 0] < -0.29), np.flatnonzero(bv[:, 0] > 0.29)

    def pin(idx, dx):  # pulled apart by dx over 0.1 s, then held
        return Pin(idx, np.array([0.0, 0.1]), np.stack([bv[idx], bv[idx] + [dx, 0.0]]))

    bar = Body("bar", bv, bt, mat, kind="rigid", pins=(pin(left, -0.02), pin(right, 0.02)))
    box = Body("box", *square_mesh(0.05, 2, center=(-0.15, 0.1061)), mat, kind="rigid")
    pv = np.array([[-0.182, 0.062], [-0.182, 0.13]])
    paddle = Collider(
        "paddle", pv, np.array([[0, 1]]), np.array([0.2, 1.2]), np.stack([pv, pv + np.array([0.3, 0.0])])
    )
    p = SimParams(dt=DT, dhat=0.005, kappa=1e5, eps_v=1e-3, newton_tol=1e-2, strict=False)
    sim = Simulation(Scene(bodies=(bar, box), colliders=(paddle,), half_planes=(HalfPlane(),), params=p))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        stats = [sim.step() for _ in range(60)]
    assert stats[-1].rigid_strains[0] > RIGID_STRAIN_LIMIT  # the bar, held pulled apart
    assert all(st.stopped_colliders == () and st.collider_lag < 1e-9 for st in stats)
    assert sim.body_positions(1)[:, 0].min() > -0.175 + 0.09  # pushed along: the paddle's keys
