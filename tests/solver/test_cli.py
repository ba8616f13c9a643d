"""`python -m solver` CLI: npz layout, exit codes, progress, end-to-end runs."""

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import solver
from solver.errors import ConvergenceError
from solver.examples import compressing_squares, free_fall, square_mesh
from solver.io import cli
from solver.io.scene_io import load_scene, save_scene, scene_to_dict
from solver.simulation import StepStats, Trajectory

REPO = Path(__file__).resolve().parents[2]


def run_cli(*args, timeout=600):
    """Run `python -m solver` in a subprocess from the repository root."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run(
        [sys.executable, "-m", "solver", *map(str, args)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def fake_stats(k, converged=True):
    return StepStats(
        step=k,
        time=0.01 * k,
        newton_iters=k + 1,
        converged=converged,
        min_distance=0.1 / k,
        active_contacts=2 * k,
        min_alpha=1.0 / k,
        wall_time=0.5 * k,
        collider_lag=1e-3 * k,
        kappa=1e5,
        message=f"m{k}",
    )


def fake_trajectory(scene, n_steps, bad_steps=()):
    """A trajectory with recognisable numbers (not produced by the solver)."""
    times = 0.01 * np.arange(n_steps + 1)
    bodies = tuple(b.vertices[None] + 100.0 * i + times[:, None, None] for i, b in enumerate(scene.bodies))
    cols = tuple(
        np.broadcast_to(c.vertices, (n_steps + 1, *c.vertices.shape)) - times[:, None, None]
        for c in scene.colliders
    )
    stats = tuple(fake_stats(k, k not in bad_steps) for k in range(1, n_steps + 1))
    return Trajectory(times, bodies, cols, stats)


@pytest.fixture
def fake_simulate(monkeypatch):
    """Replace the solver by a stub recording its calls; returns the call log."""
    calls = []

    def simulate(scene, n_steps, progress=None):
        calls.append((scene, n_steps))
        traj = fake_trajectory(scene, n_steps, getattr(simulate, "bad_steps", ()))
        for s in traj.stats:
            if progress:
                progress(s.step, n_steps, s)
        return traj

    monkeypatch.setattr(cli._simulation, "simulate", simulate)
    simulate.calls = calls
    return simulate


# --------------------------------------------------------------------------
# npz layout (solver stubbed)
# --------------------------------------------------------------------------


def test_example_writes_documented_npz(fake_simulate, tmp_path, capsys):
    out = tmp_path / "traj.npz"
    assert (
        cli.main(
            ["example", "compressing-squares", "--n-seg", "3", "--steps", "4", "--out", str(out), "--quiet"]
        )
        == 0
    )
    scene, n_steps = fake_simulate.calls[0]
    assert n_steps == 4 and len(scene.bodies[0].vertices) == 16
    with np.load(out, allow_pickle=False) as z:
        d = {k: z[k] for k in z.files}
    assert str(d["format"]) == "blender-ipc-trajectory" and int(d["version"]) == 1
    np.testing.assert_allclose(d["times"], [0, 0.01, 0.02, 0.03, 0.04])
    np.testing.assert_array_equal(d["body_offsets"], [0, 16, 32])
    assert d["positions"].shape == (5, 32, 2)
    top, bottom = scene.bodies
    # Positions are the bodies' arrays concatenated along the vertex axis.
    np.testing.assert_allclose(d["positions"][3, :16], top.vertices + 0.03)
    np.testing.assert_allclose(d["positions"][3, 16:], bottom.vertices + 100.03)
    assert d["body_names"].tolist() == ["top", "bottom"]
    # Triangles use the concatenated numbering.
    np.testing.assert_array_equal(d["triangle_offsets"], [0, 18, 36])
    np.testing.assert_array_equal(d["triangles"][18:], bottom.triangles + 16)
    np.testing.assert_array_equal(d["collider_offsets"], [0, 2])
    assert d["collider_names"].tolist() == ["ceiling"]
    np.testing.assert_array_equal(d["collider_edges"], [[0, 1]])
    np.testing.assert_allclose(d["collider_positions"][2], scene.colliders[0].vertices - 0.02)
    # Per-step diagnostics, one entry per step.
    np.testing.assert_array_equal(d["step"], [1, 2, 3, 4])
    np.testing.assert_array_equal(d["newton_iters"], [2, 3, 4, 5])
    np.testing.assert_array_equal(d["active_contacts"], [2, 4, 6, 8])
    np.testing.assert_allclose(d["min_distance"], [0.1, 0.05, 0.1 / 3, 0.025])
    np.testing.assert_allclose(d["min_alpha"], [1, 0.5, 1 / 3, 0.25])
    np.testing.assert_allclose(d["wall_time"], [0.5, 1.0, 1.5, 2.0])
    np.testing.assert_allclose(d["collider_lag"], [1e-3, 2e-3, 3e-3, 4e-3])
    assert d["converged"].dtype == bool and d["converged"].all()
    assert d["message"].tolist() == ["m1", "m2", "m3", "m4"]
    # The scene itself is embedded and loads back identically.
    again = load_scene(json.loads(str(d["scene_json"])))
    np.testing.assert_array_equal(again.bodies[1].vertices, bottom.vertices)
    # read_trajectory splits per body.
    r = cli.read_trajectory(out)
    np.testing.assert_allclose(r["body_positions"][1][3], bottom.vertices + 100.03)
    assert capsys.readouterr().err == ""


def test_run_scene_without_colliders(fake_simulate, tmp_path):
    scene_path, out = tmp_path / "s.json", tmp_path / "t.npz"
    save_scene(free_fall(), scene_path)
    assert cli.main(["run", str(scene_path), "--out", str(out), "--steps", "3", "-q"]) == 0
    with np.load(out) as z:
        assert z["collider_positions"].shape == (4, 0, 2)
        assert z["collider_edges"].shape == (0, 2)
        assert z["collider_names"].shape == (0,)
        assert z["positions"].shape == (4, 9, 2)


def test_duration_sets_step_count(fake_simulate, tmp_path):
    scene_path = tmp_path / "s.json"
    save_scene(free_fall(dt=0.01), scene_path)
    assert cli.main(["run", str(scene_path), "-o", str(tmp_path / "t.npz"), "--duration", "0.3", "-q"]) == 0
    assert fake_simulate.calls[-1][1] == 30
    assert cli.main(["run", str(scene_path), "-o", str(tmp_path / "t.npz"), "-q"]) == 0
    assert fake_simulate.calls[-1][1] == 100  # documented default


def test_example_default_steps_and_extra_args(fake_simulate, tmp_path):
    out = tmp_path / "t.npz"
    assert (
        cli.main(["example", "block-on-slope", "--arg", "theta=0.2", "--arg", "mu=0.1", "-o", str(out), "-q"])
        == 0
    )
    scene, n = fake_simulate.calls[-1]
    assert n == 100 and scene.bodies[0].material.mu == 0.1


def test_save_scene_only_does_not_simulate(fake_simulate, tmp_path):
    path = tmp_path / "cs.json"
    assert cli.main(["example", "compressing-squares", "--n-seg", "4", "--save-scene", str(path), "-q"]) == 0
    assert fake_simulate.calls == []
    s = load_scene(path)
    assert len(s.bodies[0].vertices) == 25
    np.testing.assert_array_equal(s.bodies[0].vertices, compressing_squares(4).bodies[0].vertices)


def test_no_strict_flag_and_unconverged_steps_exit_3(fake_simulate, tmp_path, capsys):
    fake_simulate.bad_steps = (2,)
    out = tmp_path / "t.npz"
    code = cli.main(["example", "free-fall", "--steps", "3", "--no-strict", "-o", str(out), "-q"])
    assert code == 3
    assert fake_simulate.calls[-1][0].params.strict is False
    with np.load(out) as z:  # still written, with the failure recorded
        assert z["converged"].tolist() == [True, False, True]
    assert "did not converge (first: step 2)" in capsys.readouterr().err


def test_friction_mollifier_flag_overrides_the_scene_and_is_recorded(fake_simulate, tmp_path):
    scene_path, out = tmp_path / "s.json", tmp_path / "t.npz"
    save_scene(free_fall(), scene_path)
    assert cli.main(["run", str(scene_path), "-o", str(out), "--steps", "2", "-q"]) == 0
    assert fake_simulate.calls[-1][0].params.friction_mollifier == "linear"  # the scene's (default)
    argv = ["run", str(scene_path), "-o", str(out), "--steps", "2", "--friction-mollifier", "ipc", "-q"]
    assert cli.main(argv) == 0
    assert fake_simulate.calls[-1][0].params.friction_mollifier == "ipc"
    with np.load(out) as z:  # the trajectory's scene is the one simulated
        assert json.loads(str(z["scene_json"]))["params"]["friction_mollifier"] == "ipc"
    # a scene asking for ipc keeps it without the flag, and the flag can set it back
    data = scene_to_dict(free_fall())
    data["params"]["friction_mollifier"] = "ipc"
    scene_path.write_text(json.dumps(data))
    assert cli.main(["run", str(scene_path), "-o", str(out), "--steps", "2", "-q"]) == 0
    assert fake_simulate.calls[-1][0].params.friction_mollifier == "ipc"
    argv[-2] = "linear"
    assert cli.main(argv) == 0
    assert fake_simulate.calls[-1][0].params.friction_mollifier == "linear"


def test_friction_mollifier_flag_on_an_example_reaches_the_saved_scene(fake_simulate, tmp_path):
    path = tmp_path / "slope.json"
    argv = ["example", "block-on-slope", "--friction-mollifier", "ipc", "--save-scene", str(path), "-q"]
    assert cli.main(argv) == 0
    assert load_scene(path).params.friction_mollifier == "ipc"


def test_friction_mollifier_flag_refuses_other_names(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["run", "s.json", "-o", "t.npz", "--friction-mollifier", "cubic"])
    assert exc.value.code == 2
    assert "invalid choice: 'cubic'" in capsys.readouterr().err


def test_friction_mollifier_flag_changes_a_real_run(tmp_path):
    """The block on the slope (tan theta < mu: it sticks, creeping at its static law)
    moves differently with the ipc profile: the flag reaches the solver."""
    runs = {}
    for name in ("linear", "ipc"):
        out = tmp_path / f"{name}.npz"
        argv = [
            "example",
            "block-on-slope",
            "--steps",
            "40",
            "--friction-mollifier",
            name,
            "-o",
            str(out),
            "-q",
        ]
        assert cli.main(argv) == 0
        with np.load(out) as z:
            runs[name] = z["positions"]
    assert np.abs(runs["ipc"] - runs["linear"]).max() > 1e-7


def test_convergence_error_exit_3(monkeypatch, tmp_path, capsys):
    def boom(scene, n_steps, progress=None):
        raise ConvergenceError("Newton cap of 1 iterations hit", step=7)

    monkeypatch.setattr(cli._simulation, "simulate", boom)
    out = tmp_path / "t.npz"
    assert cli.main(["example", "free-fall", "-o", str(out), "-q"]) == 3
    err = capsys.readouterr().err
    assert "did not converge at step 7" in err and "Newton cap" in err
    assert not out.exists()


# --------------------------------------------------------------------------
# bad input -> exit 2 with a message naming the problem
# --------------------------------------------------------------------------


def test_bad_scene_exit_2_names_field(fake_simulate, tmp_path, capsys):
    d = scene_to_dict(compressing_squares())
    d["bodies"][1]["material"]["nu"] = 0.7
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(d))
    assert cli.main(["run", str(path), "-o", str(tmp_path / "t.npz")]) == 2
    assert "bodies[1].material.nu: expected a number in (-1, 0.5), got 0.7" in capsys.readouterr().err
    assert fake_simulate.calls == []
    assert cli.main(["validate", str(path)]) == 2
    assert "bodies[1].material.nu" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv,message",
    [
        (["run", "MISSING.json", "-o", "OUT/t.npz"], "cannot read scene file"),
        (["run", "SCENE", "-o", "NODIR/sub/t.npz"], "does not exist"),
        (["run", "SCENE", "-o", "OUT/t.npz", "--steps", "0"], "--steps: expected a positive integer"),
        (
            ["run", "SCENE", "-o", "OUT/t.npz", "--steps", "3", "--duration", "1"],
            "either --steps or --duration",
        ),
        (["run", "SCENE", "-o", "OUT/t.npz", "--duration", "-1"], "--duration: expected a positive"),
        (["example", "nope", "-o", "OUT/t.npz"], "unknown example 'nope'"),
        (["example", "free-fall"], "nothing to do"),
        (["example", "free-fall", "--arg", "colour=3", "-o", "OUT/t.npz"], "has no parameter 'colour'"),
        (["example", "free-fall", "--arg", "novalue", "-o", "OUT/t.npz"], "expected KEY=VALUE"),
        (["example", "compressing-squares", "--n-seg", "0", "-o", "OUT/t.npz"], "n_seg must be >= 1"),
    ],
)
def test_bad_arguments_exit_2(argv, message, fake_simulate, tmp_path, capsys):
    scene_path = tmp_path / "s.json"
    save_scene(free_fall(), scene_path)
    argv = [
        a.replace("SCENE", str(scene_path))
        .replace("OUT", str(tmp_path))
        .replace("MISSING", str(tmp_path / "missing"))
        .replace("NODIR", str(tmp_path / "nodir"))
        for a in argv
    ]
    assert cli.main(argv) == 2
    assert message in capsys.readouterr().err
    assert fake_simulate.calls == []


def test_usage_error_exits_2(capsys):
    with pytest.raises(SystemExit) as info:
        cli.main(["run"])
    assert info.value.code == 2


# --------------------------------------------------------------------------
# progress reporting
# --------------------------------------------------------------------------


def test_progress_periodic_lines_when_not_a_tty():
    buf = io.StringIO()
    p = cli.Progress(buf, tty=False)
    for k in range(1, 51):
        p(k, 50, fake_stats(k))
    lines = buf.getvalue().splitlines()
    assert len(lines) == 10  # every 10% of the run
    assert lines[0].startswith("step 5/50 ") and lines[-1].startswith("step 50/50 ")
    assert "newton=6" in lines[0] and "contacts=10" in lines[0] and "\r" not in buf.getvalue()


def test_progress_single_updating_line_on_tty():
    buf = io.StringIO()
    p = cli.Progress(buf, tty=True)
    for k in range(1, 6):
        p(k, 5, fake_stats(k, converged=k != 3))
    text = buf.getvalue()
    assert text.count("\r") == 5 and text.count("\n") == 1 and text.endswith("\n")
    assert "NOT CONVERGED" in text.split("\r")[3]


def test_progress_goes_to_stderr(fake_simulate, tmp_path, capsys):
    assert cli.main(["example", "free-fall", "--steps", "20", "-o", str(tmp_path / "t.npz")]) == 0
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "step 20/20" in captured.err and "wrote" in captured.err


def test_list_and_print(tmp_path, capsys):
    assert cli.main(["list"]) == 0
    out = capsys.readouterr().out
    for name in ("compressing-squares", "block-on-slope", "free-fall", "pile"):
        assert name in out
    path = tmp_path / "min.json"
    path.write_text(
        json.dumps(
            {
                "format": "blender-ipc-scene",
                "version": 1,
                "bodies": [{"name": "t", "vertices": [[0, 0], [1, 0], [0, 1]], "triangles": [[0, 1, 2]]}],
            }
        )
    )
    assert cli.main(["print", str(path)]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["params"]["dt"] == 0.01 and printed["bodies"][0]["material"]["nu"] == 0.4


# --------------------------------------------------------------------------
# end to end with the real solver (subprocess, `python -m solver`)
# --------------------------------------------------------------------------


def test_end_to_end_example_and_run_agree(tmp_path):
    out1, out2, scene = tmp_path / "a.npz", tmp_path / "b.npz", tmp_path / "cs.json"
    r = run_cli(
        "example", "compressing-squares", "--n-seg", "2", "--steps", "5", "--out", out1, "--save-scene", scene
    )
    assert r.returncode == 0, r.stderr
    assert "step 5/5" in r.stderr
    with np.load(out1) as z:
        d = {k: z[k] for k in z.files}
    assert d["positions"].shape == (6, 18, 2)
    np.testing.assert_allclose(d["times"], 0.01 * np.arange(6), atol=1e-12)
    start = compressing_squares(2)
    np.testing.assert_array_equal(d["positions"][0, :9], start.bodies[0].vertices)
    # Free flight for 5 steps: everything moved down, the ceiling follows its path exactly.
    assert np.all(d["positions"][5, :, 1] < d["positions"][0, :, 1])
    np.testing.assert_allclose(d["collider_positions"][5, :, 1], 0.27 - 0.5 * 0.05, atol=1e-9)
    # Free flight may converge at the predictor already (0 iterations); never negative.
    assert d["converged"].all() and d["newton_iters"].dtype.kind == "i" and np.all(d["newton_iters"] >= 0)
    assert np.all(d["wall_time"] > 0) and np.all(np.isfinite(d["min_alpha"]))
    r = run_cli("run", scene, "--out", out2, "--steps", "5", "--quiet")
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    with np.load(out2) as z:
        np.testing.assert_allclose(z["positions"], d["positions"], rtol=0, atol=1e-12)


def test_end_to_end_validate(tmp_path):
    good = tmp_path / "good.json"
    save_scene(compressing_squares(), good)
    r = run_cli("validate", good)
    assert r.returncode == 0 and "OK" in r.stdout, r.stderr
    # Structurally fine but the bodies overlap: the simulation's geometric check rejects it.
    s = compressing_squares()
    d = scene_to_dict(s)
    d["bodies"][1]["vertices"] = (s.bodies[1].vertices + np.array([0.0, 0.3])).tolist()
    bad = tmp_path / "overlap.json"
    bad.write_text(json.dumps(d))
    r = run_cli("validate", bad)
    assert r.returncode == 2
    assert "error" in r.stderr and ("top" in r.stderr or "bottom" in r.stderr)


def test_end_to_end_non_convergence_exit_3(tmp_path):
    """A spinning body needs several Newton iterations; a cap of 1 cannot converge."""
    v, t = square_mesh(0.2, 2)
    spin = np.stack([-v[:, 1], v[:, 0]], 1) * 20.0
    scene = solver.Scene(
        (solver.Body("spinner", v, t, velocity=spin),),
        params=solver.SimParams(max_newton_iters=1, newton_tol=1e-9),
    )
    path = tmp_path / "spin.json"
    save_scene(scene, path)
    r = run_cli("run", path, "--out", tmp_path / "t.npz", "--steps", "2")
    assert r.returncode == 3, r.stderr
    assert "did not converge" in r.stderr
    r = run_cli("run", path, "--out", tmp_path / "t.npz", "--steps", "2", "--no-strict", "-q")
    assert r.returncode == 3
    with np.load(tmp_path / "t.npz") as z:
        assert not z["converged"].all()


def test_end_to_end_bad_input_exit_2(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text('{"format": "blender-ipc-scene", "version": 1, "bodies": [{"name": "x"}]}')
    r = run_cli("run", path, "--out", tmp_path / "t.npz")
    assert r.returncode == 2
    assert "bodies[0]: missing required field 'vertices'" in r.stderr
    assert "Traceback" not in r.stderr
