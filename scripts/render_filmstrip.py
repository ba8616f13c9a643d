"""Pictures of a baked blender-ipc scene: a filmstrip PNG (several frames side by side) and an
animated GIF, written with numpy + the standard library only (zlib for PNG, our own LZW for GIF).

Two ways to get the frames, both from what Blender evaluates (the baked shape keys):

* ``render_frames_workbench``: Blender's Workbench engine renders each frame headless
  (orthographic camera facing the simulation plane, flat object colours).
* ``draw_frames``: the evaluated meshes are rasterized here with numpy (fallback when Blender
  cannot render, e.g. no EGL/OpenGL on the machine).

Standalone use on a saved bake (runs in the bpy venv, the add-on is not needed for playback)::

    .venv/bin/python scripts/render_filmstrip.py out/compressing_squares.blend --out out/film.png

``import bpy`` happens inside the functions that need it, so the image helpers are importable
(and testable) without Blender.
"""

from __future__ import annotations

import argparse
import os
import struct
import sys
import zlib

import numpy as np

# Palette of the drawn/rendered pictures (sRGB 0..255).
BACKGROUND = (250, 250, 247)
BODY_COLORS = [(217, 95, 2), (27, 158, 119), (117, 112, 179), (231, 41, 138), (102, 166, 30), (230, 171, 2)]
COLLIDER_COLOR = (90, 90, 90)
LABEL_COLOR = (40, 40, 40)


# ----------------------------------------------------------------------------- PNG / GIF writers


def write_png(path: str, rgb: np.ndarray) -> None:
    """Write an (h, w, 3) uint8 image as an 8-bit RGB PNG (zlib from the stdlib)."""
    rgb = np.ascontiguousarray(rgb, dtype=np.uint8)
    h, w, c = rgb.shape
    if c != 3:
        raise ValueError(f"write_png expects (h, w, 3) RGB, got shape {rgb.shape}")
    # Filter type 0 (None) on every scanline: a zero byte in front of each row.
    raw = np.concatenate([np.zeros((h, 1), np.uint8), rgb.reshape(h, w * 3)], axis=1).tobytes()

    def chunk(tag: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)
        )

    header = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)  # 8 bit, colour type 2 (RGB)
    with open(path, "wb") as f:
        f.write(
            b"\x89PNG\r\n\x1a\n"
            + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(raw, 9))
            + chunk(b"IEND", b"")
        )


