"""The mesher's numpy parts (solver/meshing.py) without Blender: outline simplification,
outline deviation, angles, inside/outside by parity. The whole mesher needs a constrained
Delaunay triangulation (Blender's mathutils) and is tested in tests/addon/test_remesh.py."""

import numpy as np

from solver import meshing
from solver.geometry import segments_cross

STEPPED_SQUARE = np.array(
    [
        [0, 0],
        [0.4, 0],
        [0.4, 0.002],  # 2 mm step up
        [0.6, 0.002],
        [0.6001, 0.002],  # 0.1 mm apart
        [0.7, 0.002],
        [0.702, 0.0],  # notch back down
        [1, 0],
        [1, 1],
        [0, 1],
    ],
    float,
)


def test_tiny_outline_steps_are_merged_within_the_stated_tolerance():
    """A font-like serif (a 2 mm step, a notch, two vertices 0.1 mm apart) on a unit square:
    merged away where the outline moves by at most tol, every edge left at least `short` long."""
    h = 0.1
    short, tol = 0.25 * h, 0.05 * h
    simple = meshing.simplify_loops([STEPPED_SQUARE], short, tol)[0]
    assert len(simple) < len(STEPPED_SQUARE)
    seg = np.linalg.norm(np.roll(simple, -1, axis=0) - simple, axis=1)
    assert seg.min() >= short, seg
    # every input vertex within tol of the simplified outline (the 2 mm step at most)
    a, b = simple, np.roll(simple, -1, axis=0)
    moved = meshing.distance_to_segments(STEPPED_SQUARE, a, b)
    assert moved.max() <= tol and moved.max() >= 0.0019, moved
    # the square's corners stay
    for corner in ([0, 0], [1, 0], [1, 1], [0, 1]):
        assert np.any(np.all(simple == corner, axis=1)), corner


def test_simplify_never_crosses_the_outline():
    """A bump in the bottom side over a small triangular hole: dropping the bump's tip (its
    edges are short, and it moves the outline by less than tol) would put the new chord
    through the hole, so the tip stays; the simplified loops cross nowhere."""
    outer = np.array([[0, 0], [0.4, 0], [0.5, 0.3], [0.6, 0], [1, 0], [1, 1], [0, 1]], float)
    hole = np.array([[0.45, -0.05], [0.5, 0.05], [0.55, -0.05]], float)
    simple_outer, simple_hole = meshing.simplify_loops([outer, hole], 0.5, 0.5)
    np.testing.assert_array_equal(simple_hole, hole)
    assert np.any(np.all(simple_outer == [0.5, 0.3], axis=1)), simple_outer
    a, b = simple_outer, np.roll(simple_outer, -1, axis=0)
    c, d = hole, np.roll(hole, -1, axis=0)
    assert not segments_cross(a[:, None], b[:, None], c[None], d[None]).any()


def test_outline_deviation_of_an_exact_mesh_is_zero_and_sees_a_moved_vertex():
    x = np.array([[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0]])
    tris = np.array([[0, 1, 2], [0, 2, 3]])
    loop = [x.copy()]
    assert meshing.outline_deviation(loop, x, tris) == 0.0
    y = x.copy()
    y[2] = [1.25, 1.0]  # the corner moved 0.25 out
    assert abs(meshing.outline_deviation(loop, y, tris) - 0.25) <= 1e-12


def test_triangle_angles():
    x = np.array([[0.0, 0.0], [1.0, 0.0], [0.5, np.sqrt(3) / 2], [0.0, 1.0]])
    np.testing.assert_allclose(meshing.triangle_angles(x, np.array([[0, 1, 2]])), [[60.0, 60.0, 60.0]])
    np.testing.assert_allclose(meshing.triangle_angles(x, np.array([[0, 1, 3]])), [[90.0, 45.0, 45.0]])


def test_inside_by_parity_of_a_square_with_a_hole():
    """A triangulated 3 x 3 grid of squares whose middle square is a hole: walking from the
    hull and flipping at every outline edge marks the 16 ring triangles inside, the 2 of the
    hole outside."""
    idx = np.arange(16).reshape(4, 4)
    a, b, c, d = idx[:-1, :-1].ravel(), idx[:-1, 1:].ravel(), idx[1:, 1:].ravel(), idx[1:, :-1].ravel()
    tris = np.concatenate([np.column_stack([a, b, c]), np.column_stack([a, c, d])])
    ring = [0, 1, 2, 3, 7, 11, 15, 14, 13, 12, 8, 4]
    hole = [5, 6, 10, 9]
    edges = np.array([(p, q) for loop in (ring, hole) for p, q in zip(loop, np.roll(loop, -1), strict=True)])
    inside = meshing._inside_by_parity(tris, edges)
    in_hole = np.isin(tris, hole).all(axis=1)
    assert in_hole.sum() == 2
    np.testing.assert_array_equal(inside, ~in_hole)
