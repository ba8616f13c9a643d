"""The solver's numeric policy as data: one frozen settings object per stage
of a time step, today's values as defaults.  ``Simulation(scene,
settings=SolverSettings(...))``; tests pass settings instead of changing
module constants.  These are not scene inputs (``SimParams``): they do not
change the physics being solved, only how the solver gets there."""

from __future__ import annotations

from dataclasses import dataclass, field

from .barrier_stiffness import BarrierStiffnessSettings
from .motion_check import MotionCheckSettings
from .newton import NewtonSettings
from .prescribed import PrescribedSettings
from .sleep import SleepSettings
from .start import StartSettings


@dataclass(frozen=True)
class SolverSettings:
    # the fraction of a closing gap that Newton's steps and the start keep
    # (CCD) (docs/design/05-ccd-gap-kept.md)
    ccd_gap_kept: float = 0.3
    start: StartSettings = field(default_factory=StartSettings)
    prescribed: PrescribedSettings = field(default_factory=PrescribedSettings)
    barrier_stiffness: BarrierStiffnessSettings = field(default_factory=BarrierStiffnessSettings)
    motion: MotionCheckSettings = field(default_factory=MotionCheckSettings)
    newton: NewtonSettings = field(default_factory=NewtonSettings)
    # sleeping bodies, off by default (docs/design/18-sleeping.md)
    sleep: SleepSettings = field(default_factory=SleepSettings)
