"""Time stepping driver (placeholder interface; implementation in progress)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Tuple

import numpy as np


@dataclass(frozen=True)
class StepStats:
    """Diagnostics of one time step."""
    step: int                 # 1-based index of the step just taken
    time: float               # simulated time after the step [s]
    newton_iters: int         # Newton iterations used (all penalty rounds)
    converged: bool
    min_distance: float       # smallest unsigned contact distance at the end of the step [m] (inf if none within range)
    active_contacts: int      # contact pairs closer than dhat at the end of the step
    min_alpha: float          # smallest accepted line-search step in this step
    wall_time: float          # seconds
    collider_lag: float       # max distance of a kinematic vertex (collider / pin) from its target [m]
    kappa: float              # barrier stiffness used
    message: str = ""


@dataclass(frozen=True)
class Trajectory:
    """Result of :func:`simulate`.

    times: (S+1,); body_positions: tuple over bodies of (S+1, n_i, 2);
    collider_positions: tuple over colliders of (S+1, k_j, 2); stats: tuple of S StepStats.
    """
    times: np.ndarray
    body_positions: Tuple[np.ndarray, ...]
    collider_positions: Tuple[np.ndarray, ...]
    stats: Tuple[StepStats, ...]


class Simulation:
    """Incremental simulation of a :class:`~solver.scene.Scene`.

    ``Simulation(scene)`` validates the scene (raises SolverInputError),
    ``step()`` advances one time step and returns StepStats,
    ``body_positions(i)`` / ``collider_positions(j)`` give current (n,2) arrays,
    ``time`` and ``step_index`` tell where we are.
    """
    def __init__(self, scene):
        raise NotImplementedError


def simulate(scene, n_steps, progress=None) -> Trajectory:
    """Run n_steps; progress(step, n_steps, stats) is called after each step."""
    raise NotImplementedError
