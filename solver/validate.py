"""Input validation: every rule an input must satisfy, written once.

:func:`check_scene` checks parameters, materials, body meshes, pins, colliders and
half-planes; :func:`check_initial_geometry` checks the assembled start state (no overlap, no
body pair closer than dhat, nothing through a half-plane or a collider).  The JSON loader
(``scene_io.py``) checks a file's structure and types only and then calls :func:`check_scene`
with the file's naming, and the add-on calls it on the scene it reads and words the message.

Every problem raises SolverInputError naming the object and the field: in the library's words
(``body 'top': material.nu: expected a number in (-1, 0.5), got 0.7``) or, for a scene file,
with the field's path (``bodies[1].material.nu: expected ... (body "top")``).
"""

import math
from dataclasses import dataclass

import numpy as np

from . import mesh
from .broad_phase import candidates, edge_boxes
from .contacts import candidate_stencils
from .distance import distance_sq, point_edge_case
from .errors import SolverInputError
from .friction import MOLLIFIERS
from .geometry import boundary_edges, edge_use, points_in_triangles, segments_intersect, signed_areas
from .modal import MAX_MODES
from .scene import BODY_KINDS, FIELD_FALLOFFS, FIELD_KINDS, FIELD_SHAPES, LINK_KINDS

FORMULATIONS = ("original", "convergent")
LINEAR_SOLVERS = ("auto", "scipy", "numpy")
FRICTION_MOLLIFIERS = tuple(MOLLIFIERS)
DEGENERATE_AREA_REL = 1e-12  # a triangle this small (x the body's size squared) has zero area
ZERO_EDGE_REL = 1e-12  # a collider edge this short (x (1 + its largest coordinate)) has none


@dataclass(frozen=True)
class Place:
    """Where a problem is: ``prefix`` + field + ``: `` + problem + ``suffix``; ``path`` is the
    prefix of another field of the same object when a message refers to it (a file's path)."""

    prefix: str
    suffix: str = ""
    path: str = ""

    def fail(self, field, problem):
        raise SolverInputError(f"{self.prefix}{field}: {problem}{self.suffix}")


_KIND = {"bodies": "body", "colliders": "collider"}


@dataclass(frozen=True)
class Naming:
    """How messages name objects: by name (the library), or by the path of their entry in a
    scene file (``file=True``)."""

    file: bool = False

    def entry(self, kind, i, name):
        """The Place of bodies[i] or colliders[i]."""
        if self.file:
            return Place(f"{kind}[{i}].", f' ({_KIND[kind]} "{name}")', f"{kind}[{i}].")
        return Place(f"{_KIND[kind]} '{name}': ")

    def body(self, i, name):
        return self.entry("bodies", i, name)

    def collider(self, i, name):
        return self.entry("colliders", i, name)

    def link(self, i, name):
        return Place(f"links[{i}].", f' (link "{name}")') if self.file else Place(f"link '{name}': ")

    def field(self, i, name):
        return Place(f"fields[{i}].", f' (field "{name}")') if self.file else Place(f"field '{name}': ")

    def half_plane(self, i, name):
        return Place(f"half_planes[{i}].") if self.file else Place(f"half-plane {i} ('{name}'): ")

    def label(self, kind, i, name):
        """bodies[i] / colliders[i] in a message about another entry."""
        return f"{kind}[{i}]" if self.file else f"{_KIND[kind]} '{name}'"

    # a collider's samples: the library's Collider.times, a file's collider motion
    def collider_times(self):
        return "motion.times" if self.file else "times"

    def collider_positions(self):
        return "motion.positions" if self.file else "positions"


LIBRARY = Naming()
SCENE_FILE = Naming(file=True)


def format_distance(d, limit):
    """d with 6 significant digits, or as many more as it takes to differ from the limit it is
    compared with (a gap of 0.009999875 against dhat 0.01 must not read 0.01)."""
    for digits in range(6, 18):
        text = f"{d:.{digits}g}"
        if text != f"{limit:.{digits}g}":
            return text
    return repr(float(d))


# --------------------------------------------------------------------------- numbers


def _is_number(value):
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(
        value, (bool, np.bool_)
    )


def _describe(value):
    """Short human description of a value for error messages (a scene file's JSON values too)."""
    if value is None:
        return "null"
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    if isinstance(value, str):
        text = value if len(value) <= 40 else value[:37] + "..."
        return f"the string {text!r}"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, (list, tuple)):
        return f"a list of {len(value)} entries"
    if isinstance(value, np.ndarray):
        return f"an array of shape {value.shape}"
    return repr(value)


