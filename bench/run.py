"""Performance benchmark of the solver (issue 5): scenes S1-S4, one table.

    python3 bench/run.py [S1 S2 S3 S4 ...] [--quick] [--steps N] [--json out.json]
    python3 bench/run.py S1 S4:60          # NAME:STEPS overrides one scene's step count
    python3 bench/run.py --profile S2 [--steps N]
    python3 bench/run.py S1 S2 --repeat 5  # each scene 5 times: the median run is reported
    python3 bench/run.py S1 S2 --linear-solver numpy   # the numpy-only path (stock Blender)

Scenes (names accepted on the command line; ``S3`` means both of its sizes):

    S1     compressing squares, n_seg = 2, 300 steps
    S2     compressing squares, n_seg = 8, 300 steps
    S3-32  compressing squares, n_seg = 32, 100 steps
    S3-64  compressing squares, n_seg = 64, 100 steps
    S4     pile of 100 squares/discs (81 vertices each) in a box (ground + two
           walls as half-planes) compressed by a descending ceiling collider, 200 steps
    SAW    a saw of 100 1 cm teeth pressed into a fixed one (~500 contacts), 40 steps
    PRESS  S4's pile in a 3.6 m box, gravity 20 m/s^2, the ceiling slammed from 2.64 m
           to 1.36 m in 0.6 s (tests/stress/heavy.py), 60 steps

Every scene runs in a fresh child process so that its peak memory
(``ru_maxrss`` growth while stepping) and its timers are its own.  Progress
(one line per step) goes to stderr, the tables to stdout.  Nothing here
asserts on time: the numbers are printed, the reader judges them.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

# Stage keys of solver.profiling.Timers, in print order, with short labels.
STAGES = (
    ("elasticity", "elast"),
    ("barrier", "barrier"),
    ("friction", "fric"),
    ("inertia+penalty", "inert+pen"),
    ("broad_phase", "broad"),
    ("ccd", "CCD"),
    ("linear_solve", "solve"),
    ("regime_rounds", "regime"),
    ("exact_cg", "exact CG"),
    ("line_search", "line srch"),
    ("step_setup", "setup"),
    ("other", "other"),
)


@dataclass(frozen=True)
class SceneSpec:
    name: str
    steps: int  # full run
    quick_steps: int  # --quick
    what: str


SCENES = {
    "S1": SceneSpec("S1", 300, 60, "compressing squares, n_seg=2"),
    "S2": SceneSpec("S2", 300, 60, "compressing squares, n_seg=8"),
    "S3-32": SceneSpec("S3-32", 100, 20, "compressing squares, n_seg=32"),
    "S3-64": SceneSpec("S3-64", 100, 10, "compressing squares, n_seg=64"),
    "S4": SceneSpec("S4", 200, 15, "pile: 100 squares/discs in a box, ceiling"),
    # rigid (affine) bodies, issue 34: S4 with every shape rigid, and rigid piles
    # of 100 to 1000 shapes (columns grow with the count, about as wide as tall)
    # S4R runs 60 steps, S4's physics (fall, landing, the ceiling arriving): rigid shapes
    # cannot reach the 85 % fill S4's ceiling is keyed to, they jam under it and from step
    # 95 the ceiling is stopped on them (design note 10), while S4's pile is compressed
    "S4R": SceneSpec("S4R", 60, 15, "S4 with every shape rigid"),
    "R100": SceneSpec("R100", 60, 15, "pile: 100 rigid shapes, 10 columns"),
    "R250": SceneSpec("R250", 60, 15, "pile: 250 rigid shapes, 16 columns"),
    "R500": SceneSpec("R500", 60, 15, "pile: 500 rigid shapes, 22 columns"),
    "R1000": SceneSpec("R1000", 60, 15, "pile: 1000 rigid shapes, 32 columns"),
    "M500": SceneSpec("M500", 60, 15, "pile: 100 deformable + 400 rigid shapes, 22 columns"),
    # issue 35, point 4 (tests/stress/heavy.py): many contacts on one body, and a hard crush
    "SAW": SceneSpec("SAW", 40, 10, "saw pressed into a fixed saw, 100 teeth, ~500 contacts"),
    "PRESS": SceneSpec("PRESS", 60, 15, "S4's pile, 3.6 m box, g 20, ceiling slammed in 0.6 s"),
}
RIGID_COLUMNS = {"R100": 10, "R250": 16, "R500": 22, "R1000": 32}
ALIASES = {"S3": ("S3-32", "S3-64"), "R": ("R100", "R250", "R500", "R1000")}

# S4: the ceiling must reach the pile within the 200 steps (2 s).  pile() starts
# it just above the top row (y ~ 2.64) and stops it where the shapes would fill
# ~85% of the box (y ~ 1.36); at 1 m/s it arrives after ~1.3 s, when the pile has
# landed, and then holds it compressed.  (pile()'s default 0.25 m/s would still
# be 0.8 m above the settled pile at 2 s: nothing would be compressed.)
PILE_ARGS = {
    "n_shapes": 100,
    "n_columns": 10,
    "shape": "mixed",
    "n_seg": 8,
    "n_rings": 4,
    "n_boundary": 32,
    "ceiling_speed": 1.0,
    "seed": 0,
}


def build_scene(name):
    from solver.examples import compressing_squares, pile

    if name == "S1":
        return compressing_squares(n_seg=2)
    if name == "S2":
        return compressing_squares(n_seg=8)
    if name == "S3-32":
        return compressing_squares(n_seg=32)
    if name == "S3-64":
        return compressing_squares(n_seg=64)
    if name == "S4":
        return pile(**PILE_ARGS)
    if name == "S4R":
        return _all_rigid(pile(**PILE_ARGS))
    if name == "M500":  # every fifth shape deformable
        scene = pile(**{**PILE_ARGS, "n_shapes": 500, "n_columns": 22})
        return _all_rigid(scene, keep=set(range(0, 500, 5)))
    if name in RIGID_COLUMNS:
        n = int(name[1:])
        return _all_rigid(pile(**{**PILE_ARGS, "n_shapes": n, "n_columns": RIGID_COLUMNS[name]}))
    if name in ("SAW", "PRESS"):
        from tests.stress.heavy import fine_saw, press_slam

        return (fine_saw if name == "SAW" else press_slam)()[0]
    raise ValueError(f"unknown scene {name!r}; known: {', '.join(SCENES)}")


def _all_rigid(scene, keep=()):
    """The scene with its bodies rigid, but those whose index is in keep."""
    from dataclasses import replace

    bodies = tuple(b if i in keep else replace(b, kind="rigid") for i, b in enumerate(scene.bodies))
    return replace(scene, bodies=bodies)


def expand_scenes(names):
    """Command-line names -> [(scene, steps or None)]; 'NAME:STEPS' overrides the step count."""
    out = []
    for n in names or ("S1", "S2", "S3", "S4"):
        key, _, steps = n.upper().partition(":")
        if steps and not (steps.isdigit() and int(steps) > 0):
            raise SystemExit(f"bench: bad step count in {n!r} (expected NAME:STEPS, STEPS >= 1)")
        for s in ALIASES.get(key, (key,)):
            if s not in SCENES:
                raise SystemExit(f"bench: unknown scene {n!r}; known: {' '.join([*SCENES, *ALIASES])}")
            if s not in [o[0] for o in out]:
                out.append((s, int(steps) if steps else None))
    return out


# ---------------------------------------------------------------- one scene


def _maxrss_mib():
    # Linux reports ru_maxrss in KiB.
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def run_scene(name, steps, progress=True, use_tracemalloc=False, linear_solver="auto"):
    """Step one scene; returns a JSON-able dict of measurements."""
    from dataclasses import replace

    from solver.simulation import Simulation

    scene = build_scene(name)
    # non-strict: a step that does not converge is counted (and reported), not fatal
    scene = replace(scene, params=replace(scene.params, strict=False, linear_solver=linear_solver))
    sim = Simulation(scene)
    n_body = int(sum(len(b.vertices) for b in scene.bodies))
    n_tris = int(sum(len(b.triangles) for b in scene.bodies))
    rss0 = _maxrss_mib()
    if use_tracemalloc:
        import tracemalloc

        tracemalloc.start()
    load0 = os.getloadavg()
    stats = []
    w0, c0 = time.perf_counter(), time.process_time()
    with warnings.catch_warnings():
        # non-converged steps warn; they are counted instead
        warnings.simplefilter("ignore", RuntimeWarning)
        for k in range(steps):
            s = sim.step()
            stats.append(s)
            if progress:
                el = time.perf_counter() - w0
                eta = el / (k + 1) * (steps - k - 1)
                print(
                    f"[{name}] step {k + 1}/{steps}  newton {s.newton_iters:3d}  "
                    f"contacts {s.active_contacts:5d}  {s.wall_time:7.3f} s  "
                    f"elapsed {el:7.1f} s  eta {eta:7.1f} s" + ("" if s.converged else "  NOT CONVERGED"),
                    file=sys.stderr,
                    flush=True,
                )
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    tm_peak = None
    if use_tracemalloc:
        tm_peak = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
    iters = [s.newton_iters for s in stats]
    stages = sim.timers.report(wall)
    solves = int(sim.timers.calls.get("linear_solve", 0))
    non_solve = wall - stages["linear_solve"]
    return {
        "scene": name if linear_solver == "auto" else f"{name} ({linear_solver})",
        "what": SCENES[name].what,
        "vertices": int(sim.model.n),
        "body_vertices": n_body,
        "triangles": n_tris,
        "steps": steps,
        "wall_s": wall,
        "cpu_s": cpu,
        "s_per_step": wall / steps,
        "newton_mean": statistics.fmean(iters),
        "newton_median": statistics.median(iters),
        "newton_max": max(iters),
        "newton_total": sum(iters),
        "linear_solves": solves,
        # per assembled-and-solved Newton system (a step with 0 iterations still
        # assembles and solves once to find it is converged)
        "nonsolve_ms_per_iter": 1e3 * non_solve / max(solves, 1),
        "solve_ms_per_iter": 1e3 * stages["linear_solve"] / max(solves, 1),
        "nonsolve_over_solve": non_solve / stages["linear_solve"] if stages["linear_solve"] > 0 else None,
        "stages_s": stages,
        "peak_rss_delta_mib": _maxrss_mib() - rss0,
        "peak_rss_mib": _maxrss_mib(),
        "tracemalloc_peak_mib": tm_peak,
        "converged_steps": sum(s.converged for s in stats),
        "all_converged": all(s.converged for s in stats),
        "first_failure": next((f"step {s.step}: {s.message}" for s in stats if not s.converged), None),
        "max_active_contacts": max(s.active_contacts for s in stats),
        "min_distance": min(s.min_distance for s in stats),
        "loadavg_before": load0,
        "loadavg_after": os.getloadavg(),
    }


def run_in_child(name, steps, progress, use_tracemalloc, linear_solver="auto"):
    """Run one scene in a fresh interpreter (own peak RSS, own imports)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "result.json")
        cmd = [
            sys.executable,
            os.path.abspath(__file__),
            "--child",
            name,
            "--steps",
            str(steps),
            "--child-out",
            out,
            "--linear-solver",
            linear_solver,
        ]
        if not progress:
            cmd.append("--no-progress")
        if use_tracemalloc:
            cmd.append("--tracemalloc")
        rc = subprocess.call(cmd)
        if rc != 0:
            raise SystemExit(f"bench: scene {name} failed (exit code {rc})")
        with open(out) as f:
            return json.load(f)


