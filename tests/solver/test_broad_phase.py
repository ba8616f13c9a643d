"""Broad phase: the spatial-hash candidate set equals the brute-force set
(written here) on random scenes, including huge and degenerate boxes; the
swept boxes contain both ends of the motion."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solver import broad_phase
from solver.broad_phase import BRUTE_FORCE_MAX, candidates, edge_boxes, point_boxes


def brute_pairs(plo, phi, elo, ehi):
    """Set of (point, edge) whose closed boxes overlap -- explicit double loop."""
    out = set()
    for i in range(len(plo)):
        for j in range(len(elo)):
            if (
                plo[i, 0] <= ehi[j, 0]
                and elo[j, 0] <= phi[i, 0]
                and plo[i, 1] <= ehi[j, 1]
                and elo[j, 1] <= phi[i, 1]
            ):
                out.add((i, j))
    return out


def random_boxes(rng, n, spread, size_mode):
    c = rng.uniform(-spread, spread, (n, 2))
    if size_mode == "tiny":
        half = rng.uniform(0, 1e-3, (n, 2))
    elif size_mode == "mixed":
        half = rng.choice([0.0, 1e-3, 0.05, 0.5], (n, 2)) * rng.uniform(0.5, 1, (n, 2))
    elif size_mode == "huge":
        half = rng.uniform(0, 0.05, (n, 2))
        big = rng.random(n) < 0.05
        half[big] = 1e4  # a few boxes covering everything
    else:  # degenerate: zero-size points and zero-width segments on shared lines
        c = np.round(c, 1)
        half = rng.choice([0.0, 0.1], (n, 2))
        half[rng.random(n) < 0.5, 0] = 0.0
    return c - half, c + half


@settings(max_examples=40, deadline=None)
@given(
    st.integers(0, 2**32 - 1),
    st.integers(1, 120),
    st.integers(1, 120),
    st.sampled_from([0.1, 1.0, 50.0]),
    st.sampled_from(["tiny", "mixed", "huge", "degenerate"]),
    st.booleans(),
)
def test_candidates_equal_brute_force(seed, n_p, n_e, spread, mode, explicit_cell):
    rng = np.random.default_rng(seed)
    plo, phi = random_boxes(rng, n_p, spread, mode)
    elo, ehi = random_boxes(rng, n_e, spread, mode)
    cell = float(rng.choice([1e-4, 0.01, 1.0, 100.0])) if explicit_cell else None
    pi, ei = candidates(plo, phi, elo, ehi, cell=cell)
    got = list(zip(pi.tolist(), ei.tolist(), strict=True))
    assert len(got) == len(set(got)), "duplicate pairs"
    assert set(got) == brute_pairs(plo, phi, elo, ehi)


@pytest.mark.parametrize("cells_per_entry", [0, 4, 1e9])
def test_hash_path_is_exercised_and_exact(cells_per_entry, monkeypatch):
    """Above BRUTE_FORCE_MAX box tests the grid is used; compare on big
    scenes, one of them two clusters far apart (a grid of mostly empty
    cells), each cell's edges found by binary search (0 cells per entry),
    by counting (every grid) and as the solver chooses (4); the same pairs
    in the same order either way."""
    monkeypatch.setattr(broad_phase, "CELLS_PER_ENTRY", cells_per_entry)
    rng = np.random.default_rng(0)
    n = 200
    assert n * n > BRUTE_FORCE_MAX
    for mode in ("tiny", "mixed", "huge", "degenerate", "clusters"):
        spread = 1.0 if mode != "clusters" else 0.05
        plo, phi = random_boxes(rng, n, spread, "mixed" if mode == "clusters" else mode)
        elo, ehi = random_boxes(rng, n, spread, "mixed" if mode == "clusters" else mode)
        if mode == "clusters":
            for lo, hi in ((plo, phi), (elo, ehi)):
                lo[n // 2 :] += 1e3
                hi[n // 2 :] += 1e3
        pi, ei = candidates(plo, phi, elo, ehi)
        assert set(zip(pi.tolist(), ei.tolist(), strict=True)) == brute_pairs(plo, phi, elo, ehi)
        key = pi * n + ei
        assert np.all(np.diff(key) > 0)  # sorted by (point, edge): the order the contact sets rely on


def test_swept_boxes_contain_motion():
    rng = np.random.default_rng(1)
    x0, x1 = rng.normal(size=(30, 2)), rng.normal(size=(30, 2))
    lo, hi = point_boxes(x0, x1, 0.01)
    for x in (x0, x1, 0.3 * x0 + 0.7 * x1):
        assert np.all(lo <= x - 0.01 + 1e-12) and np.all(x + 0.01 <= hi + 1e-12)
    edges = rng.integers(0, 30, (40, 2))
    elo, ehi = edge_boxes(x0, x1, edges)
    for t in np.linspace(0, 1, 5):
        x = (1 - t) * x0 + t * x1
        for s in np.linspace(0, 1, 5):
            q = (1 - s) * x[edges[:, 0]] + s * x[edges[:, 1]]
            assert np.all(elo <= q + 1e-12) and np.all(q <= ehi + 1e-12)
    # tight: each bound is one of the four end positions; a box at rest (x1 is x0) too
    for a, b in ((x0, x1), (x0, x0)):
        ends = np.stack([a[edges[:, 0]], a[edges[:, 1]], b[edges[:, 0]], b[edges[:, 1]]], axis=1)
        elo, ehi = edge_boxes(a, b, edges)
        np.testing.assert_array_equal(elo, ends.min(axis=1))
        np.testing.assert_array_equal(ehi, ends.max(axis=1))


def test_empty_inputs():
    z = np.zeros((0, 2))
    one = np.zeros((1, 2))
    for args in ((z, z, one, one), (one, one, z, z)):
        pi, ei = candidates(*args)
        assert len(pi) == 0 and len(ei) == 0


def test_the_candidate_cache_answers_as_a_full_search_while_boxes_move():
    """Queries inside the reference boxes (small moves) and outside them
    (a big move: a new full search) give the full search's pairs, in its order."""
    from solver.broad_phase import CandidateCache

    rng = np.random.default_rng(7)
    x = rng.uniform(0, 10, (400, 2))
    edges = rng.integers(0, 400, (300, 2))
    pts = np.arange(400)
    cache = CandidateCache()
    full_searches = 0
    for move in (0.0, 0.01, 0.02, 0.5, 0.01, 3.0, 0.0):
        x1 = x + rng.normal(scale=move, size=x.shape)
        plo, phi = point_boxes(x[pts], x1[pts], 0.1)
        elo, ehi = edge_boxes(x, x1, edges)
        before = cache._reference
        got = cache.pairs(plo, phi, elo, ehi, (0.2, np.full((len(elo), 1), 0.1)))
        full_searches += cache._reference is not before
        want = candidates(plo, phi, elo, ehi)
        for a, b in zip(got, want, strict=True):
            np.testing.assert_array_equal(a, b)
        assert {(int(i), int(j)) for i, j in zip(*got, strict=True)} == brute_pairs(plo, phi, elo, ehi)
        x = x1
    assert 2 <= full_searches < 7  # the small moves are answered from the list


