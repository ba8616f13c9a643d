"""Nested dissection of a symmetric pattern, numpy only, for
:mod:`solver.linsolve.sparse_cholesky`.

The Hessian's DOFs come in 2 x 2 vertex blocks (DOFs 2v, 2v + 1): the
pattern is compressed to the vertex graph (:func:`vertex_graph`), ordered
there and expanded again.  :func:`nested_dissection` splits a connected part
by a level of a breadth-first level structure from a pseudo-peripheral vertex
(every edge joins equal or adjacent levels, so a level separates the levels
before it from those after it), orders both halves recursively and the
separator last.  All parts of one depth are searched together: each BFS
level of all of them is one batch of array operations, so the Python loops
run over depths and levels (and once over the connected components).

The result is the dissection tree itself: its nodes (separators, and the
leaves: parts of at most ``leaf`` vertices) are
contiguous ranges of the order, children before parents, and every edge of
the graph joins a node to itself or to one of its ancestors.  That tree is the
supernodal elimination tree the Cholesky factorization works on.
"""

import numpy as np

from .arrays import sorted_unique

LEAF = 16  # parts of at most this many vertices are not split further


def vertex_edges(rows, cols, n_vertex, block, symmetric=True):
    """Sorted unique keys lo * n_vertex + hi (lo < hi) of the vertex pairs
    coupled by the pattern (rows, cols) (DOF indices, vertices of ``block``
    DOFs each).  symmetric: the pattern holds (j, i) whenever it holds
    (i, j), so one triangle is read (else both, at twice the cost)."""
    vr, vc = rows // block, cols // block
    if symmetric:
        upper = vr < vc
        return sorted_unique(vr[upper] * n_vertex + vc[upper])
    return _pair_keys(vr, vc, n_vertex)


def stencil_edges(stencils, n_vertex):
    """Sorted unique keys (as :func:`vertex_edges`) of the vertex pairs
    within each stencil (s, k) of vertex indices; stencils with a vertex
    outside [0, n_vertex) are left out."""
    stencils = np.asarray(stencils, np.int64)
    inside = ((stencils >= 0) & (stencils < n_vertex)).all(axis=1)
    stencils = stencils[inside]
    a, b = np.triu_indices(stencils.shape[1], 1)
    return _pair_keys(stencils[:, a].ravel(), stencils[:, b].ravel(), n_vertex)


def _pair_keys(va, vb, n_vertex):
    """Sorted unique keys lo * n_vertex + hi of the pairs (va, vb) in either
    orientation, pairs of a vertex with itself left out."""
    lo, hi = np.minimum(va, vb), np.maximum(va, vb)
    return sorted_unique(lo[lo != hi] * n_vertex + hi[lo != hi])


def edge_graph(keys, n_vertex):
    """CSR adjacency (indptr (n_vertex + 1,), indices (2 e,)) of the edges
    given by keys (e,) from :func:`vertex_edges`."""
    lo, hi = keys // n_vertex, keys % n_vertex
    src, dst = np.concatenate([lo, hi]), np.concatenate([hi, lo])
    order = np.argsort(src, kind="stable")
    indptr = np.concatenate([[0], np.cumsum(np.bincount(src, minlength=n_vertex))])
    return indptr, dst[order]


def vertex_graph(rows, cols, n_vertex, block, symmetric=True):
    """CSR adjacency without self loops of the pattern (rows, cols)
    compressed to vertices (see :func:`vertex_edges`)."""
    return edge_graph(vertex_edges(rows, cols, n_vertex, block, symmetric), n_vertex)


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

    def bfs_parts(self, starts, part):
        """Level of every vertex (n,) in a BFS of each part from its start
        vertex (starts (P,)), all parts at once, edges between parts
        ignored; -1 where not reached."""
        level = np.full(len(self.degree), -1, np.int64)
        level[starts] = 0
        frontier, depth = starts, 0
        while len(frontier):
            src, nbr = self.neighbours(frontier)
            nbr = nbr[(level[nbr] < 0) & (part[nbr] == part[frontier][src])]
            frontier = sorted_unique(nbr)
            depth += 1
            level[frontier] = depth
        return level

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
            frontier = sorted_unique(nbr)
            self.level[frontier] = len(levels)
        return levels


