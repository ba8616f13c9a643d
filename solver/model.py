"""Flatten a validated :class:`~solver.scene.Scene` into the arrays the time
stepper works on.

All vertices live in one array ``x`` (N, 2): body vertices first (body after
body), then collider vertices.  Contact primitives are boundary vertices
("points") and boundary edges of bodies plus all collider vertices/edges.
"""

import dataclasses
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from . import barrier, elasticity, mesh
from .basis import AffineBasis, build_basis
from .broad_phase import BRUTE_FORCE_MAX
from .geometry import boundary_edges
from .links import LinkSet, build_links
from .modal import ModalBasis, build_modal_basis
from .validate import check_scene

# Model.plane_near's slack for rounding, relative to a body's size and coordinates: far
# above the drift of Newton's iterates from B's range, far below a contact distance
PLANE_SLACK = 1e-7
# The test suite sets this (tests/conftest.py): plane_near then measures every vertex
# it clears and raises if one was within reach (its premise, x and dx on B's range,
# is not checked where x is made)
CHECK_PLANE_NEAR = False


@dataclass(frozen=True)
class KinematicGroup:
    """Vertices whose positions are prescribed: a collider or a pin set.

    vertices: (k,) global ids; times: (T,); positions: (T, k, 2).
    """

    name: str
    vertices: np.ndarray
    times: np.ndarray
    positions: np.ndarray

    def target(self, t):
        """Linearly interpolated positions (k, 2) at time t (clamped)."""
        ts = self.times
        if len(ts) == 1 or t <= ts[0]:
            return self.positions[0]
        if t >= ts[-1]:
            return self.positions[-1]
        i = int(np.searchsorted(ts, t, side="right")) - 1
        a = (t - ts[i]) / (ts[i + 1] - ts[i])
        return (1.0 - a) * self.positions[i] + a * self.positions[i + 1]


