"""Is the solver bit-repeatable in this Python?  Runs the compressing squares (n_seg 8) several
times in one process on both linear-solver paths and prints the first step whose positions
differ between runs (none: repeatable).

    python3 scripts/repeatability.py [steps] [runs]
    blender -b --python-exit-code 1 --python scripts/repeatability.py -- [steps] [runs]

Found on 2026-11-23: repeatable under every pip numpy (1.26, 2.4) and under Debian's system
numpy 1.24.2 in plain python3, but NOT inside Debian's Blender 3.4.1 with that same numpy
(runs part at step 24-25 of 40 by the last bit, with OpenBLAS limited to one thread too):
Continue Bake there matches a bake in one go in the float32 shape keys, not always in the
float64 solver state.  Traced further (hashing every energy's, solve's and CCD's output): the
first divergence is the elastic energy of identical positions, and inside that np.log of the
same array (same address, 64-byte aligned, J near 1 at rest) returns different last bits on a few
elements from one call to the next, intermittently, also with the process pinned to one core;
the same np.log calls on the same data loaded from a file in a fresh Blender, or in plain
python3, are repeatable.
"""

import dataclasses
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from solver import Simulation
from solver.examples import compressing_squares


def trajectory(path, steps):
    scene = compressing_squares(n_seg=8)
    scene = dataclasses.replace(scene, params=dataclasses.replace(scene.params, linear_solver=path))
    sim = Simulation(scene)
    out = []
    for _ in range(steps):
        sim.step()
        out.append(sim.positions.tobytes())
    return out


def main(argv):
    args = argv[argv.index("--") + 1 :] if "--" in argv else argv[1:]
    steps = int(args[0]) if args else 40
    runs = int(args[1]) if len(args) > 1 else 3
    print(f"numpy {np.__version__}, {steps} steps, {runs} runs per path")
    repeatable = True
    for path in ("numpy", "scipy"):
        trajectories = [trajectory(path, steps) for _ in range(runs)]
        for i, other in enumerate(trajectories[1:], start=1):
            differ = [k for k, (a, b) in enumerate(zip(trajectories[0], other, strict=True)) if a != b]
            verdict = f"first differing step {differ[0]}" if differ else "equal"
            print(f"{path}: run 0 vs run {i}: {verdict}")
            repeatable &= not differ
    print("repeatable" if repeatable else "NOT repeatable")


if __name__ == "__main__":
    main(sys.argv)