def check_number(place, field, value, lo=None, hi=None, lo_open=False, hi_open=False):
    """A finite number inside the given (optionally open) interval; returns it as a float."""
    if lo is not None and hi is not None:
        want = f"a number in {'(' if lo_open else '['}{lo:g}, {hi:g}{')' if hi_open else ']'}"
    elif lo is not None:
        want = f"a number {'>' if lo_open else '>='} {lo:g}"
    else:
        want = "a finite number"
    if not _is_number(value) or not math.isfinite(value):
        place.fail(field, f"expected {want}, got {_describe(value)}")
    x = float(value)
    too_low = lo is not None and (x <= lo if lo_open else x < lo)
    too_high = hi is not None and (x >= hi if hi_open else x > hi)
    if too_low or too_high:
        place.fail(field, f"expected {want}, got {value!r}")
    return x


def _choice(place, field, value, choices):
    if value not in choices:
        place.fail(field, f"expected one of {', '.join(map(repr, choices))}, got {value!r}")


# --------------------------------------------------------------------------- parameters


def check_params(p, naming=LIBRARY):
    place = Place("params.")
    check_number(place, "dt", p.dt, lo=0, lo_open=True)
    check_number(place, "dhat", p.dhat, lo=0, lo_open=True)
    if p.kappa is not None:
        check_number(place, "kappa", p.kappa, lo=0, lo_open=True)
    _choice(place, "formulation", p.formulation, FORMULATIONS)
    check_number(place, "eps_v", p.eps_v, lo=0, lo_open=True)
    _choice(place, "friction_mollifier", p.friction_mollifier, FRICTION_MOLLIFIERS)
    check_number(place, "newton_tol", p.newton_tol, lo=0, lo_open=True)
    check_number(place, "force_tol", p.force_tol, lo=0, lo_open=True)
    iters = p.max_newton_iters
    if not isinstance(iters, (int, np.integer)) or isinstance(iters, (bool, np.bool_)):
        place.fail("max_newton_iters", f"expected an integer, got {_describe(iters)}")
    if iters < 1:
        place.fail("max_newton_iters", f"expected an integer >= 1, got {iters!r}")
    g = np.asarray(p.gravity, float) if all(map(_is_number, np.ravel(p.gravity))) else None
    if g is None or g.shape != (2,) or not np.all(np.isfinite(g)):
        place.fail("gravity", f"expected two finite numbers, got {p.gravity!r}")
    _choice(place, "linear_solver", p.linear_solver, LINEAR_SOLVERS)


def check_material(place, m):
    check_number(place, "material.E", m.E, lo=0, lo_open=True)
    check_number(place, "material.nu", m.nu, lo=-1, hi=0.5, lo_open=True, hi_open=True)
    check_number(place, "material.density", m.density, lo=0, lo_open=True)
    check_number(place, "material.mu", m.mu, lo=0)
    if m.mu_static is not None:
        check_number(place, "material.mu_static", m.mu_static, lo=float(m.mu))


# --------------------------------------------------------------------------- arrays


def _finite_array(place, field, value, shape_tail):
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError) as exc:
        place.fail(field, f"not a numeric array ({exc})")
    if arr.ndim != 1 + len(shape_tail) or arr.shape[1:] != shape_tail:
        place.fail(field, f"expected shape (n, {', '.join(map(str, shape_tail))}), got {arr.shape}")
    bad = np.argwhere(~np.isfinite(arr))
    if len(bad):
        value = float(arr[tuple(bad[0])])
        place.fail(
            field + "".join(f"[{i}]" for i in bad[0]),
            f"NaN or infinite value {value!r}, expected a finite number",
        )
    return arr


def _index_array(place, field, value, ndim, what):
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError):
        place.fail(field, f"{what} are not an integer array")
    if arr.ndim != ndim:
        place.fail(field, f"{what} must be a {ndim}-dimensional integer array, got shape {arr.shape}")
    if not np.issubdtype(arr.dtype, np.integer) and (
        not np.issubdtype(arr.dtype, np.number)
        or not np.all(np.isfinite(arr.astype(float)))
        or np.any(arr != np.round(arr))
    ):
        place.fail(field, f"{what} must be integers")
    return arr.astype(np.intp)


