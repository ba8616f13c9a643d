"""Links between bodies (pin, weld, spring, rope) as terms of the incremental
potential (:mod:`solver.terms`), and their breaking.

Every link is made of one or more *springs* between two material points.  A
material point on a body is an affine combination of its triangle's vertices
(barycentric weights, extended affinely outside the triangle), a world point
a sampled trajectory; so the spring vector is linear in the positions,

    d(x) = sum_j C_j x_{I_j} + r(t),      (6-vertex stencil I, weights C)

C holding the first anchor's weights and minus the second's, r(t) the world
anchors' positions (first minus second).  With l = |d|, n = d / l:

- pin, weld (zero-length springs):  E = k/2 |d|^2;
- spring:                           E = k/2 (l - L)^2;
- rope (one-sided):                 E = k/2 max(0, l - L)^2.

A pin is one zero-length spring (free to rotate); a weld is three, at the
anchor and at two points one triangle size away along x and y (rest
space), so no relative rotation is left free.

Damping (springs): the Rayleigh dissipation R = c/2 (dl/dt)^2 enters an
implicit-Euler incremental potential as h R((x - x^n)/h); with the rate of
change of the length taken along the step start's direction n0 = d^n/|d^n|
(lagged like friction's tangent: the term is then quadratic, its Hessian
constant and PSD), dl/dt ~ n0 . (d(x) - d^n) / h and

    D(x) = c / (2 h) (n0 . (d(x) - d^n))^2,

whose force -grad D = -c (n0 . dd/h) n0 is the damping force on the
relative velocity along the spring.  Both energies are potentials of forces:
weighted by h^2 like elasticity.

Rigid links (pin, weld, rope: the stiffness left to the solver) use
k = RIGID_STIFFNESS * M / dt^2 with M the linked bodies' mass (one body's for
a world anchor): in the potential h^2 k = RIGID_STIFFNESS * M, a fixed
multiple of the inertia it acts against (as the barrier stiffness is scaled
to the forces it balances), so Newton's systems stay well conditioned at
any dt.  A body hanging from such a link stretches it by
M g / k = g dt^2 / RIGID_STIFFNESS: 1e-6 m at dt = 0.01 s, 1.7e-4 m at
dt = 1/24 s, under 1 % of any pendulum longer than 2 cm.  Its own mode is
far above 1/dt (omega dt = 10), which implicit Euler damps: it behaves as
a rigid joint.

Breaking: after each step the force of every breakable link (the sum of
the magnitudes of its springs' forces, elastic and damping: a pin's or a
spring's tension) is compared with its break_force; above it, the link is
removed from then on (StepStats.broken_links names it).  Bodies kept apart
only by non-colliding links that broke collide again once they are apart
(:func:`rejoin_separated`).

Engaged schedules (Link.engaged_times / engaged): a link counts in a step
when it is engaged at the step's start; released it exerts nothing and
cannot break, engaged again it pulls its anchors back (pins that let go).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .assembly import stencil_dofs
from .errors import SolverInputError

RIGID_STIFFNESS = 100.0  # rigid links' k h^2 in multiples of the linked mass (see the module doc)
ZERO, SPRING, ROPE = 0, 1, 2  # spring kinds: zero-length (pin, weld), two-sided, one-sided


# --------------------------------------------------------------------------- placing anchors


def barycentric(p, a, b, c):
    """Barycentric coordinates (..., 3) of points p in triangles (a, b, c),
    extended affinely outside them."""
    e1, e2, q = b - a, c - a, p - a
    det = e1[..., 0] * e2[..., 1] - e1[..., 1] * e2[..., 0]
    beta = (q[..., 0] * e2[..., 1] - q[..., 1] * e2[..., 0]) / det
    gamma = (e1[..., 0] * q[..., 1] - e1[..., 1] * q[..., 0]) / det
    return np.stack([1.0 - beta - gamma, beta, gamma], axis=-1)


def anchor_at(body, point):
    """A :class:`~solver.scene.LinkAnchor` on ``body`` at the rest-space point
    (2,): the first triangle containing it.  Raises SolverInputError when the
    point is outside the body."""
    from .scene import LinkAnchor

    v, t = np.asarray(body.vertices, float), np.asarray(body.triangles, np.intp)
    w = barycentric(np.asarray(point, float), v[t[:, 0]], v[t[:, 1]], v[t[:, 2]])
    inside = np.all(w >= -1e-12, axis=1)
    if not inside.any():
        raise SolverInputError(f"body '{body.name}': the point {tuple(map(float, point))} is outside it")
    i = int(np.argmax(inside))
    return LinkAnchor(body=body.name, triangle=i, barycentric=tuple(np.clip(w[i], 0.0, 1.0).tolist()))


# --------------------------------------------------------------------------- the scene's springs


@dataclass(frozen=True)
class LinkSet:
    """The springs of a scene's links, flattened (built once, :func:`build_links`).

    names (n_links,); link (S,) the link of each spring; idx (S, 6) vertex
    stencils and coef (S, 6) their weights; times (T,) and offset (T, S, 2)
    the world anchors' part r(t) of each spring vector, sampled; kind,
    length, stiffness, damping (S,); break_force (n_links,) (inf: unbreakable);
    excluded (k, 2) owner pairs that do not collide because a link joins them;
    engaged_times (K,) and engaged (K, n_links) each link's engaged schedule
    (held from each sample to the next; one all-true row without schedules).
    """

    names: tuple[str, ...]
    link: np.ndarray
    idx: np.ndarray
    coef: np.ndarray
    times: np.ndarray
    offset: np.ndarray
    kind: np.ndarray
    length: np.ndarray
    stiffness: np.ndarray
    damping: np.ndarray
    break_force: np.ndarray
    excluded: np.ndarray
    engaged_times: np.ndarray = field(default_factory=lambda: np.zeros(1))
    engaged: np.ndarray | None = None

    def __len__(self):
        return len(self.names)

    def engaged_at(self, t):
        """(n_links,) bool: which links are engaged at time t (a sample a hair after t, by
        the rounding of summed time steps, counts as reached)."""
        if self.engaged is None:
            return np.ones(len(self.names), bool)
        t = t + 1e-9 * max(1.0, abs(t))
        i = max(int(np.searchsorted(self.engaged_times, t, side="right")) - 1, 0)
        return self.engaged[i]

    def world_offset(self, t):
        """r(t) (S, 2): the world anchors' part of the spring vectors at time t
        (linear between samples, clamped outside)."""
        ts = self.times
        if len(ts) == 1 or t <= ts[0]:
            return self.offset[0]
        if t >= ts[-1]:
            return self.offset[-1]
        i = int(np.searchsorted(ts, t, side="right")) - 1
        a = (t - ts[i]) / (ts[i + 1] - ts[i])
        return (1.0 - a) * self.offset[i] + a * self.offset[i + 1]

    def vectors(self, x, t, springs=slice(None)):
        """d (S, 2) of the springs at positions x and time t."""
        return (
            np.einsum("sj,sji->si", self.coef[springs], x[self.idx[springs]]) + self.world_offset(t)[springs]
        )


@dataclass(frozen=True)
class _End:
    """One end of a link, resolved: the body's global vertex ids (3,) and
    barycentric weights (3,), or a world track; rest (2,) its rest position."""

    vertices: np.ndarray
    weights: np.ndarray
    rest: np.ndarray
    owner: int  # body index, -1 for the world
    times: np.ndarray | None  # world: sample times (T,)
    track: np.ndarray | None  # world: positions (T, 2)


def _resolve(anchor, bodies, body_slices, meshes):
    if anchor.body is None:
        if anchor.times is None:
            times, track = np.array([0.0]), np.asarray(anchor.position, float)[None]
        else:
            times, track = np.asarray(anchor.times, float), np.asarray(anchor.positions, float)
        rest = np.array([np.interp(0.0, times, track[:, i]) for i in range(2)])
        return _End(np.zeros(3, np.intp), np.zeros(3), rest, -1, times, track)
    bi = bodies[anchor.body]
    v, t = meshes[bi]
    tri = t[anchor.triangle]
    w = np.asarray(anchor.barycentric, float)
    return _End(tri + body_slices[bi].start, w, w @ v[tri], bi, None, None)


def build_links(scene, meshes, body_slices, dt, mass):
    """The scene's :class:`LinkSet` (None without links): the scene's links,
    then the pins of its rigid bodies (:func:`rigid_pin_rows`).  meshes: the
    checked (vertices, triangles) per body; mass: (N,) lumped vertex masses."""
    body_mass = np.array([mass[s].sum() for s in body_slices])
    pin_names, pin_rows = rigid_pin_rows(scene, meshes, body_slices, body_mass, dt)
    if not scene.links and not pin_rows:
        return None
    bodies = {b.name: i for i, b in enumerate(scene.bodies)}
    rows, excluded = [], []
    for li, link in enumerate(scene.links):
        a = _resolve(link.a, bodies, body_slices, meshes)
        b = _resolve(link.b, bodies, body_slices, meshes)
        ends = [(a, b)] if link.kind != "weld" else _weld_points(a, b, meshes, body_slices)
        if link.stiffness is None:
            linked = body_mass[a.owner] + (body_mass[b.owner] if b.owner >= 0 else 0.0)
            k = RIGID_STIFFNESS * linked / (dt * dt)
        else:
            k = float(link.stiffness)
        kind = {"pin": ZERO, "weld": ZERO, "spring": SPRING, "rope": ROPE}[link.kind]
        rest_length = float(np.hypot(*(a.rest - b.rest)))
        length = 0.0 if kind == ZERO else (rest_length if link.length is None else float(link.length))
        damping = float(link.damping) if kind == SPRING else 0.0
        rows += [(li, ea, eb, kind, length, k, damping) for ea, eb in ends]
        if not link.collide and b.owner >= 0 and a.owner != b.owner:
            excluded.append((a.owner, b.owner))
    rows += pin_rows
    times = np.unique(
        np.concatenate([e.times for r in rows for e in r[1:3] if e.times is not None] or [[0.0]])
    )
    offset = np.zeros((len(times), len(rows), 2))
    for s, (_, ea, eb, *_rest) in enumerate(rows):  # once per scene
        for end, sign in ((ea, 1.0), (eb, -1.0)):
            if end.times is not None:
                offset[:, s] += sign * np.column_stack(
                    [np.interp(times, end.times, end.track[:, i]) for i in (0, 1)]
                )
    n_pins = len(pin_names)
    return LinkSet(
        names=tuple(link.name for link in scene.links) + pin_names,
        link=np.array([r[0] for r in rows], np.intp),
        idx=np.array([np.concatenate([r[1].vertices, r[2].vertices]) for r in rows], np.intp),
        coef=np.array([np.concatenate([r[1].weights, -r[2].weights]) for r in rows]),
        times=times,
        offset=offset,
        kind=np.array([r[3] for r in rows], np.intp),
        length=np.array([r[4] for r in rows]),
        stiffness=np.array([r[5] for r in rows]),
        damping=np.array([r[6] for r in rows]),
        break_force=np.array(
            [np.inf if link.break_force is None else float(link.break_force) for link in scene.links]
            + [np.inf] * n_pins
        ),
        excluded=np.array(excluded, np.intp).reshape(-1, 2),
        **_engaged_schedule(scene.links, n_pins),
    )


def rigid_pin_rows(scene, meshes, body_slices, body_mass, dt):
    """(names, spring rows) of the pins of rigid bodies: one link per Pin, one
    zero-length spring per pinned vertex to its track (its rest position for
    a fixed pin), of the rigid links' stiffness RIGID_STIFFNESS * M / dt^2
    (body_mass: (bodies,) M).  A rigid body's vertices are not
    unknowns of their own (x = A X + p, solver/basis.py), so a pinned vertex
    is held by this energy through the basis rather than prescribed."""
    names, rows = [], []
    for bi, body in enumerate(scene.bodies):
        if body.kind == "deformable":
            continue
        v = meshes[bi][0]
        for pi, pin in enumerate(body.pins):
            li = len(scene.links) + len(names)
            names.append(f"{body.name}.pin{pi}")
            idx = np.asarray(pin.indices, np.intp)
            times = np.zeros(1) if pin.times is None else np.asarray(pin.times, float)
            tracks = v[idx][None] if pin.times is None else np.asarray(pin.positions, float)
            k = RIGID_STIFFNESS * float(body_mass[bi]) / (dt * dt)
            for j, vertex in enumerate(idx.tolist()):
                g = body_slices[bi].start + vertex
                a = _End(np.full(3, g, np.intp), np.array([1.0, 0.0, 0.0]), v[vertex], bi, None, None)
                b = _End(np.zeros(3, np.intp), np.zeros(3), tracks[0, j], -1, times, tracks[:, j])
                rows.append((li, a, b, ZERO, 0.0, k, 0.0))
    return tuple(names), rows


def _engaged_schedule(scene_links, n_always=0):
    """{engaged_times (K,), engaged (K, n_links)} of the links' engaged schedules (the union
    of their sample times; n_always more links after them always engaged), or {} when every
    link is always engaged."""
    timed = [k for k in scene_links if k.engaged_times is not None]
    if not timed:
        return {}
    times = np.unique(np.concatenate([np.asarray(k.engaged_times, float) for k in timed]))
    table = np.ones((len(times), len(scene_links) + n_always), bool)
    for j, link in enumerate(scene_links):  # once per scene
        if link.engaged_times is not None:
            own = np.asarray(link.engaged_times, float)
            i = np.maximum(np.searchsorted(own, times, side="right") - 1, 0)
            table[:, j] = np.asarray(link.engaged, bool)[i]
    return {"engaged_times": times, "engaged": table}


def _weld_points(a, b, meshes, body_slices):
    """The three (end, end) pairs of a weld: the anchors, and both moved by
    (r, 0) and (0, r) in rest space, r the mean edge length of the first
    anchor's triangle (each on its anchor's triangle, extended affinely)."""
    va, _ = meshes[a.owner]
    pa = va[a.vertices - body_slices[a.owner].start]
    r = float(np.mean(np.hypot(*(pa - np.roll(pa, 1, axis=0)).T)))
    pairs = [(a, b)]
    for shift in (np.array([r, 0.0]), np.array([0.0, r])):
        pairs.append((_moved(a, shift, meshes, body_slices), _moved(b, shift, meshes, body_slices)))
    return pairs


def _moved(end, shift, meshes, body_slices):
    """The end moved by shift (2,) in rest space: a world track shifted, or the
    body point's barycentric weights on the same triangle (extended affinely)."""
    if end.owner < 0:
        return _End(end.vertices, end.weights, end.rest + shift, -1, end.times, end.track + shift)
    v, _ = meshes[end.owner]
    p = v[end.vertices - body_slices[end.owner].start]
    w = barycentric(end.rest + shift, p[0], p[1], p[2])
    return _End(end.vertices, w, end.rest + shift, end.owner, None, None)


