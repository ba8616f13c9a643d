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
    """A time step did not converge within the Newton iteration cap."""

    def __init__(self, message, step=None, stats=None):
        super().__init__(message)
        self.step = step
        self.stats = stats
