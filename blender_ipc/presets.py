"""Body presets (issue 34), offered as Blender's physics panels offer theirs: a preset button
next to the body's Type opens a list of the built-in presets, the artist's own presets (saved
with Blender's preset mechanism under ``presets/ipc_body`` in the user's scripts folder) and a
field to add the current settings as a new preset; each preset of the artist's has a button to
remove it.

A preset sets a body's Type, elasticity, density and kinetic and static friction. The built-in
ones are data (:data:`BODY_PRESETS`, one line each: a new body Type's preset is one more line);
their values are physically sensible and simulation-friendly: stiffnesses soft enough for a 2D
Newton solve at ordinary time steps (a real metal's 2e11 Pa would only slow the solve of a body
that looks rigid anyway), densities in kg/m² as for a slab 1 m thick (only the ratios between
bodies matter for the look), friction from handbook ranges of each material on itself.
"""

from dataclasses import dataclass

import bpy
from bl_operators.presets import AddPresetBase
from bl_ui.utils import PresetPanel

SUBDIR = "ipc_body"  # the user's presets: <user scripts>/presets/ipc_body/*.py


@dataclass(frozen=True)
class BodyPreset:
    """What a preset sets (static_friction None: off, the same as friction)."""

    label: str
    body_type: str
    youngs_modulus: float
    poisson_ratio: float
    density: float
    friction: float
    static_friction: float | None
    description: str


# fmt: off
BODY_PRESETS = {
    # key: BodyPreset(label, Type, E [Pa], nu, density [kg/m^2], kinetic mu, static mu, tooltip)
    "RUBBER": BodyPreset("Rubber", "DEFORMABLE", 1e6, 0.45, 1100.0, 0.8, 1.0, "Bouncy, grips hard"),
    "JELLY": BodyPreset("Jelly", "DEFORMABLE", 1e4, 0.45, 1000.0, 0.3, None, "Very soft and wobbly"),
    "FOAM": BodyPreset("Foam", "DEFORMABLE", 5e4, 0.10, 100.0, 0.6, 0.8, "Soft, light, squashes flat"),
    "PLUSH": BodyPreset("Plush Toy", "DEFORMABLE", 2e4, 0.30, 200.0, 0.7, 0.9, "Soft, light, grippy"),
    "PLASTIC": BodyPreset("Plastic", "DEFORMABLE", 1e7, 0.35, 1200.0, 0.3, 0.4, "Fairly stiff, slippery"),
    "CARDBOARD": BodyPreset("Cardboard", "DEFORMABLE", 2e7, 0.30, 150.0, 0.4, 0.5, "Light and stiff-ish"),
    "WOOD": BodyPreset("Wood", "DEFORMABLE", 1e8, 0.30, 700.0, 0.4, 0.5, "Stiff, light"),
    "WOOD_PROP": BodyPreset("Wooden Prop", "RIGID", 1e8, 0.30, 700.0, 0.4, 0.5, "Rigid: a crate, a block"),
    "PLASTIC_PROP": BodyPreset("Plastic Prop", "RIGID", 1e7, 0.35, 1200.0, 0.3, 0.4, "Rigid: a toy brick"),
    "METAL_PROP": BodyPreset("Metal Prop", "RIGID", 1e8, 0.30, 7800.0, 0.4, 0.6, "Rigid, heavy: a can"),
    "STONE": BodyPreset("Stone", "RIGID", 1e8, 0.25, 2600.0, 0.6, 0.7, "Rigid, heavy, rough"),
    "ICE": BodyPreset("Ice", "RIGID", 1e8, 0.30, 917.0, 0.03, 0.1, "Rigid and very slippery"),
    "BENDY_BOARD": BodyPreset("Bendy Board", "STIFF", 2e6, 0.30, 600.0, 0.4, 0.5, "Stiff: bends as a whole"),
}
# fmt: on

# the Object.ipc settings a preset writes (the artist's preset files too)
FIELDS = (
    "body_type",
    "youngs_modulus",
    "poisson_ratio",
    "density",
    "friction",
    "use_static_friction",
    "static_friction",
)


def apply(settings, key):
    """Write the built-in preset ``key`` into an object's ipc settings."""
    p = BODY_PRESETS[key]
    settings.body_type = p.body_type
    settings.youngs_modulus, settings.poisson_ratio, settings.density = (
        p.youngs_modulus,
        p.poisson_ratio,
        p.density,
    )
    settings.friction = p.friction
    settings.use_static_friction = p.static_friction is not None
    if p.static_friction is not None:
        settings.static_friction = p.static_friction


def _is_body(context):
    obj = context.object
    return obj is not None and obj.ipc.role == "BODY"


class IPC_OT_body_preset_apply(bpy.types.Operator):
    """Set the active body's Type, material and friction to a built-in preset"""

    bl_idname = "ipc.body_preset_apply"
    bl_label = "Apply Body Preset"
    bl_options = {"REGISTER", "UNDO", "INTERNAL"}

    preset: bpy.props.EnumProperty(
        name="Preset",
        items=[(k, p.label, p.description) for k, p in BODY_PRESETS.items()],
    )

    @classmethod
    def poll(cls, context):
        return _is_body(context)

    def execute(self, context):
        apply(context.object.ipc, self.preset)
        IPC_PT_body_presets.bl_label = BODY_PRESETS[self.preset].label
        return {"FINISHED"}


class IPC_OT_body_preset_add(AddPresetBase, bpy.types.Operator):
    """Add the active body's Type, material and friction as a preset, or remove a preset"""

    bl_idname = "ipc.body_preset_add"
    bl_label = "Add Body Preset"
    preset_menu = "IPC_PT_body_presets"
    preset_subdir = SUBDIR
    preset_defines = ["s = bpy.context.object.ipc"]
    preset_values = [f"s.{name}" for name in FIELDS]

    @classmethod
    def poll(cls, context):
        return _is_body(context)


class IPC_PT_body_presets(PresetPanel, bpy.types.Panel):
    """The preset list (a popover, drawn by :func:`draw_button`)."""

    bl_label = "Body Presets"
    preset_subdir = SUBDIR
    preset_operator = "script.execute_preset"
    preset_add_operator = "ipc.body_preset_add"
    preset_extensions = {".py"}

    def draw(self, context):
        layout = self.layout
        layout.emboss = "PULLDOWN_MENU"
        layout.operator_context = "EXEC_DEFAULT"
        col = layout.column(align=True)
        for key, p in BODY_PRESETS.items():
            col.operator("ipc.body_preset_apply", text=p.label).preset = key
        layout.separator()
        if bpy.utils.preset_paths(SUBDIR):  # the artist's own (each removable), the add field
            bpy.types.Menu.draw_preset(self, context)
            return
        row = layout.row()  # none yet: only the add field
        sub = row.row()
        sub.emboss = "NORMAL"
        wm = context.window_manager
        sub.prop(wm, "preset_name", text="")
        row.operator(self.preset_add_operator, text="", icon="ADD").name = wm.preset_name


def draw_button(layout):
    """The preset button (as Blender's physics panels show theirs)."""
    layout.popover(panel="IPC_PT_body_presets", icon="PRESET", text="")


CLASSES = (IPC_OT_body_preset_apply, IPC_OT_body_preset_add, IPC_PT_body_presets)
