"""The bake job: reads everything up front, steps the solver frame by frame (in time slices for
the modal operator) and writes the shape keys only when it finishes. The computed frames wait
on disk (:mod:`frame_spool`), so a long bake's memory does not grow with its frames. The modal
bake shows the frames as they are computed on scratch copies of the body meshes
(:class:`LivePreview`)."""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass, field

import bpy
import numpy as np

from . import bake_files, blas_threads, frame_diagnostics, frame_motion, links, messages
from .animated import at_start, read_animation, start_gravity
from .bake_files import exports_holding
from .colliders import (
    ColliderReport,
    collider_reports,
    lag_warning,
    may_deform,
    read_collider,
    sample_matrices,
)
from .common import PLANE_AXES, IPCError, frame_range, matrix_of, sim_dt
from .exports import files_of
from .fields import read_fields
from .frame_spool import FrameSpool
from .modifier_stack import detail_hidden
from .pc2 import cache_modifier
from .reading import (
    animated_velocity,
    build_scene,
    check_bakeable,
    gather_objects,
    has_handoff,
    in_blender_words,
    initial_velocity,
    is_obstacle_body,
    material_of,
    read_body,
    separation_report,
)
from .resume import Resume, keep_state, restored_stats
from .resume import entry as checkpoint_entry
from .resume import put as put_checkpoint
from .shape_keys import add_frame_key, append_bake, begin_keys, remove_keys, to_local_frames, write_bake
from .signature import input_signature
from .solver import Simulation, SolverInputError, touching
from .solver.basis import RIGID_STRAIN_LIMIT
from .solver.collider_check import compact_ranges
from .solver.newton import NewtonSettings
from .solver.settings import SolverSettings
from .solver.sleep import SleepSettings
from .solver.validate import check_scene

# Frames turned into shape keys at a time when a bake finishes.
FINISH_CHUNK = 64


@dataclass
class BakeStats:
    frames: int = 0
    wall_time: float = 0.0
    newton_iters: int = 0
    min_distance: float = math.inf
    # Per computed frame (frame_start + 1, ...), per collider: the largest lag behind its
    # animation and the smallest signed distance to the bodies at its animated position
    # (negative: overlap), over the frame's substeps [m].
    collider_lag: list = field(default_factory=list)
    collider_distance: list = field(default_factory=list)
    # this job's frames only (not restored by Continue Bake): steps the solver split because
    # their straight motion crossed, frames computed again with more substeps, and the frames
    # whose straight motion from the frame before still crosses (frame_motion.FrameCrossing)
    motion_splits: int = 0
    failure_splits: int = 0  # solves that did not converge, taken again in halves
    refined_frames: int = 0
    slept_bodies: int = 0  # most bodies asleep at once (Deactivation; this job's frames only)
    # rigid bodies squashed or stretched beyond RIGID_STRAIN_LIMIT (this job's frames only):
    # {body index: [largest strain, frames]}
    strained: dict = field(default_factory=dict)
    crossings: list = field(default_factory=list)
    frame_rows: list = field(default_factory=list)  # frame_diagnostics.frame_row per frame


def solver_settings(s):
    """The solver's settings for the scene settings s: its defaults, with sleeping bodies
    when Deactivation is on (docs/design/18-sleeping.md) and friction taken again at each
    step's result Friction Updates times (docs/design/20-friction-lag-updates.md)."""
    sleep = SleepSettings(enabled=s.use_deactivation)
    newton = NewtonSettings(friction_lags=s.friction_updates)
    if sleep == SleepSettings() and newton == NewtonSettings():
        return None
    return SolverSettings(newton=newton, sleep=sleep)


def note_strained(strained, frame, steps):
    """Record in strained (BakeStats.strained) the rigid bodies that the frame's steps
    squash or stretch beyond RIGID_STRAIN_LIMIT."""
    strains = [st.rigid_strains for st in steps if st.rigid_strains]
    if not strains:
        return
    worst = np.max(strains, axis=0)
    for i in np.flatnonzero(worst > RIGID_STRAIN_LIMIT).tolist():
        entry = strained.setdefault(i, [0.0, []])
        entry[0] = max(entry[0], float(worst[i]))
        entry[1].append(frame)


def strained_summary(strained, names) -> str:
    """The panel's short line for BakeStats.strained: the worst body, '' if none."""
    if not strained:
        return ""
    i, (worst, frames) = max(strained.items(), key=lambda item: item[1][0])
    text = f"'{names[i]}' up to {100 * worst:.2g} % (frames {compact_ranges(frames)})"
    return text + (f" and {len(strained) - 1} more" if len(strained) > 1 else "")


