"""Closed-form PSD projection of the point-edge barrier Hessians
(solver/barrier_psd.py) against the eigen-decomposition clamp, on
hypothesis-generated stencils in every distance case: the projected matrix
is PSD, equals eigh's clamp to 1e-10 relative, and the recorded deficit is
what the projection added."""

import numpy as np
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from solver import barrier
from solver.barrier_psd import pe_projection_deficit
from solver.distance import PP0, distance_sq, distance_sq_derivatives_closest, point_edge_case

DHAT = 0.01


def eigh_clamp(H):
    """Independent reference: V max(w, 0) V^T of each symmetric H (n, 6, 6)."""
    w, V = np.linalg.eigh(0.5 * (H + np.swapaxes(H, 1, 2)))
    return np.einsum("nij,nj,nkj->nik", V, np.maximum(w, 0.0), V)


@st.composite
def stencils(draw):
    """(X (1, 3, 2), case (1,), coef (1,)): a point within DHAT of an edge
    (any scale and direction, past either end too), or a convergent
    point-point duplicate [p, v, v] (case forced to PP0)."""
    angle = draw(st.floats(0.0, 2.0 * np.pi))
    length = draw(st.floats(1e-3, 10.0))
    t = draw(st.floats(-0.3, 1.3))
    gap = draw(st.floats(1e-6, 0.999)) * DHAT
    side = draw(st.sampled_from([1.0, -1.0]))
    origin = np.array([draw(st.floats(-5.0, 5.0)), draw(st.floats(-5.0, 5.0))])
    along = np.array([np.cos(angle), np.sin(angle)])
    normal = side * np.array([-along[1], along[0]])
    e0, e1 = origin, origin + length * along
    if t <= 0.0 or t >= 1.0:  # past an end: at distance gap from it, in any direction
        end = e0 if t <= 0.0 else e1
        turn = draw(st.floats(0.0, 2.0 * np.pi))
        p = end + gap * np.array([np.cos(turn), np.sin(turn)])
    else:
        p = e0 + t * (e1 - e0) + gap * normal
    duplicate = draw(st.booleans()) and draw(st.booleans())
    if duplicate:
        X = np.array([[p, e0, e0]])
        case = np.array([PP0], np.int8)
    else:
        X = np.array([[p, e0, e1]])
        case = point_edge_case(X)
    coef = draw(st.floats(0.1, 5.0)) * (-1.0 if draw(st.booleans()) else 1.0)
    # (a point past an end may land on the edge's line, inside it: no barrier there)
    assume(distance_sq(X, case)[0] > (1e-6 * DHAT) ** 2)
    return X, case, np.array([coef])


def parts(X, case, coef):
    inv = 1.0 / (DHAT * DHAT)
    d2, _, _, closest = distance_sq_derivatives_closest(X, case)
    b1, b2 = barrier.barrier_d1_d2(d2 * inv)
    return closest, coef * b1 * inv, coef * b2 * inv * inv, d2


@settings(max_examples=400, deadline=None)
@given(stencils())
def test_projection_is_the_eigen_clamp(stencil):
    X, case, coef = stencil
    H = barrier.pe_hessian(X, case, coef, DHAT, project=False)
    deficit = []
    _, P = barrier.pe_gradient_hessian(X, case, coef, DHAT, project=True, deficit=deficit)
    scale = np.abs(H).max()
    ref = eigh_clamp(H)
    assert np.abs(P - ref).max() <= 1e-10 * scale
    assert np.abs(P - np.swapaxes(P, 1, 2)).max() <= 1e-12 * scale
    assert np.linalg.eigvalsh(P[0]).min() >= -1e-10 * scale
    # the deficit: what the projection added, recorded once for this stencil when nonzero
    added = np.zeros_like(H)
    for which, N in deficit:
        added[which] += N
    assert np.abs(added - (ref - H)).max() <= 1e-10 * scale


@settings(max_examples=300, deadline=None)
@given(stencils())
def test_barrier_stencils_take_the_closed_form(stencil):
    """A barrier term (coef > 0) and a subtracted duplicate (coef < 0, point-point)
    never need the eigensolver; only a point-line term of negative coefficient may."""
    X, case, coef = stencil
    closest, c1, c2, d2 = parts(X, case, coef)
    H = barrier.pe_hessian(X, case, coef, DHAT, project=False)
    _, closed = pe_projection_deficit(H, closest, c1, c2, d2)
    line = closest[3]
    assert closed[0] or (line[0] and coef[0] < 0.0)


def test_projection_batched_matches_one_by_one_and_mixes_cases():
    """A batch mixing all cases and both signs: the same projection as each
    stencil alone (no cross-talk between the batch's masks), the eigen clamp."""
    rng = np.random.default_rng(5)
    X, case, coef = [], [], []
    for _ in range(300):
        n_case = None
        while n_case is None:
            e0 = rng.uniform(-1, 1, 2)
            e1 = e0 + rng.uniform(0.05, 1.0) * np.array([1.0, rng.uniform(-1, 1)])
            p = e0 + rng.uniform(-0.2, 1.2) * (e1 - e0) + rng.uniform(-DHAT, DHAT, 2)
            Z = np.array([[p, e0, e1]])
            n_case = point_edge_case(Z)
            if np.sum((p - e0) ** 2) >= DHAT * DHAT and n_case[0] == PP0:
                n_case = None
        X.append(Z[0])
        case.append(n_case[0])
        coef.append(rng.uniform(0.1, 3.0) * rng.choice([1.0, -1.0]))
    X, case, coef = np.array(X), np.array(case, np.int8), np.array(coef)
    assert set(case.tolist()) == {0, 1, 2}
    H = barrier.pe_hessian(X, case, coef, DHAT, project=False)
    P = barrier.pe_hessian(X, case, coef, DHAT, project=True)
    ref = eigh_clamp(H)
    scale = np.abs(H).max(axis=(1, 2))[:, None, None]
    assert np.all(np.abs(P - ref) <= 1e-10 * scale)
    for k in range(0, len(X), 37):
        alone = barrier.pe_hessian(X[k : k + 1], case[k : k + 1], coef[k : k + 1], DHAT, project=True)
        assert np.abs(alone[0] - P[k]).max() <= 1e-12 * scale[k, 0, 0]


def test_outside_dhat_adds_nothing():
    X = np.array([[[0.5, 2.0 * DHAT], [0.0, 0.0], [1.0, 0.0]], [[-2.0 * DHAT, 0.0], [0.0, 0.0], [1.0, 0.0]]])
    case = point_edge_case(X)
    closest, c1, c2, d2 = parts(X, case, np.ones(2))
    H = barrier.pe_hessian(X, case, np.ones(2), DHAT, project=False)
    N, closed = pe_projection_deficit(H, closest, c1, c2, d2)
    assert closed.all() and not N.any()
