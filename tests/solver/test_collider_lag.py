"""Colliders that lag behind their animation (issue 11, point 5).

A prescribed collider that cannot reach its target (a ceiling keyed down onto a body that
cannot give way) stays behind: the solver's own collider is intersection-free with the
bodies, so ``min_distance`` stays positive, while the collider as ANIMATED overlaps them.
``StepStats.animated_collider_distance`` must then be negative: minus the overlap depth.

Every expected value is computed here from the geometry with the independent helpers of
invariants.py (point-segment distance, exact segment intersection, point in triangle), never
with the solver's own kernels.
"""

import re
import warnings
from dataclasses import replace

import numpy as np
import pytest
from invariants import (
    boundary_edges,
    grid_square,
    point_segment_distance,
    points_in_triangles,
    segments_intersect,
)

from solver import (
    Body,
    Collider,
    ConvergenceError,
    HalfPlane,
    Material,
    Pin,
    Scene,
    SimParams,
    Simulation,
    simulate,
)
from solver.collider_check import collider_status, compact_ranges, pressed_note
from solver.examples import compressing_squares, pile
from solver.io import cli
from solver.model import build_model
from solver.prescribed import PrescribedSettings
from solver.settings import SolverSettings

DHAT = 0.002
SOFT = Material(E=1e5, nu=0.4, density=1000.0, mu=0.0)


# ----------------------------------------------------------------------------- independent checks


def crossing_count(xb, tris, c0, c1):
    """Number of (body boundary edge, collider segment c0-c1) pairs that intersect."""
    e = boundary_edges(tris)
    n = len(e)
    return int(segments_intersect(xb[e[:, 0]], xb[e[:, 1]], np.tile(c0, (n, 1)), np.tile(c1, (n, 1))).sum())


def overlap_depth_below_segment(xb, tris, c0, c1):
    """Depth of a body pushed up through the horizontal segment c0-c1 (the animated ceiling):
    the largest distance of a body boundary vertex above the segment's line, within its span,
    from the segment."""
    v = np.unique(boundary_edges(tris))
    p = xb[v]
    above = (p[:, 1] > c0[1]) & (p[:, 0] >= min(c0[0], c1[0])) & (p[:, 0] <= max(c0[0], c1[0]))
    return float(point_segment_distance(p[above], c0, c1).max()) if above.any() else 0.0


def min_distance_body_segments(xb, tris, cx, cedges):
    """Smallest distance between a body's boundary and collider segments (no crossing):
    over body boundary vertices against collider edges and collider vertices against body
    boundary edges (the distance of two disjoint segments is attained at an end point)."""
    e = boundary_edges(tris)
    v = np.unique(e)
    a, b = cx[cedges[:, 0]], cx[cedges[:, 1]]
    d1 = point_segment_distance(xb[v][:, None], a[None], b[None]).min()
    cv = np.unique(cedges)
    d2 = point_segment_distance(cx[cv][:, None], xb[e[:, 0]][None], xb[e[:, 1]][None]).min()
    return float(min(d1, d2))


# ----------------------------------------------------------------------------- collider_status
# on fixed geometry: the body at rest, the collider displaced to a target it could not reach


def _static_scene(col_vertices, col_edges):
    v, t = grid_square(0.2, 2)  # [-0.1, 0.1]^2
    col = Collider.static("lid", col_vertices, col_edges)
    scene = Scene((Body("block", v, t, SOFT),), (col,), (), SimParams(dhat=DHAT))
    return build_model(scene), v, t


def _status(model, col_target):
    """collider_status with the bodies at rest and the collider's target given."""
    x = model.rest.copy()
    target = x.copy()
    target[model.collider_slices[0]] = col_target
    near = np.zeros((0, 3), np.intp)  # unused: the collider lags
    return collider_status(model, x, target, DHAT, near)


def test_open_segment_keyed_into_the_body_gives_minus_the_overlap_depth():
    seg = np.array([[-0.5, 0.15], [0.5, 0.15]])
    model, xb, tris = _static_scene(seg, [[0, 1]])
    target = seg - [0.0, 0.063]  # y = 0.087: 13 mm below the block's top edge
    lags, dist = _status(model, target)
    np.testing.assert_allclose(lags, [0.063], rtol=1e-12)
    assert crossing_count(xb, tris, *target) > 0  # the overlap is real
    expected = overlap_depth_below_segment(xb, tris, *target)
    np.testing.assert_allclose(expected, 0.013, rtol=1e-9)
    np.testing.assert_allclose(dist, [-expected], rtol=1e-9)


