"""point_edge_step (exact capsule entry, ACCD as a safety net) against
independent oracles: the exact contact roots of test_ccd.py and the
point-segment distance of invariants.py.

The step is the first time the distance falls to eta d0 (the margin ACCD
keeps): safe, since the distance stays at least eta d0 on [0, step], and
tight, since at a step below t_max the distance has come down to eta d0
(within twice the closed-form path's CHORD_SLACK).  In particular a pair sliding
at a tiny gap gets the whole step instead of a crawl."""

import numpy as np
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st
from invariants import point_segment_distance
from test_ccd import contact_times, dist_at

from solver import ccd

ETA = 0.1
unit = st.floats(-1.0, 1.0, allow_nan=False)
scale = st.sampled_from([1e-6, 1e-3, 1.0, 3.0])
gap = st.sampled_from([1e-10, 1e-7, 1e-4])
vec = st.tuples(unit, unit)
stencil = st.tuples(vec, vec, vec, vec, vec, vec, scale, st.booleans(), st.floats(0.0, 1.0), gap)

# Issue 10: point (0, 0), edge (0, 1.19e-7) -> (1, 0), only the far end moving
# up.  The point stays 1.19e-7 from e0 throughout, yet the old exact path sent
# the pair to ACCD and got 0.02.
TINY_GAP_PIVOT = ((0.0, 0.0), (0.0, 1.192092896e-07), (1.0, 0.0), (0.0, 0.0), (0.0, 0.0), (0.0, 1.0), 1e-3)
# The same edge turning a quarter of a right angle per step: the exact-quartic path.
TURNING_EDGE = ((0.3, 0.05), (0.0, 0.0), (1.0, 0.0), (0.0, 0.0), (0.0, 0.0), (0.0, 1.0), 0.5)


# Found by the property test: e0 passes 2e-98 beside e1, so the edge shrinks
# to a point at t = 4/9 and its direction flips; the strip condition then has
# a root where the point is 2 away (the root is checked against the distance).
COLLAPSING_EDGE = (
    (0.0, 1.0),
    (2.127331561937363e-98, 0.0),
    (0.0, -1.0),
    (0.0, 0.0),
    (0.0, -0.75),
    (0.0, 0.0),
    3.0,
)


# Found by the property test: the point passes e0 at 1e-9 (d0 = 1.4e-9, edge of
# length 1) and crosses the edge's line 1e-9 beyond its end: a collinearity root
# with the segment parameter at -1e-9, inside the oracle's window, yet no contact
# (the whole step is safe).
PASSING_END = ((1e-09, 0.0), (0.0, 1e-09), (0.0, 1.0), (0.0, -1.0), (1.0, -1.0), (0.0, 0.0), 1e-06)


# Found by the property test: the point sits 2e-5 beyond the end e1, which moves
# with it while the edge shrinks to a point at t = 1/3 and turns over; then e0
# is the near end and the point runs into it.  The time the gap reaches eta d0
# (|A|^2 = r^2) came 2e-11 late from b^2 - 4ac, which cancels at r << |A|.
PAST_SHRINKING_END = ((2e-05, 0.0), (-1.0, 0.0), (0.0, 0.0), (-1.0, 0.0), (0.0, 0.0), (-1.0, 0.0), 3.0)


def _pair(p):
    X = np.array(p[0:3], float)
    dX = np.array(p[3:6], float) * p[6]
    if len(p) > 7 and p[7]:  # sliding: the point moves with the edge, p[9] off it
        X[0] = X[1] + p[8] * (X[2] - X[1]) + p[9] * np.array(p[0])
        dX[1] = dX[2] = dX[0]
    return X, dX


def _check_safe_and_tight(X, dX, step, t_max=1.0):
    """The distance stays >= eta d0 on [0, step] (exact contact roots, dense
    sampling) and, when step < t_max, has come down to eta d0 at the step."""
    d0 = point_segment_distance(*X)
    r = ETA * d0
    slack = 1e-6 * r + 1e-14  # rounding of the distance at unit-size coordinates
    times = contact_times(X, dX)
    if times is not None:
        # a root of the collinearity condition is a contact when the point is on the
        # segment; the oracle's window on the segment parameter (1e-9 of the edge)
        # also admits a point passing an end point at a gap of that size (PASSING_END)
        hits = [t for t in times if 0.0 <= t <= step and dist_at(X, dX, t)[0] < r - slack]
        assert not hits, (X, dX, times, step)
    ts = np.linspace(0.0, step, 257)
    assert dist_at(X, dX, ts).min() >= r - slack, (X, dX, step)
    if step < t_max:
        reached = dist_at(X, dX, step)[0]
        assert reached <= (1.0 + 2.0 * ccd.CHORD_SLACK) * r + slack, (X, dX, step, reached / r)


@settings(max_examples=400, deadline=None)
@given(st.lists(stencil, min_size=1, max_size=4))
@example([(*TINY_GAP_PIVOT, False, 0.0, 1e-7)])
@example([(*TURNING_EDGE, False, 0.0, 1e-7)])
@example([(*COLLAPSING_EDGE, False, 0.0, 1e-7)])
@example([(*PASSING_END, False, 0.0, 1e-10)])
@example([(*PAST_SHRINKING_END, False, 0.0, 1e-10)])
def test_step_is_safe_and_tight(pairs):
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
        _check_safe_and_tight(X[k], dX[k], step[k])