# ---------------------------------------------------------------- tables

SUMMARY_COLS = (
    "scene",
    "vertices",
    "steps",
    "wall s",
    "CPU s",
    "s/step",
    "Newton mean",
    "Newton median",
    "Newton max",
    "solves",
    "non-solve ms/iter",
    "solve ms/iter",
    "non-solve/solve",
    "peak MiB",
    "converged",
)


def summary_row(r):
    peak = r["peak_rss_delta_mib"] if r.get("tracemalloc_peak_mib") is None else r["tracemalloc_peak_mib"]
    return (
        r["scene"],
        str(r["vertices"]),
        str(r["steps"]),
        f"{r['wall_s']:.2f}",
        f"{r['cpu_s']:.2f}",
        f"{r['s_per_step']:.4f}",
        f"{r['newton_mean']:.2f}",
        f"{r['newton_median']:g}",
        str(r["newton_max"]),
        str(r["linear_solves"]),
        f"{r['nonsolve_ms_per_iter']:.2f}",
        f"{r['solve_ms_per_iter']:.2f}",
        "n/a" if r["nonsolve_over_solve"] is None else f"{r['nonsolve_over_solve']:.2f}",
        f"{peak:.1f}",
        "yes" if r["all_converged"] else f"no ({r['steps'] - r['converged_steps']} failed)",
    )


