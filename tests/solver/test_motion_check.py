"""The motion check (solver/motion_check.py, docs/design/14-step-motion-check.md):
every step's straight motion, from its start to its end, is free of
collisions, also for fast bodies meeting the ends of thin obstacles, corners
and thin walls at many angles and speeds.

The oracle is independent of the code under test: edges crossing at sampled
times of each step's straight motion (invariants.sampled_motion_crossings),
sampled so finely that no vertex moves more than a quarter of the wall's
thickness between samples; and a side test: a body on the far side of a
wall must have gone around its end."""

import dataclasses
import warnings

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from invariants import boundary_edges, grid_square, point_segment_distance, sampled_motion_crossings
from test_ccd import contact_times

from solver import Body, Collider, Material, Scene, SimParams, Simulation, ccd
from solver.motion_check import CrossingWatch, MotionCheckSettings
from solver.settings import SolverSettings
from solver.sleep import SleepSettings

STIFF = Material(E=1e6, nu=0.3, density=500.0, mu=0.2)


def wall(length, thickness, angle, center=(0.0, 0.0)):
    """A fixed thin rectangle (collider): long side along angle, as a closed polyline."""
    t = np.array([np.cos(angle), np.sin(angle)])
    n = np.array([-t[1], t[0]])
    a, b = 0.5 * length, 0.5 * thickness
    corners = np.array([-a * t - b * n, a * t - b * n, a * t + b * n, -a * t + b * n]) + np.asarray(center)
    return Collider.static("wall", corners, [[0, 1], [1, 2], [2, 3], [3, 0]])


def all_edges(scene):
    """Boundary edges of the bodies and the collider edges, in the simulation's vertex numbering."""
    edges, offset = [], 0
    for b in scene.bodies:
        edges.append(boundary_edges(b.triangles) + offset)
        offset += len(b.vertices)
    for c in scene.colliders:
        edges.append(np.asarray(c.edges) + offset)
        offset += len(c.vertices)
    return np.concatenate(edges)


