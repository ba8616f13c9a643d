#!/usr/bin/env bash
# Create (or reuse) the environments that `make test` and `make demo` need.
#
#   scripts/setup_env.sh np2        .venv-np2: numpy 2.x + scipy + pytest + hypothesis (solver suite)
#                                              + ruff (make lint) + openjd-cli (farm leg)
#   scripts/setup_env.sh bpy        .venv:     bpy==5.0.1 (pins numpy<2) + scipy + pytest + hypothesis
#   scripts/setup_env.sh blender    Debian's `blender` (3.4) with python3-numpy/python3-scipy
#
# Idempotent: a venv is reused when its stamp (requirement list + interpreter) matches and an
# import check passes; otherwise `pip install` brings it up to date. Requirement lists come from
# the extras in pyproject.toml (read with tomllib), so there is one place to change them.
# Environment: PYTHON (interpreter for the venvs, default python3.11 or python3).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

if [[ -z "${PYTHON:-}" ]]; then
    if command -v python3.11 >/dev/null 2>&1; then PYTHON=python3.11; else PYTHON=python3; fi
fi

log() { printf '[setup] %s\n' "$*"; }
die() { printf '[setup] ERROR: %s\n' "$*" >&2; exit 1; }

# Requirement strings of the given pyproject extras, one per line.
extras() {
    "$PYTHON" - "$@" <<'EOF'
import sys, tomllib
with open("pyproject.toml", "rb") as f:
    extras = tomllib.load(f)["project"]["optional-dependencies"]
for name in sys.argv[1:]:
    for req in extras[name]:
        print(req)
EOF
}

# ensure_venv DIR CHECK_PY REQUIREMENT...
#   CHECK_PY: python code run in the venv that raises if the environment is not usable.
ensure_venv() {
    local dir="$1" check="$2"; shift 2
    local stamp="$dir/.blender-ipc-stamp"
    local want
    want="$("$PYTHON" -c 'import sys; print(sys.version.split()[0])') $*"

    if [[ -x "$dir/bin/python" ]] && [[ -f "$stamp" ]] && [[ "$(cat "$stamp")" == "$want" ]] \
        && "$dir/bin/python" -c "$check" >/dev/null 2>&1; then
        log "$dir: up to date, reused ($*)"
        return 0
    fi
    # A venv whose interpreter no longer runs (moved tree, removed python) cannot be repaired.
    if [[ -e "$dir" ]] && ! "$dir/bin/python" -c 'pass' >/dev/null 2>&1; then
        log "$dir: broken interpreter, recreating"
        rm -rf -- "$dir"
    fi
    if [[ ! -x "$dir/bin/python" ]]; then
        log "$dir: creating with $PYTHON ($("$PYTHON" --version 2>&1))"
        "$PYTHON" -m venv "$dir" \
            || die "'$PYTHON -m venv' failed; on Debian/Ubuntu: apt-get install python3-venv"
    fi
    log "$dir: pip install $*"
    local t0=$SECONDS
    "$dir/bin/python" -m pip install --disable-pip-version-check "$@" \
        || die "pip install into $dir failed"
    "$dir/bin/python" -c "$check" || die "$dir: installed, but the import check failed"
    printf '%s' "$want" >"$stamp"
    log "$dir: ready in $((SECONDS - t0)) s"
}

setup_np2() {
    local reqs
    mapfile -t reqs < <(extras solver tests lint farm)
    # numpy 2.x explicitly: this venv exists to exercise the solver under numpy 2. It also holds
    # the pinned ruff of `make lint` and the openjd-cli of the farm leg (the check finds their
    # executables next to the interpreter).
    local check='import numpy, scipy, pytest, hypothesis, os, sys
assert int(numpy.__version__.split(".")[0]) >= 2, numpy.__version__
bin = os.path.dirname(sys.executable)
assert os.access(os.path.join(bin, "ruff"), os.X_OK), "no ruff"
assert os.access(os.path.join(bin, "openjd"), os.X_OK), "no openjd"'
    ensure_venv .venv-np2 "$check" "${reqs[@]}" "numpy>=2,<3"
}

setup_bpy() {
    "$PYTHON" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' \
        || die "the bpy 5.0.1 wheel exists only for CPython 3.11; run with PYTHON=python3.11"
    local reqs
    mapfile -t reqs < <(extras blender solver tests)
    if [[ ! -x .venv/bin/python ]]; then
        log ".venv: the bpy wheel is a 374 MB download (1.2 GB installed); the first run takes a while"
    fi
    ensure_venv .venv \
        'import bpy, numpy, scipy, pytest, hypothesis; assert bpy.app.version_string.startswith("5.0.1"), bpy.app.version_string' \
        "${reqs[@]}"
}

# Debian's blender runs the add-on tests in Blender 3.4 with Debian's Python 3.11 + numpy 1.24.
setup_blender() {
    local check='import numpy, scipy'
    if command -v blender >/dev/null 2>&1 && /usr/bin/python3 -c "$check" >/dev/null 2>&1; then
        log "blender: $(blender --version 2>/dev/null | head -n 1) found, reused"
        return 0
    fi
    local pkgs=(blender python3-numpy python3-scipy)
    if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null 2>&1; then
        log "installing ${pkgs[*]} with apt-get"
        DEBIAN_FRONTEND=noninteractive apt-get install -y "${pkgs[@]}" \
            || { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y "${pkgs[@]}"; } \
            || die "apt-get install ${pkgs[*]} failed"
    else
        die "Debian's blender is missing; install it once with: sudo apt-get install -y ${pkgs[*]}"
    fi
}

[[ $# -ge 1 ]] || die "usage: $0 np2|bpy|blender ..."
for what in "$@"; do
    case "$what" in
        np2) setup_np2 ;;
        bpy) setup_bpy ;;
        blender) setup_blender ;;
        *) die "unknown environment '$what' (expected np2, bpy or blender)" ;;
    esac
done