def nested_dissection(indptr, indices, leaf=LEAF):
    """Order the graph (CSR, symmetric, no self loops) by nested dissection.

    All parts of one depth of the dissection are searched together: each
    BFS level of every part is one batch of array operations, so the Python
    loop runs over depths and levels, not over parts.

    Returns (order (n,) vertex at each position, bounds (m + 1,) node k
    holds positions bounds[k]:bounds[k + 1], parent (m,) parent node or -1),
    nodes in postorder (every child before its parent)."""
    g = _Graph(indptr, indices)
    pieces, parent = [], []
    part = np.full(len(g.degree), -1, np.int64)  # part of each vertex still to order, else -1
    comps = _components(g, leaf, pieces, parent)
    for i, comp in enumerate(comps):
        part[comp] = i
    par_node = np.full(len(comps), -1, np.int64)  # per part: the node it hangs from
    hint = np.full(len(comps), -1, np.int64)  # per part: a vertex at its far end, or -1
    while True:
        active = np.flatnonzero(part >= 0)
        if len(active) == 0:
            break
        ids, pv = sorted_unique(part[active], return_inverse=True)
        par_node, hint = par_node[ids], hint[ids]
        part[active] = pv
        small = (np.bincount(pv) <= leaf)[pv]  # a leaf need not be connected: its front is dense anyway
        if small.any():
            _emit(active[small], pv[small], par_node, pieces, parent)
            part[active[small]] = -1
            continue
        par_node, hint = _split_parts(g, part, active, pv, par_node, hint, pieces, parent)
    return _postorder(pieces, np.array(parent, np.int64))


