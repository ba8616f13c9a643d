#!/usr/bin/env bash
# Every test of the project, in "legs", with a summary at the end. `make test` runs this.
#
#   scripts/run_tests.sh              all legs (what CI runs)
#   scripts/run_tests.sh LEG...       only these legs (for development; the summary says so)
#
# Legs:
#   lint            ruff check + ruff format --check with the pinned ruff (.venv-np2); any finding
#                   or file to reformat fails it (`make lint` runs the same two commands)
#   solver-np2      tests/solver + tests/stress + tests/bench + tests/docs, numpy 2.x  (.venv-np2)
#   solver-np1      the same with numpy 1.x                                 (.venv, the bpy venv)
#   addon-bpy       tests/addon with pytest under the bpy 5.0.1 wheel (.venv)
#   addon-debian    scripts/test_blender_debian.sh: Debian's `blender -b` (3.4) with the built zip
#   gui             tests/gui/run_gui_tests.sh: Debian's blender GUI under Xvfb (modal bake, Esc,
#                   Cancel, undo); installs xvfb with apt-get when run as root
#   farm            tests/farm with pytest (.venv-np2, which holds openjd-cli): the Open Job
#                   Description template run by `openjd run` with Debian's blender (bake, then
#                   Workbench renders), the Flamenco job type, and the headless bake's clean exit
#                   in blender 3.4 and the bpy 5.0.1 wheel (.venv)
#
# A leg fails when its command fails or times out, when pytest collects no tests (exit code 5,
# or zero tests in the JUnit report), and when any test was skipped (a skipped test is not a
# passed test; set ALLOW_SKIPS=1 to only report skips). Environment: LEG_TIMEOUT (seconds per
# leg, default 900), PYTEST_ARGS (extra pytest arguments, e.g. "-x -k ccd").
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

ALL_LEGS=(lint solver-np2 solver-np1 addon-bpy addon-debian gui farm)
LEG_TIMEOUT="${LEG_TIMEOUT:-900}"
ALLOW_SKIPS="${ALLOW_SKIPS:-0}"
RESULTS=out/test-results
DEBIAN_RUNNER=scripts/test_blender_debian.sh
GUI_RUNNER=tests/gui/run_gui_tests.sh
# Plain-Python tests (no bpy): the solver suite, the bench smoke test and the docs' checks
# (examples run, links resolve, every message documented, versions agree).
SOLVER_DIRS=(tests/solver tests/stress tests/bench tests/docs)