@pytest.mark.parametrize("with_groups", [False, True])
def test_the_cache_searches_the_few_boxes_that_left_theirs_alone(monkeypatch, with_groups):
    """A few primitives moving far (a pile's bodies knocked about) get new reference
    boxes without a full search; every answer is still the full search's, in its
    order, also for the boxes moved before (their pairs with the others' old boxes)."""
    from solver import broad_phase
    from solver.broad_phase import CandidateCache, Groups

    rng = np.random.default_rng(3)
    n = 3000
    # 100 closed chains of 30 points (the bodies), short edges
    x = (rng.uniform(0, 12, (100, 1, 2)) + np.cumsum(rng.normal(scale=0.1, size=(100, 30, 2)), 1)).reshape(
        -1, 2
    )
    nxt = np.arange(n) + 1
    nxt[29::30] -= 30
    edges = np.column_stack([np.arange(n), nxt])
    groups = Groups(np.arange(n) // 30, np.arange(n) // 30, np.ones(100, bool)) if with_groups else None
    full = []
    monkeypatch.setattr(broad_phase, "candidates", lambda *a, **k: full.append(1) or candidates(*a, **k))
    cache = CandidateCache()
    for share in (0.0, 0.005, 0.01, 0.002, 0.3, 0.0, 0.01):
        x1 = x.copy()
        far = rng.random(n) < share
        x1[far] += rng.normal(scale=0.5, size=(int(far.sum()), 2))
        plo, phi = point_boxes(x, x1, 0.05)
        elo, ehi = edge_boxes(x, x1, edges)
        got = cache.pairs(plo, phi, elo, ehi, (0.02, 0.02), groups)
        want = candidates(plo, phi, elo, ehi, groups=groups)
        for a, b in zip(got, want, strict=True):
            np.testing.assert_array_equal(a, b)
        x = x1
    # the first query, the one moving 30 %, and the last: its windows among the
    # boxes widened by that move would test more pairs than a search
    assert len(full) == 3


@settings(max_examples=40, deadline=None)
@given(
    st.integers(0, 2**32 - 1),
    st.integers(1, 200),
    st.integers(1, 200),
    st.integers(1, 9),
    st.sampled_from(["tiny", "mixed", "huge", "degenerate"]),
)
def test_candidates_skip_exactly_the_pairs_within_apart_groups(seed, n_p, n_e, n_groups, mode):
    """With groups, the pairs are the brute-force ones but those of one apart group,
    sorted by (point, edge) (the hash path too: up to 40k box tests)."""
    from solver.broad_phase import Groups

    rng = np.random.default_rng(seed)
    plo, phi = random_boxes(rng, n_p, 1.0, mode)
    elo, ehi = random_boxes(rng, n_e, 1.0, mode)
    groups = Groups(
        rng.integers(0, n_groups, n_p), rng.integers(0, n_groups, n_e), rng.random(n_groups) < 0.6
    )
    pi, ei = candidates(plo, phi, elo, ehi, groups=groups)
    want = {
        (i, j)
        for i, j in brute_pairs(plo, phi, elo, ehi)
        if groups.point[i] != groups.edge[j] or not groups.apart[groups.point[i]]
    }
    assert set(zip(pi.tolist(), ei.tolist(), strict=True)) == want
    assert np.all(np.diff(pi * n_e + ei) > 0)


def test_the_cache_searches_again_when_a_query_joins_a_group_it_skipped():
    from solver.broad_phase import CandidateCache, Groups

    rng = np.random.default_rng(5)
    x = rng.uniform(0, 3, (300, 2))
    edges = rng.integers(0, 300, (250, 2))
    group = rng.integers(0, 4, 300)
    plo, phi = point_boxes(x, x, 0.1)
    elo, ehi = edge_boxes(x, x, edges)
    cache = CandidateCache()
    for apart in ([True, True, False, False], [True, True, True, False], [False, True, False, False], None):
        groups = None if apart is None else Groups(group, group[edges[:, 0]], np.array(apart))
        got = cache.pairs(plo, phi, elo, ehi, (0.02, 0.02), groups)
        want = candidates(plo, phi, elo, ehi, groups=groups)
        for a, b in zip(got, want, strict=True):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("moving_share", [0.0, 0.02, 0.3, 1.0])
def test_what_stands_still_is_left_out_but_its_pairs_with_what_moves(moving_share):
    """Groups.moving and with_held: the still (held) primitives far from what moves are
    culled before the grid; the pairs are the brute-force ones but still-still ones."""
    from solver.broad_phase import Groups

    rng = np.random.default_rng(11)
    n = 400
    plo, phi = random_boxes(rng, n, 1.0, "mixed")
    elo, ehi = random_boxes(rng, n, 1.0, "mixed")
    p_moves, e_moves = rng.random(n) < moving_share, rng.random(n) < moving_share
    owners = Groups(rng.integers(0, 5, n), rng.integers(0, 5, n), np.array([True, False, True, False, False]))
    for groups in (Groups.moving(p_moves, e_moves), owners.with_held(~p_moves, ~e_moves)):
        pi, ei = candidates(plo, phi, elo, ehi, groups=groups)
        want = {
            (i, j) for i, j in brute_pairs(plo, phi, elo, ehi) if groups.keep(np.array([i]), np.array([j]))[0]
        }
        assert set(zip(pi.tolist(), ei.tolist(), strict=True)) == want
        assert np.all(np.diff(pi * n + ei) > 0)


def _chains(rng, n_chains=100, length=30):
    """Points of closed chains (a pile's bodies: short edges, one group each), edges, groups."""
    n = n_chains * length
    steps = rng.normal(scale=0.1, size=(n_chains, length, 2))
    x = (rng.uniform(0, 12, (n_chains, 1, 2)) + np.cumsum(steps, 1)).reshape(-1, 2)
    nxt = np.arange(n) + 1
    nxt[length - 1 :: length] -= length
    return x, np.column_stack([np.arange(n), nxt]), np.arange(n) // length


@pytest.mark.parametrize("apart_share", [1.0, 0.5])
def test_the_grid_leaves_out_only_entries_that_pair_with_nothing(apart_share):
    """_mixed_entries: the entries of an apart group in cells where the other
    kind's entries are all its own are left out before the join, and the join
    finds the same pairs (most entries of a pile of bodies are such)."""
    from solver.broad_phase import Groups, _cell_size, _join_cells_apart, _mixed_entries, _rasterise

    rng = np.random.default_rng(2)
    x, edges, group = _chains(rng)
    groups = Groups(group, group[edges[:, 0]], rng.random(100) < apart_share)
    plo, phi = point_boxes(x, x, 0.05)
    elo, ehi = edge_boxes(x, x, edges)
    cell = _cell_size(plo, phi, elo, ehi)
    origin = np.minimum(plo.min(axis=0), elo.min(axis=0))
    pbox, pcx, pcy = _rasterise(plo, phi, cell, origin)
    ebox, ecx, ecy = _rasterise(elo, ehi, cell, origin)
    rows = int(max(pcy.max(), ecy.max())) + 1
    n_cells = (int(max(pcx.max(), ecx.max())) + 1) * rows
    pkey, ekey = pcx * rows + pcy, ecx * rows + ecy
    p_in, e_in = _mixed_entries(pbox, pkey, ebox, ekey, groups, n_cells)
    every = _join_cells_apart(pbox, pkey, ebox, ekey, groups)
    kept = _join_cells_apart(pbox[p_in], pkey[p_in], ebox[e_in], ekey[e_in], groups)
    assert set(zip(*every, strict=True)) == set(zip(*kept, strict=True))
    if apart_share == 1.0:
        assert p_in.mean() < 0.5 and e_in.mean() < 0.5
    pi, ei = candidates(plo, phi, elo, ehi, groups=groups)
    bi, bj = broad_phase.candidates_brute_force(plo, phi, elo, ehi)  # (the dense oracle: 9M box tests)
    keep = groups.keep(bi, bj)
    want = set(zip(bi[keep].tolist(), bj[keep].tolist(), strict=True))
    assert set(zip(pi.tolist(), ei.tolist(), strict=True)) == want


def test_cell_group_is_the_one_group_of_a_cell():
    from solver.broad_phase import _cell_group

    rng = np.random.default_rng(4)
    key = rng.integers(0, 50, 400)
    group = np.where(key % 3 == 0, key // 3, rng.integers(0, 1000, 400))  # a third of the cells one group
    n, one = _cell_group(key, group, 60)
    for c in range(60):
        g = group[key == c]
        assert n[c] == len(g)
        assert one[c] == (g[0] if len(g) and np.all(g == g[0]) else -1)


def test_a_long_kept_list_shrinks_when_a_few_boxes_leave(monkeypatch):
    """A list kept from wide margins (a step's first search) and a later query
    with a few boxes outside theirs: no full search, the reference boxes shrink
    to the query's (with its margins), the list with them, and the answers are
    still the full search's, in its order."""
    from solver.broad_phase import CandidateCache, Groups

    rng = np.random.default_rng(6)
    x, edges, group = _chains(rng)
    groups = Groups(group, group[edges[:, 0]], np.ones(100, bool))
    full = []
    monkeypatch.setattr(broad_phase, "candidates", lambda *a, **k: full.append(1) or candidates(*a, **k))
    cache = CandidateCache()
    lengths = []
    for wide, share in ((0.3, 0.0), (0.02, 0.0), (0.02, 0.005), (0.02, 0.0)):
        x1 = x.copy()
        far = rng.random(len(x)) < share
        x1[far] += rng.normal(scale=0.5, size=(int(far.sum()), 2))
        plo, phi = point_boxes(x, x1, 0.02)
        elo, ehi = edge_boxes(x, x1, edges)
        got = cache.pairs(plo, phi, elo, ehi, (wide, wide), groups)
        want = candidates(plo, phi, elo, ehi, groups=groups)
        for a, b in zip(got, want, strict=True):
            np.testing.assert_array_equal(a, b)
        lengths.append(len(cache._reference[4]))
        x = x1
    assert len(full) == 1  # the first query only
    assert lengths[2] < lengths[1] / 3  # the wide list shrank at the third


@pytest.mark.parametrize("seed", range(6))
def test_a_sweep_by_runs_finds_the_pairs_of_one_by_windows(seed):
    """_sweep's two searches of a few boxes against all: by the boxes around
    runs of consecutive boxes and by windows sorted by x, the same pairs as
    the dense test (some boxes wide, as a primitive that moved far)."""
    rng = np.random.default_rng(seed)
    n_q, n_s = rng.integers(50, 400, 2)
    qlo = rng.uniform(0, 10, (n_q, 2))
    qhi = qlo + rng.exponential(0.2, (n_q, 2))
    # s boxes along chains (consecutive ids close together, as a body's primitives)
    slo = (
        rng.uniform(0, 10, (n_s // 20 + 1, 1, 2))
        + np.cumsum(rng.normal(scale=0.1, size=(n_s // 20 + 1, 20, 2)), 1)
    ).reshape(-1, 2)[:n_s]
    shi = slo + rng.exponential(0.1, (n_s, 2))
    shi[rng.random(n_s) < 0.02] += 3.0
    which = np.flatnonzero(rng.random(n_q) < 0.1)
    keys = []
    for search in (broad_phase._run_pairs, broad_phase._window_pairs):
        qi, si = search(qlo, qhi, which, slo, shi, 10**9)
        keys.append(sorted(zip(qi.tolist(), si.tolist(), strict=True)))
    dense = broad_phase.overlap_matrix(qlo[which], qhi[which], slo, shi)
    want = sorted((int(which[i]), int(j)) for i, j in zip(*np.nonzero(dense), strict=True))
    assert keys[0] == want and keys[1] == want
    assert broad_phase._run_pairs(qlo, qhi, which, slo, shi, 0) is None or len(which) == 0
