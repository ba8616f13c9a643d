"""Which modifiers a deformable body keeps through a bake.

The bake writes shape keys, and shape keys deform the base mesh before any modifier: a
modifier that only adds detail, thickness or normals (Subdivision Surface, Solidify, Bevel,
...) applies on top of the baked motion, which is what an artist adds it for. The bake
simulates the flat base mesh. A modifier that changes the shape in the simulation plane
(Mirror, Array, Displace, Armature, ...) would make the rendered shape differ from the
simulated one (bodies would overlap or float apart on screen), so it is refused, by name.

An unselected body baked earlier is an obstacle of a Bake Selected: it is read from its
evaluated mesh, which must be the simulated mesh, so its detail modifiers are hidden while the
bake reads it (:func:`detail_hidden`) and shown again afterwards.
"""

from __future__ import annotations

import contextlib

import bpy

from .pc2 import cache_modifier

# Modifier types that keep the in-plane shape of a flat mesh (up to rounding of its corners)
# and only add detail, thickness, normals or UVs.
DETAIL_TYPES = frozenset(
    {
        "SUBSURF",
        "MULTIRES",
        "SOLIDIFY",
        "BEVEL",
        "TRIANGULATE",
        "WEIGHTED_NORMAL",
        "EDGE_SPLIT",
        "NORMAL_EDIT",
        "WIREFRAME",
        "UV_PROJECT",
        "UV_WARP",
    }
)
# Geometry-nodes modifiers known to change normals only (Blender 4.1+ adds "Smooth by Angle"
# for Shade Auto Smooth).
DETAIL_NODE_GROUPS = ("Smooth by Angle",)


def adds_detail_only(mod) -> bool:
    """Whether modifier mod applies on top of the baked shape without changing it in the plane."""
    if mod.type in DETAIL_TYPES:
        return True
    group = getattr(mod, "node_group", None) if mod.type == "NODES" else None
    return group is not None and group.name.startswith(DETAIL_NODE_GROUPS)


def type_label(mod) -> str:
    """The modifier's type as Blender's Add Modifier menu names it (e.g. 'Mirror')."""
    return bpy.types.Modifier.bl_rna.properties["type"].enum_items[mod.type].name


def shape_changing(obj) -> list:
    """The modifiers of body obj that are shown (viewport or render) and change its shape in
    the plane; the add-on's own Mesh Cache modifier (a bake stored as PC2) is not one."""
    own = cache_modifier(obj)
    return [
        m
        for m in obj.modifiers
        if (m.show_viewport or m.show_render) and m != own and not adds_detail_only(m)
    ]


@contextlib.contextmanager
def detail_hidden(objects):
    """Within the block, the detail modifiers of objects are off in the viewport (the evaluated
    mesh is the simulated mesh); they are shown again as they were, whatever happens."""
    hidden = [m for o in objects for m in o.modifiers if m.show_viewport and adds_detail_only(m)]
    for m in hidden:
        m.show_viewport = False
    try:
        yield
    finally:
        for m in hidden:
            m.show_viewport = True