if [[ $# -gt 0 ]]; then LEGS=("$@"); else LEGS=("${ALL_LEGS[@]}"); fi
for leg in "${LEGS[@]}"; do
    [[ " ${ALL_LEGS[*]} " == *" $leg "* ]] || { echo "unknown leg '$leg' (legs: ${ALL_LEGS[*]})" >&2; exit 2; }
done
mkdir -p "$RESULTS"

SUMMARY=()          # one line per step, printed at the end
FAILED=0
banner() { printf '\n======== %s ========\n' "$*"; }
record() {          # record NAME STATUS SECONDS DETAIL
    SUMMARY+=("$(printf '%-14s %-5s %6ss  %s' "$1" "$2" "$3" "$4")")
    [[ "$2" == PASS ]] || FAILED=1
}
wants() { [[ " ${LEGS[*]} " == *" $1 "* ]]; }

# Counts from a JUnit XML report: "tests failures errors skipped" (empty if unreadable).
junit_counts() {
    python3 - "$1" <<'EOF' 2>/dev/null
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
tot = [sum(int(s.get(k, 0)) for s in suites) for k in ("tests", "failures", "errors", "skipped")]
print(*tot)
EOF
}

# run_step NAME JUNIT_OR_DASH CMD...  -- runs CMD with a timeout, tees its log, records the result.
run_step() {
    local name="$1" junit="$2"; shift 2
    local log="$RESULTS/$name.log" t0=$SECONDS rc detail status
    banner "$name: $*"
    [[ "$junit" == - ]] || rm -f -- "$junit"
    timeout --kill-after=30 "$LEG_TIMEOUT" "$@" </dev/null 2>&1 | tee "$log"
    rc=${PIPESTATUS[0]}
    local dt=$((SECONDS - t0))
    status=PASS; detail="exit 0"
    case "$rc" in
        0) ;;
        5) status=FAIL; detail="pytest collected no tests (exit 5)" ;;
        124|137) status=FAIL; detail="timed out after ${LEG_TIMEOUT}s" ;;
        *) status=FAIL; detail="exit $rc" ;;
    esac
    if [[ "$junit" == - ]]; then
        # Runners without JUnit output end with a tally line: "N passed, M failed" (the Blender
        # leg) or "ruff: ..." (the lint leg).
        local tally; tally="$(grep -E '^([0-9]+ passed, [0-9]+ failed|ruff: )' "$log" | tail -n 1 || true)"
        [[ -z "$tally" ]] || detail="$tally; $detail"
    else
        local counts; counts="$(junit_counts "$junit")"
        if [[ -z "$counts" ]]; then
            status=FAIL; detail="$detail; no JUnit report"
        else
            local n f e s; read -r n f e s <<<"$counts"
            detail="$((n - f - e - s)) passed, $f failed, $e errors, $s skipped; $detail"
            if [[ "$n" == 0 ]]; then status=FAIL; detail="no tests collected; $detail"; fi
            if [[ "$s" != 0 && "$ALLOW_SKIPS" != 1 ]]; then
                status=FAIL; detail="$detail (skips count as failures; see -ra list above)"
            fi
        fi
    fi
    record "$name" "$status" "$dt" "$detail   [log: $log]"
    return 0
}

# setup_step NAME ENV  -- scripts/setup_env.sh ENV; on failure the dependent legs are not run.
declare -A READY=()
setup_step() {
    local t0=$SECONDS
    banner "setup $2"
    if scripts/setup_env.sh "$2"; then
        READY[$2]=1; record "setup-$2" PASS $((SECONDS - t0)) ""
    else
        record "setup-$2" FAIL $((SECONDS - t0)) "environment could not be set up"
    fi
}
not_run() { record "$1" FAIL 0 "not run: $2"; }

pytest_leg() {      # pytest_leg NAME VENV MAIN_TESTDIR [EXTRA_TESTDIR...] (extras only if present)
    local name="$1" venv="$2" junit="$RESULTS/$1.xml"; shift 2
    if [[ ! -d "$1" ]]; then not_run "$name" "$1 does not exist"; return; fi
    local dirs=("$1") d; shift
    for d in "$@"; do [[ -d "$d" ]] && dirs+=("$d"); done
    # shellcheck disable=SC2086  # PYTEST_ARGS is a list of words on purpose
    run_step "$name" "$junit" "$venv/bin/python" -m pytest "${dirs[@]}" --junitxml="$junit" ${PYTEST_ARGS:-}
}

# The lint leg's command (exported, run as `bash -c lint_run` under run_step's timeout): both ruff
# commands run, either failing fails the leg, and a last "ruff: ..." line gives the summary its tally.
lint_run() {
    local out check_rc format_rc findings reformat
    out="$(.venv-np2/bin/ruff check . 2>&1)"; check_rc=$?
    printf '%s\n' "$out"
    findings="$(sed -nE 's/^Found ([0-9]+) errors?\.$/\1/p' <<<"$out" | tail -n 1)"
    out="$(.venv-np2/bin/ruff format --check . 2>&1)"; format_rc=$?
    printf '%s\n' "$out"
    reformat="$(sed -nE 's/^([0-9]+) files? would be reformatted.*/\1/p' <<<"$out" | tail -n 1)"
    if [[ $check_rc -eq 0 && $format_rc -eq 0 ]]; then
        echo "ruff: clean (no findings, no file to reformat)"
        return 0
    fi
    if [[ $check_rc -ne 0 && -z "$findings" ]]; then findings="? (ruff check exit $check_rc)"; fi
    if [[ $format_rc -ne 0 && -z "$reformat" ]]; then reformat="? (ruff format exit $format_rc)"; fi
    echo "ruff: ${findings:-0} finding(s) of ruff check, ${reformat:-0} file(s) to reformat"
    return 1
}
export -f lint_run

