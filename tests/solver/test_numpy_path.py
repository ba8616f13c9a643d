"""numpy-only path: with scipy made unimportable (a sys.meta_path finder
installed before the solver is imported, in a fresh interpreter) the solver
runs and reproduces the scipy path's trajectory; the PCG fallback drives a
simulation to the same result as the dense solve."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from solver import simulate
from solver.examples import compressing_squares
from solver.linsolve import linalg

ROOT = Path(__file__).resolve().parents[2]
STEPS = 60  # contact starts around step 25 (ceiling and ground)
N_SEG = 4

CHILD = textwrap.dedent("""
    import importlib.abc, sys, json

    class BlockScipy(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name == "scipy" or name.startswith("scipy."):
                raise ImportError("scipy hidden by the test")
            return None

    if {hide}:
        sys.meta_path.insert(0, BlockScipy())
    from dataclasses import replace
    import numpy as np
    from solver import simulate
    from solver.linsolve import linalg
    from solver.examples import compressing_squares
    assert linalg.HAVE_SCIPY != {hide}
    assert {hide} != any(m == "scipy" or m.startswith("scipy.") for m in sys.modules)
    {setup}
    scene = compressing_squares({n_seg})
    scene = replace(scene, params=replace(scene.params, linear_solver={solver!r}))
    traj = simulate(scene, {steps})
    np.savez(sys.argv[1], *traj.body_positions, ceiling=traj.collider_positions[0])
    json.dump([s.newton_iters for s in traj.stats], open(sys.argv[2], "w"))
""")


def _child_run(tmp_path, tag, hide, solver, n_seg=N_SEG, setup="pass"):
    """Trajectory and Newton iterations from a fresh interpreter with one BLAS
    thread (a multi-threaded LU rounds differently, and the numpy path's many
    tiny dense solves are ~40x slower threaded: tests/stress/FINDINGS.md P1)."""
    script = tmp_path / f"{tag}.py"
    script.write_text(CHILD.format(n_seg=n_seg, steps=STEPS, hide=hide, solver=solver, setup=setup))
    out, iters = tmp_path / f"{tag}.npz", tmp_path / f"{tag}.json"
    env = dict(
        os.environ,
        PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
        OPENBLAS_NUM_THREADS="1",
        OMP_NUM_THREADS="1",
        MKL_NUM_THREADS="1",
    )
    proc = subprocess.run(
        [sys.executable, str(script), str(out), str(iters)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return np.load(out), json.loads(iters.read_text())


@pytest.mark.parametrize("n_seg", [N_SEG, 8])  # 104 DOFs: dense; 328 DOFs: sparse Cholesky
def test_scipy_hidden_trajectory_equals_scipy_path(tmp_path, n_seg):
    """With scipy hidden the solver runs the numpy path: the same trajectory
    as linear_solver='numpy' with scipy present, and close to the scipy path's."""
    assert linalg.HAVE_SCIPY  # this process is the scipy reference
    hidden, hidden_iters = _child_run(tmp_path, "child_hidden", True, "auto", n_seg)
    numpy_ref, numpy_iters = _child_run(tmp_path, "child_numpy", False, "numpy", n_seg)
    for key in numpy_ref.files:
        np.testing.assert_allclose(hidden[key], numpy_ref[key], rtol=0, atol=1e-10)
    assert hidden_iters == numpy_iters
    from dataclasses import replace

    scene = compressing_squares(n_seg)
    scipy_ref = simulate(replace(scene, params=replace(scene.params, linear_solver="scipy")), STEPS)
    assert sum(s.active_contacts for s in scipy_ref.stats) > 0  # contact happens in the window
    # LU (numpy) and Cholesky (scipy) round differently, and discrete choices
    # (a CCD branch, one Newton iteration more or less) can turn 1e-16 into
    # a difference of the order of what the Newton tolerance leaves open
    # (1e-2 m/s * h = 1e-4 m per step).  The two must stay that close.
    for i, body in enumerate(scipy_ref.body_positions):
        np.testing.assert_allclose(hidden[f"arr_{i}"], body, rtol=0, atol=1e-3)
    np.testing.assert_allclose(hidden["ceiling"], scipy_ref.collider_positions[0], rtol=0, atol=1e-12)


def test_pcg_fallback_reproduces_dense_trajectory(monkeypatch):
    """Force the numpy path's PCG branch (DENSE_LIMIT below the system size)
    and compare with the dense Cholesky solve on a small contact scene."""
    from dataclasses import replace

    scene = compressing_squares(2)
    scene = replace(scene, params=replace(scene.params, linear_solver="numpy"))
    dense = simulate(scene, 60)
    calls = []
    real_pcg = linalg._pcg

    def counting_pcg(*a, **k):
        calls.append(1)
        return real_pcg(*a, **k)

    monkeypatch.setattr(linalg, "DENSE_LIMIT", 4)
    monkeypatch.setattr(linalg, "_pcg", counting_pcg)
    pcg = simulate(scene, 60)
    assert len(calls) > 0
    assert sum(s.active_contacts for s in dense.stats) > 0
    assert all(s.converged for s in pcg.stats)
    # CG stops at a 1e-10 residual: the first steps agree to round-off; once
    # contact starts, discrete choices (a CCD branch, one Newton iteration
    # more or less) may differ, within what the Newton tolerance leaves open
    # (1e-2 m/s * h = 1e-4 m per step)
    for a, b in zip(pcg.body_positions, dense.body_positions, strict=True):
        np.testing.assert_allclose(a[:20], b[:20], rtol=0, atol=1e-9)
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-3)
