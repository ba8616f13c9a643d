"""Semi-implicit (lagged) smoothed friction, after seeds 000/001/003.

At the start of a step, for every contact closer than dhat, the normal force
magnitude lambda, the contact normal n (hence the tangent t) and the
closest-point parameter r are frozen.  In 2D the tangent space is a line, so
the relative tangential displacement of contact k is a scalar::

    u_k = t_k . sum_a Gamma_ka (x_a - x_a^n)        (Gamma = [1, -(1-r), -r])

and the friction potential is ``D = sum_k lambda_k phi_k(|u_k|)``.  With a
single coefficient mu, ``phi = mu f0`` with the mollifier (eps = eps_v h, a
displacement)::

    f0(y) = y^2/(2 eps) + eps/2   for y < eps,   y otherwise
    f1 = f0' = y/eps   (y < eps),   1 otherwise
    f0''     = 1/eps   (y < eps),   0 otherwise   (>= 0: PSD)

i.e. below the slip speed eps_v the friction force grows linearly with the
slip (a contact using a fraction c < 1 of its friction limit creeps at
c eps_v), above it it is mu lambda.  Why linear rather than seed 000's
quadratic f1 = 2y/eps - y^2/eps^2 (docs/design/06-friction-static-zone.md).

With a static coefficient mu_s != mu_k the force magnitude phi' is mu_s f1
while sticking (y < eps), blends linearly to mu_k over [eps, 2 eps] and stays
mu_k beyond; phi is its integral (continuous, C^1).

The scene parameter ``friction_mollifier`` ('linear', the default, or 'ipc')
picks the static zone's profile: :data:`MOLLIFIERS` maps it to a
:class:`LinearMollifier` or an :class:`IpcMollifier` (seed 000's, as in
ipc-toolkit: f0 = -y^3/(3 eps^2) + y^2/eps + eps/3, f1 = 2y/eps - y^2/eps^2,
f0'' = 2/eps - 2y/eps^2 below eps), which each :class:`FrictionSet` carries.
Both have f1(eps) = 1 and f0(eps) = eps, so the blend and sliding branches are
the same for both.

Gradient: lambda phi'(|u|) sign(u) w, Hessian: lambda phi''(|u|) w w^T with
w = Gamma (x) t the stencil-weighted tangent (n, 2k).  The PSD projection
clamps the scalar coefficient at zero (needed only for mu_s > mu_k in the
blend zone and for the negative duplicate terms of the convergent formulation).
"""

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from .assembly import block_pattern, stencil_dofs


class LinearMollifier:
    """The static zone linear in the slip (the default): f1 = y/eps below
    eps, so f0 is quadratic there and the friction energy piecewise quadratic."""

    name = "linear"

    @staticmethod
    def f0(y, eps):
        y = np.abs(y)
        return np.where(y < eps, y * y / (2.0 * eps) + eps / 2.0, y)

    @staticmethod
    def f1(y, eps):
        y = np.abs(y)
        return np.where(y < eps, y / eps, 1.0)

    @staticmethod
    def f0_d2(y, eps):
        y = np.abs(y)
        return np.where(y < eps, 1.0 / eps, 0.0)


class IpcMollifier:
    """Seed 000's (and ipc-toolkit's) mollifier: f1 = 2y/eps - y^2/eps^2 below
    eps, f0 its integral with f0(eps) = eps (C^2 at eps; the curvature
    f0'' = 2 (eps - y) / eps^2 falls from 2/eps at y = 0 to 0 at eps)."""

    name = "ipc"

    @staticmethod
    def f0(y, eps):
        y = np.abs(y)
        return np.where(y < eps, y * y * (3.0 * eps - y) / (3.0 * eps * eps) + eps / 3.0, y)

    @staticmethod
    def f1(y, eps):
        y = np.abs(y)
        return np.where(y < eps, y * (2.0 * eps - y) / (eps * eps), 1.0)

    @staticmethod
    def f0_d2(y, eps):
        y = np.abs(y)
        return np.where(y < eps, 2.0 * (eps - y) / (eps * eps), 0.0)


