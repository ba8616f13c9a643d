"""The frames of a bake in progress, kept on disk instead of in memory, so that a long bake's
memory grows with the vertices and not with the frames (issue 33, point 5).

Each computed frame's solver positions (float64, every body one after the other) are appended
to an anonymous temporary file as soon as the frame is computed; the shape keys (and the live
view) read them back a few frames at a time. The bytes are the positions' own, so the keys are
the same bits as from positions kept in memory. The file has no name (it is unlinked when
created) and goes when the job does, so nothing is left behind, even after a crash.
"""

from __future__ import annotations

import os
import tempfile

import numpy as np


class FrameSpool:
    """Frames of per-body positions arrays of fixed shapes, appended one at a time and read
    back by index range. Writing raises OSError (e.g. ENOSPC: a full disk)."""

    def __init__(self, shapes: list[tuple[int, ...]], folder: str | None = None):
        self.shapes = [tuple(s) for s in shapes]
        sizes = [int(np.prod(s)) for s in self.shapes]
        self.offsets = np.cumsum([0, *sizes])
        self.record_bytes = int(self.offsets[-1]) * 8
        self.count = 0
        self.folder = folder or tempfile.gettempdir()
        # open as long as the job lives (closed with it); unnamed, so nothing is left behind
        self._file = tempfile.TemporaryFile(prefix="ipc_frames_", dir=self.folder)  # noqa: SIM115

    def append(self, positions: list[np.ndarray]):
        """One frame: positions[j] of shape shapes[j] (converted to float64)."""
        record = np.concatenate([np.asarray(p, np.float64).ravel() for p in positions])
        write_at(self._file.fileno(), record.tobytes(), self.count * self.record_bytes)
        self.count += 1

    def read(self, lo: int, hi: int) -> list[np.ndarray]:
        """Frames lo..hi-1: per body an array (hi - lo, *shape) float64."""
        n = max(0, hi - lo)
        data = read_at(self._file.fileno(), n * self.record_bytes, lo * self.record_bytes)
        records = np.frombuffer(data, np.float64).reshape(n, -1)
        return [
            records[:, a:b].reshape(n, *shape)
            for a, b, shape in zip(self.offsets[:-1], self.offsets[1:], self.shapes, strict=True)
        ]

    def close(self):
        self._file.close()


def write_at(fd: int, data: bytes, offset: int):
    """All of data at offset (os.pwrite may write less than asked)."""
    view = memoryview(data)
    while view:
        n = os.pwrite(fd, view, offset)
        view, offset = view[n:], offset + n


def read_at(fd: int, size: int, offset: int) -> bytes:
    parts, left = [], size
    while left:
        part = os.pread(fd, left, offset)
        if not part:
            raise OSError(f"the frames file ended {left} bytes early")
        parts.append(part)
        left, offset = left - len(part), offset + len(part)
    return b"".join(parts)