def test_closed_box_collider_gives_the_same_depth():
    box = np.array([[-0.5, 0.15], [0.5, 0.15], [0.5, 0.25], [-0.5, 0.25]])
    model, xb, tris = _static_scene(box, [[0, 1], [1, 2], [2, 3], [3, 0]])
    target = box - [0.0, 0.054]  # bottom edge at y = 0.096
    _, dist = _status(model, target)
    expected = overlap_depth_below_segment(xb, tris, target[0], target[1])
    np.testing.assert_allclose(dist, [-expected], rtol=1e-9)
    np.testing.assert_allclose(expected, 0.004, rtol=1e-9)


def test_wedge_tip_pushed_into_an_edge_counts_the_collider_vertex():
    """Only the wedge's tip enters the block (no body vertex crosses a collider edge): the
    depth is the tip's distance from the block's boundary, the tip being inside the block."""
    wedge = np.array([[-0.03, 0.2], [0.01, 0.12], [0.05, 0.2]])
    model, xb, tris = _static_scene(wedge, [[0, 1], [1, 2]])
    target = wedge - [0.0, 0.027]  # tip at y = 0.093, 7 mm into the block
    _, dist = _status(model, target)
    tip = target[1]
    assert points_in_triangles(tip[None], xb, tris)[0]
    e = boundary_edges(tris)
    expected = float(point_segment_distance(tip[None], xb[e[:, 0]], xb[e[:, 1]]).min())
    np.testing.assert_allclose(expected, 0.007, rtol=1e-9)
    np.testing.assert_allclose(dist, [-expected], rtol=1e-9)


def test_tilted_segment_dipping_into_a_corner():
    """Only the right end of the segment is keyed down (the collider turns): the block's
    top-right corner ends above the animated segment, by its distance to it."""
    seg = np.array([[-0.3, 0.2], [0.3, 0.2]])
    model, xb, tris = _static_scene(seg, [[0, 1]])
    target = np.array([[-0.3, 0.2], [0.3, 0.04]])

    def line(x):  # the animated segment's line
        return 0.2 - (0.16 / 0.6) * (x + 0.3)

    _, dist = _status(model, target)
    assert crossing_count(xb, tris, *target) > 0
    # independent depth: the boundary vertices above the animated line, farthest from it
    p = xb[np.unique(boundary_edges(tris))]
    above = p[:, 1] > line(p[:, 0])
    np.testing.assert_array_equal(p[above], [[0.1, 0.1]])  # only the corner
    expected = float(point_segment_distance(p[above], target[0], target[1]).max())
    np.testing.assert_allclose(dist, [-expected], rtol=1e-9)


def test_lagging_collider_short_of_the_body_keeps_a_positive_distance():
    seg = np.array([[-0.5, 0.15], [0.5, 0.15]])
    model, xb, tris = _static_scene(seg, [[0, 1]])
    target = seg - [0.0, 0.0495]  # 0.5 mm above the block: within reach of dhat
    _, dist = _status(model, target)
    assert crossing_count(xb, tris, *target) == 0
    expected = min_distance_body_segments(xb, tris, target, np.array([[0, 1]]))
    np.testing.assert_allclose(expected, 5e-4, rtol=1e-9)
    np.testing.assert_allclose(dist, [expected], rtol=1e-9)
    # out of reach (farther than dhat): nothing to report
    _, far = _status(model, seg - [0.0, 0.04])
    assert far[0] == np.inf


def test_collider_moved_right_through_the_body_still_counts():
    """A thin segment keyed so far that it passes the whole block within one step: no overlap
    is left at the target, but the animation went through the body."""
    seg = np.array([[-0.5, 0.15], [0.5, 0.15]])
    model, _, _ = _static_scene(seg, [[0, 1]])
    _, dist = _status(model, seg - [0.0, 0.3])  # ends at y = -0.15, 5 cm below the block
    assert dist[0] < 0.0
    np.testing.assert_allclose(dist, [-0.25], rtol=1e-9)  # the top edge is 25 cm past it


def test_compact_ranges():
    assert compact_ranges([]) == ""
    assert compact_ranges([5]) == "5"
    assert compact_ranges([3, 1, 2, 7, 9, 8, 12]) == "1-3, 7-9, 12"


# ----------------------------------------------------------------------------- simulations


