"""point_edge_step (exact collinearity roots, ACCD fallback) against the exact
oracle of test_ccd.py: never lets the point touch the segment on [0, step],
and is not needlessly tiny: a pair that stays well apart gets the full step."""

import numpy as np
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from invariants import point_segment_distance
from test_ccd import contact_times, dist_at

from solver import ccd

ETA = 0.1
unit = st.floats(-1.0, 1.0, allow_nan=False)
scale = st.sampled_from([1e-6, 1e-3, 1.0, 3.0])
vec = st.tuples(unit, unit)
stencil = st.tuples(vec, vec, vec, vec, vec, vec, scale, st.booleans(), st.floats(0.0, 1.0))


def _pair(p):
    X = np.array(p[0:3], float)
    dX = np.array(p[3:6], float) * p[6]
    if p[7]:  # sliding: the point moves with the edge, slightly off it
        X[0] = X[1] + p[8] * (X[2] - X[1]) + 1e-7 * np.array(p[0])
        dX[1] = dX[2] = dX[0]
    return X, dX


@settings(max_examples=400, deadline=None)
@given(st.lists(stencil, min_size=1, max_size=4))
def test_exact_step_never_touches_and_is_not_needlessly_tiny(pairs):
    X = np.array([_pair(p)[0] for p in pairs])
    dX = np.array([_pair(p)[1] for p in pairs])
    for k in range(len(X)):
        assume(np.linalg.norm(X[k, 2] - X[k, 1]) > 1e-3)
        assume(np.linalg.norm(X[k, 2] + dX[k, 2] - X[k, 1] - dX[k, 1]) > 1e-3)
        assume(point_segment_distance(*X[k]) > 1e-9)
    step = ccd.point_edge_step(X, dX, eta=ETA, t_max=1.0)
    assert step.shape == (len(X),)
    assert np.all((step >= 0.0) & (step <= 1.0))
    for k in range(len(X)):
        times = contact_times(X[k], dX[k])
        if times is not None:
            assert not any(0.0 <= t <= step[k] for t in times), (X[k], dX[k], times, step[k])
        # distance stays positive up to the step (dense check)
        ts = np.linspace(0.0, step[k], 64)
        assert np.all(dist_at(X[k], dX[k], ts) > 0.0)
        # a pair that stays well apart over the whole motion keeps the full step
        d0 = point_segment_distance(*X[k])
        if dist_at(X[k], dX[k], np.linspace(0.0, 1.0, 2001)).min() > 0.5 * d0 and (
            times is None or not times
        ):
            assert step[k] == 1.0


def test_crushed_pair_falls_back_to_a_capped_but_safe_accd(monkeypatch):
    """A pair 1e-9 apart (|c0| below rounding) goes to ACCD, which advances by
    ~d / l_p per iteration: the fallback's iteration cap bounds the cost, and
    what it returns is still collision-free."""
    X = np.array([[[0.3, 1e-9], [0.0, 0.0], [1.0, 0.0]]])
    dX = np.array([[[0.2, -0.05], [0.0, 0.0], [0.0, 0.0]]])  # sliding and pressing in
    calls = []
    real = ccd.accd_point_edge
    monkeypatch.setattr(
        ccd, "accd_point_edge", lambda *a, **k: calls.append(k.get("max_iter")) or real(*a, **k)
    )
    t = ccd.point_edge_step(X, dX)
    assert calls == [ccd.ACCD_FALLBACK_ITERS]
    assert 0.0 < t[0] < 1e-6
    roots = contact_times(X[0], dX[0])
    assert all(r > t[0] for r in roots if r >= 0.0)
    assert dist_at(X[0], dX[0], t[0])[0] > 0.0


def test_collinear_pairs_get_the_exact_end_point_step():
    """Point, edge and motion on one line (the collinearity quadratic vanishes
    identically): the distance is to the nearer end point.  Found by the
    property test above: a pair 1.2e-7 beyond e0 whose far end moves got a
    step of 0.1 from ACCD although it never comes closer."""
    X = np.array([[[0.0, 1.192092896e-07], [0.0, 0.0], [0.0, -1.0]], [[0.0, 0.5], [0.0, 0.0], [0.0, -1.0]]])
    dX = np.array(
        [
            [[0.0, 0.0], [0.0, 0.0], [0.0, 0.001]],  # only the far end moves
            [[0.0, -1.0], [0.0, 0.0], [0.0, 0.0]],
        ]
    )  # head-on at 1 m per step
    step = ccd.point_edge_step(X, dX, eta=ETA)
    assert step[0] == 1.0
    # the gap 0.5 - t reaches eta * 0.5 = 0.05 at t = 0.45
    assert abs(step[1] - 0.45) < 1e-6 and dist_at(X[1], dX[1], step[1])[0] >= ETA * 0.5 * (1 - 1e-6)
