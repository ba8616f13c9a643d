"""The scene files shipped in examples/ load, validate and run."""

import glob
import os

import numpy as np
import pytest

import solver
from solver.io.scene_io import load_scene

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FILES = sorted(glob.glob(os.path.join(ROOT, "examples", "*.json")))


def test_there_are_example_files():
    assert FILES, "examples/*.json missing"


@pytest.mark.parametrize("path", FILES, ids=os.path.basename)
def test_example_file_runs(path):
    scene = load_scene(path)
    traj = solver.simulate(scene, 150)
    assert all(s.converged for s in traj.stats)
    for pos in traj.body_positions:
        assert np.all(np.isfinite(pos))
        # the shipped scenes all rest on a ground at y = 0: nothing goes through it
        assert pos[..., 1].min() > 0.0
