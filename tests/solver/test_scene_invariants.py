"""Scene invariants on the compressing-squares example (seed 003's figure),
n_seg = 2 (both formulations) and 8, 300 steps each, checked at every step
with the independent predicates of invariants.py:

* no NaN, no inverted triangle, no two boundary edges (of the bodies and the
  ceiling) crossing or touching, every vertex above the ground and below the
  ceiling;
* both squares rotate counter-clockwise while the ceiling compresses them;
* the ceiling ends at y = -0.7;
* the run is deterministic (bit-identical on a re-run).
"""

import math

import numpy as np
import pytest
from invariants import boundary_edges, crossing_edge_pairs, points_in_triangles, rotation_angle, signed_areas

from solver import simulate
from solver.examples import compressing_squares

STEPS = 300
CEILING_STOP_STEP = 194  # (0.27 + 0.7) / 0.5 s = 1.94 s at h = 0.01
RUNS = [(2, "original"), (2, "convergent"), (8, "original")]


@pytest.fixture(scope="module", params=RUNS, ids=[f"n{n}-{f}" for n, f in RUNS])
def run(request):
    n_seg, form = request.param
    scene = compressing_squares(n_seg, formulation=form)
    return scene, simulate(scene, STEPS)


def test_every_step_is_valid(run):
    scene, traj = run
    p = scene.params
    assert len(traj.stats) == STEPS and all(s.converged for s in traj.stats)
    tris = [np.asarray(b.triangles) for b in scene.bodies]
    sizes = [len(b.vertices) for b in scene.bodies]
    offsets = np.cumsum([0, *sizes])
    edges = np.concatenate([boundary_edges(t) + o for t, o in zip(tris, offsets[:-1], strict=True)])
    n_body = offsets[-1]
    col_edges = np.asarray(scene.colliders[0].edges) + n_body
    all_edges = np.concatenate([edges, col_edges])
    for k in range(STEPS + 1):
        xb = [traj.body_positions[i][k] for i in range(len(sizes))]
        xc = traj.collider_positions[0][k]
        x = np.concatenate([*xb, xc])
        assert np.all(np.isfinite(x)), f"NaN at step {k}"
        for i, t in enumerate(tris):
            a = signed_areas(xb[i], t)
            assert a.min() > 0, f"inverted triangle in body {i} at step {k} (area {a.min():.3g})"
        # no vertex of one body inside the other (catches a whole-body tunnel
        # that leaves no crossing edges behind)
        for i, j in ((0, 1), (1, 0)):
            inside = points_in_triangles(xb[i], xb[j], tris[j])
            assert not inside.any(), f"body {i} vertex inside body {j} at step {k}"
        crossing = crossing_edge_pairs(x, all_edges)
        assert len(crossing) == 0, f"boundary edges {all_edges[crossing[0]]} intersect at step {k}"
        yb = np.concatenate(xb)[:, 1]
        assert yb.min() > -1.0, f"below the ground at step {k}"
        # the ceiling is 8 m wide, so every body vertex under it must stay below it
        assert np.all(np.abs(np.concatenate(xb)[:, 0]) < 4.0)
        assert yb.max() < xc[:, 1].min(), f"above the ceiling at step {k}"
    # the contacts really were exercised (closer than dhat, never touching)
    assert min(s.min_distance for s in traj.stats) < p.dhat
    assert max(s.active_contacts for s in traj.stats) > 2


def test_ceiling_ends_at_minus_0_7(run):
    _, traj = run
    ceiling = traj.collider_positions[0]
    assert np.allclose(ceiling[-1][:, 1], -0.7, atol=1e-9)
    assert np.allclose(ceiling[CEILING_STOP_STEP + 5 :, :, 1], -0.7, atol=1e-9)
    assert traj.stats[-1].collider_lag < 1e-6


def test_both_squares_rotate_counter_clockwise(run):
    """Seed 003: friction makes both squares rotate counter-clockwise under
    compression.  Angle: least-squares rotation from the rest shape, unwrapped
    over time.  Compression phase: from the ceiling's first contact with the
    top square until it stops.  Asserted: each square reaches a clear CCW
    rotation (> 10 deg), and any clockwise excursion is much smaller than the
    CCW one (elastic wobble after impacts and after the top square is
    squeezed out shows transient negative angles of a few degrees)."""
    scene, traj = run
    dhat = scene.params.dhat
    ceiling_y = traj.collider_positions[0][:, :, 1].min(axis=1)
    top_y = traj.body_positions[0][:, :, 1].max(axis=1)
    first = int(np.argmax(ceiling_y - top_y < dhat))
    assert 10 < first < CEILING_STOP_STEP
    phase = slice(first, CEILING_STOP_STEP + 1)
    for i, name in enumerate(("top", "bottom")):
        pos = traj.body_positions[i]
        ang = np.degrees(np.unwrap([rotation_angle(pos[0], pos[k]) for k in range(len(pos))]))
        a = ang[phase]
        assert a.max() > 10.0, f"{name} square never rotates counter-clockwise (max {a.max():.1f} deg)"
        assert -a.min() < 0.5 * a.max(), f"{name} square rotates clockwise ({a.min():.1f} deg)"
        assert a.mean() > 0, f"{name} square: mean angle {a.mean():.1f} deg"


def test_determinism(run):
    """Re-running the same scene gives bit-identical positions (first 120 steps)."""
    scene, traj = run
    n = 120 if len(scene.bodies[0].vertices) < 50 else 40
    again = simulate(scene, n)
    for a, b in zip(again.body_positions, traj.body_positions, strict=True):
        assert np.array_equal(a, b[: n + 1])
    assert np.array_equal(again.collider_positions[0], traj.collider_positions[0][: n + 1])
    assert [s.newton_iters for s in again.stats] == [s.newton_iters for s in traj.stats[:n]]


def test_independent_checkers_detect_violations():
    """The checkers used above do fire: crossing, touching, collinear overlap,
    inverted triangle; and the rotation fit recovers a known angle."""
    x = np.array([[0, 0], [2, 0], [1, -1], [1, 1], [3, 0], [5, 0], [0, 2], [1, 2], [0.5, 2], [4, 2]], float)
    edges = np.array([[0, 1], [2, 3], [4, 5], [6, 7], [8, 9]])
    hits = {tuple(sorted(p)) for p in crossing_edge_pairs(x, edges).tolist()}
    # (0,1) crosses (2,3); (6,7) and (8,9) overlap collinearly; (0,1) and (4,5) are disjoint collinear
    assert hits == {(0, 1), (3, 4)}
    x2 = np.array([[0, 0], [2, 0], [1, 0], [1, 1]], float)  # T-junction: touching counts
    assert len(crossing_edge_pairs(x2, np.array([[0, 1], [2, 3]]))) == 1
    assert signed_areas(np.array([[0, 0], [0, 1], [1, 0]], float), np.array([[0, 1, 2]]))[0] < 0
    tri = np.array([[0, 0], [1, 0], [0, 1]], float)
    assert points_in_triangles(
        np.array([[0.2, 0.2], [1.0, 1.0], [0.5, 0.5]]), tri, np.array([[0, 1, 2]])
    ).tolist() == [True, False, True]
    rest = np.random.default_rng(0).normal(size=(10, 2))
    c, s = math.cos(0.7), math.sin(0.7)
    assert math.isclose(rotation_angle(rest, rest @ np.array([[c, s], [-s, c]]) + 3.0), 0.7, rel_tol=1e-12)
