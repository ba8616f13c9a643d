"""Instructions per time step of a bench scene, counted by valgrind.

    python3 bench/instructions.py S1:300 S2:300 [--linear-solver numpy]
    python3 bench/instructions.py S1:300 --tree ../before --tree .    # compare two checkouts

Seconds on a shared machine move by 5-25 % from run to run, which hides a
change of a few per cent.  The number of instructions the CPU executes does
not depend on what else runs: valgrind's cachegrind counts them exactly
(about 50 times slower than a plain run).  Each scene is run twice in a fresh
process, for 1 step and for 1 + STEPS steps; the difference divided by STEPS
is the cost of a step without the imports and the scene set-up.

It measures the Python and numpy work of the solver; it does not see memory
stalls or BLAS threading (the runs use one BLAS thread), so it complements
bench/run.py's timings rather than replacing them.  Needs ``valgrind`` on
PATH (Debian: ``apt-get install valgrind``).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

# Run inside the tree being measured: steps a bench scene, prints nothing.
_STEPPER = """
import sys, warnings
from dataclasses import replace
sys.path.insert(0, {tree!r})
from bench.run import build_scene
from solver.simulation import Simulation
scene = build_scene({name!r})
params = replace(scene.params, strict=False, linear_solver={solver!r})
kw = {{}}
try:  # checkouts from before the motion check have none to switch off
    from solver.motion_check import MotionCheckSettings
    from solver.settings import SolverSettings
    if {no_motion}:
        kw["settings"] = SolverSettings(motion=MotionCheckSettings(enabled=False))
except ImportError:
    pass
sim = Simulation(replace(scene, params=params), **kw)
warnings.simplefilter("ignore")
for _ in range({steps}):
    sim.step()
"""


def count_instructions(tree, name, steps, solver, no_motion=False):
    """Instructions executed by a fresh process stepping scene `name` `steps` times."""
    code = _STEPPER.format(tree=tree, name=name, steps=steps, solver=solver, no_motion=no_motion)
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    cmd = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null"]
    argv = [*cmd, sys.executable, "-c", code]
    run = subprocess.run(argv, check=False, env=env, capture_output=True, text=True, cwd=tree)
    if run.returncode != 0:
        raise RuntimeError(f"{name} in {tree} failed:\n{run.stderr[-2000:]}")
    found = re.search(r"I\s+refs:\s+([\d,]+)", run.stderr)
    return int(found.group(1).replace(",", ""))


def per_step(tree, name, steps, solver, no_motion=False):
    """Instructions per step of `name`, set-up excluded (1 + steps minus 1 step)."""
    one = count_instructions(tree, name, 1, solver, no_motion)
    more = count_instructions(tree, name, 1 + steps, solver, no_motion)
    return (more - one) / steps


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("scenes", nargs="+", metavar="NAME:STEPS", help="bench scenes, e.g. S1:300 S4:10")
    ap.add_argument("--tree", action="append", help="checkout to measure (repeat to compare)")
    ap.add_argument("--linear-solver", default="auto", choices=("auto", "scipy", "numpy"))
    ap.add_argument("--no-motion-check", action="store_true", help="switch off the step-motion check")
    args = ap.parse_args(argv)
    if shutil.which("valgrind") is None:
        sys.exit("valgrind is not installed (Debian: apt-get install valgrind)")
    trees = [os.path.abspath(t) for t in (args.tree or [os.path.dirname(HERE)])]
    print(f"| scene | {' | '.join(trees)} |")
    print("|---" * (len(trees) + 1) + "|")
    for spec in args.scenes:
        name, _, steps = spec.partition(":")
        steps = int(steps or 10)
        counts = [per_step(t, name, steps, args.linear_solver, args.no_motion_check) for t in trees]
        cells = [f"{c / 1e6:.2f} M" + (f" ({c / counts[0]:.3f})" if i else "") for i, c in enumerate(counts)]
        print(f"| {spec} | {' | '.join(cells)} |", flush=True)


if __name__ == "__main__":
    main()
