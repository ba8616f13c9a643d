"""A fast subset of the stress corpus inside the normal test suite (issue 6).

The subset runs in one subprocess (``python3 -m tests.stress.run --subset``)
so that BLAS threads can be pinned before numpy loads (see FINDINGS.md P1);
each scene is then reported as its own test.  The whole corpus:
``python3 -m tests.stress.run --all --jobs 2``.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.stress.run import SUBSET

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def subset_results(tmp_path_factory):
    out = tmp_path_factory.mktemp("stress") / "subset.json"
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    proc = subprocess.run(
        [sys.executable, "-m", "tests.stress.run", "--subset", "--jobs", "2", "--json", str(out)],
        cwd=str(ROOT),
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert out.exists(), proc.stdout + proc.stderr
    results = {r["index"]: r for r in json.loads(out.read_text())}
    return proc, results


def test_runner_exit_status_matches(subset_results):
    proc, results = subset_results
    failed = [r for r in results.values() if r["failure"]]
    assert proc.returncode == (1 if failed else 0), proc.stdout + proc.stderr
    assert f"scenes: {len(SUBSET)}" in proc.stdout


@pytest.mark.parametrize("index", SUBSET)
def test_scene_clean(subset_results, index):
    _, results = subset_results
    r = results[index]
    assert r["steps_run"] == r["n_steps"] > 0
    assert r["failure"] == "", (
        f"scene {index} ({r['template']}): {r['failure']} at step {r['failed_step']}: {r['detail']}"
    )
    assert r["converged"] + r["not_converged"] == r["n_steps"]
