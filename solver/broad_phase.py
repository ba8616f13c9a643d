"""Broad phase: point-edge candidate pairs from a uniform-grid spatial hash.

Every point and every edge gets an axis-aligned box (swept over the step,
points inflated by ``pad``); boxes are rasterised into grid cells, the
(cell, edge) list is sorted once and every (cell, point) entry finds its
edges with ``searchsorted`` -- all vectorised, roughly linear in the number
of primitives.  The brute-force all-pairs version is kept as a test oracle.

Primitives belong to groups (the objects): a query may ask for none of a
group's own pairs (:class:`Groups`, ``apart``), which the grid then skips
while it joins each cell's points and edges, before any pair is formed (a
rigid pile's own boundary pairs outnumber its contacts by far; design 17).
"""

from dataclasses import dataclass

import numpy as np

from .linsolve import sorted_unique

BRUTE_FORCE_MAX = 16384  # point-edge box tests up to which the dense test beats hashing
CELLS_PER_ENTRY = 4  # grids up to this many cells per entry find each cell's edges by counting
# cells this many times the median box when entries alone in their cells are left out: fewer
# entries, the own pairs of the larger cells cost nothing (S4R's searches: 17.2 -> 14.6 M
# instructions; 1.5: 15.1 M, 3: 16.6 M)
SIFTED_CELL = 2.0
PARTIAL_SHARE = 0.02  # CandidateCache: up to this share of boxes outside theirs are searched alone
PARTIAL_TESTS = 4  # ... in at most this many box tests per box
PARTIAL_KEPT = 3  # ... while the list kept is at most this many times the last answer
WIDE_SWEEP = 4.0  # in that search, boxes this many times wider than the mean are tested against all
# ... or, for a few boxes, against the boxes around runs of this many consecutive boxes first
# (a body's primitives are numbered together: a run lies in one or two bodies)
RUN = 64
RUN_TESTS = 32  # ... while (boxes searched) x (runs) is at most this many times the boxes


def point_boxes(x0, x1, pad):
    """Boxes (P, 2) lo/hi of points moving from x0 to x1 (P,2), inflated by pad."""
    return np.minimum(x0, x1) - pad, np.maximum(x0, x1) + pad


def edge_boxes(x0, x1, edges):
    """Boxes of edges (E,2) moving from x0 to x1 (N,2): elementwise minima and
    maxima of the four end positions (a reduction over a stacked (E, 4, 2)
    axis cost 0.65 ms on the pile's 3.2k edges, this a fifth).  The ends are
    gathered by np.take from contiguous index arrays: x0[edges[:, 0]] copies
    row by row (R1000's 32k edges: 4.8 ms a call, this 1.5 ms)."""
    first, second = np.ascontiguousarray(edges.T)
    a, b = np.take(x0, first, axis=0), np.take(x0, second, axis=0)
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    if x1 is not x0:
        a, b = np.take(x1, first, axis=0), np.take(x1, second, axis=0)
        lo, hi = np.minimum(lo, np.minimum(a, b)), np.maximum(hi, np.maximum(a, b))
    return lo, hi


def _rasterise(lo, hi, cell, origin):
    """Expand boxes (n, 2) lo/hi to their cells: (box id, cell column, cell row) entries."""
    ilo = np.floor((lo - origin) / cell).astype(np.int64)
    ihi = np.floor((hi - origin) / cell).astype(np.int64)
    x0, y0 = ilo[:, 0].copy(), ilo[:, 1].copy()
    nx = ihi[:, 0] - x0 + 1
    counts = nx * (ihi[:, 1] - y0 + 1)
    box = np.repeat(np.arange(len(lo)), counts)
    if len(box) == len(lo):  # every box in one cell (np.take: ilo[box, 0] indexes element by element)
        return box, x0, y0
    start = np.cumsum(counts) - counts
    local = np.arange(len(box)) - np.repeat(start, counts)
    nx = np.take(nx, box)
    return box, np.take(x0, box) + local % nx, np.take(y0, box) + local // nx


def _cell_size(plo, phi, elo, ehi):
    # (the larger side of each box: np.maximum of the columns, several times faster
    # than a reduction over an axis of 2)
    dp, de = phi - plo, ehi - elo
    ext = np.concatenate([np.maximum(dp[:, 0], dp[:, 1]), np.maximum(de[:, 0], de[:, 1])])
    size = float(np.median(ext)) if len(ext) else 1.0
    return max(size, 1e-12)