def run_checked(scene, n_steps, spacing, settings=None):
    """Step the scene; returns the states (n_steps + 1, N, 2), the stats and,
    per step, the edge pairs that cross on its straight motion (sampled)."""
    sim = Simulation(scene, settings=settings)
    edges = all_edges(scene)
    states, stats, crossings = [sim.positions], [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for _ in range(n_steps):
            stats.append(sim.step())
            crossings.append(sampled_motion_crossings(states[-1], sim.positions, edges, spacing))
            states.append(sim.positions)
    return np.array(states), stats, crossings


# ---------------------------------------------------------------- the scene


def slab_scene(speed=20.0):
    """A 10 cm square falling at `speed` (20 cm per 10 ms step, twice its size)
    onto the end of a 1 cm thick fixed slab: the end at x = 0, the square's
    centre above it."""
    v, t = grid_square(0.1, 2, center=(0.0, 0.3))
    slab = Collider.static(
        "slab", [[-0.5, 0.1], [0.0, 0.1], [0.0, 0.11], [-0.5, 0.11]], [[0, 1], [1, 2], [2, 3], [3, 0]]
    )
    body = Body("square", v, t, STIFF, velocity=(0.0, -speed))
    return Scene((body,), (slab,), params=SimParams(dt=0.01, strict=False))


def test_without_the_check_the_square_passes_through_the_slab():
    """The scene reproduces the issue: with the check off, a converged step's
    straight motion goes through the slab and the square ends below it."""
    off = SolverSettings(motion=MotionCheckSettings(enabled=False))
    states, stats, crossings = run_checked(slab_scene(), 3, 0.0025, off)
    assert any(len(c) for c in crossings)
    below = states[:, :9, 1].max(axis=1) < 0.1
    overlapping_x = states[:, :9, 0].min(axis=1) < 0.0
    assert np.any(below & overlapping_x)
    assert all(s.motion_splits == 0 for s in stats)


@pytest.mark.parametrize("linear_solver", ["scipy", "numpy"])
def test_the_square_lands_on_the_slab_end_and_tips_off(linear_solver):
    scene = slab_scene()
    scene = dataclasses.replace(scene, params=dataclasses.replace(scene.params, linear_solver=linear_solver))
    states, stats, crossings = run_checked(scene, 8, 0.0025)
    assert [len(c) for c in crossings] == [0] * 8
    assert sum(s.motion_splits for s in stats) >= 1
    assert all(s.motion_unresolved == 0 and s.converged for s in stats)
    split = next(s for s in stats if s.motion_splits)
    assert split.substeps == split.motion_splits + 1  # a binary tree of halvings
    # it touched the corner (a contact within dhat in some step) and never got below
    # the slab while over it: it tipped off the end to the right
    assert min(s.min_distance for s in stats) < 0.01
    below = states[:, :9, 1].max(axis=1) < 0.1
    assert not np.any(below & (states[:, :9, 0].min(axis=1) < 0.0))
    assert states[-1, :9, 0].mean() > 0.0


def slab_body_scene():
    """The issue's landing with the slab a heavy body (the watch looks at pairs
    among bodies), no gravity, the square 12 mm above the slab's end at 20 m/s."""
    v, t = grid_square(0.1, 2, center=(0.0, 0.172))
    slab_vertices = [[-0.5, 0.1], [0.0, 0.1], [0.0, 0.11], [-0.5, 0.11]]
    heavy = dataclasses.replace(STIFF, density=5e4)
    slab = Body("slab", np.array(slab_vertices), np.array([[0, 1, 2], [0, 2, 3]]), heavy)
    body = Body("square", v, t, STIFF, velocity=(0.0, -20.0))
    return Scene((body, slab), (), params=SimParams(dt=0.01, gravity=(0.0, 0.0), strict=False))


def test_a_solve_whose_iterate_crosses_is_split_before_it_converges():
    """A first step of 0.2 ms brings the square within dhat of the slab's corner;
    the next step's solve goes around the corner, its motion crossing from an
    iterate on.  Watched, the solve stops there: the same substeps and states
    bit for bit, fewer iterations, and no crossing in the committed motion."""
    runs = {}
    for watch in (False, True):
        sim = Simulation(slab_body_scene(), settings=SolverSettings(motion=MotionCheckSettings(watch=watch)))
        edges = all_edges(sim.scene)
        states, stats, crossings = [sim.positions], [], []
        for dt in (0.0002, None, None, None):
            stats.append(sim.step(dt))
            crossings.append(sampled_motion_crossings(states[-1], sim.positions, edges, 0.0025))
            states.append(sim.positions)
        runs[watch] = (np.array(states), stats, crossings)
    (plain, plain_stats, _), (watched, watched_stats, crossings) = runs[False], runs[True]
    assert plain_stats[1].motion_splits == watched_stats[1].motion_splits == 1
    assert [s.substeps for s in watched_stats] == [s.substeps for s in plain_stats]
    assert np.array_equal(watched, plain)
    assert watched_stats[1].newton_iters < plain_stats[1].newton_iters
    assert [len(c) for c in crossings] == [0] * 4
    assert all(s.converged and s.motion_unresolved == 0 for s in watched_stats)


def watched_solves(monkeypatch, settings=None):
    """The slab landing's second step, split once by the watch: per solve of that
    step, whether it was watched and the owner names of the pairs it watched
    (None: every pair in contact at its start)."""
    watched = []
    solve = Simulation._solve

    def recording(self, h, t_next, again=False, watch=False, pairs=None):
        names = None if pairs is None else {tuple(self.model.names[i] for i in p) for p in pairs}
        watched.append((watch, names))
        return solve(self, h, t_next, again=again, watch=watch, pairs=pairs)

    monkeypatch.setattr(Simulation, "_solve", recording)
    sim = Simulation(slab_body_scene(), settings=settings)
    sim.step(0.0002)
    watched.clear()
    assert sim.step().motion_splits == 1
    return watched


def test_the_halves_of_a_watched_split_watch_only_the_pair_that_stopped_it(monkeypatch):
    """A stopped solve may not have converged, so its halves count it as failed
    (failed_splits bounds the step's solves as for a failed one), and they watch
    only the pair whose crossing stopped it."""
    stopped = {("square", "slab")}
    assert watched_solves(monkeypatch) == [(True, None), (True, stopped), (True, stopped)]


def test_halves_are_watched_only_within_failed_splits(monkeypatch):
    """With failed_splits = 1 the stop used the step's one halving for a failed
    solve: its halves are not watched."""
    settings = SolverSettings(motion=MotionCheckSettings(failed_splits=1))
    assert [w for w, _ in watched_solves(monkeypatch, settings)] == [True, False, False]


def test_a_watch_of_given_pairs_sees_only_their_crossings():
    """Two point-edge stencils at the slab, from the square and from a second
    square: a watch of every pair stops at either crossing and names its pair; a
    watch of the square and the slab only does not stop at the other's."""
    other = Body("other", *grid_square(0.1, 1, center=(0.5, 0.5)), STIFF)
    scene = slab_body_scene()
    sim = Simulation(dataclasses.replace(scene, bodies=(*scene.bodies, other)))
    m, x0 = sim.model, sim.x.copy()
    square, slab, second = (np.flatnonzero(m.owner == m.names.index(n)) for n in ("square", "slab", "other"))
    edge = slab[:2]  # the slab's bottom edge, (-0.5, 0.1) to (0, 0.1)
    stencils = np.array([[square[0], *edge], [second[0], *edge]])
    x0[square[0]] = x0[second[0]] = (-0.25, 0.09)  # 1 cm below the edge
    across = x0.copy()
    across[second[0]] = (-0.25, 0.12)  # the second square's vertex passes through it
    every = CrossingWatch.of_bodies(m, x0, stencils)
    assert every.crosses(across)
    assert [[m.names[i] for i in p] for p in every.crossing_pairs(across)] == [["slab", "other"]]
    own = np.sort([[m.names.index("square"), m.names.index("slab")]], axis=1)
    assert not CrossingWatch.of_bodies(m, x0, stencils, own).crosses(across)  # not watched
    across[square[0]] = (-0.25, 0.12)
    narrowed = CrossingWatch.of_bodies(m, x0, stencils, own)
    assert narrowed.crosses(across)
    assert np.array_equal(narrowed.crossing_pairs(across), own)


def test_a_crossing_left_at_the_depth_limit_is_reported():
    capped = SolverSettings(motion=MotionCheckSettings(max_depth=0))
    with pytest.warns(RuntimeWarning, match="motion check: 1 substep"):
        sim = Simulation(slab_scene(), settings=capped)
        stats = [sim.step() for _ in range(3)]
    hit = [s for s in stats if s.motion_unresolved]
    assert len(hit) == 1 and hit[0].motion_splits == 0
    assert "'square' and 'slab' pass through each other" in hit[0].message


# ---------------------------------------------------------------- thin walls, corners


def thin_wall_scene(angle, thickness, offset, speed, slant, linear_solver="scipy"):
    """A 8 cm block thrown at a fixed 0.4 m wall of the thickness (its long side
    along angle), aimed at offset along it (its ends at +-0.2), 4 cm away, at the
    speed with tangential velocity slant x speed; no gravity.  Returns (scene,
    the wall's direction t and normal n, the block's vertex count)."""
    length, side = 0.4, 0.08
    t = np.array([np.cos(angle), np.sin(angle)])
    n = np.array([-t[1], t[0]])
    start = offset * t + (0.5 * thickness + 0.75 * side + 0.02) * n
    v, tris = grid_square(side, 2, center=start, angle=angle)
    velocity = speed * (slant * t - n)
    body = Body("block", v, tris, STIFF, velocity=tuple(velocity))
    params = SimParams(dt=0.01, gravity=(0.0, 0.0), strict=False, linear_solver=linear_solver)
    return Scene((body,), (wall(length, thickness, angle),), params=params), t, n, len(v)


# the one-off failure (dev profile): the first step's halves each clear, together cutting the wall's corner
ROUNDS_THE_END = {"angle": 0.0, "thickness": 0.004, "offset": -0.203125, "speed": 22.0, "slant": 0.0}


@settings(max_examples=25, deadline=None)
@given(
    angle=st.floats(0.0, 2.0 * np.pi),
    thickness=st.sampled_from([0.004, 0.01, 0.02]),
    offset=st.floats(-0.25, 0.25),  # where along the 0.4 m wall the body is aimed (ends at +-0.2)
    speed=st.floats(3.0, 30.0),
    slant=st.floats(-0.5, 0.5),  # tangential velocity / normal speed
)
@example(**ROUNDS_THE_END)
def test_fast_bodies_at_thin_walls_never_cross_them(angle, thickness, offset, speed, slant):
    """Reported crossings (motion_unresolved: the depth limit) first, then the
    oracle's: a crossing the oracle finds that the solver did not report is a
    hole in the check, not a step too long."""
    scene, t, n, k = thin_wall_scene(angle, thickness, offset, speed, slant)
    states, stats, crossings = run_checked(scene, 5, 0.25 * thickness)
    assert [s.motion_unresolved for s in stats] == [0] * len(stats)
    assert [len(c) for c in crossings] == [0] * len(crossings)
    # the side it came from: a centre on the far side lies beyond the wall's end
    length, side = 0.4, 0.08
    centre = states[:, :k].mean(axis=1)
    normal, along = centre @ n, centre @ t
    assert not np.any((normal < -0.5 * thickness) & (np.abs(along) < 0.5 * length - side))


@pytest.mark.parametrize("linear_solver", ["scipy", "numpy"])
def test_a_split_step_whose_own_motion_crosses_is_taken_again_in_quarters(linear_solver):
    """The block falls onto the end of a 4 mm wall, its centre 3 mm beyond the
    end.  The step's solve crosses the wall; each half's motion is clear, but the
    first half carries the block round the wall's end and the second on, so the
    step's own motion, the one shown between two frames, cuts the wall's corner.
    The step is taken again from its start in quarters, whose motion is clear:
    the block lands on the end.  The quarters are four steps of dt / 4 from the
    same start, bit for bit."""
    scene, _, _, k = thin_wall_scene(**ROUNDS_THE_END, linear_solver=linear_solver)
    sim = Simulation(scene)
    x0 = sim.positions
    stats = sim.step()
    assert (stats.substeps, stats.motion_splits, stats.motion_unresolved) == (4, 3, 0)
    assert stats.converged and stats.message == ""
    assert len(sampled_motion_crossings(x0, sim.positions, all_edges(scene), 0.001)) == 0
    assert sim.positions[:k, 1].mean() > 0.03  # its centre above the wall's end (halves: 12 cm below)
    quarters = Simulation(scene)
    for _ in range(4):
        assert quarters.step(0.0025).motion_splits == 0
    np.testing.assert_array_equal(sim.positions, quarters.positions)
    np.testing.assert_array_equal(sim.v, quarters.v)
    # with sleeping on, the step taken again starts from sleeping's state at its start too
    sleeping = Simulation(scene, settings=SolverSettings(sleep=SleepSettings(enabled=True)))
    assert sleeping.step().substeps == 4
    np.testing.assert_array_equal(sim.positions, sleeping.positions)
    # with halves at most (max_depth = 1) the step's own motion crosses: reported
    halves = Simulation(scene, settings=SolverSettings(motion=MotionCheckSettings(max_depth=1)))
    with pytest.warns(RuntimeWarning, match="'block' and 'wall' pass through each other"):
        only = halves.step()
    assert (only.substeps, only.motion_unresolved) == (2, 1)
    assert len(sampled_motion_crossings(x0, halves.positions, all_edges(scene), 0.001)) > 0
    # and with no retake the halves are kept, their crossing reported the same way
    kept = Simulation(scene, settings=SolverSettings(motion=MotionCheckSettings(retakes=0)))
    with pytest.warns(RuntimeWarning, match="'block' and 'wall' pass through each other"):
        assert (kept.step().substeps, kept.positions.tolist()) == (2, halves.positions.tolist())


@settings(max_examples=10, deadline=None)
@given(speed=st.floats(5.0, 30.0), aim=st.floats(-0.03, 0.03), tilt=st.floats(-0.6, 0.6))
def test_fast_bodies_at_a_thin_l_corner_never_cross_it(speed, aim, tilt):
    """A thin L-shaped collider (two 5 mm legs meeting at the origin), a block
    shot into its inner corner from the upper right."""
    w = 0.005
    corner = [[0.0, 0.0], [0.3, 0.0], [0.3, w], [w, w], [w, 0.3], [0.0, 0.3]]
    col = Collider.static("L", corner, [[i, (i + 1) % 6] for i in range(6)])
    d = np.array([np.cos(np.pi / 4 + tilt), np.sin(np.pi / 4 + tilt)])
    start = np.array([0.12, 0.12]) + aim * np.array([1.0, -1.0])
    v, tris = grid_square(0.06, 2, center=start, angle=tilt)
    body = Body("block", v, tris, STIFF, velocity=tuple(-speed * d))
    scene = Scene((body,), (col,), params=SimParams(dt=0.01, gravity=(0.0, 0.0), strict=False))
    states, _, crossings = run_checked(scene, 5, 0.25 * w)
    assert [len(c) for c in crossings] == [0] * len(crossings)
    # inside the L's corner region (x, y > w) it came from: never on the outside of both legs
    inside = (states[:, : len(v), 0].max(axis=1) > w) & (states[:, : len(v), 1].max(axis=1) > w)
    assert np.all(inside)


# ---------------------------------------------------------------- the kernel


unit = st.floats(-1.0, 1.0, allow_nan=False)
motion = st.floats(-2.0, 2.0, allow_nan=False)
stencil = st.tuples(
    *(st.tuples(unit, unit) for _ in range(3)), *(st.tuples(motion, motion) for _ in range(3))
)


@settings(max_examples=300, deadline=None)
@given(st.lists(stencil, min_size=1, max_size=6))
def test_point_edge_crossings_match_the_contact_times(pairs):
    """Against the closed-form contact times of test_ccd (np.roots of the
    collinearity quadratic, each root checked to lie on the segment); pairs
    that only graze the segment (no clear crossing either way) are left out."""
    X = np.array([p[:3] for p in pairs], float)
    dX = np.array([p[3:] for p in pairs], float)
    got = ccd.point_edge_crossings(X, dX)
    for k in range(len(X)):
        with np.errstate(invalid="ignore", divide="ignore"):  # roots far outside [0, 1] may meet E = 0
            roots = contact_times(X[k], dX[k])
        edge_lengths = np.linalg.norm(
            (X[k, 2] - X[k, 1]) + np.linspace(0, 1, 101)[:, None] * (dX[k, 2] - dX[k, 1]), axis=1
        )
        if roots is None or point_segment_distance(*X[k]) < 1e-6 or edge_lengths.min() < 1e-3:
            continue  # collinear throughout, starting in contact, or an edge shrinking to a point
        ts = np.linspace(0.0, 1.0, 2001)
        P = X[k][None] + ts[:, None, None] * dX[k][None]
        closest = point_segment_distance(P[:, 0], P[:, 1], P[:, 2]).min()
        crossing = any(0.0 <= r <= 1.0 for r in roots)
        if not crossing and closest < 1e-6:
            continue  # grazes: undecidable by the oracle
        assert got[k] == crossing, (k, roots)


def test_point_edge_crossings_simple_cases():
    edge = [[-1.0, 0.0], [1.0, 0.0]]
    X = np.array([[[0.0, 1.0], *edge], [[2.0, 1.0], *edge], [[0.0, 1.0], *edge]])
    dX = np.zeros_like(X)
    dX[0, 0] = [0.0, -2.0]  # straight through the middle
    dX[1, 0] = [0.0, -2.0]  # beside the end
    dX[2, 0] = [0.0, -0.5]  # stops short
    assert ccd.point_edge_crossings(X, dX).tolist() == [True, False, False]
    # the edge sweeps over a resting point
    Y = np.array([[[0.0, 0.5], *edge]])
    dY = np.array([[[0.0, 0.0], [0.0, 1.0], [0.0, 1.0]]])
    assert ccd.point_edge_crossings(Y, dY).tolist() == [True]
    assert ccd.point_edge_crossings(np.zeros((0, 3, 2)), np.zeros((0, 3, 2))).shape == (0,)


# ---------------------------------------------------------------- reporting


def test_the_cli_reports_and_records_the_split_steps(tmp_path, capsys):
    from solver.io import cli
    from solver.io.scene_io import save_scene

    save_scene(slab_scene(), tmp_path / "slab.json")
    out = tmp_path / "slab.npz"
    code = cli.main(
        ["run", str(tmp_path / "slab.json"), "-o", str(out), "--steps", "4", "--no-strict", "--quiet"]
    )
    assert code == cli.EXIT_OK
    err = capsys.readouterr().err
    assert "solver: motion check: 1 step(s) would have passed a body through another" in err
    assert "(steps 2)" in err and "warning" not in err
    d = cli.read_trajectory(out)
    np.testing.assert_array_equal(d["motion_splits"], [0, 1, 0, 0])
    np.testing.assert_array_equal(d["substeps"], [1, 2, 1, 1])
    np.testing.assert_array_equal(d["motion_unresolved"], [0, 0, 0, 0])


def test_motion_check_lines_count_the_steps():
    from solver.io import cli
    from solver.simulation import StepStats

    def stats(k, splits=0, substeps=1, left=0):
        return StepStats(
            k,
            0.01 * k,
            3,
            True,
            0.1,
            0,
            1.0,
            0.0,
            0.0,
            1e5,
            "",
            motion_splits=splits,
            substeps=substeps,
            motion_unresolved=left,
        )

    assert cli.motion_check_lines([stats(1), stats(2)]) == []
    lines = cli.motion_check_lines([stats(1), stats(2, 1, 2), stats(3, 3, 4), stats(4), stats(5, 4, 5, 1)])
    assert lines[0].startswith("motion check: 3 step(s)") and "in 11 substeps (steps 2-3, 5)" in lines[0]
    assert lines[1].startswith("warning: motion check: 1 step(s) still pass") and "(steps 5)" in lines[1]