@dataclass(frozen=True)
class Model:
    """Static arrays of a scene (see module doc).

    rest (N,2), mass (N,), is_collider (N,) bool, mu / mu_static (N,) per-vertex
    kinetic / static friction,
    weight (N,) contact quadrature weights, degree (N,) boundary degree,
    points (P,), edges (E,2),
    elements: ElasticElements, body_slices / collider_slices: vertex ranges,
    kin_groups: prescribed vertex groups, plane_point/plane_normal (H,2), plane_mu (H,),
    hp_points (B,) body boundary vertices checked against planes.
    """

    names: tuple[str, ...]
    rest: np.ndarray
    velocity: np.ndarray
    mass: np.ndarray
    is_collider: np.ndarray
    mu: np.ndarray
    mu_static: np.ndarray
    weight: np.ndarray
    degree: np.ndarray
    points: np.ndarray
    edges: np.ndarray
    elements: elasticity.ElasticElements
    body_slices: tuple[slice, ...]
    collider_slices: tuple[slice, ...]
    kin_groups: tuple[KinematicGroup, ...]
    plane_point: np.ndarray
    plane_normal: np.ndarray
    plane_mu: np.ndarray
    plane_names: tuple[str, ...]
    hp_points: np.ndarray
    owner: np.ndarray  # (N,) index into names (bodies then colliders)
    loop: np.ndarray  # (N,) boundary loop id of body boundary vertices, -1 elsewhere
    arclen: np.ndarray  # (N,) rest arclength of the vertex along its loop
    loop_length: np.ndarray  # (L,) rest length of each loop
    exclusion_radius: float  # pairs closer than this along a boundary loop never contact
    # (n_owners, n_owners) bool: which objects may touch (collision groups, links), None: all
    owner_contact: np.ndarray | None = None
    links: LinkSet | None = None  # the links' springs (solver/links.py), None without links
    # x = B q of the rigid and stiff bodies (solver/basis.py, solver/modal.py), None without any
    basis: AffineBasis | ModalBasis | None = None

    @property
    def n(self):
        return len(self.rest)

    @cached_property
    def elastic_elements(self):
        """The triangles of the deformable bodies (all of them without rigid
        bodies: the same object as elements), the elastic energy's domain;
        None when every body is rigid."""
        if self.basis is None:
            return self.elements
        el = self.elements
        keep = self.basis.vertex_body[el.tris[:, 0]] < 0
        stiff = getattr(self.basis, "stiff_vertex", None)  # stiff bodies: modal.ModalElasticity
        if stiff is not None:
            keep &= ~stiff[el.tris[:, 0]]
        return _subset(self.rest, el, keep) if keep.any() else None

    @cached_property
    def rigid_mass(self):
        """The reduced (rigid and stiff) bodies' mass matrix in q, B^T M B as triplets
        (the basis' reduced_mass; a model with animated densities is a new model)."""
        return self.basis.reduced_mass(self.mass)

    @cached_property
    def inversion_tris(self):
        """The triangles the line search keeps from inverting: all of them
        without rigid bodies (the same array), else the deformable ones and
        one per rigid body (an affine map inverts all of a body's at once)."""
        if self.basis is None:
            return self.elements.tris
        tris = self.elements.tris
        body = self.basis.vertex_body[tris[:, 0]]
        rigid = np.flatnonzero(body >= 0)
        first = rigid[np.unique(body[rigid], return_index=True)[1]]
        return np.concatenate([tris[body < 0], tris[first]])

    def plane_distances(self, x, near=None):
        """(B, H) signed distance of each body boundary vertex hp_points at
        x (N, 2) to each half-plane, from the points gathered once (np.take:
        x[hp_points] copies row by row, twenty times slower on R1000's 32k);
        near: only those vertices' rows (ids into hp_points, :meth:`plane_near`)."""
        pts = self.hp_points if near is None else self.hp_points[near]
        return barrier.plane_distances(np.take(x, pts, axis=0), self.plane_point, self.plane_normal)

    def plane_motions(self, dx, near=None):
        """(B, H) motion dx (N, 2) of each boundary vertex hp_points along each
        half-plane's normal (plane_distances' sum without the plane points),
        plane by plane and transposed as there; near: as in plane_distances."""
        pts = self.hp_points if near is None else self.hp_points[near]
        dxh, n = np.take(dx, pts, axis=0), self.plane_normal
        d = dxh[:, 0] * n[:, 0:1]
        d += dxh[:, 1] * n[:, 1:2]
        return d.T

    def plane_pairs_below(self, d, dist, near=None):
        """The (boundary vertex, plane) pairs of distances d (B, H) (plane_distances)
        below dist: (vertices (n,), plane ids (n,), distances (n,)), vertex-major
        (a vertex's planes in turn), the order sums over the pairs are taken in;
        near: the ids of d's rows into hp_points (None: all of them)."""
        i, j = np.nonzero(d < dist)
        return (self.hp_points if near is None else self.hp_points[near])[i], j, d[i, j]

    def plane_pairs_within(self, x, dist):
        """plane_pairs_below(plane_distances(x), dist): the pairs closer than dist
        at x (the same pairs, from the vertices plane_near leaves)."""
        near = self.plane_near(x, dist)
        return self.plane_pairs_below(self.plane_distances(x, near), dist, near)

    def plane_near(self, x, dist, dx=None, eta=0.0):
        """Sorted ids into hp_points of the vertices that may be closer than
        dist to a half-plane at x (N, 2) or, with dx, get closer than (1 - eta)
        of their distance along x -> x + dx (a CCD step below 1); None: all.
        Rigid bodies are cleared as a whole (design 17): from an anchor a of
        the body, on B's range (Newton's iterates and steps), x_i = x_a +
        A (X_i - X_a), so each vertex is within |A|_F r of the anchor (r: the
        body's largest rest distance from it) and moves within |dA|_F r of its
        motion: a body whose anchor is farther than that (with a factor 2 on
        the motion and a slack for rounding) has no vertex that the test
        would report, and its vertices' distances are not computed."""
        hp = self._plane_bodies
        if hp is None or len(self.plane_point) == 0:
            return None
        basis, anchor, radius, runs = hp
        xa = np.take(x, anchor, axis=0)
        reach = np.sqrt(np.sum(basis.affine(x) ** 2, axis=(1, 2))) * radius
        tol = PLANE_SLACK * (1.0 + radius + np.abs(xa).max(axis=1))
        # (R, H): how far each body's anchor is beyond dist, less the body's reach
        room = (
            barrier.plane_distances(xa, self.plane_point, self.plane_normal)
            - (dist + reach + 2.0 * tol)[:, None]
        )
        clear = room >= 0.0
        if dx is not None:
            dxa = np.take(dx, anchor, axis=0)
            spread = np.sqrt(np.sum(basis.affine(dx) ** 2, axis=(1, 2))) * radius
            # the fastest approach of any of its vertices, plane by plane (dxa . n, -spread)
            approach = spread[:, None] - (dxa @ self.plane_normal.T) + tol[:, None]
            clear &= (1.0 - eta) * room >= 2.0 * approach
        # the hp_points ids of the runs of the bodies kept (the last: no rigid body's)
        first, size, owner = runs
        keep = np.append(~clear.all(axis=1), True)[owner]
        first, size = first[keep], size[keep]
        near = np.repeat(first - (np.cumsum(size) - size), size) + np.arange(size.sum())
        if CHECK_PLANE_NEAR:
            self._check_cleared(near, x, dist, dx, eta)
        return near

    def _check_cleared(self, near, x, dist, dx, eta):
        """Raises AssertionError when a vertex plane_near left out of near is
        closer than dist to a half-plane at x or, with dx, would end nearer
        than eta of its distance along x -> x + dx (the pairs CCD reports)."""
        out = np.ones(len(self.hp_points), bool)
        out[near] = False
        d = self.plane_distances(x)[out]
        assert not (d < dist).any(), "plane_near cleared a vertex within dist of a half-plane"
        if dx is not None:
            dn = np.take(dx, self.hp_points[out], axis=0) @ self.plane_normal.T
            assert not (d + dn < eta * d).any(), "plane_near cleared a vertex CCD would stop"

    @cached_property
    def _plane_bodies(self):
        """(basis, each rigid body's anchor vertex, its largest rest distance
        from it over its hp_points, (first, size, owner): the runs of hp_points
        of one rigid body (owner: its index) or of none (owner: n_rigid)) for
        plane_near; None without rigid bodies (AffineBasis)."""
        basis = self.basis
        if not isinstance(basis, AffineBasis) or basis.n_rigid == 0:
            return None
        anchor = basis.anchors[:, 0]
        body = basis.vertex_body[self.hp_points]
        on = body >= 0
        gap = np.linalg.norm(self.rest[self.hp_points[on]] - self.rest[anchor[body[on]]], axis=1)
        radius = np.zeros(basis.n_rigid)
        np.maximum.at(radius, body[on], gap)
        owner = np.where(on, body, basis.n_rigid)
        first = np.flatnonzero(np.concatenate([[True], owner[1:] != owner[:-1]]))
        size = np.diff(np.append(first, len(owner)))
        return basis, anchor, radius, (first, size, owner[first])

    @cached_property
    def pair_eligible(self):
        """(P, E) bool may_contact of every point-edge pair when the scene is
        small enough for the dense broad phase (P E <= BRUTE_FORCE_MAX), else None."""
        P, E = len(self.points), len(self.edges)
        if P * E > BRUTE_FORCE_MAX:
            return None
        p = np.repeat(self.points, E)
        e = np.tile(self.edges, (P, 1))
        return self.may_contact(p, e[:, 0], e[:, 1]).reshape(P, E)

    def may_contact(self, p, e0, e1):
        """(n,) bool: which point-edge pairs are eligible for contact.

        Excluded: a point and its incident edges, collider against collider,
        objects sharing no collision group or joined by a link (owner_contact),
        and pairs of the same boundary loop whose rest arclength distance is
        below the exclusion radius (the geodesic neighbourhood N(X) of the
        seeds, r = 2 dhat: without it, meshes finer than dhat would push their
        own boundary neighbours apart at rest)."""
        ok = (p != e0) & (p != e1) & ~(self.is_collider[p] & self.is_collider[e0])
        if self.owner_contact is not None:  # collision groups, linked bodies
            ok &= self.owner_contact[self.owner[p], self.owner[e0]]
        same = (self.loop[p] >= 0) & (self.loop[p] == self.loop[e0])
        if same.any():
            L = self.loop_length[self.loop[p[same]]]
            near = np.zeros(len(p), bool)
            for end in (e0, e1):
                gap = np.abs(self.arclen[p[same]] - self.arclen[end[same]])
                near[same] |= np.minimum(gap, L - gap) < self.exclusion_radius
            ok &= ~near
        return ok


