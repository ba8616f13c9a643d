"""numpy-only sparse Cholesky (LL^T) of symmetric positive definite systems.

A multifrontal factorization on the nested-dissection tree of
:mod:`solver.linsolve.ordering`, with nodes merged into their parent where that costs
few flops (:func:`_amalgamate`).  Each tree node (a separator, or a leaf part)
owns a contiguous range of the order; its *front* is its own DOFs followed by its
*update* DOFs (those of ancestors it is coupled to, in the original matrix or
through the fill of its descendants).  With F the assembled front,

    L11 L11^T = F11,  L21 = F21 L11^-T,  U = F22 - L21 L21^T,

and U is added into the parent's front (extend-add).  numpy has no
triangular solve, so each node keeps L11^-1: the substitutions are matrix
products.  A node's L11 is small (a separator of a 2D mesh, or a leaf).

Python loops run over *groups*, never over DOFs: nodes of the same height in
the tree (independent of each other) with fronts of similar size are padded
to one size and factored as one stack of dense matrices (``np.linalg.cholesky``
and ``matmul`` on (g, m, m) arrays).  Assembly and extend-add are one
scatter-add per group (in place into buffers kept per analysis on numpy >=
1.25, a ``np.bincount`` before) through index maps computed by the symbolic
analysis (:class:`Symbolic`), which depends on the pattern only and is
reused while it stays the same (:class:`SparseCholesky`, whose own state --
the order and the analysed vertex pairs -- is small: a checkpoint stores it,
the analysis is rebuilt from it with the same bits).

``np.linalg.cholesky`` raising on a front means the matrix is not positive
definite: :class:`NotPositiveDefiniteFront` is raised.
"""

import itertools
import weakref
from dataclasses import dataclass

import numpy as np

from .arrays import sorted_union, sorted_unique
from .ordering import edge_graph, nested_dissection, stencil_edges, vertex_edges

GROUP_RATIO = 1.4  # bucket width (ratio) of own and update sizes; buckets are then merged by cost


class NotPositiveDefiniteFront(np.linalg.LinAlgError):
    """A front's diagonal block is not positive definite: neither is the matrix."""


class PatternNotCovered(ValueError):
    """An entry of the matrix lies outside the fronts of the symbolic analysis."""


class FrontsTooCostly(Exception):
    """The fronts would cost more flops than the analysis' max_flops allows."""


class _Group:
    """Nodes factored together: slot s of the stacks holds node nodes[s].

    own (g, k): DOF positions owned (padding: n), upd (g, u): update DOF
    positions (padding: n); the front of slot s is laid out as own (k
    rows, padded with the identity) then update (u rows, padded with zeros)."""

    def __init__(self, nodes, own, upd, height):
        self.nodes, self.own, self.upd, self.height = nodes, own, upd, height
        self.g, self.k = own.shape
        self.u = upd.shape[1]
        self.m = self.k + self.u
        self._update_rows = None

    def update_rows(self):
        """(rows, order, starts): the distinct update positions of the group,
        and the permutation and segment starts that sum the (g * u) update
        rows into them (several fronts of a group update the same ancestor
        rows).  Computed once, for the forward sweeps with many right-hand
        sides, where a scatter by bincount would zero (n, r) per group."""
        if self._update_rows is None:
            self._update_rows = _row_sums(self.upd.ravel())
        return self._update_rows


def _row_sums(flat):
    """(rows, order, starts) that sum updates to the positions flat (m,),
    repeats included: the distinct positions, and the stable sort and
    segment starts for np.add.reduceat (each row's updates in their order)."""
    order = np.argsort(flat, kind="stable")
    rows, starts = sorted_unique(flat[order], presorted=True, return_index=True)
    return rows, order, starts


