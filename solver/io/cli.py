"""Command line interface: ``python -m solver {run,example,validate,list} ...``.

Exit codes: 0 success, 2 bad input (scene, arguments, unwritable output),
3 the solver did not converge.  See ``docs/scene_format.md`` for the scene
format and the layout of the trajectory ``.npz`` file.
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import itertools
import json
import math
import os
import sys
import time

import numpy as np

from .. import simulation as _simulation
from ..basis import RIGID_STRAIN_LIMIT
from ..collider_check import compact_ranges
from ..errors import ConvergenceError, SolverInputError
from ..examples import DEFAULT_STEPS, EXAMPLES
from ..friction import MOLLIFIERS
from ..settings import SolverSettings
from ..sleep import SleepSettings
from .scene_io import dumps_scene, load_scene, save_scene, scene_to_dict

EXIT_OK, EXIT_BAD_INPUT, EXIT_NOT_CONVERGED = 0, 2, 3
TRAJECTORY_FORMAT = "blender-ipc-trajectory"
TRAJECTORY_VERSION = 1
STAT_FIELDS = (
    "step",
    "time",
    "newton_iters",
    "converged",
    "min_distance",
    "active_contacts",
    "min_alpha",
    "wall_time",
    "collider_lag",
    "animated_collider_distance",
    "kappa",
    "motion_splits",
    "substeps",
    "motion_unresolved",
    "failure_splits",
)
# from StepStats.sleep (solver/sleep.py): bodies asleep at the end of each step
SLEEP_FIELDS = ("sleeping",)
# per-collider diagnostics, written as (S, C) arrays
COLLIDER_STAT_FIELDS = ("collider_lags", "animated_collider_distances")


class _BadInput(Exception):
    """Command-line problem reported with exit code 2."""


# --------------------------------------------------------------------------
# trajectory file
# --------------------------------------------------------------------------


def _offsets(sizes):
    return np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)]).astype(np.int64)


def trajectory_arrays(scene, traj):
    """Dict of arrays written to the .npz (layout documented in docs/scene_format.md)."""
    n_frames = len(traj.times)
    body_off = _offsets([len(b.vertices) for b in scene.bodies])
    col_off = _offsets([len(c.vertices) for c in scene.colliders])

    def stack(parts):
        if not parts:
            return np.zeros((n_frames, 0, 2))
        return np.concatenate([np.asarray(p, float).reshape(n_frames, -1, 2) for p in parts], axis=1)

    def shifted(index_arrays, offsets, width):
        if not index_arrays:
            return np.zeros((0, width), np.int64)
        return np.concatenate(
            [np.asarray(a, np.int64) + o for a, o in zip(index_arrays, offsets, strict=True)]
        )

    out = {
        "format": np.array(TRAJECTORY_FORMAT),
        "version": np.array(TRAJECTORY_VERSION),
        "times": np.asarray(traj.times, float),
        "positions": stack(traj.body_positions),
        "body_offsets": body_off,
        "body_names": np.array([b.name for b in scene.bodies], dtype=str),
        "triangles": shifted([b.triangles for b in scene.bodies], body_off[:-1], 3),
        "triangle_offsets": _offsets([len(b.triangles) for b in scene.bodies]),
        "collider_positions": stack(traj.collider_positions),
        "collider_offsets": col_off,
        "collider_names": np.array([c.name for c in scene.colliders], dtype=str).reshape(-1),
        "collider_edges": shifted([c.edges for c in scene.colliders], col_off[:-1], 2),
        "collider_edge_offsets": _offsets([len(c.edges) for c in scene.colliders]),
        "scene_json": np.array(json.dumps(scene_to_dict(scene))),
    }
    stats = traj.stats
    counts = ("step", "newton_iters", "active_contacts", "motion_splits", "substeps", "motion_unresolved")
    counts += ("failure_splits",)
    dtypes = dict.fromkeys(counts, np.int64) | {"converged": bool}
    for name in STAT_FIELDS:
        out[name] = np.array([getattr(s, name) for s in stats], dtype=dtypes.get(name, float))
    for name in SLEEP_FIELDS:
        out[f"{name}_bodies"] = np.array([getattr(s.sleep, name) for s in stats], np.int64)
    n_col = len(scene.colliders)
    for name in COLLIDER_STAT_FIELDS:
        # NaN rows for stats that do not carry one value per collider (hand-made StepStats)
        rows = [getattr(s, name) if len(getattr(s, name)) == n_col else (np.nan,) * n_col for s in stats]
        out[name] = np.array(rows, float).reshape(len(stats), n_col)
    out["message"] = np.array([s.message for s in stats], dtype=str).reshape(-1)
    out["notes"] = np.array(getattr(traj, "notes", ()), dtype=str).reshape(-1)
    return out


def write_trajectory(path, scene, traj):
    """Write the trajectory atomically (temporary file, then rename)."""
    arrays = trajectory_arrays(scene, traj)
    tmp = f"{path}.tmp-{os.getpid()}"
    try:
        with open(tmp, "wb") as fh:
            np.savez_compressed(fh, **arrays)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def read_trajectory(path):
    """Load a trajectory .npz into a dict; adds 'body_positions' / 'collider_positions_list'."""
    with np.load(path, allow_pickle=False) as data:
        out = {k: data[k] for k in data.files}
    if str(out.get("format")) != TRAJECTORY_FORMAT:
        raise SolverInputError(f"{path}: not a {TRAJECTORY_FORMAT} file")
    off = out["body_offsets"]
    out["body_positions"] = [out["positions"][:, a:b] for a, b in itertools.pairwise(off)]
    off = out["collider_offsets"]
    out["collider_positions_list"] = [out["collider_positions"][:, a:b] for a, b in itertools.pairwise(off)]
    return out


# --------------------------------------------------------------------------
# progress reporting
# --------------------------------------------------------------------------


def _fmt_seconds(sec):
    if not math.isfinite(sec):
        return "?"
    sec = round(sec)
    h, rem = divmod(sec, 3600)
    m, s = divmod(rem, 60)
    return f"{h}h{m:02d}m" if h else (f"{m}m{s:02d}s" if m else f"{s}s")


class Progress:
    """progress(step, n_steps, stats) callback writing to a stream.

    On a TTY one line is rewritten in place; otherwise a line is printed every
    ~10% of the run, every `interval` seconds and at the last step.
    """

    def __init__(self, stream=None, interval=30.0, tty=None):
        self.stream = sys.stderr if stream is None else stream
        self.tty = self.stream.isatty() if tty is None else tty
        self.interval = interval
        self.start = time.perf_counter()
        self.last_print = self.start
        self.width = 0

    def line(self, step, n_steps, stats):
        elapsed = time.perf_counter() - self.start
        eta = elapsed / step * (n_steps - step) if step else float("nan")
        ok = "" if stats.converged else " NOT CONVERGED"
        # the motion check split the step (substeps) or left a crossing at its depth limit
        split = f" substeps={stats.substeps}" if stats.substeps > 1 else ""
        split += f" CROSSING x{stats.motion_unresolved}" if stats.motion_unresolved else ""
        return (
            f"step {step}/{n_steps} t={stats.time:.3f}s newton={stats.newton_iters} "
            f"contacts={stats.active_contacts} min_d={stats.min_distance:.2e} "
            f"alpha={stats.min_alpha:.2f} lag={stats.collider_lag:.1e} "
            f"col_d={stats.animated_collider_distance:.1e} "
            f"elapsed {_fmt_seconds(elapsed)} eta {_fmt_seconds(eta)}{split}{ok}"
        )

    def __call__(self, step, n_steps, stats):
        now = time.perf_counter()
        text = self.line(step, n_steps, stats)
        if self.tty:
            pad = " " * max(0, self.width - len(text))
            self.width = len(text)
            self.stream.write("\r" + text + pad + ("\n" if step >= n_steps else ""))
        else:
            every = max(1, n_steps // 10)
            if step % every and step < n_steps and now - self.last_print < self.interval:
                return
            self.stream.write(text + "\n")
        self.last_print = now
        self.stream.flush()

    def finish(self):
        """End an in-place line early (e.g. the run stopped with an error)."""
        if self.tty and self.width:
            self.stream.write("\n")
            self.stream.flush()
            self.width = 0


# --------------------------------------------------------------------------
# commands
# --------------------------------------------------------------------------


def _steps(args, scene, default):
    if args.steps is not None and args.duration is not None:
        raise _BadInput("give either --steps or --duration, not both")
    if args.duration is not None:
        if not (args.duration > 0 and math.isfinite(args.duration)):
            raise _BadInput(f"--duration: expected a positive number of seconds, got {args.duration}")
        # Small tolerance so e.g. 3.0 / 0.01 counts as 300 steps, not 301.
        return max(1, math.ceil(args.duration / scene.params.dt - 1e-9))
    steps = default if args.steps is None else args.steps
    if steps < 1:
        raise _BadInput(f"--steps: expected a positive integer, got {steps}")
    return steps


def _check_writable(path, flag):
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise _BadInput(f"{flag} {path}: directory {parent} does not exist")
    if os.path.isdir(path):
        raise _BadInput(f"{flag} {path}: is a directory")


def _simulate_and_write(scene, n_steps, out, args):
    if args.no_strict:
        scene = dataclasses.replace(scene, params=dataclasses.replace(scene.params, strict=False))
    progress = None if args.quiet else Progress()
    # --sleep: sleeping bodies on (else the solver's defaults)
    extra = {"settings": SolverSettings(sleep=SleepSettings(enabled=True))} if args.sleep else {}
    try:
        traj = _simulation.simulate(scene, n_steps, progress=progress, **extra)
    except ConvergenceError as exc:
        if progress:
            progress.finish()
        where = f" at step {exc.step}" if exc.step is not None else ""
        print(
            f"solver: did not converge{where}: {exc}\n"
            f"(no trajectory written; --no-strict keeps going and records converged=false)",
            file=sys.stderr,
        )
        return EXIT_NOT_CONVERGED
    except SolverInputError:
        if progress:
            progress.finish()
        raise
    write_trajectory(out, scene, traj)
    failed = [s.step for s in traj.stats if not s.converged]
    if not args.quiet:
        print(f"wrote {out}: {n_steps} steps, {len(traj.times)} frames", file=sys.stderr)
    for line in report_lines(scene, traj):
        print(f"solver: {line}", file=sys.stderr)
    if failed:
        print(
            f"solver: {len(failed)} step(s) did not converge (first: step {failed[0]}); "
            f"trajectory written to {out}",
            file=sys.stderr,
        )
        return EXIT_NOT_CONVERGED
    return EXIT_OK


def report_lines(scene, traj):
    """What a run says after its trajectory is written: the solver's notes, warnings about
    colliders and rigid bodies, what the motion check and sleeping did."""
    lines = [f"note: {note}" for note in traj.notes]
    lines += [f"warning: {line}" for line in collider_overlaps(scene, traj.stats)]
    lines += [f"warning: {line}" for line in rigid_strain_lines(scene, traj.stats)]
    return lines + motion_check_lines(traj.stats) + sleep_lines(traj.stats, scene.params.newton_tol)


def motion_check_lines(stats):
    """What the motion check did over a run, in words (none when it never fired)."""
    split = [s.step for s in stats if s.motion_splits]
    left = [s.step for s in stats if s.motion_unresolved]
    halved = [s.step for s in stats if s.failure_splits]
    lines = []
    if split:
        substeps = sum(s.substeps for s in stats if s.motion_splits)
        lines.append(
            f"motion check: {len(split)} step(s) would have passed a body through another along "
            f"their straight motion and were taken in {substeps} substeps (steps {compact_ranges(split)})"
        )
    if halved:
        lines.append(
            f"{len(halved)} step(s) did not converge at full length and were taken again "
            f"in halves (steps {compact_ranges(halved)})"
        )
    if left:
        lines.append(
            f"warning: motion check: {len(left)} step(s) still pass a body through another at the "
            f"smallest substep (steps {compact_ranges(left)}); use a smaller time step"
        )
    return lines


def sleep_lines(stats, newton_tol):
    """What sleeping did over a run (--sleep), in words (none when nothing slept)."""
    most = max((s.sleep.sleeping for s in stats), default=0)
    if not most:
        return []
    fell = sum(s.sleep.fell_asleep for s in stats)
    woke = sum(s.sleep.woke for s in stats)
    energy = sum(s.sleep.dropped_energy for s in stats)
    probes = [s.sleep.probe_speed for s in stats if not math.isnan(s.sleep.probe_speed)]
    quiet = sum(1 for s in stats if s.sleep.sleeping and not s.unknowns)
    line = (
        f"sleeping: at most {most} bodies asleep at once ({fell} fell asleep, {woke} woken); "
        f"{quiet} step(s) with every body asleep solved nothing; kinetic energy dropped {energy:.3g} J"
    )
    if probes:
        line += f"; probe steps: sleeping bodies at most {max(probes):.3g} m/s (newton_tol {newton_tol:g})"
    return [line]


def collider_overlaps(scene, stats):
    """One line per collider that overlaps the bodies at its animated position in some step
    (it lagged behind its animation there): the steps as ranges, the largest overlap and lag."""
    lines = []
    for j, col in enumerate(scene.colliders):
        rows = [s for s in stats if len(s.animated_collider_distances) == len(scene.colliders)]
        hit = [s for s in rows if s.animated_collider_distances[j] < 0.0]
        if hit:
            depth = -min(s.animated_collider_distances[j] for s in hit)
            lag = max(s.collider_lags[j] for s in rows)
            lines.append(
                f"collider '{col.name}' is animated into the bodies at steps "
                f"{compact_ranges([s.step for s in hit])}: overlap up to {depth:.3g} m, "
                f"lag behind its animation up to {lag:.3g} m"
            )
    return lines


def rigid_strain_lines(scene, stats):
    """One line per rigid body strained beyond RIGID_STRAIN_LIMIT in some step (something
    crushes it or pulls it apart): the steps as ranges and the largest strain."""
    lines = []
    rows = [s for s in stats if len(s.rigid_strains) == len(scene.bodies)]
    for i, body in enumerate(scene.bodies):
        hit = [s for s in rows if s.rigid_strains[i] > RIGID_STRAIN_LIMIT]
        if hit:
            worst = max(s.rigid_strains[i] for s in hit)
            lines.append(
                f"rigid body '{body.name}' is squashed or stretched by up to {100 * worst:.2g} % at "
                f"steps {compact_ranges([s.step for s in hit])} (a rigid body holds its shape to "
                f"{100 * RIGID_STRAIN_LIMIT:g} % unless something forces it: a collider crushing it, "
                "pins pulling it apart)"
            )
    return lines


def with_overrides(scene, args):
    """The scene with the command line's parameter overrides (--friction-mollifier)."""
    if args.friction_mollifier is None:
        return scene
    params = dataclasses.replace(scene.params, friction_mollifier=args.friction_mollifier)
    return dataclasses.replace(scene, params=params)


