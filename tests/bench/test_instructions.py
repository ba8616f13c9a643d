"""bench/instructions.py: the script it runs under valgrind steps the scene
(run here without valgrind, which CI does not install), and the per-step
count is the difference of the two runs divided by the steps."""

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))

import instructions  # noqa: E402


@pytest.mark.parametrize("no_motion", [False, True])
def test_stepper_runs_a_bench_scene(no_motion):
    code = instructions._STEPPER.format(tree=ROOT, name="S1", steps=2, solver="auto", no_motion=no_motion)
    run = subprocess.run(
        [sys.executable, "-c", code],
        check=False,
        cwd=ROOT,
        env=dict(os.environ),
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr


def test_per_step_subtracts_the_set_up(monkeypatch):
    counts = {1: 1000, 11: 3500}
    monkeypatch.setattr(instructions, "count_instructions", lambda tree, name, steps, *a: counts[steps])
    assert instructions.per_step(ROOT, "S1", 10, "auto") == 250.0
