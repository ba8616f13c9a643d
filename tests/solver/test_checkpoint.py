"""Checkpoints (issue 14, point 3): N steps, checkpoint, text, a fresh Simulation restored from
it, M more steps give bit for bit the trajectory of N + M steps in one go, on both
linear-solver paths; with contact, friction, adaptive kappa, moving colliders and the band
ordering of the linear solves in play."""

import base64
import dataclasses
import io
import warnings
from pathlib import Path

import numpy as np
import pytest

from solver import Checkpoint, Simulation, SolverInputError
from solver.examples import block_on_slope, compressing_squares, free_fall, pile
from solver.io import checkpoint
from solver.linsolve import linalg
from solver.linsolve.linalg import BandOrdering


def _stress(index):
    from tests.stress.generate import make_scene

    return make_scene(index).scene


# name -> (scene factory, split points N, total steps): several splits per scene, before and
# after contact first appears (auto kappa balanced or not yet).
SCENES = {
    # 164 vertices (> 128 DOFs): the band-ordered Cholesky and its RCM permutation
    "compressing-squares-n6": (lambda: compressing_squares(n_seg=6), (7, 31, 41, 45), 50),
    "squares-convergent-auto-kappa": (
        lambda: compressing_squares(n_seg=4, formulation="convergent", kappa=None),
        (3, 26),
        32,
    ),
    "block-on-slope-sliding": (lambda: block_on_slope(theta=0.6, mu=0.3), (1, 9), 16),
    "block-on-slope-sticking": (lambda: block_on_slope(theta=0.2, mu=0.8), (5,), 12),
    "pile-with-ceiling": (
        lambda: pile(n_shapes=2, n_columns=2, n_seg=2, n_rings=1, n_boundary=8, ceiling_speed=2.0),
        (4, 8),
        12,
    ),
    "stress-paddle": (lambda: _stress(44), (5,), 10),  # rotating collider
    "stress-crush": (lambda: _stress(63), (6,), 11),  # ceiling crushing two squares
}


def _scene(name, solver_path):
    scene = SCENES[name][0]()
    params = dataclasses.replace(scene.params, linear_solver=solver_path, strict=False)
    return dataclasses.replace(scene, params=params)


def _steps(sim, n):
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # reported non-convergence
        for _ in range(n):
            st = sim.step()
            out.append((sim.positions, dataclasses.replace(st, wall_time=0.0)))
    return out


def _same(a, b):
    for k, ((xa, sa), (xb, sb)) in enumerate(zip(a, b, strict=True)):
        assert xa.tobytes() == xb.tobytes(), f"step {k}: max diff {np.abs(xa - xb).max():.3g}"
        assert np.array_equal(xa, xb)
        assert sa == sb, f"step {k}: {sa} != {sb}"


@pytest.mark.parametrize("solver_path", ["numpy", "scipy"])
@pytest.mark.parametrize("name", SCENES)
def test_restored_checkpoint_continues_bit_identically(name, solver_path):
    _, splits, total = SCENES[name]
    scene = _scene(name, solver_path)
    ref = _steps(Simulation(scene), total)
    assert np.abs(ref[-1][0] - Simulation(scene).positions).max() > 1e-4  # something happened
    for n in splits:
        first = Simulation(scene)
        head = _steps(first, n)
        cp = first.checkpoint()
        text = cp.to_text()
        _steps(first, 2)  # the checkpoint is a copy: later steps do not change it
        assert Checkpoint.from_text(text).to_bytes() == cp.to_bytes()
        fresh = Simulation(_scene(name, solver_path))  # a new scene object too, as after a reload
        fresh.restore(Checkpoint.from_text(text))
        assert fresh.step_index == n and fresh.time == ref[n - 1][1].time
        tail = _steps(fresh, total - n)
        _same(head + tail, ref)


