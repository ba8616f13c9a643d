"""A contact sheet: one picture of several variants side by side, drawn with numpy (filled
triangles, thin segments, a 3x5 pixel font) and written as a PNG with zlib, so it works headless
without OpenGL. No bpy here: the caller passes the geometry in plane coordinates."""

from __future__ import annotations

import os
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

BACKGROUND = (250, 250, 247)
BODY_COLORS = [(217, 95, 2), (27, 158, 119), (117, 112, 179), (231, 41, 138), (102, 166, 30), (230, 171, 2)]
COLLIDER_COLOR = (90, 90, 90)
LABEL_COLOR = (40, 40, 40)
LABEL_HEIGHT = 16  # pixels under each tile
GAP = 6  # pixels between tiles


@dataclass(frozen=True)
class Tile:
    """One variant: body triangles (per body (m, 3, 2)), collider segments ((k, 2, 2) each)
    in plane coordinates [m], and its label."""

    bodies: tuple
    colliders: tuple
    label: str


def write_png(path, rgb: np.ndarray) -> None:
    """An (h, w, 3) uint8 image as an 8-bit RGB PNG (filter 0 on every row)."""
    rgb = np.ascontiguousarray(rgb, dtype=np.uint8)
    h, w, _ = rgb.shape
    raw = np.concatenate([np.zeros((h, 1), np.uint8), rgb.reshape(h, w * 3)], axis=1).tobytes()

    def chunk(tag: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(tag + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")  # renamed into place when complete
    try:
        with open(tmp, "wb") as f:
            f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 9)))
            f.write(chunk(b"IEND", b""))
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def fill_triangles(img: np.ndarray, tris: np.ndarray, color) -> None:
    """Triangles (m, 3, 2) in pixel coordinates (x right, y down); pixel centres inside."""
    h, w = img.shape[:2]
    for tri in tris:  # drawing, not simulation: each triangle vectorized over its bounding box
        x0, y0 = np.maximum(np.floor(tri.min(axis=0)).astype(int), 0)
        x1, y1 = np.minimum(np.ceil(tri.max(axis=0)).astype(int), [w - 1, h - 1])
        if x1 < x0 or y1 < y0:
            continue
        px, py = np.meshgrid(np.arange(x0, x1 + 1) + 0.5, np.arange(y0, y1 + 1) + 0.5)
        edge = [
            (tri[(i + 1) % 3, 0] - tri[i, 0]) * (py - tri[i, 1])
            - (tri[(i + 1) % 3, 1] - tri[i, 1]) * (px - tri[i, 0])
            for i in range(3)
        ]
        inside = ((edge[0] >= 0) & (edge[1] >= 0) & (edge[2] >= 0)) | (
            (edge[0] <= 0) & (edge[1] <= 0) & (edge[2] <= 0)
        )
        img[y0 : y1 + 1, x0 : x1 + 1][inside] = color


def draw_segments(img: np.ndarray, segs: np.ndarray, color, width: float = 1.5) -> None:
    """Segments (k, 2, 2) in pixel coordinates as thin quads (two triangles each)."""
    d = segs[:, 1] - segs[:, 0]
    n = np.hypot(d[:, 0], d[:, 1])
    keep = n > 0
    a, b = segs[keep, 0], segs[keep, 1]
    off = np.stack([-d[keep, 1], d[keep, 0]], axis=1) / n[keep, None] * (width / 2)
    quads = np.concatenate(
        [np.stack([a + off, b + off, b - off], 1), np.stack([a + off, b - off, a - off], 1)]
    )
    fill_triangles(img, quads, color)


# 3x5 glyphs, rows top to bottom; upper case is drawn as lower case.
_FONT = {
    "0": "111101101101111", "1": "010110010010111", "2": "111001111100111", "3": "111001111001111",
    "4": "101101111001001", "5": "111100111001111", "6": "111100111101111", "7": "111001001001001",
    "8": "111101111101111", "9": "111101111001111", ".": "000000000000010", ",": "000000000010100",
    "=": "000111000111000", "-": "000000111000000", "_": "000000000000111", "+": "000010111010000",
    " ": "000000000000000", "a": "000011101101011", "b": "100110101101110", "c": "000011100100011",
    "d": "001011101101011", "e": "000111111100011", "f": "011010111010010", "g": "011101011001110",
    "h": "100110101101101", "i": "010000010010010", "j": "001000001101010", "k": "100101110101101",
    "l": "010010010010001", "m": "000111111101101", "n": "000110101101101", "o": "000010101101010",
    "p": "000110101110100", "q": "000011101011001", "r": "000101110100100", "s": "000011010001110",
    "t": "010111010010011", "u": "000101101101011", "v": "000101101101010", "w": "000101101111111",
    "x": "000101010101101", "y": "101101011001110", "z": "000111001100111",
}  # fmt: skip


def draw_text(img: np.ndarray, text: str, x: int, y: int, scale: int = 2) -> None:
    for ch in text.lower():
        glyph = _FONT.get(ch, _FONT[" "])
        mask = np.kron(np.array([c == "1" for c in glyph]).reshape(5, 3), np.ones((scale, scale), bool))
        sub = img[y : y + mask.shape[0], x : x + mask.shape[1]]
        sub[mask[: sub.shape[0], : sub.shape[1]]] = LABEL_COLOR
        x += 4 * scale


def view_box(tiles, margin: float = 0.15):
    """(xmin, xmax, ymin, ymax) framing every tile's bodies, with a margin; one box for all
    tiles, so the variants compare at one scale."""
    pts = np.concatenate([t.reshape(-1, 2) for tile in tiles for t in tile.bodies])
    lo, hi = pts.min(axis=0), pts.max(axis=0)
    pad = margin * max(float((hi - lo).max()), 1e-9)
    return lo[0] - pad, hi[0] + pad, lo[1] - pad, hi[1] + pad


def draw_tile(tile: Tile, box, width: int) -> np.ndarray:
    xmin, xmax, ymin, ymax = box
    scale = width / (xmax - xmin)
    height = max(1, round((ymax - ymin) * scale))

    def to_px(p):
        return np.stack([(p[..., 0] - xmin) * scale, (ymax - p[..., 1]) * scale], axis=-1)

    img = np.empty((height, width, 3), np.uint8)
    img[:] = BACKGROUND
    for segs in tile.colliders:
        if len(segs):
            draw_segments(img, to_px(np.asarray(segs, float)), COLLIDER_COLOR, width=2.0)
    for k, tris in enumerate(tile.bodies):
        fill_triangles(img, to_px(np.asarray(tris, float)), BODY_COLORS[k % len(BODY_COLORS)])
    return img


def sheet(tiles, width: int = 240, columns: int | None = None) -> np.ndarray:
    """The tiles on a grid (at most 4 per row by default), a label under each."""
    box = view_box(tiles)
    images = [draw_tile(t, box, width) for t in tiles]
    h = images[0].shape[0]
    columns = columns or min(len(tiles), 4)
    rows = -(-len(tiles) // columns)
    cell_h, cell_w = h + LABEL_HEIGHT, width + GAP
    out = np.full((rows * cell_h, columns * cell_w - GAP, 3), 255, np.uint8)
    longest = max(len(t.label) for t in tiles)
    scale = 2 if longest * 8 <= width - 3 else 1  # small letters for long labels
    for k, (img, tile) in enumerate(zip(images, tiles, strict=True)):
        y, x = (k // columns) * cell_h, (k % columns) * cell_w
        out[y : y + h, x : x + width] = img
        draw_text(out, tile.label[: (width - 3) // (4 * scale)], x + 3, y + h + 3, scale)
    return out
