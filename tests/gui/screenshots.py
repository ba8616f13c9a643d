"""README screenshots of the add-on's UI (Blender GUI under Xvfb; run scripts/screenshots.sh).

Builds the compressing-squares example, shows Properties > Physics of the top square next to a
front view (XZ plane) of the scene, and saves into OUT_DIR:
  gui_body.png            the IPC panel of a deformable body (Properties editor)
  gui_scene_settings.png  the same panel with Scene Settings open
  gui_baking.png          the whole window during the modal bake: the bodies at the newest
                          computed frame (live view), progress, Cancel button
  gui_baked.png           the whole window after the bake, at frame 37
  gui_continue.png        the panel after the frame range was extended: Continue Bake
  gui_link.png            the IPC Link panel of a hinge's Empty in the chain demo (issue 32)
  gui_fields.png          the whole window: the chain demo baked, swung by the wind (its Force
                          Field panel in Properties) into the wall
  gui_link_rope.png       the whole window: a Rope between two anchors (Add Anchors, moved),
                          its IPC Link panel
"""

import os
import sys
from pathlib import Path

import bpy
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import driver

ZIP, RESULT, OUT = driver.args()[:3]
OUT = Path(OUT).resolve()
addon = driver.install_addon(ZIP)
ops = addon.operators
WINDOW_SCALE = 0.6  # full-window pictures: 1600x1000 -> 960x600 (keeps them < 300 KB)
SHOW_FRAME = 37  # both squares in view, rotated, under the descending ceiling


