"""Two hard scenes of issue 35, point 4, for the stress corpus (``--heavy``) and the bench.

* ``saw_comb``: a saw body (teeth down) rests interleaved in a fixed saw (teeth up), 2.2 mm
  apart along the flanks, and a ceiling presses it in: hundreds of contacts on one body.
* ``press_slam``: the bench's pile of 100 shapes (bench S4) in a 3.6 m wide box, gravity
  20 m/s^2, the ceiling driven from the top of the pile (2.64 m) down to 1.36 m in 0.6 s.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from solver.examples import _horizontal_ceiling, pile
from solver.scene import Body, Collider, HalfPlane, Material, Scene, SimParams

SAW_TEETH, TOOTH_W, SAW_BASE = 40, 0.02, 0.02  # [m] (teeth as high as wide)
SAW_LIFT = 0.005  # upper saw above the fully meshed position [m] (flank gap LIFT / sqrt(5))
PRESS_HALF_WIDTH = 1.8  # [m]
PRESS_TOP, PRESS_STOP, PRESS_TIME = 2.64, 1.36, 0.6  # ceiling [m], [m], [s]


def saw_outline(n_teeth, w, h, base):
    """(vertices, triangles) of a saw on y in [0, base + h], teeth up, tooth k over
    [k w, (k + 1) w]: per tooth two base triangles and the tooth."""
    x = np.arange(n_teeth + 1) * w
    bottom = np.column_stack([x, np.zeros_like(x)])
    top = np.column_stack([x, np.full_like(x, base)])
    tips = np.column_stack([x[:-1] + 0.5 * w, np.full(n_teeth, base + h)])
    verts = np.concatenate([bottom, top, tips])
    k = np.arange(n_teeth)
    b0, b1, t0, t1, tip = k, k + 1, n_teeth + 1 + k, n_teeth + 2 + k, 2 * n_teeth + 2 + k
    tris = np.concatenate(
        [np.column_stack([b0, b1, t1]), np.column_stack([b0, t1, t0]), np.column_stack([t0, t1, tip])]
    )
    return verts, tris


def _boundary_edges(tris):
    e = np.sort(np.concatenate([tris[:, [0, 1]], tris[:, [1, 2]], tris[:, [2, 0]]]), axis=1)
    uniq, count = np.unique(e, axis=0, return_counts=True)
    return uniq[count == 1]


def saw_comb(n_teeth=SAW_TEETH, tooth=TOOTH_W, dhat=1e-3, lift=SAW_LIFT):
    """(scene, steps): the pressed saw (module docstring); teeth `tooth` wide and high."""
    v, t = saw_outline(n_teeth, tooth, tooth, SAW_BASE)
    fixed = Collider(
        name="fixed_saw",
        vertices=v,
        edges=_boundary_edges(t),
        times=np.array([0.0]),
        positions=v[None],
        mu=0.3,
    )
    # the moving saw: the same outline turned upside down, shifted half a tooth, so that its
    # teeth sit in the fixed saw's gaps, SAW_LIFT above where the flanks would coincide
    up = np.column_stack([v[:, 0] + 0.5 * tooth, 2 * SAW_BASE + tooth - v[:, 1] + lift])
    saw = Body("saw", up, t[:, ::-1].copy(), Material(E=1e6, nu=0.4, density=1000.0, mu=0.3))
    top = float(up[:, 1].max())
    x0, x1 = -0.1, n_teeth * tooth + 0.1
    ceiling = _horizontal_ceiling("press", x0, x1, top + 0.002, top - 0.006, 0.03)
    params = SimParams(dt=0.01, dhat=dhat)
    return Scene(bodies=(saw,), colliders=(fixed, ceiling), half_planes=(), params=params), 40


def press_slam():
    """(scene, steps): the bench's pile slammed by the press (module docstring)."""
    from bench.run import PILE_ARGS

    base = pile(**PILE_ARGS)
    speed = (PRESS_TOP - PRESS_STOP) / PRESS_TIME
    w = PRESS_HALF_WIDTH
    ceiling = _horizontal_ceiling("ceiling", -w - 0.5, w + 0.5, PRESS_TOP, PRESS_STOP, speed)
    walls = (
        HalfPlane((0.0, 0.0), (0.0, 1.0), 0.3, "ground"),
        HalfPlane((-w, 0.0), (1.0, 0.0), 0.3, "left_wall"),
        HalfPlane((w, 0.0), (-1.0, 0.0), 0.3, "right_wall"),
    )
    params = replace(base.params, gravity=(0.0, -20.0))
    return replace(base, colliders=(ceiling,), half_planes=walls, params=params), 60


def fine_saw():
    """(scene, steps): 100 teeth of 1 cm, Contact Gap 5 mm (the issue's halved 1 cm)."""
    return saw_comb(n_teeth=100, tooth=0.01, dhat=0.005, lift=0.0125)


HEAVY = {"saw_comb": saw_comb, "fine_saw": fine_saw, "press_slam": press_slam}