def test_band_ordering_and_contacts_are_part_of_the_checkpoint():
    """The scenes above exercise what the checkpoint must carry: the RCM permutation of the
    banded solves (scipy path) or the nested dissection of the sparse Cholesky (numpy path),
    contact stencils and a balanced auto kappa."""
    for path in ("numpy", "scipy"):
        sim = Simulation(_scene("compressing-squares-n6", path))
        _steps(sim, 45)
        cp = sim.checkpoint()
        ordering = cp.ordering
        if path == "scipy":
            assert ordering.perm is not None and len(ordering.perm) > 128
        else:  # the vertex order of the nested dissection (2 DOFs per vertex)
            assert ordering.sparse.order is not None and 2 * len(ordering.sparse.order) > 128
        assert cp.state_stencils is not None and len(cp.state_stencils) > 0
    sim = Simulation(_scene("squares-convergent-auto-kappa", "numpy"))
    _steps(sim, 26)
    cp = sim.checkpoint()
    assert cp.kappa_balanced and cp.kappa > sim.kappa_min


def test_without_the_band_ordering_the_bits_differ():
    """Guards the test above: dropping the stored ordering object (a fresh nested dissection
    for the numpy path's sparse Cholesky at the restored state) changes the rounding after
    step 40 of this scene (the ordering was computed at an earlier pattern), so the ordering
    really has to be stored."""
    scene = _scene("compressing-squares-n6", "numpy")
    ref = _steps(Simulation(scene), 50)
    first = Simulation(scene)
    _steps(first, 40)
    cp = dataclasses.replace(first.checkpoint(), ordering=BandOrdering().state())
    fresh = Simulation.from_checkpoint(scene, cp)
    tail = _steps(fresh, 10)
    differs = any(a[0].tobytes() != b[0].tobytes() for a, b in zip(tail, ref[40:], strict=True))
    assert differs, "the permutation did not matter here: this test no longer guards anything"


def test_checkpoint_of_another_scene_is_refused():
    a = Simulation(compressing_squares(n_seg=2))
    _steps(a, 2)
    cp = a.checkpoint()
    with pytest.raises(SolverInputError, match="different scene"):
        Simulation(compressing_squares(n_seg=3)).restore(cp)
    with pytest.raises(SolverInputError, match="different scene"):
        Simulation(free_fall()).restore(cp)
    with pytest.raises(SolverInputError, match="base64"):
        Checkpoint.from_text("not a checkpoint!")
    with pytest.raises(SolverInputError, match="unreadable"):
        Checkpoint.from_bytes(b"PK but not really")


def test_a_checkpoint_naming_a_stopped_collider_the_scene_lacks_is_refused():
    """Stopped colliders are kin groups of the scene that are colliders: another index (a pin
    group, or none) is refused; a checkpoint without the field (older ones) stops none."""
    scene = pile(4, 2)
    sim = Simulation(scene)
    cp = sim.checkpoint()
    assert "stopped_colliders" not in np.load(io.BytesIO(cp.to_bytes())).files
    again = Simulation(scene)
    again.restore(Checkpoint.from_bytes(cp.to_bytes()))
    assert again._stopped_colliders == ()
    (ceiling,) = [gi for gi, g in enumerate(sim.model.kin_groups) if g.name == "ceiling"]
    stopped = dataclasses.replace(cp, stopped_colliders=(ceiling,))
    again.restore(Checkpoint.from_bytes(stopped.to_bytes()))
    assert again._stopped_colliders == (ceiling,)
    for bad in ((ceiling + 1,), (-1,)):
        with pytest.raises(SolverInputError, match="stopped colliders"):
            Simulation(scene).restore(dataclasses.replace(cp, stopped_colliders=bad))