LINEAR, IPC = LinearMollifier(), IpcMollifier()
MOLLIFIERS = {m.name: m for m in (LINEAR, IPC)}  # SimParams.friction_mollifier -> profile


@dataclass(frozen=True)
class FrictionSet:
    """Frozen friction contacts of one time step.

    idx: (n, k) vertex stencils; w: (n, 2k) tangent weights Gamma (x) t;
    mu_lambda: (n,) kinetic mu * lambda (negative for subtracted duplicate terms);
    mu_s_lambda: (n,) static mu_s * lambda, or None when equal to mu_lambda;
    mollifier: the static zone's profile (:data:`MOLLIFIERS`).
    """

    idx: np.ndarray
    w: np.ndarray
    mu_lambda: np.ndarray
    mu_s_lambda: np.ndarray | None = None
    mollifier: LinearMollifier | IpcMollifier = LINEAR

    @staticmethod
    def empty(k):
        return FrictionSet(np.zeros((0, k), np.intp), np.zeros((0, 2 * k)), np.zeros(0))

    def __len__(self):
        return len(self.mu_lambda)

    @cached_property
    def dofs(self):
        """(n, 2k) global DOF indices of the stencils (fixed for the step)."""
        return stencil_dofs(self.idx)

    @cached_property
    def pattern(self):
        """COO (rows, cols) of the (2k x 2k) Hessian blocks (fixed for the step)."""
        return block_pattern(self.idx)

    @property
    def static(self):
        return self.mu_lambda if self.mu_s_lambda is None else self.mu_s_lambda


# the default profile's functions, by their seed names
f0, f1, f0_d2 = LINEAR.f0, LINEAR.f1, LINEAR.f0_d2


def tangent_weights(gamma, tangent):
    """w (n, 2k) = Gamma (n,k) outer tangent (n,2)."""
    return (gamma[:, :, None] * tangent[:, None, :]).reshape(len(gamma), -1)


def slip(fs, dx):
    """Tangential relative displacement u (n,) for displacements dx (N,2)."""
    return np.einsum("ni,ni->n", fs.w, dx.reshape(-1)[fs.dofs])


def _phi(y, a, b, eps, mollifier=LINEAR):
    """Per-contact potential lambda phi(|u|); a = mu_s lambda, b = mu_k lambda."""
    y = np.abs(y)
    blend = y - eps
    return np.where(
        y < eps,
        a * mollifier.f0(y, eps),
        np.where(
            y < 2 * eps, a * y + (b - a) * blend * blend / (2 * eps), 0.5 * (3 * a - b) * eps + b * (y - eps)
        ),
    )


def _dphi(y, a, b, eps, mollifier=LINEAR):
    y = np.abs(y)
    return np.where(
        y < eps, a * mollifier.f1(y, eps), np.where(y < 2 * eps, a + (b - a) * (y - eps) / eps, b)
    )


def _d2phi(y, a, b, eps, mollifier=LINEAR):
    y = np.abs(y)
    return np.where(y < eps, a * mollifier.f0_d2(y, eps), np.where(y < 2 * eps, (b - a) / eps, 0.0))


def value(fs, dx, eps):
    if len(fs) == 0:
        return 0.0
    return float(np.sum(_phi(slip(fs, dx), fs.static, fs.mu_lambda, eps, fs.mollifier)))


def gradient(fs, dx, eps):
    """Per-contact gradients (n, 2k)."""
    return _gradient_at(fs, slip(fs, dx), eps)


def gradient_hessian(fs, dx, eps, project=True, majorize=None, deficit=None):
    """Per-contact gradients (n, 2k) and Hessians (n, 2k, 2k) sharing the
    slip; deficit: see :func:`~solver.linsolve.linalg.project_psd`."""
    u = slip(fs, dx)
    return _gradient_at(fs, u, eps), _hessian_at(fs, u, eps, project, majorize, deficit)


def hessian(fs, dx, eps, project=True, majorize=None):
    """Per-contact Hessians (n, 2k, 2k).

    majorize: optional (n,) bool; those contacts get the curvature
    phi'(|u|)/|u| of the quadratic that majorizes phi(|u|) (phi'(y)/y is
    non-increasing), so a Newton step cannot overshoot their kink at u = 0.
    """
    return _hessian_at(fs, slip(fs, dx), eps, project, majorize)


