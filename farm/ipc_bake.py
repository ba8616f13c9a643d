"""Headless bake for render farms: open a .blend, bake every IPC body, save, quit cleanly.

    blender -b scene.blend --python-exit-code 1 --python farm/ipc_bake.py -- \\
        --output baked.blend [--frames 1-48] [--addon blender_ipc-0.1.0.zip] [--friction 0.3]

* The add-on comes from ``--addon`` (the built zip, or a folder holding the ``blender_ipc``
  package: nothing to install on the farm nodes) or, without it, from the add-on installed for
  the user running Blender (enabled here if the preferences do not enable it).
* ``bpy.ops.ipc.bake(target='SCENE')`` bakes synchronously (Blender runs in the background).
* Whatever this script registered is unregistered before it returns, success or not: a process
  that ends with an Operator class still registered hangs at exit under the bpy 4.5 wheel, and
  a farm task that never ends blocks its worker.
* Exit code 0 with a one-line summary (``blender-ipc bake: OK ...``); on any failure (a solver
  failure, nothing to bake, a file that cannot be written) the message is printed on stderr as
  ``blender-ipc bake: FAILED: ...`` and the exit code is 1. The output file is written only by a
  finished bake.

The same logic runs in the bpy wheel as a module (``--input`` opens the file there)::

    python -c "import sys, ipc_bake; sys.exit(ipc_bake.main(sys.argv[1:]))" --input s.blend --output b.blend
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
import tempfile
import zipfile

import bpy

ADDON = "blender_ipc"
SUMMARY_PREFIX = "blender-ipc bake:"


class BakeFailed(Exception):
    """A failure with a message for the farm log (no traceback needed)."""


def parse_args(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="ipc_bake.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--output", required=True, help="the baked .blend to write")
    ap.add_argument("--input", help="a .blend to open first (when Blender was not started with one)")
    ap.add_argument("--frames", type=frame_range, help="frames to bake, 'START-END' (default: the file's)")
    ap.add_argument("--addon", help="the add-on zip or a folder holding the blender_ipc package")
    ap.add_argument("--friction", type=float, help="set the friction of every body (a wedge value)")
    ap.add_argument("--target", choices=("SCENE", "SELECTED"), default="SCENE")
    return ap.parse_args(argv)


def frame_range(text: str) -> tuple[int, int]:
    start, sep, end = text.partition("-")
    try:
        first, last = int(start), int(end if sep else start)
    except ValueError:
        raise argparse.ArgumentTypeError(f"frames must be START-END, got {text!r}") from None
    if last <= first:
        raise argparse.ArgumentTypeError(f"frames {text!r}: the end must come after the start")
    return first, last


def script_args(argv: list[str]) -> list[str]:
    """The arguments after Blender's ``--`` (all of them when there is none)."""
    return argv[argv.index("--") + 1 :] if "--" in argv else argv[1:]


@contextlib.contextmanager
def addon_enabled(source: str | None):
    """The add-on registered for the duration of the block, and unregistered after it if it was
    registered here. source: zip / folder to import it from, or None for the installed add-on."""
    if source is None:
        yield from _installed_addon()
        return
    with tempfile.TemporaryDirectory(prefix="ipc_addon_") as tmp:
        folder = source
        if zipfile.is_zipfile(source):
            with zipfile.ZipFile(source) as zf:
                zf.extractall(tmp)
            folder = tmp
        sys.path.insert(0, os.path.abspath(folder))
        try:
            module = importlib.import_module(ADDON)
            module.register()
            try:
                yield module
            finally:
                module.unregister()
        finally:
            sys.path.remove(os.path.abspath(folder))


def _installed_addon():
    import addon_utils

    if addon_utils.check(ADDON)[1]:  # enabled by the preferences: Blender unregisters it
        yield importlib.import_module(ADDON)
        return
    module = addon_utils.enable(ADDON, default_set=False)
    if module is None:
        raise BakeFailed(f"the add-on '{ADDON}' is not installed; pass --addon PATH_TO_ZIP")
    try:
        yield module
    finally:
        addon_utils.disable(ADDON, default_set=False)


def bodies(scene) -> list:
    return [o for o in scene.objects if o.type == "MESH" and o.ipc.role == "BODY"]


def apply_overrides(scene, args) -> None:
    if args.frames is not None:
        scene.ipc.use_frame_range = True
        scene.ipc.frame_start, scene.ipc.frame_end = args.frames
    if args.friction is not None:
        for obj in bodies(scene):
            obj.ipc.friction = args.friction


def bake_and_save(args) -> str:
    """Bake and write args.output; returns the summary line. Raises BakeFailed."""
    if args.input:
        bpy.ops.wm.open_mainfile(filepath=os.path.abspath(args.input))
    scene = bpy.context.scene
    apply_overrides(scene, args)
    try:
        result = bpy.ops.ipc.bake(target=args.target)
    except RuntimeError as err:  # the operator's error report, raised in background mode
        raise BakeFailed(str(err).removeprefix("Error: ").strip()) from None
    if "FINISHED" not in result:
        raise BakeFailed(scene.ipc.stat_message or f"the bake ended with {sorted(result)}")
    baked = [o for o in bodies(scene) if o.ipc.is_baked]
    output = os.path.abspath(args.output)
    os.makedirs(os.path.dirname(output), exist_ok=True)
    bpy.ops.wm.save_as_mainfile(filepath=output)
    first, last = baked[0].ipc.bake_frame_start, baked[0].ipc.bake_frame_end
    frictions = sorted({round(o.ipc.friction, 6) for o in baked})
    return (
        f"{SUMMARY_PREFIX} OK frames {first}-{last}, {len(baked)} bodies (friction "
        f"{', '.join(map(str, frictions))}), {scene.ipc.stat_wall_time:.1f} s -> {output}"
    )


def main(argv: list[str]) -> int:
    """Run the bake; returns the process exit code (0 baked and saved, 1 failed, 2 bad usage)."""
    try:
        args = parse_args(argv)
    except SystemExit as err:  # argparse's usage error: a code, not Blender's abrupt exit
        return int(err.code or 0)
    try:
        with addon_enabled(args.addon):
            print(bake_and_save(args), flush=True)
    except Exception as err:  # every failure ends as a message and an exit code, not a hang
        print(f"{SUMMARY_PREFIX} FAILED: {err}", file=sys.stderr, flush=True)
        return 1
    return 0


if __name__ == "__main__":
    code = main(script_args(sys.argv))
    if code:
        # Blender ignores a script's return value; SystemExit ends it with this code (the add-on
        # is unregistered by then).
        sys.exit(code)