def test_tiny_gap_pivot_gets_the_whole_step():
    X, dX = _pair(TINY_GAP_PIVOT)
    assert ccd.point_edge_step(X[None], dX[None], eta=ETA)[0] == 1.0


def test_turning_edge_takes_the_exact_path_and_is_tight():
    """The edge turns by ~27 degrees: the chord bound would be too loose, so the
    quartic is solved; the step is where the distance reaches eta d0."""
    X, dX = _pair(TURNING_EDGE)
    assert not ccd._Pair(X[None], dX[None]).chord_is_tight(1.0)[0]
    step = ccd.point_edge_step(X[None], dX[None], eta=ETA)[0]
    assert step < 1.0
    _check_safe_and_tight(X, dX, step)
    assert dist_at(X, dX, step)[0] >= ETA * point_segment_distance(*X) * (1 - 1e-9)


def test_sliding_at_a_tiny_gap_gets_the_whole_step():
    """Issue 11: a point sliding 1.6 cm along an edge at a 2.6e-10 m gap got a
    step of 2.9e-6 from ACCD; it never comes closer, so the step is 1."""
    X = np.array([[[0.2, 2.6e-10], [0.0, 0.0], [0.5, 0.0]]])
    dX = np.array([[[0.016, 0.0], [0.0, 0.0], [0.0, 0.0]]])
    assert ccd.point_edge_step(X, dX, eta=ETA)[0] == 1.0
    # pressing in by 1e-10 while sliding: the gap reaches eta d0 = 2.6e-11 at
    # t = (2.6e-10 - 2.6e-11) / 1e-10 > 1, so the whole step still
    dX[0, 0, 1] = -1e-10
    assert ccd.point_edge_step(X, dX, eta=ETA)[0] == 1.0
    dX[0, 0, 1] = -1e-9  # ... and by 1e-9: the margin is reached at t = 0.234
    step = ccd.point_edge_step(X, dX, eta=ETA)[0]
    assert abs(step - 0.234) < 1e-6
    _check_safe_and_tight(X[0], dX[0], step)


def test_crushed_pair_gets_the_exact_step(monkeypatch):
    """A pair 1e-9 apart, sliding and pressing in (ACCD needed hundreds of
    iterations for it): the margin eta d0 = 1e-10 is reached when the gap
    1e-9 - 0.05 t has lost 9e-10, at t = 1.8e-8, with no ACCD call."""
    X = np.array([[[0.3, 1e-9], [0.0, 0.0], [1.0, 0.0]]])
    dX = np.array([[[0.2, -0.05], [0.0, 0.0], [0.0, 0.0]]])
    calls = []
    monkeypatch.setattr(ccd, "accd_point_edge", lambda *a, **k: calls.append(1))
    t = ccd.point_edge_step(X, dX)
    assert calls == []
    assert abs(t[0] - 1.8e-8) < 1e-6 * 1.8e-8
    _check_safe_and_tight(X[0], dX[0], t[0])


def test_a_wrong_exact_answer_goes_to_a_capped_accd(monkeypatch):
    """The safety net: an exact step that leaves less than half the margin
    (rounding at gaps far below the motion) is replaced by ACCD's, capped."""
    X = np.array([[[0.5, 0.1], [0.0, 0.0], [1.0, 0.0]], [[0.5, 1.0], [0.0, 0.0], [1.0, 0.0]]])
    dX = np.array([[[0.0, -0.2], [0.0, 0.0], [0.0, 0.0]], [[0.0, -0.2], [0.0, 0.0], [0.0, 0.0]]])
    monkeypatch.setattr(ccd, "_first_within", lambda P, t, radius: np.full(len(t), np.inf))
    calls = []
    real = ccd.accd_point_edge
    monkeypatch.setattr(
        ccd, "accd_point_edge", lambda *a, **k: calls.append((len(a[0]), k.get("max_iter"))) or real(*a, **k)
    )
    step = ccd.point_edge_step(X, dX, eta=ETA)
    assert calls == [(1, ccd.ACCD_FALLBACK_ITERS)]  # only the pair that would pass through
    assert step[1] == 1.0 and 0.0 < step[0] < 0.5
    assert dist_at(X[0], dX[0], step[0])[0] >= ETA * 0.1 * (1 - 1e-9)


def test_collinear_pairs_get_the_exact_end_point_step():
    """Point, edge and motion on one line (the collinearity quadratic vanishes
    identically): the distance is to the nearer end point."""
    X = np.array([[[0.0, 1.192092896e-07], [0.0, 0.0], [0.0, -1.0]], [[0.0, 0.5], [0.0, 0.0], [0.0, -1.0]]])
    dX = np.array(
        [
            [[0.0, 0.0], [0.0, 0.0], [0.0, 0.001]],  # only the far end moves
            [[0.0, -1.0], [0.0, 0.0], [0.0, 0.0]],  # head-on at 1 m per step
        ]
    )
    step = ccd.point_edge_step(X, dX, eta=ETA)
    assert step[0] == 1.0
    # the gap 0.5 - t reaches eta * 0.5 = 0.05 at t = 0.45
    assert abs(step[1] - 0.45) < 1e-9
    _check_safe_and_tight(X[1], dX[1], step[1])


def test_touching_pair_gets_zero_and_empty_input():
    X = np.array([[[0.5, 0.0], [0.0, 0.0], [1.0, 0.0]]])
    assert ccd.point_edge_step(X, np.ones_like(X))[0] == 0.0
    assert ccd.point_edge_step(np.zeros((0, 3, 2)), np.zeros((0, 3, 2))).shape == (0,)
