"""Operators and panel of the bake's other stores and files (logic in :mod:`exports`)."""

import bpy
from bpy.props import EnumProperty

from . import exports
from .common import IPCError
from .operators import _TARGET_ITEMS, RunningBake


def _baked(context, target):
    pool = context.selected_objects if target == "SELECTED" else list(context.view_layer.objects)
    return sorted((o for o in pool if o.type == "MESH" and o.ipc.is_baked), key=lambda o: o.name)


class _OnBakes:
    target: EnumProperty(name="Objects", items=_TARGET_ITEMS, default="SELECTED")

    @classmethod
    def poll(cls, context):
        return RunningBake.job is None and context.mode == "OBJECT"

    def execute(self, context):
        objs = _baked(context, self.target)
        if not objs:
            where = "selected objects" if self.target == "SELECTED" else "scene objects"
            self.report({"ERROR"}, f"No baked IPC body among the {where}")
            return {"CANCELLED"}
        try:
            text = self.run(context, objs)
        except IPCError as err:
            self.report({"ERROR"}, str(err))
            return {"CANCELLED"}
        self.report({"INFO"}, text)
        return {"FINISHED"}


class IPC_OT_store_pc2(_OnBakes, bpy.types.Operator):
    """Move the bake of the bodies from shape keys to PC2 files next to the .blend, played by a
    Mesh Cache modifier (a smaller .blend for long bakes); Delete Bake removes them"""

    bl_idname = "ipc.store_pc2"
    bl_label = "Store Bake as PC2"
    bl_options = {"REGISTER", "UNDO"}

    def run(self, context, objs):
        paths = exports.move_to_pc2(objs)
        return f"IPC: {len(paths)} bake(s) stored as PC2 in '{paths[0].parent}'" if paths else "Already PC2"


class IPC_OT_store_keys(_OnBakes, bpy.types.Operator):
    """Move the bake of the bodies from their PC2 files back into shape keys (Continue Bake needs
    them); the files and the Mesh Cache modifiers are removed"""

    bl_idname = "ipc.store_keys"
    bl_label = "Store Bake as Shape Keys"
    bl_options = {"REGISTER", "UNDO"}

    def run(self, context, objs):
        return f"IPC: {exports.move_to_keys(objs)} bake(s) moved back to shape keys"


class IPC_OT_export_bake(_OnBakes, bpy.types.Operator):
    """Write the baked bodies over their baked frames to an Alembic or USD file next to the
    .blend with Blender's own exporter (where this Blender build has it)"""

    bl_idname = "ipc.export_bake"
    bl_label = "Export Bake"
    bl_options = {"REGISTER"}

    format: EnumProperty(
        name="Format",
        items=[
            ("ALEMBIC", "Alembic", "Alembic (.abc)"),
            ("USD", "USD", "Universal Scene Description (.usdc)"),
        ],
        default="ALEMBIC",
    )

    def run(self, context, objs):
        path = exports.export_file(context, objs, self.format)
        return f"IPC: exported {len(objs)} bod{'y' if len(objs) == 1 else 'ies'} to '{path}'"


class IPC_PT_bake_files(bpy.types.Panel):
    bl_label = "Bake Files"
    bl_space_type = "PROPERTIES"
    bl_region_type = "WINDOW"
    bl_context = "physics"
    bl_parent_id = "IPC_PT_physics"
    bl_options = {"DEFAULT_CLOSED"}

    def draw(self, context):
        draw_files(self.layout, context)


class IPC_PT_sidebar_bake_files(bpy.types.Panel):
    bl_label = "Bake Files"
    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = "IPC"
    bl_parent_id = "IPC_PT_sidebar"
    bl_options = {"DEFAULT_CLOSED"}

    def draw(self, context):
        draw_files(self.layout, context)


def draw_files(layout, context):
    obj = context.object
    col = layout.column(align=True)
    if obj is not None and exports.is_stored_as_pc2(obj):
        col.label(text="Stored as PC2 cache", icon="FILE_CACHE")
        col.operator("ipc.store_keys", icon="SHAPEKEY_DATA")
    else:
        col.operator("ipc.store_pc2", icon="FILE_CACHE")
    row = layout.row(align=True)
    for fmt, label in (("ALEMBIC", "Alembic"), ("USD", "USD")):
        sub = row.row(align=True)
        sub.enabled = exports.available(fmt)
        sub.operator("ipc.export_bake", text=label, icon="EXPORT").format = fmt
    if not (exports.available("ALEMBIC") and exports.available("USD")):
        layout.label(text="This Blender build lacks an exporter", icon="INFO")
    layout.operator("ipc.bake_wedge", icon="RENDERLAYERS")


OPERATORS = (IPC_OT_store_pc2, IPC_OT_store_keys, IPC_OT_export_bake)
PANELS = (IPC_PT_bake_files, IPC_PT_sidebar_bake_files)