@dataclass(frozen=True)
class _Part:
    """One body's or collider's per-vertex and per-element arrays, vertex ids numbered from its
    offset in the model (a collider has no triangles)."""

    name: str
    rest: np.ndarray
    velocity: np.ndarray
    mass: np.ndarray
    mu: np.ndarray
    mu_static: np.ndarray
    owner: np.ndarray
    edges: np.ndarray
    kin: tuple
    tris: np.ndarray | None = None
    E: np.ndarray | None = None
    nu: np.ndarray | None = None


def _pin_groups(body, v, offset):
    """The body's pins as kinematic groups (a pin without a schedule holds its rest positions);
    none for a rigid or stiff body, whose pins are springs (solver/links.py, rigid_pin_rows)."""
    kin = []
    if body.kind != "deformable":
        return ()
    for pi, pin in enumerate(body.pins):
        idx = np.asarray(pin.indices, np.intp)
        if pin.times is None:
            times, pos = np.array([0.0]), v[idx][None].copy()
        else:
            times, pos = np.asarray(pin.times, float), np.asarray(pin.positions, float)
        kin.append(KinematicGroup(f"{body.name}.pin{pi}", idx + offset, times, pos))
    return tuple(kin)


def _body_part(body, v, t, index, offset) -> _Part:
    """Body number ``index`` with mesh (v, t), its vertex ids starting at ``offset``."""
    n = len(v)
    mat = body.material
    return _Part(
        name=body.name,
        rest=v,
        velocity=_initial_velocity(body, n),
        mass=mesh.lumped_mass(v, t, mat.density),
        mu=np.full(n, float(mat.mu)),
        mu_static=np.full(n, float(mat.mu if mat.mu_static is None else mat.mu_static)),
        owner=np.full(n, index),
        edges=boundary_edges(t) + offset,
        kin=_pin_groups(body, v, offset),
        tris=t + offset,
        E=np.full(len(t), float(mat.E)),
        nu=np.full(len(t), float(mat.nu)),
    )


