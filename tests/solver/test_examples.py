"""Built-in example scenes and mesh generators match their specification."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import solver
from solver.examples import (
    DEFAULT_STEPS,
    EXAMPLES,
    block_on_slope,
    compressing_squares,
    disc_mesh,
    free_fall,
    pile,
    square_mesh,
)
from solver.io.scene_io import load_scene, scene_to_dict


def signed_areas(v, t):
    a, b, c = v[t[:, 0]], v[t[:, 1]], v[t[:, 2]]
    return 0.5 * ((b - a)[:, 0] * (c - a)[:, 1] - (b - a)[:, 1] * (c - a)[:, 0])


def edge_counts(t):
    """Map undirected edge -> number of triangles using it."""
    e = np.sort(np.concatenate([t[:, [0, 1]], t[:, [1, 2]], t[:, [2, 0]]]), axis=1)
    uniq, counts = np.unique(e, axis=0, return_counts=True)
    return uniq, counts


def check_manifold_disc(v, t):
    """Every edge used once (boundary) or twice (interior); Euler characteristic of a disc."""
    uniq, counts = edge_counts(t)
    assert set(counts.tolist()) <= {1, 2}
    assert len(v) - len(uniq) + len(t) == 1
    assert np.all(signed_areas(v, t) > 0)
    assert set(np.unique(t).tolist()) == set(range(len(v)))
    return uniq[counts == 1]


def interp_collider(c, time):
    """Independent linear interpolation of collider samples, clamped outside."""
    out = np.empty_like(c.positions[0])
    for k in range(c.positions.shape[1]):
        for d in range(2):
            out[k, d] = np.interp(time, c.times, c.positions[:, k, d])
    return out


# --------------------------------------------------------------------------
# mesh generators
# --------------------------------------------------------------------------


@settings(max_examples=30, deadline=None)
@given(st.floats(0.01, 10.0), st.integers(1, 12), st.floats(-5, 5), st.floats(-5, 5))
def test_square_mesh(side, n_seg, cx, cy):
    v, t = square_mesh(side, n_seg, (cx, cy))
    assert v.shape == ((n_seg + 1) ** 2, 2) and t.shape == (2 * n_seg**2, 3)
    boundary = check_manifold_disc(v, t)
    assert len(boundary) == 4 * n_seg
    assert math.isclose(signed_areas(v, t).sum(), side * side, rel_tol=1e-9)
    np.testing.assert_allclose(v.min(0), [cx - side / 2, cy - side / 2], atol=1e-12)
    np.testing.assert_allclose(v.max(0), [cx + side / 2, cy + side / 2], atol=1e-12)
    # Regular grid: all triangles the same area.
    np.testing.assert_allclose(signed_areas(v, t), side * side / (2 * n_seg**2), rtol=1e-6)


def test_square_mesh_rejects_zero_cells():
    with pytest.raises(ValueError, match="n_seg"):
        square_mesh(1.0, 0)


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 8), st.integers(0, 40), st.floats(0.01, 3.0))
def test_disc_mesh(n_rings, extra, radius):
    n_boundary = 4 * n_rings + extra
    v, t = disc_mesh(radius, n_rings, (1.0, -2.0), n_boundary)
    boundary = check_manifold_disc(v, t)
    m = len(boundary)
    counts = [max(3, round(n_boundary * k / n_rings)) for k in range(1, n_rings + 1)]
    assert len(v) == 1 + sum(counts) and m == n_boundary
    # No slivers: every triangle keeps a reasonable fraction of an equilateral's area.
    a, b, c = v[t[:, 0]], v[t[:, 1]], v[t[:, 2]]
    longest = np.max([np.hypot(*(b - a).T), np.hypot(*(c - b).T), np.hypot(*(a - c).T)], axis=0)
    assert np.all(signed_areas(v, t) > 0.05 * longest**2)
    # Area equals that of the regular outer polygon; all vertices within the radius.
    assert math.isclose(
        signed_areas(v, t).sum(), 0.5 * m * radius**2 * math.sin(2 * math.pi / m), rel_tol=1e-9
    )
    r = np.hypot(v[:, 0] - 1.0, v[:, 1] + 2.0)
    assert r.max() <= radius * (1 + 1e-12)
    np.testing.assert_allclose(np.sort(r[np.unique(boundary)]), radius, rtol=1e-12)


def test_default_disc_has_six_k_ring_vertices():
    v, _ = disc_mesh(1.0, 3)
    assert len(v) == 1 + 6 + 12 + 18


def test_disc_mesh_rejects_too_coarse_rings():
    with pytest.raises(ValueError, match="n_boundary"):
        disc_mesh(1.0, 5, n_boundary=12)


# --------------------------------------------------------------------------
# compressing squares (issue 2, point 10)
# --------------------------------------------------------------------------


@pytest.mark.parametrize("n_seg", [2, 8])
def test_compressing_squares_geometry(n_seg):
    s = compressing_squares(n_seg)
    top, bottom = s.bodies
    for body, center in ((top, (0.0, 0.0)), (bottom, (0.045, -0.495))):
        assert body.vertices.shape == ((n_seg + 1) ** 2, 2)
        assert len(body.triangles) == 2 * n_seg**2
        np.testing.assert_allclose(body.vertices.min(0), np.add(center, -0.225), atol=1e-12)
        np.testing.assert_allclose(body.vertices.max(0), np.add(center, 0.225), atol=1e-12)
        assert np.all(signed_areas(body.vertices, body.triangles) > 0)
        assert body.material == solver.Material(E=1e5, nu=0.4, density=1000.0, mu=0.4)
        assert body.velocity is None and body.pins == ()


def test_compressing_squares_environment_and_params():
    s = compressing_squares()
    assert s.half_planes == (solver.HalfPlane((0.0, -1.0), (0.0, 1.0), 0.4, "ground"),)
    p = s.params
    assert (p.dt, p.dhat, p.kappa, p.formulation, p.eps_v, p.newton_tol) == (
        0.01,
        0.01,
        1e5,
        "original",
        1e-3,
        1e-2,
    )
    (ceiling,) = s.colliders
    assert ceiling.mu == 0.0
    assert len(ceiling.edges) >= 1
    xs = ceiling.vertices[:, 0]
    assert xs.min() <= -1.0 and xs.max() >= 1.0  # wider than anything it presses
    # Horizontal at every sample.
    assert np.all(np.ptp(ceiling.positions[:, :, 1], axis=1) == 0)
    y = lambda time: interp_collider(ceiling, time)[0, 1]  # noqa: E731
    assert y(0.0) == 0.27
    assert math.isclose(y(1.0), 0.27 - 0.5 * 1.0, abs_tol=1e-12)
    t_kink = (0.27 + 0.7) / 0.5
    assert np.any(np.isclose(ceiling.times, t_kink, rtol=0, atol=1e-12))  # kink sampled
    assert math.isclose(y(t_kink), -0.7, abs_tol=1e-12)
    for later in (t_kink + 0.01, 3.0, 100.0):
        assert math.isclose(y(later), -0.7, abs_tol=1e-12)  # holds after
    # Constant speed before the kink: 0.5 m/s.
    assert math.isclose((y(0.5) - y(1.5)) / 1.0, 0.5, rel_tol=1e-12)


def test_compressing_squares_start_gaps():
    """Squares are apart by 0.045 m vertically, the ceiling 0.045 m above the top one."""
    top, bottom = compressing_squares().bodies
    assert math.isclose(top.vertices[:, 1].min() - bottom.vertices[:, 1].max(), 0.045, abs_tol=1e-12)
    assert math.isclose(0.27 - top.vertices[:, 1].max(), 0.045, abs_tol=1e-12)
    assert bottom.vertices[:, 1].min() > -1.0


# --------------------------------------------------------------------------
# other examples
# --------------------------------------------------------------------------


@pytest.mark.parametrize("theta", [0.1, 0.3, 0.6])
def test_block_on_slope_sits_on_slope(theta):
    s = block_on_slope(theta=theta, mu=0.7)
    (plane,) = s.half_planes
    n = np.array(plane.normal)
    np.testing.assert_allclose(n, [-math.sin(theta), math.cos(theta)], atol=1e-15)
    v = s.bodies[0].vertices
    dist = (v - np.array(plane.point)) @ n
    gap = 1.5 * s.params.dhat
    assert math.isclose(dist.min(), gap, rel_tol=1e-9)
    # Bottom face parallel to the slope: the lowest row of vertices all at the gap.
    assert np.sum(np.isclose(dist, gap, rtol=1e-9)) == 3
    assert s.bodies[0].material.mu == 0.7 and plane.mu == 0.7


def test_free_fall_has_no_contacts():
    s = free_fall(velocity=(1.0, 2.0))
    assert s.half_planes == () and s.colliders == ()
    np.testing.assert_array_equal(s.bodies[0].velocity, [1.0, 2.0])


def _point_segment_distances(p, a, b):
    ab = b - a
    t = np.clip(((p[:, None] - a[None]) * ab[None]).sum(-1) / (ab * ab).sum(-1), 0, 1)
    closest = a[None] + t[..., None] * ab[None]
    return np.hypot(*(p[:, None] - closest).transpose(2, 0, 1))


def _boundary_loop(v, t):
    uniq, counts = edge_counts(t)
    return uniq[counts == 1]


@pytest.mark.parametrize("shape", ["mixed", "square", "disc"])
def test_pile_shapes_separated_and_inside_box(shape):
    s = pile(n_shapes=10, n_columns=4, shape=shape, seed=3)
    dhat = s.params.dhat
    assert len(s.bodies) == 10
    for b in s.bodies:
        assert 60 <= len(b.vertices) <= 100
        assert np.all(signed_areas(b.vertices, b.triangles) > 0)
    # Inside every half-plane with more than dhat clearance.
    for hp in s.half_planes:
        for b in s.bodies:
            assert ((b.vertices - hp.point) @ np.array(hp.normal)).min() > dhat
    # Pairwise: boundary vertices of one shape farther than dhat from the other's boundary,
    # and (all shapes are convex) no vertex inside another shape.
    for i, a in enumerate(s.bodies):
        for b in s.bodies[i + 1 :]:
            for p, q in ((a, b), (b, a)):
                e = _boundary_loop(q.vertices, q.triangles)
                d = _point_segment_distances(p.vertices, q.vertices[e[:, 0]], q.vertices[e[:, 1]])
                assert d.min() > dhat
            assert np.linalg.norm(a.vertices.mean(0) - b.vertices.mean(0)) > 0.1
    (ceiling,) = s.colliders
    top = max(b.vertices[:, 1].max() for b in s.bodies)
    assert ceiling.positions[0, 0, 1] > top + dhat
    assert ceiling.positions[-1, 0, 1] < ceiling.positions[0, 0, 1]


def test_pile_is_deterministic():
    a, b = pile(seed=7), pile(seed=7)
    for x, y in zip(a.bodies, b.bodies, strict=True):
        np.testing.assert_array_equal(x.vertices, y.vertices)


def test_registry():
    assert set(EXAMPLES) == {"compressing-squares", "block-on-slope", "free-fall", "pile"}
    assert set(DEFAULT_STEPS) == set(EXAMPLES)
    assert EXAMPLES["compressing-squares"] is compressing_squares


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_every_example_is_a_valid_scene(name):
    """Valid for the JSON loader and accepted by the simulation's own checks."""
    s = EXAMPLES[name]()
    load_scene(scene_to_dict(s))
    sim = solver.Simulation(s)
    assert sim.time == 0.0


def test_free_fall_example_follows_implicit_euler():
    s = free_fall(velocity=(0.5, 0.0))
    traj = solver.simulate(s, 5)
    h, g = s.params.dt, np.array(s.params.gravity)
    x0 = s.bodies[0].vertices
    for k in range(6):
        expected = x0 + k * h * np.array([0.5, 0.0]) + h * h * g * k * (k + 1) / 2
        np.testing.assert_allclose(traj.body_positions[0][k], expected, atol=1e-6)


def test_compressing_squares_bodies_stay_under_the_ceiling():
    """Full 300-step run: the ceiling is long enough that nothing escapes past its ends."""
    s = compressing_squares(2)
    traj = solver.simulate(s, 300)
    ceiling = traj.collider_positions[0]  # (301, 2, 2)
    bodies = np.concatenate(traj.body_positions, axis=1)  # (301, 18, 2)
    assert np.all(bodies[:, :, 1] < ceiling[:, None, 0, 1])
    assert np.all(bodies[:, :, 0] > ceiling[:, None, 0, 0])
    assert np.all(bodies[:, :, 0] < ceiling[:, None, 1, 0])
    assert abs(ceiling[-1, 0, 1] + 0.7) < 1e-9
