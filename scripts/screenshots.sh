#!/usr/bin/env bash
# Regenerate the README screenshots of the add-on's UI (docs/images/gui_*.png): Debian's blender
# GUI under Xvfb (software OpenGL), the built zip installed in a scratch dir, the compressing-
# squares example baked through the modal operator. See tests/gui/screenshots.py.
#   scripts/screenshots.sh [OUT_DIR]        (default docs/images)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=tests/gui/blender_gui.sh
source tests/gui/blender_gui.sh

out="$(realpath -m "${1:-docs/images}")"
gui_setup
t0=$SECONDS
rc=0
gui_blender "${SCREENSHOT_TIMEOUT:-600}" tests/gui/screenshots.py "$GUI_TMP/result.json" "$out" \
    || rc=$?
python3 - "$GUI_TMP/result.json" "$rc" <<'PY'
import json, sys
try:
    res = json.load(open(sys.argv[1]))
except (OSError, ValueError) as err:
    sys.exit(f"screenshots failed: no result ({err}); blender exit code {sys.argv[2]}")
for name, tb in res["failed"].items():
    print(f"FAILED {name}\n{tb}")
sys.exit(1 if res["failed"] or sys.argv[2] != "0" else 0)
PY
echo "screenshots in $out ($((SECONDS - t0)) s):"
ls -l "$out"/gui_*.png