# --------------------------------------------------------------------------- one step


@dataclass(frozen=True)
class LinkStep:
    """The active springs of one (sub)step of length h, from t_prev to t_next:
    stencils idx (S, 6) and weights coef (S, 6), world offset r (S, 2) at
    t_next, the spring vectors d_prev (S, 2) at the step start, kind, length,
    stiffness, damping (S,), link (S,) their links' indices."""

    h: float
    idx: np.ndarray
    coef: np.ndarray
    offset: np.ndarray
    d_prev: np.ndarray
    kind: np.ndarray
    length: np.ndarray
    stiffness: np.ndarray
    damping: np.ndarray
    link: np.ndarray

    def vectors(self, x):
        """d (S, 2) at positions x (N, 2)."""
        return np.einsum("sj,sji->si", self.coef, x[self.idx]) + self.offset


def step_springs(links, active, x_prev, t_prev, t_next):
    """The :class:`LinkStep` of the springs of the active links (active:
    (n_links,) bool: not broken) engaged at the step's start t_prev (released
    at t_r, the body moves freely from t_r on), or None when there are none."""
    if links is None:
        return None
    on = np.flatnonzero((active & links.engaged_at(t_prev))[links.link])
    if not len(on):
        return None
    return LinkStep(
        h=t_next - t_prev,
        idx=links.idx[on],
        coef=links.coef[on],
        offset=links.world_offset(t_next)[on],
        d_prev=links.vectors(x_prev, t_prev, on),
        kind=links.kind[on],
        length=links.length[on],
        stiffness=links.stiffness[on],
        damping=links.damping[on],
        link=links.link[on],
    )


