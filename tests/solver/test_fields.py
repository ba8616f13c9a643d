"""Force fields (solver/fields.py) against closed forms and an independent ODE
reference, at the default settings (dt = 0.01): a small stiff body far from
everything moves as a point mass in the field.  The finite-difference checks
of the drag term are the registry's (tests/solver/test_terms.py, FieldDrag)."""

import math

import numpy as np
import pytest

from solver import Body, Material, Scene, SimParams, Simulation, SolverInputError
from solver.examples import square_mesh
from solver.scene import ForceField

SIDE = 0.05  # small: the field hardly varies over the body


def stiff_body(center=(0.0, 0.0), velocity=None):
    v, t = square_mesh(side=SIDE, n_seg=2, center=center)
    return Body("box", v, t, Material(E=1e6, nu=0.3, density=100.0, mu=0.0), velocity=velocity)


def run(fields, steps, center=(0.0, 0.0), velocity=None, gravity=(0.0, 0.0)):
    """(times (S+1,), centre of mass (S+1, 2), its velocity (S+1, 2)) of the stiff body."""
    scene = Scene((stiff_body(center, velocity),), params=SimParams(gravity=gravity), fields=tuple(fields))
    sim = Simulation(scene)
    w = sim.model.mass / sim.model.mass.sum()
    xs, vs = [w @ sim.x], [w @ sim.v]
    for _ in range(steps):
        assert sim.step().converged
        xs.append(w @ sim.x)
        vs.append(w @ sim.v)
    return np.arange(steps + 1) * sim.params.dt, np.array(xs), np.array(vs)


def test_wind_against_quadratic_drag_reaches_the_terminal_speed():
    """Wind a [m/s^2 per kg] against quadratic drag c |v|^2: terminal speed sqrt(a / c)."""
    a, c = 2.0, 0.5
    wind = ForceField("wind", "wind", strength=a, direction=(1.0, 0.0), shape="plane")
    drag = ForceField("drag", "drag", linear_drag=0.0, quadratic_drag=c)
    _, _, v = run([wind, drag], 400)
    terminal = math.sqrt(a / c)
    assert v[-1, 0] == pytest.approx(terminal, rel=0.01)
    assert abs(v[-1, 1]) < 1e-9
    assert np.all(np.diff(v[:, 0]) >= -1e-9), "the speed only grows towards the terminal speed"


def test_linear_drag_decays_exponentially():
    """dv/dt = -c v: v0 exp(-c t); implicit Euler's own closed form is v0 (1 + c h)^-n."""
    c, v0 = 2.0, 1.0
    drag = ForceField("drag", "drag", linear_drag=c)
    t, _, v = run([drag], 100, velocity=(v0, 0.0))
    h = t[1]
    n = np.arange(len(t))
    np.testing.assert_allclose(v[:, 0], v0 * (1.0 + c * h) ** -n, rtol=1e-6)
    assert v[-1, 0] == pytest.approx(v0 * math.exp(-c * t[-1]), rel=0.025)  # O(c h n) = 2 %


def rk4(accel, x0, v0, t_end, h=1e-4):
    """A point mass x'' = accel(x) integrated with classical Runge-Kutta (independent reference)."""
    y = np.concatenate([x0, v0]).astype(float)

    def f(y):
        return np.concatenate([y[2:], accel(y[:2])])

    for _ in range(round(t_end / h)):
        k1 = f(y)
        k2 = f(y + 0.5 * h * k1)
        k3 = f(y + 0.5 * h * k2)
        k4 = f(y + h * k3)
        y = y + h / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)
    return y[:2], y[2:]


def test_point_attractor_moves_the_body_as_a_point_mass():
    """Force with strength -s, sphere falloff of power 2 beyond min_distance 0.2:
    Blender's a(x) = -s (1 + |x| - 0.2)^-2 x / |x|; the body starts at rest at (1, 0.3)."""
    s, p, d_min = 3.0, 2.0, 0.2
    field = ForceField(
        "pull",
        "force",
        strength=-s,
        position=(0.0, 0.0),
        falloff="sphere",
        falloff_power=p,
        min_distance=d_min,
    )

    def accel(x):
        d = np.hypot(*x)
        return -s * (1.0 + max(d - d_min, 0.0)) ** -p * x / d

    start = np.array([1.0, 0.3])
    t, x, _ = run([field], 100, center=start)
    ref, _ = rk4(accel, start, np.zeros(2), t[-1])
    moved = np.linalg.norm(ref - start)
    assert moved > 0.3
    # implicit Euler's first-order error, h / t = 1 % of the displacement, and the body's size
    assert np.linalg.norm(x[-1] - ref) < 0.012 * moved
    # the step's own rule for a point mass, written out: v += h a(x^n); x += h v
    xp, vp = start.copy(), np.zeros(2)
    for _ in range(len(t) - 1):
        vp = vp + t[1] * accel(xp)
        xp = xp + t[1] * vp
    assert np.linalg.norm(x[-1] - xp) < 0.002 * moved


