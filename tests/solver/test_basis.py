"""The rigid bodies' basis x = B q (solver/basis.py) against its dense
matrix, and the body kind in scenes (validation, JSON)."""

from dataclasses import replace

import numpy as np
import pytest
from invariants import contact_scene

from solver.assembly import Triplets
from solver.errors import SolverInputError
from solver.io.scene_io import scene_from_dict, scene_to_dict
from solver.model import build_model
from solver.scene import Pin


def mixed_model():
    scene = contact_scene()
    A, B = scene.bodies
    return build_model(replace(scene, bodies=(replace(A, kind="rigid"), B)))


def dense_basis(basis, n_x):
    """B (2N, n_q) column by column through expand."""
    return np.column_stack([basis.expand(e).ravel() for e in np.eye(basis.n_q)])


def test_a_scene_without_rigid_bodies_has_no_basis():
    m = build_model(contact_scene())
    assert m.basis is None
    assert m.elastic_elements is m.elements


def test_rigid_vertices_follow_one_affine_map():
    m = mixed_model()
    b = m.basis
    assert b.n_q == 2 * (m.n - len(m.rest[m.body_slices[0]])) + 6
    rng = np.random.default_rng(0)
    q = rng.normal(size=b.n_q)
    x = b.expand(q)
    A = np.array([[q[b.a_dofs[0, 0]], q[b.a_dofs[0, 1]]], [q[b.a_dofs[0, 2]], q[b.a_dofs[0, 3]]]])
    s = m.body_slices[0]
    X = m.rest[s] - m.rest[s].mean(axis=0)
    p = x[s] - X @ A.T
    np.testing.assert_allclose(p, np.broadcast_to(p[0], p.shape), atol=1e-12)
    np.testing.assert_allclose(b.coords(x), q, atol=1e-12)  # coords inverts expand on B's range
    np.testing.assert_allclose(b.affine(x)[0], A, atol=1e-12)


def test_reductions_are_the_transpose_products_of_the_dense_basis():
    m = mixed_model()
    b = m.basis
    Bd = dense_basis(b, 2 * m.n)
    rng = np.random.default_rng(1)
    g = rng.normal(size=2 * m.n)
    np.testing.assert_allclose(b.reduce_gradient(g), Bd.T @ g, atol=1e-12)
    k = 400
    rows, cols = rng.integers(0, 2 * m.n, k), rng.integers(0, 2 * m.n, k)
    vals = rng.normal(size=k)
    H = np.zeros((2 * m.n, 2 * m.n))
    np.add.at(H, (rows, cols), vals)
    r, c, v = b.reduce_triplets(rows, cols, vals)
    Hq = np.zeros((b.n_q, b.n_q))
    np.add.at(Hq, (r, c), v)
    np.testing.assert_allclose(Hq, Bd.T @ H @ Bd, atol=1e-12)


def test_the_reduced_hessian_of_stencil_blocks_is_the_transpose_product():
    """Stencils on the rigid body, on the deformable one, across both and
    repeated (shared vertex pairs), plus loose entries: B^T H B."""
    m = mixed_model()
    b = m.basis
    Bd = dense_basis(b, 2 * m.n)
    rng = np.random.default_rng(2)
    rigid = np.flatnonzero(b.vertex_body >= 0)
    plain = np.flatnonzero(b.vertex_body < 0)
    T = Triplets(2 * m.n)
    every = np.arange(m.n)  # blocks whose stencils touch the rigid body or not
    blocks = ((3, (rigid, rigid, rigid)), (3, (plain, rigid, rigid)), (1, (plain,)), (2, (every, every)))
    for k, picks in blocks:
        idx = np.column_stack([rng.choice(p, 30) for p in picks])
        idx = np.concatenate([idx, idx[:10]])  # repeated stencils: shared vertex pairs
        T.add_stencils(idx, np.zeros((len(idx), 2 * k)), rng.normal(size=(len(idx), 2 * k, 2 * k)))
    rows, cols = rng.integers(0, 2 * m.n, 50), rng.integers(0, 2 * m.n, 50)
    T.add_pattern(rows, cols, rng.normal(size=50))
    H = np.zeros((2 * m.n, 2 * m.n))
    np.add.at(H, T.arrays()[:2], T.arrays()[2])
    r, c, v = b.reduce_system(T)
    Hq = np.zeros((b.n_q, b.n_q))
    np.add.at(Hq, (r, c), v)
    np.testing.assert_allclose(Hq, Bd.T @ H @ Bd, atol=1e-12)


