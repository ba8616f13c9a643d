"""Bake from Here: bake a baked group of bodies again from frame F to the end of the frame
range, keeping the frames before F.

The bake stores the solver state every K frames (``resume.keep_state``; the scene setting
"Store State Every"). Baking from F restarts the solver from the stored state at the last
stored frame S before F (or the bake's first frame), computes frames S+1 .. F-1 again (the same
bits as the stored keys when nothing changed; they are checked, and the stored keys kept) and
then F .. end, which replace the keys from F on.

What may have changed since the bake:

- the animation of a collider, an obstacle or a pinned body (keys, constraints, drivers,
  shape keys, modifiers) from frame F on: that is the point, the frames from F follow it;
- an animation change that reaches a frame before F (the per-frame motion digests stored
  with the bake, ``resume.motion_digests``, tell which frame): refused, naming the object and
  the first frame that changed (bake from that frame, or earlier);
- anything that holds for all frames (settings, materials, meshes, objects added or
  removed, the start frame): refused, naming what changed, as Continue Bake does.

With nothing changed the result is bit for bit the bake in one go (shape keys, statistics
and stored solver states). As every bake, nothing in the scene changes until the job
finishes; a failure while storing leaves the scene and the earlier bake as they were.
"""

from __future__ import annotations

import numpy as np

from .bake_job import BakeJob
from .common import KEY_PREFIX, IPCError, fcurves_of, frame_range
from .reading import check_bakeable, obstacles
from .resume import Resume, _group, decode, first_changed_frame, motion_digests, stored_entry
from .shape_keys import append_bake
from .signature import changed_inputs, signature_parts

# Inputs that may change along the frames: checked per frame with the motion digests.
_MOTION_PARTS = ("the animation of ", "the shape keys or modifiers of ", "the bake of ")


class RebakeJob(BakeJob):
    """A BakeJob that restarts from a stored state before ``from_frame`` and replaces the keys
    from that frame on (see the module doc)."""

    def __init__(self, context, resume: Resume, from_frame: int, motion: dict):
        super().__init__(context, resume=resume)
        self.from_frame = from_frame
        self.differs: list[str] = []  # bodies whose recomputed frames before F differ
        _check_motion(self, motion)

    def _write_keys(self, obj, chunks):
        """The first chunk starts with frame S (the state restarted from): frames S+1 .. F-1
        are compared with the kept keys, the keys from F on replaced."""
        frame, restart, truncated = self.frame_start + self.base, self.frame_start + self.base, False
        for local in chunks:
            frames = frame + np.arange(len(local))
            again = (frames > restart) & (frames < self.from_frame)
            kept = _key_coords(obj, self.frame_start, frames[again] - self.frame_start)
            if not np.array_equal(local[again], kept) and obj.name not in self.differs:
                self.differs.append(obj.name)
            new = frames >= self.from_frame
            if new.any():
                if not truncated:
                    truncate_bake(obj, self.from_frame)
                    truncated = True
                append_bake(obj, local[new], int(frames[new][0]))
            frame += len(local)

    @property
    def summary(self) -> str:
        return (
            f"IPC: baked frames {self.from_frame}-{self.baked_end} again from the solver state at "
            f"frame {self.frame_start + self.base} in {self.elapsed():.1f} s"
        )

    @property
    def differs_warning(self) -> str:
        """The recomputed frames before F differ from the kept ones: the state was stored by
        another solver build (an add-on update) whose arithmetic differs."""
        return (
            f"IPC: frames {self.frame_start + self.base + 1}-{self.from_frame - 1} of "
            + ", ".join(f"'{n}'" for n in self.differs)
            + " came out differently when computed again (stored by another version of the "
            "add-on?); the baked frames before the frame were kept, bake again from the start "
            "for a seamless result"
        )