class Symbolic:
    """Pattern-only part of the factorization of an (n, n) matrix with COO
    pattern (rows, cols): ordering, tree, groups and index maps."""

    def __init__(self, rows, cols, n, leaf=None, ordering=None, edges=None, max_flops=None):
        """ordering: (vertex order, node bounds) of an earlier analysis to
        keep (only the fronts are recomputed), None: nested dissection.
        edges: vertex pairs (keys of ordering.vertex_edges) to analyse,
        covering the pattern; None: those of the pattern.  rows = cols =
        None (edges given): the fronts only, no assembly map.  max_flops:
        raise FrontsTooCostly as soon as the fronts are known to cost more
        (before the groups and index maps, most of the work, are built)."""
        self.n = n
        self.block = b = 2 if n % 2 == 0 else 1
        nv = n // b
        self.edges = vertex_edges(rows, cols, nv, b) if edges is None else edges  # (e,) analysed pairs
        indptr, indices = edge_graph(self.edges, nv)
        if ordering is None:
            kw = {} if leaf is None else {"leaf": leaf}
            order, bounds, _ = nested_dissection(indptr, indices, **kw)
            ordering = (order, bounds)
        self.ordering = ordering
        order, bounds = ordering
        self.perm = (b * order[:, None] + np.arange(b)).ravel()  # (n,) DOF at each position
        self.inv = np.empty(n, np.intp)
        self.inv[self.perm] = np.arange(n)
        self.vpos = np.empty(nv, np.intp)
        self.vpos[order] = np.arange(nv)
        self._fronts(indptr, indices, max_flops)
        if rows is None:  # fronts only (a restored state): no pattern to map yet
            self.assembly = None
            return
        try:
            self.assembly = self.assembly_map(rows, cols)
        except PatternNotCovered:  # (i, j) without (j, i): the fronts of the symmetrized pattern
            self.edges = sorted_union(self.edges, vertex_edges(rows, cols, nv, b, symmetric=False))
            self._fronts(*edge_graph(self.edges, nv), max_flops)
            self.assembly = self.assembly_map(rows, cols)

    def _fronts(self, indptr, indices, max_flops=None):
        """Update sets, tree, groups and index maps for the vertex graph (CSR)."""
        order, bounds = self.ordering
        update, parent = _update_sets(indptr, indices, order, self.vpos, bounds)
        bounds, update, self.parent = _amalgamate(bounds, update, parent, self.block)
        self.update = _dof_sets(update, self.block)
        self.bounds = self.block * bounds  # (m + 1,) DOF position range of each node
        if max_flops is not None and self.flops() > max_flops:
            raise FrontsTooCostly
        self.node_of_pos = np.repeat(np.arange(len(bounds) - 1), np.diff(self.bounds))  # (n,)
        self._groups()
        self._front_keys()
        self._extend_add_maps()

    def flops(self):
        """Dense flops of one factorization without padding (a cost estimate)."""
        k = np.diff(self.bounds).astype(float)
        u = np.array([len(x) for x in self.update], float)
        return float(np.sum(_front_flops(k, u)))

    def _groups(self):
        """Split the nodes into groups by height and front size."""
        m = len(self.parent)
        height = np.zeros(m, np.int64)
        for k in range(m):  # postorder: children first
            if self.parent[k] >= 0:
                height[self.parent[k]] = max(height[self.parent[k]], height[k] + 1)
        own = np.diff(self.bounds)
        upd = np.array([len(u) for u in self.update], np.int64)
        self.groups = []
        self.slot = np.empty(m, np.int64)  # slot of each node in its group
        self.group_of = np.empty(m, np.int64)
        # buckets of own size and update size on a log scale of ratio GROUP_RATIO,
        # then merged while the cost model says one padded stack is cheaper
        bucket = np.floor(np.log(np.stack([own, upd + 1])) / np.log(GROUP_RATIO)).astype(np.int64)
        key = np.stack([height, bucket[0], bucket[1]])
        order = np.lexsort(key[::-1])
        cuts = np.flatnonzero(np.any(np.diff(key[:, order], axis=1) != 0, axis=0)) + 1
        buckets = np.split(order, cuts) if m else []
        for h in range(int(height.max()) + 1 if m else 0):
            for nodes in _merge_buckets([b for b in buckets if height[b[0]] == h], own, upd):
                self._add_group(nodes, own, upd, h)

    def _add_group(self, nodes, own, upd, height):
        k, u = int(own[nodes].max()), int(upd[nodes].max())
        j = np.arange(k)
        own_idx = np.where(j < own[nodes, None], self.bounds[nodes, None] + j, self.n)
        upd_idx = np.full((len(nodes), u), self.n, np.intp)
        upd_idx[np.arange(u) < upd[nodes, None]] = np.concatenate([self.update[node] for node in nodes])
        self.slot[nodes] = np.arange(len(nodes))
        self.group_of[nodes] = len(self.groups)
        self.groups.append(_Group(nodes, own_idx, upd_idx, height))

    def _front_keys(self):
        """Sorted keys node * (n + 1) + position of every update DOF of
        every node (a front is its own range then its update set, sorted by
        position), and their local index in the padded front of the node's
        group (own DOFs need no search: local index = position - start)."""
        nodes = np.concatenate([*(grp.nodes for grp in self.groups), np.zeros(0, np.int64)])
        size = np.array([len(self.update[node]) for node in nodes], np.int64)
        start = np.cumsum(size) - size  # of each node's entries
        own = np.array([grp.k for grp in self.groups], np.int64)[self.group_of[nodes]]
        upd = np.concatenate([*(self.update[node] for node in nodes), np.zeros(0, np.intp)])
        keys = np.repeat(nodes * (self.n + 1), size) + upd
        local = np.repeat(own - start, size) + np.arange(len(upd))
        order = np.argsort(keys, kind="stable")
        self.front_keys, self.local = keys[order], local[order]

    def locate(self, node, pos):
        """Local index (in the padded front of node's group) of DOF positions
        pos (e,) in the fronts of nodes node (e,); raises PatternNotCovered."""
        start = self.bounds[node]
        local = pos - start
        beyond = np.flatnonzero(pos >= self.bounds[node + 1])
        if len(beyond):
            key = node[beyond] * (self.n + 1) + pos[beyond]
            at = np.minimum(np.searchsorted(self.front_keys, key), max(len(self.front_keys) - 1, 0))
            if len(self.front_keys) == 0 or not np.array_equal(self.front_keys[at], key):
                raise PatternNotCovered("matrix entry outside the symbolic fronts")
            local[beyond] = self.local[at]
        return local

    def node_of(self, pos):
        """Node (e,) owning each DOF position pos (e,)."""
        return self.node_of_pos[pos]

    def assembly_map(self, rows, cols):
        """For COO (rows, cols) (e,): per group, (selected entries, flat
        targets in the group's (g, m, m) front stack) of the lower triangle
        in the order.  Raises PatternNotCovered if the pattern is not within
        this analysis's fronts."""
        pr, pc = self.inv[rows], self.inv[cols]
        lower = np.flatnonzero(pr >= pc)
        pr, pc = pr[lower], pc[lower]
        node = self.node_of(pc)
        row = self.locate(node, pr)
        col = pc - self.bounds[node]
        grp = self.group_of[node]
        m = np.array([g.m for g in self.groups])[grp]
        flat = (self.slot[node] * m + row) * m + col
        # (a stable sort of small integers is a radix sort)
        order = np.argsort(grp.astype(np.int16 if len(self.groups) < 2**15 else np.int64), kind="stable")
        cuts = np.searchsorted(grp[order], np.arange(len(self.groups) + 1))
        lower, flat = lower[order], flat[order]
        return [(lower[a:b], flat[a:b]) for a, b in itertools.pairwise(cuts)]

    def _extend_add_maps(self):
        """Per group: (source flat indices into the pool of update matrices,
        flat targets in the group's front stack) of every child's U (lower
        triangle), plus the flat diagonal targets of the own-block padding."""
        self.pool_offset = np.concatenate([[0], np.cumsum([g.g * g.u * g.u for g in self.groups])])
        self._workspace = None
        src = [[] for _ in self.groups]
        tgt = [[] for _ in self.groups]
        b = self.block
        ms = np.array([g.m for g in self.groups])
        for gi, grp in enumerate(self.groups):
            par = self.parent[grp.nodes]  # (g,)
            if grp.u == 0 or np.all(par < 0):
                continue
            # per update *vertex* (its first DOF): local index in the parent's front; a
            # vertex's b x b block is expanded at the end (whole diagonal blocks are sent:
            # their upper entry lands in the parent's upper triangle, which is never read)
            first = grp.upd[:, ::b]  # (g, w = u / b), valid entries first (sorted, padded with n)
            s, t = np.nonzero((first < self.n) & (par >= 0)[:, None])
            where = np.zeros(first.shape, np.int64)
            where[s, t] = self.locate(par[s], first[s, t])
            where = where.ravel()
            # the lower triangle of every slot's valid block, slots ordered by their
            # parent's group (each parent group's entries are then one run); per-slot
            # quantities are repeated over the slot's entries rather than gathered
            slots = np.flatnonzero(par >= 0)
            slots = slots[np.argsort(self.group_of[par[slots]], kind="stable")]
            tri, i, j = _lower_triangles(np.bincount(s, minlength=grp.g)[slots], first.shape[1])
            pg = self.group_of[par[slots]]
            m = np.repeat(ms[pg], tri)
            row = np.repeat(slots * first.shape[1], tri)
            base = np.repeat(self.slot[par[slots]], tri) * m
            a, c = np.divmod(np.arange(b * b), b)
            flat_src = np.repeat(self.pool_offset[gi] + slots * grp.u * grp.u, tri) + b * (i * grp.u + j)
            flat_src = flat_src[:, None] + (a * grp.u + c)
            flat_tgt = ((base + where[row + i]) * m + where[row + j])[:, None]
            flat_tgt = flat_tgt + (a[None, :] * m[:, None] + c)
            per_group = np.bincount(pg, weights=tri, minlength=len(self.groups)).astype(np.int64)
            bounds = np.concatenate([[0], np.cumsum(per_group)])
            for p in np.flatnonzero(np.diff(bounds)):
                src[p].append(flat_src[bounds[p] : bounds[p + 1]].ravel())
                tgt[p].append(flat_tgt[bounds[p] : bounds[p + 1]].ravel())
        self.ea_src, self.ea_tgt, self.pad_tgt = [], [], []
        for gi, grp in enumerate(self.groups):
            self.ea_src.append(np.concatenate(src[gi]) if src[gi] else np.zeros(0, np.intp))
            self.ea_tgt.append(np.concatenate(tgt[gi]) if tgt[gi] else np.zeros(0, np.intp))
            s, j = np.nonzero(grp.own == self.n)
            self.pad_tgt.append((s * grp.m + j) * grp.m + j)

    def workspace(self):
        """(pool, fronts): the buffers a numeric factorization works in,
        allocated once per analysis -- the update matrices of every group
        (pool_offset[-1],) and the largest group's front stack."""
        if self._workspace is None:
            fronts = max((g.g * g.m * g.m for g in self.groups), default=0)
            self._workspace = (np.empty(self.pool_offset[-1]), np.empty(fronts))
        return self._workspace

    def factor(self, vals, assembly=None):
        """Numeric factorization of the matrix with values vals (e,) on the
        pattern of ``assembly`` (default: the analysed one)."""
        return Factor(self, vals, assembly or self.assembly)


