"""Small pieces shared by the adapter modules: names, plane axes, the user-facing error,
matrix and mesh-array helpers, frame range and time step, units in messages."""

from __future__ import annotations

import numpy as np

KEY_PREFIX = "IPC_Bake_"
# (first in-plane axis, second in-plane axis, out-of-plane axis) in world XYZ.
PLANE_AXES = {"XZ": (0, 2, 1), "XY": (0, 1, 2)}


class IPCError(Exception):
    """A user-facing problem with the scene; the message names the object and the problem."""


def matrix_of(m) -> np.ndarray:
    return np.array([list(row) for row in m], dtype=np.float64)


def transform(mat: np.ndarray, pts: np.ndarray) -> np.ndarray:
    return pts @ mat[:3, :3].T + mat[:3, 3]


def local_coords(mesh) -> np.ndarray:
    co = np.empty(len(mesh.vertices) * 3, dtype=np.float32)
    mesh.vertices.foreach_get("co", co)
    return co.reshape(-1, 3)


def compact_indices(tris: np.ndarray, n: int):
    used = np.unique(tris)
    remap = np.full(n, -1, dtype=np.int64)
    remap[used] = np.arange(len(used))
    return used, remap[tris]


def project(mats: np.ndarray, local: np.ndarray, axes) -> np.ndarray:
    """(T,4,4) matrices x (k,3) points -> (T,k,2) in-plane positions."""
    world = np.einsum("tij,kj->tki", mats[:, :3, :3], local) + mats[:, None, :3, 3]
    return world[:, :, list(axes)]


def fcurves_of(id_data):
    """F-curves of an ID's action in Blender 3.x/4.x (Action.fcurves) and 5.x (channelbags)."""
    anim = getattr(id_data, "animation_data", None)
    action = anim.action if anim else None
    if action is None:
        return []
    if hasattr(action, "fcurves"):
        return list(action.fcurves)
    slot = getattr(anim, "action_slot", None)
    curves = []
    for layer in action.layers:
        for strip in layer.strips:
            bag = strip.channelbag(slot) if slot is not None else None
            if bag is not None:
                curves.extend(bag.fcurves)
    return curves


def sim_dt(scene) -> float:
    fps = scene.render.fps / scene.render.fps_base
    return 1.0 / (fps * scene.ipc.substeps)


def frame_range(scene) -> tuple[int, int]:
    s = scene.ipc
    return (s.frame_start, s.frame_end) if s.use_frame_range else (scene.frame_start, scene.frame_end)


def is_our_bake(obj) -> bool:
    key = obj.data.shape_keys if obj.type == "MESH" else None
    return bool(key) and all(kb.name.startswith(KEY_PREFIX) for kb in key.key_blocks)


def format_length(metres: float, digits: int = 3) -> str:
    """'34 µm', '3.4 mm', '0.12 m': three (or digits) significant digits in a readable unit."""
    a = abs(metres)
    for unit, scale in (("m", 1.0), ("mm", 1e-3), ("µm", 1e-6)):
        if a >= scale:
            return f"{metres / scale:.{digits}g} {unit}"
    return f"{metres / 1e-9:.{digits}g} nm"