def _with_meta(text, index, value):
    """The checkpoint text with field ``index`` of its meta data (format name, state
    format, scene fingerprint, solver build) replaced."""
    with np.load(io.BytesIO(base64.b64decode(text))) as z:
        arrays = {k: z[k] for k in z.files}
    meta = arrays["meta"].tolist()
    meta[index] = value
    arrays["meta"] = np.array(meta)
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def test_checkpoint_of_another_state_format_is_refused():
    """The state format names the fields a checkpoint holds and their meaning: one of
    another format is refused, naming both formats and what to do."""
    sim = Simulation(compressing_squares(n_seg=2))
    _steps(sim, 2)
    text = sim.checkpoint().to_text()
    assert Checkpoint.from_text(text).step_index == 2
    for other in ("1", "3"):
        with pytest.raises(checkpoint.OtherStateFormat) as err:
            Checkpoint.from_text(_with_meta(text, 1, other))
        message = str(err.value)
        assert f"state format is {other}, this solver reads format {checkpoint.STATE_FORMAT}" in message
        assert "simulate again from the start" in message
        assert (err.value.found, err.value.expected) == (other, checkpoint.STATE_FORMAT)
    with pytest.raises(SolverInputError, match="unknown format"):
        Checkpoint.from_text(_with_meta(text, 0, "something else"))


def test_checkpoint_of_the_earlier_format_is_refused():
    """A checkpoint taken by the solver before the state was declared (format 1: the
    ordering object stored by its attributes), as the add-on stored it in .blend files."""
    lines = (Path(__file__).parent / "data" / "checkpoint_format1.txt").read_text().splitlines()
    text = "".join(line for line in lines if not line.startswith("#"))
    with pytest.raises(checkpoint.OtherStateFormat, match="state format is 1, this solver reads format 2"):
        Checkpoint.from_text(text)
    assert checkpoint.STATE_FORMAT == 2


@pytest.mark.parametrize("solver_path", ["numpy", "scipy"])
def test_checkpoint_of_another_solver_build_with_the_same_format_continues(solver_path, monkeypatch):
    """The solver build (a hash of its source) is recorded, not checked: a checkpoint taken
    by another build of the same state format (an add-on update) restores and continues;
    here, with this solver's arithmetic, bit for bit."""
    scene = _scene("compressing-squares-n6", solver_path)
    ref = _steps(Simulation(scene), 45)
    first = Simulation(scene)
    head = _steps(first, 41)
    cp = first.checkpoint()
    assert cp.solver_build == checkpoint.solver_build()
    text = _with_meta(cp.to_text(), 3, "0123456789abcdef")  # taken by an earlier build
    monkeypatch.setattr(checkpoint, "solver_build", lambda: "fedcba9876543210")  # read by a later one
    restored = Checkpoint.from_text(text)
    assert restored.solver_build == "0123456789abcdef"
    assert Checkpoint.from_text(restored.to_text()).solver_build == "0123456789abcdef"
    _same(head + _steps(Simulation.from_checkpoint(scene, restored), 4), ref)


def test_the_checkpoint_holds_the_declared_fields_only():
    """Field by field, no object graph: the file's arrays are the declared state."""
    sim = Simulation(_scene("compressing-squares-n6", "numpy"))
    _steps(sim, 45)
    with np.load(io.BytesIO(sim.checkpoint().to_bytes())) as z:
        names = set(z.files)
    top = {"meta", "step_index", "time", "x", "v", "kappa", "kappa_balanced", "start_projected"}
    ordering = {"ordering.band", "ordering.sparse.dissection_flops", "ordering.sparse.n"}
    sparse = {f"ordering.sparse.{f}" for f in ("order", "bounds", "edges", "calls_since_analysis")}
    assert names == top | ordering | sparse | {"state_stencils"}
    state = sim._newton.ordering.state()
    again = BandOrdering.from_state(state).state()
    for a, b in ((state.sparse.order, again.sparse.order), (state.sparse.edges, again.sparse.edges)):
        assert a.dtype == b.dtype and np.array_equal(a, b)
    assert (state.band, state.sparse_n, state.sparse.n) == (again.band, again.sparse_n, again.sparse.n)


