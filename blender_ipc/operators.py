"""Operators: they read properties, call the adapter and report. No physics here."""

import math
import time

import bpy
from bpy.props import EnumProperty, FloatProperty, IntProperty

from . import adapter, examples, rebake, remesh, signature

_TARGET_ITEMS = [
    ("SELECTED", "Selected", "Selected deformable bodies"),
    ("SCENE", "Scene", "All deformable bodies in the view layer"),
]


class RunningBake:
    """The modal bake's state, shared with the panel and the Cancel operator. The operator's
    modal() only adds UI (timer, progress bar, status text) around start/tick/cancel, so tests
    can drive these directly in background mode where timers never fire."""

    job = None
    cancel_requested = False
    # Stop and Keep (the Enter key or the panel's button): the modal loop ends the bake at its
    # next event, after the frame being computed, and writes the frames computed so far.
    stop_requested = False
    cancel_reason = ""
    data_reloaded = False
    # Live view: each computed frame is shown at once (LivePreview) and the frame cursor follows
    # the newest frame unless the artist moved it. False: the viewport shows nothing until the
    # bake ends (as before issue 14; kept for measuring what the live view costs).
    live = True
    frame_before = (1, 0.0)  # the scene's frame and subframe when the bake started
    frame_shown = None  # the frame the cursor was last moved to by the bake
    shown_now = False  # the last chunk updated the live view

    @classmethod
    def start(cls, context, target, live=None, job=None):
        """Read the scene and set up the solver (or run `job`, e.g. a continued bake); raises
        adapter.IPCError. With the live view the bodies show scratch meshes until the bake
        ends; the artist's data is unchanged."""
        job = adapter.BakeJob(context, target) if job is None else job
        cls._reset_live_clock()
        scene = context.scene
        cls.frame_before, cls.frame_shown = (scene.frame_current, scene.frame_subframe), None
        if cls.live if live is None else live:
            job.start_preview()
        cls.job, cls.cancel_requested, cls.cancel_reason, cls.data_reloaded = job, False, "", False
        cls.stop_requested = False
        return job

    # The live view may cost at most this share of the bake's wall time. What Blender does
    # after an update (evaluation, redraws: with software OpenGL the viewport's anti-aliasing
    # samples cost ~0.1 s per redraw, for several events after each change) is measured as the
    # time between chunks beyond a quiet event loop's, and an update waits until the time spent
    # so far plus one more update's average fits in this share of the time since the start
    # (with a GPU that is every chunk).
    live_share = 0.08  # None: every chunk (tests, screenshots)
    QUIET_GAP = 0.03  # [s] between chunks when nothing is redrawn (llvmpipe: ~0.025 s)
    _ui_extra, _min_gap, _tick_end, _live_n, _t0 = 0.0, math.inf, None, 0, 0.0

    @classmethod
    def _reset_live_clock(cls):
        cls._ui_extra, cls._min_gap, cls._tick_end, cls._live_n = 0.0, math.inf, None, 0
        cls._t0 = time.perf_counter()

    @classmethod
    def note_event(cls):
        """A timer event of the modal bake arrived: the time since the last chunk ended was
        Blender's (redraws, evaluation)."""
        if cls._tick_end is not None:
            gap = time.perf_counter() - cls._tick_end
            cls._min_gap = min(cls._min_gap, gap)
            cls._ui_extra += gap - min(cls._min_gap, cls.QUIET_GAP)

    @classmethod
    def live_due(cls) -> bool:
        if cls._live_n == 0 or cls.live_share is None:
            return True
        spent = max(cls._ui_extra, 0.0)
        return spent * (1 + 1 / cls._live_n) <= cls.live_share * (time.perf_counter() - cls._t0)

    @classmethod
    def tick(cls, budget):
        """Compute frames for about `budget` seconds and show them when the live view is due;
        returns True when done."""
        job = cls.job
        done = job.step(budget)
        cls.shown_now = job.preview is not None and cls.live_due()
        if cls.shown_now:
            cls.show_newest()
            cls._live_n += 1
        cls._tick_end = time.perf_counter()
        return done

    @classmethod
    def show_newest(cls):
        """Write the new frames into the live view and move the frame cursor to the newest one,
        unless the artist moved it since (then it stays where they put it, until they put it
        back on the newest frame)."""
        job = cls.job
        if job is None or job.preview is None:
            return
        shown = job.preview.newest  # the newest frame before this update
        newest = job.update_preview()
        scene = job.scene
        # Following: the cursor is where the bake put it, or the artist put it back on the
        # newest frame computed so far.
        if not cls.artist_moved_cursor() or scene.frame_current == shown:
            if scene.frame_current != newest:
                scene.frame_current = newest
            cls.frame_shown = newest

    @classmethod
    def artist_moved_cursor(cls) -> bool:
        shown = cls.frame_before[0] if cls.frame_shown is None else cls.frame_shown
        return cls.job is not None and cls.job.scene.frame_current != shown

    @classmethod
    def restore_frame(cls, job):
        frame, subframe = cls.frame_before
        scene = job.scene
        if (scene.frame_current, scene.frame_subframe) != (frame, subframe):
            scene.frame_set(frame, subframe=subframe)

    @classmethod
    def cancel(cls):
        """Drop the job and remove its live view: the scene is exactly as before (after undo,
        redo or a file load the live view went with the replaced data)."""
        job = cls.job
        cls.job, cls.cancel_requested, cls.cancel_reason, cls.stop_requested = None, False, "", False
        if job is not None and not cls.data_reloaded:
            job.end_preview()
            cls.restore_frame(job)
        elif job is not None:
            job.end_preview(data_reloaded=True)
        cls.data_reloaded = False

    @classmethod
    def request_cancel(cls, reason=""):
        if cls.job is not None:
            cls.cancel_requested, cls.cancel_reason = True, reason

    @classmethod
    def request_stop(cls):
        """Stop and Keep: end the bake after the frame being computed, keeping the frames."""
        if cls.job is not None:
            cls.stop_requested = True

    @classmethod
    def take(cls):
        """The finished (or stopped) job, its live view removed (finish() writes the bake); the
        frame cursor goes back to where it was unless the artist moved it during the bake."""
        moved = cls.artist_moved_cursor()
        job, cls.job, cls.stop_requested = cls.job, None, False
        if job is not None:
            job.end_preview()
            if not moved:
                cls.restore_frame(job)
        return job


