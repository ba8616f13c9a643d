#!/usr/bin/env bash
# GUI leg of the add-on tests: Debian's blender (3.4) with its real UI under a virtual X server
# (Xvfb, software OpenGL via mesa), the built zip installed into a scratch user-scripts dir,
# tests/gui/gui_tests.py driving the modal bake from bpy.app.timers. See tests/gui/README.md.
#   tests/gui/run_gui_tests.sh
# Exit status non-zero when a scenario fails, no result file is written, or on timeout.
# Env: BLENDER (default: blender), GUI_TEST_TIMEOUT seconds (default 600).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
# shellcheck source=tests/gui/blender_gui.sh
# A small screen: with software OpenGL a viewport redraw costs time in proportion to its pixels.
GUI_SCREEN="${GUI_SCREEN:-1024x640x24}"
source tests/gui/blender_gui.sh

gui_setup
t0=$SECONDS
result="$GUI_TMP/result.json"
rc=0
gui_blender "${GUI_TEST_TIMEOUT:-600}" tests/gui/gui_tests.py "$result" || rc=$?
echo "blender exited with $rc after $((SECONDS - t0)) s"
python3 - "$result" "$rc" <<'PY'
import json, sys
path, rc = sys.argv[1], int(sys.argv[2])
try:
    res = json.load(open(path))
except (OSError, ValueError) as err:
    sys.exit(f"no GUI test result ({err}); blender exit code {rc}")
for name, secs in res["timings"].items():
    print(f"{'PASS' if name in res['passed'] else 'FAIL'} {name} ({secs} s)")
print(f"{len(res['passed'])} passed, {len(res['failed'])} failed")
ok = res["passed"] and not res["failed"] and rc == 0
sys.exit(0 if ok else 1)
PY