def test_solver_build_hashes_the_package_source_with_its_subpackages(tmp_path):
    import shutil

    package = Path(checkpoint.__file__).parent.parent  # solver/ (checkpoint is solver/io/)
    copy = tmp_path / "solver"
    shutil.copytree(package, copy, ignore=shutil.ignore_patterns("__pycache__"))
    assert checkpoint.source_hash(copy) == checkpoint.solver_build()
    newton = copy / "newton.py"
    newton.write_bytes(newton.read_bytes().replace(b"\n", b"\r\n"))
    assert checkpoint.source_hash(copy) == checkpoint.solver_build()  # line endings do not count
    (copy / "extra").mkdir()
    (copy / "extra" / "__init__.py").write_text("")
    with_sub = checkpoint.source_hash(copy)
    assert with_sub != checkpoint.solver_build()  # a new subpackage counts
    (copy / "extra" / "__init__.py").unlink()
    assert checkpoint.source_hash(copy) == checkpoint.solver_build()
    sub = copy / "linsolve" / "linalg.py"  # a file of an existing subpackage counts
    sub.write_bytes(sub.read_bytes().replace(b"def ", b"def  ", 1))
    assert checkpoint.source_hash(copy) != checkpoint.solver_build()


def test_fresh_simulation_checkpoint_round_trip():
    scene = free_fall(velocity=(0.3, 0.0))
    sim = Simulation(scene)
    cp = Checkpoint.from_text(sim.checkpoint().to_text())
    assert cp.step_index == 0 and cp.time == 0.0 and cp.state_stencils is None
    assert cp.ordering.perm is None and cp.ordering.sparse.order is None and not cp.kappa_balanced
    assert np.array_equal(cp.v, sim.v) and np.array_equal(cp.x, sim.x)
    ref = _steps(Simulation(scene), 5)
    _same(_steps(Simulation.from_checkpoint(scene, cp), 5), ref)


@pytest.mark.parametrize("solver_path", ["numpy", "scipy"])
def test_checkpoint_on_the_solver_paths_beyond_the_band(solver_path, monkeypatch):
    """The systems above the band limits (a sparse factorization, with whatever analysis it
    keeps between solves on the ordering object): forced here by band limits of zero."""
    monkeypatch.setattr(linalg, "BAND_FLOPS", 0)
    scene = _scene("compressing-squares-n6", solver_path)
    ref = _steps(Simulation(scene), 40)
    for n in (9, 33):
        first = Simulation(scene)
        head = _steps(first, n)
        fresh = Simulation.from_checkpoint(scene, Checkpoint.from_text(first.checkpoint().to_text()))
        _same(head + _steps(fresh, 40 - n), ref)


def test_newtons_projected_start_is_part_of_the_checkpoint():
    """On large systems (here: all) Newton starts a step on the projected Hessian
    when the last step's start showed the exact one indefinite; that state is
    stored, and the restored run continues bit for bit through steps that start
    projected and steps that start exact."""
    from solver.newton import NewtonSettings
    from solver.settings import SolverSettings

    large = SolverSettings(
        newton=NewtonSettings(
            projected_start_min_dofs=0,
            exact_cg_min_dofs=0,
            regime_rounds_min_dofs=0,
            release_majorized_min_dofs=0,
        )
    )
    scene = pile(12)
    total = 40
    starts = []
    ref_sim = Simulation(scene, settings=large)
    ref = []
    for _ in range(total):
        ref += _steps(ref_sim, 1)
        starts.append(ref_sim._newton.start_projected)
    assert any(starts) and not all(starts)  # both kinds of start are exercised
    # a step that starts projected where the exact Hessian is not shown indefinite
    # (an exact start would take another direction there)
    split = next(k for k in range(1, total) if starts[k - 1] and not starts[k])
    first = Simulation(scene, settings=large)
    head = _steps(first, split)
    cp = Checkpoint.from_text(first.checkpoint().to_text())
    assert cp.start_projected
    fresh = Simulation.from_checkpoint(scene, cp, settings=large)
    assert fresh._newton.start_projected
    _same(head + _steps(fresh, total - split), ref)
