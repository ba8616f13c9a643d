"""JSON scene files: strict loader, writer and dict conversion.

The format is documented field by field in ``docs/scene_format.md``.  Units are
SI (metres, seconds, kilograms, pascals; 2D densities in kg/m^2).

Every problem in a scene file raises :class:`~solver.errors.SolverInputError`
whose message starts with the path of the offending field, e.g.
``bodies[1].material.nu: expected a number in (-1, 0.5), got 0.7 (body "top")``.

The loader checks structure only (required / unknown fields, types, shapes,
finiteness); every rule on the values (ranges, allowed names, index ranges,
meshes, sample times) is ``validate.check_scene``'s, called with the file's
naming so that its messages give the field's path.  Checks of the start state
as a whole (overlaps, penetration) are done by the simulation.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import fields as _dc_fields
from dataclasses import replace

import numpy as np

from ..errors import SolverInputError
from ..scene import BODY_KINDS, Body, Collider, HalfPlane, Link, LinkAnchor, Material, Pin, Scene, SimParams
from ..validate import SCENE_FILE, _describe, _is_number, check_scene
from . import fields_io

FORMAT_NAME = "blender-ipc-scene"
FORMAT_VERSION = 1
MOTION_TYPES = ("static", "sampled", "rigid", "affine")

__all__ = ["FORMAT_NAME", "FORMAT_VERSION", "dumps_scene", "load_scene", "save_scene", "scene_to_dict"]


# --------------------------------------------------------------------------
# small validation helpers
# --------------------------------------------------------------------------


def _fail(path, message):
    raise SolverInputError(f"{path}: {message}" if path else message)


def _join(path, key):
    return f"{path}.{key}" if path else key


def _is_integer(value):
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _object(value, path, required=(), optional=()):
    """Check that value is an object with exactly the allowed keys."""
    if not isinstance(value, dict):
        _fail(path, f"expected an object, got {_describe(value)}")
    for key in value:
        if key not in required and key not in optional:
            allowed = ", ".join(sorted((*required, *optional)))
            _fail(path, f"unknown field {key!r} (allowed: {allowed})")
    for key in required:
        if key not in value:
            _fail(path, f"missing required field {key!r}")
    return value


def _integer(value, path, lo=None):
    if not _is_integer(value):
        _fail(path, f"expected an integer, got {_describe(value)}")
    if lo is not None and value < lo:
        _fail(path, f"expected an integer >= {lo}, got {value!r}")
    return int(value)


def _string(value, path, choices=None):
    if not isinstance(value, str):
        _fail(path, f"expected a string, got {_describe(value)}")
    if choices is not None and value not in choices:
        _fail(path, f"expected one of {', '.join(map(repr, choices))}, got {value!r}")
    return value


def _name(value, path):
    if not isinstance(value, str) or not value.strip():
        _fail(path, f"expected a non-empty string, got {_describe(value)}")
    return value


def _boolean(value, path):
    if not isinstance(value, (bool, np.bool_)):
        _fail(path, f"expected true or false, got {_describe(value)}")
    return bool(value)


def _array(value, path, shape, integer=False):
    """Convert a nested list (or numpy array) to an array of the given shape.

    shape holds one entry per dimension: an int (exact length) or None (any
    length, but the same for all rows -- ragged lists are rejected).
    """
    if isinstance(value, np.ndarray):
        return _array_from_numpy(value, path, shape, integer)
    dims = [None if n is None else (n, None) for n in shape]
    _check_nested(value, path, dims, 0, integer)
    arr = np.array(value, dtype=np.int64 if integer else np.float64)
    if arr.size == 0:
        # np.array([]) loses the trailing dimensions; restore the known ones.
        arr = arr.reshape(tuple(0 if d is None else d[0] for d in dims))
    return arr


def _check_nested(value, path, dims, depth, integer):
    if depth == len(dims):
        if integer:
            if not _is_integer(value):
                _fail(path, f"expected an integer, got {_describe(value)}")
        elif not _is_number(value) or not math.isfinite(value):
            _fail(path, f"expected a finite number, got {_describe(value)}")
        return
    if not isinstance(value, (list, tuple)):
        _fail(path, f"expected a list, got {_describe(value)}")
    want = dims[depth]
    if want is None:
        # First row of this depth fixes the length for all others.
        dims[depth] = (len(value), path)
    elif len(value) != want[0]:
        like = f" like {want[1]}" if want[1] is not None else ""
        ragged = " (ragged array)" if want[1] is not None else ""
        _fail(path, f"expected a list of {want[0]} entries{like}, got {len(value)}{ragged}")
    for i, item in enumerate(value):
        _check_nested(item, f"{path}[{i}]", dims, depth + 1, integer)


def _array_from_numpy(value, path, shape, integer):
    kinds = "iu" if integer else "iuf"
    if value.dtype.kind not in kinds:
        _fail(path, f"expected an array of {'integers' if integer else 'numbers'}, got dtype {value.dtype}")
    if value.ndim != len(shape):
        _fail(path, f"expected a {len(shape)}-dimensional array, got shape {value.shape}")
    for axis, (want, got) in enumerate(zip(shape, value.shape, strict=True)):
        if want is not None and want != got:
            _fail(path, f"expected length {want} along axis {axis}, got shape {value.shape}")
    arr = value.astype(np.int64 if integer else np.float64, copy=True)
    if not integer:
        bad = np.argwhere(~np.isfinite(arr))
        if len(bad):
            where = "".join(f"[{i}]" for i in bad[0])
            _fail(path + where, f"expected a finite number, got {arr[tuple(bad[0])]!r}")
    return arr


def _times(value, path):
    t = _array(value, path, (None,))
    if len(t) == 0:
        _fail(path, "expected at least one sample time")
    return t


# --------------------------------------------------------------------------
# loader
# --------------------------------------------------------------------------

_TOP_REQUIRED = ("format", "version", "bodies")
_TOP_OPTIONAL = ("colliders", "half_planes", "params", "description", "links", "fields", "animation")


def load_scene(path_or_dict) -> Scene:
    """Load and validate a scene from a JSON file path or an already parsed dict.

    Raises SolverInputError naming the offending field on any problem.
    """
    if isinstance(path_or_dict, dict):
        return scene_from_dict(path_or_dict)
    if not isinstance(path_or_dict, (str, os.PathLike)):
        raise SolverInputError(
            f"load_scene: expected a file path or a dict, got {type(path_or_dict).__name__}"
        )
    path = os.fspath(path_or_dict)
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except OSError as exc:
        raise SolverInputError(f"{path}: cannot read scene file ({exc.strerror or exc})") from None
    except UnicodeDecodeError as exc:
        raise SolverInputError(f"{path}: not a UTF-8 text file ({exc.reason})") from None
    except json.JSONDecodeError as exc:
        raise SolverInputError(
            f"{path}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from None
    return scene_from_dict(data)


def scene_from_dict(data) -> Scene:
    """Validate a parsed scene dict and build the :class:`Scene`."""
    _object(data, "", _TOP_REQUIRED, _TOP_OPTIONAL)
    fmt = data["format"]
    if fmt != FORMAT_NAME:
        _fail("format", f"expected {FORMAT_NAME!r}, got {_describe(fmt)}")
    version = _integer(data["version"], "version")
    if version != FORMAT_VERSION:
        _fail("version", f"unsupported version {version} (this solver reads version {FORMAT_VERSION})")
    if "description" in data:
        _string(data["description"], "description")

    bodies_raw = _list(data["bodies"], "bodies", min_len=1)
    bodies = tuple(_parse_body(b, f"bodies[{i}]") for i, b in enumerate(bodies_raw))

    colliders_raw = _list(data.get("colliders", []), "colliders")
    colliders = tuple(_parse_collider(c, f"colliders[{i}]") for i, c in enumerate(colliders_raw))

    planes_raw = _list(data.get("half_planes", []), "half_planes")
    planes = tuple(_parse_half_plane(h, f"half_planes[{i}]", i) for i, h in enumerate(planes_raw))

    params = _parse_params(data.get("params", {}), "params")
    links_raw = _list(data.get("links", []), "links")
    links = tuple(_parse_link(k, f"links[{i}]") for i, k in enumerate(links_raw))
    scene = Scene(bodies=bodies, colliders=colliders, half_planes=planes, params=params, links=links)
    scene = replace(scene, fields=fields_io.parse_fields(data.get("fields", [])))
    if "animation" in data:
        scene = replace(scene, animation=fields_io.parse_animation(data["animation"]))
    check_scene(scene, SCENE_FILE)
    return _unit_normals(scene)


def _unit_normals(scene):
    """The half-planes' normals scaled to length 1 (once they are known to be non-zero)."""
    planes = []
    for hp in scene.half_planes:
        length = float(np.hypot(*hp.normal))
        planes.append(replace(hp, normal=(hp.normal[0] / length, hp.normal[1] / length)))
    return replace(scene, half_planes=tuple(planes))