class BakeJob:
    """A bake in progress: everything is read up front, nothing in the scene changes until
    :meth:`finish`, so cancelling is just dropping the job.

    The solver runs with ``blas_threads`` BLAS threads (None: the process's setting), set
    around each call and restored afterwards, so Blender keeps its own setting in between."""

    blas_threads: int | None = blas_threads.BAKE_THREADS

    def __init__(self, context, target: str = "SELECTED", resume: Resume | None = None):
        """resume (Continue Bake, see resume.prepare): continue that bake from its stored solver
        state to resume.frame_end instead of baking the target's bodies from the start."""
        scene = context.scene
        self.scene = scene
        self.resume = resume
        if resume is None:
            self.body_objs, self.collider_objs = gather_objects(context, target)
            self.frame_start, self.frame_end = frame_range(scene)
        else:
            self.body_objs, self.collider_objs = resume.bodies, resume.colliders
            self.frame_start, self.frame_end = resume.frame_start, resume.frame_end
        check_bakeable(context, self.body_objs, self.collider_objs)
        if self.frame_end <= self.frame_start:
            raise IPCError(
                f"Frame range {self.frame_start}..{self.frame_end} is empty; "
                "the end frame must come after the start frame"
            )
        self.substeps = scene.ipc.substeps
        self.n_frames = self.frame_end - self.frame_start + 1
        self.signature = input_signature(scene, self.body_objs, self.collider_objs)
        self.inputs, self.frame_mats, self.solver_scene = self._read(context)
        try:
            check_scene(self.solver_scene)  # meshes sound before they are measured
            self.solver_scene, self.separated = touching.separate(self.solver_scene)
            with blas_threads.limited(self.blas_threads):
                self.sim = Simulation(self.solver_scene, settings=solver_settings(scene.ipc))
                if resume is not None:
                    self.sim.restore(resume.checkpoint)
        except SolverInputError as err:
            text = in_blender_words(str(err), self.inputs, self.solver_scene)
            raise IPCError(f"Invalid simulation input: {text}") from err
        # frames[0] is frame frame_start + base: the start, or the last frame of the bake continued
        self.base = 0 if resume is None else resume.baked_end - self.frame_start
        if resume is None:
            first = [b.world_rest[b.used][:, list(PLANE_AXES[scene.ipc.plane][:2])] for b in self.inputs]
            self.stats = BakeStats(frames=1)
        else:
            first = [self.sim.body_positions(i) for i in range(len(self.inputs))]
            self.stats = BakeStats(frames=self.base + 1, **restored_stats(resume.stats))
        self.frames = _spool([p.shape for p in first])
        self.frames.append(first)
        self.failure: str | None = None
        self.outdated_exports: list[str] = []  # see exports_warning
        self.preview: LivePreview | None = None
        self.started = time.perf_counter()
        # frame -> the solver state stored every K frames (resume.keep_state; Bake from Here)
        self.states = {} if resume is None else dict(resume.states)
        keep_state(self)

    @property
    def note(self) -> str:
        """Objects that touched at the start and were separated for the simulation, the fields
        it ignores, and what the solver changed in the scene (Simulation.notes), or ''."""
        parts = [separation_report(self.separated, self.solver_scene.params.dhat)]
        messages = [*getattr(self, "field_messages", ()), *getattr(self, "link_notes", ())]
        parts += [m[0].upper() + m[1:] for m in messages]
        parts += list(self.sim.notes)
        return "; ".join(p for p in parts if p)

    def _read(self, context):
        scene = context.scene
        frame, subframe = scene.frame_current, scene.frame_subframe
        # Obstacle bodies are read as simulated: without the detail modifiers drawn on top.
        obstacle_bodies = [o for o in self.collider_objs if is_obstacle_body(o, self.body_objs)]
        with detail_hidden(obstacle_bodies):
            return self._read_at_start(context, frame, subframe)

    def _read_at_start(self, context, frame, subframe):
        scene = context.scene
        plane = scene.ipc.plane
        n_steps = (self.n_frames - 1) * self.substeps
        # One substep more is sampled than the frames need: the solver's time, summed step by
        # step, may end a hair after the last sample, where a collider's target would be clamped
        # to it in this bake but interpolated in a longer one (Continue Bake must give the bits
        # of a bake to the later end frame in one go).
        n_samples = n_steps + 1
        try:
            before = None  # the bodies' world matrices one frame before the start
            if has_handoff(scene, self.frame_start):
                scene.frame_set(self.frame_start - 1)
                before = [matrix_of(o.matrix_world) for o in self.body_objs]
            scene.frame_set(self.frame_start)
            depsgraph = context.evaluated_depsgraph_get()
            bodies = [read_body(o, plane) for o in self.body_objs]
            colliders = [read_collider(o, depsgraph, plane) for o in self.collider_objs]
            empties, self.link_notes = links.linked(context.view_layer.objects, self.body_objs)
            anchors = links.anchor_points(empties)  # Spring and Rope ends, at the start frame
            objs = self.body_objs + self.collider_objs + empties  # link Empties sampled last
            # Obstacle bodies move with their bake, deforming colliders with their evaluated
            # mesh: both sampled per substep; rigid colliders by their matrix only.
            n_bodies = len(self.body_objs)
            deforming = [
                n_bodies + j
                for j, o in enumerate(self.collider_objs)
                if is_obstacle_body(o, self.body_objs) or may_deform(o)
            ]
            mats, shapes = sample_matrices(
                context, objs, self.frame_start, n_samples, self.substeps, deforming
            )
            times = np.arange(n_samples + 1) * sim_dt(scene)
            force_fields, self.field_messages = read_fields(
                context, self.frame_start, n_samples, self.substeps, times, plane
            )
            animation = read_animation(
                context, self.body_objs, bodies, self.frame_start, n_samples, self.substeps, times
            )
        finally:
            scene.frame_set(frame, subframe=subframe)
        materials = [material_of(o) for o in self.body_objs + self.collider_objs]
        materials = at_start(materials, self.body_objs, animation)  # keyed values: the start frame's
        velocities = [initial_velocity(o) for o in self.body_objs]
        handoff = None
        if before is not None:  # the animation's motion at the start frame carries on
            fps = scene.render.fps / scene.render.fps_base
            handoff = [animated_velocity(b, m, fps, plane) for b, m in zip(bodies, before, strict=True)]
        solver_scene = build_scene(
            scene, bodies, colliders, materials, mats, times, shapes, velocities, handoff
        )
        if force_fields:  # the scene's Force Field objects (blender_ipc/fields.py)
            solver_scene = dataclasses.replace(solver_scene, fields=force_fields)
        if animation is not None:  # keyed settings, painted stiffness (blender_ipc/animated.py)
            solver_scene = dataclasses.replace(solver_scene, animation=animation)
            solver_scene = start_gravity(solver_scene)
        fps = scene.render.fps / scene.render.fps_base
        samples = links.Samples(mats, times, plane, self.frame_start, fps, anchors)
        solver_scene, notes = links.compose(
            solver_scene, self.body_objs, self.collider_objs, empties, samples
        )
        self.link_notes += notes
        frame_mats = mats[: n_steps + 1 : self.substeps, : len(bodies)]
        return bodies, frame_mats, solver_scene

    @property
    def frames_done(self) -> int:
        """Frames of the bake so far, from frame_start (those of a continued bake included)."""
        return self.base + self.frames.count

    @property
    def done(self) -> bool:
        return self.failure is not None or self.frames_done >= self.n_frames

    @property
    def baked_end(self) -> int:
        """The last frame computed so far (the bake's last frame once it finished)."""
        return self.frame_start + self.frames_done - 1

    @property
    def stopped(self) -> bool:
        """Stopped by the artist before the end frame (Stop and Keep), not by a failure."""
        return self.failure is None and self.frames_done < self.n_frames

    @property
    def new_frames(self) -> int:
        """Frames computed by this job (a continued bake's earlier frames not counted)."""
        return self.frames.count - 1

    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def estimate_remaining(self) -> float:
        computed = self.new_frames
        if computed <= 0:
            return math.nan
        return self.elapsed() / computed * (self.n_frames - self.frames_done)

    def step_frame(self):
        """Advance one frame (all its substeps). Solver failures end the job with a message."""
        frame = self.frame_start + self.frames_done
        steps = []  # this frame's StepStats so far
        try:
            advance = frame_motion.advance_frame(
                self.sim, self.substeps, self.scene.ipc.refine_crossing_frames, steps
            )
        except Exception as err:  # solver failures, and anything else: the message tells
            self.failure = self._failure_message(err, frame, len(steps) + 1)
            return
        try:
            self.frames.append([self.sim.body_positions(i) for i in range(len(self.inputs))])
        except OSError as err:  # a full disk: the frames computed so far are still readable
            self.failure = (
                f"Could not keep frame {frame} of the bake on disk ({err.strerror or err}) "
                f"in the temporary folder '{self.frames.folder}'; free some space and bake again"
            )
            return
        n_col = len(self.collider_objs)
        lag, dist = np.zeros(n_col), np.full(n_col, math.inf)
        note_strained(self.stats.strained, frame, advance.steps)
        for st in advance.steps:
            self.stats.newton_iters += st.newton_iters
            self.stats.min_distance = min(self.stats.min_distance, st.min_distance)
            self.stats.motion_splits += st.motion_splits
            self.stats.failure_splits += st.failure_splits
            self.stats.slept_bodies = max(self.stats.slept_bodies, st.sleep.sleeping)
            lag = np.maximum(lag, st.collider_lags)
            dist = np.minimum(dist, st.animated_collider_distances)
        if advance.pairs:
            self.stats.crossings.append(frame_motion.FrameCrossing(frame, advance.pairs, advance.substeps))
        self.stats.refined_frames += advance.substeps != self.substeps
        self.stats.frame_rows.append(frame_diagnostics.frame_row(advance))
        self.stats.frames = self.frames_done
        self.stats.collider_lag.append(lag)
        self.stats.collider_distance.append(dist)
        keep_state(self)

    def _failure_message(self, err, frame, substep) -> str:
        """The failure in Blender's words: frame and substep, object and Blender vertex, the
        panel's property names and what to change (messages.solver_failure)."""
        model = getattr(self.sim, "model", None)
        return messages.solver_failure(
            err,
            frame=frame,
            substep=substep,
            substeps=self.substeps,
            bodies=self.inputs,
            body_slices=model.body_slices if model is not None else (),
            collider_names=[c.name for c in self.solver_scene.colliders],
            collider_slices=model.collider_slices if model is not None else (),
            params=self.solver_scene.params,
            in_blender_words=lambda text: in_blender_words(text, self.inputs, self.solver_scene),
        )

    def _collider_frames(self):
        """Per computed frame (F, C): largest lag and smallest animated distance [m]."""
        shape = (len(self.stats.collider_lag), len(self.collider_objs))
        lags = np.array(self.stats.collider_lag, float).reshape(shape)
        return lags, np.array(self.stats.collider_distance, float).reshape(shape)

    def collider_reports(self) -> list[ColliderReport]:
        """How each collider followed its animation over the frames computed so far."""
        lags, dists = self._collider_frames()
        names = [o.name for o in self.collider_objs]
        return collider_reports(names, self.frame_start, lags, dists, self.solver_scene.params.dhat)

    @property
    def warning(self) -> str:
        """Colliders that could not follow their animation, frames whose straight motion
        crosses (frame_motion), rigid bodies squashed or stretched, or ''."""
        lag = lag_warning(self.collider_reports(), self.solver_scene.params.dhat)
        crossing = messages.frame_crossing_warning(
            self.stats.crossings, self.substeps, self.scene.ipc.refine_crossing_frames
        )
        strained = messages.rigid_strain_warning(self.stats.strained, [b.name for b in self.inputs])
        return "\n".join(w for w in (lag, crossing, strained) if w)

    def step(self, budget: float | None = None) -> bool:
        """Compute frames until done or `budget` seconds have passed; returns ``done``."""
        t0 = time.perf_counter()
        with blas_threads.limited(self.blas_threads):
            while not self.done:
                self.step_frame()
                if budget is not None and time.perf_counter() - t0 >= budget:
                    break
        return self.done

    def run(self) -> bool:
        return self.step(None)

    def finish(self, keep_partial: bool = False) -> bool:
        """Write the keys (all frames, or the partial result if allowed; a continued bake gets
        the new frames appended). Returns True if anything was written.

        A job stopped before its end frame (Stop and Keep: no failure, frames_done < n_frames)
        is written exactly as a bake whose end frame was the last frame computed: its keys, its
        records (bake_frame_end = that frame) and its stored solver state, so Continue Bake
        extends it; only ``bake_frame_goal`` remembers the end frame it was started for. A job
        that computed no new frame writes nothing."""
        prior = self.resume.stats["wall_time"] if self.resume is not None else 0.0
        self.stats.wall_time = prior + self.elapsed()
        self.end_preview()
        partial = self.failure is not None
        if self.new_frames < 1 or (partial and not keep_partial):
            return False
        plane = self.scene.ipc.plane
        n = self.frames_done
        # for Continue Bake and Bake from Here, computed before anything is written: a failure
        # here leaves the scene as it was
        try:
            stored = None if partial else checkpoint_entry(self)
        except (MemoryError, OSError, ValueError) as err:
            raise IPCError(
                f"Could not store the solver states of the bake ({err}); nothing was changed"
            ) from err
        # a new bake replaces the bodies' PC2 caches and exports: set aside first, so that a file
        # that cannot go (read-only folder) stops the bake here, before the scene changes
        replaced = [] if self.resume is not None else files_of(self.scene, self.body_objs)
        aside = bake_files.set_aside(replaced)
        try:
            self._write_all_keys(plane, n, partial)
        except BaseException:
            bake_files.put_back(aside)
            raise
        bake_files.discard(aside)
        self._record_stats()
        frame_diagnostics.key_scene(self.scene, self.frame_start + self.base + 1, self.stats.frame_rows)
        if stored is not None:
            put_checkpoint(self, stored)
        if self.resume is not None:  # a new bake removed them (write_bake); these hold old frames
            self.outdated_exports = exports_holding(self.scene, [o.name for o in self.body_objs])
        return True

    @property
    def exports_warning(self) -> str:
        """After Continue Bake or Bake from Here: the Alembic/USD exports of the bodies hold the
        bake as it was before, or ''."""
        if not self.outdated_exports:
            return ""
        return (
            "IPC: " + ", ".join(f"'{p}'" for p in self.outdated_exports) + " holds the bake as it was "
            "before; export again (Bake Files > Alembic / USD) to include the new frames"
        )

    def _write_all_keys(self, plane, n, partial):
        for j, (obj, body) in enumerate(zip(self.body_objs, self.inputs, strict=True)):
            self._write_keys(obj, self._local_chunks(j, body, plane))
            s = obj.ipc
            s.is_baked, s.bake_hash, s.bake_partial = True, self.signature, partial
            s.bake_frame_start, s.bake_frame_end = self.frame_start, self.frame_start + n - 1
            s.bake_frame_goal = self.frame_end
            s.bake_message = self.failure or ""

    def _local_chunks(self, j, body, plane):
        """Body j's computed frames in object-local float32 coordinates, FINISH_CHUNK frames at
        a time (from frame_start + base on), so that writing them needs memory for a chunk,
        not for every frame at once."""
        for lo in range(0, self.frames.count, FINISH_CHUNK):
            part = self.frames.read(lo, min(lo + FINISH_CHUNK, self.frames.count))[j]
            mats = self.frame_mats[self.base + lo : self.base + lo + len(part), j]
            yield to_local_frames(body, part, mats, plane)

    def body_frames(self, j: int) -> np.ndarray:
        """Body j's solver positions of the frames computed so far (F, k, 2), from frame_start
        + base on (for tests and scripts: reads every frame into memory)."""
        return self.frames.read(0, self.frames.count)[j]

    def _write_keys(self, obj, chunks):
        """The frames computed as shape keys; the first chunk starts with frame_start + base
        (the rest mesh, or the last frame of the bake continued: already a key)."""
        frame = self.frame_start + self.base
        for i, local in enumerate(chunks):
            if i > 0:
                append_bake(obj, local, frame)
            elif self.resume is None:
                write_bake(obj, local, self.frame_start)
            else:
                append_bake(obj, local[1:], frame + 1)
            frame += len(local)

    def start_preview(self):
        """Show each frame in the viewport as soon as it is computed (modal bake)."""
        if self.preview is None:
            self.preview = LivePreview(self)

    def update_preview(self) -> int:
        """Write the frames computed since the last call; returns the newest frame shown."""
        return self.preview.update() if self.preview is not None else self.frame_start

    def end_preview(self, data_reloaded: bool = False):
        """Give each body its own mesh back and remove the scratch meshes, so the scene is as it
        was before the bake (a finished bake then writes its keys as the synchronous one does).
        After undo/redo/file load the data the preview wrote to is gone: nothing to remove."""
        preview, self.preview = self.preview, None
        if preview is not None and not data_reloaded:
            preview.remove()

    def _record_stats(self):
        s = self.scene.ipc
        s.stat_bake_hash = self.signature
        s.stat_frames = self.frames_done
        s.stat_wall_time = self.stats.wall_time
        s.stat_newton_iters = self.stats.newton_iters
        s.stat_min_distance = self.stats.min_distance if math.isfinite(self.stats.min_distance) else -1.0
        s.stat_message = self.failure or ""
        reports = self.collider_reports()
        near = [r.distance for r in reports if math.isfinite(r.distance)]
        s.stat_collider_near = bool(near)
        s.stat_collider_distance = min(near, default=0.0)
        s.stat_collider_lag = max((r.lag for r in reports), default=0.0)
        lags, dists = self._collider_frames()
        frames = self.frame_start + 1 + np.arange(len(lags))
        s.stat_lag_frames = compact_ranges(frames[(lags > self.solver_scene.params.dhat).any(axis=1)])
        s.stat_overlap_frames = compact_ranges(frames[(dists < 0.0).any(axis=1)])
        s.stat_warning = lag_warning(reports, self.solver_scene.params.dhat)
        s.stat_strained = strained_summary(self.stats.strained, [b.name for b in self.inputs])
        frame_motion.record(s, self.stats, self.note)
        s.stat_colliders.clear()
        for r in reports:
            item = s.stat_colliders.add()
            item.name, item.lag = r.name, r.lag
            item.near = math.isfinite(r.distance)
            item.distance = r.distance if item.near else 0.0
            item.lag_frames, item.overlap_frames = r.lag_frames, r.overlap_frames