def _indices_in_range(place, field, idx, n, what="vertex index"):
    """All entries of an integer array in [0, n); names the first bad entry."""
    bad = np.argwhere((idx < 0) | (idx >= n))
    if len(bad):
        where = "".join(f"[{i}]" for i in bad[0])
        place.fail(field + where, f"{what} {int(idx[tuple(bad[0])])} out of range [0, {n})")


def check_samples(place, times_field, positions_field, times, positions, k):
    """Sample times strictly increasing, positions (len(times), k, 2) finite."""
    t = np.asarray(times, float)
    if t.ndim != 1 or len(t) == 0 or not np.all(np.isfinite(t)):
        place.fail(times_field, "expected a non-empty list of finite sample times")
    steps = np.diff(t)
    if np.any(steps <= 0):
        i = int(np.argmax(steps <= 0)) + 1
        place.fail(
            f"{times_field}[{i}]", f"times must be strictly increasing, got {t[i]!r} after {t[i - 1]!r}"
        )
    pos = np.asarray(positions, float)
    if pos.shape != (len(t), k, 2):
        place.fail(positions_field, f"expected shape ({len(t)}, {k}, 2), got {pos.shape}")
    if not np.all(np.isfinite(pos)):
        place.fail(positions_field, "contains NaN or infinite values")


# --------------------------------------------------------------------------- bodies


def checked_body_mesh(place, vertices, triangles):
    """Validate a body mesh; returns (vertices (n,2) float, triangles (m,3) counter-clockwise)."""
    v = _finite_array(place, "vertices", vertices, (2,))
    if len(v) < 3:
        place.fail("vertices", f"expected at least 3 vertices, got {len(v)}")
    t = _index_array(place, "triangles", triangles, 2, "triangle indices")
    if t.shape[1] != 3:
        place.fail("triangles", f"expected shape (m, 3), got {t.shape}")
    if len(t) == 0:
        place.fail("triangles", "expected at least 1 triangle, got 0")
    _indices_in_range(place, "triangles", t, len(v))
    repeated = (t[:, 0] == t[:, 1]) | (t[:, 1] == t[:, 2]) | (t[:, 0] == t[:, 2])
    if np.any(repeated):
        i = int(np.argmax(repeated))
        place.fail(f"triangles[{i}]", f"triangle uses a vertex twice: {t[i].tolist()}")
    unused = np.setdiff1d(np.arange(len(v)), t.ravel())
    if len(unused):
        place.fail(
            f"vertices[{int(unused[0])}]",
            f"vertex is not used by any triangle ({len(unused)} unused vertices)",
        )
    area = signed_areas(v, t)
    scale = max(float(np.ptp(v, axis=0).max()), 1e-300)
    tiny = np.abs(area) <= DEGENERATE_AREA_REL * scale * scale
    if tiny.any():
        place.fail(f"triangles[{int(np.flatnonzero(tiny)[0])}]", "zero area (degenerate)")
    if np.all(area < 0):
        t = t[:, [0, 2, 1]]
    elif np.any(area < 0):
        minority = area < 0 if (area > 0).sum() >= (area < 0).sum() else area > 0
        place.fail(f"triangles[{int(np.flatnonzero(minority)[0])}]", "inverted (inconsistent orientation)")
    _check_topology(place, t)
    check_boundary_simple(place, v, boundary_edges(t))
    return v, t


def _check_topology(place, t):
    und, counts = edge_use(t)
    if np.any(counts > 2):
        e = und[np.argmax(counts > 2)]
        place.fail("triangles", f"non-manifold edge ({e[0]}, {e[1]}) shared by more than two triangles")
    _, first, counts = np.unique(np.sort(t, axis=1), axis=0, return_index=True, return_counts=True)
    if np.any(counts > 1):
        place.fail(
            f"triangles[{int(first[np.argmax(counts > 1)])}]", "repeated (another triangle has its vertices)"
        )
    directed = np.concatenate([t[:, [0, 1]], t[:, [1, 2]], t[:, [2, 0]]])
    if len(np.unique(directed, axis=0)) < len(directed):
        # consistently oriented neighbours traverse a shared edge in opposite directions
        place.fail("triangles", "two triangles fold over each other (same-direction shared edge)")


