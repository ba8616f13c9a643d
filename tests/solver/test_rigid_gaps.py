"""The broad phase's rigid-body culling (solver/rigid_gaps.py): the pairs it skips are
never within pad over the motion, never limit a CCD step and never cross; the pairs it
returns are every pair of a brute-force check within pad, in the full search's order."""

from dataclasses import replace

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from solver import ccd
from solver.broad_phase import candidates, edge_boxes, point_boxes
from solver.distance import case_and_distance_sq
from solver.examples import pile
from solver.model import build_model
from solver.rigid_gaps import RigidGaps, singular_values

GAP_KEPT = 0.3
DHAT = 0.01


def rigid_model():
    scene = pile(n_shapes=4, n_columns=2, n_seg=4, n_rings=2, n_boundary=16, size=0.2)
    scene = replace(scene, bodies=tuple(replace(b, kind="rigid") for b in scene.bodies))
    return build_model(scene)


MODEL = rigid_model()


def affine_positions(model, maps, shifts):
    """(N, 2) positions with rigid body r at maps[r] (R, 2, 2) X + shifts[r] (R, 2)
    (X: rest positions about the body's rest centroid), colliders at rest."""
    basis = model.basis
    q = np.zeros(basis.n_q)
    q[basis.a_dofs] = maps.reshape(-1, 4)
    plain = ~basis.rigid_dof
    q[basis.slots[plain, 0]] = model.rest.ravel()[plain]
    for r in range(basis.n_rigid):
        v = np.flatnonzero(basis.vertex_body == r)[0]
        q[basis.slots[2 * v, 2]], q[basis.slots[2 * v + 1, 2]] = shifts[r]
    return basis.expand(q)


def random_maps(rng, n, stretch):
    """(n, 2, 2) rotations times a stretch by up to the factor `stretch` along a random axis."""
    turn, axis = rng.uniform(-np.pi, np.pi, n), rng.uniform(-np.pi, np.pi, n)
    s = 1.0 + (stretch - 1.0) * rng.uniform(0, 1, n)

    def rot(a):
        c, d = np.cos(a), np.sin(a)
        return np.stack([np.stack([c, -d], -1), np.stack([d, c], -1)], -2)

    scale = np.zeros((n, 2, 2))
    scale[:, 0, 0], scale[:, 1, 1] = s, 1.0
    return rot(turn) @ rot(axis) @ scale @ rot(-axis)


def eligible_pairs(model):
    """Every (point, edge) index pair of the model that may contact, (k, 2)."""
    pi, ei = np.meshgrid(np.arange(len(model.points)), np.arange(len(model.edges)), indexing="ij")
    pi, ei = pi.ravel(), ei.ravel()
    e = model.edges[ei]
    ok = model.may_contact(model.points[pi], e[:, 0], e[:, 1])
    return pi[ok], ei[ok]


ELIGIBLE = eligible_pairs(MODEL)