def fixed_system_triplets(b, m, rng, elastic=None):
    """(T, fixed): stencil blocks on free plain vertices, across plain and
    rigid ones (some of them fixed), loose entries, a dense diagonal, and
    optionally a block of the plain pattern ``elastic`` (rows, cols, dofs);
    fixed: three plain vertices' x DOFs."""
    rigid = np.flatnonzero(b.vertex_body >= 0)
    plain = np.flatnonzero(b.vertex_body < 0)
    fixed_vertices, free = plain[:3], plain[3:]
    T = Triplets(2 * m.n)
    if elastic is not None:
        T.add_pattern(elastic[0], elastic[1], rng.normal(size=len(elastic[0])), elastic[2])
    for k, picks in ((3, (free, free, free)), (3, (plain, rigid, rigid)), (2, (plain, plain)), (1, (free,))):
        idx = np.column_stack([rng.choice(p, 30) for p in picks])
        T.add_stencils(idx, np.zeros((len(idx), 2 * k)), rng.normal(size=(len(idx), 2 * k, 2 * k)))
    T.add_pattern(rng.integers(0, 2 * m.n, 50), rng.integers(0, 2 * m.n, 50), rng.normal(size=50))
    T.add_dense_diagonal(rng.normal(size=2 * m.n))
    fixed = np.zeros(2 * m.n, bool)
    fixed[2 * fixed_vertices] = True
    return T, fixed


def test_the_reduced_system_with_fixed_dofs_is_the_transpose_product():
    """With fixed DOFs: B^T H' B, H' the Hessian with their rows and columns
    made the identity (Triplets.system), and no other nonzero entry on them
    (the stencils reduced per vertex pair drop theirs)."""
    m = mixed_model()
    b = m.basis
    Bd = dense_basis(b, 2 * m.n)
    T, fixed = fixed_system_triplets(b, m, np.random.default_rng(4))
    H = np.zeros((2 * m.n, 2 * m.n))
    rows, cols, vals = T.system(fixed)
    np.add.at(H, (rows, cols), vals)
    r, c, v = b.reduce_system(T, fixed)
    Hq = np.zeros((b.n_q, b.n_q))
    np.add.at(Hq, (r, c), v)
    np.testing.assert_allclose(Hq, Bd.T @ H @ Bd, atol=1e-12)
    fq = b.fixed(fixed)
    on_fixed = (fq[r] | fq[c]) & (v != 0.0)  # (dense 6 x 2 blocks hold zeros on them)
    assert fq.sum() == 3 and np.all(r[on_fixed] == c[on_fixed]) and np.all(v[on_fixed] == 1.0)


def test_a_plain_block_s_renumbering_is_reused_only_for_the_same_pattern():
    """A block of plain DOFs keeps its renumbering into q from one system to
    the next while it comes with the same pattern arrays; new arrays (a
    pattern of the same size) are renumbered anew."""
    m = mixed_model()
    b = m.basis
    Bd = dense_basis(b, 2 * m.n)
    rng = np.random.default_rng(5)
    plain_dofs = np.flatnonzero(~b.rigid_dof)[6:]  # free ones (the fixed are the first three x DOFs)
    for _ in range(3):  # three patterns
        dofs = rng.choice(plain_dofs, 40)
        elastic = (dofs, rng.permutation(dofs), dofs)
        for _again in range(2):  # the same arrays twice: the second time from the cache
            T, fixed = fixed_system_triplets(b, m, rng, elastic)
            H = np.zeros((2 * m.n, 2 * m.n))
            np.add.at(H, T.system(fixed)[:2], T.system(fixed)[2])
            r, c, v = b.reduce_system(T, fixed)
            Hq = np.zeros((b.n_q, b.n_q))
            np.add.at(Hq, (r, c), v)
            np.testing.assert_allclose(Hq, Bd.T @ H @ Bd, atol=1e-12)


def test_the_reduced_mass_is_the_transpose_product_of_the_lumped_masses():
    m = mixed_model()
    b = m.basis
    Bd = dense_basis(b, 2 * m.n)
    rigid = np.repeat(b.vertex_body >= 0, 2)
    M = np.diag(np.where(rigid, np.repeat(m.mass, 2), 0.0))
    r, c, v = b.reduced_mass(m.mass)
    Mq = np.zeros((b.n_q, b.n_q))
    np.add.at(Mq, (r, c), v)
    np.testing.assert_allclose(Mq, Bd.T @ M @ Bd, rtol=1e-12, atol=1e-15)


def test_the_anchors_read_the_affine_map_of_any_point_of_the_range():
    m = mixed_model()
    b = m.basis
    q = np.random.default_rng(3).normal(size=b.n_q)
    x = b.expand(q)
    np.testing.assert_allclose(b.affine(x), b.affine_fit(x), atol=1e-12)
    assert len(np.unique(b.anchors[0])) == 3