def check_boundary_simple(place, x, edges):
    """Raise if a body's boundary has vertices used by more than two boundary
    edges (a 'bow-tie' that makes contact ill-defined)."""
    deg = np.bincount(edges.ravel(), minlength=len(x))
    if np.any(deg > 2):
        i = int(np.argmax(deg > 2))
        place.fail(f"vertices[{i}]", f"non-manifold boundary ({deg[i]} boundary edges meet there)")


def check_velocity(place, velocity, n):
    """None, one velocity (2,) for the whole body or one per vertex (n, 2), finite."""
    if velocity is None:
        return
    try:
        v = np.asarray(velocity, float)
    except (TypeError, ValueError):
        place.fail("velocity", "not a numeric array")
    if v.shape not in ((2,), (n, 2)) or not np.all(np.isfinite(v)):
        place.fail("velocity", f"expected shape (2,) or ({n}, 2) of finite numbers, got shape {v.shape}")


def check_pins(place, pins, n):
    owner = {}
    for i, pin in enumerate(pins):
        field = f"pins[{i}]"
        idx = _index_array(place, f"{field}.indices", pin.indices, 1, "indices")
        if len(idx) == 0:
            place.fail(f"{field}.indices", "expected at least one vertex index")
        _indices_in_range(place, f"{field}.indices", idx, n)
        for j, vertex in enumerate(idx.tolist()):
            if vertex in owner:
                other = owner[vertex]
                why = "listed twice" if other == i else f"is already pinned by {place.path}pins[{other}]"
                place.fail(f"{field}.indices[{j}]", f"vertex {vertex} {why}")
            owner[vertex] = i
        if (pin.times is None) != (pin.positions is None):
            place.fail(field, "give both times and positions, or neither (a fixed pin)")
        if pin.times is not None:
            check_samples(place, f"{field}.times", f"{field}.positions", pin.times, pin.positions, len(idx))


def check_body(place, body):
    """Material, mesh, velocity, pins and groups of a body; returns its (vertices, triangles)."""
    check_material(place, body.material)
    v, t = checked_body_mesh(place, body.vertices, body.triangles)
    check_velocity(place, body.velocity, len(v))
    check_pins(place, body.pins, len(v))
    check_groups(place, body.collision_groups)
    check_kind(place, body)
    return v, t


def check_kind(place, body):
    """'deformable', 'rigid' or 'stiff'; a stiff body has 1 to MAX_MODES modes."""
    if body.kind not in BODY_KINDS:
        place.fail("kind", f"expected one of {', '.join(BODY_KINDS)}, got {_describe(body.kind)}")
    if body.kind == "stiff" and not _is_count(body.modes, MAX_MODES):
        place.fail("modes", f"expected an integer from 1 to {MAX_MODES}, got {_describe(body.modes)}")


def _is_count(value, most):
    """Whether value is an integer (not a bool) from 1 to most."""
    integer = isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))
    return integer and 1 <= value <= most


MAX_GROUP = 64  # collision groups are bits of a 64-bit mask


def check_groups(place, groups):
    """A list of integers in [0, 64) (empty: collides with no object)."""
    if isinstance(groups, (str, bytes)) or not hasattr(groups, "__iter__"):
        place.fail("collision_groups", f"expected a list of integers, got {_describe(groups)}")
    for i, g in enumerate(groups):
        if not isinstance(g, (int, np.integer)) or isinstance(g, (bool, np.bool_)) or not 0 <= g < MAX_GROUP:
            place.fail(
                f"collision_groups[{i}]", f"expected an integer in [0, {MAX_GROUP}), got {_describe(g)}"
            )


# --------------------------------------------------------------------------- colliders, planes


def check_collider(place, c, naming=LIBRARY):
    v = _finite_array(place, "vertices", c.vertices, (2,))
    if len(v) == 0:
        place.fail("vertices", "expected at least 1 vertex")
    e = _index_array(place, "edges", c.edges, 2, "edge indices")
    if e.shape[1] != 2 or len(e) == 0:
        place.fail("edges", f"needs at least one edge (edges of shape (l, 2)), got shape {e.shape}")
    _indices_in_range(place, "edges", e, len(v))
    same = e[:, 0] == e[:, 1]
    if np.any(same):
        i = int(np.argmax(same))
        place.fail(f"edges[{i}]", f"edge connects vertex {int(e[i, 0])} to itself")
    times, positions = naming.collider_times(), naming.collider_positions()
    check_samples(place, times, positions, c.times, c.positions, len(v))
    pos = np.asarray(c.positions, float)
    seg = pos[:, e[:, 1]] - pos[:, e[:, 0]]  # (T, l, 2)
    short = np.hypot(seg[..., 0], seg[..., 1]) <= ZERO_EDGE_REL * (1.0 + np.abs(pos).max())
    if np.any(short):
        k, i = np.argwhere(short)[0]
        place.fail(f"edges[{i}]", f"zero-length edge at motion sample {k}")
    check_number(place, "mu", c.mu, lo=0)
    check_groups(place, c.collision_groups)


