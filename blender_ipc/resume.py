"""Continue Bake: a finished bake stores the solver's checkpoint after its last frame in the
.blend; continuing restores it and computes the later frames, bit for bit as a bake to the later
end frame done in one go by the same add-on version.  After an add-on update the bake continues
as long as the solver's state format (``solver.checkpoint.STATE_FORMAT``) is the same; its later
frames are those the new version computes from that state.  A checkpoint of another state format
is refused: bake again from the start.

The checkpoints live in the scene's ID property ``_ipc_checkpoints`` (hidden from the Custom
Properties panel by its leading underscore; saved with the .blend, part of undo), a dict from a
bake's input signature (the ``bake_hash`` its bodies carry) to JSON text with:

- ``solver``: the :class:`solver.Checkpoint` as base64 text (positions, velocities, time,
  stiffness, contact stencils, the linear solver's orderings, its state format and the solver
  build that took it; every float exact);
- ``parts``: the inputs' :func:`signature.signature_parts`, to name what changed;
- ``bodies``, ``frame_start``, ``frame_end``: which bodies, which frames;
- ``stats``: the statistics so far (Newton iterations, wall time, smallest distance, and per
  frame and collider the lag and the distance as animated), so the continued bake reports
  what a bake in one go would.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

from .common import KEY_PREFIX, IPCError, frame_range, is_our_bake
from .reading import check_bakeable, obstacles
from .signature import changed_inputs, input_signature, signature_parts
from .solver import Checkpoint, SolverInputError
from .solver.checkpoint import OtherStateFormat

PROPERTY = "_ipc_checkpoints"


@dataclass
class Resume:
    """What a continued bake starts from (see :func:`prepare`)."""

    bodies: list
    colliders: list
    frame_start: int  # the bake's first frame
    baked_end: int  # its last frame so far
    frame_end: int  # the frame to continue to
    checkpoint: Checkpoint
    stats: dict
    signature: str


def store(job):
    """After a finished bake: keep the solver's state after its last frame (and the statistics)
    for Continue Bake, under the bake's signature; drop checkpoints no object refers to."""
    scene = job.scene
    stats = job.stats
    entry = {
        "solver": job.sim.checkpoint().to_text(),
        "parts": signature_parts(scene, job.body_objs, job.collider_objs),
        "bodies": [o.name for o in job.body_objs],
        "frame_start": job.frame_start,
        "frame_end": job.frame_start + job.frames_done - 1,
        "stats": {
            "wall_time": stats.wall_time,
            "newton_iters": stats.newton_iters,
            "min_distance": _finite(stats.min_distance),
            "collider_lag": [[float(v) for v in row] for row in stats.collider_lag],
            "collider_distance": [[_finite(float(v)) for v in row] for row in stats.collider_distance],
        },
    }
    stored = dict(scene.get(PROPERTY, {}))
    stored[job.signature] = json.dumps(entry)
    in_use = {o.ipc.bake_hash for o in scene.objects if o.type == "MESH" and o.ipc.is_baked}
    scene[PROPERTY] = {h: text for h, text in stored.items() if h in in_use}


def discard_unused(scene):
    """Drop the checkpoints of bakes no object carries any more (after Delete Bake)."""
    stored = scene.get(PROPERTY)
    if stored is None:
        return
    in_use = {o.ipc.bake_hash for o in scene.objects if o.type == "MESH" and o.ipc.is_baked}
    keep = {h: stored[h] for h in stored if h in in_use}
    if len(keep) != len(stored):
        scene[PROPERTY] = keep


def _finite(v: float):
    return v if math.isfinite(v) else None  # JSON has no inf


def restored_stats(stats: dict):
    """The stored statistics as BakeStats values (lists of per-frame arrays)."""
    import numpy as np

    def back(v):
        return math.inf if v is None else v

    return {
        "wall_time": float(stats["wall_time"]),
        "newton_iters": int(stats["newton_iters"]),
        "min_distance": back(stats["min_distance"]),
        "collider_lag": [np.array(row, float) for row in stats["collider_lag"]],
        "collider_distance": [np.array([back(v) for v in row], float) for row in stats["collider_distance"]],
    }