def test_reduction_by_sorting_matches_the_table(monkeypatch):
    """Group pairs are numbered through a table when few, by sorting when many."""
    import solver.basis

    m = mixed_model()
    rng = np.random.default_rng(2)
    rows, cols = rng.integers(0, 2 * m.n, 300), rng.integers(0, 2 * m.n, 300)
    vals = rng.normal(size=300)
    table = m.basis.reduce_triplets(rows, cols, vals)
    monkeypatch.setattr(solver.basis, "DENSE_KEYS", 0)
    sorted_ = m.basis.reduce_triplets(rows, cols, vals)
    for a, b in zip(table, sorted_, strict=True):
        np.testing.assert_array_equal(a, b)


def test_one_triangle_per_rigid_body_guards_inversion():
    m = mixed_model()
    n_rigid = np.sum(m.basis.vertex_body[m.inversion_tris[:, 0]] >= 0)
    assert n_rigid == 1
    assert len(m.inversion_tris) == len(m.elastic_elements.tris) + 1
    plain = build_model(contact_scene())
    assert plain.inversion_tris is plain.elements.tris


def test_fixed_collider_dofs_stay_fixed_in_q():
    m = mixed_model()
    fixed = np.repeat(m.is_collider, 2)
    fq = m.basis.fixed(fixed)
    assert fq.sum() == fixed.sum()
    Bd = dense_basis(m.basis, 2 * m.n)
    np.testing.assert_array_equal(np.abs(Bd[fixed][:, fq]).sum(axis=0), 1.0)


def test_rigid_bodies_have_no_elastic_elements_and_a_stiffness():
    m = mixed_model()
    n_rigid_tris = np.sum(m.basis.vertex_body[m.elements.tris[:, 0]] >= 0)
    assert n_rigid_tris > 0
    assert len(m.elastic_elements.tris) == len(m.elements.tris) - n_rigid_tris
    assert m.basis.stiffness[0] >= contact_scene().bodies[0].material.E


def test_kind_is_validated_and_round_trips_through_json():
    scene = contact_scene()
    A, B = scene.bodies
    rigid = replace(scene, bodies=(replace(A, kind="rigid"), B))
    back = scene_from_dict(scene_to_dict(rigid))
    assert [b.kind for b in back.bodies] == ["rigid", "deformable"]
    assert "kind" not in scene_to_dict(scene)["bodies"][0]
    with pytest.raises(SolverInputError, match="kind"):
        build_model(replace(scene, bodies=(replace(A, kind="solid"), B)))
    pinned = build_model(replace(scene, bodies=(replace(A, kind="rigid", pins=(Pin(np.array([0])),)), B)))
    assert pinned.links.names == ("A.pin0",)  # a rigid body's pin is a spring (test_rigid_pins.py)
    data = scene_to_dict(rigid)
    data["bodies"][0]["kind"] = "solid"
    with pytest.raises(SolverInputError, match="kind"):
        scene_from_dict(data)


def test_a_rigid_body_starts_with_the_affine_part_of_its_velocity():
    scene = contact_scene()
    A, B = scene.bodies
    n = len(A.vertices)
    v = np.random.default_rng(4).normal(size=(n, 2))
    m = build_model(replace(scene, bodies=(replace(A, kind="rigid", velocity=v), B)))
    s = m.body_slices[0]
    X = np.column_stack([m.rest[s], np.ones(n)])
    fitted = X @ np.linalg.lstsq(X, v, rcond=None)[0]  # the least-squares affine velocity field
    np.testing.assert_allclose(m.velocity[s], fitted, atol=1e-12)
    np.testing.assert_array_equal(m.velocity[m.body_slices[1]], 0.0)


def test_a_turning_step_ends_on_a_rotation_and_keeps_its_stretch_and_shift():
    m = mixed_model()
    b = m.basis
    x = m.rest.copy()
    phi = 0.3
    R = np.array([[np.cos(phi), -np.sin(phi)], [np.sin(phi), np.cos(phi)]])
    q = b.coords(x)
    A = b.affine(x)[0]
    dq = np.zeros(b.n_q)
    W = np.array([[0.0, -np.tan(phi)], [np.tan(phi), 0.0]])
    dq[b.a_dofs[0]] = (W @ A).ravel()  # the linearized rotation by phi: (I + W) A
    dq[b.a_dofs[0, 0] + 2] = 0.1  # and a shift of p
    turned = b.rotation_corrected(x, dq)
    A1 = b.affine(b.expand(q + turned))[0]
    np.testing.assert_allclose(A1, R @ A, atol=1e-12)
    assert turned[b.a_dofs[0, 0] + 2] == 0.1
    stretch = np.zeros(b.n_q)
    stretch[b.a_dofs[0]] = (np.diag([0.01, -0.02]) @ A).ravel()  # no turn: unchanged
    np.testing.assert_allclose(b.rotation_corrected(x, stretch), stretch, atol=1e-15)
