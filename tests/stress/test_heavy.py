"""The hard scenes of issue 35, point 4 (tests/stress/heavy.py) are what they claim to be."""

import numpy as np

from solver import Simulation
from tests.stress.heavy import press_slam, saw_comb, saw_outline


def test_saw_outline_is_a_saw():
    v, t = saw_outline(3, 0.02, 0.02, 0.01)
    a, b, c = v[t[:, 0]], v[t[:, 1]], v[t[:, 2]]
    area = 0.5 * ((b - a)[:, 0] * (c - a)[:, 1] - (b - a)[:, 1] * (c - a)[:, 0])
    assert (area > 0).all()
    # base 0.06 x 0.01 plus three teeth of 0.02 x 0.02 / 2
    np.testing.assert_allclose(area.sum(), 0.06 * 0.01 + 3 * 0.5 * 0.02 * 0.02)


def test_the_saw_rests_on_hundreds_of_contacts():
    scene, _ = saw_comb()
    sim = Simulation(scene)
    stats = [sim.step() for _ in range(3)]
    assert stats[-1].active_contacts >= 150, stats[-1]


def test_press_slam_is_the_issue_scene():
    scene, steps = press_slam()
    assert steps == 60 and len(scene.bodies) == 100
    assert scene.params.gravity == (0.0, -20.0)
    walls = sorted(float(h.point[0]) for h in scene.half_planes if h.normal[0] != 0)
    assert walls == [-1.8, 1.8]
    (ceiling,) = scene.colliders
    np.testing.assert_allclose(ceiling.positions[:, 0, 1], [2.64, 1.36])
    np.testing.assert_allclose(ceiling.times, [0.0, 0.6])
    top = max(float(b.vertices[:, 1].max()) for b in scene.bodies)
    assert top + scene.params.dhat < 2.64