def check_half_plane(place, hp):
    for field in ("point", "normal"):
        value = np.asarray(getattr(hp, field), float)
        if value.shape != (2,) or not np.all(np.isfinite(value)):
            place.fail(field, f"expected two finite numbers, got {getattr(hp, field)!r}")
    if float(np.hypot(*np.asarray(hp.normal, float))) <= 1e-12:
        place.fail("normal", f"expected a non-zero vector, got {list(hp.normal)}")
    check_number(place, "mu", hp.mu, lo=0)


def check_names(scene, naming=LIBRARY):
    """Bodies and colliders have distinct names."""
    seen = {}
    entries = [("bodies", i, b.name) for i, b in enumerate(scene.bodies)]
    entries += [("colliders", i, c.name) for i, c in enumerate(scene.colliders)]
    for kind, i, name in entries:
        if name in seen:
            also = naming.label(*seen[name], name)
            naming.entry(kind, i, name).fail("name", f"duplicate {_KIND[kind]} name {name!r} (also {also})")
        seen[name] = (kind, i)


def check_scene(scene, naming=LIBRARY):
    """Check everything but the initial geometry; returns [(vertices, triangles)] per body
    (triangles counter-clockwise)."""
    check_params(scene.params, naming)
    if len(scene.bodies) == 0:
        raise SolverInputError(
            "bodies: expected at least 1 entry, got 0" if naming.file else "scene: needs at least one body"
        )
    check_names(scene, naming)
    meshes = [check_body(naming.body(i, b.name), b) for i, b in enumerate(scene.bodies)]
    for i, c in enumerate(scene.colliders):
        check_collider(naming.collider(i, c.name), c, naming)
    for i, hp in enumerate(scene.half_planes):
        check_half_plane(naming.half_plane(i, hp.name), hp)
    check_links(scene, meshes, naming)
    check_fields(scene, naming)
    check_animation(scene, meshes, naming)
    return meshes


# --------------------------------------------------------------------------- links

ANCHOR_SLACK = 1e-9  # barycentric coordinates this far below 0 still count as inside


def _check_unique_name(place, name, seen, what):
    """A non-empty name not in seen (the names of the earlier entries), which it joins."""
    if not isinstance(name, str) or not name:
        place.fail("name", f"expected a non-empty string, got {_describe(name)}")
    if name in seen:
        place.fail("name", f"duplicate {what} name {name!r}")
    seen.add(name)


def check_links(scene, meshes, naming=LIBRARY):
    """Every link: a known kind, anchors on existing bodies and inside their
    triangles (or world points), numbers in range; messages name the link."""
    bodies = {b.name: i for i, b in enumerate(scene.bodies)}
    seen = set()
    for i, link in enumerate(scene.links):
        place = naming.link(i, getattr(link, "name", ""))
        _check_unique_name(place, link.name, seen, "link")
        _choice(place, "kind", link.kind, LINK_KINDS)
        check_anchor(place, "a", link.a, bodies, meshes, world=False)
        check_anchor(place, "b", link.b, bodies, meshes, world=True)
        _check_link_numbers(place, link)


def _check_link_numbers(place, link):
    if link.length is not None:
        if link.kind in ("pin", "weld"):
            place.fail(
                "length", f"a {link.kind} has no length (its anchors are held together), got {link.length!r}"
            )
        check_number(place, "length", link.length, lo=0)
    if link.stiffness is not None:
        check_number(place, "stiffness", link.stiffness, lo=0, lo_open=True)
    elif link.kind == "spring":
        place.fail(
            "stiffness", "a spring needs a stiffness [N/m] (only pins, welds and ropes have a default)"
        )
    check_number(place, "damping", link.damping, lo=0)
    if link.damping and link.kind != "spring":
        place.fail("damping", f"only springs are damped, this is a {link.kind}")
    if link.break_force is not None:
        check_number(place, "break_force", link.break_force, lo=0, lo_open=True)
    if not isinstance(link.collide, (bool, np.bool_)):
        place.fail("collide", f"expected true or false, got {_describe(link.collide)}")
    _check_engaged(place, link)