def enlarge_properties(wider, taller):
    """Drag the edge between the 3D view and the Outliner/Properties column to the left, and the
    edge between the Outliner and the Properties editor up."""
    prop = driver.area("PROPERTIES")
    with driver.override("PROPERTIES"):
        bpy.ops.screen.area_move(x=prop.x, y=prop.y + prop.height // 2, delta=-wider)
    prop = driver.area("PROPERTIES")
    with driver.override("PROPERTIES"):
        bpy.ops.screen.area_move(x=prop.x + prop.width // 2, y=prop.y + prop.height, delta=taller)


def front_view():
    """Front orthographic view (the XZ simulation plane) framing the squares' whole motion."""
    view = driver.area("VIEW_3D")
    space = view.spaces.active
    space.shading.type = "SOLID"
    space.show_region_ui = False
    space.overlay.show_floor = False
    with driver.override("VIEW_3D"):
        bpy.ops.view3d.view_axis(type="FRONT")
    r3d = space.region_3d
    r3d.view_perspective = "ORTHO"
    r3d.view_location = (-0.35, 0.0, -0.45)
    r3d.view_distance = 3.2
    view.tag_redraw()


def open_scene_settings():
    """The Scene Settings sub-panel is closed by default and 3.4 has no API to open a panel (its
    open/closed state is kept per panel name): swap in a copy under a new name that starts open."""
    old = addon.panels.IPC_PT_physics_scene
    name = "IPC_PT_physics_scene_open"
    new = type(name, (old,), {"bl_idname": name, "bl_options": set()})
    bpy.utils.unregister_class(old)
    bpy.utils.register_class(new)


def _save_scaled(src, dst, scale=1.0, crop_bottom_rows=0):
    """Load a PNG, optionally drop empty rows at the bottom and scale, save as dst."""
    img = bpy.data.images.load(str(src))
    w, h = img.size
    if crop_bottom_rows:
        px = np.empty(w * h * 4, dtype=np.float32)
        img.pixels.foreach_get(px)
        px = px.reshape(h, w, 4)[crop_bottom_rows:]  # Blender images start at the bottom
        h = px.shape[0]
        out = bpy.data.images.new("ipc_crop", w, h, alpha=False)
        out.pixels.foreach_set(px.ravel())
        bpy.data.images.remove(img)
        img = out
    if scale != 1.0:
        img.scale(int(w * scale), int(h * scale))
    img.filepath_raw, img.file_format = str(dst), "PNG"
    img.save()
    bpy.data.images.remove(img)
    Path(src).unlink(missing_ok=True)
    print(f"saved {dst} ({dst.stat().st_size // 1024} KB)", flush=True)


def _empty_rows_at_bottom(path):
    """Rows at the bottom of a Properties screenshot that only show the editor background."""
    img = bpy.data.images.load(str(path))
    w, h = img.size
    px = np.empty(w * h * 4, dtype=np.float32)
    img.pixels.foreach_get(px)
    bpy.data.images.remove(img)
    rows = px.reshape(h, w, 4)[:, 40:-16, :3]  # skip the tab column and scrollbar
    background = rows[8, 20]  # above the area's bottom border
    busy = np.abs(rows - background).max(axis=(1, 2)) > 0.02
    busy[:4] = False  # the border itself
    first = int(np.argmax(busy)) if busy.any() else 0
    return max(first - 12, 0)


def shot_area(kind, name):
    tmp = OUT / f"_{name}"
    with driver.override(kind):
        bpy.ops.screen.screenshot_area(filepath=str(tmp))
    _save_scaled(tmp, OUT / name, crop_bottom_rows=_empty_rows_at_bottom(tmp))


def shot_window(name):
    tmp = OUT / f"_{name}"
    with driver.override():
        bpy.ops.screen.screenshot(filepath=str(tmp))
    _save_scaled(tmp, OUT / name, scale=WINDOW_SCALE)


def redraw():
    for a in driver.window().screen.areas:
        a.tag_redraw()


def screenshots():
    OUT.mkdir(parents=True, exist_ok=True)
    driver.clear_scene()
    top, _, _ = addon.examples.build_compressing_squares(bpy.context)
    enlarge_properties(260, 190)
    front_view()
    redraw()
    yield 0.5  # the Properties editor offers the object tabs once it has redrawn
    driver.area("PROPERTIES").spaces.active.context = "PHYSICS"
    redraw()
    yield 1.0
    shot_area("PROPERTIES", "gui_body.png")

    open_scene_settings()
    redraw()
    yield 1.0
    shot_area("PROPERTIES", "gui_scene_settings.png")

    # The live view on every chunk (by default it waits until its redraw cost is below 8 % of
    # the bake's time: with software OpenGL at this size, seconds), so that the picture shows
    # the bodies at the newest computed frame, squeezed under the ceiling.
    ops.RunningBake.live_share = None
    with driver.override("PROPERTIES"):
        assert bpy.ops.ipc.bake("INVOKE_DEFAULT") == {"RUNNING_MODAL"}
    yield from driver.wait_until(lambda: ops.RunningBake.job.frames_done >= SHOW_FRAME, 300, "baked frames")
    front_view()
    redraw()
    yield 1.0
    shot_window("gui_baking.png")
    ops.RunningBake.live_share = 0.08
    yield from driver.wait_until(lambda: ops.RunningBake.job is None, 300, "the bake")
    assert top.data.shape_keys is not None, "the bake did not finish"
    bpy.context.scene.frame_set(SHOW_FRAME)
    front_view()
    redraw()
    yield 1.0
    shot_window("gui_baked.png")

    # The artist extends the frame range: the panel offers to continue the bake.
    bpy.context.scene.frame_end = 90
    redraw()
    yield 1.0
    shot_area("PROPERTIES", "gui_continue.png")


CHAIN_FRAME = 40  # the chain blown against the wall


def chain_view():
    """Front orthographic view framing the chain demo (pivot, wall, wind)."""
    front_view()
    r3d = driver.area("VIEW_3D").spaces.active.region_3d
    r3d.view_location, r3d.view_distance = (0.55, 0.0, -0.45), 2.6


def show_physics_of(obj):
    """Generator: make obj active and show its Physics tab (offered once the editor redrew)."""
    for o in bpy.context.view_layer.objects:
        o.select_set(o is obj)
    bpy.context.view_layer.objects.active = obj
    redraw()
    yield 0.5
    driver.area("PROPERTIES").spaces.active.context = "PHYSICS"
    redraw()


def chain_screenshots():
    """Issue 32: the IPC Link panel of a hinge and the wind acting on the chain."""
    driver.clear_scene()
    with driver.override():
        chain, _, wind = addon.examples.build_chain_in_wind(bpy.context)
    if driver.area("PROPERTIES").width < 400:  # run on its own (GUI_TEST_ONLY)
        enlarge_properties(260, 190)
    chain_view()
    yield from show_physics_of(bpy.data.objects["IPC_Hinge_1"])
    yield 1.0
    shot_area("PROPERTIES", "gui_link.png")

    for o in bpy.context.view_layer.objects:
        o.select_set(o in chain)
    with driver.override("PROPERTIES"):
        assert bpy.ops.ipc.bake() == {"FINISHED"}
    assert chain[0].data.shape_keys is not None, bpy.context.scene.ipc.stat_message
    bpy.context.scene.frame_set(CHAIN_FRAME)
    yield from show_physics_of(wind)
    chain_view()
    yield 1.0
    shot_window("gui_fields.png")

    # A Rope between two plates with anchors the artist placed (Add Anchors, then moved).
    import test_links

    driver.clear_scene()
    bpy.context.scene.frame_set(1)
    with driver.override():
        a = test_links._square("Plate", (0.0, 0.0))
        b = test_links._square("Weight", (0.25, -0.35))
        for o in bpy.context.view_layer.objects:
            o.select_set(o in (a, b))
        bpy.context.view_layer.objects.active = a
        assert bpy.ops.ipc.add_link(kind="ROPE") == {"FINISHED"}
        rope = bpy.data.objects["IPC_Link_Plate"]
        bpy.context.view_layer.objects.active = rope
        assert bpy.ops.ipc.add_link_anchors() == {"FINISHED"}
    # parented with the parent's inverse kept: their locations are world positions here
    rope.ipc_link.anchor1.location = (0.08, 0.0, -0.08)  # the Plate's lower right corner
    rope.ipc_link.anchor2.location = (0.17, 0.0, -0.27)  # the Weight's upper left corner
    yield from show_physics_of(rope)
    front_view()
    r3d = driver.area("VIEW_3D").spaces.active.region_3d
    r3d.view_location, r3d.view_distance = (0.12, 0.0, -0.17), 1.0
    yield 1.0
    shot_window("gui_link_rope.png")


SHOTS = [screenshots, chain_screenshots]
if os.environ.get("GUI_TEST_ONLY"):  # a part of the name: only those (debugging)
    SHOTS = [f for f in SHOTS if os.environ["GUI_TEST_ONLY"] in f.__name__]
driver.run(SHOTS, RESULT)
