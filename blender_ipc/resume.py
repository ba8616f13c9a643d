"""Continue Bake: a finished bake stores the solver's checkpoint after its last frame in the
.blend; continuing restores it and computes the later frames, bit for bit as a bake to the later
end frame done in one go by the same add-on version.  After an add-on update the bake continues
as long as the solver's state format (``solver.io.checkpoint.STATE_FORMAT``) is the same; its later
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
  what a bake in one go would;
- ``states``: the solver states every K frames (the scene setting "Store State Every"; from
  the first frame on), by frame: each a checkpoint as above with the statistics up to it, so
  Bake from Here (``rebake``) restarts from the state at or before a frame;
- ``motion``: per object of the bake, one 8-byte digest per frame of what the solver and the
  shape keys took from the animation in that frame (collider and pin positions sampled per
  substep, the body's matrix), so Bake from Here can tell in which frame an animation changed.

Everything is computed before anything is written (:func:`entry` then :func:`put`), so a
failure while storing leaves the scene as it was.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
from dataclasses import dataclass, field

import numpy as np

from .common import KEY_PREFIX, IPCError, frame_range, is_our_bake
from .pc2 import cache_modifier
from .reading import check_bakeable, obstacles
from .signature import changed_inputs, input_signature, signature_parts
from .solver import Checkpoint, SolverInputError
from .solver.io.checkpoint import OtherStateFormat

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
    states: dict = field(default_factory=dict)  # frame -> stored state (see keep_state)


def keep_state(job):
    """After each computed frame (and at the start): every ``state_every`` frames from the
    bake's first frame, the solver state and the statistics up to it, as text (compact: the
    checkpoint's compressed arrays)."""
    k = job.frames_done - 1
    frame = job.frame_start + k
    every = max(1, int(job.scene.ipc.state_every))
    if k % every or frame in job.states:
        return
    prior = job.resume.stats["wall_time"] if job.resume is not None else 0.0
    job.states[frame] = {
        "solver": job.sim.checkpoint().to_text(),
        "newton_iters": job.stats.newton_iters,
        "min_distance": _finite(job.stats.min_distance),
        "wall_time": prior + job.elapsed(),
    }


DIGEST_BYTES = 8


def motion_digests(job, n_frames: int) -> dict:
    """Per object of the bake (bodies, then colliders and obstacles), base64 of one digest per
    frame (frame_start + i) of what that frame took from its animation: the samples of the
    substeps that end in it and the next one (the solver's time may end a hair after a
    frame's last sample), for colliders their sampled positions, for bodies their pins'
    targets and the world matrix that turns the frame into shape keys; the first frame also
    its start position and velocity (animated hand-off)."""
    sub, scene = job.substeps, job.solver_scene
    out = {}
    for j, (obj, body) in enumerate(zip(job.body_objs, scene.bodies, strict=True)):
        velocity = np.asarray(body.velocity if body.velocity is not None else 0.0)
        series = [np.asarray(p.positions) for p in body.pins if p.positions is not None]
        out[obj.name] = _digests(
            series, sub, n_frames, [np.asarray(body.vertices), velocity], job.frame_mats[:, j]
        )
    for obj, collider in zip(job.collider_objs, scene.colliders, strict=True):
        out[obj.name] = _digests([np.asarray(collider.positions)], sub, n_frames, [], None)
    return out


def _digests(series, sub, n_frames, start, frame_mats) -> str:
    digests = bytearray()
    for f in range(n_frames):
        h = hashlib.blake2b(digest_size=DIGEST_BYTES)
        lo, hi = max(0, (f - 1) * sub + 1), f * sub + 2
        for a in series:
            h.update(np.ascontiguousarray(a[lo:hi], np.float64).tobytes())
        if frame_mats is not None:
            h.update(np.ascontiguousarray(frame_mats[f], np.float64).tobytes())
        if f == 0:
            for a in start:
                h.update(np.ascontiguousarray(a, np.float64).tobytes())
        digests += h.digest()
    return base64.b64encode(bytes(digests)).decode("ascii")


def first_changed_frame(old: str, new: str, frame_start: int, before: int):
    """The first frame before `before` whose motion digest differs between two
    :func:`motion_digests` texts of one object, or None."""
    n = before - frame_start
    a = np.frombuffer(base64.b64decode(old), np.uint8).reshape(-1, DIGEST_BYTES)[:n]
    b = np.frombuffer(base64.b64decode(new), np.uint8).reshape(-1, DIGEST_BYTES)[:n]
    if len(a) < n or len(b) < n:
        return frame_start + min(len(a), len(b))
    differ = np.flatnonzero((a != b).any(axis=1))
    return frame_start + int(differ[0]) if len(differ) else None


