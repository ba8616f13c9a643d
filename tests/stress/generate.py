"""Seeded generator of the stress corpus (issue 6).

``make_scene(i)`` builds scene number i deterministically from
``numpy.random.default_rng([MASTER_SEED, i, attempt])``; ``corpus(n)`` yields
the first n.  Scene i is built from one of the templates below (cycled, so
every template appears every len(TEMPLATES) scenes) with randomly drawn
shapes, materials and parameters:

* shapes: grid squares, slivers (aspect 15-40), discs, annuli, star-shaped
  concave polygons and zigzag combs (ear-clipped), L/U/C/T unions of grid
  cells, frames and grids with missing cells (holes);
* E in {1e3 .. 1e9} (extremes favoured), densities with 1000:1 mass ratios,
  speeds up to 20 m/s, h mostly 1/24 s, mu in [0, 2] for bodies and walls;
* dhat = f * size with f log-uniform in [1e-4, 1e-1] and size = the largest
  body's extent, capped at a quarter of the thinnest feature (thickness,
  hole, gap) so that no body starts closer than dhat to itself;
* both formulations; kappa given (around the softest E) or None (automatic);
* 10-60 steps, fewer for larger scenes; ``strict=False`` so a non-converged
  step is reported in StepStats and the run goes on.

Every scene is verified to start valid: the independent checker finds no
violation, objects are > dhat apart (``check.min_separation``) and
``solver.Simulation`` accepts it.  A draw that fails this is redrawn with the
next ``attempt`` (recorded in ``meta['attempt']``).

    python3 -m tests.stress.generate --count 200      # table of the corpus
    python3 -m tests.stress.generate --save 17 out.json
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass, field

import numpy as np

from solver import Body, Collider, HalfPlane, Material, Scene, SimParams, Simulation, SolverInputError

from . import shapes as S
from .check import Checker, min_separation

MASTER_SEED = 20240611
CORPUS_SIZE = 216
MAX_ATTEMPTS = 30
CHUNKY = ("square", "disc", "star", "zigzag", "L", "T")


@dataclass
class StressScene:
    index: int
    template: str
    scene: Scene
    n_steps: int
    meta: dict = field(default_factory=dict)

    @property
    def n_vertices(self):
        return sum(len(b.vertices) for b in self.scene.bodies)


# ----------------------------------------------------------------- random draws


def _E(rng):
    return float(rng.choice([1e3, 1e4, 1e5, 1e6, 1e9], p=[0.3, 0.1, 0.15, 0.15, 0.3]))


def _materials(rng, n):
    """n materials; with probability 0.4 densities differ by 1000:1."""
    rho = np.full(n, 1000.0)
    if n >= 2 and rng.random() < 0.4:
        heavy = rng.random(n) < 0.5
        heavy[0], heavy[1] = True, False  # at least one of each
        rho = np.where(heavy, 1e4, 10.0)
    mats = []
    for k in range(n):
        mu = 0.0 if rng.random() < 0.2 else float(rng.uniform(0, 2))
        mats.append(Material(E=_E(rng), nu=float(rng.uniform(0.0, 0.45)), density=float(rho[k]), mu=mu))
    return mats


def _speed(rng, vmax=20.0):
    return 0.0 if rng.random() < 0.15 else float(10 ** rng.uniform(-1, math.log10(vmax)))


def _direction(rng, lo=0.0, hi=2 * math.pi):
    a = rng.uniform(lo, hi)
    return np.array([math.cos(a), math.sin(a)])


def _dt(rng):
    return float(rng.choice([1 / 24, 1 / 60, 1 / 100], p=[0.6, 0.2, 0.2]))


def _shape(rng, size, kinds=S.SHAPE_KINDS):
    kind = str(rng.choice(kinds))
    v, t, feature = S.random_shape(rng, kind, size)
    v = S.rotate(v, rng.uniform(0, 2 * math.pi))
    return kind, v, t, feature


class _Draft:
    """Shapes plus layout helpers; turned into a Scene by ``build``."""

    def __init__(self, rng, size):
        self.rng, self.size = rng, size
        self.items = []  # (kind, v, t, feature)
        frac = 10 ** rng.uniform(-4, -1)
        self.dhat_frac = frac
        self.dhat = None

    def add(self, kinds=S.SHAPE_KINDS, size=None):
        if self.dhat_frac > 0.02:
            # large dhat needs chunky shapes (dhat is capped at a quarter of the thinnest feature)
            kinds = tuple(k for k in kinds if k in CHUNKY) or kinds
        item = _shape(self.rng, size or self.size, kinds)
        self.items.append(item)
        return item

    def finalize_dhat(self):
        extent = max(float(np.ptp(v, axis=0).max()) for _, v, _, _ in self.items)
        feature = min(f for *_, f in self.items)
        self.dhat = min(self.dhat_frac * extent, 0.25 * feature)
        self.gap_unit = 2.0 * self.dhat + 0.02 * self.size * self.rng.uniform(0.3, 2.0)
        return self.dhat

    def row(self, base_y, x_center=0.0, indices=None):
        """Lay items side by side, bottoms at base_y, separated by the gap.  Returns offsets."""
        idx = list(range(len(self.items))) if indices is None else indices
        widths = [np.ptp(self.items[k][1][:, 0]) for k in idx]
        total = sum(widths) + self.gap_unit * (len(idx) - 1)
        x = x_center - 0.5 * total
        for k, w in zip(idx, widths, strict=True):
            kind, v, t, f = self.items[k]
            lo = v.min(axis=0)
            v = v - lo + np.array([x, base_y])
            self.items[k] = (kind, v, t, f)
            x += w + self.gap_unit
        return total


def _bodies(items, mats, velocities):
    return tuple(
        Body(f"{kind}_{k}", v, t, mats[k], velocity=np.asarray(vel, float))
        for k, ((kind, v, t, _), vel) in enumerate(zip(items, velocities, strict=True))
    )


def _params(rng, d, mats, dt=None, gravity=(0.0, -9.81)):
    kappa = None if rng.random() < 0.5 else float(min(m.E for m in mats) * 10 ** rng.uniform(-1.5, 1.0))
    return SimParams(
        dt=dt or _dt(rng),
        dhat=d.dhat,
        kappa=kappa,
        formulation=str(rng.choice(["original", "convergent"])),
        gravity=gravity,
        strict=False,
    )


def _steps(rng, n_vertices):
    hi = 60 if n_vertices <= 80 else 40 if n_vertices <= 160 else 25
    return int(rng.integers(10, hi + 1))


# ----------------------------------------------------------------- templates


def t_drop(rng):
    """1-4 shapes in a row above a (possibly tilted) ground, random velocities."""
    d = _Draft(rng, float(rng.choice([0.1, 0.3, 1.0])))
    for _ in range(int(rng.integers(1, 5))):
        d.add()
    d.finalize_dhat()
    width = d.row(base_y=0.0)
    normal = np.array([rng.uniform(-0.2, 0.2), 1.0])
    unit = normal / np.linalg.norm(normal)
    for k, (kind, v, t, f) in enumerate(d.items):
        # lift each shape so it starts 1-20 gaps above the (tilted) ground
        lift = (d.gap_unit * rng.uniform(1, 20) - float((v @ unit).min())) / unit[1]
        d.items[k] = (kind, v + np.array([0.0, lift]), t, f)
    mats = _materials(rng, len(d.items))
    vel = [_speed(rng) * _direction(rng, math.pi, 2 * math.pi) for _ in d.items]
    planes = [HalfPlane((0.0, 0.0), (float(normal[0]), 1.0), float(rng.uniform(0, 2)), "ground")]
    if rng.random() < 0.5:
        w = 0.5 * width + d.gap_unit * rng.uniform(1, 5)
        planes += [
            HalfPlane((-w, 0.0), (1.0, 0.0), float(rng.uniform(0, 2)), "left"),
            HalfPlane((w, 0.0), (-1.0, 0.0), float(rng.uniform(0, 2)), "right"),
        ]
    return d, _bodies(d.items, mats, vel), (), tuple(planes), _params(rng, d, mats)


def t_collide(rng):
    """2-3 shapes on a line flying at each other (up to 20 m/s each), often 1000:1 masses."""
    d = _Draft(rng, float(rng.choice([0.1, 0.3, 1.0])))
    n = int(rng.integers(2, 4))
    for _ in range(n):
        d.add()
    d.finalize_dhat()
    d.row(base_y=0.0)
    mats = _materials(rng, n)
    xs = [v[:, 0].mean() for _, v, _, _ in d.items]
    c = float(np.mean(xs))
    vel = [-np.sign(x - c) * _speed(rng) * np.array([1.0, rng.uniform(-0.2, 0.2)]) for x in xs]
    gravity = (0.0, 0.0) if rng.random() < 0.5 else (0.0, -9.81)
    return d, _bodies(d.items, mats, vel), (), (), _params(rng, d, mats, gravity=gravity)


def t_paddle(rng):
    """A rotating paddle (rigid closed polyline, tip speed up to 20 m/s) sweeping
    shapes that rest on the ground of a walled box."""
    s = float(rng.choice([0.1, 0.3, 1.0]))
    d = _Draft(rng, s)
    n = int(rng.integers(1, 4))
    for _ in range(n):
        d.add(size=s * rng.uniform(0.5, 1.0))
    d.finalize_dhat()
    R = 2.5 * s * max(1.0, 0.4 * n)
    clear = rng.uniform(0.1, 0.5) * s
    pivot = np.array([0.0, clear + R])
    width = d.row(base_y=d.gap_unit)
    if width > 1.6 * R:  # keep the shapes under the sweep
        R = width / 1.6
        pivot = np.array([0.0, clear + R])
    dt = _dt(rng)
    n_steps = _steps(rng, sum(len(v) for _, v, _, _ in d.items))
    omega = rng.choice([-1, 1]) * rng.uniform(0.2, 1.0) * 20.0 / R
    half_t = 0.05 * R
    local = np.array([[-R, -half_t], [R, -half_t], [R, half_t], [-R, half_t]])
    times = dt * np.arange(n_steps + 2)
    ang = omega * times
    c, sn = np.cos(ang), np.sin(ang)
    tf = np.zeros((len(times), 2, 3))
    tf[:, 0, 0], tf[:, 0, 1], tf[:, 1, 0], tf[:, 1, 1] = c, -sn, sn, c
    tf[:, :, 2] = pivot
    paddle = Collider.from_rigid(
        "paddle", local, [[0, 1], [1, 2], [2, 3], [3, 0]], times, tf, mu=float(rng.uniform(0, 2))
    )
    w = R + s
    planes = (
        HalfPlane((0.0, 0.0), (0.0, 1.0), float(rng.uniform(0, 2)), "ground"),
        HalfPlane((-w, 0.0), (1.0, 0.0), float(rng.uniform(0, 2)), "left"),
        HalfPlane((w, 0.0), (-1.0, 0.0), float(rng.uniform(0, 2)), "right"),
    )
    mats = _materials(rng, n)
    vel = [np.zeros(2)] * n
    return d, _bodies(d.items, mats, vel), (paddle,), planes, _params(rng, d, mats, dt=dt), n_steps


def t_crush(rng):
    """A pile (2-6 shapes, concave ones included) crushed by a descending ceiling."""
    s = float(rng.choice([0.1, 0.3, 1.0]))
    d = _Draft(rng, s)
    n = int(rng.integers(2, 7))
    for _ in range(n):
        d.add()
    d.finalize_dhat()
    cols = int(rng.integers(1, 4))
    rows = [list(range(k, min(k + cols, n))) for k in range(0, n, cols)]
    y, width = d.gap_unit, 0.0
    for r in rows:
        width = max(width, d.row(base_y=y, indices=r))
        y = max(d.items[k][1][:, 1].max() for k in r) + d.gap_unit
    top = y
    w = 0.5 * width + d.gap_unit * rng.uniform(1, 3)
    speed = float(10 ** rng.uniform(math.log10(0.5), 1))
    stop = top * rng.uniform(0.3, 0.7)
    t_stop = (top - stop) / speed
    verts = np.array([[-w - s, top], [w + s, top]])
    ceiling = Collider(
        "ceiling",
        verts,
        np.array([[0, 1]]),
        np.array([0.0, t_stop]),
        np.stack([verts, verts - [0.0, top - stop]]),
        mu=float(rng.uniform(0, 2)),
    )
    planes = (
        HalfPlane((0.0, 0.0), (0.0, 1.0), float(rng.uniform(0, 2)), "ground"),
        HalfPlane((-w, 0.0), (1.0, 0.0), float(rng.uniform(0, 2)), "left"),
        HalfPlane((w, 0.0), (-1.0, 0.0), float(rng.uniform(0, 2)), "right"),
    )
    mats = _materials(rng, n)
    vel = [np.zeros(2)] * n
    return d, _bodies(d.items, mats, vel), (ceiling,), planes, _params(rng, d, mats)


def t_slope(rng):
    """1-2 shapes launched along a slope (angle up to ~46 deg), mu in [0, 2]."""
    d = _Draft(rng, float(rng.choice([0.1, 0.3, 1.0])))
    n = int(rng.integers(1, 3))
    for _ in range(n):
        d.add()
    d.finalize_dhat()
    d.row(base_y=d.gap_unit)
    theta = float(rng.uniform(-0.8, 0.8))
    along = np.array([math.cos(theta), math.sin(theta)])
    items = [(k, S.rotate(v, theta), t, f) for k, v, t, f in d.items]  # rotate CCW by theta
    d.items = items
    normal = (-math.sin(theta), math.cos(theta))
    mu = float(rng.uniform(0, 2))
    mats = _materials(rng, n)
    vel = [along * rng.uniform(-20, 20) for _ in range(n)]
    return (
        d,
        _bodies(d.items, mats, vel),
        (),
        (HalfPlane((0.0, 0.0), normal, mu, "slope"),),
        _params(rng, d, mats),
    )


def t_thin(rng):
    """Slivers: one lying on the ground, 1-3 more hitting it or each other at speed."""
    s = float(rng.choice([0.1, 0.3, 1.0]))
    d = _Draft(rng, s)
    n = int(rng.integers(2, 5))
    for k in range(n):
        d.add(kinds=("sliver",) if k < 2 or rng.random() < 0.7 else S.SHAPE_KINDS)
    d.finalize_dhat()
    kind, v, t, f = d.items[0]
    v = S.rotate(v - v.mean(0), -math.atan2(*(v[np.argmax(v[:, 0])] - v[np.argmin(v[:, 0])])[::-1]))
    d.items[0] = (kind, v, t, f)
    d.row(base_y=d.gap_unit, indices=[0])
    top = d.items[0][1][:, 1].max()
    d.row(base_y=top + d.gap_unit * rng.uniform(1, 10), indices=list(range(1, n)))
    mats = _materials(rng, n)
    vel = [np.zeros(2)] + [_speed(rng) * _direction(rng, 1.1 * math.pi, 1.9 * math.pi) for _ in range(n - 1)]
    return (
        d,
        _bodies(d.items, mats, vel),
        (),
        (HalfPlane((0.0, 0.0), (0.0, 1.0), float(rng.uniform(0, 2)), "ground"),),
        _params(rng, d, mats),
    )


TEMPLATES = {
    "drop": t_drop,
    "collide": t_collide,
    "paddle": t_paddle,
    "crush": t_crush,
    "slope": t_slope,
    "thin": t_thin,
}
_ORDER = tuple(TEMPLATES)


# ----------------------------------------------------------------- assembly


def _draw(index, attempt):
    rng = np.random.default_rng([MASTER_SEED, index, attempt])
    name = _ORDER[index % len(_ORDER)]
    out = TEMPLATES[name](rng)
    d, bodies, colliders, planes, params = out[:5]
    scene = Scene(bodies=bodies, colliders=colliders, half_planes=planes, params=params)
    n_verts = sum(len(b.vertices) for b in bodies)
    n_steps = out[5] if len(out) > 5 else _steps(rng, n_verts)
    size = max(float(np.ptp(b.vertices, axis=0).max()) for b in bodies)
    meta = {
        "seed": [MASTER_SEED, index, attempt],
        "attempt": attempt,
        "shapes": [it[0] for it in d.items],
        "dhat_over_size": params.dhat / size,
        "E": sorted({b.material.E for b in bodies}),
        "mass_ratio": max(b.material.density for b in bodies) / min(b.material.density for b in bodies),
        "max_speed": max(float(np.linalg.norm(np.atleast_2d(b.velocity), axis=1).max()) for b in bodies),
        "formulation": params.formulation,
        "kappa": params.kappa,
        "dt": params.dt,
    }
    return StressScene(index, name, scene, n_steps, meta)


def start_problem(scene):
    """None if the scene starts valid by the independent checks, else a reason."""
    v = Checker(scene).check([b.vertices for b in scene.bodies], [c.vertices for c in scene.colliders])
    if v:
        return v[0].detail
    sep = min_separation(scene)
    if not sep > scene.params.dhat:
        return f"objects start {sep:.3g} apart, dhat = {scene.params.dhat:.3g}"
    return None


# Scenes CORPUS_SIZE + j (j < CORPUS_SIZE) are scene j with rigid bodies (issue 34):
# every body rigid for even j, every other body for odd j (mixed); run with --rigid.
RIGID_COUNT = 36
RIGID_CORPUS = tuple(range(CORPUS_SIZE, CORPUS_SIZE + RIGID_COUNT))
# Scenes 2 CORPUS_SIZE + j are scene j with stiff bodies (affine + modes, solver/modal.py):
# every body stiff for even j; for odd j stiff, rigid and deformable in turn.  Also run by --rigid.
STIFF_COUNT = 12
STIFF_CORPUS = tuple(range(2 * CORPUS_SIZE, 2 * CORPUS_SIZE + STIFF_COUNT))


def rigid_variant(ss: StressScene) -> StressScene:
    """ss with its bodies made rigid (all of them, or every other one when its
    index is odd), bodies with pins kept deformable (rigid bodies take none)."""
    from dataclasses import replace

    mixed = ss.index % 2 == 1
    bodies = tuple(
        b if b.pins or (mixed and k % 2 == 1) else replace(b, kind="rigid")
        for k, b in enumerate(ss.scene.bodies)
    )
    meta = {**ss.meta, "kinds": [b.kind for b in bodies]}
    return StressScene(
        ss.index + CORPUS_SIZE, ss.template, replace(ss.scene, bodies=bodies), ss.n_steps, meta
    )


def stiff_variant(ss: StressScene) -> StressScene:
    """ss with stiff bodies (all of them, or stiff, rigid and deformable in turn
    when its index is odd), bodies with pins kept deformable (no pins on either)."""
    from dataclasses import replace

    cycle = ("stiff", "rigid", "deformable") if ss.index % 2 == 1 else ("stiff",)
    bodies = tuple(
        b if b.pins else replace(b, kind=cycle[k % len(cycle)]) for k, b in enumerate(ss.scene.bodies)
    )
    meta = {**ss.meta, "kinds": [b.kind for b in bodies]}
    return StressScene(
        ss.index + 2 * CORPUS_SIZE, ss.template, replace(ss.scene, bodies=bodies), ss.n_steps, meta
    )


def make_scene(index):
    """Scene number `index` of the corpus (deterministic); from CORPUS_SIZE on,
    the rigid variants (rigid_variant) of the first ones, from 2 CORPUS_SIZE on
    their stiff variants (stiff_variant)."""
    if index >= 2 * CORPUS_SIZE:
        return stiff_variant(make_scene(index - 2 * CORPUS_SIZE))
    if index >= CORPUS_SIZE:
        return rigid_variant(make_scene(index - CORPUS_SIZE))
    last = None
    for attempt in range(MAX_ATTEMPTS):
        s = _draw(index, attempt)
        last = start_problem(s.scene)
        if last is not None:
            continue
        try:
            Simulation(s.scene)
        except SolverInputError as exc:
            last = f"solver rejected: {exc}"
            continue
        return s
    raise RuntimeError(f"scene {index}: no valid draw in {MAX_ATTEMPTS} attempts (last: {last})")


def corpus(count=CORPUS_SIZE, start=0):
    for i in range(start, start + count):
        yield make_scene(i)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=CORPUS_SIZE)
    ap.add_argument("--save", nargs=2, metavar=("INDEX", "PATH"), help="write scene INDEX as JSON")
    a = ap.parse_args(argv)
    if a.save:
        from solver.io.scene_io import save_scene

        s = make_scene(int(a.save[0]))
        save_scene(s.scene, a.save[1])
        print(f"scene {s.index} ({s.template}, {s.n_steps} steps) -> {a.save[1]}")
        return 0
    for s in corpus(a.count):
        m = s.meta
        print(
            f"{s.index:4d} {s.template:8s} verts={s.n_vertices:4d} steps={s.n_steps:3d} "
            f"dhat/size={m['dhat_over_size']:.1e} E={m['E']} ratio={m['mass_ratio']:g} "
            f"v={m['max_speed']:.1f} {m['formulation']} kappa={m['kappa']} try={m['attempt']} {m['shapes']}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
