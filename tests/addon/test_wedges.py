"""Wedges: variants of settings baked to .blend files named after their values, with a contact
sheet of their last frames; from the command line's entry point and from the panel's operator."""

import tempfile
import zlib
from pathlib import Path

import bpy
import harness
import numpy as np

N_FRAMES = 20  # the squares touch from about frame 12 on: stiffness and friction matter


def setup_function():
    harness.setup()
    _state["tmp"] = tempfile.TemporaryDirectory(prefix="ipc_wedge_")


def teardown_function():
    harness.teardown()
    _state.pop("tmp").cleanup()


_state = {}


def _saved_scene():
    harness.sub("examples").build_compressing_squares(
        bpy.context, n_seg=2, fps=50, substeps=2, n_frames=N_FRAMES
    )
    path = Path(_state["tmp"].name) / "scene.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    return path


def _png_size(path):
    data = Path(path).read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    w, h = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    idat = data.index(b"IDAT")
    n = int.from_bytes(data[idat - 4 : idat], "big")
    raw = np.frombuffer(zlib.decompress(data[idat + 4 : idat + 4 + n]), np.uint8).reshape(h, 1 + 3 * w)
    return raw[:, 1:].reshape(h, w, 3)


def _tiles(img):
    """Tiles along the top row: runs of columns that are not all white (the gaps between tiles
    are pure white, the tiles' background is not)."""
    top = img[: img.shape[0] // 2]
    tile_cols = (top != 255).any(axis=2).any(axis=0)
    edges = np.flatnonzero(np.diff(tile_cols.astype(int)) == 1)
    return len(edges) + int(tile_cols[0])


def _last_key(path, name="IPC_Square_Top"):
    bpy.ops.wm.open_mainfile(filepath=str(path))
    kb = bpy.data.objects[name].data.shape_keys.key_blocks[-1]
    co = np.empty(len(kb.data) * 3, np.float32)
    kb.data.foreach_get("co", co)
    return co.reshape(-1, 3)


def test_cli_wedge_bakes_the_cartesian_product():
    src = _saved_scene()
    out = Path(_state["tmp"].name) / "out"
    wedges = harness.sub("wedges")
    result = wedges.main(["--set", "E=2e4,2e5", "--set", "substeps=2,3", "--out", str(out)])
    names = [p.name for p in result.files]
    assert names == [
        "scene_youngs_modulus-2e4_substeps-2.blend",
        "scene_youngs_modulus-2e4_substeps-3.blend",
        "scene_youngs_modulus-2e5_substeps-2.blend",
        "scene_youngs_modulus-2e5_substeps-3.blend",
    ]
    assert sorted(p.name for p in out.iterdir()) == sorted([*names, "scene_wedge.png"])
    last = {}
    for path in result.files:
        bpy.ops.wm.open_mainfile(filepath=str(path))
        e, substeps = path.stem.split("-")[1].split("_")[0], int(path.stem[-1])
        for obj in bpy.data.objects:
            if obj.ipc.role == "BODY":
                assert obj.ipc.youngs_modulus == np.float32(e) and obj.ipc.is_baked
        assert bpy.context.scene.ipc.substeps == substeps
        last[path.stem] = _last_key(path)
    # a stiffer body, or another time step, gives another bake
    values = list(last.values())
    assert all(not np.array_equal(a, b) for i, a in enumerate(values) for b in values[i + 1 :])
    img = _png_size(result.sheet)
    assert _tiles(img) == 4
    bpy.ops.wm.open_mainfile(filepath=str(src))  # the source file was not written
    assert bpy.data.objects["IPC_Square_Top"].data.shape_keys is None


def test_panel_wedge_of_one_setting():
    src = _saved_scene()
    assert bpy.ops.ipc.bake_wedge(setting="friction", values="0, 0.8") == {"FINISHED"}
    out = Path(_state["tmp"].name) / "scene_wedge"
    assert sorted(p.name for p in out.iterdir()) == [
        "scene_friction-0.8.blend",
        "scene_friction-0.blend",
        "scene_wedge.png",
    ]
    assert bpy.data.filepath == str(src) and not bpy.data.objects["IPC_Square_Top"].ipc.is_baked
    a, b = (_last_key(out / f"scene_friction-{v}.blend") for v in ("0", "0.8"))
    assert bpy.data.objects["IPC_Square_Top"].ipc.friction == np.float32(0.8)
    assert bpy.data.objects["IPC_Ceiling"].ipc.friction == np.float32(0.8)  # colliders too
    assert np.abs(a - b).max() > 1e-6  # friction changes the squeeze
    assert _tiles(_png_size(out / "scene_wedge.png")) == 2


def test_wedge_refuses_bad_input():
    _saved_scene()
    wedges = harness.sub("wedges")
    IPCError = harness.sub("common").IPCError
    for text, words in (("bogus=1,2", "Unknown setting 'bogus'"), ("mu", "name=value1")):
        try:
            wedges.parse_setting(text)
        except IPCError as err:
            assert words in str(err), err
        else:
            raise AssertionError(f"{text} accepted")
    assert "'x' is no value for the setting 'substeps'" in harness.bake_error(
        "bake_wedge", setting="substeps", values="2, x"
    )
    bpy.ops.wm.read_factory_settings(use_empty=True)  # a file never saved
    _reregister()
    assert "Save the .blend first" in harness.bake_error("bake_wedge", setting="substeps", values="2")


def test_a_wedge_that_cannot_write_reopens_the_source_with_a_message():
    src = _saved_scene()
    out = Path(_state["tmp"].name) / "scene_wedge"
    out.write_text("a file where the folder would go")
    message = harness.bake_error("bake_wedge", setting="friction", values="0, 0.8")
    assert f"Wedge: could not write '{out}'" in message and "source file is unchanged" in message, message
    assert bpy.data.filepath == str(src) and not bpy.data.objects["IPC_Square_Top"].ipc.is_baked
    # The contact sheet cannot be written (a full disk): no sheet, no temporary file.
    out.unlink()
    sheet = harness.sub("contact_sheet")
    sheet.open = lambda path, mode="r": (_ for _ in ()).throw(OSError(28, "No space left on device"))
    try:
        message = harness.bake_error("bake_wedge", setting="friction", values="0")
    finally:
        del sheet.open
    assert "scene_wedge.png': No space left on device" in message, message
    assert sorted(p.name for p in out.iterdir()) == ["scene_friction-0.blend"]
    assert bpy.data.filepath == str(src) and not bpy.data.objects["IPC_Square_Top"].ipc.is_baked


def _reregister():
    # read_factory_settings resets the preferences, which disables add-ons enabled there.
    harness.teardown()
    harness.setup()
