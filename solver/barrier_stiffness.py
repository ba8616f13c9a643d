"""Adaptive barrier stiffness kappa (IPC), when the scene leaves kappa to the solver.

- It starts at :func:`auto_kappa`, a fraction of the softest Young's modulus
  (seed 004: the barrier is a thin elastic layer), and never goes below it.
- When contact first appears, :func:`balanced` raises it so that the barrier
  gradient can balance the inertia + elastic gradient it opposes.
- After a step that ended with a contact closer than ``close`` x dhat,
  :func:`stiffened` doubles it.
- It never exceeds ``max_factor`` x the starting value.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import elasticity


@dataclass(frozen=True)
class BarrierStiffnessSettings:
    min_modulus_fraction: float = 0.1  # the starting kappa: this x the softest Young's modulus
    max_factor: float = 1e4  # kappa stays within [kappa_min, max_factor * kappa_min]
    close: float = 1e-2  # a contact closer than close * dhat at the end of a step ...
    growth: float = 2.0  # ... multiplies kappa by growth


DEFAULTS = BarrierStiffnessSettings()


def auto_kappa(scene, settings=DEFAULTS):
    """The automatic barrier stiffness's starting value and lower bound [Pa]:
    from the softest deformable body (a rigid body has no elastic layer to
    match: a steel prop must not stiffen the contacts of a soft character),
    or the softest body when all are rigid."""
    deformable = [b.material.E for b in scene.bodies if b.kind != "rigid"]
    return settings.min_modulus_fraction * min(deformable or [b.material.E for b in scene.bodies])


def opposed_gradient(model, dt, x, x_tilde):
    """(2N,) gradient of the inertia and elastic terms of the incremental
    potential at x, 1/2 |x - x_tilde|_M^2 + dt^2 Psi(x): what the barrier opposes."""
    g = (model.mass[:, None] * (x - x_tilde)).ravel()
    el = model.elastic_elements  # rigid bodies have none
    if el is not None:
        g += np.bincount(el.dofs, weights=(dt * dt * elasticity.gradient(el, x)).ravel(), minlength=len(g))
    return g


def balanced(kappa, kappa_min, g_opposed, g_barrier, free, settings=DEFAULTS):
    """The stiffness once contact appears: the least-squares balance over the
    free DOFs (free: (2N,) bool) of g_opposed + kappa g_barrier = 0,
    kappa = -(g_opposed . g_barrier) / |g_barrier|^2 (g_barrier: the barrier
    gradient at kappa = 1), never below the current kappa nor above the cap."""
    g_o, g_b = g_opposed[free], g_barrier[free]
    k = -float(np.dot(g_o, g_b)) / float(np.dot(g_b, g_b))
    return min(max(kappa, k), settings.max_factor * kappa_min)


def stiffened(kappa, kappa_min, d_min, dhat, settings=DEFAULTS):
    """The stiffness after a step whose smallest contact distance was d_min:
    multiplied by ``growth`` when d_min < close * dhat (up to the cap)."""
    if d_min < settings.close * dhat:
        return min(settings.growth * kappa, settings.max_factor * kappa_min)
    return kappa