def _group(context, target):
    """The bodies of the one bake the selection (or the scene) holds, sorted by name."""
    layer = list(context.view_layer.objects)
    pool = [o for o in layer if o.select_get()] if target == "SELECTED" else layer
    baked = [o for o in pool if o.type == "MESH" and o.ipc.role == "BODY" and o.ipc.is_baked]
    if not baked:
        where = "selected" if target == "SELECTED" else "in the scene"
        raise IPCError(f"Nothing to continue: no deformable body {where} has an IPC bake")
    hashes = {o.ipc.bake_hash for o in baked}
    if len(hashes) > 1:
        names = ", ".join(f"'{o.name}'" for o in sorted(baked, key=lambda o: o.name))
        raise IPCError(f"{names} were baked separately; select the bodies of one bake to continue it")
    h = hashes.pop()
    group = [o for o in layer if o.type == "MESH" and o.ipc.is_baked and o.ipc.bake_hash == h]
    return sorted(group, key=lambda o: o.name), h


def prepare(context, target: str = "SELECTED", frame_end: int = 0) -> Resume:
    """Everything Continue Bake needs, checked: the stored checkpoint of the selected bodies'
    bake, their inputs unchanged since (else an IPCError naming what changed), the bake complete
    (not stopped at a solver failure) and a later end frame (0: the end of the frame range).
    Changes nothing."""
    scene = context.scene
    group, h = _group(context, target)
    names = ", ".join(f"'{o.name}'" for o in group)
    text = scene.get(PROPERTY, {}).get(h)
    if text is None:
        raise IPCError(
            f"The bake of {names} has no stored solver state to continue from (baked by an older "
            "version of the add-on, or its file was changed outside it); bake it again"
        )
    entry = json.loads(text)
    start, baked_end = int(entry["frame_start"]), int(entry["frame_end"])
    partial = [o.name for o in group if o.ipc.bake_partial]
    if partial:
        raise IPCError(
            f"The bake of '{partial[0]}' stopped at a solver failure; continuing would fail there "
            "again. Change the settings and bake again"
        )
    gone = sorted(set(entry["bodies"]) - {o.name for o in group})
    if gone or [o.name for o in group] != entry["bodies"]:
        what = f"'{gone[0]}' is no longer part of it" if gone else "its bodies changed"
        raise IPCError(f"Cannot continue the bake of {names}: {what}; bake again")
    for obj in group:
        keys = obj.data.shape_keys
        n_keys = len(keys.key_blocks) if keys is not None and is_our_bake(obj) else 0
        first = keys.key_blocks[0].name if n_keys else ""
        if (
            (obj.ipc.bake_frame_start, obj.ipc.bake_frame_end) != (start, baked_end)
            or n_keys != baked_end - start + 1
            or first != f"{KEY_PREFIX}{start:05d}"
        ):
            raise IPCError(
                f"Cannot continue the bake of {names}: the shape keys of '{obj.name}' are not "
                f"the bake of frames {start}-{baked_end} any more; bake again"
            )
    colliders = obstacles(list(context.view_layer.objects), group)
    check_bakeable(context, group, colliders)
    parts = signature_parts(scene, group, colliders)
    changed = changed_inputs(entry["parts"], parts)
    if changed or input_signature(scene, group, colliders) != h:
        raise IPCError(
            f"Cannot continue the bake of {names}: its inputs changed since it was baked: "
            + "; ".join(changed or ["(unknown)"])
            + ". Undo the change, or bake again"
        )
    end = int(frame_end) or frame_range(scene)[1]
    if end <= baked_end:
        raise IPCError(
            f"The bake of {names} already reaches frame {baked_end}: set a later end frame "
            f"(now {end}) to continue it"
        )
    try:
        checkpoint = Checkpoint.from_text(entry["solver"])
    except OtherStateFormat as err:
        raise IPCError(
            f"The bake of {names} was made by another version of the add-on, which stored the "
            f"solver's state in format {err.found}; this version reads format {err.expected} "
            "and cannot continue it: bake it again from the start"
        ) from err
    except SolverInputError as err:
        raise IPCError(
            f"The stored solver state of the bake of {names} is damaged ({err}); bake again"
        ) from err
    return Resume(group, colliders, start, baked_end, end, checkpoint, entry["stats"], h)
