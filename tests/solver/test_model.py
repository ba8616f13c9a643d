"""The flattened model (solver/model.py): where each body's and collider's vertices go, what they
carry (mass, friction, owner, prescribed motion), and which point-edge pairs may touch."""

import math
from dataclasses import replace

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from solver import Body, Collider, HalfPlane, Material, Pin, Scene, SimParams
from solver.model import build_model

# two unit squares side by side, split along a diagonal, counter-clockwise
SQUARE = np.array([[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0]])
TRIS = np.array([[0, 1, 2], [0, 2, 3]])


def _scene():
    left = Body(
        "left", SQUARE, TRIS, Material(density=2.0, mu=0.3, mu_static=0.5), pins=(Pin(np.array([3])),)
    )
    right = Body(
        "right", SQUARE + np.array([3.0, 0.0]), TRIS, Material(mu=0.2), velocity=np.array([1.0, 0.0])
    )
    lid = Collider.static("lid", [[-1.0, 3.0], [5.0, 3.0], [5.0, 4.0]], [[0, 1], [1, 2]], mu=0.1)
    return Scene(bodies=(left, right), colliders=(lid,), params=SimParams(dhat=0.01))


def test_bodies_then_colliders_in_one_vertex_array():
    m = build_model(_scene())
    assert m.names == ("left", "right", "lid")
    assert m.body_slices == (slice(0, 4), slice(4, 8)) and m.collider_slices == (slice(8, 11),)
    np.testing.assert_array_equal(m.rest[4:8], SQUARE + np.array([3.0, 0.0]))
    assert m.is_collider.tolist() == [False] * 8 + [True] * 3
    assert m.owner.tolist() == [0] * 4 + [1] * 4 + [2] * 3
    # lumped mass: each triangle (area 1/2) gives a third of its mass to each corner; colliders none
    np.testing.assert_allclose(m.mass[:4], 2.0 * np.array([2, 1, 2, 1]) / 6)
    assert not m.mass[8:].any()
    np.testing.assert_allclose(m.velocity[4:8], [[1.0, 0.0]] * 4)
    assert not m.velocity[:4].any()
    # friction coefficients per vertex; without its own static one a body's is its kinetic one
    np.testing.assert_allclose(m.mu, [0.3] * 4 + [0.2] * 4 + [0.1] * 3)
    np.testing.assert_allclose(m.mu_static, [0.5] * 4 + [0.2] * 4 + [0.1] * 3)
    # boundary edges renumbered into the model: 4 per square, the collider's 2 after them
    assert len(m.edges) == 10 and set(m.edges[8:].ravel().tolist()) == {8, 9, 10}
    assert m.elements is not None


def test_pins_and_colliders_are_kinematic_groups_in_model_ids():
    m = build_model(_scene())
    pin, lid = m.kin_groups
    assert pin.name == "left.pin0" and pin.vertices.tolist() == [3]
    np.testing.assert_array_equal(pin.target(7.0), [[0.0, 1.0]])  # a pin without a schedule stays
    assert lid.name == "lid" and lid.vertices.tolist() == [8, 9, 10]


def test_a_point_never_touches_its_own_edges_or_a_collider_its_own_kind():
    m = build_model(_scene())
    p = np.array([0, 1, 5, 8, 4])
    e0 = np.array([0, 4, 4, 9, 0])
    e1 = np.array([1, 5, 5, 10, 1])
    # own edge, another body's edge, own edge, collider against collider, another body's edge
    assert m.may_contact(p, e0, e1).tolist() == [False, True, False, False, True]


