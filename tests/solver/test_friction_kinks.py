"""The friction-kink machinery (solver/friction_kinks.py): the line search's stop at the first
zero slip, majorized contacts held while the Hessian is projected, and the regime rounds'
rank-1 piece updates of the friction Hessian."""

import types

import numpy as np
import pytest
from invariants import synthetic_set

from solver import friction


def test_the_line_search_stops_at_the_first_zero_slip_unless_below_the_floor():
    from solver.friction_kinks import kink_step, line_search_start

    def fractions(first):  # pair and plane contacts; the first zero slip in the planes
        return (np.array([1.0, 0.9]), np.array([1.0, first, 0.95]))

    floor = 0.25
    assert kink_step(fractions(0.6), floor) == 0.6
    assert kink_step(fractions(floor), floor) == floor
    assert kink_step(fractions(0.5 * floor), floor) == 1.0
    assert kink_step((np.ones(0), np.ones(0)), floor) == 1.0  # no friction contacts
    assert kink_step(fractions(0.6), np.inf) == 1.0  # the stop switched off
    # the line search starts at the feasible step, shortened to the zero slip on
    # the exact Hessian only (on the projected one reversed contacts stay majorized)
    assert line_search_start(0.8, fractions(0.6), False, floor) == 0.6
    assert line_search_start(0.5, fractions(0.6), False, floor) == 0.5
    assert line_search_start(0.8, fractions(0.6), True, floor) == 0.8


def test_reversed_contacts_stay_majorized_while_the_hessian_is_projected():
    from solver.friction_kinks import next_majorize

    iters = 2
    majorize = (np.array([0, 1, 1, 0]), np.array([1]))
    flips = (np.array([True, False, False, False]), np.array([False]))
    exact = next_majorize(majorize, flips, False, iters)
    assert exact[0].tolist() == [iters, 0, 0, 0] and exact[1].tolist() == [0]
    projected = next_majorize(majorize, flips, True, iters)
    assert projected[0].tolist() == [iters, 1, 1, 0] and projected[1].tolist() == [1]


def factorize_dense(rows, cols, vals, n):
    from solver.linsolve import factorize

    return factorize(rows, cols, vals, n, "numpy")


def _regime_model(consts, model, unknowns, project=False):
    """The RegimeModel of model (sets, slips, at_x, pieces) on the unknowns, on the pieces given."""
    from solver.friction_kinks import RegimeModel

    sets, slips, at_x, pieces = model
    out = RegimeModel(consts, sets, slips, unknowns, project)
    assert all(np.array_equal(a, b) for a, b in zip(out.at_x, at_x, strict=True))
    out.pieces = [p.copy() for p in pieces]
    return out


@pytest.mark.parametrize("project", [False, True])
def test_piece_update_turns_the_hessian_into_the_pieces_hessian(project):
    """friction_kinks.piece_update: the friction Hessian at x plus the rank-1 bends
    is the Hessian of every contact on its piece, the projected one included
    (there both sides are clamped at zero: a slip in the blend between static
    and kinetic friction, mu_s > mu_k, has negative exact curvature that the
    projected Hessian does not hold).  Its gradient change likewise."""
    from solver.friction_kinks import piece_update

    rng = np.random.default_rng(9)
    eps, n = 1e-3, 6
    fs = synthetic_set(rng, n, 1, mu_static=True)
    u = np.array([1.5, -1.7, 0.5, 3.0, 1.2, -0.4]) * eps  # two in the blend (|u| < 2 eps)
    disp = np.zeros((2 * n, 2))
    for k in range(n):  # one vertex of each stencil moved along w so that its slip is u_k
        wk = fs.w[k]
        disp[fs.idx[k, 0]] = u[k] * wk[:2] / (wk[:2] @ wk[:2])
    at_x = friction.regime(u, eps)
    pieces = np.array([0, 0, 1, -1, 1, 0], np.int8)  # slides go static, a stick slides, ...
    consts = types.SimpleNamespace(h=1.0, eps=eps)
    dg, bends = piece_update(consts, 4 * n, [(fs, np.zeros(n, bool))], [u], [at_x], [pieces], project)
    H = friction.hessian(fs, disp, eps, project=project)
    ((dofs, w, dc),) = bends
    for row, wk, c in zip(dofs, w, dc, strict=True):
        k = int(np.flatnonzero((fs.dofs == row).all(axis=1))[0])
        H[k] += c * np.outer(wk, wk)
    everyone, changed = np.ones(n, bool), pieces != at_x
    f_piece, c_piece = friction.piece_force_curvature(fs, everyone, u, pieces, eps)
    f_true, c_true = friction.force_curvature(fs, everyone, u, eps)
    f_want, c_want = np.where(changed, f_piece, f_true), np.where(changed, c_piece, c_true)
    if project:
        c_want = np.maximum(c_want, 0.0)
    assert (c_want < 0.0).any() != project  # the blend's negative curvature is held only if exact
    np.testing.assert_allclose(H, c_want[:, None, None] * np.einsum("ni,nj->nij", fs.w, fs.w), atol=1e-9)
    g = np.zeros(4 * n)
    np.add.at(g, fs.dofs.ravel(), friction.gradient(fs, disp, eps).ravel())
    g_piece = np.zeros(4 * n)
    np.add.at(g_piece, fs.dofs.ravel(), (f_want[:, None] * fs.w).ravel())
    np.testing.assert_allclose(g + dg, g_piece, atol=1e-9)