def stage_row(r):
    total = r["wall_s"]
    cells = [r["scene"]]
    for key, _ in STAGES:
        s = r["stages_s"].get(key, 0.0)
        cells.append(f"{s:.3g} ({100.0 * s / total:.0f}%)" if total > 0 else "0")
    return tuple(cells)


def markdown(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def scaling_lines(results):
    by = {r["scene"].split(" (")[0]: r for r in results}
    out = []
    a, b = by.get("S3-32"), by.get("S3-64")
    if a and b:
        ratio = b["nonsolve_ms_per_iter"] / a["nonsolve_ms_per_iter"]
        out.append(
            f"- per-iteration cost excluding the linear solve, S3-64 / S3-32: "
            f"{b['nonsolve_ms_per_iter']:.2f} / {a['nonsolve_ms_per_iter']:.2f} ms = {ratio:.2f}x "
            f"(vertices x{b['vertices'] / a['vertices']:.2f}; target <= 4.5): "
            f"{'holds' if ratio <= 4.5 else 'MISSED'}"
        )
    for name in ("S3-32", "S3-64", "S4"):
        r = by.get(name)
        if r and r["nonsolve_over_solve"] is not None:
            q = r["nonsolve_over_solve"]
            out.append(
                f"- non-solve time / solve time at {r['scene']}: {q:.2f} (target <= 1): "
                f"{'holds' if q <= 1 else 'MISSED'}"
            )
    for name, limit in (("S1", 1.0), ("S2", 2.5)):
        r = by.get(name)
        if r and r["steps"] == SCENES[name].steps:
            out.append(
                f"- {r['scene']} total {r['wall_s']:.2f} s (target <= {limit} s): "
                f"{'holds' if r['wall_s'] <= limit else 'MISSED'}"
            )
    return out


def report(results, tracemalloc_used=False):
    mem = "tracemalloc peak MiB" if tracemalloc_used else "ru_maxrss growth while stepping, MiB"
    print("## Summary\n")
    print(markdown(SUMMARY_COLS, [summary_row(r) for r in results]))
    print(
        f"\n(solves = Newton systems assembled and solved; per-iteration costs are per solve; peak = {mem})\n"
    )
    print("## Stage breakdown (wall seconds, % of the scene's total)\n")
    print(markdown(("scene", *(label for _, label in STAGES)), [stage_row(r) for r in results]))
    lines = scaling_lines(results)
    if lines:
        print("\n## Targets\n")
        print("\n".join(lines))
    extra = []
    for r in results:
        extra.append(
            f"- {r['scene']} ({r['what']}): {r['body_vertices']} body vertices, "
            f"{r['triangles']} triangles, max {r['max_active_contacts']} active contacts, "
            f"min distance {r['min_distance']:.3g} m, load average "
            f"{r['loadavg_before'][0]:.2f} -> {r['loadavg_after'][0]:.2f}"
            + (
                f"; median of {len(r['repeat_wall_s'])} runs, wall s "
                + ", ".join(f"{w:.2f}" for w in r["repeat_wall_s"])
                if len(r.get("repeat_wall_s", ())) > 1
                else ""
            )
            + (f"; first non-converged {r['first_failure']}" if r.get("first_failure") else "")
        )
    print("\n## Details\n")
    print("\n".join(extra))


# ---------------------------------------------------------------- profile


def profile_scene(name, steps, progress=True, top=30):
    """cProfile timed with process CPU time: on a shared machine wall-clock
    profiles mostly measure the other processes."""
    import cProfile
    import pstats

    prof = cProfile.Profile(time.process_time)
    prof.enable()
    r = run_scene(name, steps, progress=progress)
    prof.disable()
    print(
        f"## cProfile of {name}, {steps} steps (CPU {r['cpu_s']:.2f} s, wall {r['wall_s']:.2f} s "
        f"under the profiler), top {top} by tottime (CPU seconds)\n"
    )
    pstats.Stats(prof, stream=sys.stdout).strip_dirs().sort_stats("tottime").print_stats(top)
    return r


# ---------------------------------------------------------------- CLI


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "scenes",
        nargs="*",
        help="S1 S2 S3 (= S3-32 S3-64) S3-32 S3-64 S4, optionally NAME:STEPS; default all",
    )
    ap.add_argument("--quick", action="store_true", help="a few steps per scene instead of the full runs")
    ap.add_argument("--steps", type=int, help="steps per scene (overrides the defaults and --quick)")
    ap.add_argument("--json", metavar="PATH", help="also write the measurements as JSON")
    ap.add_argument("--profile", metavar="SCENE", help="cProfile one scene, print top 30 by tottime")
    ap.add_argument(
        "--tracemalloc",
        action="store_true",
        help="peak memory from tracemalloc (numpy buffers included; slows the run)",
    )
    ap.add_argument(
        "--report",
        nargs="+",
        metavar="JSON",
        help="print the tables from JSON files written by --json (results concatenated)",
    )
    ap.add_argument(
        "--repeat",
        type=int,
        default=1,
        metavar="N",
        help="run each scene N times (fresh processes) and report the run with the "
        "median wall time; all wall times go to the details (shared machines are noisy)",
    )
    ap.add_argument(
        "--linear-solver",
        choices=("auto", "scipy", "numpy"),
        default="auto",
        help="linear solver of the scenes ('numpy' = what stock Blender without scipy runs)",
    )
    ap.add_argument("--no-progress", action="store_true", help="no per-step lines on stderr")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--child-out", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.steps is not None and args.steps < 1:
        ap.error("--steps must be >= 1")
    if args.repeat < 1:
        ap.error("--repeat must be >= 1")
    return args