def _list(value, path, min_len=0):
    if not isinstance(value, (list, tuple)):
        _fail(path, f"expected a list, got {_describe(value)}")
    if len(value) < min_len:
        _fail(path, f"expected at least {min_len} entr{'y' if min_len == 1 else 'ies'}, got {len(value)}")
    return value


def _vec2(value, path):
    return _array(value, path, (2,))


# --- bodies ----------------------------------------------------------------


def _parse_body(data, path):
    _object(
        data,
        path,
        ("name", "vertices", "triangles"),
        ("material", "velocity", "pins", "collision_groups", "kind", "modes"),
    )
    name = _name(data["name"], _join(path, "name"))
    try:
        return _parse_body_fields(data, path, name)
    except SolverInputError as exc:
        raise SolverInputError(f'{exc} (body "{name}")') from None


def _parse_body_fields(data, path, name):
    verts = _array(data["vertices"], _join(path, "vertices"), (None, 2))
    tris = _array(data["triangles"], _join(path, "triangles"), (None, 3), integer=True)
    material = _parse_material(data.get("material", {}), _join(path, "material"))
    velocity = None
    if data.get("velocity") is not None:
        velocity = _parse_velocity(data["velocity"], _join(path, "velocity"), len(verts))
    pins = _parse_pins(data.get("pins", []), _join(path, "pins"), len(verts))
    groups = _groups(data, path)
    kind = _string(data.get("kind", "deformable"), _join(path, "kind"), BODY_KINDS)
    modes = data.get("modes", Body.modes)  # checked by validate.check_kind
    return Body(name, verts, tris, material, velocity, pins, groups, kind, modes)