@bpy.app.handlers.persistent
def _stop_on_data_reload(*_args):
    """Undo, redo and file loads replace the data a running bake read (its objects and scene
    would dangle, and its inputs may no longer be what the user sees): the modal bake stops at
    its next event, before computing or writing anything more."""
    if RunningBake.job is not None:
        RunningBake.data_reloaded = True
    RunningBake.request_cancel("the scene data was reloaded (undo, redo or file load)")


RELOAD_HANDLERS = ("undo_pre", "redo_pre", "load_pre")


def add_handlers():
    signature.add_handlers()
    for name in RELOAD_HANDLERS:
        handlers = getattr(bpy.app.handlers, name)
        if _stop_on_data_reload not in handlers:
            handlers.append(_stop_on_data_reload)


def remove_handlers():
    signature.remove_handlers()
    for name in RELOAD_HANDLERS:
        handlers = getattr(bpy.app.handlers, name)
        while _stop_on_data_reload in handlers:
            handlers.remove(_stop_on_data_reload)


def _progress_text(job) -> str:
    eta = job.estimate_remaining()
    eta_txt = "?" if eta != eta else f"{eta:.0f} s"  # NaN until the first frame is done
    return (
        f"IPC bake: frame {job.frames_done} of {job.n_frames}, "
        f"{job.elapsed():.0f} s elapsed, about {eta_txt} left "
        "(Enter to stop and keep, Esc to cancel)"
    )


# The keys that stop the modal bake and keep its frames (as Enter confirms Blender's own modal
# tools, while Esc cancels them).
STOP_KEYS = {"RET", "NUMPAD_ENTER"}


def _status(context, text):
    if context.workspace is not None:
        context.workspace.status_text_set(text)


# The regions that draw the panel (Properties editor, 3D view sidebar). Without the live view
# nothing changes in the 3D viewport during the bake: tagging whole areas would only cost a
# redraw (with software OpenGL more than the chunk, ~0.5 s vs 0.1 s). With it, the 3D views and
# the timeline are redrawn after chunks that computed a new frame.
_PANEL_REGIONS = {("PROPERTIES", "WINDOW"), ("VIEW_3D", "UI")}
_LIVE_AREAS = set()


