"""Cheap wall-clock accounting of where a simulation spends its time.

Stages are exclusive: time spent in a nested stage is not counted again in
the stage around it.

``Simulation.timers`` accumulates seconds per stage (assembly of each
energy, broad phase, CCD, linear solve, line-search energy evaluations);
benchmarks print them.  Overhead is one perf_counter pair per stage call.
"""

import time
from collections import defaultdict

STAGES = (
    "elasticity",
    "barrier",
    "friction",
    "inertia+penalty",
    "broad_phase",
    "ccd",
    "linear_solve",
    "regime_rounds",
    "exact_cg",
    "line_search",
    "step_setup",
)


class Timers:
    """``with timers("stage"):`` accumulates the block's exclusive seconds.

    A plain __enter__/__exit__ object rather than a generator context
    manager: it is entered tens of thousands of times per second on small
    scenes."""

    def __init__(self):
        self.seconds = defaultdict(float)
        self.calls = defaultdict(int)
        self._stack = []  # [stage, start]; nested stages pause their parent
        self._next = None

    def __call__(self, stage):
        self._next = stage
        return self

    def __enter__(self):
        now = time.perf_counter()
        if self._stack:
            parent = self._stack[-1]
            self.seconds[parent[0]] += now - parent[1]
        self._stack.append([self._next, now])

    def __exit__(self, *exc):
        now = time.perf_counter()
        name, start = self._stack.pop()
        self.seconds[name] += now - start
        self.calls[name] += 1
        if self._stack:
            self._stack[-1][1] = now
        return False

    def reset(self):
        self.seconds.clear()
        self.calls.clear()

    def report(self, total=None):
        """Dict stage -> seconds; with total, 'other' gets the remainder."""
        out = {k: self.seconds.get(k, 0.0) for k in STAGES}
        if total is not None:
            out["other"] = max(total - sum(out.values()), 0.0)
        return out


class NullTimers(Timers):
    """Timers that record nothing (default for energies used stand-alone)."""

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        return False
