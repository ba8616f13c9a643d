"""Wedges: bake N variants of one or more settings (the cartesian product of their values) from
one saved .blend to N .blend files named after the values, and draw a contact sheet of the last
frame of each variant.

Each variant starts from the saved file (opened again), so nothing of one variant leaks into
the next, and the source file is never written. Command line (scripts/wedge.py)::

    blender -b scene.blend --python scripts/wedge.py -- --set mu=0.1,0.5,0.9 --set substeps=2,4 --out dir/

A setting is a scene setting of the add-on (``substeps``, ``dhat_relative``, ``kappa``,
``eps_v``, ``ground_friction``, ...: Scene Settings in the panel) or a per-object one
(``friction``, ``youngs_modulus``, ``poisson_ratio``, ``density``), which is set on every
deformable body (and ``friction`` on every collider too). Short names: ``mu`` (friction),
``E`` (Young's modulus), ``nu`` (Poisson ratio).
"""

from __future__ import annotations

import argparse
import itertools
import re
from dataclasses import dataclass
from pathlib import Path

import bpy
import numpy as np

from . import contact_sheet
from .common import PLANE_AXES, IPCError, frame_range

ALIASES = {"mu": "friction", "E": "youngs_modulus", "nu": "poisson_ratio"}
# per-object settings and the roles they are set on
OBJECT_SETTINGS = {
    "friction": ("BODY", "COLLIDER"),
    "youngs_modulus": ("BODY",),
    "poisson_ratio": ("BODY",),
    "density": ("BODY",),
}


@dataclass(frozen=True)
class Setting:
    name: str  # the property's identifier
    values: tuple  # the values as the artist wrote them (text)


@dataclass(frozen=True)
class WedgeResult:
    files: tuple  # the .blend of each variant, in order
    sheet: Path  # the contact sheet PNG


def parse_setting(text: str) -> Setting:
    """'mu=0.1,0.5,0.9' -> Setting('friction', ('0.1', '0.5', '0.9'))."""
    name, sep, values = text.partition("=")
    vals = tuple(v.strip() for v in values.split(",") if v.strip())
    if not sep or not name.strip() or not vals:
        raise IPCError(f"'{text}': write a setting as name=value1,value2,...")
    name = ALIASES.get(name.strip(), name.strip())
    _check_name(name)
    return Setting(name, vals)


def _check_name(name: str):
    if name in OBJECT_SETTINGS or _scene_property(name) is not None:
        return
    raise IPCError(
        f"Unknown setting '{name}': use a scene setting of the add-on (e.g. substeps, kappa) or "
        f"one of {', '.join(OBJECT_SETTINGS)} (short names: {', '.join(ALIASES)})"
    )


def _scene_property(name: str):
    group = bpy.types.Scene.bl_rna.properties["ipc"].fixed_type
    prop = group.properties.get(name)
    if prop is None or name.startswith("stat_") or prop.type not in {"INT", "FLOAT", "BOOLEAN", "ENUM"}:
        return None
    if getattr(prop, "is_array", False) or getattr(prop, "array_length", 0):
        return None
    return prop


def _convert(prop, text: str):
    if prop.type == "INT":
        return int(text)
    if prop.type == "FLOAT":
        return float(text)
    if prop.type == "BOOLEAN":
        return text.lower() in {"1", "true", "yes", "on"}
    return text  # ENUM identifier


def apply(scene, name: str, text: str):
    """Set the setting `name` to the value written `text` (IPCError if it does not fit)."""
    try:
        if name in OBJECT_SETTINGS:
            roles = OBJECT_SETTINGS[name]
            objs = [o for o in scene.objects if o.ipc.role in roles]
            if not objs:
                raise IPCError(f"No object with the role {' or '.join(roles)} to set '{name}' on")
            for obj in objs:
                setattr(obj.ipc, name, _convert(obj.ipc.bl_rna.properties[name], text))
        else:
            setattr(scene.ipc, name, _convert(_scene_property(name), text))
    except (ValueError, TypeError) as err:
        raise IPCError(f"'{text}' is no value for the setting '{name}': {err}") from err


def value_of(scene, name: str):
    """The setting's current value (an object setting: that of the first deformable body)."""
    if name in OBJECT_SETTINGS:
        bodies = sorted((o for o in scene.objects if o.ipc.role == "BODY"), key=lambda o: o.name)
        return getattr(bodies[0].ipc, name)
    return getattr(scene.ipc, name)


def variants(settings) -> list[tuple]:
    """The cartesian product: one tuple of (name, value text) per variant."""
    return list(itertools.product(*[[(s.name, v) for v in s.values] for s in settings]))


def variant_name(stem: str, variant) -> str:
    """'scene' + (('friction', '0.1'), ('substeps', '2')) -> 'scene_friction-0.1_substeps-2'."""
    parts = [f"{name}-{re.sub(r'[^A-Za-z0-9.+-]', '_', text)}" for name, text in variant]
    return "_".join([stem, *parts])