def test_a_round_is_given_up_when_its_update_columns_exceed_the_budget():
    """friction_kinks.woodbury_step: a round whose dense update columns (the
    factorization's unknowns x the curvatures that change) would hold more than
    regime_max_entries numbers returns None (Newton keeps the plain step); at
    the budget it solves the updated system."""
    from solver.friction_kinks import SweptColumns, piece_update, woodbury_step
    from solver.linsolve import factorize
    from solver.newton import NewtonSettings
    from solver.unknowns import VertexUnknowns

    rng = np.random.default_rng(3)
    eps, n = 1e-3, 5
    fs = synthetic_set(rng, n, 1, mu_static=False)
    u = np.array([1.5, -1.7, 0.5, 3.0, -0.4]) * eps
    at_x = friction.regime(u, eps)
    pieces = np.array([0, 0, 1, 1, 1], np.int8)  # four contacts change piece
    model = ([(fs, np.zeros(n, bool))], [u], [at_x], [pieces])
    consts = types.SimpleNamespace(h=1.0, eps=eps)
    size = 4 * n
    dg, bends = piece_update(consts, size, *model)
    r = sum(len(dc) for _, _, dc in bends)
    assert r == 4
    eye = np.arange(size)
    factor = factorize(eye, eye, np.ones(size), size)
    g, unknowns = rng.normal(size=size), VertexUnknowns(np.zeros(size, bool))

    def step(budget):
        swept = SweptColumns(factor, unknowns, [n])
        return woodbury_step(
            g, swept, _regime_model(consts, model, unknowns), NewtonSettings(regime_max_entries=budget)
        )

    assert step(r * size - 1) is None
    A = np.eye(size)
    for dofs, w, dc in bends:
        for row, wk, c in zip(dofs, w, dc, strict=True):
            A[np.ix_(row, row)] += c * np.outer(wk, wk)
    np.testing.assert_allclose(step(r * size), np.linalg.solve(A, -(g + dg)), atol=1e-10)


def test_the_rounds_sweep_each_contacts_column_once():
    """friction_kinks.SweptColumns: rounds sharing it solve what each round
    solves on its own (the updated system), while each contact's column is
    forward-swept once: a second round that moves one more contact sweeps one
    column, a third that drops one sweeps none."""
    from solver.friction_kinks import SweptColumns, woodbury_step
    from solver.linsolve import factorize
    from solver.newton import NewtonSettings
    from solver.unknowns import VertexUnknowns

    rng = np.random.default_rng(5)
    eps, n = 1e-3, 6
    fs = synthetic_set(rng, n, 1, mu_static=False)
    u = np.array([1.5, -1.7, 0.5, 3.0, -0.4, 2.2]) * eps
    at_x = friction.regime(u, eps)  # [1, -1, 0, 1, 0, 1]: four contacts change piece, then one more
    consts = types.SimpleNamespace(h=1.0, eps=eps)
    size = 4 * n
    M = rng.normal(size=(size, size))
    A = M @ M.T + size * np.eye(size)
    rows, cols = np.nonzero(np.ones((size, size)))
    factor = factorize(rows, cols, A.ravel(), size, "numpy")
    swept_columns = []
    counted = types.SimpleNamespace(
        solve=factor.solve,
        half=lambda B: swept_columns.append(B.shape[1] if B.ndim == 2 else 0) or factor.half(B),
        back=factor.back,
    )
    g, unknowns = rng.normal(size=size), VertexUnknowns(np.zeros(size, bool))
    shared = SweptColumns(counted, unknowns, [n])
    settings = NewtonSettings()
    for pieces, new in (([0, 0, 1, 1, 1, 1], 4), ([0, 0, 1, 0, 1, 1], 1), ([0, -1, 1, 0, 1, 1], 0)):
        model = ([(fs, np.zeros(n, bool))], [u], [at_x], [np.array(pieces, np.int8)])
        swept_columns.clear()
        step = woodbury_step(g, shared, _regime_model(consts, model, unknowns), settings)
        assert sum(swept_columns) == new
        alone = woodbury_step(
            g, SweptColumns(factor, unknowns, [n]), _regime_model(consts, model, unknowns), settings
        )
        np.testing.assert_allclose(step, alone, rtol=1e-10)


