"""Plane geometry (solver/geometry.py): property tests against independent formulas and brute
force (dense sampling, exact rational arithmetic, the crossing point solved for)."""

from fractions import Fraction

import numpy as np
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from solver import geometry

small_int = st.integers(-6, 6)
int_point = st.tuples(small_int, small_int)
coord = st.floats(-10.0, 10.0, allow_nan=False, allow_infinity=False)
point = st.tuples(coord, coord)


def exact_orientation(p, q, r):
    """Twice the signed area in rational arithmetic (shoelace formula, not q - p x r - p)."""
    (px, py), (qx, qy), (rx, ry) = ((Fraction(c) for c in v) for v in (p, q, r))
    return px * qy - qx * py + qx * ry - rx * qy + rx * py - px * ry


def on_segment_exact(r, p, q):
    """r lies on the closed segment p-q (rational arithmetic)."""
    if exact_orientation(p, q, r) != 0:
        return False
    return min(p[0], q[0]) <= r[0] <= max(p[0], q[0]) and min(p[1], q[1]) <= r[1] <= max(p[1], q[1])


def shared_point_exact(p, q, a, b):
    """Brute force for integer segments: solve p + s (q - p) = a + t (b - a) by Cramer's rule
    in fractions; parallel segments share a point when one's end lies on the other."""
    P, Q, A, B = (np.array(v, dtype=object) for v in (p, q, a, b))
    d, e, f = Q - P, B - A, A - P
    den = d[0] * e[1] - d[1] * e[0]
    if den == 0:
        ends = ((p, a, b), (q, a, b), (a, p, q), (b, p, q))
        return any(on_segment_exact(r, u, v) for r, u, v in ends), False
    s = Fraction(f[0] * e[1] - f[1] * e[0], den)
    t = Fraction(f[0] * d[1] - f[1] * d[0], den)
    meet = 0 <= s <= 1 and 0 <= t <= 1
    return meet, 0 < s < 1 and 0 < t < 1


@settings(max_examples=300, deadline=None)
@given(int_point, int_point, int_point)
def test_orientation_is_exact_on_integers(p, q, r):
    got = geometry.orientation(np.array(p, float), np.array(q, float), np.array(r, float))
    assert got == exact_orientation(p, q, r)


@settings(max_examples=400, deadline=None)
@given(int_point, int_point, int_point, int_point)
def test_segment_crossing_variants_against_solved_intersection(p, q, a, b):
    assume(p != q and a != b)
    meet, interiors_cross = shared_point_exact(p, q, a, b)
    P, Q, A, B = (np.array(v, float) for v in (p, q, a, b))
    assert bool(geometry.segments_intersect(P, Q, A, B)) == meet
    # proper crossing: the interiors meet in one point, and no end point lies on the other line
    touching = any(
        exact_orientation(u, v, r) == 0 for u, v, r in ((a, b, p), (a, b, q), (p, q, a), (p, q, b))
    )
    assert bool(geometry.segments_cross(P, Q, A, B)) == (interiors_cross and not touching)
    # both are symmetric in the two segments and their directions
    assert geometry.segments_intersect(B, A, Q, P) == geometry.segments_intersect(P, Q, A, B)
    assert geometry.segments_cross(B, A, Q, P) == geometry.segments_cross(P, Q, A, B)


def test_segment_crossing_variants_named_cases():
    P = np.array
    cross_x = (P([0.0, 0.0]), P([2.0, 2.0]), P([0.0, 2.0]), P([2.0, 0.0]))
    t_touch = (P([0.0, 0.0]), P([2.0, 0.0]), P([1.0, 0.0]), P([1.0, 3.0]))
    overlap = (P([0.0, 0.0]), P([2.0, 0.0]), P([1.0, 0.0]), P([3.0, 0.0]))
    collinear_apart = (P([0.0, 0.0]), P([1.0, 0.0]), P([2.0, 0.0]), P([3.0, 0.0]))
    assert geometry.segments_cross(*cross_x) and geometry.segments_intersect(*cross_x)
    assert not geometry.segments_cross(*t_touch) and geometry.segments_intersect(*t_touch)
    assert not geometry.segments_cross(*overlap) and geometry.segments_intersect(*overlap)
    assert not geometry.segments_cross(*collinear_apart) and not geometry.segments_intersect(*collinear_apart)


def test_segments_cross_margin_needs_every_end_that_far_from_the_other_line():
    p, q = np.array([0.0, -1.0]), np.array([0.0, 1.0])
    a, b = np.array([-1.0, 0.0]), np.array([0.05, 0.0])  # b 0.05 past the line of p-q
    assert geometry.segments_cross(p, q, a, b, margin=0.04)
    assert not geometry.segments_cross(p, q, a, b, margin=0.06)


@settings(max_examples=300, deadline=None)
@given(point, point, point)
def test_point_segment_distance_against_sampling(p, a, b):
    p, a, b = (np.array(v) for v in (p, a, b))
    t = np.linspace(0.0, 1.0, 20001)[:, None]
    sampled = np.sqrt(np.min(np.sum(((1 - t) * a + t * b - p) ** 2, axis=1)))
    d = float(geometry.point_segment_distance(p, a, b))
    length, scale = np.linalg.norm(b - a), max(1.0, np.abs([p, a, b]).max())
    assert d <= sampled + 1e-9 * scale
    assert sampled <= d + 0.5 * length / 20000 + 1e-9 * scale
    s = float(geometry.closest_on_segment(p, a, b))
    assert 0.0 <= s <= 1.0
    assert abs(np.linalg.norm(a + s * (b - a) - p) - d) <= 1e-9 * scale


