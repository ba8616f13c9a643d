"""Exports of a bake: the PC2 store with its Mesh Cache modifier, Alembic and USD through
Blender's exporters. Every file is read back independently of the add-on's code (PC2 with numpy
from the documented layout, Alembic/USD by Blender's importers) and compared frame by frame
with the baked shape keys."""

import errno
import tempfile
from pathlib import Path

import bpy
import harness
import numpy as np

N_FRAMES = 6
BODIES = ("IPC_Square_Bottom", "IPC_Square_Top")
# PC2 as Blender's Mesh Cache modifier reads it (MOD_meshcache_pc2): little-endian header.
PC2_HEADER = np.dtype(
    [
        ("magic", "S12"),
        ("version", "<i4"),
        ("points", "<i4"),
        ("start", "<f4"),
        ("rate", "<f4"),
        ("samples", "<i4"),
    ]
)


def setup_function():
    harness.setup()
    _state["tmp"] = tempfile.TemporaryDirectory(prefix="ipc_exports_")


def teardown_function():
    harness.teardown()
    _state.pop("tmp").cleanup()


_state = {}


def _baked_scene():
    """The compressing squares baked and saved as <tmp>/scene.blend; returns the keys of each
    body as (F, n, 3) float32, read from the shape keys."""
    harness.sub("examples").build_compressing_squares(
        bpy.context, n_seg=2, fps=50, substeps=2, n_frames=N_FRAMES
    )
    bpy.ops.wm.save_as_mainfile(filepath=str(Path(_state["tmp"].name) / "scene.blend"))
    assert bpy.ops.ipc.bake(target="SCENE") == {"FINISHED"}
    bpy.ops.wm.save_mainfile()
    keys = {name: _keys(bpy.data.objects[name]) for name in BODIES}
    for frames in keys.values():  # the bodies move: a wrong frame would show
        assert np.abs(frames[-1] - frames[0]).max() > 1e-3
    return keys


def _keys(obj):
    out = []
    for kb in obj.data.shape_keys.key_blocks:
        co = np.empty(len(kb.data) * 3, dtype=np.float32)
        kb.data.foreach_get("co", co)
        out.append(co.reshape(-1, 3))
    return np.stack(out)


def _assert_no_exporter():
    before = harness.snapshot()
    message = harness.bake_error("export_bake", target="SCENE", format="ALEMBIC")
    assert "has no Alembic exporter" in message, message
    assert harness.snapshot() == before and not _folder().exists()


def _read_pc2(path):
    head = np.fromfile(path, dtype=PC2_HEADER, count=1)[0]
    body = np.fromfile(path, dtype="<f4", offset=PC2_HEADER.itemsize)
    return head, body.reshape(int(head["samples"]), int(head["points"]), 3)


def _played(obj, frames):
    """obj's evaluated object-local vertices at each frame (what the viewport plays)."""
    out = []
    for f in frames:
        bpy.context.scene.frame_set(f)
        out.append(harness.evaluated_local(obj))
    return np.stack(out)


def _folder():
    return Path(_state["tmp"].name) / "scene_ipc"


def test_pc2_store_plays_the_bake_and_moves_back():
    keys = _baked_scene()
    frames = range(1, N_FRAMES + 1)
    assert bpy.ops.ipc.store_pc2(target="SCENE") == {"FINISHED"}
    for name in BODIES:
        obj = bpy.data.objects[name]
        assert obj.data.shape_keys is None and obj.ipc.is_baked
        (mod,) = obj.modifiers
        assert mod.type == "MESH_CACHE" and mod.filepath == f"//scene_ipc/{name}.pc2"
        head, data = _read_pc2(_folder() / f"{name}.pc2")
        assert head["magic"] == b"POINTCACHE2" and head["version"] == 1
        assert (head["start"], head["rate"], head["samples"]) == (1.0, 1.0, N_FRAMES)
        assert np.array_equal(data, keys[name])  # the keys' float32 bits
        np.testing.assert_allclose(_played(obj, frames), keys[name], rtol=0, atol=1e-6)

    # The .blend refers to the files by relative paths: the folder moves with it.
    moved = Path(_state["tmp"].name) / "moved"
    moved.mkdir()
    bpy.ops.wm.save_mainfile()
    Path(bpy.data.filepath).rename(moved / "scene.blend")
    _folder().rename(moved / "scene_ipc")
    bpy.ops.wm.open_mainfile(filepath=str(moved / "scene.blend"))
    top = bpy.data.objects["IPC_Square_Top"]
    np.testing.assert_allclose(_played(top, frames), keys[top.name], rtol=0, atol=1e-6)

    assert bpy.ops.ipc.store_keys(target="SCENE") == {"FINISHED"}
    for name in BODIES:
        obj = bpy.data.objects[name]
        assert not obj.modifiers and obj.ipc.is_baked
        assert np.array_equal(_keys(obj), keys[name])
        np.testing.assert_allclose(_played(obj, frames), keys[name], rtol=0, atol=1e-6)
    assert not (moved / "scene_ipc").exists()


