"""blender-ipc solver: 2D frictional-contact IPC in vectorized numpy.

No ``bpy`` import anywhere in this package; scipy is optional (a numpy-only
linear-solver path is used when it is missing).

Public API::

    from solver import (Material, Body, Pin, Collider, HalfPlane, SimParams, Scene,
                        Simulation, simulate, StepStats, Trajectory,
                        SolverInputError, ConvergenceError, Checkpoint, SolverSettings)
"""

from .errors import ConvergenceError, SolverInputError
from .io.checkpoint import Checkpoint
from .scene import Body, Collider, HalfPlane, Material, Pin, Scene, SimParams
from .settings import SolverSettings
from .simulation import Simulation, StepStats, Trajectory, simulate

__all__ = [
    "Body",
    "Checkpoint",
    "Collider",
    "ConvergenceError",
    "HalfPlane",
    "Material",
    "Pin",
    "Scene",
    "SimParams",
    "Simulation",
    "SolverInputError",
    "SolverSettings",
    "StepStats",
    "Trajectory",
    "simulate",
]
__version__ = "0.1.0"
