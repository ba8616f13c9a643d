"""Force fields (:class:`~solver.scene.ForceField`): Blender's Force, Wind,
Drag and Vortex in the simulation plane, and the drag term of the
incremental potential.

Blender's definitions (its particle effectors), per unit of mass (a field acts
on every vertex as on a Blender particle of mass 1 kg; docs/scene_format.md):

- falloff g(d): 1 below min_distance, 0 beyond max_distance, else
  (1 + d - min_distance)^-power ('sphere'; 'none' is g = 1); d is the distance
  to the field's origin (point shape) or to its plane (plane shape);
- Force: strength g along the unit vector from the origin (or the plane) to the
  vertex (strength > 0 pushes away);
- Wind: strength g along the field's direction;
- Vortex: strength g d along the counter-clockwise tangent around the origin;
- Drag: -g (linear_drag + quadratic_drag |v|) v;
- Flow (Force, Wind, Vortex): -flow g v, a linear drag of the air they move.

Force, Wind and Vortex are lagged: evaluated at the (sub)step's start
positions and time, and added to the step's constant external force
(:class:`~solver.terms.ExternalForce`).  Vortex is no gradient field (its
curl is 2 strength): it has no potential an implicit step could minimize.
Force and Wind have potentials, but a repeller's is concave across its rays
and an attractor's along them, and max_distance makes them kinked: lagged,
they cost the first-order error implicit Euler has anyway and leave the
Hessian as it is (docs/design/16-force-fields.md).

Drag depends on the velocity v = (x - x^n) / h, so implicit Euler can take it
in x as a dissipative potential (the coefficients c1, c2 per vertex, falloff
included, frozen at the step's start):

    D(x) = h sum_i m_i (c1_i |v_i|^2 / 2 + c2_i |v_i|^3 / 3)
    grad_i = m_i (c1_i + c2_i |v_i|) v_i
    Hess_i = m_i / h (c1_i I + c2_i (|v_i| I + v_i v_i^T / |v_i|))

convex (c1, c2 >= 0): nothing to project.  :class:`FieldDrag` is its term.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .assembly import Triplets


@dataclass(frozen=True)
class FieldAt:
    """One field's values at one time (see :class:`~solver.scene.ForceField`)."""

    kind: str
    shape: str
    strength: float
    position: np.ndarray  # (2,)
    direction: np.ndarray  # (2,)
    flow: float
    linear_drag: float
    quadratic_drag: float


_VECTORS = ("position", "direction")
_SCALARS = ("strength", "flow", "linear_drag", "quadratic_drag")


def field_at(f, t) -> FieldAt:
    """The field f's animated values at time t (a (2,) value given with times
    of length 2 is a vector, not two samples: vectors are sampled only when
    (T, 2))."""
    ts = None if f.times is None else np.asarray(f.times, float)
    vals = {}
    for name in _SCALARS:
        a = np.asarray(getattr(f, name), float)
        vals[name] = float(_interp(a, ts, t) if a.ndim == 1 else a)
    for name in _VECTORS:
        a = np.asarray(getattr(f, name), float)
        vals[name] = _interp(a, ts, t) if a.ndim == 2 else a
    return FieldAt(f.kind, f.shape, **vals)


def _interp(a, ts, t):
    """Samples a (T, ...) at t: linear between sample times ts, clamped outside."""
    if len(ts) == 1 or t <= ts[0]:
        return a[0]
    if t >= ts[-1]:
        return a[-1]
    i = int(np.searchsorted(ts, t, side="right")) - 1
    w = (t - ts[i]) / (ts[i + 1] - ts[i])
    return (1.0 - w) * a[i] + w * a[i + 1]


def offsets(fa: FieldAt, x):
    """(r (N, 2), d (N,)): each vertex's offset from the field's origin (point
    shape) or from its plane (plane shape, along the unit normal) and its length."""
    r = x - fa.position
    if fa.shape == "plane":
        n = fa.direction / max(float(np.hypot(*fa.direction)), 1e-300)
        r = (r @ n)[:, None] * n
    return r, np.hypot(r[:, 0], r[:, 1])


def falloff(f, d):
    """(N,) Blender's falloff factor of field f (its settings) at distances d."""
    g = np.ones_like(d)
    if f.falloff == "none":
        return g
    d_min = 0.0 if f.min_distance is None else float(f.min_distance)
    beyond = d >= d_min
    g[beyond] = (1.0 + d[beyond] - d_min) ** -float(f.falloff_power)
    if f.max_distance is not None:
        g[beyond & ((d > f.max_distance) | (f.max_distance - d_min <= 0.0))] = 0.0
    return g