def test_delete_bake_removes_pc2_and_exports():
    _baked_scene()
    assert bpy.ops.ipc.store_pc2(target="SCENE") == {"FINISHED"}
    assert sorted(p.name for p in _folder().iterdir()) == [f"{n}.pc2" for n in BODIES]
    # A bake stored as PC2 is baked again over its cache.
    assert bpy.ops.ipc.bake(target="SCENE") == {"FINISHED"}
    top = bpy.data.objects["IPC_Square_Top"]
    assert not top.modifiers and len(top.data.shape_keys.key_blocks) == N_FRAMES
    assert not _folder().exists()
    assert bpy.ops.ipc.store_pc2(target="SCENE") == {"FINISHED"}
    assert bpy.ops.ipc.delete_bake(target="SCENE") == {"FINISHED"}
    for name in BODIES:
        obj = bpy.data.objects[name]
        assert not obj.modifiers and obj.data.shape_keys is None and not obj.ipc.is_baked
    assert not _folder().exists()


def _open_failing(err_no, after_bytes):
    """An `open` for the pc2 module whose files raise OSError(err_no) once after_bytes were
    written (0: at open, as a read-only folder does)."""

    def fake_open(path, mode="r", *args, **kwargs):
        if after_bytes == 0:
            raise OSError(err_no, __import__("os").strerror(err_no), str(path))
        f = open(path, mode, *args, **kwargs)  # noqa: SIM115
        real_write, written = f.write, [0]

        def write(data):
            if written[0] + len(data) > after_bytes:
                raise OSError(err_no, __import__("os").strerror(err_no))
            written[0] += len(data)
            return real_write(data)

        f.write = write
        return f

    return fake_open


def test_pc2_write_failure_leaves_the_bake_unchanged():
    keys = _baked_scene()
    pc2 = harness.sub("pc2")
    before = harness.snapshot()
    for err_no, after, reason in (
        (errno.ENOSPC, 100, "No space left on device"),
        (errno.EROFS, 0, "Read-only file system"),
    ):
        pc2.open = _open_failing(err_no, after)
        try:
            message = harness.bake_error("store_pc2", target="SCENE")
        finally:
            del pc2.open
        assert reason in message and "unchanged" in message, message
        assert harness.snapshot() == before
        assert not _folder().exists()  # no partial file, no temporary file, no empty folder
    # A real failure: the folder's name is taken by a file.
    _folder().write_text("not a folder")
    message = harness.bake_error("store_pc2", target="SCENE")
    assert "scene_ipc" in message and "unchanged" in message, message
    assert harness.snapshot() == before
    for name in BODIES:
        assert np.array_equal(_keys(bpy.data.objects[name]), keys[name])


def test_alembic_and_usd_read_back_as_baked():
    """Where the build has the exporter the file re-imports frame by frame as baked (world
    space); where it has not (Debian's Blender 3.4), the operator says so and writes nothing."""
    keys = _baked_scene()
    exports = harness.sub("exports")
    frames = range(1, N_FRAMES + 1)
    world = {}
    for name in BODIES:
        obj = bpy.data.objects[name]
        m = np.array(obj.matrix_world)
        world[name] = keys[name] @ m[:3, :3].T + m[:3, 3]
    blend = bpy.data.filepath
    for fmt, ext, importer in (("ALEMBIC", "abc", "alembic_import"), ("USD", "usdc", "usd_import")):
        bpy.ops.wm.open_mainfile(filepath=blend)
        if not exports.available(fmt):
            message = harness.bake_error("export_bake", target="SCENE", format=fmt)
            assert f"has no {fmt.title() if fmt == 'ALEMBIC' else fmt} exporter" in message, message
            assert not _folder().exists()
            continue
        assert bpy.ops.ipc.export_bake(target="SCENE", format=fmt) == {"FINISHED"}
        path = _folder() / f"scene.{ext}"
        assert path.is_file() and [p.name for p in _folder().iterdir()] == [path.name]
        bpy.ops.wm.save_mainfile()
        for obj in list(bpy.data.objects):
            bpy.data.objects.remove(obj)
        assert getattr(bpy.ops.wm, importer)(filepath=str(path)) == {"FINISHED"}
        for name in BODIES:
            obj = next(o for o in bpy.data.objects if o.type == "MESH" and o.name.startswith(name))
            got = []
            for f in frames:
                bpy.context.scene.frame_set(f)
                m = np.array(obj.matrix_world)
                got.append(harness.evaluated_local(obj) @ m[:3, :3].T + m[:3, 3])
            np.testing.assert_allclose(np.stack(got), world[name], rtol=0, atol=2e-6, err_msg=f"{fmt} {name}")
        # Deleting the bake of a body in the export removes the export.
        bpy.ops.wm.open_mainfile(filepath=blend)
        bpy.context.view_layer.objects.active = bpy.data.objects[BODIES[0]]
        for obj in bpy.context.view_layer.objects:
            obj.select_set(obj.name == BODIES[0])
        assert bpy.ops.ipc.delete_bake(target="SELECTED") == {"FINISHED"}
        assert not path.exists() and not _folder().exists()


