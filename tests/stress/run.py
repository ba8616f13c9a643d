"""Run the stress corpus and check every state with the independent checker.

    python3 -m tests.stress.run --all --jobs 2          # whole corpus (216 scenes)
    python3 -m tests.stress.run --subset                # the 14 fast scenes of the test suite
    python3 -m tests.stress.run --scenes 5,17,40-45 -v  # selected scenes, per-step lines
    python3 -m tests.stress.run --case tests/stress/cases/foo.json   # a saved case
    python3 -m tests.stress.run --heavy --budget 900    # saw meshing, press slam (heavy.py)
    python3 -m tests.stress.run --rigid --sleep         # rigid variants, sleeping bodies on

For every scene: the solver must accept it (``rejected`` otherwise); the
initial state and the state after every step are checked
(:mod:`tests.stress.check`: ``nonfinite``, ``inverted``, ``crossing``,
``inside``, ``half_plane``); a step must either converge or report
``converged=False`` with a message and a RuntimeWarning
(``unreported_nonconvergence`` otherwise); any exception other than
SolverInputError / ConvergenceError is an ``exception``; a scene exceeding its
wall-clock budget (checked between steps, and by SIGALRM inside a step) is a
``hang``.  A scene stops at its first failure.  Non-converged steps are
counted, not failures.  Exit status 1 if any scene failed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import sys
import time
import traceback
import warnings
from dataclasses import asdict, dataclass, field

# OpenBLAS threads make the solver's small dense solves ~7x slower (measured, see
# FINDINGS.md) and oversubscribe the cores with --jobs; this only takes effect when
# numpy is not imported yet (python3 -m tests.stress.run), hence before the imports below.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

from solver import ConvergenceError, Simulation, SolverInputError  # noqa: E402  (imports numpy)

from .check import Checker  # noqa: E402  (imports numpy)
from .generate import CORPUS_SIZE, RIGID_CORPUS, STIFF_CORPUS, StressScene, make_scene  # noqa: E402  (imports numpy)

DEFAULT_BUDGET = 120.0  # seconds of wall clock per scene
# 14 fast scenes (a few seconds each): two per template (drop, collide, paddle, crush, slope,
# thin), two of them with reported non-converged steps, the rigid variants of 12 (all rigid)
# and 7 (mixed), and the stiff variant of 7 (stiff, rigid and deformable); run by
# tests/stress/test_stress_subset.py
SUBSET = (
    12,
    90,
    61,
    7,
    32,
    44,
    27,
    39,
    94,
    34,
    17,
    5,
    CORPUS_SIZE + 12,
    CORPUS_SIZE + 7,
    2 * CORPUS_SIZE + 7,
)


@dataclass
class Result:
    index: object
    template: str
    n_steps: int
    steps_run: int = 0
    converged: int = 0
    not_converged: int = 0
    failure: str = ""  # failure kind, "" when clean
    failed_step: int = -1  # 0 = initial state
    detail: str = ""
    wall: float = 0.0
    messages: list = field(default_factory=list)  # distinct non-convergence messages
    slept: int = 0  # most bodies asleep at once (--sleep)


class _Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise _Timeout()


def run_scene(ss: StressScene, budget=DEFAULT_BUDGET, verbose=False, out=sys.stdout, settings=None):
    """Run one scene, checking every state (settings: the solver's, its defaults
    when None).  Returns a Result."""
    r = Result(ss.index, ss.template, ss.n_steps)
    t0 = time.perf_counter()
    use_alarm = hasattr(signal, "SIGALRM")
    if use_alarm:
        old = signal.signal(signal.SIGALRM, _alarm)
        signal.alarm(int(2 * budget) + 1)  # a single step that never returns
    try:
        _run(ss, r, budget, t0, verbose, out, settings)
    except _Timeout:
        r.failure, r.failed_step = "hang", r.steps_run + 1
        r.detail = f"step {r.steps_run + 1} still running after {time.perf_counter() - t0:.0f} s"
    finally:
        if use_alarm:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, old)
    r.wall = time.perf_counter() - t0
    return r


def _fail(r, kind, step, detail):
    r.failure, r.failed_step, r.detail = kind, step, detail


def _run(ss, r, budget, t0, verbose, out, settings=None):
    scene = ss.scene
    try:
        sim = Simulation(scene, settings=settings)
    except SolverInputError as exc:
        return _fail(r, "rejected", 0, f"SolverInputError: {exc}")
    except Exception as exc:
        return _fail(r, "exception", 0, _exc_text(exc))
    checker = Checker(scene)
    nb, nc = len(scene.bodies), len(scene.colliders)

    def state():
        return [sim.body_positions(i) for i in range(nb)], [sim.collider_positions(j) for j in range(nc)]

    bad = checker.check(*state())
    if bad:
        return _fail(r, bad[0].kind, 0, bad[0].detail)
    for k in range(1, ss.n_steps + 1):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                stats = sim.step()
            except ConvergenceError as exc:  # only with strict=True scenes
                stats = exc.stats
                if not str(exc):
                    return _fail(r, "unreported_nonconvergence", k, "ConvergenceError without a message")
                caught.append(warnings.WarningMessage(str(exc), RuntimeWarning, "", 0))
            except SolverInputError as exc:
                return _fail(r, "exception", k, f"SolverInputError during a step: {exc}")
            except _Timeout:
                raise
            except Exception as exc:
                return _fail(r, "exception", k, _exc_text(exc))
        r.steps_run = k
        r.slept = max(r.slept, stats.sleep.sleeping)
        if stats.converged:
            r.converged += 1
        else:
            r.not_converged += 1
            warned = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
            if not stats.message or not warned:
                return _fail(
                    r,
                    "unreported_nonconvergence",
                    k,
                    f"converged=False with message {stats.message!r}, warnings {warned!r}",
                )
            msg = re.sub(r"(?<![A-Za-z])[-+]?\d[\d.]*(e[-+]?\d+)?", "#", stats.message)
            if msg not in r.messages:
                r.messages.append(msg)
        bad = checker.check(*state())
        if verbose:
            print(
                f"  scene {ss.index} step {k}: iters={stats.newton_iters} conv={stats.converged} "
                f"dmin={stats.min_distance:.3g} kappa={stats.kappa:.3g} lag={stats.collider_lag:.3g} "
                f"t={stats.wall_time:.2f}s {stats.message}",
                file=out,
                flush=True,
            )
        if bad:
            return _fail(r, bad[0].kind, k, "; ".join(v.detail for v in bad))
        if time.perf_counter() - t0 > budget:
            return _fail(r, "hang", k, f"over the {budget:g} s budget after {k}/{ss.n_steps} steps")
    return None


def _exc_text(exc):
    tb = traceback.extract_tb(exc.__traceback__)
    where = f" at {os.path.basename(tb[-1].filename)}:{tb[-1].lineno}" if tb else ""
    return f"{type(exc).__name__}: {exc}{where}"


# ----------------------------------------------------------------- cases on disk


def load_case(path, steps=None):
    """A saved case: scene JSON whose description holds 'steps=N'."""
    from solver.io.scene_io import load_scene

    with open(path, encoding="utf-8") as fh:
        desc = json.load(fh).get("description", "")
    m = re.search(r"steps=(\d+)", desc)
    n = steps or (int(m.group(1)) if m else 30)
    return StressScene(os.path.basename(path), "case", load_scene(path), n, {"description": desc})


def save_case(ss, path, note=""):
    """Write a StressScene as scene JSON; the description records seed and steps."""
    from solver.io.scene_io import dumps_scene, scene_to_dict

    d = scene_to_dict(ss.scene)
    d["description"] = (
        f"stress scene {ss.index} ({ss.template}) seed={ss.meta.get('seed')} steps={ss.n_steps} {note}"
    ).strip()
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(dumps_scene(d))


HEAVY_PREFIX = "heavy:"


def heavy_names():
    from tests.stress.heavy import HEAVY

    return list(HEAVY)


def heavy_scene(name):
    """One of tests/stress/heavy.py's scenes (issue 35, point 4) as a StressScene."""
    from tests.stress.heavy import HEAVY

    scene, steps = HEAVY[name]()
    return StressScene(HEAVY_PREFIX + name, "heavy", scene, steps)