def _spool(shapes) -> FrameSpool:
    """The computed frames' file, in Blender's temporary folder for this session."""
    try:
        return FrameSpool(shapes, bpy.app.tempdir)
    except OSError as err:
        raise IPCError(
            f"Could not create a file for the bake's frames in the temporary folder "
            f"'{bpy.app.tempdir}': {err.strerror or err}; free some space and bake again"
        ) from err


class LivePreview:
    """The modal bake's live view: each body object's mesh is swapped for a scratch copy that
    gets one absolute shape key per frame as soon as the frame is computed, keyed like a bake,
    so the viewport shows the newest frame and the artist can scrub the frames computed so far.
    The artist's own meshes (their coordinates, an earlier bake, its properties) are not touched:
    :meth:`remove` gives each object its mesh back and deletes the scratch meshes with their
    keys and actions, leaving the scene exactly as before."""

    def __init__(self, job: BakeJob):
        self.job = job
        # frames written from frame_start on (the basis is the rest mesh = frame_start; a
        # continued bake shows the frames baked before too)
        self.written = job.base + 1
        self.meshes, self.keys = [], []
        self.hidden = []  # Mesh Cache modifiers switched off in the viewport for the preview
        try:
            for obj in job.body_objs:
                cache = cache_modifier(obj)  # a bake stored as PC2 would hide the preview's keys
                if cache is not None and cache.show_viewport:
                    cache.show_viewport = False
                    self.hidden.append(cache)
                own = obj.data
                scratch = own.copy()
                self.meshes.append((obj, own, scratch))
                obj.data = scratch
                remove_keys(obj)  # the copy of an earlier bake (it shares the bake's action)
                self.keys.append(begin_keys(obj, job.frame_start))
                if job.base:
                    for k, kb in enumerate(own.shape_keys.key_blocks[1 : job.base + 1]):
                        co = np.empty(len(kb.data) * 3, dtype=np.float32)
                        kb.data.foreach_get("co", co)
                        add_frame_key(obj, self.keys[-1], co.reshape(-1, 3), job.frame_start + 1 + k)
        except Exception:
            self.remove()
            raise

    def update(self) -> int:
        job = self.job
        n = job.frames_done
        if n > self.written:
            plane = job.scene.ipc.plane
            for j, (obj, _own, _scratch) in enumerate(self.meshes):
                body = job.inputs[j]
                positions = job.frames.read(self.written - job.base, n - job.base)[j]
                local = to_local_frames(body, positions, job.frame_mats[self.written : n, j], plane)
                for k, co in enumerate(local):
                    add_frame_key(obj, self.keys[j], co, job.frame_start + self.written + k)
                obj.data.update()
            self.written = n
        return self.newest

    @property
    def newest(self) -> int:
        """The newest frame written (frame_start: only the rest shape so far)."""
        return self.job.frame_start + self.written - 1

    def remove(self):
        for obj, own, scratch in reversed(self.meshes):
            if obj.data == scratch:
                remove_keys(obj)
                obj.data = own
            bpy.data.meshes.remove(scratch)
        for cache in self.hidden:
            cache.show_viewport = True
        self.meshes, self.keys, self.hidden = [], [], []
