"""Which rigid bodies cannot meet themselves over a motion: the broad phase skips their own pairs.

A rigid (affine) body's vertices follow x = A X + p, so two of its own boundary
features are at least sigma_min(A) times their rest distance d_rest apart.  The
solver's sweeps are straight in x (Newton's steps are B dq, the start scales each
body's motion), hence straight in A: A(t) = A0 + t (A1 - A0), and by Weyl's
inequality sigma_min(A(t)) >= sigma_min(A0) - |A1 - A0|_F =: L on t in [0, 1].  A
pair of the body's own features (one that may contact: ``Model.may_contact``) then

- stays farther apart than L d_rest >= L min_gap, min_gap the body's smallest such
  rest distance: never within pad when L min_gap > pad (not an active contact, no
  crossing);
- never loses (1 - eta) of its starting gap d0 <= sigma_max(A0) d_rest =: U d_rest
  when L > eta U (with slack): it cannot limit a CCD step that keeps eta of each gap
  (its step is the whole motion, whatever the other pairs' steps).

Such a body is *apart* for that query (:class:`~solver.broad_phase.Groups`): its own
point-edge pairs are not formed at all, the rest come out as before, in the same
order.  Colliders are always apart (``Model.may_contact`` drops collider-collider
pairs).  A body crushed or stretched far enough to fail the test (stress scene 236
squeezes a rigid zigzag to a fifth of its area) keeps its own pairs, as deformable
and stiff bodies always do (design 17).
"""

from __future__ import annotations

import numpy as np

from .broad_phase import Groups, candidates, edge_boxes, point_boxes
from .distance import case_and_distance_sq

# the rest gaps are searched out to this many times the largest pad asked (dhat):
# a body whose own features are all farther apart gets this as its smallest gap
GAP_SEARCH = 4.0
# L must exceed eta U by this factor: the exact CCD accepts entry times up to
# (1 + 2 CHORD_SLACK) times its radius (solver/ccd.py), and rounding
CCD_SLACK = 1.1


class RigidGaps:
    """The apart groups of a model with rigid bodies, per query.

    reach: the largest pad a query asks for (dhat); gap_kept: the CCD's eta,
    the fraction of each gap its steps keep."""

    def __init__(self, model, reach, gap_kept):
        basis = model.basis
        self.basis = basis
        self.gap_kept = float(gap_kept)
        self.bodies = basis.bodies  # (R,) the model's body index of each rigid body
        self.min_gap = smallest_rest_gaps(model, GAP_SEARCH * reach)
        n_owners = len(model.names)
        self.always = np.zeros(n_owners, bool)
        self.always[model.owner[model.is_collider]] = True
        self.point = model.owner[model.points]
        self.edge = model.owner[model.edges[:, 0]]

    def groups(self, x0, x1, pad):
        """The :class:`~solver.broad_phase.Groups` of a query over x0 -> x1 (N, 2)
        for pairs within pad: colliders and the rigid bodies passing the test."""
        apart = self.always.copy()
        apart[self.bodies[self.rigid_apart(x0, x1, pad)]] = True
        return Groups(self.point, self.edge, apart)

    def rigid_apart(self, x0, x1, pad):
        """(R,) bool: the rigid bodies whose own features stay farther apart than pad
        and keep more than gap_kept of their gaps over x0 -> x1 (module doc)."""
        a0 = self.basis.affine(x0)
        da = np.zeros_like(a0) if x1 is x0 else self.basis.affine(x1) - a0
        s_min, s_max = singular_values(a0)
        low = s_min - np.sqrt(np.einsum("rij,rij->r", da, da))
        return (low > CCD_SLACK * self.gap_kept * s_max) & (low * self.min_gap > pad) & (low > 0.0)


def singular_values(a):
    """(smallest, largest) singular values (R,), (R,) of 2 x 2 matrices a (R, 2, 2)."""
    f = np.einsum("rij,rij->r", a, a)
    det = a[:, 0, 0] * a[:, 1, 1] - a[:, 0, 1] * a[:, 1, 0]
    s_max = np.sqrt(0.5 * (f + np.sqrt(np.maximum(f * f - 4.0 * det * det, 0.0))))
    with np.errstate(divide="ignore", invalid="ignore"):
        s_min = np.where(s_max > 0.0, np.abs(det) / s_max, 0.0)
    return s_min, s_max


def smallest_rest_gaps(model, radius):
    """(R,) per rigid body the smallest rest distance between two of its own boundary
    features that may contact, or radius when none is closer (a lower bound either way:
    every pair closer than radius has overlapping boxes with that pad)."""
    basis, x = model.basis, model.rest
    gaps = np.full(len(basis.bodies), float(radius))
    pts, edges = model.points, model.edges
    rigid = basis.vertex_body[pts] >= 0
    plo, phi = point_boxes(x[pts], x[pts], radius)
    elo, ehi = edge_boxes(x, x, edges)
    pi, ei = candidates(plo, phi, elo, ehi)
    p, e = pts[pi], edges[ei]
    own = rigid[pi] & (model.owner[p] == model.owner[e[:, 0]])
    p, e = p[own], e[own]
    ok = model.may_contact(p, e[:, 0], e[:, 1])
    st = np.column_stack([p[ok], e[ok]])
    if len(st):
        d = np.sqrt(case_and_distance_sq(x[st])[1])
        np.minimum.at(gaps, basis.vertex_body[st[:, 0]], d)
    return gaps
