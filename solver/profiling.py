"""Cheap wall-clock accounting of where a simulation spends its time.

Stages are exclusive: time spent in a nested stage is not counted again in
the stage around it.

``Simulation.timers`` accumulates seconds per stage (assembly of each
energy, broad phase, CCD, linear solve, line-search energy evaluations);
benchmarks print them.  Overhead is one perf_counter pair per stage call.
"""
import time
from collections import defaultdict
from contextlib import contextmanager

STAGES = ("elasticity", "barrier", "friction", "inertia+penalty", "broad_phase", "ccd",
          "linear_solve", "line_search", "step_setup")


class Timers:
    def __init__(self):
        self.seconds = defaultdict(float)
        self.calls = defaultdict(int)
        self._stack = []   # [stage, start]; nested stages pause their parent

    @contextmanager
    def __call__(self, stage):
        now = time.perf_counter()
        if self._stack:
            parent = self._stack[-1]
            self.seconds[parent[0]] += now - parent[1]
        self._stack.append([stage, now])
        try:
            yield
        finally:
            now = time.perf_counter()
            name, start = self._stack.pop()
            self.seconds[name] += now - start
            self.calls[name] += 1
            if self._stack:
                self._stack[-1][1] = now

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

    @contextmanager
    def __call__(self, stage):
        yield