# ----------------------------------------------------------------- driver


def _worker(args):
    index, budget, verbose, linear_solver, sleep = args
    if isinstance(index, str) and index.startswith(HEAVY_PREFIX):
        ss = heavy_scene(index[len(HEAVY_PREFIX) :])
    elif isinstance(index, str):
        ss = load_case(index)
    else:
        try:
            ss = make_scene(index)
        except Exception as exc:
            return Result(index, "?", 0, failure="generator", detail=_exc_text(exc))
    if linear_solver is not None:
        from dataclasses import replace

        ss = replace(
            ss, scene=replace(ss.scene, params=replace(ss.scene.params, linear_solver=linear_solver))
        )
    return run_scene(ss, budget, verbose, settings=_sleep_settings() if sleep else None)


def _sleep_settings():
    """The solver's settings with sleeping bodies on (docs/design/18-sleeping.md)."""
    from solver.settings import SolverSettings
    from solver.sleep import SleepSettings

    return SolverSettings(sleep=SleepSettings(enabled=True))


def run_many(
    items, jobs=1, budget=DEFAULT_BUDGET, verbose=False, progress=None, linear_solver=None, sleep=False
):
    """Run scene indices / case paths; returns Results in input order.
    linear_solver: override every scene's params.linear_solver ('numpy': stock Blender);
    sleep: run with sleeping bodies on."""
    tasks = [(it, budget, verbose, linear_solver, sleep) for it in items]
    results = []
    if jobs > 1:
        import multiprocessing as mp

        with mp.get_context("fork").Pool(jobs, maxtasksperchild=20) as pool:
            for r in pool.imap_unordered(_worker, tasks):
                results.append(r)
                if progress:
                    progress(r)
    else:
        for t in tasks:
            r = _worker(t)
            results.append(r)
            if progress:
                progress(r)
    order = {it: k for k, it in enumerate(items)}
    return sorted(results, key=lambda r: order.get(r.index, 0))


