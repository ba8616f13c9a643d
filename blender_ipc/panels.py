"""Panels in Properties > Physics and in the 3D view sidebar (tab "IPC")."""

import textwrap

import bpy

from . import adapter, frame_motion, link_ui, presets, remesh
from .operators import RunningBake, _progress_text


def draw_object(layout, context, obj):
    s = obj.ipc
    layout.prop(s, "role")
    if s.role == "NONE":
        return
    problem = adapter.role_problem(obj)  # e.g. a text or curve object as a deformable body
    if problem:
        draw_problem(layout, context, obj, problem)
    col = layout.column(align=True)
    if s.role == "BODY":
        draw_material(col, s)
    else:
        col.prop(s, "friction")
    if s.role == "BODY" and obj.type == "MESH":
        draw_body_mesh(layout, context, obj)
    link_ui.draw_groups(layout, obj)
    if s.is_baked:
        box = layout.box()
        box.label(text=bake_range_text(s), icon="CHECKMARK")
        if adapter.is_outdated_cached(context, obj):
            box.label(text="Outdated: inputs changed since the bake", icon="ERROR")
        if s.bake_message:
            box.label(text=s.bake_message, icon="ERROR")


def draw_problem(layout, context, obj, problem):
    box = layout.box().column(align=True)
    for i, line in enumerate(textwrap.wrap(problem, 48)):
        box.label(text=line, icon="ERROR" if i == 0 else "BLANK1")
    if "Make Simulation Mesh" in problem and obj == context.active_object:
        box.operator("ipc.make_sim_mesh", icon="MESH_DATA")


def draw_material(col, s):
    """A body's type (with the presets' button), elasticity, density, kinetic and (optional)
    static friction."""
    row = col.row(align=True)
    row.prop(s, "body_type")
    presets.draw_button(row)
    if s.body_type == "STIFF":
        col.prop(s, "modes")
    col.prop(s, "youngs_modulus")
    col.prop(s, "poisson_ratio")
    col.prop(s, "density")
    col.prop(s, "friction")
    row = col.row(align=True)
    row.prop(s, "use_static_friction", text="")
    sub = row.row(align=True)
    sub.active = s.use_static_friction
    sub.prop(s, "static_friction")


def draw_body_mesh(layout, context, obj):
    """What only a mesh body has: start motion, pinned and stiffness groups, mesh quality."""
    s = obj.ipc
    col = layout.column(align=True)
    col.prop(s, "initial_velocity")
    col.prop(s, "initial_angular_velocity")
    layout.prop_search(s, "pin_group", obj, "vertex_groups")
    link_ui.draw_pins(layout, obj)
    layout.prop_search(s, "stiffness_group", obj, "vertex_groups")
    if s.stiffness_group:
        row = layout.row(align=True)
        row.prop(s, "stiffness_min", text="Min")
        row.prop(s, "stiffness_max", text="Max")
    quality = remesh.mesh_quality(context, obj)  # cached; None in Edit Mode
    if quality is not None and quality < remesh.POOR_MIN_ANGLE:
        row = layout.row()
        row.label(text=f"Mesh has slivers (min angle {quality:.0f}°):", icon="INFO")
        row.operator("ipc.make_sim_mesh", text="Make Simulation Mesh")


def bake_range_text(s) -> str:
    """The object's baked frames; for a bake stopped before its end frame (Stop and Keep, or a
    solver failure with the partial bake kept) also the range it was started for."""
    state = "partial bake" if s.bake_partial else "baked"
    text = f"{state}: frames {s.bake_frame_start}-{s.bake_frame_end}"
    if s.bake_frame_goal > s.bake_frame_end:
        text += f" of {s.bake_frame_start}-{s.bake_frame_goal}"
        if not s.bake_partial:
            text += " (stopped)"
    return text


def draw_scene(layout, context):
    s = context.scene.ipc
    col = layout.column()
    col.prop(s, "plane")
    col.prop(s, "use_frame_range")
    if s.use_frame_range:
        row = col.row(align=True)
        row.prop(s, "frame_start")
        row.prop(s, "frame_end")
    col.prop(s, "substeps")
    col.prop(s, "refine_crossing_frames")
    col.prop(s, "use_deactivation")
    col.label(text=f"Time step: {adapter.sim_dt(context.scene) * 1000:.3g} ms")
    col.prop(s, "use_scene_gravity")
    if not s.use_scene_gravity:
        col.prop(s, "gravity")
    col.prop(s, "use_ground")
    if s.use_ground:
        row = col.row(align=True)
        row.prop(s, "ground_height")
        row.prop(s, "ground_friction")
    col.prop(s, "keep_partial")
    col.prop(s, "state_every")


def draw_advanced(layout, context):
    """The solver's internals: contact gap and stiffness, formulation, friction smoothing,
    Newton's tolerances (closed by default, as Blender's own physics panels keep theirs)."""
    s = context.scene.ipc
    col = layout.column()
    col.prop(s, "dhat_mode")
    col.prop(s, "dhat_relative" if s.dhat_mode == "RELATIVE" else "dhat")
    col.prop(s, "kappa_auto")
    if not s.kappa_auto:
        col.prop(s, "kappa")
    col.prop(s, "formulation")
    col.prop(s, "eps_v")
    col.prop(s, "friction_mollifier")
    col.prop(s, "friction_updates")
    col.prop(s, "newton_tol")
    col.prop(s, "force_tol")
    col.prop(s, "max_newton_iters")