def entry(job) -> str:
    """The text stored for a finished (or stopped) bake; changes nothing."""
    scene = job.scene
    stats = job.stats
    baked_end = job.frame_start + job.frames_done - 1
    text = {
        "solver": job.sim.checkpoint().to_text(),
        "parts": signature_parts(scene, job.body_objs, job.collider_objs),
        "bodies": [o.name for o in job.body_objs],
        "frame_start": job.frame_start,
        "frame_end": baked_end,
        "every": max(1, int(scene.ipc.state_every)),
        "states": {str(f): state for f, state in sorted(job.states.items()) if f <= baked_end},
        "motion": motion_digests(job, job.frames_done),
        "stats": {
            "wall_time": stats.wall_time,
            "newton_iters": stats.newton_iters,
            "min_distance": _finite(stats.min_distance),
            "collider_lag": [[float(v) for v in row] for row in stats.collider_lag],
            "collider_distance": [[_finite(float(v)) for v in row] for row in stats.collider_distance],
        },
    }
    return json.dumps(text)


def put(job, text: str):
    """Keep a bake's :func:`entry` under its signature (after its keys were written: the
    bodies carry the signature); drop the entries no object refers to; the panel's figures
    of the stored states."""
    scene = job.scene
    stored = dict(scene.get(PROPERTY, {}))
    stored[job.signature] = text
    in_use = {o.ipc.bake_hash for o in scene.objects if o.type == "MESH" and o.ipc.is_baked}
    scene[PROPERTY] = {h: t for h, t in stored.items() if h in in_use}
    # the figures from the job's states, not by parsing the text again (a copy of every state)
    states = [st for f, st in job.states.items() if f <= job.baked_end]
    s = scene.ipc
    s.stat_states = len(states)
    s.stat_state_bytes = sum(len(st["solver"]) for st in states) // max(1, len(states))


def store(job):
    """After a finished bake: keep the solver's state after its last frame (and the statistics)
    for Continue Bake, under the bake's signature; drop checkpoints no object refers to."""
    put(job, entry(job))


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

    def back(v):
        return math.inf if v is None else v

    return {
        "wall_time": float(stats["wall_time"]),
        "newton_iters": int(stats["newton_iters"]),
        "min_distance": back(stats["min_distance"]),
        "collider_lag": [np.array(row, float) for row in stats["collider_lag"]],
        "collider_distance": [np.array([back(v) for v in row], float) for row in stats["collider_distance"]],
    }


def _group(context, target, verb="continue"):
    """The bodies of the one bake the selection (or the scene) holds, sorted by name."""
    layer = list(context.view_layer.objects)
    pool = [o for o in layer if o.select_get()] if target == "SELECTED" else layer
    baked = [o for o in pool if o.type == "MESH" and o.ipc.role == "BODY" and o.ipc.is_baked]
    if not baked:
        where = "selected" if target == "SELECTED" else "in the scene"
        raise IPCError(f"Nothing to {verb}: no deformable body {where} has an IPC bake")
    hashes = {o.ipc.bake_hash for o in baked}
    if len(hashes) > 1:
        names = ", ".join(f"'{o.name}'" for o in sorted(baked, key=lambda o: o.name))
        raise IPCError(f"{names} were baked separately; select the bodies of one bake to {verb} it")
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
    entry = stored_entry(scene, group, h, "continue")
    start, baked_end = int(entry["frame_start"]), int(entry["frame_end"])
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
    checkpoint = decode(entry["solver"], names)
    states = {int(f): st for f, st in entry.get("states", {}).items()}
    return Resume(group, colliders, start, baked_end, end, checkpoint, entry["stats"], h, states)


def stored_entry(scene, group, h, verb: str) -> dict:
    """The stored entry of the bake of `group` (signature `h`), checked against the bodies and
    their shape keys (else an IPCError saying why it cannot be used to `verb` the bake)."""
    names = ", ".join(f"'{o.name}'" for o in group)
    text = scene.get(PROPERTY, {}).get(h)
    if text is None:
        raise IPCError(
            f"The bake of {names} has no stored solver state to {verb} from (baked by an older "
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
        raise IPCError(f"Cannot {verb} the bake of {names}: {what}; bake again")
    stored_as_pc2 = [o.name for o in group if cache_modifier(o) is not None]
    if stored_as_pc2:
        raise IPCError(
            f"The bake of '{stored_as_pc2[0]}' is stored as a PC2 cache, and Continue Bake and Bake "
            "from Here extend shape keys: move it back with Bake Files > Store Bake as Shape Keys "
            "first (and store it as PC2 again afterwards)"
        )
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
                f"Cannot {verb} the bake of {names}: the shape keys of '{obj.name}' are not "
                f"the bake of frames {start}-{baked_end} any more; bake again"
            )
    return entry


def decode(text: str, names: str) -> Checkpoint:
    """A stored checkpoint, or an IPCError for another state format or damaged text."""
    try:
        return Checkpoint.from_text(text)
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