def summarize(results, wall):
    kinds = {}
    for r in results:
        if r.failure:
            kinds[r.failure] = kinds.get(r.failure, 0) + 1
    steps = sum(r.steps_run for r in results)
    conv = sum(r.converged for r in results)
    nonc = sum(r.not_converged for r in results)
    lines = [
        f"scenes: {len(results)}   clean: {sum(not r.failure for r in results)}   "
        f"failed: {sum(bool(r.failure) for r in results)}",
        f"steps:  {steps}   converged: {conv}   not converged (reported): {nonc}",
        "failures by kind: " + (", ".join(f"{k}={v}" for k, v in sorted(kinds.items())) or "none"),
        f"scenes with a non-converged step: {sum(r.not_converged > 0 for r in results)}",
        f"wall time: {wall:.1f} s (sum of scene times {sum(r.wall for r in results):.1f} s, "
        f"slowest scene {max((r.wall for r in results), default=0):.1f} s)",
    ]
    msgs = {}
    for r in results:
        for m in r.messages:
            msgs[m] = msgs.get(m, 0) + 1
    for m, c in sorted(msgs.items(), key=lambda kv: -kv[1]):
        lines.append(f"  non-convergence message ({c} scenes): {m}")
    for r in results:
        if r.failure:
            lines.append(
                f"  FAIL scene {r.index} ({r.template}) {r.failure} at step {r.failed_step}: {r.detail}"
            )
    return "\n".join(lines), kinds


def _parse_scenes(text):
    out = []
    for part in text.split(","):
        if "-" in part:
            a, b = part.split("-")
            out += list(range(int(a), int(b) + 1))
        elif part:
            out.append(int(part))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description="Run the stress corpus with the independent checker.")
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--all", action="store_true", help=f"the whole corpus ({CORPUS_SIZE} scenes)")
    g.add_argument("--subset", action="store_true", help=f"the fast subset {SUBSET}")
    g.add_argument("--rigid", action="store_true", help="the rigid, stiff and mixed variants (issue 34)")
    g.add_argument("--scenes", help="indices, e.g. 3,17,40-45")
    g.add_argument("--case", nargs="+", help="saved case JSON files (description holds steps=N)")
    g.add_argument("--heavy", action="store_true", help="the hard scenes of tests/stress/heavy.py")
    ap.add_argument("--count", type=int, default=CORPUS_SIZE, help="with --all: number of scenes")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--budget", type=float, default=DEFAULT_BUDGET, help="wall-clock seconds per scene")
    ap.add_argument("--json", help="write per-scene results to this file")
    ap.add_argument("--save-failures", metavar="DIR", help="write each failing generated scene as JSON here")
    ap.add_argument(
        "--linear-solver",
        choices=("auto", "scipy", "numpy"),
        help="override the scenes' linear solver ('numpy' = stock Blender without scipy)",
    )
    ap.add_argument("--sleep", action="store_true", help="sleeping bodies on (docs/design/18-sleeping.md)")
    ap.add_argument("-v", "--verbose", action="store_true", help="one line per step")
    a = ap.parse_args(argv)
    items = (
        list(range(a.count))
        if a.all
        else list(SUBSET)
        if a.subset
        else list(RIGID_CORPUS + STIFF_CORPUS)
        if a.rigid
        else _parse_scenes(a.scenes)
        if a.scenes
        else [HEAVY_PREFIX + name for name in heavy_names()]
        if a.heavy
        else list(a.case)
    )

    def progress(r):
        status = f"FAIL {r.failure} at step {r.failed_step}: {r.detail}" if r.failure else "ok"
        asleep = f", {r.slept} asleep" if r.slept else ""
        print(
            f"scene {r.index} ({r.template}): {r.steps_run}/{r.n_steps} steps, "
            f"{r.not_converged} not converged, {r.wall:.1f} s{asleep}  {status}",
            flush=True,
        )

    t0 = time.perf_counter()
    results = run_many(items, a.jobs, a.budget, a.verbose, progress, a.linear_solver, a.sleep)
    text, kinds = summarize(results, time.perf_counter() - t0)
    print("\n" + text)
    if a.json:
        with open(a.json, "w", encoding="utf-8") as fh:
            json.dump([asdict(r) for r in results], fh, indent=1, default=str)
    if a.save_failures:
        os.makedirs(a.save_failures, exist_ok=True)
        for r in results:
            if r.failure and isinstance(r.index, int):
                save_case(
                    make_scene(r.index),
                    os.path.join(a.save_failures, f"scene_{r.index}.json"),
                    f"fails: {r.failure} at step {r.failed_step}",
                )
    return 1 if kinds else 0


if __name__ == "__main__":
    raise SystemExit(main())