def _lower_triangles(counts, width):
    """(tri, i, j): the sizes tri (k,) of the lower triangles of orders
    counts (k,) (each at most width), and the (i, j) of their entries j <= i,
    triangle by triangle, each row by row (the order of np.tril_indices: a
    triangle of order c is the first c (c + 1) / 2 entries of the largest)."""
    tri = counts * (counts + 1) // 2
    q = np.arange(tri.sum()) - np.repeat(np.cumsum(tri) - tri, tri)  # index within its triangle
    rows, cols = np.tril_indices(width)
    return tri, rows[q], cols[q]


GROUP_COST = 80e-6  # s: numpy call overhead of one group (factor and solve)
FLOP_COST = 0.1e-9  # s per flop of the dense kernels
ENTRY_COST = 1.5e-9  # s per front entry (assembly, extend-add)


def _front_flops(k, u):
    """Dense flops of a front of k own and u update DOFs (k, u arrays or floats)."""
    return k**3 / 3 + k * k * u + k * u * u


def _group_cost(g, k, u):
    return GROUP_COST + g * (FLOP_COST * _front_flops(k, u) + ENTRY_COST * (k + u) ** 2)


def _merge_buckets(buckets, own, upd):
    """Greedily merge buckets of nodes (arrays) of one height while a merged,
    padded stack is estimated cheaper than the two apart (all pairs at once)."""
    g = np.array([len(b) for b in buckets], float)
    k = np.array([own[b].max() for b in buckets], float)
    u = np.array([upd[b].max() for b in buckets], float)
    while len(buckets) > 1:
        alone = _group_cost(g, k, u)
        merged = _group_cost(g[:, None] + g, np.maximum.outer(k, k), np.maximum.outer(u, u))
        saving = alone[:, None] + alone - merged
        np.fill_diagonal(saving, 0.0)
        i, j = np.unravel_index(np.argmax(saving), saving.shape)
        if saving[i, j] <= 0.0:
            break
        i, j = min(i, j), max(i, j)
        buckets[i] = np.concatenate([buckets[i], buckets.pop(j)])
        g[i], k[i], u[i] = g[i] + g[j], max(k[i], k[j]), max(u[i], u[j])
        g, k, u = np.delete(g, j), np.delete(k, j), np.delete(u, j)
    return buckets


