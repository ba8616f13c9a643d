"""numpy-only banded Cholesky for the linear solve without scipy (stock Blender).

* :func:`reverse_cuthill_mckee` -- a bandwidth-reducing order of a symmetric
  pattern, breadth-first level by level (each level is one batch of array
  operations; the Python loop runs over levels and connected components).
* :func:`block_tridiagonal_cholesky_solve` -- a matrix of bandwidth b, cut
  into diagonal blocks of size s >= b, is block tridiagonal; its Cholesky
  factor is too, so factorization and substitution are a loop over the n / s
  blocks with dense s x s kernels (``np.linalg.cholesky`` raises when the
  matrix is not positive definite, which is the test Newton needs).
"""

import numpy as np


def reverse_cuthill_mckee(rows, cols, n):
    """Permutation (n,) putting the symmetric pattern (rows, cols) in a narrow band.

    Each connected component starts at a vertex of smallest degree; every BFS
    level lists the new vertices in the order of their parents, then by degree."""
    off = rows != cols
    key = np.unique(rows[off].astype(np.int64) * n + cols[off])
    src, dst = key // n, key % n  # sorted by src: a CSR adjacency
    degree = np.bincount(src, minlength=n)
    start = np.concatenate([[0], np.cumsum(degree)])
    visited = np.zeros(n, bool)
    order = []
    while len(order) < n:
        free = np.flatnonzero(~visited)
        level = free[[int(np.argmin(degree[free]))]]
        visited[level] = True
        while len(level):
            order.extend(level.tolist())
            level = _next_level(level, start, degree, dst, visited)
    return np.array(order[::-1], dtype=np.intp)


def _next_level(level, start, degree, dst, visited):
    counts = degree[level]
    parent_rank = np.repeat(np.arange(len(level)), counts)
    first = np.repeat(start[level], counts)
    within = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
    nbr = dst[first + within]
    new = ~visited[nbr]
    nbr, parent_rank = nbr[new], parent_rank[new]
    if len(nbr) == 0:
        return nbr
    order = np.lexsort((degree[nbr], parent_rank))
    nbr = nbr[order]
    _, first_seen = np.unique(nbr, return_index=True)
    nxt = nbr[np.sort(first_seen)]
    visited[nxt] = True
    return nxt


class NotPositiveDefiniteBlock(np.linalg.LinAlgError):
    """A diagonal block's Cholesky factorization failed."""


MIN_BLOCK = 48  # blocks smaller than this cost more in per-call overhead than in flops


def block_tridiagonal_cholesky_solve(pr, pc, vals, rhs_perm, band):
    """Solve A y = rhs_perm for A given by COO triplets (pr, pc, vals) already in
    band order (|pr - pc| <= band).  Raises NotPositiveDefiniteBlock when A is
    not positive definite.  Returns y (n,) in the same (permuted) order."""
    n = len(rhs_perm)
    s = max(int(band), MIN_BLOCK)
    m = -(-n // s)
    size = m * s
    bi, bj = pr // s, pc // s
    diag = bi == bj
    lower = bi == bj + 1
    D = np.bincount(
        (bi[diag] * s + pr[diag] % s) * s + pc[diag] % s, weights=vals[diag], minlength=m * s * s
    ).reshape(m, s, s)
    E = np.bincount(
        (bj[lower] * s + pr[lower] % s) * s + pc[lower] % s,
        weights=vals[lower],
        minlength=max(m - 1, 1) * s * s,
    ).reshape(-1, s, s)  # E[k] = A[block k+1, block k]
    pad = size - n
    if pad:
        D[-1, s - pad :, s - pad :] += np.eye(pad)  # identity on the padding
    # Factor: L[k] L[k]^T = D[k] - S[k-1] S[k-1]^T, S[k] = E[k] L[k]^-T.  The
    # inverses of the (well-conditioned: cond(L) = sqrt(cond(D))) diagonal
    # factors turn every later triangular solve into one matrix product.
    Linv = np.empty_like(D)
    S = np.empty_like(E)
    try:
        for k in range(m):
            if k:
                D[k] -= S[k - 1] @ S[k - 1].T
            Linv[k] = np.linalg.inv(np.linalg.cholesky(D[k]))
            if k + 1 < m:
                S[k] = E[k] @ Linv[k].T
    except np.linalg.LinAlgError:
        raise NotPositiveDefiniteBlock(f"block {k} of {m} is not positive definite") from None
    b = np.concatenate([rhs_perm, np.zeros(pad)]).reshape(m, s)
    y = np.empty_like(b)
    for k in range(m):  # L y = b
        y[k] = Linv[k] @ (b[k] - S[k - 1] @ y[k - 1] if k else b[k])
    x = np.empty_like(b)
    for k in range(m - 1, -1, -1):  # L^T x = y
        x[k] = Linv[k].T @ (y[k] - S[k].T @ x[k + 1] if k + 1 < m else y[k])
    return x.ravel()[:n]