@settings(max_examples=40, deadline=None)
@given(
    st.integers(0, 2**32 - 1),
    st.sampled_from([1.0, 1.05, 0.5, 0.15]),  # stretch of the start: none, small, crushed
    st.sampled_from([0.0, 0.02, 0.3, 1.5]),  # how far A moves over the motion
    st.sampled_from([0.0, DHAT, 3 * DHAT]),
)
def test_the_culled_search_keeps_every_pair_that_comes_within_pad_or_limits_ccd(seed, stretch, turn, pad):
    m, rng = MODEL, np.random.default_rng(seed)
    n = m.basis.n_rigid
    a0 = random_maps(rng, n, stretch)
    a1 = a0 + turn * rng.normal(size=(n, 2, 2)) / 2.0
    p0 = rng.uniform(-0.2, 0.2, (n, 2)) + 0.3 * np.arange(n)[:, None]
    p1 = p0 + rng.normal(scale=0.05, size=(n, 2))
    x0, x1 = affine_positions(m, a0, p0), affine_positions(m, a1, p1)
    np.testing.assert_allclose(m.basis.affine(x0), a0, atol=1e-12)

    gaps = RigidGaps(m, 3 * DHAT, GAP_KEPT)
    groups = gaps.groups(x0, x1, pad)
    plo, phi = point_boxes(x0[m.points], x1[m.points], pad)
    elo, ehi = edge_boxes(x0, x1, m.edges)
    got = candidates(plo, phi, elo, ehi, groups=groups)
    full = candidates(plo, phi, elo, ehi)
    # the full search's pairs but those within an apart group, in its order
    keep = groups.keep(*full)
    for a, b in zip(got, (full[0][keep], full[1][keep]), strict=True):
        np.testing.assert_array_equal(a, b)

    # brute force: every eligible pair whose distance comes within pad on the motion is found
    pi, ei = ELIGIBLE
    stencils = np.column_stack([m.points[pi], m.edges[ei]])
    found = set(zip(*got, strict=True))
    near = np.zeros(len(pi), bool)
    for t in np.linspace(0.0, 1.0, 41):
        x = (1.0 - t) * x0 + t * x1
        near |= case_and_distance_sq(x[stencils])[1] <= pad * pad
    assert {(i, j) for i, j in zip(pi[near], ei[near], strict=True)} <= found

    # the eligible pairs the culling skipped (boxes overlapping) cannot limit a CCD step nor cross
    sp, se = full[0][~keep], full[1][~keep]
    e = m.edges[se]
    ok = m.may_contact(m.points[sp], e[:, 0], e[:, 1])
    st_skip = np.column_stack([m.points[sp[ok]], e[ok]])
    assert np.all(m.owner[st_skip[:, 0]] == m.owner[st_skip[:, 1]])  # only a body's own pairs
    X, dX = x0[st_skip], (x1 - x0)[st_skip]
    assert np.all(ccd.point_edge_step(X, dX, eta=GAP_KEPT) == 1.0)
    assert not ccd.point_edge_crossings(X, dX).any()


def test_a_crushed_or_fast_turning_body_keeps_its_own_pairs():
    m = MODEL
    n = m.basis.n_rigid
    gaps = RigidGaps(m, DHAT, GAP_KEPT)
    rest = np.tile(np.eye(2), (n, 1, 1))
    shifts = np.column_stack([0.5 * np.arange(n), np.zeros(n)])  # side by side, apart
    x = affine_positions(m, rest, shifts)
    assert gaps.rigid_apart(x, x, DHAT).all()  # at rest, standing still: apart
    plo, phi = point_boxes(x[m.points], x[m.points], 3 * DHAT)
    elo, ehi = edge_boxes(x, x, m.edges)
    culled = candidates(plo, phi, elo, ehi, groups=gaps.groups(x, x, DHAT))[0]
    assert len(culled) < 0.1 * len(candidates(plo, phi, elo, ehi)[0])  # the own pairs are most
    crushed = rest.copy()
    crushed[0, 1, 1] = 0.2  # a fifth of its height
    assert list(gaps.rigid_apart(affine_positions(m, crushed, shifts), x, DHAT)) == [False] + [True] * (n - 1)
    turned = rest.copy()
    turned[1] = [[0.0, -1.0], [1.0, 0.0]]  # a quarter turn in one step: A moves by 2 (Frobenius)
    assert list(gaps.rigid_apart(x, affine_positions(m, turned, shifts), DHAT)) == [True, False] + [True] * (
        n - 2
    )


def test_singular_values_match_numpy():
    rng = np.random.default_rng(3)
    a = rng.normal(size=(50, 2, 2))
    a[0] = [[1.0, 2.0], [2.0, 4.0]]  # singular
    a[1] = 0.0
    s_min, s_max = singular_values(a)
    want = np.linalg.svd(a, compute_uv=False)
    np.testing.assert_allclose(s_max, want[:, 0], atol=1e-12)
    np.testing.assert_allclose(s_min, want[:, 1], atol=1e-12)


def test_rest_gaps_are_the_smallest_own_distance_that_may_contact():
    m = MODEL
    gaps = RigidGaps(m, 10.0, GAP_KEPT).min_gap  # large enough to see every pair
    pi, ei = ELIGIBLE
    st_ = np.column_stack([m.points[pi], m.edges[ei]])
    own = m.owner[st_[:, 0]] == m.owner[st_[:, 1]]
    d = np.sqrt(case_and_distance_sq(m.rest[st_[own]])[1])
    want = np.full(m.basis.n_rigid, np.inf)
    np.minimum.at(want, m.basis.vertex_body[st_[own, 0]], d)
    np.testing.assert_allclose(gaps, want)