AMALGAMATE_COST = 2e-5  # s: a node joins its parent when the merged front costs at most this much more


def _amalgamate(bounds, update, parent, block):
    """Relaxed supernode amalgamation of the tree (bounds (m + 1,) vertex
    positions, vertex update sets and parent (m,) of :func:`_update_sets`,
    vertices of ``block`` DOFs): a node
    joins its parent when the parent is the next node of the order (their
    ranges are then one) and the merged front's extra flops cost at most
    AMALGAMATE_COST (FLOP_COST per flop).  Returns (bounds, update, parent)
    of the merged tree.

    Every node is a stack of dense operations of its group: a node alone at
    its height costs a group's numpy calls (GROUP_COST) in every
    factorization and solve.  Contacts between bodies dissected apart (an
    order kept from before they touched) make chains of such nodes, small
    separators of one body coupled to the other body's separators.  Merged,
    the child's columns are stored densely against its parent's rows (the
    extra flops), and the merged node's update set is the parent's (the
    child's update positions beyond the parent are in the parent's).
    """
    m = len(bounds) - 1
    own = np.diff(bounds) * float(block)
    upd = np.array([len(u) for u in update], float) * block
    joins = np.zeros(m, bool)  # node k + 1 joins node k's merged node (k its last child)
    size = own.copy()  # own DOFs of the merged node ending at each node
    for c in np.flatnonzero(parent[:-1] == np.arange(1, m)):
        p = c + 1
        merged = _front_flops(size[c] + own[p], upd[p])
        extra = merged - _front_flops(size[c], upd[c]) - _front_flops(own[p], upd[p])
        if extra * FLOP_COST <= AMALGAMATE_COST:
            joins[c] = True
            size[p] += size[c]
    if not joins.any():
        return bounds, update, parent
    first = np.concatenate([[True], ~joins[:-1]])  # node k starts a merged node
    new_id = np.cumsum(first) - 1
    last = np.flatnonzero(~joins)  # the top node of each merged node
    new_parent = np.where(parent[last] >= 0, new_id[np.maximum(parent[last], 0)], -1)
    return np.append(bounds[:-1][first], bounds[-1]), [update[k] for k in last], new_parent