def _collider_part(col, index, offset) -> _Part:
    """A collider (owner number ``index``), its vertex ids starting at ``offset``."""
    v = np.asarray(col.vertices, float)
    n = len(v)
    idx = np.arange(offset, offset + n)
    group = KinematicGroup(col.name, idx, np.asarray(col.times, float), np.asarray(col.positions, float))
    return _Part(
        name=col.name,
        rest=v,
        velocity=np.zeros((n, 2)),
        mass=np.zeros(n),
        mu=np.full(n, float(col.mu)),
        mu_static=np.full(n, float(col.mu)),
        owner=np.full(n, index),
        edges=np.asarray(col.edges, np.intp) + offset,
        kin=(group,),
    )


def _parts(scene, meshes):
    """The bodies' parts, then the colliders', and the slice of vertex ids of each."""
    parts, slices, offset = [], [], 0
    for bi, (body, (v, t)) in enumerate(zip(scene.bodies, meshes, strict=True)):
        parts.append(_body_part(body, v, t, bi, offset))
        slices.append(slice(offset, offset + len(v)))
        offset += len(v)
    for ci, col in enumerate(scene.colliders):
        parts.append(_collider_part(col, len(scene.bodies) + ci, offset))
        slices.append(slice(offset, offset + len(parts[-1].rest)))
        offset += len(parts[-1].rest)
    return parts, slices


def build_model(scene):
    """Validate and flatten a scene. Raises SolverInputError."""
    meshes = check_scene(scene)
    parts, slices = _parts(scene, meshes)
    n_bodies = len(scene.bodies)
    bodies = parts[:n_bodies]

    def cat(field, of=parts):
        return np.concatenate([getattr(p, field) for p in of])

    offset = slices[-1].stop
    rest = cat("rest")
    edges = cat("edges").astype(np.intp)
    is_collider = np.zeros(offset, bool)
    is_collider[slices[n_bodies - 1].stop :] = True
    degree = np.bincount(edges.ravel(), minlength=offset)
    points = np.flatnonzero(degree > 0)
    elements = elasticity.make_elements(rest, cat("tris", bodies), cat("E", bodies), cat("nu", bodies))
    planes = scene.half_planes
    normals = np.array([np.asarray(p.normal, float) / np.linalg.norm(p.normal) for p in planes]).reshape(
        -1, 2
    )
    mass = cat("mass")
    links = build_links(scene, meshes, slices[:n_bodies], float(scene.params.dt), mass)
    loop, arclen, loop_length = _boundary_loops(rest, cat("edges", bodies), offset)  # >= 1 body
    basis = _reduced_basis(scene, rest, slices[:n_bodies], elements, mass)
    velocity = cat("velocity")
    if basis is not None:  # a rigid (stiff) body's velocity: its part in B's range (least squares)
        velocity = basis.expand(basis.coords(velocity))
    return Model(
        names=tuple(p.name for p in parts),
        rest=rest,
        velocity=velocity,
        mass=mass,
        is_collider=is_collider,
        mu=cat("mu"),
        mu_static=cat("mu_static"),
        weight=mesh.vertex_weights(rest, edges, offset),
        degree=degree,
        points=points,
        edges=edges,
        elements=elements,
        body_slices=tuple(slices[:n_bodies]),
        collider_slices=tuple(slices[n_bodies:]),
        kin_groups=tuple(g for p in parts for g in p.kin),
        plane_point=np.array([p.point for p in planes], float).reshape(-1, 2),
        plane_normal=normals,
        plane_mu=np.array([p.mu for p in planes], float),
        plane_names=tuple(p.name for p in planes),
        hp_points=points[~is_collider[points]],
        owner=cat("owner"),
        loop=loop,
        arclen=arclen,
        loop_length=loop_length,
        # 2 dhat: boundary points closer than that along the boundary stay at
        # least dhat apart in space around convex corners down to 60 degrees
        exclusion_radius=2.0 * float(scene.params.dhat),
        owner_contact=owner_contact(scene, links),
        links=links,
        basis=basis,
    )


