"""Per-step cost of a settled rigid pile with sleeping off and on (issue 34, point 4;
docs/design/18-sleeping.md).

    python3 bench/sleeping.py R100 [R1000] [--settle 600] [--measure 20] [--paths scipy numpy]

A pile of rigid shapes (bench/run.py's R scenes without the ceiling) settles
with sleeping on until every shape sleeps (or --settle steps); its state is
taken as a checkpoint.  From it, on each linear-solver path: --measure steps
with sleeping off (the settled pile, awake), and with sleeping on, first the
steps it takes to fall asleep again (its velocities were zeroed), then
--measure steps asleep.  CPU seconds per step, Newton's unknowns and the
contact stencils evaluated per step.  Nothing here asserts on time.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import warnings
from dataclasses import replace

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from bench.run import PILE_ARGS, RIGID_COLUMNS  # noqa: E402
from solver.examples import pile  # noqa: E402
from solver.io.checkpoint import Checkpoint  # noqa: E402
from solver.settings import SolverSettings  # noqa: E402
from solver.simulation import Simulation  # noqa: E402
from solver.sleep import SleepSettings  # noqa: E402

ON = SolverSettings(sleep=SleepSettings(enabled=True))


def settled_pile_scene(name):
    n = int(name[1:])
    scene = pile(**{**PILE_ARGS, "n_shapes": n, "n_columns": RIGID_COLUMNS[name], "ceiling_speed": 0.0})
    bodies = tuple(replace(b, kind="rigid") for b in scene.bodies)
    return replace(scene, bodies=bodies, params=replace(scene.params, strict=False))


def settle(scene, max_steps):
    """Step with sleeping on until every body sleeps; (checkpoint, steps, CPU s)."""
    sim = Simulation(scene, settings=ON)
    c0 = time.process_time()
    for k in range(max_steps):
        s = sim.step()
        print(
            f"settle step {k + 1}: {s.sleep.sleeping}/{len(scene.bodies)} asleep, "
            f"{s.newton_iters} iterations",
            file=sys.stderr,
            flush=True,
        )
        if s.sleep.sleeping == len(scene.bodies):
            break
    return sim.checkpoint(), k + 1, time.process_time() - c0


def settled(scene, name, a):
    """settle(), or its checkpoint from a.cache (steps and CPU s then unknown: 0)."""
    path = os.path.join(a.cache, f"{name}.checkpoint") if a.cache else None
    if path and os.path.exists(path):
        with open(path, "rb") as f:
            return Checkpoint.from_bytes(f.read()), 0, 0.0
    cp, steps, cpu = settle(scene, a.settle)
    if path:
        with open(path, "wb") as f:
            f.write(cp.to_bytes())
    return cp, steps, cpu


def measure(scene, cp, settings, steps, path):
    """Per-step figures of `steps` steps from the checkpoint (sleeping on: once asleep)."""
    scene = replace(scene, params=replace(scene.params, linear_solver=path))
    sim = Simulation.from_checkpoint(scene, cp, settings=settings)
    to_sleep = 0
    if settings.sleep.enabled:
        while to_sleep < 200 and sim.step().sleep.sleeping < len(scene.bodies):
            to_sleep += 1
    rows = []
    for _ in range(steps):
        c0 = time.process_time()
        s = sim.step()
        rows.append((time.process_time() - c0, s.unknowns, s.contacts_evaluated, s.newton_iters))
    cpu, unknowns, contacts, iters = zip(*rows, strict=True)
    probe_ms, asleep_after = None, None
    if settings.sleep.enabled:  # on to the next probe step (a full solve every probe_every)
        for _ in range(settings.sleep.probe_every):
            c0 = time.process_time()
            s = sim.step()
            if not np.isnan(s.sleep.probe_speed):
                probe_ms, asleep_after = 1e3 * (time.process_time() - c0), s.sleep.sleeping
                break
    return {
        "probe_ms": probe_ms,
        "asleep_after_probe": asleep_after,
        "cpu_ms": 1e3 * statistics.fmean(cpu),
        "unknowns": statistics.fmean(unknowns),
        "contacts": statistics.fmean(contacts),
        "iters": statistics.fmean(iters),
        "to_sleep": to_sleep + 1 if settings.sleep.enabled else None,
    }


def _cells(r, settings):
    """The measured cells of one table row."""
    cells = [f"{r['cpu_ms']:.1f}", f"{r['unknowns']:.0f}", f"{r['contacts']:.0f}", f"{r['iters']:.2f}"]
    if r["probe_ms"] is None:
        return " | ".join([*cells, "-", "-", cells[0]]) + " |"
    every = settings.sleep.probe_every
    amortized = ((every - 1) * r["cpu_ms"] + r["probe_ms"]) / every
    probe = f"{r['probe_ms']:.0f} ({r['asleep_after_probe']})"
    return " | ".join([*cells, str(r["to_sleep"]), probe, f"{amortized:.1f}"]) + " |"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("scenes", nargs="+", choices=sorted(RIGID_COLUMNS))
    ap.add_argument("--settle", type=int, default=600, help="most steps to settle")
    ap.add_argument("--measure", type=int, default=20, help="steps measured per configuration")
    ap.add_argument("--paths", nargs="+", default=["scipy", "numpy"], choices=("scipy", "numpy"))
    ap.add_argument("--cache", metavar="DIR", help="keep each settled pile's checkpoint here, reuse it")
    a = ap.parse_args(argv)
    print(f"load average {os.getloadavg()[0]:.2f}, {os.cpu_count()} cores")
    print(
        "| scene | settled after (steps, CPU s) | path | sleeping | CPU ms/step | unknowns | "
        "contacts evaluated | Newton iterations | steps to fall asleep again | probe step CPU ms "
        "(asleep after it) | CPU ms/step with probes |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name in a.scenes:
        scene = settled_pile_scene(name)
        cp, steps, cpu = settled(scene, name, a)
        for path in a.paths:
            for settings, label in ((SolverSettings(), "off"), (ON, "on")):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)
                    r = measure(scene, cp, settings, a.measure, path)
                print(
                    f"| {name} | {steps}, {cpu:.0f} | {path} | {label} | " + _cells(r, settings), flush=True
                )
    print(f"load average {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
