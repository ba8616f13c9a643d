"""CCD for the line search, against exact oracles written here.

* accd_point_edge: the point never touches the (moving) segment on
  [0, t_returned] -- oracle: the collinearity quadratic of linear motion,
  solved exactly, with the contact parameter checked to lie on the segment --
  and the step is not needlessly tiny: if t < t_max, within (t, t + d(t)/l_p]
  the distance drops below eta * d0 (the pair really was about to get close).
* half_plane_step / inversion_step: safe up to the returned step and maximal
  (equal to the analytic first time the eta margin is reached)."""

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from invariants import cross2, point_segment_distance

from solver import ccd

unit = st.floats(-1.0, 1.0, allow_nan=False)
motion = st.floats(-2.0, 2.0, allow_nan=False)
vec = st.tuples(unit, unit)
dvec = st.tuples(motion, motion)
ETA = 0.1


def contact_times(X, dX):
    """All times t (sorted) at which the point lies on the segment, for the
    linear motion X + t dX (stencil rows p, e0, e1).  None if the motion is
    collinear throughout (the quadratic vanishes identically)."""
    A0, dA = X[0] - X[1], dX[0] - dX[1]
    E0, dE = X[2] - X[1], dX[2] - dX[1]
    c0 = cross2(A0, E0)
    c1 = cross2(A0, dE) + cross2(dA, E0)
    c2 = cross2(dA, dE)
    scale = max(abs(c0), abs(c1), abs(c2), 1e-300)
    if max(abs(c0), abs(c1), abs(c2)) < 1e-14:
        return None
    # a leading coefficient negligible against the others (or subnormal) is zero
    coeffs = [c2, c1, c0] if abs(c2) > 1e-14 * scale else [c1, c0]
    if abs(coeffs[0]) <= 1e-14 * scale:
        coeffs = coeffs[1:]
    roots = np.roots(coeffs) if abs(coeffs[0]) > 0 else np.array([])
    out = []
    for r in roots:
        if abs(r.imag) > 1e-9 * max(1.0, abs(r.real)):
            continue
        t = r.real
        A, E = A0 + t * dA, E0 + t * dE
        s = A @ E / (E @ E)
        if -1e-9 <= s <= 1 + 1e-9:
            out.append(t)
    return sorted(out)


def dist_at(X, dX, t):
    t = np.atleast_1d(t)[:, None]
    P = X[None] + t[:, :, None] * dX[None]
    return point_segment_distance(P[:, 0], P[:, 1], P[:, 2])


def l_p(dX):
    """Relative-motion bound as in ccd.py: centred displacements,
    |dp| + max(|de0|, |de1|)."""
    c = dX - dX.mean(axis=0)
    n = np.linalg.norm(c, axis=1)
    return n[0] + max(n[1], n[2])


stencil = st.tuples(vec, vec, vec, dvec, dvec, dvec)


@settings(max_examples=300, deadline=None)
@given(st.lists(stencil, min_size=1, max_size=4))
def test_accd_never_crosses_and_is_not_needlessly_tiny(pairs):
    X = np.array([[p[0], p[1], p[2]] for p in pairs], float)
    dX = np.array([[p[3], p[4], p[5]] for p in pairs], float)
    for k in range(len(X)):
        E0, dE = X[k, 2] - X[k, 1], dX[k, 2] - dX[k, 1]
        # edge length stays >= 1e-3 along the motion (minimum of a quadratic)
        tt = np.clip(-(E0 @ dE) / max(dE @ dE, 1e-300), 0, 1)
        assume(min(np.linalg.norm(E0), np.linalg.norm(E0 + dE), np.linalg.norm(E0 + tt * dE)) > 1e-3)
        assume(point_segment_distance(*X[k]) > 1e-6)
        # ACCD advances by at least 0.9 eta d0 / l_p per iteration: with
        # d0 / l_p >= 1e-3 it reaches t_max within ~11,000 iterations, so the
        # cap below never cuts a step short (a pair sliding at a tiny gap
        # would, by design: the line search's exact CCD handles those)
        assume(point_segment_distance(*X[k]) >= 1e-3 * l_p(dX[k]))
    toi = ccd.accd_point_edge(X, dX, eta=ETA, t_max=1.0, max_iter=20000)
    assert toi.shape == (len(X),)
    for k in range(len(X)):
        t = toi[k]
        assert 0.0 < t <= 1.0
        roots = contact_times(X[k], dX[k])
        assume(roots is not None)
        # safety: no contact in [0, t]; the distance at t is still positive
        for r in roots:
            assert not (0.0 <= r <= t), f"contact at {r} inside the returned step {t}"
        d0 = point_segment_distance(*X[k])
        d_t = dist_at(X[k], dX[k], t)[0]
        assert d_t > 0
        # not needlessly tiny
        if t < 1.0:
            lp = l_p(dX[k])
            n = 20000
            ts = t + np.linspace(0.0, 1.0, n + 1)[1:] * (d_t / lp)
            sampled_min = dist_at(X[k], dX[k], ts).min()
            # sampling spacing d_t/(lp n) and Lipschitz constant lp bound the
            # sampling error by d_t / (2 n)
            assert sampled_min < ETA * d0 + d_t / (2 * n) + 1e-12, (
                f"step {t} stopped although the distance stays >= {sampled_min} > eta d0 = {ETA * d0}"
            )