T_START=$SECONDS
if wants lint || wants solver-np2 || wants farm; then setup_step np2 np2; fi
if wants solver-np1 || wants addon-bpy || wants farm; then setup_step bpy bpy; fi
if wants addon-debian || wants gui || wants farm; then setup_step blender blender; fi

if wants lint; then
    if [[ -n "${READY[np2]:-}" ]]; then run_step lint - bash -c lint_run
    else not_run lint "setup-np2 failed"; fi
fi
if wants solver-np2; then
    if [[ -n "${READY[np2]:-}" ]]; then pytest_leg solver-np2 .venv-np2 "${SOLVER_DIRS[@]}"
    else not_run solver-np2 "setup-np2 failed"; fi
fi
if wants solver-np1; then
    if [[ -n "${READY[bpy]:-}" ]]; then pytest_leg solver-np1 .venv "${SOLVER_DIRS[@]}"
    else not_run solver-np1 "setup-bpy failed"; fi
fi
if wants addon-bpy || wants addon-debian; then
    # Both add-on legs use the built zip in dist/ (the add-on tests may also build it themselves).
    if [[ -f build_addon.py ]]; then
        run_step build-addon - python3 build_addon.py
    else
        record build-addon FAIL 0 "build_addon.py does not exist yet"
    fi
fi
if wants addon-bpy; then
    if [[ -n "${READY[bpy]:-}" ]]; then pytest_leg addon-bpy .venv tests/addon
    else not_run addon-bpy "setup-bpy failed"; fi
fi
if wants addon-debian; then
    if [[ -z "${READY[blender]:-}" ]]; then
        not_run addon-debian "setup-blender failed"
    elif [[ ! -f "$DEBIAN_RUNNER" ]]; then
        # Never a silent pass: the Debian leg is required, so its absence is a failure.
        not_run addon-debian "$DEBIAN_RUNNER is missing (the Debian blender -b runner)"
    else
        run_step addon-debian - bash "$DEBIAN_RUNNER"
    fi
fi
if wants gui; then
    if [[ -z "${READY[blender]:-}" ]]; then not_run gui "setup-blender failed"
    elif [[ ! -f "$GUI_RUNNER" ]]; then not_run gui "$GUI_RUNNER is missing"
    else run_step gui - bash "$GUI_RUNNER"; fi
fi
if wants farm; then
    if [[ -z "${READY[np2]:-}" || -z "${READY[bpy]:-}" || -z "${READY[blender]:-}" ]]; then
        not_run farm "setup of np2, bpy or blender failed"
    else
        pytest_leg farm .venv-np2 tests/farm
    fi
fi

banner "summary ($((SECONDS - T_START)) s total)"
printf '%s\n' "${SUMMARY[@]}"
# Tests outside the legs' folders would silently never run: name them.
for dir in $(find tests -name 'test_*.py' -printf '%h\n' 2>/dev/null | cut -d/ -f1-2 | sort -u); do
    case " ${SOLVER_DIRS[*]} tests/addon tests/farm " in *" $dir "*) ;; *)
        echo "NOTE: $dir has test files that no leg runs (add a leg in scripts/run_tests.sh)" ;;
    esac
done
if [[ ${#LEGS[@]} -ne ${#ALL_LEGS[@]} ]]; then
    echo "NOTE: only legs '${LEGS[*]}' were run; 'make test' without LEGS runs all of them."
fi
if [[ $FAILED -ne 0 ]]; then
    echo "RESULT: FAILED"
    exit 1
fi
echo "RESULT: all legs passed"