def _tag_redraw(context, whole_areas=False, live=False):
    """Panel regions after each chunk; with a new live frame also the 3D views and the
    timeline; whole Properties / 3D view areas when the bake ends."""
    for window in getattr(context.window_manager, "windows", ()):
        for area in window.screen.areas:
            if (whole_areas and area.type in {"PROPERTIES", "VIEW_3D"}) or (
                live and area.type in _LIVE_AREAS
            ):
                area.tag_redraw()
                continue
            for region in area.regions:
                if (area.type, region.type) in _PANEL_REGIONS:
                    region.tag_redraw()


def _time_budget():
    return IntProperty(
        name="Time Budget",
        default=100,
        min=10,
        description="Computation per UI update in the modal bake [ms]",
    )


class _BakeOperator:
    """What Bake and Continue Bake share: execute() bakes synchronously (scripts, headless),
    invoke() runs the modal bake with its live view; _job() makes the job (raises IPCError)."""

    @classmethod
    def poll(cls, context):
        return RunningBake.job is None

    def _job(self, context):
        return adapter.BakeJob(context, self.target)

    def _start(self, context):
        try:
            return self._job(context)
        except adapter.IPCError as err:
            self.report({"ERROR"}, str(err))
            return None

    def _finish(self, context, job):
        keep = context.scene.ipc.keep_partial
        try:
            written = job.finish(keep_partial=keep)
        except adapter.IPCError as err:  # nothing was written
            self.report({"ERROR"}, str(err))
            return {"CANCELLED"}
        warning = job.warning if written else ""
        if job.failure:
            if warning:
                self.report({"WARNING"}, warning)
            note = " (frames up to the failure were kept)" if written else " (nothing was changed)"
            self.report({"ERROR"}, job.failure + note)
            return {"FINISHED"} if written else {"CANCELLED"}
        if job.note:
            self.report({"INFO"}, job.note)
        if job.stopped:
            self.report(
                {"INFO"},
                f"IPC: bake stopped, frames {job.frame_start}-{job.baked_end} of "
                f"{job.frame_start}-{job.frame_end} kept ({job.new_frames} new) in "
                f"{job.elapsed():.1f} s; Continue Bake extends it",
            )
        elif isinstance(job, rebake.RebakeJob):
            self.report({"INFO"}, job.summary)
            if job.differs:
                self.report({"WARNING"}, job.differs_warning)
        elif job.resume is not None:
            self.report(
                {"INFO"},
                f"IPC: continued the bake to frame {job.frame_end} ({job.new_frames} new frames) "
                f"in {job.elapsed():.1f} s",
            )
        else:
            self.report({"INFO"}, f"IPC: baked {job.n_frames} frames in {job.stats.wall_time:.1f} s")
        if job.exports_warning:
            self.report({"WARNING"}, job.exports_warning)
        if warning:
            # last, so that it is what the status bar shows
            self.report({"WARNING"}, warning)
        return {"FINISHED"}

    def execute(self, context):
        job = self._start(context)
        if job is None:
            return {"CANCELLED"}
        job.run()
        return self._finish(context, job)

    def invoke(self, context, event):
        if bpy.app.background:
            return self.execute(context)
        try:
            job = RunningBake.start(context, self.target, job=self._job(context))
        except adapter.IPCError as err:
            self.report({"ERROR"}, str(err))
            return {"CANCELLED"}
        self._begin_modal(context, job)
        context.window_manager.modal_handler_add(self)
        return {"RUNNING_MODAL"}

    def _begin_modal(self, context, job):
        wm = context.window_manager
        self._timer = wm.event_timer_add(0.01, window=context.window)
        wm.progress_begin(0, job.n_frames)

    def cancel(self, context):
        """Blender ends the modal operator itself (file load, window closed): drop the job so
        that a new bake can start."""
        RunningBake.cancel()
        self._end_modal(context)

    def _end_modal(self, context):
        wm = context.window_manager
        wm.event_timer_remove(self._timer)
        wm.progress_end()
        _status(context, None)
        _tag_redraw(context, whole_areas=True)

    def modal(self, context, event):
        if event.type == "ESC" or RunningBake.cancel_requested or RunningBake.job is None:
            reason = RunningBake.cancel_reason
            RunningBake.cancel()
            self._end_modal(context)
            self.report(
                {"WARNING"},
                f"IPC bake stopped: {reason}; nothing was baked"
                if reason
                else "IPC bake cancelled; the scene is unchanged",
            )
            return {"CANCELLED"}
        if RunningBake.stop_requested or (event.type in STOP_KEYS and event.value == "PRESS"):
            return self._stop_and_keep(context)
        if event.type != "TIMER":
            return {"PASS_THROUGH"}
        RunningBake.note_event()
        job = RunningBake.job
        before = job.frames_done
        done = RunningBake.tick(self.time_budget_ms / 1000.0)
        context.window_manager.progress_update(job.frames_done)
        _status(context, _progress_text(job))
        _tag_redraw(context, live=RunningBake.shown_now and job.frames_done > before)
        if not done:
            return {"RUNNING_MODAL"}
        self._end_modal(context)
        return self._finish(context, RunningBake.take())

    def _stop_and_keep(self, context):
        """Enter or Stop and Keep: the frames computed so far become the bake (as a bake to the
        last of them would be; Continue Bake extends it); before the first new frame nothing
        is written and the scene stays as it was."""
        job = RunningBake.take()
        self._end_modal(context)
        if job.new_frames < 1:  # take() removed the live view: the scene is as before
            self.report({"WARNING"}, "IPC bake stopped before its first frame; nothing was baked")
            return {"CANCELLED"}
        return self._finish(context, job)