def _check_engaged(place, link):
    """engaged_times increasing finite, engaged as many booleans (or both None)."""
    if link.engaged_times is None and link.engaged is None:
        return
    if link.engaged_times is None or link.engaged is None:
        place.fail("engaged", "engaged_times and engaged come together (or neither)")
    times = np.asarray(link.engaged_times, float).ravel()
    if not len(times) or not np.all(np.isfinite(times)) or np.any(np.diff(times) <= 0):
        place.fail("engaged_times", "expected increasing finite times")
    values = np.asarray(link.engaged).ravel()
    if values.shape != times.shape or values.dtype != np.bool_:
        place.fail("engaged", f"expected {len(times)} booleans, one per engaged_times sample")


def check_anchor(place, end, anchor, bodies, meshes, world):
    """A body's material point (triangle in range, barycentric coordinates
    inside it) or, where world is allowed, a fixed or animated world point."""
    if anchor.body is None:
        if not world:
            place.fail(f"{end}.body", "the first anchor must be on a body (the second may be a world point)")
        if anchor.times is None:
            if anchor.positions is not None:
                place.fail(f"{end}.times", "give both times and positions, or neither (a fixed point)")
            value = (
                np.asarray(anchor.position, float)
                if all(map(_is_number, np.ravel(anchor.position)))
                else None
            )
            if value is None or value.shape != (2,) or not np.all(np.isfinite(value)):
                place.fail(f"{end}.position", f"expected two finite numbers, got {anchor.position!r}")
            return
        if anchor.positions is None:
            place.fail(f"{end}.positions", "give both times and positions, or neither (a fixed point)")
        pos = np.asarray(anchor.positions, float)
        check_samples(
            place, f"{end}.times", f"{end}.positions", anchor.times, pos[:, None] if pos.ndim == 2 else pos, 1
        )
        return
    if anchor.body not in bodies:
        place.fail(f"{end}.body", f"no body named {anchor.body!r}")
    _, t = meshes[bodies[anchor.body]]
    tri = anchor.triangle
    if not isinstance(tri, (int, np.integer)) or isinstance(tri, (bool, np.bool_)) or not 0 <= tri < len(t):
        place.fail(
            f"{end}.triangle",
            f"expected a triangle index in [0, {len(t)}) of body {anchor.body!r}, got {_describe(tri)}",
        )
    w = np.asarray(anchor.barycentric, float) if all(map(_is_number, np.ravel(anchor.barycentric))) else None
    if w is None or w.shape != (3,) or not np.all(np.isfinite(w)):
        place.fail(f"{end}.barycentric", f"expected three finite numbers, got {anchor.barycentric!r}")
    if np.any(w < -ANCHOR_SLACK) or abs(w.sum() - 1.0) > 1e-6:
        place.fail(
            f"{end}.barycentric",
            f"the anchor is outside triangle {tri} of body {anchor.body!r} "
            f"(barycentric coordinates {w.tolist()} must be >= 0 and sum to 1)",
        )


def check_initial_geometry(model, x, dhat):
    """Raise if bodies overlap / are closer than dhat, or cross a collider or a half-plane."""
    names = model.names
    st = candidate_stencils(model, x, x, dhat)
    p, e = st[:, 0], st[:, 1:]
    X = x[st]
    d = np.sqrt(distance_sq(X, point_edge_case(X)))
    either_collider = model.is_collider[p] | model.is_collider[e[:, 0]]
    bad = np.where(either_collider, d <= 0.0, d < dhat)
    if bad.any():
        k = int(np.argmax(bad))
        a, b = names[model.owner[p[k]]], names[model.owner[e[k, 0]]]
        if either_collider[k]:
            raise SolverInputError(f"'{a}' and '{b}' touch or overlap at the start")
        pair = f"body '{a}' and itself" if a == b else f"bodies '{a}' and '{b}'"
        raise SolverInputError(
            f"{pair} overlap or are closer than dhat={dhat:g} at the start "
            f"(distance {format_distance(d[k], dhat)})"
        )
    _check_edge_crossings(model, x, names)
    _check_containment(model, x, names)
    for i in range(len(model.plane_point)):
        sd = (x[model.hp_points] - model.plane_point[i]) @ model.plane_normal[i]
        if np.any(sd <= 0.0):
            k = model.hp_points[int(np.argmin(sd))]
            raise SolverInputError(
                f"body '{names[model.owner[k]]}' starts on or below half-plane '{model.plane_names[i]}'"
            )


