"""Where the colliders are animated to, against where the solver could put them.

A prescribed (kinematic) collider vertex is snapped to its target when that move is
collision-free and otherwise driven there by a penalty (``simulation.py``).  When the bodies
cannot give way (a ceiling keyed further down than the bodies can be compressed), the
solver's collider stays behind its animation.  Contacts, and ``StepStats.min_distance``, are
computed against the solver's (lagging) collider, so the gap there stays positive, while the
artist sees the collider at its *animated* position, where it may overlap the bodies.

:func:`collider_status` measures, per collider, the lag (largest distance of a vertex from its
target) and the signed distance between the bodies at the end of the step and the collider at
its animated (target) position:

* no overlap: the smallest point-edge distance between body boundary vertices and collider
  edges and between collider vertices and body boundary edges (these also cover the
  edge-edge distance of segments that do not cross), over the pairs within reach of
  ``dhat`` (the same pairs ``min_distance`` looks at); ``inf`` if none is within reach;
* overlap: minus the penetration depth.  The solver's state is intersection-free, so an
  overlap at the animated position means that on the straight move of the collider from the
  solver's position to its target (bodies held where they are) some point crossed an edge:
  a body boundary vertex passed through a collider edge or a collider vertex through a body
  boundary edge (two segments can only start to cross when an end of one touches the other).
  The depth is the largest distance, at the target, of such a crossed point from the edge it
  crossed: for a ceiling keyed below the top of a body, how far the body's top sticks out
  above the animated ceiling.  This needs no inside/outside test, so it means the same for an
  open polyline collider (a segment is "crossed" whatever side it is seen from) and a closed
  one (whose inside can only be reached through an edge).

Everything is vectorised over the point-edge pairs of the broad phase; the sweep test only
runs when some collider vertex is away from its target (by more than rounding).
"""

from __future__ import annotations

import numpy as np

from .contacts import candidate_stencils
from .distance import case_and_distance_sq
from .geometry import cross as _cross

ONTO_SEGMENT_TOL = 1e-9  # relative slack of the projection parameter in [0, 1] at a crossing
# A snapped vertex can miss its target by rounding (x + (target - x) != target): lags up to
# this fraction of dhat change no distance visibly and do not start the sweep.
LAG_NEGLIGIBLE = 1e-9


def collider_status(model, x, target, dhat, near):
    """Per collider (scene order): lags (C,) and animated distances (C,) [m].

    x: (N, 2) positions at the end of the step; target: (N, 2) prescribed positions (only the
    collider rows are read); near: (n, 3) point-edge stencils covering every pair within
    dhat of x (the step's contact candidates), used when no collider lags.
    Animated distance: signed, negative = minus the overlap depth, inf = nothing within reach.
    """
    slices = model.collider_slices
    n_col = len(slices)
    if n_col == 0:
        return np.zeros(0), np.zeros(0)
    col = model.is_collider
    first = slices[0].start  # collider vertices are contiguous and come after the bodies
    off = np.linalg.norm(x[first:] - target[first:], axis=1)
    lags = np.maximum.reduceat(off, [s.start - first for s in slices])
    moving = bool(np.any(lags > LAG_NEGLIGIBLE * dhat))
    if moving:
        y = x.copy()
        y[first:] = target[first:]
        st = candidate_stencils(model, x, y, dhat)
    else:
        y, st = x, near
    st = st[col[st[:, 0]] | col[st[:, 1]]]
    dist = np.full(n_col, np.inf)
    if len(st) == 0:
        return lags, dist
    which = model.owner[np.where(col[st[:, 0]], st[:, 0], st[:, 1])] - len(model.body_slices)
    d = np.sqrt(case_and_distance_sq(y[st])[1])
    if moving:
        X = x[st]
        d = np.where(crossed(X, y[st] - X), -d, d)
    np.minimum.at(dist, which, d)
    return lags, dist


