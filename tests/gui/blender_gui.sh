# Shared by tests/gui/run_gui_tests.sh and scripts/screenshots.sh (sourced, not run).
# gui_setup: scratch dirs, the built zip, an empty .blend (a file given on the command line keeps
# the factory splash screen away). gui_blender TIMEOUT SCRIPT ARGS...: Blender's GUI under Xvfb.

BLENDER="${BLENDER:-blender}"
GUI_SCREEN="${GUI_SCREEN:-1600x1000x24}"

GUI_APT=(xvfb xauth libgl1-mesa-dri)   # virtual X server + software OpenGL (llvmpipe)

gui_setup() {
    if ! command -v xvfb-run >/dev/null || ! command -v xauth >/dev/null; then
        if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null; then
            echo "[gui] installing ${GUI_APT[*]} with apt-get"
            DEBIAN_FRONTEND=noninteractive apt-get install -y "${GUI_APT[@]}" >/dev/null \
                || { apt-get update >/dev/null \
                     && DEBIAN_FRONTEND=noninteractive apt-get install -y "${GUI_APT[@]}"; }
        else
            echo "xvfb-run is missing: sudo apt-get install -y ${GUI_APT[*]}" >&2; exit 1
        fi
    fi
    GUI_TMP="$(mktemp -d)"
    trap 'rm -rf "$GUI_TMP"' EXIT
    GUI_ZIP="$(python3 build_addon.py --out "$GUI_TMP/dist" | tail -n 1)"
    export BLENDER_USER_SCRIPTS="$GUI_TMP/scripts" BLENDER_USER_CONFIG="$GUI_TMP/config"
    export PYTHONDONTWRITEBYTECODE=1
    timeout 120 "$BLENDER" -b --factory-startup --python-exit-code 1 --python-expr \
        "import bpy, sys; bpy.ops.wm.read_factory_settings(use_empty=True); \
bpy.ops.wm.save_as_mainfile(filepath=sys.argv[-1])" -- "$GUI_TMP/start.blend" >/dev/null
}

gui_blender() {
    local limit="$1" script="$2"; shift 2
    # --enable-event-simulate: Window.event_simulate injects key events (and real input is
    # ignored). -a: a free display number, so parallel runs do not collide.
    timeout --kill-after=20 "$limit" xvfb-run -a -s "-screen 0 $GUI_SCREEN" \
        "$BLENDER" --factory-startup --enable-event-simulate --python-exit-code 1 \
        "$GUI_TMP/start.blend" --python "$script" -- "$GUI_ZIP" "$@"
}