def _groups(data, path):
    """The optional collision_groups list (default: group 0); its entries are
    checked by validate.check_groups."""
    return tuple(_list(data.get("collision_groups", [0]), _join(path, "collision_groups")))


_MATERIAL_KEYS = ("E", "nu", "density", "mu", "mu_static")


def _parse_material(data, path):
    _object(data, path, (), _MATERIAL_KEYS)
    d = Material()
    # numbers as given: validate.check_material checks their types and ranges
    E, nu, rho = data.get("E", d.E), data.get("nu", d.nu), data.get("density", d.density)
    mu, mu_s = data.get("mu", d.mu), data.get("mu_static", d.mu_static)
    return Material(E=E, nu=nu, density=rho, mu=mu, mu_static=mu_s)


def _parse_velocity(value, path, n):
    # (2,) uniform velocity, or (n, 2) per vertex; tell them apart by nesting.
    first = value[0] if isinstance(value, (list, tuple)) and value else None
    per_vertex = (isinstance(value, np.ndarray) and value.ndim == 2) or isinstance(first, (list, tuple))
    if per_vertex:
        return _array(value, path, (n, 2))
    return _vec2(value, path)


def _parse_pins(value, path, n):
    return tuple(_parse_pin(p, f"{path}[{i}]", n) for i, p in enumerate(_list(value, path)))


