"""Newton at friction's kinks: what keeps a Newton step from sending friction
contacts across the edges of the pieces of their energy.

The lagged friction energy (:mod:`solver.friction`) is piecewise: quadratic
in the static zone |u| < eps, linear while sliding, with a kink at zero slip
that the Hessian does not see.  Three remedies, each a switch of
:class:`~solver.newton.NewtonSettings` (when and how Newton applies them is
described once, in :mod:`solver.newton`):

- majorizing (:func:`next_majorize`): a contact whose slip a step reversed
  gets the curvature of the quadratic that majorizes its energy for the next
  iterations (``friction.hessian(majorize=...)``);
- the zero-slip stop (:func:`line_search_start`): the line search starts
  where the first reversed sliding contact reaches zero slip;
- regime rounds (:func:`regime_consistent_step`): the step is re-solved with
  each contact on the piece its end point lands it on (Woodbury updates of
  the step's factorization).

They read the potential through its narrow interface only (friction_sets,
displacement, h, eps).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import friction
from .linsolve import woodbury_solve
from .unknowns import VertexUnknowns


@dataclass(frozen=True)
class NewtonStep:
    """A Newton step and the system it solved, on the unknowns the system solves
    for (:mod:`solver.unknowns`: the vertex DOFs with the fixed ones held, or a
    basis' q): the step u, the gradient gu (``unknowns.reduce(g)`` of the true
    gradient g (2N,), fixed DOFs zeroed: the solve's right-hand side negated),
    the Cholesky factorization of the Hessian (a
    :class:`~solver.linsolve.linalg.Factorization`; the PSD-projected Hessian
    when ``project``) and the unknowns."""

    u: np.ndarray
    gu: np.ndarray
    factor: object
    unknowns: object
    project: bool = False


def regime_consistent_step(ip, x, newton: NewtonStep, majorize, settings):
    """The Newton step u (of ``newton``) re-solved, up to settings.regime_rounds times, with
    each friction contact modelled on the piece of its energy (static,
    sliding forwards, sliding backwards: :func:`friction.regime`) that the
    step's end point puts it in, until no contact changes piece.  A contact
    moves one piece per round (:func:`next_piece`).  project: the Hessian
    factorized is the PSD-projected one (curvatures clamped at zero).

    With the linear static zone the friction energy is piecewise quadratic,
    and Newton's model (the pieces at x) sends contacts across the edges of
    their pieces; the next iteration then corrects only those.  The pieces
    differ from the model at x by a rank-1 term per contact whose curvature
    changes (r of them), so a round costs a forward substitution with r
    right-hand sides and two solves on the factorization of the Hessian
    (factor, a :class:`~solver.linsolve.linalg.Factorization`; Woodbury), not a
    factorization; nor a pass over all vertex DOFs: the gradient comes reduced on the
    unknowns (newton.gu), a round reads its step at the contacts' DOFs from their rows of
    the basis only, and the caller expands the accepted step.  A contact that changes
    piece settings.regime_switches times is held static; majorized contacts keep their
    model.  All or nothing: when a round would change more curvatures than
    settings.regime_max_entries allows (it would cost more than it saves;
    :func:`woodbury_step`) or is not a descent direction for the true gradient g (the
    modified Hessian need not be definite), the plain Newton step is returned: a partial
    correction measured worse than none.  After the last round its step is kept.
    Returns the step on the factorization's unknowns (see :class:`NewtonStep`;
    ``newton.u`` itself when no round changed it).
    """
    sets = [(fs, m > 0) for fs, m in zip(ip.friction_sets, majorize, strict=True) if len(fs)]
    if not sets:
        return newton.u
    disp = ip.displacement(x)
    model = RegimeModel(
        ip, sets, [friction.slip(fs, disp) for fs, _ in sets], newton.unknowns, newton.project
    )
    flips = [np.zeros(len(r), np.int8) for r in model.at_x]
    u = newton.u
    swept = SweptColumns(newton.factor, newton.unknowns, [len(fs) for fs, _ in sets])
    for _ in range(settings.regime_rounds):
        changed = False
        for (_, held), st, slip, piece, flip in zip(
            sets, model.stencils, model.slips, model.pieces, flips, strict=True
        ):
            # friction.slip of the step u, from its contacts' DOFs' rows of B only
            move = np.einsum("ni,ni->n", st.w, st.read(u))
            lands = friction.regime(slip + move, ip.eps)
            moved = (lands != piece) & ~held
            if moved.any():
                changed = True
                flip[moved] += 1
                ahead = next_piece(piece[moved], lands[moved])
                piece[moved] = np.where(flip[moved] >= settings.regime_switches, 0, ahead)
        if not changed:
            break
        u = woodbury_step(newton.gu, swept, model, settings)
        if u is None or not float(np.dot(newton.gu, u)) < 0.0:  # g . B u = B^T g . u
            return newton.u
    return u


def next_piece(piece, lands):
    """(m,) the piece a contact on ``piece`` (m,) is modelled on next when the
    step lands it on ``lands`` (m,): the next one along its slip's path.  A
    slip that crosses zero passes the static zone first, so a sliding
    contact the step reverses goes static, not to the opposite slide: that
    would flip its whole friction force (2 mu lambda) in the model, and with
    several such contacts on one body the re-solved step overshoots by
    orders of magnitude and is rejected as not a descent direction
    (docs/design/07-regime-rounds.md)."""
    return np.where(piece == -lands, 0, lands).astype(piece.dtype)


def woodbury_step(gq, swept, model, settings):
    """The step with the contacts modelled on other pieces (model: the step's
    :class:`RegimeModel`, its pieces the round's), on the factorization's
    unknowns (:mod:`solver.unknowns`; the vertex DOFs: (2N,)), or None when
    its dense update columns (the factorization's unknowns x the curvatures
    that change) would hold more than settings.regime_max_entries numbers
    (checked before they are built) or the update is singular.  gq: the
    gradient on those unknowns (``unknowns.reduce(g)``), shared by the
    step's rounds: a round adds only its changed contacts' forces, mapped
    from their DOFs' rows of the basis (not the whole gradient through all of
    it).  swept: the step's :class:`SweptColumns` (its factorization and
    unknowns), shared by its rounds.

    The columns' size is the round's cost: its forward sweeps and its memory
    grow with both.  A rigid body's unknowns carry all its contacts, so a
    pile solved in q changes many curvatures on few unknowns
    (docs/design/07-regime-rounds.md)."""
    forces, bends = model.update()
    if sum(len(dc) for _, _, dc in bends) * swept.unknowns.size > settings.regime_max_entries:
        return None
    Y, curvature = swept.columns(bends, model.stencils)
    rhs = -(gq + swept.unknowns.reduce_forces([(model.stencils[k], sel, f) for k, sel, f in forces]))
    return woodbury_solve(swept.factor, rhs, Y, curvature, swept=True)


class RegimeModel:
    """One step's friction contacts as its regime rounds model them: sets,
    (FrictionSet, majorized mask) pairs; slips, their slips at x; at_x, the
    pieces they are on at x (:func:`friction.regime`); pieces, those each
    round models them on (changed in place by the rounds); project:
    curvatures clamped at zero on both sides, as in the projected Hessian;
    ip: anything with the step's h and eps (the potential).  What a round
    reads of the contacts that does not change with their pieces is looked
    up once per step: their stencils on the unknowns (``unknowns.stencils``:
    each DOF's row of the basis) and their force and curvature at x."""

    def __init__(self, ip, sets, slips, unknowns, project=False):
        self.sets, self.slips, self.project = sets, slips, project
        self.h2, self.eps = ip.h * ip.h, ip.eps
        self.at_x = [friction.regime(u, ip.eps) for u in slips]
        self.pieces = [r.copy() for r in self.at_x]
        self.stencils = [unknowns.stencils(fs.dofs, fs.w) for fs, _ in sets]
        self.here = [
            self._clamped(friction.force_curvature(fs, slice(None), u, ip.eps))
            for (fs, _), u in zip(sets, slips, strict=True)
        ]

    def _clamped(self, force_curvature):
        f, c = force_curvature
        return f, (np.maximum(c, 0.0) if self.project else c)

    def update(self):
        """How the incremental potential's gradient and Hessian change when the
        contacts whose piece differs from the one at x are modelled on it:
        (forces, bends), the gradient changing by f w on each (set index,
        its contacts sel (k,), f (k,)) in forces, the Hessian by dc w w^T on
        each (set index, contacts sel (k,), dc (k,)) in bends, one contact per
        curvature that changes (h^2-scaled; w: the contacts' stencil vectors)."""
        forces, bends = [], []
        for k, ((fs, _), u, here, piece, (f_x, c_x)) in enumerate(
            zip(self.sets, self.slips, self.at_x, self.pieces, self.here, strict=True)
        ):
            other = np.flatnonzero(piece != here)
            if not len(other):
                continue
            f_piece, c_piece = self._clamped(
                friction.piece_force_curvature(fs, other, u[other], piece[other], self.eps)
            )
            forces.append((k, other, self.h2 * (f_piece - f_x[other])))
            dc = self.h2 * (c_piece - c_x[other])
            bend = dc != 0.0
            bends.append((k, other[bend], dc[bend]))
        return forces, bends


class SweptColumns:
    """The forward-swept update columns L^-1 W of one step's regime rounds,
    each contact's swept once: a contact's column (its weight vector on the
    factorization's unknowns) is the same in every round, only its
    curvature change differs, and most contacts of a round were in the one
    before (S4R: 69 columns a round, swept 1,319 times in 60 steps, most of
    the rounds' time; docs/design/07-regime-rounds.md).  factor: the step's
    :class:`~solver.linsolve.linalg.Factorization`; unknowns: its
    :mod:`solver.unknowns`; sizes: the friction sets' contact counts."""

    def __init__(self, factor, unknowns, sizes):
        self.factor, self.unknowns = factor, unknowns
        self.offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(int)
        self.slot = np.full(self.offsets[-1], -1)  # each contact's column of Y (-1: not swept yet)
        # the swept columns as rows, in self.Yt[:self.m]: a round gathers its columns as whole
        # rows (Y[:, slots] of a row-major Y reads them element by element: 4-15 times slower)
        self.Yt = np.zeros((0, unknowns.size))
        self.m = 0

    def columns(self, bends, stencils):
        """(L^-1 W (n, r), curvature (r,)) of bends (as :meth:`RegimeModel.update`'s:
        (set index, contacts sel, dc)), the new contacts' columns swept;
        stencils: the sets' :class:`~solver.unknowns.Stencils`.  L^-1 W is the
        transpose of a row-major (r, n) array: the layout (hence the BLAS
        calls and bits) of a column gather Y[:, slots] from a row-major Y."""
        keys = [self.offsets[k] + sel for k, sel, _ in bends]
        fresh = [(stencils[k], sel[self.slot[key] < 0]) for (k, sel, _), key in zip(bends, keys, strict=True)]
        keys = np.concatenate(keys or [np.zeros(0, int)])
        if any(len(sel) for _, sel in fresh):
            W = self.unknowns.stencil_columns(fresh)
            self._append(self.factor.half(W), keys[self.slot[keys] < 0])
        curvature = np.concatenate([dc for _, _, dc in bends] or [np.zeros(0)])
        return self.Yt.take(self.slot[keys], axis=0).T, curvature

    def _append(self, Y, keys):
        """Stores the swept columns Y (n, k) of the contacts keys (k,) (room
        doubled when full: each round's new columns are not copied anew)."""
        end = self.m + Y.shape[1]
        if end > len(self.Yt):
            room = np.empty((max(end, 2 * len(self.Yt)), self.Yt.shape[1]))
            room[: self.m] = self.Yt[: self.m]
            self.Yt = room
        self.Yt[self.m : end] = Y.T
        self.slot[keys] = np.arange(self.m, end)
        self.m = end


def piece_update(ip, n, sets, slips, at_x, pieces, project=False):
    """How the incremental potential's gradient and Hessian change when the
    friction contacts whose piece (pieces, per set (m,)) differs from the
    one at x (at_x) are modelled on it: (dg (n,), bends), the Hessian
    changing by dc w w^T for each (dofs (k, 2s), w (k, 2s), dc (k,)) in
    bends, one row per contact whose curvature changes (h^2-scaled).  sets:
    (FrictionSet, majorized mask) pairs; slips: their slips at x; project:
    curvatures clamped at zero on both sides, as in the projected Hessian;
    ip: anything with the step's h and eps (the potential).  The rounds use
    :meth:`RegimeModel.update`'s rows directly; this vertex-space form is
    the reference the tests hold them to."""
    unknowns = VertexUnknowns(np.zeros(n, bool))
    model = RegimeModel(ip, sets, slips, unknowns, project)
    model.at_x, model.pieces = at_x, pieces
    forces, bends = model.update()
    dg = unknowns.reduce_forces([(model.stencils[k], sel, f) for k, sel, f in forces])
    return dg, [(sets[k][0].dofs[sel], sets[k][0].w[sel], dc) for k, sel, dc in bends]


def next_majorize(majorize, flips, hold, iters):
    """Per friction set, (n,) iterations each contact stays majorized after
    this one: iters for the contacts this step reverses (flips, (n,) bool),
    one fewer for the others, except that with hold a contact once
    reversed stays majorized (while the Hessian is projected, far from the
    solution where Newton converges only linearly anyway: dropping it lets
    it flip back and forth; not where the regime rounds model the
    reversals: there keeping the majorizer cost iterations)
    (docs/design/03-friction-kinks.md)."""
    return tuple(
        np.where(f, iters, np.where(hold & (m > 0), m, np.maximum(m - 1, 0)))
        for m, f in zip(majorize, flips, strict=True)
    )


def line_search_start(alpha, zero_slip, project, floor):
    """Where the line search starts: alpha (the feasible step, from CCD),
    shortened to the zero-slip stop (:func:`kink_step`) unless Newton is
    on the projected Hessian (project: whether it stays there, i.e. the
    step was projected and is not yet small enough to retry the exact one).
    There a contact once reversed stays majorized (its model already stops
    it at zero slip), so the stop would only catch the first contact
    reversing anew and hold every body to its zero slip, far from the
    solution (docs/design/03-friction-kinks.md)."""
    return alpha if project else min(alpha, kink_step(zero_slip, floor))


def kink_step(zero_slip, floor):
    """Where the line search starts, as far as friction is concerned: the
    fraction of the step at which the first sliding contact it reverses
    reaches zero slip (zero_slip: per friction set, (n,) fractions, see
    :class:`~solver.newton.Direction`), unless that is below floor (then 1:
    backtracking decides).

    A sliding contact has no friction curvature (its potential is linear in
    the slip), so Newton's step sends its slip far across zero, where the
    force flips; Armijo then halves the whole step several times, and the
    next step sends it back.  Stopping at zero slip puts the contact in the
    static zone, whose curvature the next Newton step sees.  When many
    contacts reverse at once (a pile landing) the first of them would hold
    every body to a tiny step, so a fraction below the floor is ignored.
    """
    alpha = min((float(f.min(initial=1.0)) for f in zero_slip), default=1.0)
    return alpha if alpha >= floor else 1.0
