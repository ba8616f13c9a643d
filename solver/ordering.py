"""Nested dissection of a symmetric pattern, numpy only, for
:mod:`solver.sparse_cholesky`.

The Hessian's DOFs come in 2 x 2 vertex blocks (DOFs 2v, 2v + 1): the
pattern is compressed to the vertex graph (:func:`vertex_graph`), ordered
there and expanded again.  :func:`nested_dissection` splits a connected part
by a level of a breadth-first level structure from a pseudo-peripheral vertex
(every edge joins equal or adjacent levels, so a level separates the levels
before it from those after it), orders both halves recursively and the
separator last.  Each BFS level is one batch of array operations; the Python
loops run over levels and over the parts of the dissection tree.

The result is the dissection tree itself: its nodes (separators, and the
leaves: parts of at most ``leaf`` vertices, kept in their BFS order) are
contiguous ranges of the order, children before parents, and every edge of
the graph joins a node to itself or to one of its ancestors.  That tree is the
supernodal elimination tree the Cholesky factorization works on.
"""

import numpy as np

LEAF = 24  # parts of at most this many vertices are not split further


def vertex_graph(rows, cols, n_vertex, block, symmetric=True):
    """CSR adjacency (indptr (n_vertex + 1,), indices (n_edges,)) without
    self loops of the pattern (rows, cols) (DOF indices) compressed to
    vertices of ``block`` DOFs each.  symmetric: the pattern holds (j, i)
    whenever it holds (i, j) (else it is symmetrized, at twice the cost)."""
    vr, vc = rows // block, cols // block
    if symmetric:  # one triangle gives every edge (half the entries to sort)
        upper = vr < vc
        key = np.unique(vr[upper] * n_vertex + vc[upper])
    else:  # (i, j) or (j, i): the same edge
        lo, hi = np.minimum(vr, vc), np.maximum(vr, vc)
        key = np.unique(lo[lo != hi] * n_vertex + hi[lo != hi])
    lo, hi = key // n_vertex, key % n_vertex
    src, dst = np.concatenate([lo, hi]), np.concatenate([hi, lo])
    order = np.argsort(src, kind="stable")
    src, dst = src[order], dst[order]
    indptr = np.concatenate([[0], np.cumsum(np.bincount(src, minlength=n_vertex))])
    return indptr, dst


class _Graph:
    """CSR graph plus scratch arrays for BFS restricted to one part."""

    def __init__(self, indptr, indices):
        self.indptr, self.indices = indptr, indices
        self.degree = np.diff(indptr)
        n = len(self.degree)
        self.stamp = np.zeros(n, np.int64)  # vertices of the current part carry the current stamp
        self.level = np.full(n, -1, np.int64)
        self.current = 0

    def neighbours(self, vertices):
        """(index in vertices (m,), neighbour (m,)) of every edge leaving ``vertices``."""
        counts = self.degree[vertices]
        first = np.repeat(self.indptr[vertices] - np.cumsum(counts) + counts, counts)
        return np.repeat(np.arange(len(vertices)), counts), self.indices[first + np.arange(counts.sum())]

    def enter(self, part):
        self.current += 1
        self.stamp[part] = self.current

    def bfs(self, start, part=None):
        """Level structure of the current part from ``start``: list of vertex
        arrays (level marks of ``part`` reset first; None: kept, so that a
        second search skips what the first one reached)."""
        if part is not None:
            self.level[part] = -1
        frontier = np.array([start])
        self.level[frontier] = 0
        levels = []
        while len(frontier):
            levels.append(frontier)
            _, nbr = self.neighbours(frontier)
            nbr = nbr[(self.stamp[nbr] == self.current) & (self.level[nbr] < 0)]
            frontier = np.unique(nbr)
            self.level[frontier] = len(levels)
        return levels


