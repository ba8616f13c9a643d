"""The time stepper's object (solver/simulation.py) seen from outside: a simulation leaves the
scene it was given untouched."""

import copy

import numpy as np
from invariants import assert_same_values as _same

from solver import Body, Collider, HalfPlane, Material, Pin, Scene, SimParams, simulate
from solver.examples import square_mesh


def test_simulation_leaves_inputs_untouched():
    v, t = square_mesh(0.5, 2, (0.0, 0.5))
    cw = Body(
        "cw",
        v.copy(),
        t[:, [0, 2, 1]].copy(),
        Material(mu=0.5),
        velocity=np.array([1.0, -2.0]),
        pins=(Pin(np.array([0]), np.array([0.0, 1.0]), np.array([[[-0.25, 0.25]], [[-0.2, 0.25]]])),),
    )
    lid = Collider.static("lid", [[-1.0, 1.2], [1.0, 1.2]], [[0, 1]], mu=0.3)
    scene = Scene(
        bodies=(cw,),
        colliders=(lid,),
        half_planes=(HalfPlane((0.0, 0.0), (0.0, 1.0)),),
        params=SimParams(dt=0.02),
    )
    before = copy.deepcopy(scene)
    traj = simulate(scene, 5)
    assert len(traj.stats) == 5
    assert not np.array_equal(traj.body_positions[0][-1], v)  # it did move
    _same(scene, before)