def _parse_pin(data, path, n):
    _object(data, path, ("indices",), ("times", "positions"))
    idx = _array(data["indices"], _join(path, "indices"), (None,), integer=True)
    has_t, has_p = data.get("times") is not None, data.get("positions") is not None
    if has_t != has_p:
        missing = "positions" if has_t else "times"
        _fail(path, f"missing required field {missing!r} (a moving pin needs both times and positions)")
    if not has_t:
        return Pin(indices=idx)
    times = _times(data["times"], _join(path, "times"))
    pos = _array(data["positions"], _join(path, "positions"), (len(times), len(idx), 2))
    return Pin(indices=idx, times=times, positions=pos)


# --- colliders -------------------------------------------------------------


def _parse_collider(data, path):
    _object(data, path, ("name", "edges"), ("vertices", "mu", "motion", "collision_groups"))
    name = _name(data["name"], _join(path, "name"))
    try:
        return _parse_collider_fields(data, path, name)
    except SolverInputError as exc:
        raise SolverInputError(f'{exc} (collider "{name}")') from None


def _parse_collider_fields(data, path, name):
    mu = data.get("mu", 0.0)
    motion = data.get("motion", {"type": "static"})
    mpath = _join(path, "motion")
    if not isinstance(motion, dict):
        _fail(mpath, f"expected an object, got {_describe(motion)}")
    if "type" not in motion:
        _fail(mpath, "missing required field 'type'")
    kind = _string(motion["type"], _join(mpath, "type"), MOTION_TYPES)

    verts = None
    if data.get("vertices") is not None:
        verts = _array(data["vertices"], _join(path, "vertices"), (None, 2))
        if len(verts) == 0:
            _fail(_join(path, "vertices"), "expected at least 1 vertex")
    elif kind != "sampled":
        _fail(path, "missing required field 'vertices'")

    if kind == "sampled":
        _object(motion, mpath, ("type", "times", "positions"))
        times = _times(motion["times"], _join(mpath, "times"))
        k = None if verts is None else len(verts)
        pos = _array(motion["positions"], _join(mpath, "positions"), (len(times), k, 2))
        if pos.shape[1] == 0:
            _fail(_join(mpath, "positions"), "expected at least 1 vertex")
        if verts is not None and not np.allclose(
            verts, pos[0], rtol=0, atol=1e-9 * (1 + np.abs(pos[0]).max())
        ):
            _fail(
                _join(path, "vertices"),
                "must equal motion.positions[0] (the position at the first sample time); omit it to use that",
            )
        verts = pos[0].copy()
    else:
        times, pos = _collider_motion(motion, mpath, kind, verts)

    edges = _array(data["edges"], _join(path, "edges"), (None, 2), integer=True)
    groups = _groups(data, path)
    return Collider(name, pos[0].copy(), edges, times, pos, mu, groups)


def _collider_motion(motion, mpath, kind, local):
    """(times, positions) for static / rigid / affine motion of local vertices."""
    if kind == "static":
        _object(motion, mpath, ("type",))
        return np.array([0.0]), local[None].copy()
    if kind == "affine":
        _object(motion, mpath, ("type", "times", "matrices"))
        times = _times(motion["times"], _join(mpath, "times"))
        mats = _array(motion["matrices"], _join(mpath, "matrices"), (len(times), 2, 3))
    else:
        _object(motion, mpath, ("type", "times"), ("translations", "angles", "pivot"))
        times = _times(motion["times"], _join(mpath, "times"))
        T = len(times)
        trans = (
            _array(motion["translations"], _join(mpath, "translations"), (T, 2))
            if "translations" in motion
            else np.zeros((T, 2))
        )
        angles = _array(motion["angles"], _join(mpath, "angles"), (T,)) if "angles" in motion else np.zeros(T)
        pivot = _vec2(motion["pivot"], _join(mpath, "pivot")) if "pivot" in motion else np.zeros(2)
        mats = rigid_matrices(trans, angles, pivot)
    pos = np.einsum("tij,kj->tki", mats[:, :, :2], local) + mats[:, None, :, 2]
    return times, pos