class _FilesCannotGo:
    """Path.unlink raising EROFS for the files of the bake's folder, as in a folder made
    read-only (the tests run as root, for whom chmod does not stop a removal)."""

    def __enter__(self):
        self.real = Path.unlink
        folder = _folder()

        def unlink(path, missing_ok=False):
            if Path(path).parent == folder:
                raise OSError(errno.EROFS, "Read-only file system", str(path))
            return self.real(path, missing_ok=missing_ok)

        Path.unlink = unlink
        return self

    def __exit__(self, *exc):
        Path.unlink = self.real
        return False


def _stores():
    """Per body: its modifiers (name, file) and its shape keys' names."""
    out = {}
    for name in BODIES:
        obj = bpy.data.objects[name]
        keys = obj.data.shape_keys
        out[name] = (
            [(m.name, getattr(m, "filepath", "")) for m in obj.modifiers],
            None if keys is None else [kb.name for kb in keys.key_blocks],
            obj.ipc.is_baked,
        )
    return out


def test_files_that_cannot_be_removed_leave_the_bake_unchanged():
    keys = _baked_scene()
    assert bpy.ops.ipc.store_pc2(target="SCENE") == {"FINISHED"}
    files = sorted(_folder().iterdir())
    before, stores = harness.snapshot(), _stores()
    for operator in ("delete_bake", "store_keys"):
        with _FilesCannotGo():
            message = harness.bake_error(operator, target="SCENE")
        assert "Could not remove" in message and "Read-only file system" in message, message
        assert "is unchanged" in message, message
        assert harness.snapshot() == before and _stores() == stores, operator
        assert sorted(_folder().iterdir()) == files
    for name in BODIES:  # still played from the files
        played = _played(bpy.data.objects[name], range(1, N_FRAMES + 1))
        np.testing.assert_allclose(played, keys[name], rtol=0, atol=1e-6)


def test_an_export_that_cannot_be_written_changes_nothing():
    _baked_scene()
    exports = harness.sub("exports")
    fmt = next((f for f in ("ALEMBIC", "USD") if exports.available(f)), None)
    if fmt is None:  # Debian's Blender 3.4: refused, nothing written
        _assert_no_exporter()
        return
    assert bpy.ops.ipc.export_bake(target="SCENE", format=fmt) == {"FINISHED"}
    (earlier,) = _folder().iterdir()
    content = earlier.read_bytes()
    before, records = harness.snapshot(), bpy.context.scene["_ipc_exports"].to_dict()
    real_replace = Path.replace

    def full_disk(path, target):
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    Path.replace = full_disk
    try:
        message = harness.bake_error("export_bake", target="SCENE", format=fmt)
    finally:
        Path.replace = real_replace
    assert f"Could not write '{earlier}': No space left on device" in message, message
    assert "nothing was exported (an earlier export is kept)" in message, message
    assert harness.snapshot() == before
    assert bpy.context.scene["_ipc_exports"].to_dict() == records
    assert list(_folder().iterdir()) == [earlier] and earlier.read_bytes() == content


def test_continue_and_bake_from_here_of_a_pc2_bake_say_what_to_do():
    keys = _baked_scene()
    assert bpy.ops.ipc.store_pc2(target="SCENE") == {"FINISHED"}
    bpy.context.scene.frame_end = N_FRAMES + 2
    before, stores = harness.snapshot(), _stores()
    for operator, kwargs in (
        ("continue_bake", {"target": "SCENE"}),
        ("bake_from_here", {"target": "SCENE", "frame": 3}),
    ):
        message = harness.bake_error(operator, **kwargs)
        assert "'IPC_Square_Bottom' is stored as a PC2 cache" in message, message
        assert "Store Bake as Shape Keys first" in message, message
        assert harness.snapshot() == before and _stores() == stores
    # What the message says works.
    assert bpy.ops.ipc.store_keys(target="SCENE") == {"FINISHED"}
    assert bpy.ops.ipc.continue_bake(target="SCENE") == {"FINISHED"}
    for name in BODIES:
        got = _keys(bpy.data.objects[name])
        assert len(got) == N_FRAMES + 2 and np.array_equal(got[:N_FRAMES], keys[name])