@dataclass(frozen=True)
class Groups:
    """The group (object) of each primitive, point (P,) and edge (E,), and
    apart (G,) bool: the groups whose own point-edge pairs a query skips."""

    point: np.ndarray
    edge: np.ndarray
    apart: np.ndarray

    def keep(self, pi, ei):
        """(n,) bool: which pairs (pi, ei) are not within one apart group."""
        g = self.point[pi]
        return (g != self.edge[ei]) | ~self.apart[g]

    @classmethod
    def moving(cls, point_moves, edge_moves):
        """Two groups: the primitives that stand still (apart: their pairs among
        themselves are not formed) and those that move, by (P,) and (E,) bool."""
        return cls(point_moves.astype(np.intp), edge_moves.astype(np.intp), np.array([True, False]))

    def with_held(self, point_held, edge_held):
        """These groups with the held primitives ((P,), (E,) bool: sleeping
        bodies, colliders standing still) moved to one more group, apart."""
        held = len(self.apart)
        return Groups(
            np.where(point_held, held, self.point),
            np.where(edge_held, held, self.edge),
            np.append(self.apart, True),
        )


def candidates(plo, phi, elo, ehi, cell=None, groups=None):
    """All (point, edge) index pairs whose boxes overlap, but those within
    one of the apart groups (groups: a :class:`Groups`, None: none apart).

    plo/phi: (P,2) point boxes; elo/ehi: (E,2) edge boxes.
    Returns (pi, ei) int arrays, unique pairs, sorted by point, then edge.

    With groups, the primitives of a large apart group that overlap no other
    group's boxes are left out before the grid (a sleeping pile away from the
    awake bodies, bodies away from a moving collider); the others are
    searched and numbered back in order.
    """
    if groups is not None and len(plo) * len(elo) > BRUTE_FORCE_MAX:
        p_near, e_near = _near_other_groups(plo, phi, elo, ehi, groups)
        if not (p_near.all() and e_near.all()):
            pidx, eidx = np.flatnonzero(p_near), np.flatnonzero(e_near)
            sub = Groups(groups.point[pidx], groups.edge[eidx], groups.apart)
            pi, ei = _candidates(plo[pidx], phi[pidx], elo[eidx], ehi[eidx], cell, sub)
            return pidx[pi], eidx[ei]
    return _candidates(plo, phi, elo, ehi, cell, groups)


def _near_other_groups(plo, phi, elo, ehi, groups):
    """(P,), (E,) bool: the points and edges that may pair with a primitive of
    another group.  Only the largest apart group is culled, when it holds more
    than half of the points (what stands still, what Sleep holds; a per-group
    test costs more than it saves on a pile of bodies alike): its points must
    overlap the box around the other groups' edges, its edges the box around
    the other groups' points."""
    apart_points = np.where(groups.apart[groups.point], groups.point, -1)
    counts = np.bincount(apart_points + 1, minlength=len(groups.apart) + 1)[1:]
    big = int(np.argmax(counts))
    if 2 * counts[big] <= len(plo):
        return np.ones(len(plo), bool), np.ones(len(elo), bool)
    in_p, in_e = groups.point == big, groups.edge == big
    return ~in_p | _overlaps(plo, phi, elo[~in_e], ehi[~in_e]), ~in_e | _overlaps(
        elo, ehi, plo[~in_p], phi[~in_p]
    )


def _overlaps(lo, hi, olo, ohi):
    """(n,) bool: which boxes lo/hi (n, 2) overlap the box around the boxes olo/ohi (m, 2)."""
    if len(olo) == 0:
        return np.zeros(len(lo), bool)
    blo, bhi = olo.min(axis=0), ohi.max(axis=0)
    return (lo[:, 0] <= bhi[0]) & (lo[:, 1] <= bhi[1]) & (blo[0] <= hi[:, 0]) & (blo[1] <= hi[:, 1])