def nested_dissection(indptr, indices, leaf=LEAF):
    """Order the graph (CSR, symmetric, no self loops) by nested dissection.

    Returns (order (n,) vertex at each position, bounds (m + 1,) node k
    holds positions bounds[k]:bounds[k + 1], parent (m,) parent node or -1),
    nodes in postorder (every child before its parent)."""
    g = _Graph(indptr, indices)
    pieces, parent = [], []
    # (part, its parent node, a vertex at the far end of the part or None,
    # whether the part is known to be connected)
    todo = [(np.arange(len(g.degree)), -1, None, False)]
    while todo:  # depth first; the nodes are put in postorder at the end
        part, par, start, connected = todo.pop()
        if len(part) <= leaf:  # a leaf need not be connected: its front is dense anyway
            pieces.append(part)
            parent.append(par)
            continue
        g.enter(part)
        levels = _far_levels(g, part, start, connected, todo, par)
        if levels is None:  # part was split into connected components, pushed on todo
            continue
        split = _bisect(g, part, levels)
        if split is None:  # no useful separator: one dense node
            pieces.append(part)
            parent.append(par)
            continue
        near, near_far, far, far_end, sep = split
        pieces.append(sep)
        parent.append(par)
        todo.append((near, len(pieces) - 1, near_far, True))
        todo.append((far, len(pieces) - 1, far_end, False))
    return _postorder(pieces, np.array(parent, np.int64))


def _far_levels(g, part, start, connected, todo, par):
    """Level structure of the (current) part from a pseudo-peripheral vertex:
    a BFS from ``start`` (a far-end vertex when known), then one more from
    the far end of that one unless start was already far and the part is
    connected.  A part found disconnected is split instead: its components
    go on ``todo`` and None is returned."""
    hinted = start is not None
    if not hinted:
        start = part[np.argmin(g.degree[part])]
    levels = g.bfs(start, part)
    reached = sum(len(v) for v in levels)
    if reached < len(part):
        todo.append((np.concatenate(levels), par, None, True))
        todo.append((part[g.level[part] < 0], par, None, False))
        return None
    if hinted and connected:
        return levels
    return g.bfs(_min_degree(g, levels[-1]), part)


def _min_degree(g, vertices):
    return vertices[np.argmin(g.degree[vertices])]


def _bisect(g, part, levels):
    """(near side, a far-end vertex of it, far side, a far-end vertex of
    it, separator) of a connected part from its level structure (g.level
    holds it), or None when no level balances it."""
    if len(levels) < 3:
        return None
    sizes = np.array([len(v) for v in levels])
    before = np.cumsum(sizes) - sizes
    after = len(part) - before - sizes
    ok = (np.minimum(before, after) >= 0.3 * len(part)) & (before > 0) & (after > 0)
    if not ok.any():
        ok = (before > 0) & (after > 0)
    cand = np.flatnonzero(ok)
    m = int(cand[np.argmin(sizes[cand] + 1e-3 * np.abs(before[cand] - after[cand]))])
    sep = levels[m]
    if 2 * len(sep) > len(part):
        return None
    # a separator vertex without a neighbour beyond the level can join the near side
    src, nbr = g.neighbours(sep)
    touches = np.zeros(len(sep), bool)
    touches[src[g.level[nbr] == m + 1]] = True
    near = np.concatenate([*levels[:m], sep[~touches]])
    return near, levels[0][0], np.concatenate(levels[m + 1 :]), _min_degree(g, levels[-1]), sep[touches]


def _postorder(pieces, parent):
    """Renumber the nodes so that children come before parents."""
    m = len(pieces)
    children = [[] for _ in range(m)]
    roots = []
    for k in range(m):
        (children[parent[k]] if parent[k] >= 0 else roots).append(k)
    post = []
    stack = [(r, False) for r in reversed(roots)]
    while stack:
        k, done = stack.pop()
        if done:
            post.append(k)
            continue
        stack.append((k, True))
        stack.extend((c, False) for c in reversed(children[k]))
    post = np.array(post, np.int64)
    new_id = np.empty(m, np.int64)
    new_id[post] = np.arange(m)
    sizes = np.array([len(pieces[k]) for k in post], np.int64)
    bounds = np.concatenate([[0], np.cumsum(sizes)])
    order = np.concatenate([pieces[k] for k in post]) if m else np.zeros(0, np.int64)
    par = parent[post]
    return order, bounds, np.where(par >= 0, new_id[np.maximum(par, 0)], -1)
