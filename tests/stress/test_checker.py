"""The independent checker must actually catch every violation kind (and only those)."""

from fractions import Fraction

import numpy as np
import pytest

from solver import Body, Collider, HalfPlane, Scene
from solver.examples import square_mesh
from tests.stress.check import Checker, min_separation, orient, plane_side, segments_intersect


def _exact(a, b, c):
    f = [Fraction(float(v)) for v in (*a, *b, *c)]
    d = (f[0] - f[4]) * (f[3] - f[5]) - (f[1] - f[5]) * (f[2] - f[4])
    return (d > 0) - (d < 0)


def test_orient_is_exact_near_degenerate():
    # Shewchuk's classic: points near the line y = x, perturbed by a few ulps.
    u = np.spacing(0.5)
    a, b, c, want = [], [], [], []
    for i in range(64):
        for j in range(64):
            p, q, r = (0.5 + i * u, 0.5 + j * u), (12.0, 12.0), (24.0, 24.0)
            a.append(p), b.append(q), c.append(r), want.append(_exact(p, q, r))
    got = orient(np.array(a), np.array(b), np.array(c))
    assert got.tolist() == want
    assert 0 in want and 1 in want and -1 in want  # all three signs exercised


def test_segments():
    P = np.array
    cases = [  # p0, p1, q0, q1, expected
        ((0, 0), (2, 2), (0, 2), (2, 0), True),  # proper crossing
        ((0, 0), (1, 0), (1, 0), (2, 5), True),  # shared endpoint position
        ((0, 0), (2, 0), (1, 0), (1, 3), True),  # T touch
        ((0, 0), (2, 0), (1, 0), (3, 0), True),  # collinear overlap
        ((0, 0), (1, 0), (2, 0), (3, 0), False),  # collinear apart
        ((0, 0), (1, 0), (0, 1e-300), (1, 1e-300), False),  # parallel, tiny gap
        ((0, 0), (1, 1), (0, 1), (0.4999, 0.5001), False),  # near miss
    ]
    got = segments_intersect(*(P([c[k] for c in cases], float) for k in range(4)))
    assert got.tolist() == [c[4] for c in cases]


def test_plane_side_exact():
    x = np.array([[0.1, 0.3], [0.1, 0.3 - 1e-17], [0.0, 0.30000000000000004]])
    s = plane_side(x, (0.0, 0.3), (0.0, 1.0))
    assert s.tolist() == [0, 0, 1]  # 0.3 - 1e-17 rounds to 0.3: exactly on the plane


def _scene(colliders=(), planes=()):
    va, ta = square_mesh(1.0, 2, (0.0, 0.0))
    vb, tb = square_mesh(1.0, 2, (2.0, 0.0))
    return Scene(bodies=(Body("a", va, ta), Body("b", vb, tb)), colliders=colliders, half_planes=planes)


def _kinds(ck, xa, xb, cols=()):
    return sorted({v.kind for v in ck.check([xa, xb], cols)})


def test_checker_catches_each_kind():
    wall = Collider.static("wall", [[4.0, -1.0], [4.0, 1.0]], [[0, 1]])
    sc = _scene(colliders=(wall,), planes=(HalfPlane((0.0, -1.0), (0.0, 1.0)),))
    ck = Checker(sc)
    xa, xb = sc.bodies[0].vertices, sc.bodies[1].vertices
    xw = wall.vertices
    assert _kinds(ck, xa, xb, [xw]) == []
    assert _kinds(ck, xa, xb - [1.5, 0.0], [xw]) == ["crossing", "inside"]  # overlap
    assert _kinds(ck, xa, xb - [1.0, 0.0], [xw]) == ["crossing", "inside"]  # exact touch
    small = (xb - [2.0, 0.0]) * 0.1
    assert _kinds(ck, xa, small, [xw]) == ["inside"]  # tunnelled in
    flipped = xa.copy()
    flipped[4] = [0.9, 0.9]  # centre pulled past a corner
    assert "inverted" in _kinds(ck, flipped, xb, [xw])
    nan = xa.copy()
    nan[3, 0] = np.nan
    assert _kinds(ck, nan, xb, [xw]) == ["nonfinite"]
    assert _kinds(ck, xa - [0.0, 0.5], xb, [xw]) == ["half_plane"]
    assert _kinds(ck, xa - [0.0, 0.5 - 1e-12], xb, [xw]) == []  # just above
    assert _kinds(ck, xa, xb, [xw - [1.5, 0.0]]) == ["crossing"]  # collider through b
    assert _kinds(ck, xa, xb, [(xw - [4.0, 0.0]) * 0.1 + [2.0, 0.0]]) == ["inside"]  # collider inside b


def test_checker_self_crossing_and_fold():
    v, t = square_mesh(1.0, 3)
    sc = Scene(bodies=(Body("s", v, t),))
    ck = Checker(sc)
    assert ck.check([v]) == []
    folded = v.copy()
    folded[0] = v[2] + [0.1, 0.0]  # bottom-left corner dragged past the bottom-right one
    assert {x.kind for x in ck.check([folded])} >= {"crossing"}


def test_min_separation():
    sc = _scene()
    assert min_separation(sc) == pytest.approx(1.0)
