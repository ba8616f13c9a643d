"""blender-ipc: simulate flat 2D elastic meshes with Incremental Potential Contact and bake the
result into absolute shape keys.

Layers: ``solver`` (embedded copy of the numpy solver, added by build_addon.py) ->
adapter modules (``reading``: objects -> solver arrays and messages; ``colliders``: collider
sampling and lag reports; ``signature``: the outdated check; ``shape_keys``: writing the bake;
``bake_job``: the bake in progress; ``adapter`` re-exports them) -> ``operators`` / ``panels`` /
``properties`` (UI only).

Headless bake of a saved file (the add-on must be enabled, or installed and enabled with
``--addons blender_ipc`` for a legacy install)::

    blender -b scene.blend --python-exit-code 1 \
        --python-expr "import bpy; bpy.ops.ipc.bake(target='SCENE'); bpy.ops.wm.save_mainfile()"

or, with the module importable, ``blender_ipc.bake_cli(output=...)`` which raises on failure.
"""

bl_info = {
    "name": "IPC 2D Simulation",
    "author": "blender-ipc team",
    "version": (0, 1, 0),
    "blender": (3, 4, 0),
    "location": "Properties > Physics > IPC 2D Simulation; 3D View > Sidebar > IPC",
    "description": "Flat elastic bodies with Incremental Potential Contact, baked to shape keys",
    "category": "Physics",
}

import bpy  # noqa: E402

from . import (  # noqa: E402
    adapter,
    examples,
    exports_ops,
    link_ui,
    operators,
    panels,
    presets,
    properties,
    wedge_ops,
)

# `adapter` and `examples` are imported for scripts (addon.examples.build_compressing_squares).
__all__ = ["adapter", "bake_cli", "bl_info", "examples", "register", "unregister"]

# One ordered tuple: property groups first (others refer to them), panels last.
CLASSES = (
    properties.CLASSES
    + operators.CLASSES
    + link_ui.CLASSES
    + exports_ops.OPERATORS
    + wedge_ops.OPERATORS
    + presets.CLASSES
    + panels.CLASSES
    + exports_ops.PANELS
)


def register():
    for cls in CLASSES:
        bpy.utils.register_class(cls)
    properties.attach()
    link_ui.attach()
    operators.add_handlers()


def unregister():
    operators.remove_handlers()
    operators.RunningBake.cancel()
    link_ui.detach()
    properties.detach()
    for cls in reversed(CLASSES):
        bpy.utils.unregister_class(cls)


def bake_cli(filepath=None, output=None, target="SCENE", save=True):
    """Bake from a script/command line. Opens `filepath` if given, bakes, saves to `output`
    (default: the open file). Raises RuntimeError when the bake fails, so
    ``blender -b --python-exit-code 1`` exits non-zero."""
    if filepath:
        bpy.ops.wm.open_mainfile(filepath=filepath)
    result = bpy.ops.ipc.bake(target=target)
    if "FINISHED" not in result:
        raise RuntimeError("IPC bake failed; see the error reported above")
    if save:
        path = output or bpy.data.filepath
        if not path:
            raise RuntimeError("bake_cli: nowhere to save (pass output=...)")
        bpy.ops.wm.save_as_mainfile(filepath=path)
    return result