def _check_edge_crossings(model, x, names):
    edges = model.edges
    lo, hi = edge_boxes(x, x, edges)
    # reuse the point-edge broad phase with edge boxes as "points"
    ai, bi = candidates(lo, hi, lo, hi)
    ea, eb = edges[ai], edges[bi]
    share = (ea[:, 0] == eb[:, 0]) | (ea[:, 0] == eb[:, 1]) | (ea[:, 1] == eb[:, 0]) | (ea[:, 1] == eb[:, 1])
    both_col = model.is_collider[ea[:, 0]] & model.is_collider[eb[:, 0]]
    keep = (ai < bi) & ~share & ~both_col
    if model.owner_contact is not None:  # objects that never touch may overlap
        keep &= model.owner_contact[model.owner[ea[:, 0]], model.owner[eb[:, 0]]]
    ea, eb = ea[keep], eb[keep]
    cross = segments_intersect(x[ea[:, 0]], x[ea[:, 1]], x[eb[:, 0]], x[eb[:, 1]])
    if cross.any():
        k = int(np.argmax(cross))
        a, b = names[model.owner[ea[k, 0]]], names[model.owner[eb[k, 0]]]
        if model.owner[ea[k, 0]] == model.owner[eb[k, 0]]:  # two parts of one mesh
            raise SolverInputError(f"body '{a}': a part of the mesh lies inside another part (self-overlap)")
        raise SolverInputError(f"'{a}' and '{b}' overlap at the start (boundary edges cross)")


def _check_containment(model, x, names):
    """An object entirely inside another (no crossing edges): test one vertex
    of every mesh component (and of every collider) against the triangles of
    every other component, of other bodies and of its own body (a part nested
    inside another part).  A probe on a triangle's edge counts as inside."""
    tris = model.elements.tris
    comp = mesh.components(tris, model.n)  # colliders: every vertex its own label
    tri_comp = comp[tris[:, 0]]
    a, b, c = x[tris[:, 0]], x[tris[:, 1]], x[tris[:, 2]]
    probes = np.concatenate([np.unique(tri_comp), [sl.start for sl in model.collider_slices]])
    for r in probes.astype(np.intp):
        inside = (tri_comp != r) & points_in_triangles(x[r], a, b, c)
        if model.owner_contact is not None:  # objects that never touch may overlap
            inside &= model.owner_contact[model.owner[r], model.owner[tris[:, 0]]]
        if inside.any():
            guest, host = names[model.owner[r]], names[model.owner[tris[int(np.argmax(inside)), 0]]]
            if guest == host:
                raise SolverInputError(
                    f"body '{guest}': a part of the mesh lies inside another part (self-overlap)"
                )
            raise SolverInputError(f"'{guest}' starts inside body '{host}'")


# --------------------------------------------------------------------------- force fields

_FIELD_SCALARS = ("strength", "flow", "linear_drag", "quadratic_drag")
_FIELD_VECTORS = ("position", "direction")
_NOT_NEGATIVE = ("linear_drag", "quadratic_drag")  # a negative drag would feed energy in


def check_fields(scene, naming=LIBRARY):
    """Every force field: a known kind, shape and falloff, its values finite
    (sampled ones of its times' length), drags not negative; messages name the field."""
    seen = set()
    for i, f in enumerate(scene.fields):
        place = naming.field(i, getattr(f, "name", ""))
        _check_unique_name(place, f.name, seen, "field")
        _choice(place, "kind", f.kind, FIELD_KINDS)
        _choice(place, "shape", f.shape, FIELD_SHAPES)
        if f.kind == "vortex" and f.shape != "point":
            place.fail("shape", "a vortex turns around a point: only the 'point' shape")
        _choice(place, "falloff", f.falloff, FIELD_FALLOFFS)
        check_number(place, "falloff_power", f.falloff_power, lo=0)
        for name in ("min_distance", "max_distance"):
            if getattr(f, name) is not None:
                check_number(place, name, getattr(f, name), lo=0)
        _check_field_values(place, f)