def test_accd_simple_cases():
    X = np.array([[[0.5, 1.0], [0.0, 0.0], [1.0, 0.0]]] * 4)
    dX = np.zeros_like(X)
    dX[0, 0] = [0.0, -2.0]  # head-on: contact at t = 0.5
    dX[1, 0] = [0.0, +2.0]  # moving away: full step
    dX[2, 0] = [3.0, 0.0]  # parallel to the edge: never closer than 1
    dX[3] = [[0.0, -1.0]] * 3  # everything translates together
    toi = ccd.accd_point_edge(X, dX, eta=0.1)
    assert 0.5 * (1 - 0.1) * 0.999 <= toi[0] < 0.5
    assert toi[1] == 1.0 and toi[2] == 1.0 and toi[3] == 1.0
    touching = np.array([[[0.5, 0.0], [0.0, 0.0], [1.0, 0.0]]])
    assert ccd.accd_point_edge(touching, np.ones_like(touching))[0] == 0.0
    assert len(ccd.accd_point_edge(np.zeros((0, 3, 2)), np.zeros((0, 3, 2)))) == 0


# ------------------------------------------------------------------ half-planes


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(vec, dvec), min_size=1, max_size=6), st.floats(0, 2 * np.pi), st.floats(0.1, 2.0))
def test_half_plane_step_safe_and_maximal(pts, ang, t_max):
    normal = np.array([np.cos(ang), np.sin(ang)])
    x = np.array([p[0] for p in pts])
    dx = np.array([p[1] for p in pts])
    point = -1.5 * normal  # the plane passes 1.5 from the origin: points start on the free side
    d = (x - point) @ normal
    assume(np.all(d > 1e-6))
    P, N = np.tile(point, (len(x), 1)), np.tile(normal, (len(x), 1))
    t = ccd.half_plane_step(x, dx, P, N, eta=ETA, t_max=t_max)
    assert 0 < t <= t_max
    v = dx @ normal
    end = d + t * v  # linear: checking t suffices for [0, t]
    assert np.all(end >= ETA * d * (1 - 1e-9))
    if t < t_max:  # maximal: some point is exactly at its margin
        assert np.any(end <= ETA * d * (1 + 1e-9))


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.tuples(vec, dvec), min_size=1, max_size=6),
    st.lists(st.floats(0, 2 * np.pi), min_size=1, max_size=3),
)
def test_the_planes_grid_step_is_the_smallest_of_each_planes(pts, angles):
    """Simulation._ccd_step's form: distances and motions on the (points,
    planes) grid give each plane's half_plane_step, the smallest of them."""
    x = np.array([p[0] for p in pts])
    dx = np.array([p[1] for p in pts])
    normals = np.array([[np.cos(a), np.sin(a)] for a in angles])
    points = -1.5 * normals
    d = np.einsum("nhi,hi->nh", x[:, None, :] - points[None], normals)
    v = dx @ normals.T
    each = [
        ccd.half_plane_step(x, dx, np.tile(p, (len(x), 1)), np.tile(n, (len(x), 1)), eta=ETA)
        for p, n in zip(points, normals, strict=True)
    ]
    assert ccd.half_plane_step_at(d, v, eta=ETA) == pytest.approx(min(each), rel=1e-12)


# ------------------------------------------------------------------ inversion


def first_margin_time(x, dx, eta):
    """First t > 0 where the signed area reaches eta times its start value, per triangle."""
    a0, b0 = x[1] - x[0], x[2] - x[0]
    da, db = dx[1] - dx[0], dx[2] - dx[0]
    A0 = cross2(a0, b0)
    poly = [cross2(da, db), cross2(a0, db) + cross2(da, b0), (1 - eta) * A0]
    while len(poly) > 1 and abs(poly[0]) < 1e-15 * max(abs(c) for c in poly):
        poly = poly[1:]
    roots = [r.real for r in np.roots(poly) if abs(r.imag) <= 1e-12 * max(1, abs(r)) and r.real > 0]
    return min(roots, default=np.inf)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(vec, vec, vec, dvec, dvec, dvec), min_size=1, max_size=5), st.floats(0.1, 2.0))
def test_inversion_step_safe_and_maximal(tris_in, t_max):
    x = np.array([[a, b, c] for a, b, c, *_ in tris_in], float)
    dx = np.array([[d, e, f] for *_, d, e, f in tris_in], float)
    A0 = cross2(x[:, 1] - x[:, 0], x[:, 2] - x[:, 0])
    flip = A0 < 0  # make every triangle CCW
    x[flip] = x[flip][:, [0, 2, 1]]
    dx[flip] = dx[flip][:, [0, 2, 1]]
    A0 = np.abs(A0)
    assume(np.all(A0 > 1e-3))
    tris = np.arange(3 * len(x)).reshape(-1, 3)
    t = ccd.inversion_step(x.reshape(-1, 2), dx.reshape(-1, 2), tris, eta=ETA, t_max=t_max)
    expected = min(t_max, *(first_margin_time(x[k], dx[k], ETA) for k in range(len(x))))
    assert np.isclose(t, expected, rtol=1e-7, atol=1e-12)
    # safe: areas stay >= eta * A0 on [0, t] (dense sampling + the end point)
    ts = np.linspace(0, t, 2001)
    for k in range(len(x)):
        P = x[k][None] + ts[:, None, None] * dx[k][None]
        A = cross2(P[:, 1] - P[:, 0], P[:, 2] - P[:, 0])
        assert np.all(ETA * A0[k] * (1 - 1e-7) - 1e-12 <= A)


def test_inversion_step_no_motion_and_collapse():
    x = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    tris = np.array([[0, 1, 2]])
    assert ccd.inversion_step(x, np.zeros_like(x), tris) == 1.0
    dx = np.array([[0.0, 0.0], [0.0, 0.0], [0.0, -2.0]])  # apex moves through the base at t = 0.5
    assert np.isclose(ccd.inversion_step(x, dx, tris, eta=0.1), 0.45)