# --------------------------------------------------------------------------- kernels (in d)


def _length_and_direction(d):
    """(l (S,), n (S, 2)); n = (1, 0) where l = 0 (any unit vector will do there)."""
    ell = np.hypot(d[:, 0], d[:, 1])
    safe = np.where(ell > 0, ell, 1.0)
    n = np.where((ell > 0)[:, None], d / safe[:, None], np.array([1.0, 0.0]))
    return ell, n


def _stretch(ls, d):
    """(l, n, s): length, direction and the stretch s whose k/2 s^2 is the
    energy (|d| for zero-length springs, l - L, and max(0, l - L) for ropes)."""
    ell, n = _length_and_direction(d)
    s = np.where(ls.kind == ZERO, ell, ell - ls.length)
    s = np.where(ls.kind == ROPE, np.maximum(s, 0.0), s)
    return ell, n, s


def spring_value(ls, d):
    _, _, s = _stretch(ls, d)
    return 0.5 * float(np.sum(ls.stiffness * s * s))


def spring_force(ls, d):
    """(S, 2) the gradient of the springs' energy in d (minus the force on the first anchor)."""
    _, n, s = _stretch(ls, d)
    return (ls.stiffness * s)[:, None] * n


def spring_hessian(ls, d, project):
    """((S, 2, 2) Hessians in d, (S, 2, 2) what PSD projection added).

    Zero-length: k I.  Two-sided: k (n n^T + (1 - L/l) (I - n n^T)), whose
    transverse part is negative while compressed (l < L): the projection
    clamps it at zero (the deficit k (L/l - 1) (I - n n^T)).  Rope: the
    spring's while taut, 0 while slack."""
    ell, n, s = _stretch(ls, d)
    k = ls.stiffness
    nn = n[:, :, None] * n[:, None, :]
    eye = np.broadcast_to(np.eye(2), nn.shape)
    safe = np.where(ell > 0, ell, 1.0)
    transverse = np.where(ell > 0, 1.0 - ls.length / safe, 0.0)
    taut = (ls.kind != ROPE) | (s > 0)
    H = np.where(taut, k, 0.0)[:, None, None] * (nn + transverse[:, None, None] * (eye - nn))
    H = np.where((ls.kind == ZERO)[:, None, None], k[:, None, None] * eye, H)
    short = (ls.kind != ZERO) & taut & (transverse < 0)
    deficit = np.where(short & project, -k * transverse, 0.0)[:, None, None] * (eye - nn)
    return H + deficit, deficit