class IPC_OT_bake(_BakeOperator, bpy.types.Operator):
    """Simulate the deformable bodies and bake the result into shape keys"""

    bl_idname = "ipc.bake"
    bl_label = "Bake IPC Simulation"
    bl_options = {"REGISTER", "UNDO"}

    target: EnumProperty(name="Bake", items=_TARGET_ITEMS, default="SELECTED")
    time_budget_ms: _time_budget()


class IPC_OT_continue_bake(_BakeOperator, bpy.types.Operator):
    """Extend the bake of the selected bodies to a later end frame from its last frame (positions
    and velocities), exactly as a bake to that frame done in one go; refused when its inputs
    changed since the bake"""

    bl_idname = "ipc.continue_bake"
    bl_label = "Continue Bake"
    bl_options = {"REGISTER", "UNDO"}

    target: EnumProperty(name="Continue", items=_TARGET_ITEMS, default="SELECTED")
    frame_end: IntProperty(
        name="End Frame",
        default=0,
        min=0,
        description="Frame to continue the bake to (0: the end of the bake's frame range)",
    )
    time_budget_ms: _time_budget()

    def _job(self, context):
        return adapter.BakeJob(context, resume=adapter.prepare_resume(context, self.target, self.frame_end))


class IPC_OT_bake_from_here(_BakeOperator, bpy.types.Operator):
    """Bake the selected bodies again from the current frame to the end of the frame range,
    keeping the frames before it (after changing an animation from this frame on); restarts
    from the solver state stored at or before the frame"""

    bl_idname = "ipc.bake_from_here"
    bl_label = "Bake from Here"
    bl_options = {"REGISTER", "UNDO"}

    target: EnumProperty(name="Bake", items=_TARGET_ITEMS, default="SELECTED")
    frame: IntProperty(name="From Frame", default=0, description="Frame to bake from (0: the current frame)")
    time_budget_ms: _time_budget()

    def _job(self, context):
        return rebake.prepare(context, self.target, self.frame or context.scene.frame_current)


class _WhileBaking:
    """The panel's buttons for a running modal bake: they set a flag its modal loop reads."""

    @classmethod
    def poll(cls, context):
        return RunningBake.job is not None


class IPC_OT_cancel_bake(_WhileBaking, bpy.types.Operator):
    """Stop the running bake and leave the scene as it was"""

    bl_idname = "ipc.cancel_bake"
    bl_label = "Cancel Bake"

    def execute(self, context):
        RunningBake.cancel_requested = True
        return {"FINISHED"}


class IPC_OT_stop_bake(_WhileBaking, bpy.types.Operator):
    """Stop the running bake after the frame being computed and keep the frames baked so far
    (Continue Bake extends them later); the same as Enter during the bake"""

    bl_idname = "ipc.stop_bake"
    bl_label = "Stop and Keep"

    def execute(self, context):
        RunningBake.request_stop()
        return {"FINISHED"}