def _planes_below(scene, angles, gaps):
    """Half-planes of normal angle a, each gap below the scene's lowest rest vertex along its normal."""
    rest = np.vstack([b.vertices for b in scene.bodies])
    planes = []
    for k, (a, gap) in enumerate(zip(angles, gaps, strict=True)):
        n = np.array([math.cos(a), math.sin(a)])
        planes.append(HalfPlane(tuple((float((rest @ n).min()) - gap) * n), tuple(n), 0.3, f"p{k}"))
    return tuple(planes)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.floats(-math.pi, math.pi), st.floats(0.0, 2.0)), min_size=0, max_size=4),
    st.integers(0, 2**32 - 1),
    st.floats(-1.0, 4.0),
)
def test_plane_pairs_within_are_the_brute_force_pairs_in_vertex_order(planes, seed, dist):
    scene = _scene()
    angles, gaps = [p[0] for p in planes], [p[1] for p in planes]
    m = build_model(replace(scene, half_planes=_planes_below(scene, angles, gaps)))
    x = m.rest + np.random.default_rng(seed).normal(scale=1.0, size=m.rest.shape)
    # every (body vertex, plane) pair in turn, distances in plain floats; the
    # squares' vertices are all on their boundary, the collider's never count
    expected = []
    for i in range(sum(s.stop - s.start for s in m.body_slices)):
        for j, (p, n) in enumerate(zip(m.plane_point, m.plane_normal, strict=True)):
            d = (float(x[i, 0]) - float(p[0])) * float(n[0]) + (float(x[i, 1]) - float(p[1])) * float(n[1])
            expected.append((i, j, d))
    assert m.plane_distances(x).ravel().tolist() == [d for _, _, d in expected]
    pts, pl, d = m.plane_pairs_within(x, dist)
    assert list(zip(pts.tolist(), pl.tolist(), d.tolist(), strict=True)) == [
        e for e in expected if e[2] < dist
    ]


@settings(max_examples=30, deadline=None)
@given(
    st.integers(0, 2**32 - 1),
    st.floats(0.0, 0.5),
    st.floats(-0.5, 2.0),
    st.sampled_from([0.0, 0.1, 0.5]),
)
def test_plane_near_leaves_every_pair_of_rigid_bodies_on_the_basis_range(seed, strain, dist, eta):
    """Model.plane_near clears rigid bodies from their anchors: on B's range
    (x = B q, dx = B dq; turned, shifted, strained bodies) the pairs within
    dist and the half-plane CCD step are those of every vertex, to the bit."""
    from solver.ccd import half_plane_step_at

    rng = np.random.default_rng(seed)
    scene = _scene()
    rigid = [replace(b, kind="rigid", pins=()) for b in scene.bodies]
    soft = replace(scene.bodies[1], name="soft", vertices=SQUARE + np.array([6.0, 0.0]), pins=())
    bodies = (*rigid, soft)
    scene = replace(scene, bodies=bodies)
    planes = _planes_below(scene, rng.uniform(-math.pi, math.pi, 3), rng.uniform(0.0, 1.5, 3))
    m = build_model(replace(scene, half_planes=planes))
    basis = m.basis
    q = basis.coords(m.rest)
    dq = np.zeros_like(q)
    for k in range(basis.n_rigid):
        a = basis.a_dofs[k]
        turn = rng.uniform(-math.pi, math.pi)
        A = np.array([[math.cos(turn), -math.sin(turn)], [math.sin(turn), math.cos(turn)]])
        A = A @ (np.eye(2) + strain * rng.uniform(-1, 1, (2, 2)))
        q[a] = A.ravel()
        dq[a] = rng.normal(scale=0.3, size=4)
    for k in (0, 1):  # the shifts p: each body's third DOF per coordinate
        q[basis.a_dofs[:, 0] + 3 * k + 2] += rng.normal(scale=2.0, size=basis.n_rigid)
        dq[basis.a_dofs[:, 0] + 3 * k + 2] = rng.normal(scale=1.0, size=basis.n_rigid)
    x, dx = basis.expand(q), basis.expand(dq)
    full = m.plane_distances(x)
    want = m.plane_pairs_below(full, dist)
    for a, b in zip(m.plane_pairs_within(x, dist), want, strict=True):
        np.testing.assert_array_equal(a, b)
    near = m.plane_near(x, 0.0, dx, eta)
    step = half_plane_step_at(m.plane_distances(x, near), m.plane_motions(dx, near), eta)
    assert step == half_plane_step_at(full, m.plane_motions(dx), eta)