def cmd_run(args):
    _check_writable(args.out, "--out")
    scene = with_overrides(load_scene(args.scene), args)
    return _simulate_and_write(scene, _steps(args, scene, 100), args.out, args)


def _example_kwargs(name, factory, args):
    kwargs = {}
    if args.n_seg is not None:
        kwargs["n_seg"] = args.n_seg
    for item in args.arg or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise _BadInput(f"--arg {item!r}: expected KEY=VALUE")
        try:
            kwargs[key.replace("-", "_")] = json.loads(value)
        except json.JSONDecodeError:
            kwargs[key.replace("-", "_")] = value
    params = inspect.signature(factory).parameters
    for key in kwargs:
        if key not in params:
            raise _BadInput(f"example {name!r} has no parameter {key!r} (parameters: {', '.join(params)})")
    return kwargs


def cmd_example(args):
    name = args.name.replace("_", "-")
    if name not in EXAMPLES:
        raise _BadInput(f"unknown example {args.name!r} (available: {', '.join(EXAMPLES)})")
    if args.out is None and args.save_scene is None:
        raise _BadInput("nothing to do: give --out TRAJ.npz and/or --save-scene SCENE.json")
    for path, flag in ((args.out, "--out"), (args.save_scene, "--save-scene")):
        if path is not None:
            _check_writable(path, flag)
    factory = EXAMPLES[name]
    kwargs = _example_kwargs(name, factory, args)
    try:
        scene = factory(**kwargs)
    except (TypeError, ValueError) as exc:
        raise _BadInput(f"example {name!r}: {exc}") from None
    # Round trip through the JSON form so the run uses exactly what a saved file would hold.
    scene = with_overrides(load_scene(scene_to_dict(scene)), args)
    if args.save_scene is not None:
        save_scene(scene, args.save_scene)
        if not args.quiet:
            print(f"wrote {args.save_scene}", file=sys.stderr)
    if args.out is None:
        return EXIT_OK
    return _simulate_and_write(scene, _steps(args, scene, DEFAULT_STEPS.get(name, 100)), args.out, args)