def test_continue_and_bake_from_here_say_an_export_is_older_than_the_bake():
    _baked_scene()
    exports, adapter = harness.sub("exports"), harness.sub("adapter")
    fmt = next((f for f in ("ALEMBIC", "USD") if exports.available(f)), None)
    if fmt is None:  # Debian's Blender 3.4: refused, nothing written
        _assert_no_exporter()
        return
    assert bpy.ops.ipc.export_bake(target="SCENE", format=fmt) == {"FINISHED"}
    (path,) = bpy.context.scene["_ipc_exports"].keys()
    bpy.context.scene.frame_end = N_FRAMES + 2
    job = adapter.BakeJob(bpy.context, resume=adapter.prepare_resume(bpy.context, "SCENE"))
    job.run()
    assert job.finish() is True
    assert job.outdated_exports == [path]
    assert f"'{path}' holds the bake as it was before; export again" in job.exports_warning
    rebake = harness.sub("rebake").prepare(bpy.context, "SCENE", 4)
    rebake.run()
    assert rebake.finish() is True and rebake.outdated_exports == [path]
    # A new bake removes the export (as before); nothing is then outdated.
    job = adapter.BakeJob(bpy.context, "SCENE")
    job.run()
    assert job.finish() is True and job.exports_warning == ""
    assert "_ipc_exports" not in bpy.context.scene or not bpy.context.scene["_ipc_exports"]


def test_the_live_view_of_a_bake_over_a_pc2_cache_shows_the_new_frames():
    """The Mesh Cache modifier of the earlier bake would show the cache over the live view's
    keys: it is switched off while the bake runs and on again when it is cancelled."""
    keys = _baked_scene()
    assert bpy.ops.ipc.store_pc2(target="SCENE") == {"FINISHED"}
    top = bpy.data.objects["IPC_Square_Top"]
    bpy.context.scene.ipc.substeps = 3  # another bake: its frames differ from the cache's
    ops = harness.sub("operators")
    job = ops.RunningBake.start(bpy.context, "SCENE")
    for _ in range(3):
        assert ops.RunningBake.tick(0.0) is False
    assert job.frames_done == 4
    shown = harness.evaluated_local(top)
    assert np.array_equal(shown, _keys(top)[3])  # the live view's newest frame
    assert not np.allclose(shown, keys[top.name][3], rtol=0, atol=1e-6)
    assert not top.modifiers[0].show_viewport
    ops.RunningBake.cancel()
    assert top.modifiers[0].show_viewport and top.data.shape_keys is None
    np.testing.assert_allclose(_played(top, range(1, N_FRAMES + 1)), keys[top.name], rtol=0, atol=1e-6)


def test_a_new_bake_whose_files_cannot_be_replaced_changes_nothing():
    """Baking again replaces the bodies' PC2 caches and exports; in a read-only folder (renames
    fail) the bake stops before the scene changes, with every file as it was."""
    keys = _baked_scene()
    assert bpy.ops.ipc.store_pc2(target="SCENE") == {"FINISHED"}
    files = {p: p.read_bytes() for p in _folder().iterdir()}
    bpy.context.scene.ipc.substeps = 3  # a bake that would differ
    before, stores = harness.snapshot(), _stores()
    real_rename, renamed = Path.rename, []

    def rename(path, target):  # the second body's file cannot go (the first comes back)
        if renamed and not str(path).endswith(".old"):
            raise OSError(errno.EROFS, "Read-only file system", str(path))
        renamed.append(path)
        return real_rename(path, target)

    Path.rename = rename
    try:
        message = harness.bake_error(target="SCENE")
    finally:
        Path.rename = real_rename
    assert "Could not remove" in message and "Read-only file system" in message, message
    assert "nothing was changed" in message, message
    assert harness.snapshot() == before and _stores() == stores
    assert {p: p.read_bytes() for p in _folder().iterdir()} == files  # the first one put back
    for name in BODIES:
        played = _played(bpy.data.objects[name], range(1, N_FRAMES + 1))
        np.testing.assert_allclose(played, keys[name], rtol=0, atol=1e-6)