def _ceiling(stop, start=0.25, t_stop=0.5):
    """A 1 m wide segment descending linearly from y = start to y = stop at t_stop, then holding."""

    def at(y):
        return np.array([[-0.5, y], [0.5, y]])

    return Collider("ceiling", at(start), [[0, 1]], [0.0, t_stop], np.stack([at(start), at(stop)]))


def _run_quiet(scene, n_steps):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # non-converged steps (strict=False)
        return simulate(scene, n_steps)


def _check_lagging_steps(scene, traj, steps, cut):
    """At each step: lag > 0, the solver's ceiling above the body with a positive gap, and the
    animated distance negative and equal to minus the depth of the body above the animated
    ceiling.  cut: the animated ceiling crosses the body's boundary (else it lies wholly
    beneath the body: the animation went right through it)."""
    (body,) = scene.bodies
    tris = np.asarray(body.triangles)
    col = scene.colliders[0]
    for k in steps:
        s = traj.stats[k - 1]
        xb = traj.body_positions[0][k]
        target = col.positions[-1]  # the ceiling has stopped: its target is its last key
        assert s.collider_lag > 0.0, (k, s.collider_lag)
        assert s.min_distance > 0.0
        assert (crossing_count(xb, tris, *target) > 0) == cut, f"step {k}"
        expected = overlap_depth_below_segment(xb, tris, *target)
        assert expected > 0.0, f"step {k}: no body vertex above the animated ceiling"
        assert s.animated_collider_distance < 0.0
        np.testing.assert_allclose(s.animated_collider_distance, -expected, rtol=1e-9, atol=1e-15)
        assert s.animated_collider_distances == (s.animated_collider_distance,)
        # the solver's ceiling is above every body vertex; the lag is how far it stays behind
        (a, b) = traj.collider_positions[0][k]
        assert np.all(xb[:, 1] < a[1] + (b[1] - a[1]) * (xb[:, 0] - a[0]) / (b[0] - a[0])), f"step {k}"
        np.testing.assert_allclose(s.collider_lags[0], np.linalg.norm([a, b] - target, axis=1).max())


def test_ceiling_keyed_into_a_confined_body_lags_and_the_overlap_is_reported():
    """The issue's case: a square between two walls on the ground, the ceiling keyed down to
    the ground itself.  The solver squashes the body to a fraction of a millimetre and the
    ceiling stays that far above its key: the animated ceiling lies beneath the whole body."""
    v, t = grid_square(0.2, 2, center=(0.0, 0.1 + 1.5 * DHAT))
    walls = (
        HalfPlane((0.0, 0.0), (0.0, 1.0), 0.0, "ground"),
        HalfPlane((-0.1 - 1.5 * DHAT, 0.0), (1.0, 0.0), 0.0, "left"),
        HalfPlane((0.1 + 1.5 * DHAT, 0.0), (-1.0, 0.0), 0.0, "right"),
    )
    params = SimParams(dt=0.01, dhat=DHAT, kappa=None, strict=False)
    scene = Scene((Body("block", v, t, SOFT),), (_ceiling(0.0),), walls, params)
    traj = _run_quiet(scene, 70)
    lagging = [s.step for s in traj.stats if s.collider_lag > 0.0]
    # the ceiling stops at t = 0.5 s (step 50); from then on it stays behind its key
    assert set(range(60, 71)) <= set(lagging), compact_ranges(lagging)
    _check_lagging_steps(scene, traj, range(60, 71), cut=False)


@pytest.fixture(scope="module")
def pinned_run():
    """A block whose vertices are all pinned (glued in place; the pins, held by a penalty
    themselves, give way by part of it) under a ceiling keyed 5 cm into it."""
    v, t = grid_square(0.2, 2, center=(0.0, 0.1 + DHAT))
    body = Body("block", v, t, SOFT, pins=(Pin(np.arange(len(v))),))
    scene = Scene((body,), (_ceiling(0.15),), (), SimParams(dt=0.01, dhat=DHAT, kappa=None))
    return scene, simulate(scene, 60)


def test_ceiling_keyed_into_a_pinned_body(pinned_run):
    scene, traj = pinned_run
    assert all(s.converged for s in traj.stats)
    _check_lagging_steps(scene, traj, range(52, 61), cut=True)


