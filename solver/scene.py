"""Scene description: frozen dataclasses for materials, bodies, colliders,
half-planes, pins, links and simulation parameters.  Units are SI throughout
(metres, seconds, kilograms, pascals).

These are plain data holders; :mod:`solver.validate` checks them and
:mod:`solver.simulation` turns them into flat arrays.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class Material:
    """Compressible Neo-Hookean material.

    E: Young's modulus [Pa] (> 0); nu: Poisson ratio in (-1, 0.5);
    density: [kg/m^2] in 2D (> 0); mu: Coulomb friction coefficient (>= 0).
    mu_static: optional static coefficient (>= mu) used while contacts stick
    (relative velocity below eps_v); None means equal to mu.  Pair
    coefficients combine as the geometric mean sqrt(mu_a mu_b) (colliders and
    half-planes have a single mu used for both).
    """

    E: float = 1e5
    nu: float = 0.4
    density: float = 1000.0
    mu: float = 0.4
    mu_static: float | None = None


@dataclass(frozen=True)
class Pin:
    """Prescribed body vertices.

    indices: (k,) vertex indices into the body.
    times: (T,) increasing sample times, or None for fixed pins (stay at rest).
    positions: (T, k, 2) sampled target positions (linear interpolation between
    samples, clamped outside), or None for fixed pins.
    """

    indices: np.ndarray
    times: np.ndarray | None = None
    positions: np.ndarray | None = None


@dataclass(frozen=True)
class Body:
    """A 2D body: triangle mesh in its rest (= initial) configuration.

    vertices: (n, 2) float; triangles: (m, 3) int, counter-clockwise or
    consistently clockwise (clockwise meshes are re-oriented).
    velocity: optional initial velocity, (2,) or (n, 2).
    kind: 'deformable' (Neo-Hookean, 2 unknowns per vertex) or 'rigid' (an
    affine body, x = A X + p, kept rigid by its orthogonality energy:
    solver/basis.py; its material's E only bounds that stiffness from
    below) or 'stiff' (the affine motion plus its ``modes`` lowest elastic
    modes, keeping its Neo-Hookean energy: solver/modal.py); the pins of both
    are stiff springs (solver/links.py).
    modes: the number of elastic modes of a stiff body (ignored otherwise).
    """

    name: str
    vertices: np.ndarray
    triangles: np.ndarray
    material: Material = field(default_factory=Material)
    velocity: np.ndarray | None = None
    pins: tuple[Pin, ...] = ()
    # the collision groups it belongs to (ints in [0, 64)): it collides with the bodies
    # and colliders sharing one of them (all in group 0 by default: everything collides)
    collision_groups: tuple[int, ...] = (0,)
    kind: str = "deformable"
    modes: int = 6


BODY_KINDS = ("deformable", "rigid", "stiff")


@dataclass(frozen=True)
class Collider:
    """A kinematic polyline whose vertex positions are prescribed over time.

    vertices: (k, 2) positions at times[0]; edges: (l, 2) int.
    times: (T,) increasing sample times; positions: (T, k, 2) sampled positions.
    Between samples positions are interpolated linearly; outside, clamped.
    Use :meth:`from_rigid` for a rigid motion given as 2x3 affine transforms.
    mu: friction coefficient of the collider surface.
    """

    name: str
    vertices: np.ndarray
    edges: np.ndarray
    times: np.ndarray
    positions: np.ndarray
    mu: float = 0.0
    collision_groups: tuple[int, ...] = (0,)  # as Body.collision_groups

    @staticmethod
    def from_rigid(name, local_vertices, edges, times, transforms, mu=0.0):
        """Collider from local vertices (k,2) and transforms (T,2,3): x = A @ X + t."""
        local = np.asarray(local_vertices, float)
        tf = np.asarray(transforms, float)
        pos = np.einsum("tij,kj->tki", tf[:, :, :2], local) + tf[:, None, :, 2]
        return Collider(name, pos[0].copy(), np.asarray(edges, int), np.asarray(times, float), pos, mu)

    @staticmethod
    def static(name, vertices, edges, mu=0.0):
        """A collider that never moves."""
        v = np.asarray(vertices, float)
        return Collider(name, v, np.asarray(edges, int), np.array([0.0]), v[None].copy(), mu)


@dataclass(frozen=True)
class HalfPlane:
    """The region {x : normal . (x - point) >= 0} is free; bodies stay in it."""

    point: tuple[float, float] = (0.0, 0.0)
    normal: tuple[float, float] = (0.0, 1.0)
    mu: float = 0.4
    name: str = "ground"


LINK_KINDS = ("pin", "weld", "spring", "rope")


@dataclass(frozen=True)
class LinkAnchor:
    """One end of a link: a material point of a body, or a point of the world.

    body: the body's name, or None for a world anchor.
    On a body: triangle (index into its triangles) and barycentric (3,)
    coordinates in it (the point follows the triangle; non-negative, summing
    to 1: inside it).  See :func:`solver.links.anchor_at` to place one at a
    rest-space point.
    In the world: position (2,), or an animated one: times (T,) increasing
    and positions (T, 2) (linear between samples, clamped outside, as a
    collider's).
    """

    body: str | None = None
    triangle: int = 0
    barycentric: tuple[float, float, float] = (1.0 / 3.0, 1.0 / 3.0, 1.0 / 3.0)
    position: tuple[float, float] = (0.0, 0.0)
    times: np.ndarray | None = None
    positions: np.ndarray | None = None


@dataclass(frozen=True)
class Link:
    """A link between two anchors (solver/links.py; docs/scene_format.md, "Links").

    kind: 'pin' (the anchors held together, free to rotate), 'weld' (held
    together with no relative rotation), 'spring' (rest length, stiffness,
    damping) or 'rope' (a maximum distance only).
    length: the spring's rest length or the rope's maximum length [m]; None:
    the anchors' distance at rest (pins and welds: 0, always).
    stiffness: [N/m]; None: the rigid default (pin, weld, rope; see
    solver.links.rigid_stiffness); a spring needs one.
    damping: [N s/m] on the rate of change of a spring's length.
    break_force: [N] the link is removed after the first step ending with its
    force above it; None: unbreakable.
    collide: whether the two linked bodies still collide with each other.
    engaged_times, engaged: optional (K,) increasing times [s] and (K,) bools:
    the link holds while the value of the latest sample at or before t is
    true (before the first sample: the first value); None: always engaged.
    A released link exerts no force and cannot break; engaged again it pulls
    its anchors back together (a pin that lets go and grips again).
    """

    name: str
    kind: str
    a: LinkAnchor
    b: LinkAnchor = field(default_factory=LinkAnchor)
    length: float | None = None
    stiffness: float | None = None
    damping: float = 0.0
    break_force: float | None = None
    collide: bool = False
    engaged_times: np.ndarray | None = None
    engaged: np.ndarray | None = None


@dataclass(frozen=True)
class SimParams:
    """Simulation parameters.

    dt: time step h [s].
    dhat: barrier activation distance d^ [m].
    kappa: barrier stiffness; None = automatic (adaptive, from the scene).
        In both formulations the barrier energy of a point-edge pair is
        w * kappa * dhat * B(d^2/dhat^2) with B(s) = -(s-1)^2 ln s and w the
        point's quadrature weight (half its incident boundary-edge lengths,
        halved again for point-edge pairs because each pair is seen from both
        sides), so kappa has units of pressure [Pa].
    formulation: 'original' (sum over point-edge pairs) or 'convergent'
        (duplicate point-point terms subtracted, seed 004).
    eps_v: friction smoothing velocity [m/s]: below it the friction force
        grows linearly with the slip speed, so a contact using a fraction c
        of its friction limit creeps at c * eps_v.
    friction_mollifier: the friction force's profile below eps_v (the static
        zone): 'linear' (the default: the force grows linearly with the slip
        speed, see above) or 'ipc' (the IPC papers' and ipc-toolkit's
        mollifier f1(y) = 2y/eps - y^2/eps^2, eps = eps_v dt: the force rises
        twice as steeply at zero slip and flattens into mu lambda at eps_v, so
        a contact using a fraction c of its limit creeps at
        (1 - sqrt(1 - c)) * eps_v; Newton converges more slowly near the
        friction limit).  See solver.friction.
    newton_tol: Newton converges when ||dx||_inf / dt < newton_tol [m/s] and
        the forces balance (force_tol).
    force_tol: ... and when every body's net force and torque are below
        force_tol times its weight plus inertial force, and every vertex's
        net force below NewtonSettings.vertex_slack (10) times force_tol times the forces
        acting on it [-]: a Newton step can be tiny while a large force is
        unbalanced (static friction, stiff contact), so the step size alone
        cannot tell convergence (see newton.force_imbalance).
    max_newton_iters: iteration cap per step, shared by its penalty rounds.
    gravity: (2,) [m/s^2].
    strict: raise ConvergenceError when a step does not converge; otherwise
        the step's stats record converged=False and a warning is emitted.
    linear_solver: 'auto' (scipy if importable), 'scipy', 'numpy'.
    """

    dt: float = 0.01
    dhat: float = 0.01
    kappa: float | None = 1e5
    formulation: str = "original"
    eps_v: float = 1e-3
    friction_mollifier: str = "linear"
    newton_tol: float = 1e-2
    force_tol: float = 1e-3
    max_newton_iters: int = 100
    gravity: tuple[float, float] = (0.0, -9.81)
    strict: bool = True
    linear_solver: str = "auto"


@dataclass(frozen=True)
class Scene:
    bodies: tuple[Body, ...]
    colliders: tuple[Collider, ...] = ()
    half_planes: tuple[HalfPlane, ...] = ()
    params: SimParams = field(default_factory=SimParams)
    links: tuple[Link, ...] = ()
    fields: tuple[ForceField, ...] = ()
    animation: Animation | None = None


FIELD_KINDS = ("force", "wind", "drag", "vortex")
FIELD_SHAPES = ("point", "plane")
FIELD_FALLOFFS = ("none", "sphere")


@dataclass(frozen=True)
class Track:
    """A value sampled over time: times (T,) increasing, values (T,) or (T, 2)
    (linear between samples, clamped outside, as a collider's positions)."""

    times: np.ndarray
    values: np.ndarray


@dataclass(frozen=True)
class ForceField:
    """A Blender force field in the simulation plane (solver/fields.py;
    docs/scene_format.md, "Force fields").  It acts on every body vertex as on
    a Blender particle of mass 1 kg: its force [N] is applied per kilogram.

    kind: 'force' (along the line from the field's origin (point shape) or
    plane (plane shape) to the vertex: strength > 0 pushes away, < 0 pulls),
    'wind' (along direction), 'drag' (against the velocity: linear_drag |v|
    + quadratic_drag |v|^2) or 'vortex' (around the origin, counter-clockwise
    for strength > 0, magnitude strength times the distance).
    position: (2,) the origin; direction: (2,) the wind's direction and the
    plane shape's normal (its length scales the wind: the in-plane part of a
    tilted field's axis).  flow: Blender's Flow, a linear drag of the air the
    force or wind moves (not on drag fields).
    falloff: 'none' or 'sphere': beyond min_distance (0 when None) the field
    is scaled by (1 + d - min_distance)^-falloff_power, and is 0 beyond
    max_distance (when not None); d is the distance to the origin (point) or
    the plane (plane shape).
    times: (T,) sample times of the animated values, or None: then every
    animatable value (strength, flow, linear_drag, quadratic_drag, position,
    direction) is a number or (2,); with times, each may also be sampled,
    (T,) or (T, 2).
    """

    name: str
    kind: str
    strength: float | np.ndarray = 1.0
    position: tuple[float, float] | np.ndarray = (0.0, 0.0)
    direction: tuple[float, float] | np.ndarray = (0.0, 1.0)
    shape: str = "point"
    falloff: str = "none"
    falloff_power: float = 0.0
    min_distance: float | None = None
    max_distance: float | None = None
    flow: float | np.ndarray = 0.0
    linear_drag: float | np.ndarray = 0.0
    quadratic_drag: float | np.ndarray = 0.0
    times: np.ndarray | None = None


@dataclass(frozen=True)
class MaterialAnimation:
    """A body's time-varying material (solver/animated.py): each of E,
    density and mu a :class:`Track` of scalars or None (the material's value);
    and a per-vertex stiffness: stiffness_weights (n,) in [0, 1] (a painted
    vertex group) scale each triangle's E by min + (max - min) * (the mean of
    its vertices' weights), (min, max) = stiffness_factors."""

    body: str
    E: Track | None = None
    density: Track | None = None
    mu: Track | None = None
    stiffness_weights: np.ndarray | None = None
    stiffness_factors: tuple[float, float] = (1.0, 1.0)


@dataclass(frozen=True)
class Animation:
    """Settings that follow keyframes, sampled at every (sub)step's start:
    gravity a Track of (T, 2), the bodies' materials, and each half-plane's
    friction (name, Track) pairs."""

    gravity: Track | None = None
    materials: tuple[MaterialAnimation, ...] = ()
    plane_mu: tuple[tuple[str, Track], ...] = ()