def draw_bake(layout, context):
    s = context.scene.ipc
    job = RunningBake.job
    if job is not None:
        layout.label(text=_progress_text(job), icon="TIME")
        row = layout.row(align=True)
        row.operator("ipc.stop_bake", icon="PAUSE")
        row.operator("ipc.cancel_bake", icon="CANCEL")
        return
    row = layout.row(align=True)
    row.operator("ipc.bake", icon="PHYSICS")
    row.operator("ipc.delete_bake", icon="TRASH")
    obj = context.object
    end = adapter.frame_range(context.scene)[1]
    if obj is not None and obj.ipc.is_baked and not obj.ipc.bake_partial and obj.ipc.bake_frame_end < end:
        # the frame range was extended after the bake: continue it from its last frame
        layout.operator("ipc.continue_bake", text=f"Continue Bake to Frame {end}", icon="PLAY")
    now = context.scene.frame_current
    if obj is not None and obj.ipc.is_baked and obj.ipc.bake_frame_start < now <= obj.ipc.bake_frame_end:
        layout.operator("ipc.bake_from_here", text=f"Bake from Frame {now}", icon="FRAME_NEXT")
    n = adapter.unselected_bodies(context)
    if n:
        layout.label(text=f"{n} unselected bod{'y' if n == 1 else 'ies'}: obstacles, not baked", icon="INFO")
    if s.stat_frames:
        box = layout.box()
        box.label(text=f"Last bake: {s.stat_frames} frames in {s.stat_wall_time:.1f} s")
        box.label(text=f"Newton iterations: {s.stat_newton_iters}")
        if s.stat_states:
            box.label(text=f"Stored solver states: {s.stat_states}, {s.stat_state_bytes / 1024:.0f} kB each")
        draw_distances(box, s)
        frame_motion.draw_report(box, s)
        if s.stat_message:
            box.label(text=s.stat_message, icon="ERROR")


def smallest_distance(s):
    """The last bake's smallest distance [m], or None if nothing came within range: the smaller
    of the solver's contact distance and the distance to the colliders at their ANIMATED
    positions, so an overlap with a collider that lagged behind its animation shows (negative)
    even though the solver's own gap stayed positive."""
    values = [s.stat_min_distance] if s.stat_min_distance >= 0 else []
    if s.stat_collider_near:
        values.append(s.stat_collider_distance)
    return min(values) if values else None


def draw_distances(box, s):
    d = smallest_distance(s)
    if d is None:
        box.label(text="Smallest distance: none in range")
    elif d < 0:
        box.label(text=f"Smallest distance: {adapter.format_length(d)} (overlap)", icon="ERROR")
    else:
        box.label(text=f"Smallest distance: {adapter.format_length(d)}")
    for c in s.stat_colliders:
        if c.overlap_frames:
            box.label(
                text=f"Overlap {adapter.format_length(-c.distance)} with {c.name} "
                f"at frames {c.overlap_frames}",
                icon="ERROR",
            )
        if c.lag_frames:
            box.label(
                text=f"{c.name} lags its animation by up to {adapter.format_length(c.lag)} "
                f"(frames {c.lag_frames})",
                icon="ERROR",
            )
    if s.stat_warning:
        box.label(text="Key the collider to stop higher, or make the bodies softer", icon="INFO")


class _PhysicsTab:
    """Properties editor, Physics tab."""

    bl_space_type = "PROPERTIES"
    bl_region_type = "WINDOW"
    bl_context = "physics"


class _SidebarTab:
    """3D view sidebar (N), tab "IPC"."""

    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = "IPC"


class _SceneSettings:
    bl_label = "Scene Settings"
    bl_options = {"DEFAULT_CLOSED"}

    def draw(self, context):
        draw_scene(self.layout, context)


class _Advanced:
    bl_label = "Advanced"
    bl_options = {"DEFAULT_CLOSED"}

    def draw(self, context):
        draw_advanced(self.layout, context)


class IPC_PT_physics(_PhysicsTab, bpy.types.Panel):
    bl_label = "IPC 2D Simulation"

    @classmethod
    def poll(cls, context):
        return context.object is not None

    def draw(self, context):
        draw_object(self.layout, context, context.object)
        draw_bake(self.layout, context)


class IPC_PT_physics_scene(_SceneSettings, _PhysicsTab, bpy.types.Panel):
    bl_parent_id = "IPC_PT_physics"


class IPC_PT_physics_advanced(_Advanced, _PhysicsTab, bpy.types.Panel):
    bl_parent_id = "IPC_PT_physics"


class IPC_PT_sidebar(_SidebarTab, bpy.types.Panel):
    bl_label = "IPC 2D Simulation"

    def draw(self, context):
        if context.object is not None:
            draw_object(self.layout, context, context.object)
        draw_bake(self.layout, context)
        self.layout.operator("ipc.add_example", icon="ADD")


class IPC_PT_sidebar_scene(_SceneSettings, _SidebarTab, bpy.types.Panel):
    bl_parent_id = "IPC_PT_sidebar"


class IPC_PT_sidebar_advanced(_Advanced, _SidebarTab, bpy.types.Panel):
    bl_parent_id = "IPC_PT_sidebar"


CLASSES = (
    IPC_PT_physics,
    IPC_PT_physics_scene,
    IPC_PT_physics_advanced,
    IPC_PT_sidebar,
    IPC_PT_sidebar_scene,
    IPC_PT_sidebar_advanced,
)
