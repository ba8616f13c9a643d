"""Determinism (issue 6, point 4): the same scene and settings give bit-identical
trajectories, run to run and process to process.  Checked within each
linear-solver path ('numpy', 'scipy'); the two paths are not expected to agree
to the last bit with each other.
"""

import dataclasses
import hashlib
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from solver import simulate
from solver.examples import block_on_slope, compressing_squares, pile

ROOT = Path(__file__).resolve().parents[2]


def _stress(index):
    from tests.stress.generate import make_scene

    ss = make_scene(index)
    return ss.scene, min(ss.n_steps, 12)


# name -> (scene factory, steps); friction, colliders, both formulations, auto kappa.
# Kept small: every scene runs 2-6 times per test session.
SCENES = {
    "compressing-squares": (lambda: compressing_squares(n_seg=2), 30),
    "compressing-squares-convergent-auto-kappa": (
        lambda: compressing_squares(n_seg=2, formulation="convergent", kappa=None),
        30,
    ),
    "block-on-slope-sliding": (lambda: block_on_slope(theta=0.6, mu=0.3), 20),
    "pile-with-ceiling": (
        lambda: pile(n_shapes=2, n_columns=2, n_seg=2, n_rings=1, n_boundary=8, ceiling_speed=2.0),
        12,
    ),
    "stress-paddle": (lambda: _stress(44), None),  # rotating collider, a non-converged step
    "stress-crush": (lambda: _stress(63), None),  # ceiling crushing two squares
}


def _build(name, solver_path):
    make, steps = SCENES[name]
    out = make()
    scene, steps = out if isinstance(out, tuple) else (out, steps)
    params = dataclasses.replace(scene.params, linear_solver=solver_path, strict=False)
    return dataclasses.replace(scene, params=params), steps


def _digest(traj):
    """sha256 over every number of a trajectory except wall-clock times."""
    h = hashlib.sha256()
    h.update(np.ascontiguousarray(traj.times).tobytes())
    for a in (*traj.body_positions, *traj.collider_positions):
        h.update(np.ascontiguousarray(a).tobytes())
    for s in traj.stats:
        h.update(repr(dataclasses.replace(s, wall_time=0.0)).encode())
    return h.hexdigest()


def _run(name, solver_path):
    import warnings

    scene, steps = _build(name, solver_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # reported non-convergence
        return simulate(scene, steps)


def _assert_identical(a, b):
    assert np.array_equal(a.times, b.times)
    for x, y in zip(
        (*a.body_positions, *a.collider_positions), (*b.body_positions, *b.collider_positions), strict=True
    ):
        assert x.dtype == y.dtype and x.shape == y.shape
        # bitwise, NaN-safe and -0.0 vs 0.0 sensitive
        assert x.tobytes() == y.tobytes(), f"max diff {np.abs(x - y).max():.3g}"
    for s, t in zip(a.stats, b.stats, strict=True):
        assert dataclasses.replace(s, wall_time=0.0) == dataclasses.replace(t, wall_time=0.0)


@pytest.mark.parametrize("solver_path", ["numpy", "scipy"])
@pytest.mark.parametrize("name", SCENES)
def test_same_process_bit_identical(name, solver_path):
    a = _run(name, solver_path)
    b = _run(name, solver_path)
    assert any(np.abs(p[-1] - p[0]).max() > 1e-3 for p in a.body_positions)  # something happened
    _assert_identical(a, b)


@pytest.mark.parametrize("solver_path", ["numpy", "scipy"])
@pytest.mark.parametrize("name", ["compressing-squares", "stress-paddle"])
def test_other_process_bit_identical(name, solver_path):
    """A fresh interpreter (different memory layout) gives the same bits.

    Run to run means the same environment, so the child inherits the
    parent's whole environment: OpenBLAS picks its kernels from variables
    such as OPENBLAS_CORETYPE (set on some machines) and rounds differently
    for another thread count (seen with numpy 1.26's OpenBLAS on the dense
    numpy path); either is a different configuration, not a rerun."""
    code = textwrap.dedent(f"""
        import sys; sys.path.insert(0, {str(ROOT)!r})
        from tests.solver.test_determinism import _run, _digest
        print(_digest(_run({name!r}, {solver_path!r})))
    """)
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=str(ROOT),
        env=dict(os.environ),
        check=False,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == _digest(_run(name, solver_path))


def test_paths_agree_closely():
    """The numpy (LU) and scipy (Cholesky) paths solve the same systems: they
    round differently, so they agree to within what the Newton tolerance
    leaves open (1e-2 m/s * h = 1e-4 m per step), not bit for bit."""
    a, b = _run("compressing-squares", "numpy"), _run("compressing-squares", "scipy")
    for x, y in zip(a.body_positions, b.body_positions, strict=True):
        assert np.abs(x - y).max() < 1e-3
