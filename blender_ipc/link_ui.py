"""Links in the interface (issue 32, point 1), as Blender's Rigid Body Constraint: the link
settings of an Empty (``Object.ipc_link``), its panel "IPC Link" in Properties > Physics, and
"Add IPC Link", which puts an Empty carrying a link between the two selected bodies."""

import bpy
from bpy.props import BoolProperty, EnumProperty, FloatProperty, PointerProperty

from . import links
from .common import PLANE_AXES


def _is_body(_self, obj):
    return obj.ipc.role == "BODY" and obj.type == "MESH"


def _is_anchor(self, obj):
    return obj != self.id_data and not links.is_link(obj)


def _anchor_property(k):
    """Anchor k: the object whose start-frame location is the Spring's or Rope's end on
    Object k (empty: Object k's Origin)."""
    return PointerProperty(
        name=f"Anchor {k}",
        type=bpy.types.Object,
        poll=_is_anchor,
        description=f"Spring and Rope: where the link holds Object {k}, this object's location at "
        f"the start frame (Add Anchors puts an Empty there); empty: Object {k}'s Origin",
    )


class IPC_LinkSettings(bpy.types.PropertyGroup):
    kind: EnumProperty(
        name="Type",
        description="What the link does (as a Rigid Body Constraint's type)",
        default="NONE",
        items=[
            ("NONE", "None", "No link"),
            ("PIN", "Pin", "Hinge: the bodies' points at the Empty are held together, free to turn"),
            ("WELD", "Weld", "The bodies are glued at the Empty: no relative turning either"),
            ("SPRING", "Spring", "A spring with a rest length, stiffness and damping between the anchors"),
            ("ROPE", "Rope", "A maximum distance between the anchors: slack when shorter"),
        ],
    )
    object1: PointerProperty(
        name="Object 1", type=bpy.types.Object, poll=_is_body, description="First deformable body"
    )
    object2: PointerProperty(
        name="Object 2",
        type=bpy.types.Object,
        poll=_is_body,
        description="Second deformable body; empty: Object 1 is held to this Empty (animate the "
        "Empty to drag it)",
    )
    anchor1: _anchor_property(1)
    anchor2: _anchor_property(2)
    stiffness: FloatProperty(
        name="Stiffness", description="Spring stiffness [N/m]", default=100.0, min=0.0, soft_max=1e5
    )
    damping: FloatProperty(
        name="Damping",
        description="Damping on the rate of change of the spring's length [N s/m]",
        default=0.0,
        min=0.0,
        soft_max=1e3,
    )
    use_length: BoolProperty(
        name="Custom Length",
        description="Use Length instead of the ends' distance at the start frame",
        default=False,
    )
    length: FloatProperty(
        name="Length",
        description="The spring's rest length or the rope's maximum length [m]",
        default=1.0,
        min=0.0,
        unit="LENGTH",
    )
    breakable: BoolProperty(
        name="Breakable", description="The link is gone once its force exceeds the threshold", default=False
    )
    break_threshold: FloatProperty(
        name="Threshold",
        description="Force above which the link breaks [N]",
        default=10.0,
        min=1e-6,
        soft_max=1e5,
    )
    collide: BoolProperty(
        name="Collide Linked Bodies",
        description="The two linked bodies still collide with each other (off: they may overlap)",
        default=False,
    )


def draw_link(layout, obj):
    """The panel, laid out as Blender's Rigid Body Constraint panel."""
    s = obj.ipc_link
    layout.use_property_split = True
    layout.prop(s, "kind")
    if s.kind == "NONE":
        return
    problem = links.link_problem(obj)
    if problem:
        layout.label(text=problem.split(": ", 1)[-1], icon="ERROR")
    col = layout.column(align=True)
    col.prop(s, "object1")
    col.prop(s, "object2")
    layout.prop(s, "collide")
    if s.kind in {"SPRING", "ROPE"}:
        col = layout.column(align=True)
        col.prop(s, "anchor1")
        sub = col.column()
        sub.active = s.object2 is not None
        sub.prop(s, "anchor2")
        if s.anchor1 is None or (s.object2 is not None and s.anchor2 is None):
            col.operator("ipc.add_link_anchors", icon="EMPTY_AXIS")
        col = layout.column(align=True)
        if s.kind == "SPRING":
            col.prop(s, "stiffness")
            col.prop(s, "damping")
        col.prop(s, "use_length")
        sub = col.column()
        sub.active = s.use_length
        sub.prop(s, "length")
    col = layout.column(align=True, heading="Breakable")
    col.prop(s, "breakable", text="")
    sub = col.column()
    sub.active = s.breakable
    sub.prop(s, "break_threshold")


def draw_pins(layout, obj):
    """Pin Strength, Pull Stiffness and Engaged under the Pinned Group (object panel)."""
    s = obj.ipc
    if not s.pin_group:
        return
    col = layout.column(align=True)
    col.prop(s, "pin_strength", expand=True)
    if s.pin_strength == "PULL":
        col.prop(s, "pin_stiffness")
    col.prop(s, "pin_engaged")
    problem = links.pin_problem(obj)
    if problem:
        layout.label(text=problem.split(": ", 1)[-1], icon="ERROR")