def read_png(path: str) -> np.ndarray:
    """Read an 8-bit RGB/RGBA non-interlaced PNG (as written by Blender) into (h, w, 3) uint8."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError(f"{path}: not a PNG file")
    pos, idat, w = 8, [], None
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos : pos + 4])
        tag, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + n]
        if tag == b"IHDR":
            w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or ctype not in (2, 6) or interlace:
                raise ValueError(f"{path}: only 8-bit RGB/RGBA non-interlaced PNG is supported")
            bpp = 3 if ctype == 2 else 4
        elif tag == b"IDAT":
            idat.append(body)
        pos += 12 + n
    if w is None:
        raise ValueError(f"{path}: no IHDR chunk")
    raw = np.frombuffer(zlib.decompress(b"".join(idat)), np.uint8).reshape(h, 1 + w * bpp)
    out = np.zeros((h, w * bpp), np.int32)
    prev = np.zeros(w * bpp, np.int32)
    for y in range(h):  # PNG filters are defined row by row (each row depends on the previous)
        ftype, line = raw[y, 0], raw[y, 1:].astype(np.int32)
        if ftype == 0:
            row = line
        elif ftype == 2:
            row = (line + prev) & 255
        else:
            row = _unfilter_sequential(ftype, line, prev, bpp)
        out[y] = row
        prev = row
    return out.reshape(h, w, bpp)[:, :, :3].astype(np.uint8)


def _unfilter_sequential(ftype, line, prev, bpp):
    """PNG filters 1 (Sub), 3 (Average), 4 (Paeth): each byte depends on its left neighbour."""
    row = np.zeros_like(line)
    for i in range(len(line)):
        a = row[i - bpp] if i >= bpp else 0
        b = prev[i]
        if ftype == 1:
            pred = a
        elif ftype == 3:
            pred = (a + b) // 2
        elif ftype == 4:
            c = prev[i - bpp] if i >= bpp else 0
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            pred = a if (pa <= pb and pa <= pc) else (b if pb <= pc else c)
        else:
            raise ValueError(f"unknown PNG filter type {ftype}")
        row[i] = (line[i] + pred) & 255
    return row


def _lzw_encode(indices: bytes, min_code_size: int) -> bytes:
    """GIF-flavoured LZW (variable code width, clear code when the table is full)."""
    clear, end = 1 << min_code_size, (1 << min_code_size) + 1
    width, next_code = min_code_size + 1, end + 1
    table = {bytes([i]): i for i in range(clear)}
    bits, nbits, out = 0, 0, bytearray()

    def emit(code):
        nonlocal bits, nbits
        bits |= code << nbits
        nbits += width
        while nbits >= 8:
            out.append(bits & 255)
            bits >>= 8
            nbits -= 8

    emit(clear)
    w = b""
    for byte in indices:
        wc = w + bytes([byte])
        if wc in table:
            w = wc
            continue
        emit(table[w])
        if next_code < 4096:
            table[wc] = next_code
            next_code += 1
            if next_code > (1 << width) and width < 12:
                width += 1
        else:  # table full: start over so the codes stay at most 12 bits
            emit(clear)
            table = {bytes([i]): i for i in range(clear)}
            width, next_code = min_code_size + 1, end + 1
        w = bytes([byte])
    if w:
        emit(table[w])
    emit(end)
    if nbits:
        out.append(bits & 255)
    return bytes(out)


def quantize(images: list[np.ndarray], max_colors: int = 256):
    """Shared palette for all frames: the most frequent colours (drawings have few colours),
    every pixel mapped to the nearest palette entry. Returns (palette (k,3), index images)."""
    stacked = np.concatenate([im.reshape(-1, 3) for im in images])
    packed = (stacked[:, 0].astype(np.int64) << 16) | (stacked[:, 1].astype(np.int64) << 8) | stacked[:, 2]
    uniq, counts = np.unique(packed, return_counts=True)
    keep = uniq[np.argsort(counts)[::-1][:max_colors]]
    palette = np.stack([(keep >> 16) & 255, (keep >> 8) & 255, keep & 255], axis=1).astype(np.int32)
    out = []
    for im in images:
        flat = im.reshape(-1, 3).astype(np.int32)
        idx = np.empty(len(flat), np.uint8)
        for s in range(0, len(flat), 65536):  # chunks bound the (pixels x palette) distance matrix
            d = ((flat[s : s + 65536, None, :] - palette[None, :, :]) ** 2).sum(axis=2)
            idx[s : s + 65536] = d.argmin(axis=1)
        out.append(idx.reshape(im.shape[:2]))
    return palette.astype(np.uint8), out


def write_gif(path: str, images: list[np.ndarray], delay_cs: int = 4) -> None:
    """Animated GIF (looping) from (h, w, 3) uint8 frames of equal size; delay in 1/100 s."""
    palette, frames = quantize(images)
    h, w = frames[0].shape
    bits = max(1, int(np.ceil(np.log2(max(len(palette), 2)))))
    table = np.zeros((1 << bits, 3), np.uint8)
    table[: len(palette)] = palette
    out = bytearray(b"GIF89a" + struct.pack("<HHBBB", w, h, 0x80 | (bits - 1), 0, 0))
    out += table.tobytes()
    out += b"\x21\xff\x0bNETSCAPE2.0\x03\x01\x00\x00\x00"  # loop forever
    min_code = max(2, bits)
    for idx in frames:
        out += b"\x21\xf9\x04\x04" + struct.pack("<H", delay_cs) + b"\x00\x00"
        out += b"\x2c" + struct.pack("<HHHHB", 0, 0, w, h, 0) + bytes([min_code])
        data = _lzw_encode(idx.tobytes(), min_code)
        for s in range(0, len(data), 255):
            block = data[s : s + 255]
            out += bytes([len(block)]) + block
        out += b"\x00"
    out += b"\x3b"
    with open(path, "wb") as f:
        f.write(bytes(out))


# ----------------------------------------------------------------------------- drawing helpers

# 3x5 bitmap glyphs for frame labels ("frame 12  t=0.48 s").
_GLYPHS = {
    "0": "111101101101111",
    "1": "010110010010111",
    "2": "111001111100111",
    "3": "111001111001111",
    "4": "101101111001001",
    "5": "111100111001111",
    "6": "111100111101111",
    "7": "111001001001001",
    "8": "111101111101111",
    "9": "111101111001111",
    ".": "000000000000010",
    "=": "000111000111000",
    " ": "000000000000000",
    "t": "010111010010011",
    "s": "000011010001110",
    "f": "011010111010010",
    "r": "000101110100100",
    "a": "000011101101011",
    "m": "000111111101101",
    "e": "000111111100011",
    "-": "000000111000000",
    "c": "000011100100011",
    "d": "001001011101011",
    "g": "000011101011110",
    "h": "100100110101101",
    "i": "010000010010010",
    "k": "100101110101101",
    "l": "010010010010011",
    "n": "000110101101101",
    "o": "000010101101010",
    "p": "000110101110100",
    "u": "000101101101011",
    "v": "000101101101010",
    "w": "000101101111111",
    "x": "000101010101101",
}


def draw_text(img: np.ndarray, text: str, x: int, y: int, scale: int = 2, color=LABEL_COLOR) -> None:
    """Stamp ``text`` (glyphs above) into img at pixel (x, y) = top-left corner."""
    for ch in text:
        glyph = _GLYPHS.get(ch, _GLYPHS[" "])
        mask = np.array([c == "1" for c in glyph]).reshape(5, 3)
        mask = np.kron(mask, np.ones((scale, scale), bool))
        hh, ww = mask.shape
        sub = img[y : y + hh, x : x + ww]
        sub[mask[: sub.shape[0], : sub.shape[1]]] = color
        x += (3 + 1) * scale


def fill_triangles(img: np.ndarray, tris: np.ndarray, color) -> None:
    """Rasterize triangles given in pixel coordinates (m, 3, 2) (x right, y down)."""
    h, w = img.shape[:2]
    for tri in tris:  # per triangle, vectorized over the pixels of its bounding box
        x0, y0 = np.maximum(np.floor(tri.min(axis=0)).astype(int), 0)
        x1, y1 = np.minimum(np.ceil(tri.max(axis=0)).astype(int), [w - 1, h - 1])
        if x1 < x0 or y1 < y0:
            continue
        px, py = np.meshgrid(np.arange(x0, x1 + 1) + 0.5, np.arange(y0, y1 + 1) + 0.5)
        (ax, ay), (bx, by), (cx, cy) = tri
        e0 = (bx - ax) * (py - ay) - (by - ay) * (px - ax)
        e1 = (cx - bx) * (py - by) - (cy - by) * (px - bx)
        e2 = (ax - cx) * (py - cy) - (ay - cy) * (px - cx)
        inside = ((e0 >= 0) & (e1 >= 0) & (e2 >= 0)) | ((e0 <= 0) & (e1 <= 0) & (e2 <= 0))
        img[y0 : y1 + 1, x0 : x1 + 1][inside] = color


def draw_segments(img: np.ndarray, segs: np.ndarray, color, width: float = 1.0) -> None:
    """Draw segments (k, 2, 2) in pixel coordinates as thin quads."""
    for a, b in segs:
        d = b - a
        n = np.hypot(*d)
        if n == 0:
            continue
        off = np.array([-d[1], d[0]]) / n * (width / 2)
        quad = np.array([[a + off, b + off, b - off], [a + off, b - off, a - off]])
        fill_triangles(img, quad, color)


def filmstrip(
    images: list[np.ndarray], labels: list[str], columns: int | None = None, gap: int = 6
) -> np.ndarray:
    """Frames in reading order on a grid (one row by default), a label under each."""
    h, w = images[0].shape[:2]
    columns = columns or len(images)
    rows = -(-len(images) // columns)
    label_h = 18
    cell_h, cell_w = h + label_h, w + gap
    out = np.full((rows * cell_h, columns * cell_w - gap, 3), 255, np.uint8)
    for k, (im, text) in enumerate(zip(images, labels, strict=True)):
        y, x = (k // columns) * cell_h, (k % columns) * cell_w
        out[y : y + h, x : x + w] = im
        draw_text(out, text, x + 4, y + h + 4)
    return out


# The bake's per-frame diagnostics (blender_ipc/frame_diagnostics.py: keyed custom properties
# of the scene) drawn under the film strip: (property, label).
DIAGNOSTICS = (
    ("ipc_min_gap", "min gap m"),
    ("ipc_active_contacts", "contacts"),
    ("ipc_newton_iterations", "newton its"),
    ("ipc_nonconverged_steps", "not conv"),
    ("ipc_collider_lag", "lag m"),
    ("ipc_motion_splits", "splits"),
    ("ipc_frame_crossings", "crossings"),
)
PLOT_COLOR = (31, 119, 180)


def diagnostics_plot(frames, series, width: int, row_h: int = 44) -> np.ndarray:
    """One strip per (label, values) in `series` over `frames` (F,): the label and the value
    range on the left, the values as a polyline scaled to the strip on the right. NaN values
    (no value that frame) are left out of the range and break the line."""
    left, pad = 150, 6
    out = np.full((row_h * len(series), width, 3), 255, np.uint8)
    frames = np.asarray(frames, float)
    span = max(frames[-1] - frames[0], 1.0)
    for k, (label, raw) in enumerate(series):
        y0 = k * row_h
        values = np.asarray(raw, float)
        known = values[np.isfinite(values)]
        lo, hi = (float(known.min()), float(known.max())) if known.size else (0.0, 0.0)
        hi = hi if hi - lo > 1e-12 else lo  # rounding noise (a lag of 1e-22 m) drawn flat
        draw_text(out, label, 4, y0 + pad)
        draw_text(out, f"{lo:.3g}-{hi:.3g}" if hi > lo else f"{lo:.3g}", 4, y0 + pad + 14)
        out[y0 + row_h - 1, left:] = 220  # a rule between the strips
        px = left + (frames - frames[0]) / span * (width - left - pad)
        scaled = (values - lo) / (hi - lo) if hi > lo else np.where(np.isnan(values), np.nan, 0.5)
        py = y0 + row_h - pad - scaled * (row_h - 2 * pad)
        points = np.column_stack([px, py])
        segments = np.stack([points[:-1], points[1:]], axis=1)
        segments = segments[np.isfinite(segments).all(axis=(1, 2))]
        if len(segments):
            draw_segments(out, segments, PLOT_COLOR, width=2.0)
    return out


def scene_diagnostics(scene, first: int, last: int):
    """(frames, [(label, values)]) of the DIAGNOSTICS the scene holds, as Blender evaluates them
    at frames first + 1 .. last (the bake keys them from its first computed frame on)."""
    names = [(name, label) for name, label in DIAGNOSTICS if scene.get(name) is not None]
    frames = list(range(first + 1, last + 1))
    if not names or not frames:
        return frames, []
    values = np.empty((len(frames), len(names)))
    for i, f in enumerate(frames):
        scene.frame_set(f)
        values[i] = [float(scene[name]) for name, _ in names]
    for k, (name, _) in enumerate(names):
        if name == "ipc_min_gap":  # -1 keys "no pair within the Contact Gap", not a distance
            values[values[:, k] < 0, k] = np.nan
    return frames, [(label, values[:, k]) for k, (_, label) in enumerate(names)]


# ----------------------------------------------------------------------------- Blender side


def plane_axes(scene) -> tuple[int, int]:
    """World axes (horizontal, vertical) of the simulation plane: XZ (default) or XY."""
    plane = getattr(getattr(scene, "ipc", None), "plane", "XZ")
    return (0, 1) if plane == "XY" else (0, 2)


def baked_frame_range(scene) -> tuple[int, int]:
    ipc = getattr(scene, "ipc", None)
    if ipc is not None and getattr(ipc, "use_frame_range", False):
        return ipc.frame_start, ipc.frame_end
    return scene.frame_start, scene.frame_end


def pick_frames(first: int, last: int, count: int) -> list[int]:
    return sorted({round(f) for f in np.linspace(first, last, count)})


def evaluated_geometry(context, obj, axes):
    """(triangles (m,3,2), boundary-ish edges (k,2,2)) of the evaluated object in the plane."""
    depsgraph = context.evaluated_depsgraph_get()
    ev = obj.evaluated_get(depsgraph)
    mesh = ev.to_mesh()
    try:
        mesh.calc_loop_triangles()
        n = len(mesh.vertices)
        co = np.empty(n * 3, np.float64)
        mesh.vertices.foreach_get("co", co)
        co = co.reshape(n, 3)
        m = np.array(ev.matrix_world, dtype=np.float64)
        world = co @ m[:3, :3].T + m[:3, 3]
        pts = world[:, list(axes)]
        lt = np.empty(len(mesh.loop_triangles) * 3, np.int64)
        mesh.loop_triangles.foreach_get("vertices", lt)
        edges = np.empty(len(mesh.edges) * 2, np.int64)
        mesh.edges.foreach_get("vertices", edges)
        return pts[lt.reshape(-1, 3)], pts[edges.reshape(-1, 2)]
    finally:
        ev.to_mesh_clear()


def scene_objects(scene):
    """(bodies, others): meshes with baked shape keys vs. the other visible meshes."""
    bodies, others = [], []
    for obj in scene.objects:
        if obj.type != "MESH" or obj.hide_render:
            continue
        role = getattr(getattr(obj, "ipc", None), "role", "")
        if role in ("BODY", "DEFORMABLE") or (obj.data.shape_keys is not None and role != "COLLIDER"):
            bodies.append(obj)
        else:
            others.append(obj)
    return sorted(bodies, key=lambda o: o.name), sorted(others, key=lambda o: o.name)


def view_box(context, frames, axes, margin=0.15):
    """World-space box (xmin, xmax, ymin, ymax) framing the bodies over the given frames, with a
    margin that shows the colliders next to them (colliders can be far wider than the action)."""
    scene = context.scene
    lo, hi = np.full(2, np.inf), np.full(2, -np.inf)
    bodies, others = scene_objects(scene)
    for f in frames:
        scene.frame_set(f)
        for obj in bodies or others:
            tris, edges = evaluated_geometry(context, obj, axes)
            for arr in (tris, edges):
                if arr.size:
                    lo = np.minimum(lo, arr.reshape(-1, 2).min(axis=0))
                    hi = np.maximum(hi, arr.reshape(-1, 2).max(axis=0))
    if not np.all(np.isfinite(lo)):
        raise RuntimeError("nothing to draw: the scene has no visible mesh objects")
    size = hi - lo
    pad = margin * size.max()
    return lo[0] - pad, hi[0] + pad, lo[1] - pad, hi[1] + pad


def draw_frames(context, frames, box, width=320):
    """Rasterize the evaluated meshes at each frame with numpy (no Blender rendering)."""
    scene = context.scene
    axes = plane_axes(scene)
    xmin, xmax, ymin, ymax = box
    scale = width / (xmax - xmin)
    height = round((ymax - ymin) * scale)
    bodies, others = scene_objects(scene)

    def to_px(p):
        return np.stack([(p[..., 0] - xmin) * scale, (ymax - p[..., 1]) * scale], axis=-1)

    images = []
    for f in frames:
        scene.frame_set(f)
        img = np.empty((height, width, 3), np.uint8)
        img[:] = BACKGROUND
        for obj in others:
            tris, edges = evaluated_geometry(context, obj, axes)
            fill_triangles(img, to_px(tris), COLLIDER_COLOR)
            draw_segments(img, to_px(edges), COLLIDER_COLOR, width=2.0)
        for k, obj in enumerate(bodies):
            tris, edges = evaluated_geometry(context, obj, axes)
            color = np.array(BODY_COLORS[k % len(BODY_COLORS)])
            fill_triangles(img, to_px(tris), tuple(color))
            # Mesh edges in a lighter tint of the body colour: shows the deformation.
            draw_segments(img, to_px(edges), tuple((0.6 * color + 0.4 * 255).astype(int)), width=0.7)
        images.append(img)
    return images


def _srgb_to_linear(c):
    c = np.asarray(c, float) / 255.0
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


def setup_workbench(context, box, width=320):
    """Orthographic camera facing the plane, Workbench flat shading with per-object colours."""
    import bpy

    scene = context.scene
    axes = plane_axes(scene)
    xmin, xmax, ymin, ymax = box
    cx, cy = (xmin + xmax) / 2, (ymin + ymax) / 2
    cam_data = bpy.data.cameras.new("IPC_Preview_Camera")
    cam_data.type = "ORTHO"
    cam_data.ortho_scale = max(xmax - xmin, ymax - ymin)
    cam_data.clip_start, cam_data.clip_end = 0.01, 1000.0
    cam = bpy.data.objects.new("IPC_Preview_Camera", cam_data)
    scene.collection.objects.link(cam)
    if axes == (0, 2):  # XZ plane, front view: camera at -Y looking along +Y
        cam.location = (cx, -50.0, cy)
        cam.rotation_euler = (np.pi / 2, 0.0, 0.0)
    else:  # XY plane, top view
        cam.location = (cx, cy, 50.0)
        cam.rotation_euler = (0.0, 0.0, 0.0)
    scene.camera = cam
    scene.render.engine = "BLENDER_WORKBENCH"
    scene.render.resolution_x = width
    scene.render.resolution_y = round(width * (ymax - ymin) / (xmax - xmin))
    if scene.render.resolution_y > scene.render.resolution_x:
        cam_data.sensor_fit = "VERTICAL"
    scene.render.resolution_percentage = 100
    scene.render.film_transparent = False
    scene.render.image_settings.file_format = "PNG"
    scene.render.image_settings.color_mode = "RGB"
    scene.display_settings.display_device = "sRGB"
    scene.view_settings.view_transform = "Standard"
    shading = scene.display.shading
    shading.light = "FLAT"
    shading.color_type = "OBJECT"
    shading.show_object_outline = True
    shading.object_outline_color = (0.15, 0.15, 0.15)
    if scene.world is None:
        scene.world = bpy.data.worlds.new("IPC_Preview_World")
    scene.world.color = tuple(_srgb_to_linear(BACKGROUND))
    bodies, others = scene_objects(scene)
    for k, obj in enumerate(bodies):
        obj.color = (*_srgb_to_linear(BODY_COLORS[k % len(BODY_COLORS)]), 1.0)
    for obj in others:
        obj.color = (*_srgb_to_linear(COLLIDER_COLOR), 1.0)
    return cam


def render_frames_workbench(context, frames, box, out_dir, width=320):
    """Render each frame with Workbench to out_dir/frame_####.png and read the pixels back."""
    import bpy

    os.makedirs(out_dir, exist_ok=True)
    setup_workbench(context, box, width)
    scene = context.scene
    images = []
    for f in frames:
        scene.frame_set(f)
        scene.render.filepath = os.path.join(out_dir, f"frame_{f:04d}.png")
        bpy.ops.render.render(write_still=True)
        images.append(read_png(scene.render.filepath))
    return images