def steps_for(name, args, override=None):
    if override is not None:
        return override
    if args.steps is not None:
        return args.steps
    spec = SCENES[name]
    return spec.quick_steps if args.quick else spec.steps


def main(argv=None):
    args = parse_args(argv)
    progress = not args.no_progress
    if args.child:
        r = run_scene(args.child, args.steps, progress, args.tracemalloc, args.linear_solver)
        with open(args.child_out, "w") as f:
            json.dump(r, f)
        return 0
    if args.report:
        results = []
        for path in args.report:
            with open(path) as f:
                results += json.load(f)
        report(results, any(r.get("tracemalloc_peak_mib") is not None for r in results))
        return 0
    if args.profile:
        name, override = expand_scenes([args.profile])[0]
        profile_scene(name, steps_for(name, args, override), progress)
        return 0
    names = expand_scenes(args.scenes)
    print(
        f"# blender-ipc benchmark ({'quick' if args.quick else 'full'}), python {sys.version.split()[0]}, "
        f"numpy {__import__('numpy').__version__}, {os.cpu_count()} cores, "
        f"load average {os.getloadavg()[0]:.2f}\n"
    )
    results = []
    for name, override in names:
        runs = sorted(
            (
                run_in_child(
                    name, steps_for(name, args, override), progress, args.tracemalloc, args.linear_solver
                )
                for _ in range(args.repeat)
            ),
            key=lambda r: r["wall_s"],
        )
        median = runs[(len(runs) - 1) // 2]
        median["repeat_wall_s"] = [r["wall_s"] for r in runs]
        results.append(median)
        if args.json:  # rewritten after every scene: an interrupted run keeps what it finished
            with open(args.json, "w") as f:
                json.dump(results, f, indent=1)
    report(results, args.tracemalloc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