def _gradient_at(fs, u, eps):
    return (_dphi(u, fs.static, fs.mu_lambda, eps, fs.mollifier) * np.sign(u))[:, None] * fs.w


def _hessian_at(fs, u, eps, project, majorize, deficit=None):
    c = _d2phi(u, fs.static, fs.mu_lambda, eps, fs.mollifier)
    if majorize is not None and majorize.any():
        y = np.maximum(np.abs(u[majorize]), 1e-6 * eps)
        c[majorize] = _dphi(y, fs.static[majorize], fs.mu_lambda[majorize], eps, fs.mollifier) / y
    if project:
        if deficit is not None and (c < 0.0).any():
            which = np.flatnonzero(c < 0.0)
            deficit.append((which, _rank_one(-c[which], fs.w[which])))
        c = np.maximum(c, 0.0)
    return _rank_one(c, fs.w)


def _rank_one(c, w):
    """Per-contact Hessians (n, 2k, 2k) c w w^T of curvatures c (n,) along w (n, 2k)."""
    return c[:, None, None] * (w[:, :, None] * w[:, None, :])


def regime(u, eps):
    """(n,) int8 regime of each slip u (n,): 0 in the static zone (|u| < eps),
    +1 / -1 sliding forwards / backwards."""
    return np.where(np.abs(u) < eps, 0, np.sign(u)).astype(np.int8)


def piece_force_curvature(fs, sel, u, piece, eps):
    """The friction energy of the contacts sel (a mask or indices, m of
    them) on the pieces ``piece`` (m,) (see :func:`regime`), extended to
    their slips u (m,): (force coefficient, curvature), each (m,), so that
    the gradient is coefficient * w and the Hessian curvature * w w^T.
    Static: mu_s lambda u^2 / (2 eps), i.e. (a u / eps, a / eps); sliding
    with sign s: mu_k lambda s u, i.e. (b s, 0).

    The static piece is that quadratic for both mollifiers.  With 'linear'
    it is the energy itself; with 'ipc' the energy there is cubic in |u|,
    and this quadratic is its secant (the same force at u = 0 and |u| =
    eps, at most half of it short inside): the contacts modelled on a piece
    other than their own are sliding ones sent static (:func:`next_piece`),
    at |u| >= eps, where the cubic's own extension has negative curvature
    and a force growing as u^2.  The regime rounds' step is then only
    approximate for 'ipc'; Newton's next iteration corrects it.  The
    tangent, which majorizes the cubic, measured no better overall, so both
    profiles share one static piece (docs/design/06-friction-static-zone.md)."""
    a, b = fs.static[sel], fs.mu_lambda[sel]
    return np.where(piece == 0, a * u / eps, b * piece), np.where(piece == 0, a / eps, 0.0)


def force_curvature(fs, sel, u, eps):
    """(force coefficient, curvature), each (m,), of the friction energy of
    the contacts sel at their slips u (m,): gradient coefficient * w,
    Hessian curvature * w w^T."""
    a, b = fs.static[sel], fs.mu_lambda[sel]
    m = fs.mollifier
    return _dphi(u, a, b, eps, m) * np.sign(u), _d2phi(u, a, b, eps, m)


def zero_slip_fraction(fs, disp, step, eps):
    """(n,) fraction of the step at which each contact's slip reaches zero,
    for contacts sliding (|u| >= eps) that the step reverses; 1 for the others.

    The slip is linear in the displacement, so at that fraction u = 0 exactly.
    """
    if len(fs) == 0:
        return np.ones(0)
    u0 = slip(fs, disp)
    du = slip(fs, step)
    reversed_ = (np.abs(u0) >= eps) & (u0 * (u0 + du) < 0.0)
    # reversed: |du| > |u0| >= eps > 0, so the division is safe
    return np.where(reversed_, np.abs(u0) / np.where(reversed_, np.abs(du), 1.0), 1.0)