def prepare(context, target: str, from_frame: int) -> RebakeJob:
    """Everything Bake from Here needs, checked, as a job ready to run (raises IPCError naming
    what prevents it). Changes nothing."""
    scene = context.scene
    group, h = _group(context, target, verb="bake again")
    names = ", ".join(f"'{o.name}'" for o in group)
    entry = stored_entry(scene, group, h, "bake again")
    start, baked_end = int(entry["frame_start"]), int(entry["frame_end"])
    end = frame_range(scene)[1]
    if not start < from_frame <= baked_end:
        raise IPCError(
            f"Bake from Here: frame {from_frame} is not in the bake of {names} after its first frame "
            f"({start + 1}-{baked_end}); "
            + ("use Bake" if from_frame <= start else "use Continue Bake to extend it")
        )
    if end < from_frame:
        raise IPCError(f"Bake from Here: frame {from_frame} is after the end of the frame range ({end})")
    states = {int(f): st for f, st in entry.get("states", {}).items()}
    if "motion" not in entry or start not in states:
        raise IPCError(
            f"The bake of {names} stored no solver states to bake again from (baked by an older "
            "version of the add-on); bake it again"
        )
    colliders = obstacles(list(context.view_layer.objects), group)
    check_bakeable(context, group, colliders)
    changed = [
        c
        for c in changed_inputs(entry["parts"], signature_parts(scene, group, colliders))
        if not c.startswith(_MOTION_PARTS)
    ]
    if changed:
        raise IPCError(
            f"Cannot bake {names} again from frame {from_frame}: its inputs changed since it was "
            "baked: " + "; ".join(changed) + ". Undo the change, or bake again"
        )
    s = max(f for f in states if f < from_frame)
    state = states[s]
    stats = entry["stats"]
    n = s - start
    restored = {
        "wall_time": state["wall_time"],
        "newton_iters": state["newton_iters"],
        "min_distance": state["min_distance"],
        "collider_lag": stats["collider_lag"][:n],
        "collider_distance": stats["collider_distance"][:n],
    }
    kept = {f: st for f, st in states.items() if f <= s}
    resume = Resume(group, colliders, start, s, end, decode(state["solver"], names), restored, h, kept)
    return RebakeJob(context, resume, from_frame, entry["motion"])


def _check_motion(job: RebakeJob, old: dict):
    """Refuse when an animation changed in a frame before from_frame (the kept frames)."""
    new = motion_digests(job, job.n_frames)
    for name in [o.name for o in job.body_objs + job.collider_objs]:
        if name not in old:
            continue  # a new object is named by the signature check
        frame = first_changed_frame(old[name], new[name], job.frame_start, job.from_frame)
        if frame is not None:
            raise IPCError(
                f"Cannot bake again from frame {job.from_frame}: the animation of '{name}' changed "
                f"at frame {frame}, before it (the frames kept would not match it). Bake from frame "
                f"{frame} or earlier"
            )


def _key_coords(obj, frame_start, indices) -> np.ndarray:
    """The float32 coordinates (len(indices), n, 3) of the bake's keys by index."""
    blocks = obj.data.shape_keys.key_blocks
    out = np.empty((len(indices), len(obj.data.vertices), 3), np.float32)
    for i, k in enumerate(indices):
        assert blocks[k].name == f"{KEY_PREFIX}{frame_start + k:05d}", blocks[k].name
        blocks[k].data.foreach_get("co", out[i].ravel())
    return out


def truncate_bake(obj, frame: int):
    """Remove the bake's keys (and their eval_time keyframes) of `frame` and later."""
    key = obj.data.shape_keys
    gone = [kb for kb in key.key_blocks[1:] if int(kb.name[len(KEY_PREFIX) :]) >= frame]
    for kb in reversed(gone):
        obj.shape_key_remove(kb)
    for fc in fcurves_of(key):
        if fc.data_path == "eval_time":
            for point in [p for p in fc.keyframe_points if p.co[0] >= frame - 0.5][::-1]:
                fc.keyframe_points.remove(point)
    key.eval_time = key.key_blocks[-1].frame
