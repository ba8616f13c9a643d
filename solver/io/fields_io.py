"""Scene-file entries of force fields ("fields") and animated settings
("animation"), docs/scene_format.md.  Structure only (objects, known keys,
numbers); the rules on the values are validate.check_fields /
check_animation's, which name the field or body."""

from __future__ import annotations

import numpy as np

from ..errors import SolverInputError
from ..scene import Animation, ForceField, MaterialAnimation, Track

_FIELD_REQUIRED = ("name", "kind")
_FIELD_OPTIONAL = (
    "strength",
    "position",
    "direction",
    "shape",
    "falloff",
    "falloff_power",
    "min_distance",
    "max_distance",
    "flow",
    "linear_drag",
    "quadratic_drag",
    "times",
)
_SAMPLED = ("strength", "position", "direction", "flow", "linear_drag", "quadratic_drag", "times")
_MATERIAL_KEYS = ("body", "E", "density", "mu", "stiffness_weights", "stiffness_factors")


def _fail(path, message):
    raise SolverInputError(f"{path}: {message}")


def _keys(data, path, required, optional):
    if not isinstance(data, dict):
        _fail(path, "expected an object")
    for key in data:
        if key not in required and key not in optional:
            _fail(path, f"unknown field {key!r} (allowed: {', '.join(sorted((*required, *optional)))})")
    for key in required:
        if key not in data:
            _fail(path, f"missing required field {key!r}")
    return data


def _numbers(value, path):
    try:
        a = np.asarray(value, float)
    except (TypeError, ValueError):
        _fail(path, "expected a number or a list of numbers")
    if a.dtype == object:
        _fail(path, "expected a number or a list of numbers")
    return a


def parse_fields(raw, path="fields"):
    if not isinstance(raw, list):
        _fail(path, "expected a list")
    out = []
    for i, data in enumerate(raw):
        p = f"{path}[{i}]"
        _keys(data, p, _FIELD_REQUIRED, _FIELD_OPTIONAL)
        values = {k: data[k] for k in _FIELD_OPTIONAL if k in data}
        for k in _SAMPLED:
            if k in values:
                values[k] = _numbers(values[k], f"{p}.{k}")
        out.append(ForceField(data["name"], data["kind"], **values))
    return tuple(out)


def _track(data, path):
    _keys(data, path, ("times", "values"), ())
    return Track(_numbers(data["times"], f"{path}.times"), _numbers(data["values"], f"{path}.values"))


def parse_animation(data, path="animation"):
    _keys(data, path, (), ("gravity", "materials", "plane_mu"))
    gravity = _track(data["gravity"], f"{path}.gravity") if "gravity" in data else None
    mats = []
    for j, m in enumerate(data.get("materials", [])):
        p = f"{path}.materials[{j}]"
        _keys(m, p, ("body",), _MATERIAL_KEYS)
        tracks = {k: _track(m[k], f"{p}.{k}") for k in ("E", "density", "mu") if k in m}
        extra = {}
        if "stiffness_weights" in m:
            extra["stiffness_weights"] = _numbers(m["stiffness_weights"], f"{p}.stiffness_weights")
        if "stiffness_factors" in m:
            extra["stiffness_factors"] = tuple(_numbers(m["stiffness_factors"], f"{p}.stiffness_factors"))
        mats.append(MaterialAnimation(m["body"], **tracks, **extra))
    planes = []
    for j, m in enumerate(data.get("plane_mu", [])):
        p = f"{path}.plane_mu[{j}]"
        _keys(m, p, ("name", "mu"), ())
        planes.append((m["name"], _track(m["mu"], f"{p}.mu")))
    return Animation(gravity, tuple(mats), tuple(planes))


def _plain(v):
    return np.asarray(v, float).tolist()


def fields_to_list(fields):
    out = []
    for f in fields:
        d = {"name": f.name, "kind": f.kind}
        for k in _FIELD_OPTIONAL:
            v = getattr(f, k)
            if v is not None:
                d[k] = v if isinstance(v, str) else _plain(v)
        out.append(d)
    return out


def _track_dict(tr):
    return {"times": _plain(tr.times), "values": _plain(tr.values)}


def animation_to_dict(anim):
    d = {}
    if anim.gravity is not None:
        d["gravity"] = _track_dict(anim.gravity)
    mats = []
    for m in anim.materials:
        md = {"body": m.body}
        for k in ("E", "density", "mu"):
            if getattr(m, k) is not None:
                md[k] = _track_dict(getattr(m, k))
        if m.stiffness_weights is not None:
            md["stiffness_weights"] = _plain(m.stiffness_weights)
        md["stiffness_factors"] = _plain(m.stiffness_factors)
        mats.append(md)
    if mats:
        d["materials"] = mats
    if anim.plane_mu:
        d["plane_mu"] = [{"name": n, "mu": _track_dict(tr)} for n, tr in anim.plane_mu]
    return d