def run(source: str, settings, out_dir: str, target: str = "SCENE") -> WedgeResult:
    """Bake every variant of `settings` of the saved file `source` into `out_dir` (created)
    and draw the contact sheet ``<out_dir>/<stem>_wedge.png``. Leaves the last variant open;
    the source file is not written. Raises IPCError on the first variant that fails."""
    source = str(Path(bpy.path.abspath(source)).resolve())
    out = Path(out_dir).resolve()
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise _write_failure(out, err) from err
    stem = Path(source).stem
    files, tiles = [], []
    for variant in variants(settings):
        bpy.ops.wm.open_mainfile(filepath=source)
        scene = bpy.context.scene
        for name, text in variant:
            apply(scene, name, text)
        label = " ".join(f"{name}={text}" for name, text in variant)
        try:
            result = bpy.ops.ipc.bake(target=target)
        except RuntimeError as err:  # the bake's error report
            raise IPCError(f"Wedge variant {label}: {err}") from err
        if "FINISHED" not in result:
            raise IPCError(f"Wedge variant {label}: the bake failed")
        path = out / f"{variant_name(stem, variant)}.blend"
        try:  # Blender reports a failed save (read-only folder, full disk) as RuntimeError
            bpy.ops.wm.save_as_mainfile(filepath=str(path), copy=True)
        except RuntimeError as err:
            raise IPCError(f"Wedge variant {label}: could not write '{path}': {err}") from err
        files.append(path)
        tiles.append(last_frame_tile(bpy.context, label))
    sheet = out / f"{stem}_wedge.png"
    try:
        contact_sheet.write_png(sheet, contact_sheet.sheet(tiles))
    except OSError as err:
        raise _write_failure(sheet, err) from err
    return WedgeResult(tuple(files), sheet)


def _write_failure(path: Path, err: OSError) -> IPCError:
    return IPCError(f"Wedge: could not write '{path}': {err.strerror or err}; the source file is unchanged")


def last_frame_tile(context, label: str) -> contact_sheet.Tile:
    """The bodies (filled) and colliders (edges) at the last frame of the bake, in the plane."""
    scene = context.scene
    u, v, _ = PLANE_AXES[scene.ipc.plane]
    scene.frame_set(frame_range(scene)[1])
    depsgraph = context.evaluated_depsgraph_get()
    bodies, colliders = [], []
    for obj in sorted(scene.objects, key=lambda o: o.name):
        role = obj.ipc.role
        if role not in {"BODY", "COLLIDER"} or obj.type not in {"MESH", "CURVE", "FONT"}:
            continue
        ev = obj.evaluated_get(depsgraph)
        mesh = ev.to_mesh()
        try:
            co = np.empty(len(mesh.vertices) * 3)
            mesh.vertices.foreach_get("co", co)
            m = np.array(ev.matrix_world)
            world = co.reshape(-1, 3) @ m[:3, :3].T + m[:3, 3]
            pts = world[:, [u, v]]
            if role == "BODY":
                mesh.calc_loop_triangles()
                tris = np.empty(len(mesh.loop_triangles) * 3, np.int64)
                mesh.loop_triangles.foreach_get("vertices", tris)
                bodies.append(pts[tris.reshape(-1, 3)])
            else:
                edges = np.empty(len(mesh.edges) * 2, np.int64)
                mesh.edges.foreach_get("vertices", edges)
                colliders.append(pts[edges.reshape(-1, 2)])
        finally:
            ev.to_mesh_clear()
    if scene.ipc.use_ground:  # the ground line, wide enough for any tile
        h = scene.ipc.ground_height
        colliders.append(np.array([[[-1e3, h], [1e3, h]]]))
    if not bodies:
        raise IPCError("Nothing to draw: no deformable body in the scene")
    return contact_sheet.Tile(tuple(bodies), tuple(colliders), label)


def main(argv) -> WedgeResult:
    """The command line of scripts/wedge.py (arguments after ``--``)."""
    parser = argparse.ArgumentParser(prog="wedge.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", action="append", required=True, metavar="NAME=V1,V2,...")
    parser.add_argument("--out", required=True, help="folder for the variants' .blend files")
    parser.add_argument("--blend", help="the scene (default: the open .blend)")
    parser.add_argument("--target", default="SCENE", choices=("SCENE", "SELECTED"))
    args = parser.parse_args(argv)
    source = args.blend or bpy.data.filepath
    if not source:
        raise IPCError("No scene: open a saved .blend (blender -b scene.blend ...) or pass --blend")
    settings = [parse_setting(text) for text in args.set]
    result = run(source, settings, args.out, args.target)
    for path in result.files:
        print(f"wedge: {path}")
    print(f"wedge: contact sheet {result.sheet}")
    return result