def damping_direction(ls):
    """(S, 2) n0 = d^n / |d^n| of damped springs, 0 elsewhere (undamped or d^n = 0)."""
    ell, n = _length_and_direction(ls.d_prev)
    return np.where(((ls.damping > 0) & (ell > 0))[:, None], n, 0.0)


def damping_rate(ls, d):
    """(S,) n0 . (d - d^n) / h: the rate of change of the length, lagged direction."""
    return np.einsum("si,si->s", damping_direction(ls), d - ls.d_prev) / ls.h


# --------------------------------------------------------------------------- scatter


def _stencil_gradient(ls, g_d):
    """(S, 12) the gradient in the stencil's DOFs of per-spring gradients g_d (S, 2)."""
    return (ls.coef[:, :, None] * g_d[:, None, :]).reshape(len(g_d), -1)


def _stencil_hessian(coef, H_d):
    """(S, 12, 12): (C C^T) kron H_d, C (S, 6) the stencils' weights."""
    return np.einsum("si,sj,sab->siajb", coef, coef, H_d).reshape(len(H_d), 12, 12)


class LinkSprings:
    """The elastic energy of the active links' springs (pins, welds, springs,
    ropes; see the module doc), a force potential (h^2-weighted)."""

    per_h2, stage = True, "inertia+penalty"  # (no timer stage of its own)

    def __init__(self, springs, weight):
        self.ls, self.weight = springs, weight

    @classmethod
    def build(cls, model, consts):
        springs = getattr(consts, "links", None)
        if springs is None:
            return None
        return cls(springs, consts.h * consts.h)

    def value(self, x, cs):
        return spring_value(self.ls, self.ls.vectors(x))

    def gradient(self, x, cs, T):
        ls = self.ls
        g = _stencil_gradient(ls, spring_force(ls, ls.vectors(x)))
        T.add_gradient_at(stencil_dofs(ls.idx).ravel(), self.weight * g)

    def gradient_hessian(self, x, cs, T, project, majorize=None):
        ls, w = self.ls, self.weight
        d = ls.vectors(x)
        H_d, deficit = spring_hessian(ls, d, project)
        T.add_stencils(
            ls.idx, w * _stencil_gradient(ls, spring_force(ls, d)), w * _stencil_hessian(ls.coef, H_d)
        )
        if T.record_deficit and project:
            which = np.flatnonzero(np.any(deficit != 0, axis=(1, 2)))
            if len(which):
                N = _stencil_hessian(ls.coef[which], deficit[which])
                T.add_deficit(stencil_dofs(ls.idx[which]), w * N)


