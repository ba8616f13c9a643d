"""Bake wedges of a saved scene from the command line: one .blend per combination of the values
given (the cartesian product), named after them, and a contact sheet PNG of their last frames.

    blender -b scene.blend --python scripts/wedge.py -- --set mu=0.1,0.5,0.9 --set substeps=2,4 --out dir/

(with the bpy module instead of Blender: ``python scripts/wedge.py --blend scene.blend --set ...``)

The add-on must be installed; it is enabled for the run if it is not yet, and disabled again
at the end so Blender exits cleanly. Exit status 1 on any failure (a variant that does not bake,
an unknown setting), with the reason on stderr.
"""

import importlib
import sys

import addon_utils


def _arguments():
    return sys.argv[sys.argv.index("--") + 1 :] if "--" in sys.argv else sys.argv[1:]


def _addon_module():
    """The installed add-on's module name (a legacy add-on or an extension) and whether this
    script enabled it."""
    names = [m.__name__ for m in addon_utils.modules() if m.__name__.split(".")[-1] == "blender_ipc"]
    if not names:
        raise SystemExit("wedge.py: the blender_ipc add-on is not installed")
    name = names[0]
    enabled = addon_utils.check(name)[1]
    if not enabled:
        addon_utils.enable(name, default_set=False)
    return name, not enabled


def main():
    name, enabled_here = _addon_module()
    try:
        wedges = importlib.import_module(f"{name}.wedges")
        wedges.main(_arguments())
    except Exception as err:
        print(f"wedge.py: {err}", file=sys.stderr)
        sys.exit(1)
    finally:
        if enabled_here:
            addon_utils.disable(name, default_set=False)


if __name__ == "__main__":
    main()