def draw_groups(layout, obj):
    """The 20 Collision Groups, as Rigid Body's Collision Collections."""
    layout.label(text="Collision Groups")
    layout.prop(obj.ipc, "collision_groups", text="")


class IPC_PT_link(bpy.types.Panel):
    bl_label = "IPC Link"
    bl_space_type = "PROPERTIES"
    bl_region_type = "WINDOW"
    bl_context = "physics"

    @classmethod
    def poll(cls, context):
        return context.object is not None and context.object.type == "EMPTY"

    def draw(self, context):
        draw_link(self.layout, context.object)


class IPC_OT_add_link(bpy.types.Operator):
    """Add an Empty carrying an IPC link between the two selected deformable bodies (the
    active one is Object 1), or holding the selected body to the Empty"""

    bl_idname = "ipc.add_link"
    bl_label = "Add IPC Link"
    bl_options = {"REGISTER", "UNDO"}

    kind: EnumProperty(
        name="Type",
        items=[(k, links.TYPE_NAMES[k], "") for k in ("PIN", "WELD", "SPRING", "ROPE")],
        default="PIN",
    )

    def execute(self, context):
        if context.mode != "OBJECT":
            self.report({"ERROR"}, "Switch to Object Mode first")
            return {"CANCELLED"}
        bodies = [o for o in context.selected_objects if _is_body(None, o)]
        active = context.active_object
        if active in bodies:
            bodies.remove(active)
            bodies.insert(0, active)
        if not 1 <= len(bodies) <= 2:
            self.report(
                {"ERROR"}, f"Add IPC Link: select one or two deformable bodies ({len(bodies)} selected)"
            )
            return {"CANCELLED"}
        empty = bpy.data.objects.new(f"IPC_Link_{bodies[0].name}", None)
        empty.empty_display_type = "ARROWS" if self.kind in {"PIN", "WELD"} else "PLAIN_AXES"
        empty.empty_display_size = 0.1
        empty.location = _between(context, bodies)
        context.collection.objects.link(empty)
        s = empty.ipc_link
        s.kind, s.object1 = self.kind, bodies[0]
        if len(bodies) == 2:
            s.object2 = bodies[1]
        self.report({"INFO"}, f"Added '{empty.name}': {links.TYPE_NAMES[self.kind]} link")
        return {"FINISHED"}


class IPC_OT_add_link_anchors(bpy.types.Operator):
    """Put an Empty on each end of the active Spring or Rope that has no Anchor yet (at its
    body's Origin, parented to the body): move them to where the link should hold"""

    bl_idname = "ipc.add_link_anchors"
    bl_label = "Add Anchors"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        obj = context.object
        return obj is not None and links.is_link(obj) and obj.ipc_link.kind in {"SPRING", "ROPE"}

    def execute(self, context):
        empty = context.object
        s = empty.ipc_link
        added = []
        for k, body in ((1, s.object1), (2, s.object2)):
            if body is None or getattr(s, f"anchor{k}") is not None:
                continue
            anchor = bpy.data.objects.new(f"{empty.name}_Anchor{k}", None)
            anchor.empty_display_type, anchor.empty_display_size = "SPHERE", 0.02
            context.collection.objects.link(anchor)
            anchor.location = body.matrix_world.translation
            anchor.parent = body  # it follows the body as the artist moves it before baking
            anchor.matrix_parent_inverse = body.matrix_world.inverted()
            setattr(s, f"anchor{k}", anchor)
            added.append(anchor.name)
        if not added:
            self.report({"ERROR"}, f"IPC link '{empty.name}': every end already has an Anchor")
            return {"CANCELLED"}
        self.report({"INFO"}, f"Added {', '.join(added)}: move them to where the link holds")
        return {"FINISHED"}


def _between(context, bodies):
    """Where the new Empty goes: halfway between the bodies' Origins (on the one body's Origin),
    in the simulation plane's out-of-plane position of the first."""
    locs = [o.matrix_world.translation.copy() for o in bodies]
    mid = sum(locs[1:], locs[0]) / len(locs)
    w = PLANE_AXES[context.scene.ipc.plane][2]
    mid[w] = locs[0][w]
    return mid


CLASSES = (IPC_LinkSettings, IPC_OT_add_link, IPC_OT_add_link_anchors, IPC_PT_link)


def draw_menu(menu, _context):
    """Object > Add IPC Link, with its types (as Object > Rigid Body > Connect)."""
    menu.layout.separator()
    menu.layout.operator_menu_enum("ipc.add_link", "kind", text="Add IPC Link")


def attach():
    bpy.types.Object.ipc_link = PointerProperty(type=IPC_LinkSettings)
    bpy.types.VIEW3D_MT_object.append(draw_menu)


def detach():
    bpy.types.VIEW3D_MT_object.remove(draw_menu)
    del bpy.types.Object.ipc_link
