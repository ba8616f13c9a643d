"""Colliders: their edges at the start frame, their motion sampled at every substep, and how
they followed their animation during a bake (lag and overlap reports).

A collider may be a mesh, a curve or a text object: it is read from its evaluated mesh (a curve
without fill gives its polyline as edges, a filled one its outline). Rigid colliders keep their
start-frame evaluated shape and move with their evaluated world
matrix, sampled at every substep with ``frame_set(frame, subframe=...)``. Colliders that may
deform (shape keys, modifiers, armature or lattice parents: :func:`may_deform`) are sampled
from their evaluated mesh at every substep instead, like unselected bodies that are obstacles.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .common import PLANE_AXES, IPCError, compact_indices, format_length, local_coords, matrix_of, transform
from .solver.collider_check import compact_ranges


@dataclass(frozen=True)
class ColliderInput:
    name: str
    local: np.ndarray  # (k, 3) start-frame evaluated vertices (object space)
    edges: np.ndarray  # (l, 2) indices into `local`
    vertex_ids: np.ndarray | None = None  # (k,) indices into the evaluated mesh's vertices


def _collider_edges(mesh) -> np.ndarray:
    edges = np.empty(len(mesh.edges) * 2, dtype=np.int64)
    mesh.edges.foreach_get("vertices", edges)
    loop_edges = np.empty(len(mesh.loops), dtype=np.int64)
    mesh.loops.foreach_get("edge_index", loop_edges)
    faces_per_edge = np.bincount(loop_edges, minlength=len(mesh.edges))
    # Boundary edges (one face) and loose edges (no face); interior edges are hidden inside.
    return edges.reshape(-1, 2)[faces_per_edge <= 1]


def read_collider(obj, depsgraph, plane: str) -> ColliderInput:
    ob_eval = obj.evaluated_get(depsgraph)
    mesh = ob_eval.to_mesh()
    try:
        local = local_coords(mesh).astype(np.float64)
        edges = _collider_edges(mesh)
    finally:
        ob_eval.to_mesh_clear()
    u, v, _ = PLANE_AXES[plane]
    proj = transform(matrix_of(ob_eval.matrix_world), local)[:, [u, v]]
    lengths = np.linalg.norm(proj[edges[:, 0]] - proj[edges[:, 1]], axis=1) if len(edges) else []
    edges = edges[np.asarray(lengths) > 1e-9] if len(edges) else edges
    if len(edges) == 0:
        raise IPCError(
            f"{'Collider' if obj.ipc.role == 'COLLIDER' else 'Unselected deformable body'} "
            f"'{obj.name}' has no boundary or loose edges in the {plane} "
            "plane; give it a face or edges"
        )
    used, compact = compact_indices(edges, len(local))
    return ColliderInput(obj.name, local[used], compact, used)


def may_deform(obj) -> bool:
    """Whether obj's evaluated vertices may move relative to the object (cheap, no evaluation):
    shape keys beyond the basis, a modifier shown in the viewport (armature, hook, geometry
    nodes, ...), an armature or lattice parent (which deforms through a virtual modifier), or
    for a curve or text object, animated or driven curve data.
    Such a collider is sampled from its evaluated mesh at every substep; any other collider
    moves rigidly with its sampled world matrix."""
    if any(m.show_viewport for m in obj.modifiers):
        return True
    if obj.parent is not None and obj.parent_type in {"ARMATURE", "LATTICE"}:
        return True
    anim = obj.data.animation_data if obj.type != "MESH" else None
    if anim is not None and (anim.action is not None or len(anim.drivers)):
        return True  # a curve's or text's keyed or driven settings (bevel, extrude, points ...)
    key = obj.data.shape_keys
    return key is not None and len(key.key_blocks) > 1


def sample_matrices(context, objects, frame_start: int, n_steps: int, substeps: int, deforming=()):
    """(n_steps+1, len(objects), 4, 4) evaluated world matrices, one sample per substep, and
    for each object index in `deforming` its evaluated vertices in world space
    (n_steps+1, n, 3) (shape keys and modifiers included: a deformable body that is an obstacle
    moves with its own bake, a deforming collider with its keys, armature or modifiers).

    Keyframes, parents, constraints and drivers all count because the depsgraph is evaluated.
    The caller restores the current frame.
    """
    scene = context.scene
    out = np.empty((n_steps + 1, len(objects), 4, 4))
    shapes = {j: [] for j in deforming}
    for i in range(n_steps + 1):
        frame, sub = divmod(i, substeps)
        scene.frame_set(frame_start + frame, subframe=sub / substeps)
        depsgraph = context.evaluated_depsgraph_get()
        for j, obj in enumerate(objects):
            ob_eval = obj.evaluated_get(depsgraph)
            out[i, j] = matrix_of(ob_eval.matrix_world)
            if j in shapes:
                mesh = ob_eval.to_mesh()
                try:
                    shapes[j].append(transform(out[i, j], local_coords(mesh).astype(np.float64)))
                finally:
                    ob_eval.to_mesh_clear()
                if len(shapes[j][-1]) != len(shapes[j][0]):
                    raise IPCError(f"'{obj.name}': its vertex count changes during the frame range")
    return out, {j: np.stack(v) for j, v in shapes.items()}


@dataclass(frozen=True)
class ColliderReport:
    """How one collider followed its animation during a bake (frames are scene frames)."""

    name: str
    lag: float  # largest distance of a vertex behind its animation [m]
    distance: float  # smallest signed distance to the bodies as animated [m]; inf: never near
    lag_frames: str  # frames with a lag above the contact gap, e.g. "37-61"
    overlap_frames: str  # frames in which the bodies overlap it as animated

    @property
    def overlap(self) -> float:
        return max(0.0, -self.distance)


def collider_reports(names, frame_start, lags, distances, dhat):
    """Per collider, from per-frame arrays (F, C) of the frames frame_start + 1 ...; a lag
    counts from the contact gap dhat on: a collider held off a body by the barrier stays up
    to dhat short of its key, which is the gap the user accepted as invisible."""
    frames = frame_start + 1 + np.arange(len(lags))
    out = []
    for j, name in enumerate(names):
        lag, dist = lags[:, j], distances[:, j]
        out.append(
            ColliderReport(
                name,
                float(lag.max(initial=0.0)),
                float(dist.min(initial=math.inf)),
                compact_ranges(frames[lag > dhat]),
                compact_ranges(frames[dist < 0.0]),
            )
        )
    return out


def lag_warning(reports, dhat) -> str:
    """The bake's warning about colliders that could not follow their animation ('' if none)."""
    parts = []
    for r in reports:
        if not (r.overlap_frames or r.lag_frames):
            continue
        text = f"collider '{r.name}' could not follow its animation: "
        if r.overlap_frames:
            text += (
                f"the baked bodies overlap it as animated by up to {format_length(r.overlap)} "
                f"at frames {r.overlap_frames}; "
            )
        text += f"it lags up to {format_length(r.lag)} behind its keys"
        if r.lag_frames:
            text += f" (more than the Contact Gap {format_length(dhat)} at frames {r.lag_frames})"
        parts.append(text)
    if not parts:
        return ""
    return (
        "IPC: "
        + "; ".join(parts)
        + ". It is keyed further than the bodies can be compressed: key it to stop higher, "
        "or make the bodies softer"
    )
