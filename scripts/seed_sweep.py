"""Run every property test (hypothesis @given) of tests/solver with N different seeds.

    python3 scripts/seed_sweep.py [--seeds 20] [--python .venv-np2/bin/python]

CI runs the property tests derandomized (tests/conftest.py, profile 'ci'): the same examples on
every run.  This sweep is the other half: it explores, running the 'dev' profile once per seed
with --hypothesis-seed=SEED and an empty example database each time (so no earlier failure is
replayed), and prints one line per property test with its passed/failed seeds.  A failure it
finds is a bug to fix and then pin with @example; its seed replays it.
"""

import argparse
import ast
import collections
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def property_test_files():
    return sorted(p for p in (ROOT / "tests" / "solver").glob("test_*.py") if "@given" in p.read_text())


def property_tests(files):
    """{(file stem, test name)} of the test functions decorated with @given(...)."""
    found = set()
    for f in files:
        for node in ast.parse(f.read_text()).body:
            if isinstance(node, ast.FunctionDef) and any(
                isinstance(d, ast.Call) and getattr(d.func, "id", None) == "given"
                for d in node.decorator_list
            ):
                found.add((f.stem, node.name))
    return found


def run_seed(python, files, seed, out_dir):
    junit = out_dir / f"seed{seed}.xml"
    with tempfile.TemporaryDirectory() as db:
        env = dict(os.environ, HYPOTHESIS_PROFILE="dev", HYPOTHESIS_STORAGE_DIRECTORY=db)
        subprocess.run(
            [
                python,
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:cacheprovider",
                f"--hypothesis-seed={seed}",
                f"--junitxml={junit}",
                *map(str, files),
            ],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
    results = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        name = case.get("name").split("[")[0]
        stem = case.get("classname").split(".")[-1]
        failed = case.find("failure") is not None or case.find("error") is not None
        results[(stem, name)] = "fail" if failed else "pass"
    return results


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--first-seed", type=int, default=1)
    ap.add_argument("--python", default=sys.executable)
    args = ap.parse_args()
    files = property_test_files()
    tests = property_tests(files)
    outcome = collections.defaultdict(dict)
    with tempfile.TemporaryDirectory() as out:
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            for key, status in run_seed(args.python, files, seed, Path(out)).items():
                if key in tests:
                    outcome[key][seed] = status
            print(f"seed {seed} done", file=sys.stderr, flush=True)
    print("| property test | seeds passed | failing seeds |\n|---|---|---|")
    bad = 0
    for key in sorted(tests):
        runs = outcome.get(key, {})
        fails = [s for s, v in runs.items() if v != "pass"]
        bad += bool(fails) or not runs
        failing = ", ".join(map(str, fails)) or "-"
        print(f"| {key[0]}::{key[1]} | {len(runs) - len(fails)}/{len(runs)} | {failing} |")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
