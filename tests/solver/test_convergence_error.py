"""ConvergenceError carries where the solver was furthest from converging (the vertex with the
largest last Newton step), so the add-on can name the object and its vertex."""

import numpy as np
import pytest

import solver
from solver.errors import ConvergenceError
from solver.examples import square_mesh


def test_non_convergence_names_the_vertex_with_the_largest_step():
    v, t = square_mesh(0.2, 2)
    still = solver.Body("still", v + np.array([1.0, 0.0]), t)
    spin = np.stack([-v[:, 1], v[:, 0]], 1) * 20.0
    spinner = solver.Body("spinner", v, t, velocity=spin)
    scene = solver.Scene(
        (still, spinner), params=solver.SimParams(max_newton_iters=1, newton_tol=1e-9, gravity=(0.0, 0.0))
    )
    sim = solver.Simulation(scene)
    with pytest.raises(ConvergenceError) as info:
        sim.step()
    err = info.value
    assert err.step == 1 and err.stats is not None and not err.stats.converged
    spinner_slice = sim.model.body_slices[1]
    assert spinner_slice.start <= err.vertex < spinner_slice.stop, (err.vertex, spinner_slice)


def test_convergence_error_without_a_vertex():
    assert ConvergenceError("x").vertex is None
    assert ConvergenceError("x", vertex=-1).vertex is None
    assert ConvergenceError("x", step=3, vertex=5).vertex == 5