def test_cli_writes_and_reports_the_overlap(pinned_run):
    scene, traj = pinned_run
    arrays = cli.trajectory_arrays(scene, traj)
    np.testing.assert_array_equal(
        arrays["animated_collider_distance"], [s.animated_collider_distance for s in traj.stats]
    )
    assert arrays["collider_lags"].shape == arrays["animated_collider_distances"].shape == (60, 1)
    np.testing.assert_array_equal(arrays["collider_lags"][:, 0], [s.collider_lags[0] for s in traj.stats])
    overlap = [s.step for s in traj.stats if s.animated_collider_distance < 0]
    assert overlap == list(range(overlap[0], 61))
    (line,) = cli.collider_overlaps(scene, traj.stats)
    depth = -min(s.animated_collider_distance for s in traj.stats)
    assert "'ceiling'" in line and f"steps {overlap[0]}-60" in line and f"{depth:.3g} m" in line, line


def test_ceiling_that_reaches_its_targets_reports_the_contact_distance():
    """Compressing squares: the ceiling is never blocked; the animated distance is the plain
    distance between the bodies and the ceiling (where it is within reach of dhat)."""
    scene = compressing_squares(2)
    dhat = scene.params.dhat
    traj = simulate(scene, 150)
    cedges = np.asarray(scene.colliders[0].edges)
    near = 0
    for k, s in enumerate(traj.stats, start=1):
        assert s.collider_lag == 0.0 and s.collider_lags == (0.0,)
        assert s.animated_collider_distance == s.animated_collider_distances[0]
        cx = traj.collider_positions[0][k]
        d = min(
            min_distance_body_segments(traj.body_positions[i][k], np.asarray(b.triangles), cx, cedges)
            for i, b in enumerate(scene.bodies)
        )
        assert s.animated_collider_distance >= s.min_distance
        if d < dhat:
            near += 1
            np.testing.assert_allclose(s.animated_collider_distance, d, rtol=1e-9)
        else:
            assert s.animated_collider_distance >= d
    assert near > 50  # the ceiling does press on the squares


def test_stats_of_a_scene_without_colliders():
    v, t = grid_square(0.2, 1)
    sim = Simulation(Scene((Body("b", v, t, SOFT),)))
    s = sim.step()
    assert s.animated_collider_distance == np.inf
    assert s.collider_lags == () and s.animated_collider_distances == ()


def test_a_step_that_fails_under_a_pressed_collider_names_it():
    """Four rigid shapes in a box, the ceiling slammed down onto them at 4 m/s: they cannot
    make room within a step, the penalty driving the ceiling to its keys grows past what they
    balance, and a step fails (step 6, on both linear-solver paths).  With the ceiling not
    stopped there (by default it is: test_stopped_collider.py), its error names the ceiling
    as pressed into the bodies, by the overlap measured here from the geometry (the bodies'
    top above the ceiling's keyed height), as the likely cause, and says what to change
    (docs/design/10-prescribed-motion.md)."""
    scene = pile(n_shapes=4, n_columns=2, ceiling_speed=4.0)
    scene = replace(scene, bodies=tuple(replace(b, kind="rigid") for b in scene.bodies))
    sim = Simulation(scene, settings=SolverSettings(prescribed=PrescribedSettings(stop_pressed=False)))
    with pytest.raises(ConvergenceError) as info, warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the motion check's notes on the way
        for _ in range(20):
            sim.step()
    err, ceiling = info.value, scene.colliders[0]
    keyed = np.interp(err.stats.time, ceiling.times, ceiling.positions[:, 0, 1])
    top = sim.x[~sim.model.is_collider, 1].max()
    assert top > keyed  # the bodies stick out above the ceiling as keyed
    text = str(err)
    m = re.search(r"'ceiling' is pressed into the bodies \(as animated it overlaps them by (\S+) m", text)
    assert m, text
    assert float(m.group(1)) == pytest.approx(top - keyed, rel=5e-3)  # printed to 3 digits
    assert text.endswith(
        "the likely cause: key it to stop sooner or move more slowly, or make the bodies softer"
    )
    assert err.stats.message.startswith("Newton did not converge") and "'ceiling'" in err.stats.message


def test_pressed_note_names_only_the_colliders_that_overlap():
    assert pressed_note(["lid", "wall"], [0.0, 0.0], [np.inf, 0.001]) == ""
    note = pressed_note(["lid", "wall", "ram"], [0.002, 0.0, 0.003], [-0.001, 0.001, -0.002])
    assert "'lid'" in note and "'ram'" in note and "'wall'" not in note
    assert "key them to stop sooner" in note
