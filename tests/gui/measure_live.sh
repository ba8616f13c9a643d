#!/usr/bin/env bash
# Bake time of the modal bake without and with the live view (issue 14), Blender GUI under Xvfb
# at the GUI tests' screen size. Usage: tests/gui/measure_live.sh [ROUNDS]   (default 2)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
GUI_SCREEN="${GUI_SCREEN:-1024x640x24}"
# shellcheck source=tests/gui/blender_gui.sh
source tests/gui/blender_gui.sh
gui_setup
gui_blender "${MEASURE_TIMEOUT:-1200}" tests/gui/measure_live.py "$GUI_TMP/result.json" "${1:-2}"
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); sys.exit(1 if r["failed"] or not r["passed"] else 0)' "$GUI_TMP/result.json"