def _update_sets(indptr, indices, order, vpos, bounds):
    """Update vertex positions (sorted) of every node -- the positions beyond
    the node coupled to it directly or through a child's update set -- and
    the parent of every node (the node of its first update position, -1:
    a root).  Nodes are visited in order, so children come first."""
    m, nv = len(bounds) - 1, len(order)
    children = [[] for _ in range(m)]
    parent = np.full(m, -1, np.int64)
    # direct couplings, all nodes at once: (node, position beyond it) of every edge
    node_of = np.repeat(np.arange(m), np.diff(bounds))  # (nv,) node of each vertex position
    src = node_of[vpos[np.repeat(np.arange(nv), np.diff(indptr))]]
    dst = vpos[indices]
    beyond = dst >= bounds[src + 1]
    key = sorted_unique(src[beyond] * nv + dst[beyond])
    cuts = np.searchsorted(key, np.arange(m + 1) * nv)
    vupd = [None] * m
    for k in range(m):
        direct = key[cuts[k] : cuts[k + 1]] - k * nv
        if children[k]:
            cand = np.concatenate([direct] + [vupd[c] for c in children[k]])
            direct = sorted_unique(cand[cand >= bounds[k + 1]])
        vupd[k] = direct
        if len(direct):
            parent[k] = node_of[direct[0]]
            children[parent[k]].append(k)
    return vupd, parent


def _dof_sets(vertex_sets, block):
    """The DOF positions (sorted) of vertex position sets (list of sorted
    arrays), vertices of ``block`` DOFs: all sets expanded at once."""
    sizes = np.array([len(v) for v in vertex_sets], np.intp) * block
    flat = np.concatenate([*vertex_sets, np.zeros(0, np.intp)])
    dofs = (block * flat[:, None] + np.arange(block)).ravel()
    return np.split(dofs, np.cumsum(sizes)[:-1])


TRI_BASE = 24  # triangular inverses of at most this order by row substitution ...
TRI_CALL, TRI_ROW = 10e-6, 8e-6  # ... when g LAPACK inverses (s each) cost more than k rows (s each)


def triangular_inverse(L):
    """Inverse (g, k, k) of lower triangular matrices L (g, k, k) with a
    non-zero diagonal: halves recursively, [[A, 0], [B, C]]^-1 =
    [[A^-1, 0], [-C^-1 B A^-1, C^-1]], small blocks row by row (one
    batched product per row: cheaper than a general inverse per matrix)."""
    k = L.shape[-1]
    if k > TRI_BASE:
        h = k // 2
        a, c = triangular_inverse(L[:, :h, :h]), triangular_inverse(L[:, h:, h:])
        out = np.zeros_like(L)
        out[:, :h, :h] = a
        out[:, h:, h:] = c
        out[:, h:, :h] = -(c @ (L[:, h:, :h] @ a))
        return out
    if len(L) * TRI_CALL < k * TRI_ROW:  # few matrices: one LAPACK inverse each is cheaper
        return np.linalg.inv(L)
    out = np.zeros_like(L)
    d = 1.0 / np.diagonal(L, axis1=1, axis2=2)  # (g, k)
    for i in range(k):  # row i of L^-1: (e_i - L[i, :i] X[:i]) / L[i, i]
        if i:
            out[:, i, :i] = -(L[:, i : i + 1, :i] @ out[:, :i, :i])[:, 0, :] * d[:, i, None]
        out[:, i, i] = d[:, i]
    return out


# ufunc.at sums duplicate indices in place since numpy 1.25 about as fast as a
# bincount (before: ten times slower); in place, the fronts reuse one buffer
# instead of a fresh zeroed array per group (page faults on large fronts)
_FAST_ADD_AT = np.lib.NumpyVersion(np.__version__) >= "1.25.0"


# A forward sweep with many right-hand sides works on the fronts they reach only
# (the live ones) when those are at most this fraction of a group's fronts.
SUBSET_SWEEP = 0.5