def rigid_matrices(translations, angles, pivot=(0.0, 0.0)):
    """(T,2,3) affine matrices of x = R(angle) (X - pivot) + pivot + translation.

    angles in radians, counter-clockwise.
    """
    trans = np.asarray(translations, float).reshape(-1, 2)
    ang = np.asarray(angles, float).reshape(-1)
    p = np.asarray(pivot, float)
    c, s = np.cos(ang), np.sin(ang)
    rot = np.stack([np.stack([c, -s], -1), np.stack([s, c], -1)], -2)  # (T,2,2)
    offset = p - rot @ p + trans
    return np.concatenate([rot, offset[:, :, None]], axis=2)


# --- half-planes and params ------------------------------------------------


def _parse_half_plane(data, path, index):
    _object(data, path, ("point", "normal"), ("mu", "name"))
    name = _name(data.get("name", f"half_plane_{index}"), _join(path, "name"))
    point = _vec2(data["point"], _join(path, "point"))
    normal = _vec2(data["normal"], _join(path, "normal"))
    return HalfPlane(
        point=(float(point[0]), float(point[1])),
        normal=(float(normal[0]), float(normal[1])),  # scaled to length 1 once validated
        mu=data.get("mu", HalfPlane().mu),
        name=name,
    )


_PARAM_KEYS = tuple(f.name for f in _dc_fields(SimParams))


def _parse_params(data, path):
    _object(data, path, (), _PARAM_KEYS)
    d = SimParams()
    p = lambda key: _join(path, key)  # noqa: E731
    # numbers and names as given: validate.check_params checks their types, ranges and choices
    kappa = data.get("kappa", d.kappa)
    if kappa == "auto":
        kappa = None
    elif isinstance(kappa, str):
        _fail(p("kappa"), f"expected a number > 0, null or 'auto', got {_describe(kappa)}")
    dt, dhat = data.get("dt", d.dt), data.get("dhat", d.dhat)
    formulation = _string(data.get("formulation", d.formulation), p("formulation"))
    mollifier = _string(data.get("friction_mollifier", d.friction_mollifier), p("friction_mollifier"))
    eps_v, tol = data.get("eps_v", d.eps_v), data.get("newton_tol", d.newton_tol)
    force_tol, iters = data.get("force_tol", d.force_tol), data.get("max_newton_iters", d.max_newton_iters)
    gravity = _vec2(data.get("gravity", list(d.gravity)), p("gravity"))
    strict = _boolean(data.get("strict", d.strict), p("strict"))
    linear = _string(data.get("linear_solver", d.linear_solver), p("linear_solver"))
    return SimParams(
        dt=dt,
        dhat=dhat,
        kappa=kappa,
        formulation=formulation,
        eps_v=eps_v,
        friction_mollifier=mollifier,
        newton_tol=tol,
        force_tol=force_tol,
        max_newton_iters=iters,
        gravity=(float(gravity[0]), float(gravity[1])),
        strict=strict,
        linear_solver=linear,
    )


# --------------------------------------------------------------------------
# writer
# --------------------------------------------------------------------------


def _floats(a):
    return np.asarray(a, dtype=np.float64).tolist()


def _ints(a):
    return np.asarray(a, dtype=np.int64).tolist()


