"""Operators: they read properties, call the adapter and report. No physics here."""

import bpy
from bpy.props import EnumProperty, FloatProperty, IntProperty

from . import adapter, examples, remesh, signature

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
    cancel_reason = ""

    @classmethod
    def start(cls, context, target):
        """Read the scene and set up the solver; raises adapter.IPCError. Scene unchanged."""
        cls.job, cls.cancel_requested = adapter.BakeJob(context, target), False
        return cls.job

    @classmethod
    def tick(cls, budget):
        """Compute frames for about `budget` seconds; returns True when done."""
        return cls.job.step(budget)

    @classmethod
    def cancel(cls):
        """Drop the job: nothing was written, so the scene is exactly as before."""
        cls.job, cls.cancel_requested, cls.cancel_reason = None, False, ""

    @classmethod
    def request_cancel(cls, reason=""):
        if cls.job is not None:
            cls.cancel_requested, cls.cancel_reason = True, reason

    @classmethod
    def take(cls):
        job, cls.job = cls.job, None
        return job


@bpy.app.handlers.persistent
def _stop_on_data_reload(*_args):
    """Undo, redo and file loads replace the data a running bake read (its objects and scene
    would dangle, and its inputs may no longer be what the user sees): the modal bake stops at
    its next event, before computing or writing anything more."""
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
        f"{job.elapsed():.0f} s elapsed, about {eta_txt} left (Esc to cancel)"
    )


def _status(context, text):
    if context.workspace is not None:
        context.workspace.status_text_set(text)


# The regions that draw the panel (Properties editor, 3D view sidebar). Tagging whole areas
# would redraw the 3D viewport itself after every chunk: nothing changes there during the bake,
# and with software OpenGL that redraw costs far more than the chunk (~0.5 s vs 0.1 s).
_PANEL_REGIONS = {("PROPERTIES", "WINDOW"), ("VIEW_3D", "UI")}


def _tag_redraw(context, whole_areas=False):
    """Panel regions after each chunk; whole Properties / 3D view areas when the bake ends."""
    for window in getattr(context.window_manager, "windows", ()):
        for area in window.screen.areas:
            if whole_areas and area.type in {"PROPERTIES", "VIEW_3D"}:
                area.tag_redraw()
                continue
            for region in area.regions:
                if (area.type, region.type) in _PANEL_REGIONS:
                    region.tag_redraw()


class IPC_OT_bake(bpy.types.Operator):
    """Simulate the deformable bodies and bake the result into shape keys"""

    bl_idname = "ipc.bake"
    bl_label = "Bake IPC Simulation"
    bl_options = {"REGISTER", "UNDO"}

    target: EnumProperty(name="Bake", items=_TARGET_ITEMS, default="SELECTED")
    time_budget_ms: IntProperty(
        name="Time Budget",
        default=100,
        min=10,
        description="Computation per UI update in the modal bake [ms]",
    )

    @classmethod
    def poll(cls, context):
        return RunningBake.job is None

    def _start(self, context):
        try:
            return adapter.BakeJob(context, self.target)
        except adapter.IPCError as err:
            self.report({"ERROR"}, str(err))
            return None

    def _finish(self, context, job):
        keep = context.scene.ipc.keep_partial
        written = job.finish(keep_partial=keep)
        warning = job.warning if written else ""
        if job.failure:
            if warning:
                self.report({"WARNING"}, warning)
            note = " (frames up to the failure were kept)" if written else " (nothing was changed)"
            self.report({"ERROR"}, job.failure + note)
            return {"FINISHED"} if written else {"CANCELLED"}
        if job.note:
            self.report({"INFO"}, job.note)
        self.report({"INFO"}, f"IPC: baked {job.n_frames} frames in {job.stats.wall_time:.1f} s")
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
            job = RunningBake.start(context, self.target)
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
        if event.type != "TIMER":
            return {"PASS_THROUGH"}
        done = RunningBake.tick(self.time_budget_ms / 1000.0)
        job = RunningBake.job
        context.window_manager.progress_update(job.frames_done)
        _status(context, _progress_text(job))
        _tag_redraw(context)
        if not done:
            return {"RUNNING_MODAL"}
        self._end_modal(context)
        return self._finish(context, RunningBake.take())


class IPC_OT_cancel_bake(bpy.types.Operator):
    """Stop the running bake and leave the scene as it was"""

    bl_idname = "ipc.cancel_bake"
    bl_label = "Cancel Bake"

    @classmethod
    def poll(cls, context):
        return RunningBake.job is not None

    def execute(self, context):
        RunningBake.cancel_requested = True
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
        for obj in baked:
            adapter.delete_bake(obj)
        adapter.clear_stats_if_gone(context)
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
            new, (before, after) = remesh.make_sim_mesh(context, obj, self.edge_length, self.min_angle)
        except adapter.IPCError as err:
            self.report({"ERROR"}, str(err))
            return {"CANCELLED"}
        self.report(
            {"INFO"},
            f"'{new.name}': {len(new.data.polygons)} triangles, smallest angle {after:.1f}° "
            f"(was {before:.1f}°); '{obj.name}' hidden",
        )
        return {"FINISHED"}


CLASSES = (IPC_OT_bake, IPC_OT_cancel_bake, IPC_OT_delete_bake, IPC_OT_add_example, IPC_OT_make_sim_mesh)