class Factor:
    """Numeric factor: per group, L11^-1 (g, k, k) and L21 (g, u, k)."""

    def __init__(self, sym, vals, assembly):
        self.sym = sym
        pool, fronts = sym.workspace()
        self.linv, self.l21 = [], []
        for gi, grp in enumerate(sym.groups):
            F = self._assemble(gi, grp, vals, assembly[gi], pool, fronts)
            k = grp.k
            try:
                L11 = np.linalg.cholesky(F[:, :k, :k])
            except np.linalg.LinAlgError:
                raise NotPositiveDefiniteFront(f"front group {gi} of {len(sym.groups)}") from None
            linv = triangular_inverse(L11)
            l21 = F[:, k:, :k] @ np.swapaxes(linv, 1, 2)
            if grp.u:  # U = F22 - L21 L21^T, written straight into the pool
                U = pool[sym.pool_offset[gi] : sym.pool_offset[gi + 1]].reshape(grp.g, grp.u, grp.u)
                np.subtract(F[:, k:, k:], l21 @ np.swapaxes(l21, 1, 2), out=U)
            self.linv.append(linv)
            self.l21.append(l21)

    def _assemble(self, gi, grp, vals, group_map, pool, fronts):
        """Group gi's fronts (g, m, m): the matrix entries of its columns,
        its children's update matrices (from the pool) and the identity on
        the own-block padding."""
        sym = self.sym
        (sel, flat), src, tgt, pad = group_map, sym.ea_src[gi], sym.ea_tgt[gi], sym.pad_tgt[gi]
        size = grp.g * grp.m**2
        if _FAST_ADD_AT:
            F = fronts[:size]
            F.fill(0.0)
            np.add.at(F, flat, vals[sel])
            np.add.at(F, tgt, pool[src])
            F[pad] = 1.0
        else:
            weights = np.concatenate([vals[sel], pool[src], np.ones(len(pad))])
            F = np.bincount(np.concatenate([flat, tgt, pad]), weights=weights, minlength=size)
        return F.reshape(grp.g, grp.m, grp.m)

    def solve(self, rhs):
        """x with A x = rhs, for rhs (n,) or (n, r) (r right-hand sides at once)."""
        if rhs.ndim == 2:
            return self._backward(self._forward(rhs))
        # one right-hand side (Newton's every solve): 1-D sweeps, about a quarter
        # faster than the (n, 1) case of the 2-D ones (S3-64: 1.1 against 1.5 ms)
        return self._backward_1d(self._forward_1d(rhs))

    def half(self, rhs):
        """L^-1 P rhs, (n,) or (n, r) for rhs (n,) or (n, r), A = P^T L L^T P:
        the forward sweep alone, so that rhs^T A^-1 rhs = half^T half."""
        return (self._forward(rhs) if rhs.ndim == 2 else self._forward_1d(rhs))[: self.sym.n]

    def back(self, y):
        """P^T L^-T y for y (n,) or (n, r) in the factorization's order: the
        backward sweep alone, solve(b) = back(half(b))."""
        w = np.zeros((self.sym.n + 1, *y.shape[1:]))  # position n: the padding's sink
        w[: self.sym.n] = y
        return self._backward(w) if y.ndim == 2 else self._backward_1d(w)

    def _forward_1d(self, rhs):
        """(n + 1,) forward sweep of rhs (n,) (row n: the padding's sink, zero)."""
        sym = self.sym
        n = sym.n
        w = np.zeros(n + 1)
        w[:n] = rhs[sym.perm]
        for grp, linv, l21 in zip(sym.groups, self.linv, self.l21, strict=True):
            y = (linv @ w[grp.own][:, :, None])[:, :, 0]
            w[grp.own] = y
            if grp.u:
                w -= np.bincount(grp.upd.ravel(), weights=(l21 @ y[:, :, None]).ravel(), minlength=n + 1)
            w[n] = 0.0
        return w

    def _backward_1d(self, w):
        """Backward sweep of w (n + 1,) in place, returned in the matrix's order."""
        sym = self.sym
        for grp, linv, l21 in zip(reversed(sym.groups), reversed(self.linv), reversed(self.l21), strict=True):
            z = w[grp.own]
            if grp.u:
                z = z - (np.swapaxes(l21, 1, 2) @ w[grp.upd][:, :, None])[:, :, 0]
            w[grp.own] = (np.swapaxes(linv, 1, 2) @ z[:, :, None])[:, :, 0]
            w[sym.n] = 0.0
        return w[sym.inv]

    def _backward(self, w):
        """Backward sweep of w (n + 1, r) in place, returned in the matrix's order."""
        sym = self.sym
        for grp, linv, l21 in zip(reversed(sym.groups), reversed(self.linv), reversed(self.l21), strict=True):
            z = w[grp.own]
            if grp.u:
                z = z - np.swapaxes(l21, 1, 2) @ w[grp.upd]
            w[grp.own] = np.swapaxes(linv, 1, 2) @ z
            w[sym.n] = 0.0
        return w[sym.inv]

    def _forward(self, rhs):
        """(n + 1, r) forward sweep of rhs (n, r) in the factorization's order
        (row n: the padding's sink, zero)."""
        sym = self.sym
        n, r = sym.n, rhs.shape[1]
        w = np.zeros((n + 1, r))
        w[:n] = rhs[sym.perm]
        for grp, linv, l21 in zip(sym.groups, self.linv, self.l21, strict=True):
            w_own = w[grp.own]
            # Sparse right-hand sides (Woodbury's columns: a contact's few DOFs)
            # reach only the fronts on their paths to the root: the others'
            # rows are zero and stay zero.
            live = np.flatnonzero(w_own.any(axis=(1, 2)))
            if len(live) > SUBSET_SWEEP * grp.g:
                y = linv @ w_own
                w[grp.own] = y
                if grp.u:
                    rows, order, starts = grp.update_rows()
                    w[rows] -= np.add.reduceat((l21 @ y).reshape(-1, r)[order], starts, axis=0)
            elif len(live):
                y = linv[live] @ w_own[live]
                w[grp.own[live]] = y
                if grp.u:
                    # the same sums as above without the dead fronts' zeros (equal to
                    # rounding: reduceat sums a long segment pairwise, and the zeros shift
                    # which terms share a partial sum)
                    rows, order, starts = _row_sums(grp.upd[live].ravel())
                    w[rows] -= np.add.reduceat((l21[live] @ y).reshape(-1, r)[order], starts, axis=0)
            w[n] = 0.0
        return w