class LinkDamping:
    """The springs' damping, the dissipation potential c/(2h) (n0 . (d - d^n))^2
    (see the module doc): quadratic, its Hessian (c/h) n0 n0^T PSD."""

    per_h2, stage = True, "inertia+penalty"  # (no timer stage of its own)

    def __init__(self, springs, weight):
        self.ls, self.weight = springs, weight

    @classmethod
    def build(cls, model, consts):
        springs = getattr(consts, "links", None)
        if springs is None or not np.any(damping_direction(springs)):
            return None
        return cls(springs, consts.h * consts.h)

    def _rate(self, x):
        return damping_rate(self.ls, self.ls.vectors(x))

    def value(self, x, cs):
        ls = self.ls
        rate = self._rate(x)
        return 0.5 * ls.h * float(np.sum(ls.damping * rate * rate))

    def _gradient_d(self, x):
        ls = self.ls
        return (ls.damping * self._rate(x))[:, None] * damping_direction(ls)

    def gradient(self, x, cs, T):
        g = _stencil_gradient(self.ls, self._gradient_d(x))
        T.add_gradient_at(stencil_dofs(self.ls.idx).ravel(), self.weight * g)

    def gradient_hessian(self, x, cs, T, project, majorize=None):
        ls, w = self.ls, self.weight
        n0 = damping_direction(ls)
        H_d = (ls.damping / ls.h)[:, None, None] * n0[:, :, None] * n0[:, None, :]
        g = _stencil_gradient(ls, self._gradient_d(x))
        T.add_stencils(ls.idx, w * g, w * _stencil_hessian(ls.coef, H_d))