def test_point_segment_distance_broadcasts_to_an_all_pairs_table():
    rng = np.random.default_rng(3)
    p, a, b = rng.normal(size=(5, 2)), rng.normal(size=(4, 2)), rng.normal(size=(4, 2))
    table = geometry.point_segment_distance(p[:, None], a[None], b[None])
    assert table.shape == (5, 4)
    for i in range(5):
        for j in range(4):
            assert table[i, j] == geometry.point_segment_distance(p[i], a[j], b[j])
    # a segment of zero length: the distance to its point
    assert geometry.point_segment_distance(np.array([3.0, 4.0]), np.zeros(2), np.zeros(2)) == 5.0


@settings(max_examples=300, deadline=None)
@given(int_point, int_point, int_point, int_point)
def test_points_in_triangles_against_barycentric_coordinates(q, a, b, c):
    area = exact_orientation(a, b, c)
    assume(area != 0)
    if area < 0:
        b, c = c, b
    # barycentric coordinates in fractions: inside when all >= 0 (interior when all > 0)
    lam = [exact_orientation(b, c, q), exact_orientation(c, a, q), exact_orientation(a, b, q)]
    Q, A, B, C = (np.array(v, float) for v in (q, a, b, c))
    assert bool(geometry.points_in_triangles(Q, A, B, C)) == all(v >= 0 for v in lam)
    assert bool(geometry.points_in_triangles(Q, A, B, C, closed=False)) == all(v > 0 for v in lam)


def test_points_in_polygon_square_with_hole():
    outer = np.array([[0.0, 0.0], [4.0, 0.0], [4.0, 4.0], [0.0, 4.0]])
    hole = np.array([[1.0, 1.0], [1.0, 3.0], [3.0, 3.0], [3.0, 1.0]])
    pts = np.array([[0.5, 0.5], [2.0, 2.0], [3.5, 2.0], [5.0, 2.0], [-1.0, 2.0], [2.0, 0.5]])
    np.testing.assert_array_equal(
        geometry.points_in_polygon(pts, [outer, hole]), [True, False, True, False, False, True]
    )


@settings(max_examples=100, deadline=None)
@given(st.integers(3, 12), st.floats(0.5, 3.0), st.lists(point, min_size=1, max_size=20))
def test_points_in_polygon_regular_polygon_against_half_planes(k, radius, pts):
    """A convex polygon's inside is the intersection of its edges' left half-planes."""
    ang = 2 * np.pi * np.arange(k) / k
    poly = radius * np.column_stack([np.cos(ang), np.sin(ang)])
    pts = np.array(pts)
    side = geometry.orientation(poly[None], np.roll(poly, -1, axis=0)[None], pts[:, None])
    assume(np.abs(side).min() > 1e-6)  # points on an edge may go either way
    np.testing.assert_array_equal(geometry.points_in_polygon(pts, [poly]), (side > 0).all(axis=1))


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 5), st.integers(1, 5), st.booleans())
def test_boundary_edges_of_a_grid(nx, ny, clockwise):
    """The boundary of an nx x ny grid of split squares: 2 (nx + ny) edges, each used by one
    triangle and directed like it, forming the grid's outline."""
    idx = np.arange((nx + 1) * (ny + 1)).reshape(ny + 1, nx + 1)
    a, b, c, d = idx[:-1, :-1].ravel(), idx[:-1, 1:].ravel(), idx[1:, 1:].ravel(), idx[1:, :-1].ravel()
    tris = np.concatenate([np.column_stack([a, b, c]), np.column_stack([a, c, d])])
    if clockwise:
        tris = tris[:, [0, 2, 1]]
    edges = geometry.boundary_edges(tris)
    assert len(edges) == 2 * (nx + ny)
    row, col = np.divmod(edges, nx + 1)
    on_outline = (row == 0) | (row == ny) | (col == 0) | (col == nx)
    assert on_outline.all()
    directed = {tuple(e) for t in tris for e in ((t[0], t[1]), (t[1], t[2]), (t[2], t[0]))}
    assert all(tuple(e) in directed for e in edges)
    x = np.column_stack([col, row]).reshape(-1, 2, 2).astype(float)  # edge end points
    loop_area = 0.5 * geometry.cross(x[:, 0], x[:, 1]).sum()  # shoelace over the outline
    assert loop_area == (-1 if clockwise else 1) * nx * ny


def test_signed_areas_and_edge_use():
    x = np.array([[0.0, 0.0], [2.0, 0.0], [0.0, 1.0], [2.0, 1.0]])
    tris = np.array([[0, 1, 2], [1, 3, 2]])
    np.testing.assert_array_equal(geometry.signed_areas(x, tris), [1.0, 1.0])
    np.testing.assert_array_equal(geometry.signed_areas(x, tris[:, [0, 2, 1]]), [-1.0, -1.0])
    und, counts = geometry.edge_use(tris)
    assert dict(zip(map(tuple, und.tolist()), counts.tolist(), strict=True)) == {
        (0, 1): 1,
        (0, 2): 1,
        (1, 2): 2,
        (1, 3): 1,
        (2, 3): 1,
    }