def _common_prefix(rows, cols, old_rows, old_cols):
    """Length of the common prefix of two COO patterns."""
    m = min(len(rows), len(old_rows))
    first = m
    for new, old in ((rows, old_rows), (cols, old_cols)):
        differ = new[:first] != old[:first]
        at = int(np.argmax(differ)) if first else 0  # the first True, or 0 if none
        if first and differ[at]:
            first = at
    return first


def _splice(old, new, start):
    """One group's assembly map: old's entries before ``start`` and new's
    (computed for the entries from ``start`` on)."""
    (sel_old, flat_old), (sel_new, flat_new) = old, new
    cut = np.searchsorted(sel_old, start)  # a group's entries are in COO order
    return np.concatenate([sel_old[:cut], sel_new + start]), np.concatenate([flat_old[:cut], flat_new])


_DERIVED = weakref.WeakKeyDictionary()  # SparseCholesky -> (Symbolic, assembly map, rows, cols)
REORDER_GROWTH = 1.5  # a new nested dissection when the fronts of the kept order cost this much more
# A new analysis within this many calls of the last one (contacts in flux) also covers the
# expected pairs: see SparseCholesky.
IN_FLUX_CALLS = 2


@dataclass(frozen=True)
class SparseCholeskyState:
    """What a :class:`SparseCholesky` keeps between calls (everything else is
    derived from it and the patterns solved): ``SparseCholesky.state()`` /
    ``SparseCholesky.from_state(state)`` (a checkpoint stores it)."""

    n: int | None  # size of the last system (None: no call yet)
    order: np.ndarray | None  # (n_vertex,) vertex at each position of the last nested dissection
    bounds: np.ndarray | None  # (m + 1,) its nodes' position ranges
    edges: np.ndarray | None  # (e,) vertex pairs (keys) the fronts are analysed for
    dissection_flops: float  # estimated cost of the fronts of the last dissection
    calls_since_analysis: int | None  # calls reusing the analysis since it was made (None: none yet)