def _components(g, leaf, pieces, parent):
    """Connected components of more than ``leaf`` vertices (list of vertex
    arrays); the smaller ones are packed, whole, into root leaves of at
    most ``leaf`` vertices (isolated vertices in any chunks)."""
    n = len(g.degree)
    g.enter(np.arange(n))
    g.level[:] = -1
    isolated = np.flatnonzero(g.degree == 0)
    g.level[isolated] = 0
    comps, small, seed = [], [], 0
    while True:  # a BFS from the first vertex not reached yet, per component
        free = g.level[seed:] < 0
        seed += int(np.argmax(free))
        if seed >= n or g.level[seed] >= 0:
            break
        comp = np.concatenate(g.bfs(seed))
        (comps if len(comp) > leaf else small).append(comp)
    chunks = np.array_split(isolated, -(-len(isolated) // leaf)) if len(isolated) else []
    packed, count = [], 0
    for comp in small:
        if packed and count + len(comp) > leaf:
            chunks.append(np.concatenate(packed))
            packed, count = [], 0
        packed.append(comp)
        count += len(comp)
    if packed:
        chunks.append(np.concatenate(packed))
    for chunk in chunks:
        pieces.append(chunk)
        parent.append(-1)
    return comps


def _emit(vertices, pv, node_of_part, pieces, parent):
    """One node per part: the vertices (e,) of parts pv (e,)."""
    order = np.argsort(pv, kind="stable")
    vertices, pv = vertices[order], pv[order]
    cuts = np.flatnonzero(np.diff(pv)) + 1
    for chunk, p in zip(np.split(vertices, cuts), pv[np.concatenate([[0], cuts])], strict=True):
        pieces.append(chunk)
        parent.append(int(node_of_part[p]))


def _first_per_part(vertices, pv, n_parts, *keys):
    """Per part (n_parts,): its vertex smallest by keys (first key first), -1 if none."""
    out = np.full(n_parts, -1, np.int64)
    if len(vertices) == 0:
        return out
    order = np.lexsort((*keys[::-1], pv))
    first = order[np.concatenate([[0], np.flatnonzero(np.diff(pv[order])) + 1])]
    out[pv[first]] = vertices[first]
    return out


def _split_parts(g, part, active, pv, par_node, hint, pieces, parent):
    """Split every part (ids 0..P-1 in ``part``) at a level of a BFS level
    structure from a pseudo-peripheral vertex; separators become nodes.
    Returns the new parts' (par_node, hint); ``part`` is relabelled: near
    side 2p, far side 2p + 1, the part of p its BFS did not reach 2P + p."""
    n_parts = len(par_node)
    deg = g.degree[active]
    start = _first_per_part(active, pv, n_parts, deg)
    ok = hint >= 0
    ok[ok] = part[hint[ok]] == np.flatnonzero(ok)
    start = np.where(ok, hint, start)
    level = g.bfs_parts(start, part)
    lv = level[active]
    lost = lv < 0  # another component of a far side: a part of its own, next time
    part[active[lost]] = 2 * n_parts + pv[lost]
    active, pv, deg, lv = active[~lost], pv[~lost], deg[~lost], lv[~lost]
    far = _first_per_part(active, pv, n_parts, -lv, deg)
    level = g.bfs_parts(far[far >= 0], part)
    lv = level[active]
    m, splittable = _separator_levels(pv, lv, n_parts)
    mv = m[pv]
    cls = np.where(lv < mv, 0, np.where(lv > mv, 1, 2))  # near, far, separator
    # a separator vertex without a neighbour beyond its level joins the near side
    sep = np.flatnonzero(cls == 2)
    src, nbr = g.neighbours(active[sep])
    beyond = (part[nbr] == pv[sep][src]) & (level[nbr] == mv[sep][src] + 1)
    touches = np.zeros(len(sep), bool)
    touches[src[beyond]] = True
    cls[sep[~touches]] = 0
    cls[~splittable[pv]] = 3  # no useful separator: one dense node
    node = np.full(n_parts, -1, np.int64)
    for c in (3, 2):
        e = cls == c
        if e.any():
            first = len(pieces)
            _emit(active[e], pv[e], par_node, pieces, parent)
            if c == 2:
                node[sorted_unique(pv[e])] = np.arange(first, len(pieces))
    part[active[cls >= 2]] = -1  # placed in a node
    side = cls < 2
    part[active[side]] = 2 * pv[side] + cls[side]
    far_side = cls == 1
    far_end = _first_per_part(active[far_side], pv[far_side], n_parts, -lv[far_side], deg[far_side])
    new_par = np.concatenate([np.repeat(node, 2), par_node])
    new_hint = np.concatenate([np.stack([far, far_end], axis=1).ravel(), np.full(n_parts, -1)])
    return new_par, new_hint


def _separator_levels(pv, lv, n_parts):
    """Per part: the level m (n_parts,) to cut at (the smallest with at
    least 30 % of the part on either side, else the smallest with both
    sides non-empty) and whether that cut is useful (n_parts,) bool."""
    n_levels = int(lv.max()) + 1
    sizes = np.bincount(pv * n_levels + lv, minlength=n_parts * n_levels).reshape(n_parts, n_levels)
    total = sizes.sum(axis=1, keepdims=True)
    before = np.cumsum(sizes, axis=1) - sizes
    after = total - before - sizes
    valid = (before > 0) & (after > 0)
    good = valid & (np.minimum(before, after) >= 0.3 * total)
    use = np.where(good.any(axis=1, keepdims=True), good, valid)
    score = np.where(use, sizes + 1e-3 * np.abs(before - after), np.inf)
    m = np.argmin(score, axis=1)
    pick = np.arange(n_parts)
    return m, np.isfinite(score[pick, m]) & (2 * sizes[pick, m] <= total[:, 0])


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
