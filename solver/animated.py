"""Settings that follow keyframes (:class:`~solver.scene.Animation`): gravity,
the bodies' Young's modulus, density and friction, the half-planes' friction,
sampled at each (sub)step's start; and the per-vertex stiffness of a painted
vertex group (constant: applied once).

The model's arrays are the scene's constants; :meth:`AnimatedModel.at` returns
the model with the animated values of time t in their place (a new frozen
Model sharing everything else), and the model itself when nothing is
animated, so that constant scenes run exactly as before.  Density changes the
lumped masses in proportion (inertia and the stop test's scales follow);
E scales each triangle's Lame parameters; mu sets the body's kinetic friction
(its static one: the material's mu_static, or mu(t) when that is higher or unset).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from .fields import _interp

_CACHED = ("pair_eligible",)  # Model's cached properties, independent of the values


def track_at(track, t):
    """A Track's value at time t (linear between samples, clamped outside)."""
    return _interp(np.asarray(track.values, float), np.asarray(track.times, float), t)


def stiffness_scale(tris, weights, factors):
    """(m,) each triangle's E factor: lo + (hi - lo) * the mean weight of its vertices."""
    lo, hi = float(factors[0]), float(factors[1])
    return lo + (hi - lo) * np.asarray(weights, float)[tris].mean(axis=1)


class AnimatedModel:
    """The scene's animation compiled against its model (see module doc)."""

    def __init__(self, scene, model):
        anim = scene.animation
        self.gravity_track = None if anim is None else anim.gravity
        self.base = model
        mats = () if anim is None else anim.materials
        self._bodies = []  # (body index, vertex slice, element mask, material, MaterialAnimation)
        names = [b.name for b in scene.bodies]
        owner_of_element = model.owner[model.elements.tris[:, 0]]
        for ma in mats:
            bi = names.index(ma.body)
            self._bodies.append(
                (bi, model.body_slices[bi], owner_of_element == bi, scene.bodies[bi].material, ma)
            )
        planes = [hp.name for hp in scene.half_planes]
        self._planes = [] if anim is None else [(planes.index(n), tr) for n, tr in anim.plane_mu]
        self.base = self._painted(model)
        self.varies = any(ma.E or ma.density or ma.mu for *_, ma in self._bodies) or bool(self._planes)

    def _painted(self, model):
        """The model with the painted per-triangle stiffness (constant) in place."""
        painted = [b for b in self._bodies if b[4].stiffness_weights is not None]
        if not painted:
            return model
        el = model.elements
        scale = np.ones(len(el.tris))
        for _, sl, mask, _, ma in painted:
            local = el.tris[mask] - sl.start
            scale[mask] = stiffness_scale(local, ma.stiffness_weights, ma.stiffness_factors)
        return _replaced(model, elements=replace(el, mu=el.mu * scale, lam=el.lam * scale))

    def gravity(self, t, constant):
        """The gravity (2,) at time t (constant: the scene's, when not animated)."""
        if self.gravity_track is None:
            return constant
        return track_at(self.gravity_track, t)

    def at(self, t):
        """The model with the animated values of time t (the base model when none vary)."""
        m = self.base
        if not self.varies:
            return m
        el = m.elements
        e_scale = np.ones(len(el.tris))
        mass, mu, mu_s = m.mass.copy(), m.mu.copy(), m.mu_static.copy()
        for _, sl, mask, mat, ma in self._bodies:
            if ma.E is not None:
                e_scale[mask] = track_at(ma.E, t) / mat.E
            if ma.density is not None:
                mass[sl] *= track_at(ma.density, t) / mat.density
            if ma.mu is not None:
                mu[sl] = track_at(ma.mu, t)
                mu_s[sl] = mu[sl] if mat.mu_static is None else np.maximum(mat.mu_static, mu[sl])
        plane_mu = m.plane_mu.copy()
        for i, tr in self._planes:
            plane_mu[i] = track_at(tr, t)
        elements = replace(el, mu=el.mu * e_scale, lam=el.lam * e_scale)
        return _replaced(m, elements=elements, mass=mass, mu=mu, mu_static=mu_s, plane_mu=plane_mu)


def _replaced(model, **changes):
    """dataclasses.replace keeping the cached properties that do not depend on the values."""
    new = replace(model, **changes)
    for name in _CACHED:
        if name in model.__dict__:
            new.__dict__[name] = model.__dict__[name]
    return new
