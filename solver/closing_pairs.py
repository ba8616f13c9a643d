"""Closing pairs: a Newton step solved again with the pairs its CCD stops,
that the barrier does not model yet, held where contacts rest
(docs/design/21-closing-pairs.md).

A point-edge pair farther apart than dhat has no barrier term, so Newton's
model of the energy does not know it: where the step would carry such a pair
into contact, CCD cuts the whole step short, every body's motion with it, and
the next iteration meets the next such pair.  Here the step is solved again on
the same factorization with each of those pairs held, to first order, from
closing past ``keep`` (where a contact comes to rest): the minimum of Newton's
quadratic model under the linear conditions w_k . dx >= -room_k.  The model
is convex and dx = 0 meets the conditions, so the step stays a descent
direction; CCD and the line search then run on it as on any step: the
guarantees do not depend on it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .geometry import closest_on_segment

# S's diagonal raised by this fraction of its largest entry: rows of pairs
# between the same bodies can be near dependent (a rigid body has 6 unknowns)
REGULARIZATION = 1e-6
ACTIVE_SET_ITERS = 20


@dataclass(frozen=True)
class ClosingRows:
    """Linear conditions w . dx[dofs] >= -room, one per closing pair: dofs
    (r, 6) the vertex DOFs of the pair's point and edge ends, w (r, 6) the
    gradient of its distance at x in them, room (r,) how far it may close [m];
    stencils (r, 3) the pairs themselves."""

    stencils: np.ndarray
    dofs: np.ndarray
    w: np.ndarray
    room: np.ndarray

    def __len__(self):
        return len(self.room)

    def first(self, k) -> ClosingRows:
        """The first k rows."""
        return ClosingRows(self.stencils[:k], self.dofs[:k], self.w[:k], self.room[:k])

    def merged(self, other: ClosingRows | None) -> ClosingRows:
        """These rows and other's (None: none), each pair once."""
        if other is None:
            return self
        _, first = np.unique(np.concatenate([other.stencils, self.stencils]), axis=0, return_index=True)
        keep = np.sort(first)  # (other's first: its pairs keep their rows)
        fields = ("stencils", "dofs", "w", "room")
        return ClosingRows(*(np.concatenate([getattr(other, f), getattr(self, f)])[keep] for f in fields))


@dataclass(frozen=True)
class Closing:
    """Which pairs a step's CCD stops are held, and how far they may close:
    owner (N,) each vertex's body (or collider); dhat; keep, the gap a contact
    comes to rest at (start.rest dhat, docs/design/04-newton-start.md); eta,
    the fraction of its gap CCD keeps."""

    owner: np.ndarray
    dhat: float
    keep: float
    eta: float

    def rows(self, x, stencils, toi) -> ClosingRows | None:
        """The rows (None: none) of the point-edge pairs stencils (n, 3) at x
        (N, 2) that a step cut at their CCD step toi (n,) < 1 would close,
        farther apart than dhat at x (nearer ones have their barrier in the
        model): one per pair of owners, the one CCD stops first (their rows
        are near parallel), in the order CCD stops them.  Each may close to
        keep, or to what CCD keeps of its gap if that is more."""
        cut = np.flatnonzero(toi < 1.0)
        if not len(cut):
            return None
        X = np.take(x, stencils[cut], axis=0)
        p, e0, e1 = X[:, 0], X[:, 1], X[:, 2]
        t = closest_on_segment(p, e0, e1)
        offset = p - (e0 + t[:, None] * (e1 - e0))
        d0 = np.sqrt(np.einsum("ni,ni->n", offset, offset))
        far = np.flatnonzero(d0 > self.dhat)
        pairs = np.take(self.owner, stencils[cut[far]][:, :2])
        first = far[_first_per_owner_pair(pairs, toi[cut[far]])]
        if not len(first):
            return None
        t, d0 = t[first, None], d0[first]
        n = offset[first] / d0[:, None]
        st = stencils[cut[first]]
        dofs = (2 * st[:, :, None] + np.arange(2)).reshape(len(st), 6)
        w = np.concatenate([n, -(1.0 - t) * n, -t * n], axis=1)
        return ClosingRows(st, dofs, w, d0 - np.maximum(self.keep, self.eta * d0))


def _first_per_owner_pair(pairs, toi):
    """Indices of pairs (m, 2) owner pairs with steps toi (m,): the smallest toi of
    each owner pair, all sorted by toi."""
    order = np.lexsort((toi, pairs[:, 1], pairs[:, 0]))
    sorted_pairs = pairs[order]
    new = np.ones(len(order), bool)
    new[1:] = (sorted_pairs[1:] != sorted_pairs[:-1]).any(axis=1)
    first = order[new]
    return first[np.argsort(toi[first], kind="stable")]


def held_step(step, rows: ClosingRows):
    """The Newton step u of step (a :class:`~solver.friction_kinks.NewtonStep`
    with its factorization of K) held by rows: u + K^-1 W mu with W the rows on
    the unknowns and mu >= 0 the active set's multipliers; None when the small
    system fails or the result is not a descent direction for step.gu."""
    unknowns, factor = step.unknowns, step.factor
    W = unknowns.stencil_columns([(unknowns.stencils(rows.dofs, rows.w), slice(None))])
    Y = factor.half(W)
    S = Y.T @ Y  # W^T K^-1 W
    S.flat[:: len(S) + 1] += REGULARIZATION * float(S.diagonal().max())
    mu = active_set(S, W.T @ step.u, rows.room)
    if mu is None or not mu.any():
        return None
    u = step.u + factor.back(Y @ mu)
    return u if float(np.dot(step.gu, u)) < 0.0 else None


def active_set(S, a, room):
    """mu (r,) >= 0 with a + S mu >= -room, mu_k = 0 where that holds strictly:
    the multipliers of min 1/2 u^T K u + g^T u subject to W^T u >= -room, with
    S = W^T K^-1 W (positive definite) and a = W^T u0 (u0 the free minimum).
    Active-set iterations; None when a small solve fails."""
    active = a < -room
    for _ in range(ACTIVE_SET_ITERS):
        mu = np.zeros(len(room))
        idx = np.flatnonzero(active)
        if len(idx):
            try:
                mu[idx] = np.linalg.solve(S[np.ix_(idx, idx)], -room[idx] - a[idx])
            except np.linalg.LinAlgError:
                return None
        negative = mu < 0.0
        violated = ~active & (a + S @ mu < -room)
        if not negative.any() and not violated.any():
            return mu
        active = (active & ~negative) | violated
    return np.maximum(mu, 0.0)