def cmd_validate(args):
    scene = load_scene(args.scene)
    try:
        _simulation.Simulation(scene)  # geometric checks (overlap, penetration, ...)
        deep = "geometry checked"
    except NotImplementedError:
        deep = "structure only: simulation core unavailable for geometric checks"
    n_v = sum(len(b.vertices) for b in scene.bodies)
    n_t = sum(len(b.triangles) for b in scene.bodies)
    print(
        f"{args.scene}: OK ({deep}): {len(scene.bodies)} bodies ({n_v} vertices, {n_t} triangles), "
        f"{len(scene.colliders)} colliders, {len(scene.half_planes)} half-planes, "
        f"dt={scene.params.dt:g} s"
    )
    return EXIT_OK


def cmd_list(args):
    for name, factory in EXAMPLES.items():
        doc = (inspect.getdoc(factory) or "").splitlines()[0]
        print(f"{name:22s} {doc}")
    return EXIT_OK


def cmd_print(args):
    sys.stdout.write(dumps_scene(load_scene(args.scene)))
    return EXIT_OK


# --------------------------------------------------------------------------
# argument parsing
# --------------------------------------------------------------------------


def _add_run_options(p):
    p.add_argument("--steps", type=int, help="number of time steps")
    p.add_argument("--duration", type=float, help="simulated seconds (instead of --steps)")
    p.add_argument(
        "--no-strict",
        action="store_true",
        help="keep going when a step does not converge (exit code 3 at the end)",
    )
    p.add_argument("--quiet", "-q", action="store_true", help="no progress output")
    p.add_argument(
        "--friction-mollifier",
        choices=tuple(MOLLIFIERS),
        help="friction's static zone, overriding the scene's params.friction_mollifier: 'linear' "
        "(force proportional to the slip speed below eps_v) or 'ipc' (the IPC papers' "
        "f1 = 2y/eps - y^2/eps^2); the trajectory's scene_json records the one used",
    )
    p.add_argument(
        "--sleep",
        action="store_true",
        help="let still contact islands sleep (docs/design/18-sleeping.md): a settled pile costs "
        "almost nothing per step; bodies moving slower than newton_tol may be stopped",
    )