def scene_to_dict(scene: Scene) -> dict:
    """Plain-JSON dict of a scene (lists, floats, ints, strings, null).

    Colliders are written with 'static' motion when they have one sample whose
    positions equal their vertices, otherwise as 'sampled' motion (rigid and
    affine motions are stored as the sampled positions they produce).
    """
    out = {
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "bodies": [_body_to_dict(b) for b in scene.bodies],
    }
    out["colliders"] = [_collider_to_dict(c) for c in scene.colliders]
    out["half_planes"] = [
        {"name": h.name, "point": _floats(h.point), "normal": _floats(h.normal), "mu": float(h.mu)}
        for h in scene.half_planes
    ]
    out["params"] = _params_to_dict(scene.params)
    if scene.links:
        out["links"] = [_link_to_dict(k) for k in scene.links]
    if scene.fields:
        out["fields"] = fields_io.fields_to_list(scene.fields)
    if scene.animation is not None:
        out["animation"] = fields_io.animation_to_dict(scene.animation)
    return out


def _body_to_dict(body):
    m = body.material
    d = {
        "name": body.name,
        "vertices": _floats(body.vertices),
        "triangles": _ints(body.triangles),
        "material": {
            "E": float(m.E),
            "nu": float(m.nu),
            "density": float(m.density),
            "mu": float(m.mu),
            "mu_static": None if m.mu_static is None else float(m.mu_static),
        },
    }
    if body.velocity is not None:
        d["velocity"] = _floats(body.velocity)
    if body.pins:
        d["pins"] = [_pin_to_dict(p) for p in body.pins]
    _groups_to_dict(body, d)
    if body.kind != "deformable":  # written only when not the default
        d["kind"] = body.kind
    if body.kind == "stiff":
        d["modes"] = body.modes
    return d


def _pin_to_dict(pin):
    d = {"indices": _ints(pin.indices)}
    if pin.times is not None:
        d["times"] = _floats(pin.times)
        d["positions"] = _floats(pin.positions)
    return d


def _collider_to_dict(col):
    pos = np.asarray(col.positions, float)
    verts = np.asarray(col.vertices, float)
    d = {"name": col.name, "mu": float(col.mu)}
    times = np.asarray(col.times, float)
    if len(pos) == 1 and times[0] == 0.0 and np.array_equal(pos[0], verts):
        d["vertices"] = _floats(verts)
        d["motion"] = {"type": "static"}
    else:
        d["motion"] = {"type": "sampled", "times": _floats(col.times), "positions": _floats(pos)}
    d["edges"] = _ints(col.edges)
    _groups_to_dict(col, d)
    return d


def _groups_to_dict(obj, d):
    """collision_groups, written only when not the default (group 0 alone)."""
    if tuple(obj.collision_groups) != (0,):
        d["collision_groups"] = [int(g) for g in obj.collision_groups]


# --- links -------------------------------------------------------------------

_LINK_OPTIONAL = ("length", "stiffness", "damping", "break_force", "collide", "engaged_times", "engaged")


def _parse_link(data, path):
    _object(data, path, ("name", "kind", "a", "b"), _LINK_OPTIONAL)
    name = _name(data["name"], _join(path, "name"))
    try:
        a = _parse_anchor(data["a"], _join(path, "a"))
        b = _parse_anchor(data["b"], _join(path, "b"))
    except SolverInputError as exc:
        raise SolverInputError(f'{exc} (link "{name}")') from None
    # numbers and choices as given: validate.check_links checks them (naming the link)
    d = Link(name, data["kind"], a, b)
    values = {k: data[k] for k in _LINK_OPTIONAL if k in data}
    if "engaged_times" in values:
        values["engaged_times"] = _times(values["engaged_times"], _join(path, "engaged_times"))
    if "engaged" in values:
        values["engaged"] = np.asarray(values["engaged"])
    return replace(d, **values)


