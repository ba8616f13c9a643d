"""Do two trees give the same bits?  Steps the bench scenes and prints a hash of the positions and
velocities after each run, on both linear-solver paths (the restructuring rule of issue 30: a
change that claims "same bits" must print the same lines before and after).

    python3 scripts/same_bits.py [S1:300 S2:100 ...] [--paths scipy,numpy]

Default: S1, S2 and S3-32 for 100 steps and S4 for 30 steps.  Each run is a fresh child process.
"""

import argparse
import hashlib
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT = ("S1:100", "S2:100", "S3-32:100", "S4:30")


def run_one(name, steps, path):
    sys.path.insert(0, ROOT)
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    from dataclasses import replace

    from run import build_scene

    from solver import Simulation

    scene = build_scene(name)
    scene = replace(scene, params=replace(scene.params, linear_solver=path))
    sim = Simulation(scene)
    for _ in range(steps):
        sim.step()
    digest = hashlib.sha256(sim.positions.tobytes() + sim.v.tobytes()).hexdigest()[:16]
    print(f"{name}:{steps} {path} {digest}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("scenes", nargs="*", default=DEFAULT)
    ap.add_argument("--paths", default="scipy,numpy")
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        run_one(a.child[0], int(a.child[1]), a.child[2])
        return
    for spec in a.scenes:
        name, _, steps = spec.partition(":")
        for path in a.paths.split(","):
            cmd = [sys.executable, __file__, "--child", name, steps or "100", path]
            subprocess.run(cmd, check=True, env=dict(os.environ))


if __name__ == "__main__":
    main()