def pressed(names, lags, distances, stopped=()):
    """[(name, lag, overlap)] of the colliders pressed into the bodies: those whose animated
    position overlaps the bodies (distances < 0, :func:`collider_status`; overlap = -distance),
    but those named in stopped (held where the bodies stopped them, no longer driven:
    ``StepStats.stopped_colliders``).  names, lags (C,), distances (C,): per collider.  The
    penalty that drives such a collider to its keys grows with its lag, and bodies that cannot
    make room fast enough (rigid shapes jammed in a box, a lid slammed onto them) cannot balance
    it: when a step fails, the likely cause to name, which more iterations or a looser tolerance
    seldom cure (a collider still moving when a step fails for another reason also ends a little
    into the bodies; docs/design/10-prescribed-motion.md).  The solver's note is :func:`pressed_note`, the
    add-on words its own."""
    # not strict: this words a failure, and must not replace its error with its own
    found = zip(names, lags, distances, strict=False)
    return [(n, lag, -d) for n, lag, d in found if d < 0.0 and n not in stopped]


def pressed_note(names, lags, distances, stopped=()):
    """What a step that did not converge says about the colliders :func:`pressed` into the
    bodies ('' if none)."""
    found = pressed(names, lags, distances, stopped)
    if not found:
        return ""
    it = "it" if len(found) == 1 else "them"
    return (
        "; ".join(
            f"collider '{name}' is pressed into the bodies (as animated it overlaps them by {overlap:.3g} m; "
            f"it lags {lag:.3g} m behind its keys)"
            for name, lag, overlap in found
        )
        + f", the likely cause: key {it} to stop sooner or move more slowly, or make the bodies softer"
    )


def crossed(X, dX):
    """(n,) bool: on the straight move X -> X + dX of point-edge stencils (n, 3, 2)
    ([point, e0, e1], each moving linearly), the point passes through the segment: it
    touches it at some time in [0, 1] (the signed area cross(E, A) of the triangle point, e0,
    e1 is zero with the point's projection on the segment) and ends on the other side of (or
    on) the edge's line.

    A = p - e0, E = e1 - e0: c(t) = cross(E(t), A(t)) = c0 + c1 t + c2 t^2; its roots are
    taken in the stable form q / c2, c0 / q, which also covers the linear case (a static edge
    against a moving point, or a translating edge)."""
    A0, dA = X[:, 0] - X[:, 1], dX[:, 0] - dX[:, 1]
    E0, dE = X[:, 2] - X[:, 1], dX[:, 2] - dX[:, 1]
    c0 = _cross(E0, A0)
    c1 = _cross(E0, dA) + _cross(dE, A0)
    c2 = _cross(dE, dA)
    # sides: a sign change of c over [0, 1] guarantees a real root there, so the
    # discriminant is clamped at 0 against rounding only
    sides = c0 * (c0 + c1 + c2) <= 0.0
    disc = np.maximum(c1 * c1 - 4.0 * c2 * c0, 0.0)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        q = -0.5 * (c1 + np.copysign(np.sqrt(disc), c1))
        roots = np.stack([q / c2, c0 / q], axis=1)  # (n, 2), inf / nan where absent
    hit = np.zeros(len(X), bool)
    for k in range(2):
        t = roots[:, k]
        ok = sides & (t >= 0.0) & (t <= 1.0)
        if not ok.any():
            continue
        tk = t[ok, None]
        A, E = A0[ok] + tk * dA[ok], E0[ok] + tk * dE[ok]
        ee = np.einsum("ni,ni->n", E, E)
        s = np.einsum("ni,ni->n", A, E) / np.where(ee > 0.0, ee, 1.0)
        hit[np.flatnonzero(ok)[(s >= -ONTO_SEGMENT_TOL) & (s <= 1.0 + ONTO_SEGMENT_TOL)]] = True
    return hit


def compact_ranges(numbers):
    """'3, 7-9, 12' for the sorted distinct integers of `numbers` ('' if empty)."""
    n = np.unique(np.asarray(numbers, np.int64))
    if len(n) == 0:
        return ""
    breaks = np.flatnonzero(np.diff(n) > 1)
    starts = n[np.concatenate([[0], breaks + 1])]
    ends = n[np.concatenate([breaks, [len(n) - 1]])]
    pairs = zip(starts.tolist(), ends.tolist(), strict=True)
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in pairs)