def _parse_anchor(data, path):
    """{"body", "triangle", "barycentric"}, {"position"} or {"times", "positions"}."""
    _object(data, path, (), ("body", "triangle", "barycentric", "position", "times", "positions"))
    if "body" in data:
        _object(data, path, ("body", "triangle", "barycentric"))
        body = _name(data["body"], _join(path, "body"))
        tri = _integer(data["triangle"], _join(path, "triangle"), lo=0)
        w = _array(data["barycentric"], _join(path, "barycentric"), (3,))
        return LinkAnchor(body=body, triangle=tri, barycentric=tuple(w.tolist()))
    if "position" in data:
        _object(data, path, ("position",))
        return LinkAnchor(position=tuple(_vec2(data["position"], _join(path, "position")).tolist()))
    _object(data, path, ("times", "positions"))
    times = _times(data["times"], _join(path, "times"))
    return LinkAnchor(
        times=times, positions=_array(data["positions"], _join(path, "positions"), (len(times), 2))
    )


def _link_to_dict(link):
    d = {"name": link.name, "kind": link.kind, "a": _anchor_to_dict(link.a), "b": _anchor_to_dict(link.b)}
    for key in ("length", "stiffness", "break_force"):
        if getattr(link, key) is not None:
            d[key] = float(getattr(link, key))
    if link.damping:
        d["damping"] = float(link.damping)
    if link.collide:
        d["collide"] = True
    if link.engaged_times is not None:
        d["engaged_times"] = _floats(link.engaged_times)
        d["engaged"] = [bool(v) for v in np.asarray(link.engaged).ravel()]
    return d


def _anchor_to_dict(anchor):
    if anchor.body is not None:
        return {
            "body": anchor.body,
            "triangle": int(anchor.triangle),
            "barycentric": _floats(anchor.barycentric),
        }
    if anchor.times is None:
        return {"position": _floats(anchor.position)}
    return {"times": _floats(anchor.times), "positions": _floats(anchor.positions)}


def _params_to_dict(p):
    return {
        "dt": float(p.dt),
        "dhat": float(p.dhat),
        "kappa": None if p.kappa is None else float(p.kappa),
        "formulation": p.formulation,
        "eps_v": float(p.eps_v),
        "friction_mollifier": p.friction_mollifier,
        "newton_tol": float(p.newton_tol),
        "force_tol": float(p.force_tol),
        "max_newton_iters": int(p.max_newton_iters),
        "gravity": _floats(p.gravity),
        "strict": bool(p.strict),
        "linear_solver": p.linear_solver,
    }


def dumps_scene(scene_or_dict) -> str:
    """JSON text of a scene: objects indented, numeric arrays one row per line."""
    data = scene_or_dict if isinstance(scene_or_dict, dict) else scene_to_dict(scene_or_dict)
    return _dump(data, 0) + "\n"


def _has_dict(value):
    if isinstance(value, dict):
        return True
    return isinstance(value, list) and any(_has_dict(v) for v in value)


def _dump(value, level):
    pad, inner = "  " * level, "  " * (level + 1)
    if isinstance(value, dict):
        if not value:
            return "{}"
        items = [f"{inner}{json.dumps(k)}: {_dump(v, level + 1)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(value, list) and value:
        flat = json.dumps(value, allow_nan=False)
        if not _has_dict(value) and (len(flat) <= 80 or not isinstance(value[0], list)):
            return flat
        rows = [
            inner + _dump(v, level + 1) if _has_dict(v) else inner + json.dumps(v, allow_nan=False)
            for v in value
        ]
        return "[\n" + ",\n".join(rows) + "\n" + pad + "]"
    return json.dumps(value, allow_nan=False)


def save_scene(scene: Scene, path) -> None:
    """Write a scene to a JSON file (see :func:`dumps_scene`)."""
    text = dumps_scene(scene)
    with open(os.fspath(path), "w", encoding="utf-8") as fh:
        fh.write(text)