def build_parser():
    parser = argparse.ArgumentParser(
        prog="python -m solver",
        description="2D frictional-contact IPC solver. Exit codes: 0 ok, 2 bad input, 3 not converged.",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("run", help="simulate a JSON scene and write a trajectory .npz")
    p.add_argument("scene", help="scene JSON file (docs/scene_format.md)")
    p.add_argument("--out", "-o", required=True, help="output trajectory .npz")
    _add_run_options(p)
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("example", help="run (or save) a built-in example scene")
    p.add_argument("name", help=f"one of: {', '.join(EXAMPLES)}")
    p.add_argument("--n-seg", type=int, help="mesh resolution (cells per square side)")
    p.add_argument(
        "--arg", action="append", metavar="KEY=VALUE", help="extra example parameter (JSON value), repeatable"
    )
    p.add_argument("--out", "-o", help="output trajectory .npz")
    p.add_argument("--save-scene", metavar="SCENE.json", help="also write the scene as JSON")
    _add_run_options(p)
    p.set_defaults(func=cmd_example)

    p = sub.add_parser("validate", help="check a scene file and report problems")
    p.add_argument("scene")
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser("list", help="list built-in examples")
    p.set_defaults(func=cmd_list)

    p = sub.add_parser("print", help="print a scene file normalized (all defaults filled in)")
    p.add_argument("scene")
    p.set_defaults(func=cmd_print)
    return parser


def main(argv=None):
    """Entry point; returns the exit code (argparse usage errors exit 2 directly)."""
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (SolverInputError, _BadInput) as exc:
        print(f"solver: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except OSError as exc:
        print(f"solver: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
