"""pytest set-up for the add-on tests (bpy wheel). The tests themselves use only plain asserts
and setup_function/teardown_function, so run_in_blender.py can run them inside Debian's Blender
(which has no pytest)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