def _check_field_values(place, f):
    T = None
    if f.times is not None:
        T = _check_times(place, "times", f.times)
    for name in _FIELD_SCALARS + _FIELD_VECTORS:
        a = _field_array(place, name, getattr(f, name))
        tail = () if name in _FIELD_SCALARS else (2,)
        if a.shape != tail and (T is None or a.shape != (T, *tail)):
            sampled = "" if T is None else f" or ({T}, {', '.join(map(str, tail))})".replace(", )", ",)")
            want = "a number" if not tail else "(2,)"
            place.fail(name, f"expected {want}{sampled}, got shape {a.shape}")
        if name in _NOT_NEGATIVE and np.any(a < 0):
            place.fail(name, f"expected values >= 0 (drag takes energy out), got {a.min()!r}")
    if f.shape == "plane" and np.any(np.hypot(*np.moveaxis(np.asarray(f.direction, float), -1, 0)) <= 1e-12):
        place.fail("direction", "the plane shape needs a non-zero normal")


def _field_array(place, name, value):
    try:
        a = np.asarray(value, float)
    except (TypeError, ValueError):
        place.fail(name, f"expected numbers, got {_describe(value)}")
    if not np.all(np.isfinite(a)):
        place.fail(name, "contains NaN or infinite values")
    return a


# --------------------------------------------------------------------------- animated settings


def _check_times(place, field, times):
    """Sample times: a non-empty, strictly increasing list of finite numbers."""
    t = np.atleast_1d(np.asarray(times, float))
    check_samples(place, field, field, t, np.zeros((len(t), 0, 2)), 0)
    return len(t)


def _check_track(place, field, track, width):
    """A Track: increasing times, finite values of shape (T,) or (T, width)."""
    T = _check_times(place, f"{field}.times", track.times)
    vals = np.asarray(track.values, float)
    want = (T,) if width is None else (T, width)
    if vals.shape != want:
        place.fail(f"{field}.values", f"expected shape {want}, got {vals.shape}")
    if not np.all(np.isfinite(vals)):
        place.fail(f"{field}.values", "contains NaN or infinite values")
    return vals


def check_animation(scene, meshes, naming=LIBRARY):
    """The animated settings: gravity (T, 2), the named bodies' E and density
    (> 0), friction (>= 0), painted stiffness weights in [0, 1] on every vertex
    and factors > 0; half-plane friction >= 0 on existing half-planes."""
    anim = scene.animation
    if anim is None:
        return
    place = Place("animation.")
    if anim.gravity is not None:
        _check_track(place, "gravity", anim.gravity, 2)
    bodies = {b.name: i for i, b in enumerate(scene.bodies)}
    for j, ma in enumerate(anim.materials):
        if ma.body not in bodies:
            place.fail(f"materials[{j}].body", f"no body named {ma.body!r}")
        bi = bodies[ma.body]
        bplace = naming.body(bi, ma.body)
        for name, lo_open in (("E", True), ("density", True), ("mu", False)):
            tr = getattr(ma, name)
            if tr is not None:
                vals = _check_track(bplace, f"animation.{name}", tr, None)
                if np.any(vals < 0) or (lo_open and np.any(vals == 0)):
                    want = "> 0" if lo_open else ">= 0"
                    bplace.fail(f"animation.{name}.values", f"expected values {want}, got {vals.min()!r}")
        _check_painted_stiffness(bplace, ma, len(meshes[bi][0]))
    planes = [hp.name for hp in scene.half_planes]
    for j, (name, tr) in enumerate(anim.plane_mu):
        if name not in planes:
            place.fail(f"plane_mu[{j}]", f"no half-plane named {name!r}")
        vals = _check_track(place, f"plane_mu[{j}]", tr, None)
        if np.any(vals < 0):
            place.fail(f"plane_mu[{j}].values", f"expected friction >= 0, got {vals.min()!r}")


def _check_painted_stiffness(place, ma, n):
    if len(ma.stiffness_factors) != 2:
        place.fail("animation.stiffness_factors", "expected two factors (min, max)")
    for k, v in enumerate(ma.stiffness_factors):
        check_number(place, f"animation.stiffness_factors[{k}]", v, lo=0, lo_open=True)
    if ma.stiffness_weights is None:
        return
    w = np.asarray(ma.stiffness_weights, float)
    if w.shape != (n,):
        place.fail(
            "animation.stiffness_weights", f"expected one weight per vertex ({n},), got shape {w.shape}"
        )
    if not np.all(np.isfinite(w)) or np.any((w < 0) | (w > 1)):
        place.fail("animation.stiffness_weights", "expected weights in [0, 1]")