def _candidates(plo, phi, elo, ehi, cell, groups):
    """candidates() on every primitive given."""
    if len(plo) == 0 or len(elo) == 0:
        return np.zeros(0, np.intp), np.zeros(0, np.intp)
    if len(plo) * len(elo) <= BRUTE_FORCE_MAX:
        # tiny scenes: one dense comparison beats the hashing overhead
        pi, ei = candidates_brute_force(plo, phi, elo, ehi)
        if groups is not None:
            ok = groups.keep(pi, ei)
            pi, ei = pi[ok], ei[ok]
        return pi, ei
    # entries of apart groups alone in their cells are left out before the join (_mixed_entries)
    sift = groups is not None and bool(np.any(groups.apart[groups.point]))
    if cell is None:
        cell = _cell_size(plo, phi, elo, ehi) * (SIFTED_CELL if sift else 1.0)
    origin = np.minimum(plo.min(axis=0), elo.min(axis=0))
    # Keep the rasterisation bounded: grow the cell if boxes cover too many cells.
    while True:
        span = np.concatenate([phi - plo, ehi - elo]) / cell + 1.0
        if (span[:, 0] * span[:, 1]).sum() <= 64 * len(span):
            break
        cell *= 2.0
    pbox, pcx, pcy = _rasterise(plo, phi, cell, origin)
    ebox, ecx, ecy = _rasterise(elo, ehi, cell, origin)
    rows = int(max(pcy.max(), ecy.max())) + 1
    n_cells = (int(max(pcx.max(), ecx.max())) + 1) * rows
    pkey, ekey = pcx * rows + pcy, ecx * rows + ecy
    if groups is None:
        pi, ei = _join_cells(pbox, pkey, ebox, ekey, n_cells)
    else:
        if sift and n_cells <= CELLS_PER_ENTRY * (len(pkey) + len(ekey)):
            p_in, e_in = _mixed_entries(pbox, pkey, ebox, ekey, groups, n_cells)
            pbox, pkey, ebox, ekey = pbox[p_in], pkey[p_in], ebox[e_in], ekey[e_in]
        pi, ei = _join_cells_apart(pbox, pkey, ebox, ekey, groups)
    # exact box overlap (one axis at a time), then de-duplicate (a pair can share several cells)
    ok = pairs_overlap(plo, phi, elo, ehi, pi, ei)
    pi, ei = pi[ok], ei[ok]
    key = sorted_unique(pi.astype(np.int64) * len(elo) + ei)
    return (key // len(elo)).astype(np.intp), (key % len(elo)).astype(np.intp)


def _join_cells(pbox, pkey, ebox, ekey, n_cells):
    """(point, edge) box ids of every point entry and edge entry sharing a cell
    (pkey, ekey: the entries' cells)."""
    # the edge entries of each point entry's cell: a run of the edge entries sorted by cell
    order = np.argsort(ekey, kind="stable")
    ebox = ebox[order]
    if n_cells <= CELLS_PER_ENTRY * (len(pkey) + len(ekey)):
        # few cells: every cell's run by counting (two gathers instead of two binary searches)
        per_cell = np.bincount(ekey, minlength=n_cells)
        lo, n = (np.cumsum(per_cell) - per_cell)[pkey], per_cell[pkey]
    else:
        ekey = ekey[order]
        lo = np.searchsorted(ekey, pkey, side="left")
        n = np.searchsorted(ekey, pkey, side="right") - lo
    return _expand_runs(pbox, lo, n, ebox)


def _mixed_entries(pbox, pkey, ebox, ekey, groups, n_cells):
    """(point entries, edge entries) bool: those that may pair in their cell
    (pkey, ekey: the entries' cells, below n_cells).  An entry of an apart
    group pairs with nothing in a cell whose entries of the other kind are all
    of its own group: in a pile most cells lie inside one body (S4R: 93 % of
    the entries), and the join's sorts and searches are left the rest."""
    pg, eg = groups.point[pbox], groups.edge[ebox]
    p_n, p_one = _cell_group(pkey, pg, n_cells)
    e_n, e_one = _cell_group(ekey, eg, n_cells)
    p_in = (e_n[pkey] > 0) & ~((e_one[pkey] == pg) & groups.apart[pg])
    e_in = (p_n[ekey] > 0) & ~((p_one[ekey] == eg) & groups.apart[eg])
    return p_in, e_in


def _cell_group(key, group, n_cells):
    """Per cell (n_cells,): the number of entries (key: their cells) and their
    group when they all have one, else -1.  The groups are all equal exactly
    when n sum(g^2) = (sum g)^2 (Cauchy-Schwarz; bincount's sums of small
    integers are exact in float64 while n max(g) < 2^26): three bincounts
    instead of a sort or the slower np.minimum.at.  Beyond that, no cell
    has one group (nothing is left out)."""
    n = np.bincount(key, minlength=n_cells)
    if len(key) == 0 or int(n.max()) * int(group.max(initial=0)) >= 2**26:
        return n, np.full(n_cells, -1.0)
    g = group.astype(np.float64)
    total = np.bincount(key, g, minlength=n_cells)
    one = (n * np.bincount(key, g * g, minlength=n_cells) == total * total) & (n > 0)
    return n, np.where(one, total / np.maximum(n, 1), -1.0)


def _join_cells_apart(pbox, pkey, ebox, ekey, groups):
    """_join_cells without the pairs within one apart group: entries keyed by
    (cell, group), edges sorted by that key; a point entry of an apart group
    takes its cell's run but for its own group's part of it (two runs).  The
    point entries are sorted too: binary searches for sorted keys are several
    times faster (they stay in the part of the array the last one read)."""
    n_groups = len(groups.apart)
    ekey = ekey * n_groups + groups.edge[ebox]
    order = np.argsort(ekey, kind="stable")
    ebox, ekey = ebox[order], ekey[order]
    pg = groups.point[pbox]
    pkey = pkey * n_groups + pg
    order = np.argsort(pkey, kind="stable")
    pbox, pkey, pg = pbox[order], pkey[order], pg[order]
    cell = pkey - pg
    lo = np.searchsorted(ekey, cell)
    hi = np.searchsorted(ekey, cell + n_groups)
    # the own group's part: empty for a point of a group that is not apart
    own_lo = np.searchsorted(ekey, pkey)
    own_hi = np.where(groups.apart[pg], np.searchsorted(ekey, pkey + 1), own_lo)
    both = np.concatenate([pbox, pbox])
    return _expand_runs(both, np.concatenate([lo, own_hi]), np.concatenate([own_lo - lo, hi - own_hi]), ebox)


def _expand_runs(pbox, lo, n, ebox):
    """(pi, ei): each pbox[k] paired with ebox[lo[k] : lo[k] + n[k]] (ebox
    None: the ids lo[k] ... themselves)."""
    pi = np.repeat(pbox, n)
    start = np.cumsum(n) - n
    ei = np.repeat(lo - start, n) + np.arange(n.sum())
    return pi, (ei if ebox is None else ebox[ei])


class CandidateCache:
    """Point-edge candidates reused from one search to the next (a Verlet list).

    A full search (:func:`candidates`) runs on the boxes inflated by a margin
    and keeps those reference boxes and their pairs.  A later query whose
    boxes all lie inside the reference ones has all its overlapping pairs
    among the kept ones: the exact box test on those finds them, the same
    pairs in the same order (sorted by point, then edge) as a full search,
    without rasterising.  Newton's iterations within a step move far less
    than the step itself, so most queries are answered from the list
    (design 17 has the measurements).  When a few boxes leave theirs (up to
    PARTIAL_SHARE of them: a pile's iterations move a few bodies far), only
    those get new reference boxes and are searched again, against every
    box (:meth:`_update`, :func:`_sweep`); the list stays every pair of
    overlapping reference boxes, so the answers are still the full
    search's."""

    def __init__(self):
        self._reference = None  # (plo, phi, elo, ehi, pi, ei) of the last full search
        self._groups = None  # the groups it was made with
        self._found = 0  # the pairs of the last answer

    def pairs(self, plo, phi, elo, ehi, margins, groups=None):
        """(pi, ei): the pairs whose boxes overlap, as candidates(plo, phi,
        elo, ehi, groups=groups); first a full search on the boxes inflated
        by margins (the points', the edges': scalars or (n, 1)) when they are
        not inside the reference ones (but a few, while the list is short:
        :meth:`_update`), or when
        it skipped a group's own pairs that this query asks for."""
        boxes = plo, phi, elo, ehi
        ref = self._reference
        fresh = ref is None or not _covers(self._groups, groups)
        if not fresh:
            out = _outside_all(boxes, ref[:4])
            # a list kept from wide margins (a step's first search) costs more per query than
            # a search: its reference boxes shrink to the query's (with margins) too
            fresh = out is None or (
                (out[0].any() or out[1].any())
                and not self._update(boxes, margins, out, len(ref[4]) > PARTIAL_KEPT * self._found)
            )
        if fresh:
            pm, em = margins
            wide = (plo - pm, phi + pm, elo - em, ehi + em)
            self._reference = (*wide, *candidates(*wide, groups=groups))
            self._groups = groups
        pi, ei = self._reference[4], self._reference[5]
        ok = pairs_overlap(plo, phi, elo, ehi, pi, ei)
        if groups is not None and groups is not self._groups:
            ok &= groups.keep(pi, ei)
        self._found = np.count_nonzero(ok)
        return pi[ok], ei[ok]

    def _update(self, boxes, margins, out, shrink=False):
        """Give the boxes that left their reference ones (out: the points' and
        the edges' (n,) bool) new ones (inflated by margins) and replace their
        pairs by a search of them alone; False when more than PARTIAL_SHARE of
        the boxes left, or the search would take more than PARTIAL_TESTS box
        tests per box (the reference boxes may then have changed: a full
        search replaces them).  shrink: every other reference box shrinks to
        its overlap with the query's box inflated by margins (it still holds
        the query's box), and the kept pairs to those whose shrunk boxes
        overlap: a subset of the kept ones, so the list is still every pair of
        overlapping reference boxes."""
        rplo, rphi, relo, rehi, pi, ei = self._reference
        plo, phi, elo, ehi = boxes
        p_out, e_out = out
        if np.count_nonzero(p_out) + np.count_nonzero(e_out) > PARTIAL_SHARE * (len(plo) + len(elo)):
            return False
        pm, em = margins
        if shrink:  # (new arrays: the rows below are replaced in them)
            rplo, rphi = np.maximum(rplo, plo - pm), np.minimum(rphi, phi + pm)
            relo, rehi = np.maximum(relo, elo - em), np.minimum(rehi, ehi + em)
        p_ids, e_ids = np.flatnonzero(p_out), np.flatnonzero(e_out)
        pm, em = _rows(pm, p_ids), _rows(em, e_ids)
        rplo[p_ids], rphi[p_ids] = plo[p_ids] - pm, phi[p_ids] + pm
        relo[e_ids], rehi[e_ids] = elo[e_ids] - em, ehi[e_ids] + em
        budget = PARTIAL_TESTS * (len(plo) + len(elo))
        found_p = _sweep(rplo, rphi, p_ids, relo, rehi, budget)  # (point, edge)
        found_e = _sweep(relo, rehi, e_ids, rplo, rphi, budget)  # (edge, point)
        if found_p is None or found_e is None:
            return False
        other = ~p_out[found_e[1]]  # the left points' pairs are in found_p
        new_p = np.concatenate([found_p[0], found_e[1][other]])
        new_e = np.concatenate([found_p[1], found_e[0][other]])
        if self._groups is not None:
            ok = self._groups.keep(new_p, new_e)
            new_p, new_e = new_p[ok], new_e[ok]
        stay = ~(p_out[pi] | e_out[ei])
        if shrink:
            stay &= pairs_overlap(rplo, rphi, relo, rehi, pi, ei)
        n_e = len(elo)
        # the kept pairs are sorted, the new ones (none of them kept) go in between
        kept = pi[stay].astype(np.int64) * n_e + ei[stay]
        new = np.sort(new_p.astype(np.int64) * n_e + new_e)
        key = np.insert(kept, np.searchsorted(kept, new), new)
        self._reference = (rplo, rphi, relo, rehi, (key // n_e).astype(np.intp), (key % n_e).astype(np.intp))
        return True


def _rows(margin, ids):
    """The rows ids of a margin (n, 1), or the scalar margin itself."""
    return margin[ids] if np.ndim(margin) else margin


def _outside(lo, hi, rlo, rhi):
    """(n,) bool: the boxes lo/hi (n, 2) not inside their reference boxes rlo/rhi."""
    inside = (lo[:, 0] >= rlo[:, 0]) & (lo[:, 1] >= rlo[:, 1])
    inside &= (hi[:, 0] <= rhi[:, 0]) & (hi[:, 1] <= rhi[:, 1])
    return ~inside


def _sweep(qlo, qhi, which, slo, shi, budget):
    """(q ids, s ids): the pairs of the boxes q[which] (ids) and every box s
    that overlap, or None when that takes more than budget box tests.  A few
    q boxes (most partial updates: 1-100 of R1000's 64k) are tested against
    the boxes around runs of RUN consecutive s boxes, then against the boxes
    of the runs they overlap (:func:`_run_pairs`: no sort of every box);
    more by :func:`_window_pairs`."""
    if len(which) == 0 or len(slo) == 0:
        return np.zeros(0, np.intp), np.zeros(0, np.intp)
    if len(which) * -(-len(slo) // RUN) <= RUN_TESTS * len(slo):
        found = _run_pairs(qlo, qhi, which, slo, shi, budget)
        if found is not None:
            return found
    return _window_pairs(qlo, qhi, which, slo, shi, budget)


def _run_pairs(qlo, qhi, which, slo, shi, budget):
    """_sweep by runs of RUN consecutive s boxes: each q box against every
    run's bounding box, then against the boxes of the runs it overlaps (None:
    more than budget of those)."""
    n = len(slo)
    starts = np.arange(0, n, RUN)
    rlo, rhi = np.minimum.reduceat(slo, starts, axis=0), np.maximum.reduceat(shi, starts, axis=0)
    qk, rk = np.nonzero(overlap_matrix(qlo[which], qhi[which], rlo, rhi))
    first = starts[rk]
    size = np.minimum(first + RUN, n) - first
    if size.sum() > budget:
        return None
    qi, si = _expand_runs(which[qk], first, size, None)
    ok = pairs_overlap(qlo, qhi, slo, shi, qi, si)
    return qi[ok], si[ok]


def _window_pairs(qlo, qhi, which, slo, shi, budget):
    """_sweep by windows: each q box is tested against a window of the s
    boxes sorted by x: those whose lower x lies within the widest s box of
    its x range (any overlapping one does); s boxes WIDE_SWEEP times wider
    than the mean (a primitive that moved far) are left out of the windows'
    width and tested against every q box instead."""
    widths = shi[:, 0] - slo[:, 0]
    wide = widths > WIDE_SWEEP * np.mean(widths)
    narrow = np.flatnonzero(~wide)
    wide = np.flatnonzero(wide)
    order = narrow[np.argsort(slo[narrow, 0])]
    sx = slo[order, 0]
    width = float(np.max(widths[narrow], initial=0.0))
    qx = qlo[which, 0]
    # (a relative slack for the rounding of the widths and of the subtraction)
    lo = np.searchsorted(sx, qx - width - 4.0 * np.finfo(float).eps * (np.abs(qx) + width), side="left")
    n = np.searchsorted(sx, qhi[which, 0], side="right") - lo
    if n.sum() + len(which) * len(wide) > budget:
        return None
    qi, si = _expand_runs(which, lo, n, order)
    qi = np.concatenate([qi, np.repeat(which, len(wide))])
    si = np.concatenate([si, np.tile(wide, len(which))])
    ok = pairs_overlap(qlo, qhi, slo, shi, qi, si)
    return qi[ok], si[ok]


def _covers(reference, query):
    """Whether a search with the reference groups found every pair the query's
    groups ask for (None: no group apart)."""
    if reference is None or reference is query:
        return True
    if query is None or len(query.apart) != len(reference.apart):
        return False
    same = all(
        a is b or np.array_equal(a, b)
        for a, b in ((reference.point, query.point), (reference.edge, query.edge))
    )
    return same and not np.any(reference.apart & ~query.apart)


def _outside_all(boxes, reference):
    """(points (P,), edges (E,) bool): the boxes (plo, phi, elo, ehi) not
    inside their reference boxes; None when their numbers differ."""
    if len(boxes[0]) != len(reference[0]) or len(boxes[2]) != len(reference[2]):
        return None
    plo, phi, elo, ehi = boxes
    rplo, rphi, relo, rehi = reference
    return _outside(plo, phi, rplo, rphi), _outside(elo, ehi, relo, rehi)


def pairs_overlap(alo, ahi, blo, bhi, ai, bi):
    """(n,) bool: which pairs (ai, bi) of boxes a (lo/hi (A, 2)) and b (B, 2)
    overlap, one axis at a time, on coordinates gathered by np.take (alo[ai, 0]
    indexes element by element: twice the time on R1000's lists)."""
    ok = np.ones(len(ai), bool)
    for k in (0, 1):
        ok &= np.take(alo[:, k], ai) <= np.take(bhi[:, k], bi)
        ok &= np.take(blo[:, k], bi) <= np.take(ahi[:, k], ai)
    return ok


def overlap_matrix(plo, phi, elo, ehi):
    """(P, E) bool: which point and edge boxes overlap (one axis at a time:
    four flat comparisons are several times faster than one 3-D broadcast)."""
    ok = plo[:, None, 0] <= ehi[None, :, 0]
    ok &= elo[None, :, 0] <= phi[:, None, 0]
    ok &= plo[:, None, 1] <= ehi[None, :, 1]
    ok &= elo[None, :, 1] <= phi[:, None, 1]
    return ok


def candidates_brute_force(plo, phi, elo, ehi):
    """All overlapping pairs by the dense O(P E) test (small scenes; test oracle)."""
    pi, ei = np.nonzero(overlap_matrix(plo, phi, elo, ehi))
    return pi.astype(np.intp), ei.astype(np.intp)