def test_swept_columns_come_in_the_layout_of_a_column_gather():
    """SweptColumns keeps the swept columns as rows and hands a round their
    transpose: the values, and the memory layout (hence the BLAS calls of the
    small system and their bits), of the columns gathered from L^-1 W."""
    from solver.friction_kinks import SweptColumns
    from solver.unknowns import VertexUnknowns

    rng = np.random.default_rng(9)
    size, n = 24, 10
    eye = np.arange(size)  # the identity: each column's sweep exact, however many are swept at once
    factor = factorize_dense(eye, eye, np.ones(size), size)
    unknowns = VertexUnknowns(np.zeros(size, bool))
    stencils = [unknowns.stencils(rng.integers(0, size, (n, 4)), rng.normal(size=(n, 4)))]
    swept = SweptColumns(factor, unknowns, [n])
    everything = factor.half(unknowns.stencil_columns([(stencils[0], np.arange(n))]))
    for sel in map(np.array, ([3, 1, 7], [1, 2, 3, 9, 0], [9], [5, 3])):
        Y, curvature = swept.columns([(0, sel, np.ones(len(sel)))], stencils)
        gathered = np.ascontiguousarray(everything)[:, sel]
        np.testing.assert_array_equal(Y, gathered)
        assert Y.strides == gathered.strides and len(curvature) == len(sel)


def _round_unknowns(case, rng):
    """The factorization's unknowns of a test round: vertex DOFs with three
    held, or a basis' q (rigid, stiff) with three held, as identity rows or
    dropped."""
    from test_unknowns import basis_cases

    from solver.unknowns import BasisUnknowns, VertexUnknowns

    if case == "vertex":
        n_x = 40
        fixed = np.zeros(n_x, bool)
        fixed[rng.choice(n_x, 3, replace=False)] = True
        return VertexUnknowns(fixed), n_x
    name, dropped = case.split("-")
    _, basis, n_x = next(c for c in basis_cases() if c[0] == name)
    held = np.zeros(basis.n_q, bool)
    held[rng.choice(basis.n_q, 3, replace=False)] = True
    return BasisUnknowns(basis, held, np.flatnonzero(~held) if dropped == "dropped" else None), n_x


@pytest.mark.parametrize("case", ["vertex", "rigid-rows", "rigid-dropped", "stiff-rows", "stiff-dropped"])
def test_a_round_equals_its_full_size_computation(case):
    """friction_kinks.woodbury_step adds to the gradient on the unknowns, reduced
    once per step, only its changed contacts' forces, mapped through their DOFs'
    rows of the basis, and the rounds read the step on the contacts' DOFs only
    (unknowns.gatherer): the same, up to rounding, as reducing the whole changed
    gradient B^T (g + dg) and expanding the whole step B u.  One contact goes
    from one slide to the other: a force change without a curvature change."""
    from dataclasses import replace

    from solver.friction_kinks import SweptColumns, piece_update, woodbury_step
    from solver.linsolve import factorize, woodbury_solve
    from solver.newton import NewtonSettings

    rng = np.random.default_rng(7)
    unknowns, n_x = _round_unknowns(case, rng)
    eps, n = 1e-3, 5
    fs = synthetic_set(rng, n, 2, mu_static=True)
    fs = replace(fs, idx=rng.choice(n_x // 2, (n, 2), replace=False))  # over all bodies
    u = np.array([1.5, -1.7, 0.5, 3.0, -0.2]) * eps
    at_x = friction.regime(u, eps)  # [1, -1, 0, 1, 0]
    pieces = np.array([0, 0, 1, -1, 0], np.int8)
    model = ([(fs, np.zeros(n, bool))], [u], [at_x], [pieces])
    consts = types.SimpleNamespace(h=0.5, eps=eps)
    size = unknowns.size
    M = rng.normal(size=(size, size))
    A = np.where(np.outer(unknowns.free, unknowns.free), M @ M.T, 0.0) + size * np.eye(
        size
    )  # held: identity rows
    rows, cols = np.nonzero(np.ones((size, size)))
    factor = factorize(rows, cols, A.ravel(), size, "numpy")
    g = rng.normal(size=n_x)
    swept = SweptColumns(factor, unknowns, [n])
    step = woodbury_step(unknowns.reduce(g), swept, _regime_model(consts, model, unknowns), NewtonSettings())
    dg, bends = piece_update(consts, n_x, *model)
    assert sum(len(dc) for _, _, dc in bends) == 3 and np.abs(dg).max() > 0.0
    W, curvature = unknowns.columns(bends)
    full = woodbury_solve(factor, -unknowns.reduce(g + dg), W, curvature)
    np.testing.assert_allclose(step, full, rtol=1e-10, atol=1e-12 * np.abs(full).max())
    np.testing.assert_allclose(unknowns.gatherer(fs.dofs)(step), unknowns.expand(step)[fs.dofs], rtol=1e-12)
    # the rounds' descent check: g . B u on the unknowns (the held ones' step is zero)
    assert np.dot(unknowns.reduce(g), step) == pytest.approx(np.dot(g, unknowns.expand(step)), rel=1e-10)
