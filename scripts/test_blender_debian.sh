#!/usr/bin/env bash
# Debian-blender leg of the add-on tests: build the zip, install it into a scratch user-scripts
# dir inside `blender -b --factory-startup` as a user would, run tests/addon/test_*.py there.
# Exit status non-zero on any failure (--python-exit-code 1) or timeout.
#   scripts/test_blender_debian.sh [-k SUBSTRING]
# Env: BLENDER (default: blender), BLENDER_TEST_TIMEOUT seconds (default 900).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

BLENDER="${BLENDER:-blender}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

zip="$(python3 build_addon.py --out "$tmp/dist" | tail -n 1)"
export BLENDER_USER_SCRIPTS="$tmp/scripts" BLENDER_USER_CONFIG="$tmp/config"
export PYTHONDONTWRITEBYTECODE=1
timeout "${BLENDER_TEST_TIMEOUT:-900}" "$BLENDER" -b --factory-startup --python-exit-code 1 \
    --python tests/addon/run_in_blender.py -- "$zip" "$@"
