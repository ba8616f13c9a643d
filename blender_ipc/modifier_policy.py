"""Which modifiers a deformable body may keep (issue 32, point 9), as Blender's own physics
does: the bake's shape keys deform the base mesh and the modifier stack applies on top of them,
so a modifier that adds detail for rendering (Subdivision Surface, Solidify, Bevel, ...) is
what the artist wants and stays. Refused: modifiers that move the vertices in the simulation
plane (Armature, Displace, Smooth, ...) or whose effect cannot be told (Geometry Nodes, ...):
the body would be drawn where it was not simulated, and the frames' contact guarantees would
not hold for what is drawn."""

from __future__ import annotations

# Kept: they add detail on top of the simulated outline (thickness, rounding, normals).
KEPT = {
    "SUBSURF": "Subdivision Surface",
    "SOLIDIFY": "Solidify",
    "BEVEL": "Bevel",
    "TRIANGULATE": "Triangulate",
    "WEIGHTED_NORMAL": "Weighted Normal",
    "NORMAL_EDIT": "Normal Edit",
    "EDGE_SPLIT": "Edge Split",
    "WIREFRAME": "Wireframe",
    "UV_PROJECT": "UV Project",
    "UV_WARP": "UV Warp",
    "DATA_TRANSFER": "Data Transfer",
}


def refused_modifier(obj, skip=None) -> str:
    """'' if every active modifier of obj may stay on top of its bake, else the message naming
    the first one that may not (skip: the add-on's own Mesh Cache modifier)."""
    for mod in obj.modifiers:
        if mod == skip or not (mod.show_viewport or mod.show_render) or mod.type in KEPT:
            continue
        kind = mod.type.replace("_", " ").title()
        return (
            f"'{obj.name}': modifier '{mod.name}' ({kind}) changes the body's shape in the "
            "simulation plane on top of the baked shape keys, so it would be drawn where it was "
            "not simulated; apply it before baking or disable it (Subdivision Surface, Solidify, "
            "Bevel and the like may stay)"
        )
    return ""