# --------------------------------------------------------------------------- breaking


def link_forces(ls, x, n_links):
    """(n_links,) each link's force at x: the sum of the magnitudes of its
    springs' forces, elastic and damping (0 for the links not in ls)."""
    d = ls.vectors(x)
    f = spring_force(ls, d) + (ls.damping * damping_rate(ls, d))[:, None] * damping_direction(ls)
    return np.bincount(ls.link, weights=np.hypot(f[:, 0], f[:, 1]), minlength=n_links)


# --------------------------------------------------------------------------- after a break


def rejoin_candidates(scene, link_active, owner_contact):
    """(i, j) body pairs kept apart only by broken links that did not collide:
    they share a collision group, no holding link excludes them, and contact
    between them is still off (owner_contact).  Few: one per broken link."""
    if owner_contact is None or not len(link_active) or link_active.all():
        return []
    index = {b.name: i for i, b in enumerate(scene.bodies)}
    groups = [set(b.collision_groups) for b in scene.bodies]

    def pair(link):
        a, b = index.get(link.a.body), index.get(link.b.body)
        if link.collide or a is None or b is None or a == b:
            return None
        return (min(a, b), max(a, b))

    active = link_active[: len(scene.links)]  # then the rigid bodies' pins: world, unbreakable
    held = {pair(k) for k, on in zip(scene.links, active, strict=True) if on}
    broken = {pair(k) for k, on in zip(scene.links, active, strict=True) if not on}
    return sorted(
        p
        for p in broken - held
        if p is not None and groups[p[0]] & groups[p[1]] and not owner_contact[p[0], p[1]]
    )


