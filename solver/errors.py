"""Exceptions raised by the solver.

Every invalid input raises :class:`SolverInputError` with a message that names
the offending body / collider / field and the problem.  A time step that does
not converge within the iteration cap raises :class:`ConvergenceError` (when
``SimParams.strict`` is true) -- the simulation state is then still the last
feasible (intersection-free, inversion-free) iterate.
"""


class SolverInputError(ValueError):
    """Invalid scene, mesh or parameter. The message names the object and the problem."""


class ConvergenceError(RuntimeError):
    """A time step did not converge within the Newton iteration cap.

    step: the step's number (1 = the first); stats: its StepStats; vertex: the (global) vertex
    whose last Newton step was largest, where the solver was furthest from converging (None
    when not known)."""

    def __init__(self, message, step=None, stats=None, vertex=None):
        super().__init__(message)
        self.step = step
        self.stats = stats
        self.vertex = None if vertex is None or vertex < 0 else int(vertex)
