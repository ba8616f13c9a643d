"""Contact sets: which point-edge stencils carry a barrier, with what weight.

A :class:`ContactSet` is built from broad-phase candidates once per Newton
iteration (swept over the line-search segment, so the same set serves every
trial step and the next iteration).  Each stencil is ``[point, e0, e1]``;
duplicate point-point terms subtracted by the convergent formulation are
stored as ``[point, v, v]`` with ``pp = True`` (case forced to PP0) and a
negative coefficient.
"""

from dataclasses import dataclass

import numpy as np

from . import barrier
from .broad_phase import candidates, edge_boxes, overlap_matrix, point_boxes
from .distance import PL, PP0, PP1, case_and_distance_sq, closest_point_parameter, point_edge_case
from .friction import LINEAR, FrictionSet, tangent_weights
from .linsolve import sorted_unique


@dataclass(frozen=True)
class ContactSet:
    """idx (n,3) vertex stencils; coef (n,) barrier coefficients; pp (n,) bool."""

    idx: np.ndarray
    coef: np.ndarray
    pp: np.ndarray

    def __len__(self):
        return len(self.coef)

    def gather(self, x):
        return np.take(x, self.idx, axis=0)  # x[idx] copies row by row: ten times slower

    def cases(self, X):
        case = point_edge_case(X)
        case[self.pp] = PP0
        return case

    def cases_and_distance_sq(self, X):
        """(case (n,), squared distance (n,)) of gathered stencils X (n,3,2)."""
        return case_and_distance_sq(X, self.pp)

    def subset(self, mask):
        return ContactSet(self.idx[mask], self.coef[mask], self.pp[mask])


def candidate_stencils(model, x0, x1, pad, cache=None, groups=None):
    """Point-edge stencils (n,3) whose swept boxes (x0 -> x1) come within pad.
    cache (optional): a :class:`~solver.broad_phase.CandidateCache` to search
    (the same stencils), each box's margin the larger of pad and its motion.
    groups (optional): a :class:`~solver.broad_phase.Groups`, the objects whose
    own pairs are skipped (solver/rigid_gaps.py)."""
    pts, edges = model.points, model.edges
    p0, p1 = np.take(x0, pts, axis=0), np.take(x1, pts, axis=0)  # x0[pts]: row by row, slower
    plo, phi = point_boxes(p0, p1, pad)
    elo, ehi = edge_boxes(x0, x1, edges)
    eligible = model.pair_eligible
    if eligible is not None:
        # small scene: dense box test with the eligibility of every pair precomputed
        # (sorted by point, then edge, as the grid's pairs: the same stencils in the same order)
        pi, ei = np.nonzero(overlap_matrix(plo, phi, elo, ehi) & eligible)
        if groups is not None:
            keep = groups.keep(pi, ei)
            pi, ei = pi[keep], ei[keep]
        return np.column_stack([pts[pi], edges[ei]])
    if cache is None:
        pi, ei = candidates(plo, phi, elo, ehi, groups=groups)
    else:
        # a primitive that moved far is likely to move on: a wider margin for it alone
        # (measured on the points, which hold every edge's ends: not on interior vertices)
        # (np.maximum of the columns: a reduction over an axis of 2 cost 3.5 times more)
        step = np.abs(p1 - p0)
        moved = np.maximum(np.maximum(step[:, 0], step[:, 1]), pad)
        motion = np.zeros(len(x0))
        motion[pts] = moved
        margins = moved[:, None], np.maximum(motion[edges[:, 0]], motion[edges[:, 1]])[:, None]
        pi, ei = cache.pairs(plo, phi, elo, ehi, margins, groups)
    p, e = pts[pi], edges[ei]
    keep = model.may_contact(p, e[:, 0], e[:, 1])
    return np.column_stack([p[keep], e[keep]])


def build_contact_set(model, stencils, kappa, dhat, formulation):
    """Barrier coefficients for point-edge stencils, plus the subtracted
    duplicate point-point terms of the convergent formulation."""
    scale = 0.5 * kappa * dhat
    coef = scale * model.weight[stencils[:, 0]]
    pp = np.zeros(len(stencils), bool)
    if formulation != "convergent" or len(stencils) == 0:
        return ContactSet(stencils, coef, pp)
    # Each point-point distance d(a, v) is counted once per kept stencil
    # (a, e) with v in e: subtract all but one of them.
    a = np.concatenate([stencils[:, 0], stencils[:, 0]])
    v = np.concatenate([stencils[:, 1], stencils[:, 2]])
    key, count = sorted_unique(a.astype(np.int64) * model.n + v, return_counts=True)
    a, v, mult = key // model.n, key % model.n, count - 1
    ok = mult > 0
    a, v, mult = a[ok], v[ok], mult[ok]
    pp_idx = np.column_stack([a, v, v]).astype(np.intp)
    return ContactSet(
        np.concatenate([stencils, pp_idx]),
        np.concatenate([coef, -scale * model.weight[a] * mult]),
        np.concatenate([pp, np.ones(len(a), bool)]),
    )


