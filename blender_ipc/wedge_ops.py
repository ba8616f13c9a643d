"""The panel's wedge: one setting, a list of values, a bake of each to its own .blend and a
contact sheet (logic in :mod:`wedges`)."""

from pathlib import Path

import bpy
from bpy.props import EnumProperty, StringProperty

from . import wedges
from .common import IPCError
from .operators import RunningBake

_SETTINGS = [
    ("friction", "Friction", "Friction of every body and collider"),
    ("youngs_modulus", "Young's Modulus", "Young's modulus of every body"),
    ("poisson_ratio", "Poisson Ratio", "Poisson ratio of every body"),
    ("density", "Density", "Density of every body"),
    ("substeps", "Substeps", "Time steps per frame"),
    ("dhat_relative", "Contact Gap (relative)", "Contact gap relative to the bodies' size"),
    ("kappa", "Barrier Stiffness", "Barrier stiffness (with Automatic Stiffness off)"),
    ("eps_v", "Friction \u03b5v", "Static friction velocity threshold"),
    ("ground_friction", "Ground Friction", "Friction of the ground line"),
]


class IPC_OT_bake_wedge(bpy.types.Operator):
    """Bake the scene once per value of one setting, each to its own .blend named after the value,
    and draw a contact sheet of their last frames; the open file is left as saved"""

    bl_idname = "ipc.bake_wedge"
    bl_label = "Bake Wedge"
    bl_options = {"REGISTER"}  # no undo step: it opens files

    setting: EnumProperty(name="Setting", items=_SETTINGS, default="friction")
    values: StringProperty(name="Values", default="0.1, 0.5, 0.9", description="Comma-separated values")
    directory: StringProperty(
        name="Folder",
        subtype="DIR_PATH",
        default="",
        description="Where the variants go (empty: '<blend name>_wedge' next to the .blend)",
    )

    @classmethod
    def poll(cls, context):
        return RunningBake.job is None and context.mode == "OBJECT"

    def invoke(self, context, event):
        return context.window_manager.invoke_props_dialog(self)

    def execute(self, context):
        source = bpy.data.filepath
        # (unsaved changes would be lost when the saved file is opened again; headless, where
        # the bpy module reports every file as changed, scripts save explicitly)
        if not source or (bpy.data.is_dirty and not bpy.app.background):
            self.report({"ERROR"}, "Save the .blend first: every variant starts from the saved file")
            return {"CANCELLED"}
        folder = self.directory or str(Path(source).with_name(f"{Path(source).stem}_wedge"))
        try:
            setting = wedges.parse_setting(f"{self.setting}={self.values}")
            result = wedges.run(source, [setting], bpy.path.abspath(folder))
        except IPCError as err:
            _reopen(source)
            self.report({"ERROR"}, str(err))
            return {"CANCELLED"}
        _reopen(source)
        self.report({"INFO"}, f"IPC: baked {len(result.files)} variants to '{result.sheet.parent}'")
        return {"FINISHED"}


def _reopen(source):
    """The artist's file as saved (the last variant is open after the wedge)."""
    bpy.ops.wm.open_mainfile(filepath=source)


OPERATORS = (IPC_OT_bake_wedge,)