def test_vortex_turns_counter_clockwise_with_speed_growing_with_radius():
    """A vortex of strength s pushes a body at rest at radius r tangentially,
    counter-clockwise: after a short time t its velocity is about s r t."""
    s, r = 2.0, 0.5
    field = ForceField("swirl", "vortex", strength=s, position=(0.0, 0.0))
    t, _, v = run([field], 5, center=(r, 0.0))
    assert v[-1, 1] == pytest.approx(s * r * t[-1], rel=0.01)
    assert abs(v[-1, 0]) < 0.05 * v[-1, 1]


def test_max_distance_switches_a_field_off():
    wind = ForceField("wind", "wind", strength=5.0, direction=(1.0, 0.0), falloff="sphere", max_distance=0.5)
    _, x, _ = run([wind], 10, center=(2.0, 0.0))
    np.testing.assert_array_equal(x[-1], x[0])


def test_animated_strength_is_sampled_per_step():
    """Wind switched on linearly over the first 0.1 s: the speed at 0.2 s is
    the integral of the ramp, as sampled at each step's start."""
    wind = ForceField(
        "gust", "wind", strength=np.array([0.0, 1.0]), direction=(1.0, 0.0), times=np.array([0.0, 0.1])
    )
    t, _, v = run([wind], 20)
    h = t[1]
    expected = sum(min(k * h / 0.1, 1.0) for k in range(20)) * h
    assert v[-1, 0] == pytest.approx(expected, rel=1e-6)


def test_a_zero_field_changes_no_bit():
    """A scene without fields steps exactly as one whose only field is off (zero strength)."""
    off = ForceField("off", "wind", strength=0.0)
    _, x0, v0 = run([], 5, gravity=(0.0, -9.81))
    _, x1, v1 = run([off], 5, gravity=(0.0, -9.81))
    np.testing.assert_array_equal(x0, x1)
    np.testing.assert_array_equal(v0, v1)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"kind": "magnet"}, "field 'f': kind: expected one of 'force', 'wind', 'drag', 'vortex'"),
        ({"quadratic_drag": -1.0}, "field 'f': quadratic_drag"),
        ({"falloff_power": -1.0}, "field 'f': falloff_power"),
        ({"strength": np.array([1.0, 2.0, 3.0]), "times": np.array([0.0, 1.0])}, "field 'f': strength"),
        ({"strength": float("nan")}, "field 'f': strength"),
        ({"kind": "vortex", "shape": "plane"}, "field 'f': shape"),
    ],
)
def test_invalid_fields_are_refused_naming_the_field(change, message):
    base = {"name": "f", "kind": "wind"}
    scene = Scene((stiff_body(),), fields=(ForceField(**(base | change)),))
    with pytest.raises(SolverInputError, match=message.replace("(", r"\(").replace("'", "'")):
        Simulation(scene)


def test_fields_and_animation_round_trip_through_a_scene_file():
    from solver.io.scene_io import scene_from_dict, scene_to_dict
    from solver.scene import Animation, MaterialAnimation, Track

    gust = ForceField(
        "gust", "wind", strength=np.array([0.0, 2.0]), direction=(1.0, 0.0), times=np.array([0.0, 1.0])
    )
    drag = ForceField("air", "drag", linear_drag=0.5, quadratic_drag=0.1, falloff="sphere", max_distance=3.0)
    anim = Animation(
        gravity=Track(np.array([0.0, 1.0]), np.array([[0.0, -9.81], [0.0, -1.0]])),
        materials=(MaterialAnimation("box", E=Track(np.array([0.0]), np.array([2e6]))),),
    )
    scene = Scene((stiff_body(),), fields=(gust, drag), animation=anim)
    data = scene_to_dict(scene)
    again = scene_from_dict(data)
    assert scene_to_dict(again) == data
    assert again.fields[1].max_distance == 3.0
    np.testing.assert_array_equal(again.animation.gravity.values, anim.gravity.values)
    with pytest.raises(SolverInputError, match=r"fields\[0\]\.kind"):
        scene_from_dict(data | {"fields": [{"name": "x", "kind": "magnet"}]})
