"""A time step whose Newton solve does not converge is taken again as two
halves, and a half that fails again is kept as it is
(solver/simulation.py ``Simulation._advance``; docs/design/14-step-motion-check.md)."""

import warnings

import numpy as np
from invariants import grid_square

from solver import Body, HalfPlane, Material, Scene, SimParams, Simulation
from solver.motion_check import MotionCheckSettings
from solver.prescribed import PrescribedSettings
from solver.settings import SolverSettings


def landing_square(max_newton_iters, dt=0.1):
    """A tilted 20 cm square landing at 5 m/s on a ground with friction: at dt = 0.1 s
    its first step needs 11 Newton iterations, each half step fewer."""
    v, t = grid_square(0.2, 3, center=(0.0, 0.2), angle=0.3)
    body = Body("square", v, t, Material(E=1e6, nu=0.3, density=500.0, mu=0.3), velocity=(1.0, -5.0))
    ground = HalfPlane((0.0, 0.0), (0.0, 1.0), 0.3, "ground")
    params = SimParams(dt=dt, max_newton_iters=max_newton_iters, strict=False)
    return Scene((body,), (), (ground,), params=params)


def first_step(scene, failed_splits=None):
    settings = (
        None
        if failed_splits is None
        else SolverSettings(motion=MotionCheckSettings(failed_splits=failed_splits))
    )
    sim = Simulation(scene, settings=settings)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return sim, sim.step()


def test_a_step_that_did_not_converge_is_taken_again_in_halves():
    _, full = first_step(landing_square(10), failed_splits=0)
    assert not full.converged and full.newton_iters == 10  # the whole step fails at the cap
    sim, stats = first_step(landing_square(10))
    assert stats.converged and stats.message == ""
    assert (stats.failure_splits, stats.substeps, stats.motion_splits) == (1, 2, 0)
    assert stats.newton_iters > 10  # the rejected solve's iterations are counted
    # the halves are exactly two steps of dt / 2 from the same start
    halves = Simulation(landing_square(10))
    for _ in range(2):
        assert halves.step(0.05).converged
    np.testing.assert_array_equal(sim.positions, halves.positions)
    np.testing.assert_array_equal(sim.v, halves.v)
    assert sim.time == halves.time == 0.1


def test_a_step_that_never_converges_is_halved_only_failed_splits_times():
    """One Newton iteration never settles the landing: each failed solve is
    split failed_splits times at most, 2**failed_splits substeps, all reported."""
    for failed_splits in (0, 1, 2):
        _, stats = first_step(landing_square(1), failed_splits)
        assert not stats.converged and "did not converge" in stats.message
        assert stats.substeps == 2**failed_splits
        assert stats.failure_splits == 2**failed_splits - 1
        assert stats.newton_iters == 2 ** (failed_splits + 1) - 1  # one iteration per solve


def test_a_stiff_crush_converges_at_the_default_settings():
    """Stress scene 201 (an L, a zigzag and a star of E = 1e6 and 1e9 crushed by a
    ceiling, given kappa): its step 9 fails as a whole and converges in halves
    (in quarters before projected steps were extended along negative curvature,
    docs/design/02-exact-hessian-first.md); every step up to it converges at the
    default settings."""
    from tests.stress.generate import make_scene

    scene = make_scene(201).scene
    sim = Simulation(scene)
    stats = [sim.step() for _ in range(9)]
    assert all(s.converged for s in stats), [s.message for s in stats if not s.converged]
    assert stats[-1].failure_splits == 1 and stats[-1].substeps == 2
    # (nor the ceiling stopped when it fails: docs/design/10-prescribed-motion.md)
    no_halving = SolverSettings(
        motion=MotionCheckSettings(failed_splits=0), prescribed=PrescribedSettings(stop_pressed=False)
    )
    once = Simulation(scene, settings=no_halving)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ninth = [once.step() for _ in range(9)][-1]
    assert not ninth.converged and ninth.substeps == 1


def test_the_command_line_reports_the_halved_steps(tmp_path, capsys):
    from solver.io import cli
    from solver.io.scene_io import save_scene

    save_scene(landing_square(10), tmp_path / "landing.json")
    out = tmp_path / "landing.npz"
    code = cli.main(["run", str(tmp_path / "landing.json"), "-o", str(out), "--steps", "2", "--quiet"])
    assert code == cli.EXIT_OK
    err = capsys.readouterr().err
    assert "solver: 1 step(s) did not converge at full length and were taken again in halves (steps 1)" in err
    d = cli.read_trajectory(out)
    np.testing.assert_array_equal(d["failure_splits"], [1, 0])
    assert d["failure_splits"].dtype.kind == "i"