def make_pictures(
    context,
    out_png,
    out_gif=None,
    n_strip=6,
    n_gif=None,
    width=320,
    frames_dir=None,
    method="auto",
    columns=None,
    log=print,
):
    """Filmstrip PNG of ``n_strip`` frames (+ optional GIF of ``n_gif`` frames, numpy-drawn).

    method: "workbench", "draw" or "auto" (Workbench, falling back to drawing).
    Returns the method actually used for the filmstrip.
    """
    scene = context.scene
    axes = plane_axes(scene)
    first, last = baked_frame_range(scene)
    strip_frames = pick_frames(first, last, n_strip)
    gif_frames = list(range(first, last + 1, max(1, (last - first) // (n_gif - 1)))) if n_gif else []
    frame_before = scene.frame_current
    box = view_box(context, sorted(set(strip_frames) | set(gif_frames)), axes)
    fps = scene.render.fps / scene.render.fps_base

    def label(f):
        return f"frame {f}  t={(f - first) / fps:.2f} s"

    used = method
    images = None
    if method in ("auto", "workbench"):
        try:
            images = render_frames_workbench(
                context, strip_frames, box, frames_dir or os.path.dirname(out_png) or ".", width
            )
            used = "workbench"
        except Exception as err:
            if method == "workbench":
                raise
            log(f"[picture] Workbench render failed ({err}); drawing the shape keys with numpy")
    if images is None:
        images = draw_frames(context, strip_frames, box, width)
        used = "draw"
    strip = filmstrip(images, [label(f) for f in strip_frames], columns)
    plot_frames, series = scene_diagnostics(scene, first, last)
    if series:  # the bake's per-frame diagnostics under the strip
        strip = np.concatenate([strip, diagnostics_plot(plot_frames, series, strip.shape[1])])
    write_png(out_png, strip)
    log(f"[picture] {out_png}: frames {strip_frames} ({used})")
    if out_gif and gif_frames:
        gif_images = draw_frames(context, gif_frames, box, width)
        for f, im in zip(gif_frames, gif_images, strict=True):
            draw_text(im, label(f), 4, 4)
        write_gif(
            out_gif,
            gif_images,
            delay_cs=max(2, round(100 * (gif_frames[1] - gif_frames[0]) / fps)) if len(gif_frames) > 1 else 4,
        )
        log(f"[picture] {out_gif}: {len(gif_frames)} frames (drawn from the shape keys)")
    scene.frame_set(frame_before)
    return used


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("blend", help="a .blend with a baked blender-ipc scene")
    ap.add_argument("--out", default="out/filmstrip.png", help="filmstrip PNG to write")
    ap.add_argument("--gif", default=None, help="also write an animated GIF here")
    ap.add_argument("--frames", type=int, default=6, help="frames in the filmstrip")
    ap.add_argument("--width", type=int, default=320, help="width of one frame [px]")
    ap.add_argument("--columns", type=int, default=3, help="frames per row of the filmstrip")
    ap.add_argument("--method", choices=("auto", "workbench", "draw"), default="auto")
    args = ap.parse_args(argv)
    import bpy

    bpy.ops.wm.open_mainfile(filepath=os.path.abspath(args.blend))
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    make_pictures(
        bpy.context,
        args.out,
        args.gif,
        n_strip=args.frames,
        n_gif=40 if args.gif else None,
        width=args.width,
        frames_dir=os.path.join(os.path.dirname(os.path.abspath(args.out)), "frames"),
        method=args.method,
        columns=args.columns,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