def separated(model, x, i, j):
    """Whether bodies i and j (owners) are apart: no boundary edges crossing,
    neither inside the other, every boundary vertex at a positive distance
    from the other's boundary.  Then contact between them can be switched on
    (the barrier needs a positive distance to start from)."""
    from .geometry import point_segment_distance, points_in_triangles, segments_intersect

    owner, edges, tris = model.owner, model.edges, model.elements.tris
    e_i, e_j = edges[owner[edges[:, 0]] == i], edges[owner[edges[:, 0]] == j]
    t_i, t_j = tris[owner[tris[:, 0]] == i], tris[owner[tris[:, 0]] == j]
    p, q = x[e_i[:, 0]][:, None], x[e_i[:, 1]][:, None]
    a, b = x[e_j[:, 0]][None], x[e_j[:, 1]][None]
    if segments_intersect(p, q, a, b).any():
        return False
    for pts, (e, t) in ((x[e_i[:, 0]], (e_j, t_j)), (x[e_j[:, 0]], (e_i, t_i))):
        inside = points_in_triangles(pts[:, None], x[t[:, 0]][None], x[t[:, 1]][None], x[t[:, 2]][None])
        if inside.any():
            return False
        if not (point_segment_distance(pts[:, None], x[e[:, 0]][None], x[e[:, 1]][None]) > 0).all():
            return False
    return True


def rejoin_separated(scene, model, link_active, x):
    """Switch contact back on (in place) between the bodies whose non-colliding
    links all broke, once they are apart (:func:`separated`); returns whether
    anything changed.  The rule depends on the state only, so a simulation
    restored from a checkpoint makes the same choices."""
    changed = False
    for i, j in rejoin_candidates(scene, link_active, model.owner_contact):
        if separated(model, x, i, j):
            model.owner_contact[i, j] = model.owner_contact[j, i] = True
            changed = True
    if changed:
        model.__dict__.pop("pair_eligible", None)  # the dense broad phase's cached mask
    return changed