class IPC_OT_delete_bake(bpy.types.Operator):
    """Remove the baked shape keys and restore the original meshes"""

    bl_idname = "ipc.delete_bake"
    bl_label = "Delete IPC Bake"
    bl_options = {"REGISTER", "UNDO"}

    target: EnumProperty(name="Delete", items=_TARGET_ITEMS, default="SELECTED")

    def execute(self, context):
        pool = context.selected_objects if self.target == "SELECTED" else list(context.view_layer.objects)
        baked = [o for o in pool if o.type == "MESH" and o.ipc.is_baked]
        if not baked:
            self.report(
                {"ERROR"},
                "No baked IPC body among the "
                + ("selected objects" if self.target == "SELECTED" else "scene objects"),
            )
            return {"CANCELLED"}
        if context.mode != "OBJECT":
            self.report({"ERROR"}, "Leave Edit Mode before deleting the bake")
            return {"CANCELLED"}
        foreign = [o.name for o in baked if o.data.shape_keys and not adapter.is_our_bake(o)]
        if foreign:
            self.report(
                {"ERROR"}, f"'{foreign[0]}' has shape keys that are not an IPC bake; nothing was deleted"
            )
            return {"CANCELLED"}
        try:
            for obj in baked:
                adapter.delete_bake(obj)  # with its PC2 cache and exports (files next to the .blend)
        except adapter.IPCError as err:
            self.report({"ERROR"}, str(err))
            return {"CANCELLED"}
        adapter.clear_stats_if_gone(context)
        adapter.discard_unused_checkpoints(context.scene)
        self.report({"INFO"}, f"IPC: deleted the bake of {len(baked)} object(s)")
        return {"FINISHED"}


class IPC_OT_add_example(bpy.types.Operator):
    """Add the compressing-squares example (two squares, a descending ceiling, a ground)"""

    bl_idname = "ipc.add_example"
    bl_label = "Add Compressing Squares Example"
    bl_options = {"REGISTER", "UNDO"}

    n_seg: IntProperty(name="Segments", default=8, min=1, max=64)

    def execute(self, context):
        if context.mode != "OBJECT":
            self.report({"ERROR"}, "Switch to Object Mode first")
            return {"CANCELLED"}
        examples.build_compressing_squares(context, n_seg=self.n_seg)
        return {"FINISHED"}


class IPC_OT_make_sim_mesh(bpy.types.Operator):
    """Mesh the active flat mesh, text or curve for the simulation (even triangles of about the
    edge length, no angle below the minimum) as a new object "<name>_sim"; the original is
    hidden and kept"""

    bl_idname = "ipc.make_sim_mesh"
    bl_label = "Make Simulation Mesh"
    bl_options = {"REGISTER", "UNDO"}

    edge_length: FloatProperty(
        name="Edge Length",
        description="Target triangle edge length (0: 1/25 of the object's diagonal in the plane)",
        default=0.0,
        min=0.0,
        unit="LENGTH",
    )
    min_angle: FloatProperty(
        name="Minimum Angle",
        description="Smallest triangle angle to reach [degrees] (where the outline allows it)",
        default=28.0,
        min=5.0,
        max=33.0,
    )

    def execute(self, context):
        obj = context.active_object
        if obj is None:
            self.report({"ERROR"}, "Make Simulation Mesh: no active object")
            return {"CANCELLED"}
        if context.mode != "OBJECT":
            self.report({"ERROR"}, "Switch to Object Mode first")
            return {"CANCELLED"}
        try:
            new, (before, after), deviation = remesh.make_sim_mesh(
                context, obj, self.edge_length, self.min_angle
            )
        except adapter.IPCError as err:
            self.report({"ERROR"}, str(err))
            return {"CANCELLED"}
        self.report(
            {"INFO"},
            f"'{new.name}': {len(new.data.polygons)} triangles, smallest angle {after:.1f}° "
            f"(was {before:.1f}°), outline "
            + (f"within {adapter.format_length(deviation)} of" if deviation > 1e-9 else "exactly as")
            + f" '{obj.name}' (hidden)",
        )
        return {"FINISHED"}


CLASSES = (
    IPC_OT_bake,
    IPC_OT_continue_bake,
    IPC_OT_bake_from_here,
    IPC_OT_cancel_bake,
    IPC_OT_stop_bake,
    IPC_OT_delete_bake,
    IPC_OT_add_example,
    IPC_OT_make_sim_mesh,
)