def _unit(r, d):
    safe = np.where(d > 0.0, d, 1.0)
    return np.where(d[:, None] > 0.0, r / safe[:, None], 0.0)


def acceleration(f, fa: FieldAt, x):
    """(N, 2) the position-dependent part of field f's force per kilogram at x
    (zero for drag fields)."""
    r, d = offsets(fa, x)
    g = falloff(f, d)
    if fa.kind == "force":
        return (fa.strength * g)[:, None] * _unit(r, d)
    if fa.kind == "wind":
        return (fa.strength * g)[:, None] * fa.direction
    if fa.kind == "vortex":
        return (fa.strength * g)[:, None] * np.column_stack([-r[:, 1], r[:, 0]])
    return np.zeros_like(x)


def drag_coefficients(f, fa: FieldAt, x):
    """((N,), (N,)) field f's linear and quadratic drag per kilogram at x:
    a drag field's, or the flow of the others."""
    _, d = offsets(fa, x)
    g = falloff(f, d)
    if fa.kind == "drag":
        return fa.linear_drag * g, fa.quadratic_drag * g
    return fa.flow * g, np.zeros_like(g)


@dataclass(frozen=True)
class FieldStep:
    """The fields' contribution to one (sub)step, frozen at its start:
    force (N, 2) [N] (None: none), c1, c2 (N,) the drag coefficients times
    the vertex masses (None: no drag)."""

    force: np.ndarray | None
    c1: np.ndarray | None
    c2: np.ndarray | None


def step_fields(fields, x, t, mass, on_body):
    """The :class:`FieldStep` of the fields at positions x (N, 2) and time t;
    mass (N,), on_body (N,) bool (colliders feel nothing).  None without fields."""
    if not fields:
        return None
    acc = np.zeros_like(x)
    c1 = np.zeros(len(x))
    c2 = np.zeros(len(x))
    for f in fields:  # a handful of fields: each one vectorized over the vertices
        fa = field_at(f, t)
        acc += acceleration(f, fa, x)
        a, b = drag_coefficients(f, fa, x)
        c1 += a
        c2 += b
    m = np.where(on_body, mass, 0.0)
    force = m[:, None] * acc
    has_drag = bool(np.any(c1 * m) or np.any(c2 * m))
    return FieldStep(
        force if np.any(force) else None,
        m * c1 if has_drag else None,
        m * c2 if has_drag else None,
    )


class FieldDrag:
    """The dissipative potential of the fields' drag (module doc), h^2-weighted
    like every force's, on the velocity (x - x^n) / h of the vertices it acts on."""

    per_h2, stage = True, "inertia+penalty"

    def __init__(self, c1, c2, x_prev, h):
        self.on = np.flatnonzero((c1 != 0.0) | (c2 != 0.0))
        self.c1, self.c2 = c1[self.on], c2[self.on]
        self.x_prev, self.h = x_prev[self.on], h
        self.weight = h * h
        self.dofs = (2 * self.on[:, None] + np.arange(2)).ravel()

    @classmethod
    def build(cls, model, consts):
        fs = getattr(consts, "fields", None)
        if fs is None or fs.c1 is None:
            return None
        return cls(fs.c1, fs.c2, consts.x_prev, consts.h)

    def _velocity(self, x):
        v = (x[self.on] - self.x_prev) / self.h
        return v, np.hypot(v[:, 0], v[:, 1])

    def value(self, x, cs):
        _, s = self._velocity(x)
        return float(self.h * np.sum(self.c1 * s * s / 2.0 + self.c2 * s**3 / 3.0))

    def gradient(self, x, cs, T: Triplets):
        v, s = self._velocity(x)
        T.add_gradient_at(self.dofs, self.weight * (self.c1 + self.c2 * s)[:, None] * v)

    def gradient_hessian(self, x, cs, T: Triplets, project, majorize=None):
        v, s = self._velocity(x)
        g = (self.c1 + self.c2 * s)[:, None] * v
        # m/h (c1 I + c2 (|v| I + v v^T / |v|)) per vertex: PSD as it is, nothing to project
        safe = np.where(s > 0.0, s, 1.0)[:, None, None]  # v v^T / |v| is 0 at v = 0
        outer = v[:, :, None] * v[:, None, :] / safe
        H = (self.c1 + self.c2 * s)[:, None, None] * np.eye(2) + self.c2[:, None, None] * outer
        T.add_stencils(self.on[:, None], self.weight * g, (self.weight / self.h) * H)