def merged_point_point(X, case, idx, coef, pp):
    """The stencils (X (n, 3, 2) gathered, case (n,), idx (n, 3), coef (n,),
    pp (n,) bool: the convergent formulation's duplicates) with every group
    whose distance is one point-point distance d(a, v) summed into one
    stencil [a, v, v] (case PP0) of their summed coefficient: the point-edge
    stencils in a point-point case and the duplicates subtracted for them.
    The sum is the same function, but a PSD projection per stencil is not
    linear: projected one by one, a stencil's B(d(a, v)) and the duplicate
    that cancels it add the absolute values of both (the normal curvature
    kept from one, the tangential from the other) where the exact sum is
    zero (a point over a flat face near a joint of two edges).  Groups that
    cancel are dropped.  Returns (X, case, idx, coef), the stencils in no
    group first, in order."""
    same = pp | (case != PL)  # distance d(a, v) with v = idx[:, 1] (PP0, duplicates) or idx[:, 2] (PP1)
    rows = np.flatnonzero(same)
    if len(rows) == 0:
        return X, case, idx, coef
    on_e1 = (case[rows] == PP1) & ~pp[rows]
    v = np.where(on_e1, idx[rows, 2], idx[rows, 1])
    key = idx[rows, 0].astype(np.int64) * (int(idx.max()) + 1) + v
    order = np.argsort(key, kind="stable")
    key = key[order]
    start = np.flatnonzero(np.concatenate([[True], key[1:] != key[:-1]]))
    total = np.add.reduceat(coef[rows][order], start)
    first = order[start]
    live = np.abs(total) > CANCELLED * np.abs(coef[rows]).max()
    first, total = first[live], total[live]
    point, vertex = rows[first], np.where(on_e1[first], 2, 1)
    at = (point[:, None], np.stack([np.zeros_like(vertex), vertex, vertex], 1))  # [a, v, v]
    Xm, im = X[at], idx[at]
    rest = ~same
    return (
        np.concatenate([X[rest], Xm]),
        np.concatenate([case[rest], np.full(len(point), PP0, case.dtype)]),
        np.concatenate([idx[rest], im]),
        np.concatenate([coef[rest], total]),
    )


CANCELLED = 1e-12  # merged coefficients below this share of the largest cancel (rounding)


def pair_friction(model, cs, x, dhat, mollifier=LINEAR):
    """Frozen friction contacts of the point-edge barrier terms active at x,
    with the static-zone profile mollifier (friction.MOLLIFIERS)."""
    if len(cs) == 0:
        return FrictionSet.empty(3)
    X = cs.gather(x)
    case, d2 = cs.cases_and_distance_sq(X)
    act = (d2 < dhat * dhat) & (d2 > 0)
    if not act.any():
        return FrictionSet.empty(3)
    X, case, idx = X[act], case[act], cs.idx[act]
    lam = barrier.pe_contact_force(X, case, cs.coef[act], dhat)
    r = closest_point_parameter(X, case)
    closest = (1.0 - r)[:, None] * X[:, 1] + r[:, None] * X[:, 2]
    n = X[:, 0] - closest
    n /= np.linalg.norm(n, axis=1, keepdims=True)
    t = np.stack([-n[:, 1], n[:, 0]], axis=1)
    gamma = np.stack([np.ones_like(r), r - 1.0, -r], axis=1)
    mu = np.sqrt(model.mu[idx[:, 0]] * model.mu[idx[:, 1]])
    mu_s = np.sqrt(model.mu_static[idx[:, 0]] * model.mu_static[idx[:, 1]])
    return FrictionSet(idx, tangent_weights(gamma, t), mu * lam, mu_s * lam, mollifier)


def plane_friction(model, x, kappa, dhat, mollifier=LINEAR):
    pts, pl, d = model.plane_pairs_within(x, dhat)
    act = d > 0
    if not act.any():
        return FrictionSet.empty(1)
    pts, pl = pts[act], pl[act]
    normal = model.plane_normal[pl]
    coef = kappa * dhat * model.weight[pts]
    lam = barrier.hp_contact_force(x[pts], model.plane_point[pl], normal, coef, dhat)
    t = np.stack([-normal[:, 1], normal[:, 0]], axis=1)
    mu = np.sqrt(model.mu[pts] * model.plane_mu[pl])
    mu_s = np.sqrt(model.mu_static[pts] * model.plane_mu[pl])
    w = tangent_weights(np.ones((len(pts), 1)), t)
    return FrictionSet(pts[:, None], w, mu * lam, mu_s * lam, mollifier)