class SparseCholesky:
    """Solver object keeping the symbolic analysis between calls (one per
    simulation: Newton's patterns change only where contacts come and go).

    * (rows, cols) equal to last time: everything is reused;
    * otherwise, a pattern within the fronts of the analysis (contacts
      between DOFs already coupled): only the assembly map is recomputed;
    * otherwise the fronts are recomputed for the same nested-dissection
      order (a contact couples two parts of the tree: the fill follows it),
      on the union of the pairs analysed so far and the new ones (contacts
      that come back are then covered), and a new nested dissection of the
      current pattern is done when their estimated cost grows by
      REORDER_GROWTH over that of the last dissection, or n changes.

    expected (the argument of factor and solve): vertex stencils (s, k) whose
    couplings may enter the pattern soon (Newton passes the contact candidates
    not yet within dhat).  A new analysis (fronts or dissection) that comes
    within IN_FLUX_CALLS calls of the last one also covers their vertex pairs:
    the contacts are in flux, and each new analysis costs about two numeric
    factorizations, while pairs analysed ahead add fill to every
    factorization until the next dissection
    (docs/design/11-sparse-cholesky-analyses.md).
    """

    def __init__(self, leaf=None):
        self.leaf = leaf
        # The state, a few arrays: everything else is derived from it and the patterns
        # solved (kept in _DERIVED, outside the object, so that a checkpoint of the
        # ordering object stays small; rebuilt on demand with the same bits).
        self.n = None
        self.ordering = None  # (vertex order, node bounds) of the last nested dissection
        self.edges = None  # (e,) vertex pairs (keys) the fronts are analysed for
        self.dissection_flops = 0.0
        self.calls_since_analysis = None  # calls reusing the analysis since it was made (None: none yet)
        self.counts = {"same": 0, "remap": 0, "refront": 0, "dissection": 0}  # how each call was prepared

    def state(self) -> SparseCholeskyState:
        """The state (copies of its arrays)."""
        order, bounds = (None, None) if self.ordering is None else self.ordering
        return SparseCholeskyState(
            n=self.n,
            order=_copy(order),
            bounds=_copy(bounds),
            edges=_copy(self.edges),
            dissection_flops=float(self.dissection_flops),
            calls_since_analysis=self.calls_since_analysis,
        )

    @classmethod
    def from_state(cls, state: SparseCholeskyState, leaf=None):
        """A solver continuing from ``state`` with the same bits (its analysis is
        rebuilt on the next call; the counts start at zero)."""
        out = cls(leaf)
        out.n = state.n
        if state.order is not None:
            out.ordering = (_copy(state.order), _copy(state.bounds))
        out.edges = _copy(state.edges)
        out.dissection_flops = float(state.dissection_flops)
        out.calls_since_analysis = state.calls_since_analysis
        return out

    @property
    def sym(self):
        """The Symbolic of the state, or None (before the first solve, or
        after a restore until the next one)."""
        return _DERIVED.get(self, (None,))[0]

    def _prepare(self, rows, cols, n, expected=None):
        in_flux = self.calls_since_analysis is not None and self.calls_since_analysis < IN_FLUX_CALLS
        ahead = _Ahead(expected if in_flux else None, n)
        sym, assembly, how = self._reuse(rows, cols, n, ahead)
        if how is None:
            edges = ahead.union(vertex_edges(rows, cols, n // 2, 2)) if ahead.active else None
            sym = Symbolic(rows, cols, n, self.leaf, edges=edges)
            self.dissection_flops = sym.flops()
            assembly, how = sym.assembly, "dissection"
        self.n, self.ordering, self.edges = n, sym.ordering, sym.edges
        if how != "same":
            _DERIVED[self] = (sym, assembly, rows.copy(), cols.copy())
        self.counts[how] += 1
        reused = how in ("same", "remap")
        self.calls_since_analysis = self.calls_since_analysis + 1 if reused else 0
        return sym, assembly

    def _reuse(self, rows, cols, n, ahead):
        """(Symbolic, assembly map, how) for the pattern (rows, cols), how:
        'same', 'remap', 'refront', or None (a new dissection is needed);
        ahead: the :class:`_Ahead` pairs new fronts also cover."""
        if self.n != n or self.ordering is None:
            return None, None, None
        sym, assembly, old_rows, old_cols = _DERIVED.get(self) or self._rebuild()
        same = _common_prefix(rows, cols, old_rows, old_cols)
        if same == len(rows) == len(old_rows):
            return sym, assembly, "same"
        try:  # entries before the first change keep their place in the fronts
            tail = sym.assembly_map(rows[same:], cols[same:])
            if same:
                tail = [_splice(old, new, same) for old, new in zip(assembly, tail, strict=True)]
            return sym, tail, "remap"
        except PatternNotCovered:
            pass
        # new fronts for the union of the analysed pairs and the new ones: contacts
        # that come and go are then covered by a remap (until the next dissection).
        # The new pairs are in the entries after the common prefix (the prefix's are
        # covered by the fronts, and so by any fronts of more pairs in the same order)
        b = sym.block
        edges = sorted_union(self.edges, vertex_edges(rows[same:], cols[same:], n // b, b, symmetric=False))
        try:
            sym = Symbolic(
                rows,
                cols,
                n,
                self.leaf,
                ordering=self.ordering,
                edges=ahead.union(edges),
                max_flops=REORDER_GROWTH * self.dissection_flops,
            )
        except FrontsTooCostly:
            return None, None, None
        return sym, sym.assembly, "refront"

    def _rebuild(self):
        """The derived data of a restored state: the fronts of its order and
        pairs (the same bits as before the checkpoint), no pattern seen yet."""
        sym = Symbolic(None, None, self.n, self.leaf, ordering=self.ordering, edges=self.edges)
        empty = np.zeros(0, np.intp)
        return sym, None, empty, empty

    def factor(self, rows, cols, vals, n, expected=None):
        """Factor of the (n, n) matrix given by COO triplets (duplicates
        summed, both triangles given); raises NotPositiveDefiniteFront.
        expected: vertex stencils (s, k) that may couple soon (see the class)."""
        sym, assembly = self._prepare(rows, cols, n, expected)
        return sym.factor(vals, assembly)

    def solve(self, rows, cols, vals, rhs, expected=None):
        """x (n,) with A x = rhs for A given by COO triplets."""
        return self.factor(rows, cols, vals, len(rhs), expected).solve(rhs)


def _copy(a):
    return None if a is None else np.array(a)


class _Ahead:
    """The expected vertex pairs a new analysis covers besides the pattern's
    (none when stencils is None or the DOFs are not in vertex blocks of 2):
    their keys are computed on first use only (most calls reuse the analysis)."""

    def __init__(self, stencils, n):
        self.active = stencils is not None and len(stencils) > 0 and n % 2 == 0
        self._stencils, self._n_vertex, self._keys = stencils, n // 2, None

    def union(self, edges):
        """edges (sorted unique keys) and the expected pairs."""
        if not self.active:
            return edges
        if self._keys is None:
            self._keys = stencil_edges(self._stencils, self._n_vertex)
        return sorted_union(edges, self._keys)