def _subset(rest, el, keep):
    """The elastic elements ``keep`` (bool per triangle) of el, with their Lame parameters."""
    sub = elasticity.make_elements(rest, el.tris[keep], 1.0, 0.0)
    return dataclasses.replace(sub, mu=el.mu[keep], lam=el.lam[keep])


def _reduced_basis(scene, rest, slices, elements, mass):
    """x = B q of the scene's rigid and stiff bodies (None without any): the
    affine basis of the rigid ones, under the modal basis of the stiff ones."""
    basis = _rigid_basis(scene, rest, slices, elements)
    stiff = np.array([b.kind == "stiff" for b in scene.bodies], bool)
    if not stiff.any():
        return basis
    modes = [b.modes for b in scene.bodies]
    return build_modal_basis(basis, (rest, slices, elements, mass), stiff, modes)


def _rigid_basis(scene, rest, slices, elements):
    """The affine basis of the scene's rigid bodies (None without any)."""
    bodies = scene.bodies
    rigid = np.array([b.kind == "rigid" for b in bodies], bool)
    if not rigid.any():
        return None
    area = np.zeros(len(bodies))
    owner = np.zeros(len(rest), np.intp)
    for i, s in enumerate(slices):
        owner[s] = i
    np.add.at(area, owner[elements.tris[:, 0]], elements.area)
    props = (
        [b.material.density for b in bodies],
        [b.material.E for b in bodies],
        area,
        float(scene.params.dt),
    )
    return build_basis(rest, slices, rigid, props)


def group_masks(scene):
    """(n_owners,) uint64: each body's and collider's collision groups as bits."""
    objects = (*scene.bodies, *scene.colliders)
    bits = [sum(1 << int(g) for g in set(obj.collision_groups)) for obj in objects]
    return np.array(bits, np.uint64)


def owner_contact(scene, links):
    """(n_owners, n_owners) bool: which objects may touch -- they share a
    collision group and no link that does not collide joins them -- or None
    when every pair may (the default: one shared group, no links)."""
    masks = group_masks(scene)
    excluded = links.excluded if links is not None else np.zeros((0, 2), np.intp)
    if np.all(masks == masks[0]) and masks[0] and not len(excluded):
        return None
    ok = (masks[:, None] & masks[None, :]) != 0
    ok[excluded[:, 0], excluded[:, 1]] = False
    ok[excluded[:, 1], excluded[:, 0]] = False
    return ok


def _boundary_loops(x, edges, n):
    """Walk the directed boundary edges of bodies (every boundary vertex has
    exactly one outgoing edge, checked by validation) into closed loops.
    Returns loop id (n,), arclength (n,), loop lengths (L,).  Runs once per
    scene, so a plain walk is fine."""
    loop = np.full(n, -1, np.intp)
    arclen = np.zeros(n)
    nxt = dict(zip(edges[:, 0].tolist(), edges[:, 1].tolist(), strict=True))
    lengths = []
    for start in edges[:, 0].tolist():
        if loop[start] >= 0:
            continue
        lid, s, v = len(lengths), 0.0, start
        while loop[v] < 0:
            loop[v], arclen[v] = lid, s
            w = nxt[v]
            s += float(np.hypot(*(x[w] - x[v])))
            v = w
        lengths.append(s)
    return loop, arclen, np.array(lengths)


def _initial_velocity(body, n):
    if body.velocity is None:
        return np.zeros((n, 2))
    v = np.asarray(body.velocity, float)
    if v.shape == (2,):
        v = np.tile(v, (n, 1))
    return v.copy()  # shape and values checked by validate.check_velocity
