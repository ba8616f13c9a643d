"""Links (solver/links.py) and collision groups against closed forms, at the
default settings and the rigid links' default stiffness: a hinged compound
pendulum's period, a spring's frequency, a rope's stretch, a breakable link's
breaking time, bodies in different collision groups passing through each
other.  (The terms' derivatives are checked in test_terms.py.)

Implicit Euler damps oscillations and lengthens their period by about
(omega h)^2 / 3: at the default dt = 0.01 s that is 0.1 % for the pendulum
and 0.3 % for the spring, well inside the 2 % asked."""

from dataclasses import replace

import numpy as np
import pytest

from solver import Body, Material, Scene, SimParams, Simulation
from solver.errors import SolverInputError
from solver.links import RIGID_STIFFNESS, anchor_at
from solver.scene import Link, LinkAnchor

STIFF = Material(E=1e8, nu=0.3, density=1000.0, mu=0.0)
G = 9.81


def rectangle(name, lo, hi, nx, ny, material=STIFF, turn=(0.0, (0.0, 0.0)), **kw):
    """A structured nx x ny rectangle [lo, hi] mesh, turned by (angle, about pivot)."""
    angle, pivot = turn
    xs, ys = np.linspace(lo[0], hi[0], nx + 1), np.linspace(lo[1], hi[1], ny + 1)
    v = np.array([(x, y) for y in ys for x in xs])
    i = np.arange(nx)[None, :] + (nx + 1) * np.arange(ny)[:, None]
    i = i.ravel()
    t = np.concatenate(
        [np.column_stack([i, i + 1, i + nx + 2]), np.column_stack([i, i + nx + 2, i + nx + 1])]
    )
    c, s = np.cos(angle), np.sin(angle)
    v = (v - pivot) @ np.array([[c, s], [-s, c]]) + pivot
    return Body(name, v, t, material, **kw)


def centroid(sim, i):
    b = sim.model.body_slices[i]
    m = sim.model.mass[b]
    return (m[:, None] * sim.x[b]).sum(axis=0) / m.sum()


def zero_crossings(t, y):
    """Times where y changes sign (linear interpolation)."""
    k = np.flatnonzero(np.sign(y[:-1]) * np.sign(y[1:]) < 0)
    return t[k] - y[k] * (t[k + 1] - t[k]) / (y[k + 1] - y[k])


def test_hinged_compound_pendulum_period():
    length, width, theta0 = 0.5, 0.05, 0.05
    pivot = np.array([0.0, 0.0])
    # hanging from the pivot at the top of its axis, tilted by theta0
    body = rectangle("bar", (-width / 2, -length), (width / 2, 0.0), 2, 20, turn=(theta0, pivot))
    top = rectangle("bar", (-width / 2, -length), (width / 2, 0.0), 2, 20)  # untilted, to place the pivot
    a = anchor_at(top, (0.0, -0.0))
    link = Link("hinge", "pin", a, LinkAnchor(position=tuple(pivot)))
    scene = Scene((body,), params=SimParams(), links=(link,))
    sim = Simulation(scene)
    ts, angle = [0.0], [theta0]
    for _ in range(300):
        sim.step()
        c = centroid(sim, 0) - pivot
        ts.append(sim.time)
        angle.append(np.arctan2(c[0], -c[1]))
    cross = zero_crossings(np.array(ts), np.array(angle))
    assert len(cross) >= 4
    period = 2.0 * np.mean(np.diff(cross))
    I_over_m = (length**2 + width**2) / 12.0 + (length / 2) ** 2  # about the pivot
    expected = 2.0 * np.pi * np.sqrt(I_over_m / (G * length / 2))
    assert period == pytest.approx(expected, rel=0.02)
    # the hinge held: the pivot's material point stays at the world point
    d = sim.model.links.vectors(sim.x, sim.time)
    assert np.hypot(*d[0]) < 0.01 * length


def test_spring_frequency_between_two_bodies():
    light = Material(E=1e7, nu=0.3, density=100.0, mu=0.0)  # 0.1 x 0.1 m: 1 kg each
    a = rectangle("a", (-0.35, -0.05), (-0.25, 0.05), 2, 2, light)
    b = rectangle("b", (0.25, -0.05), (0.35, 0.05), 2, 2, light)
    k, rest = 40.0, 0.5
    spring = Link(
        "s", "spring", anchor_at(a, (-0.3, 0.0)), anchor_at(b, (0.3, 0.0)), length=rest, stiffness=k
    )
    scene = Scene((a, b), params=SimParams(gravity=(0.0, 0.0)), links=(spring,))
    sim = Simulation(scene)
    mu = 0.5 * 1.0  # reduced mass of two 1 kg bodies
    ts, stretch = [0.0], [0.1]
    for _ in range(200):
        sim.step()
        ts.append(sim.time)
        stretch.append(np.hypot(*(centroid(sim, 1) - centroid(sim, 0))) - rest)
    cross = zero_crossings(np.array(ts), np.array(stretch))
    assert len(cross) >= 4
    omega = np.pi / np.mean(np.diff(cross))
    assert omega == pytest.approx(np.sqrt(k / mu), rel=0.02)


def test_rope_loaded_by_gravity_stays_within_its_length():
    """A body dropped on a slack rope: it falls, the rope snaps taut, it swings;
    the rope (rigid default stiffness) never gets 1 % longer than its length."""
    body = rectangle("weight", (0.2, -0.05), (0.3, 0.05), 2, 2)
    rope_len = 0.4
    hook = LinkAnchor(position=(0.0, 0.0))
    rope = Link("rope", "rope", anchor_at(body, (0.25, 0.0)), hook, length=rope_len)
    sim = Simulation(Scene((body,), params=SimParams(), links=(rope,)))
    longest = 0.0
    for _ in range(120):
        sim.step()
        longest = max(longest, float(np.hypot(*sim.model.links.vectors(sim.x, sim.time)[0])))
    assert longest > 0.99 * rope_len  # it was loaded
    assert longest <= 1.01 * rope_len


def test_a_breakable_pin_breaks_within_a_frame_of_its_load_crossing_the_threshold():
    """A pinned body pulled by a spring whose far end moves away at speed v:
    the load k v t ramps up and crosses break_force F at t* = F / (k v)."""
    body = rectangle("b", (-0.05, -0.05), (0.05, 0.05), 2, 2, Material(E=1e7, nu=0.3, density=100.0, mu=0.0))
    k, v, F = 100.0, 1.0, 50.0
    centre = anchor_at(body, (0.0, 0.0))
    pin = Link("pin", "pin", centre, LinkAnchor(position=(0.0, 0.0)), break_force=F)
    pull = LinkAnchor(times=np.array([0.0, 10.0]), positions=np.array([[0.5, 0.0], [0.5 + 10 * v, 0.0]]))
    spring = Link("pull", "spring", centre, pull, stiffness=k)
    sim = Simulation(Scene((body,), params=SimParams(gravity=(0.0, 0.0)), links=(pin, spring)))
    broke = []
    while sim.time < 1.0:
        stats = sim.step()
        broke += [(name, sim.time) for name in stats.broken_links]
    assert [name for name, _ in broke] == ["pin"]
    assert abs(broke[0][1] - F / (k * v)) <= 1.0 / 24.0
    assert list(sim.link_active) == [False, True]
    assert centroid(sim, 0)[0] > 0.05  # free: the spring pulled it away


def test_rigid_stiffness_default_is_scaled_by_mass_and_dt():
    body = rectangle("b", (-0.05, -0.05), (0.05, 0.05), 2, 2)  # 10 kg
    pin = Link("pin", "pin", anchor_at(body, (0.0, 0.0)), LinkAnchor(position=(0.0, 0.0)))
    for dt in (0.01, 1.0 / 24.0):
        sim = Simulation(Scene((body,), params=SimParams(dt=dt), links=(pin,)))
        assert sim.model.links.stiffness[0] == pytest.approx(RIGID_STIFFNESS * 10.0 / dt**2)


def _crossing_pair(groups_a, groups_b):
    a = rectangle(
        "a",
        (-0.3, -0.1),
        (-0.1, 0.1),
        2,
        2,
        Material(E=1e6, density=100.0, mu=0.0),
        velocity=(2.0, 0.0),
        collision_groups=groups_a,
    )
    b = rectangle(
        "b",
        (0.1, -0.1),
        (0.3, 0.1),
        2,
        2,
        Material(E=1e6, density=100.0, mu=0.0),
        velocity=(-2.0, 0.0),
        collision_groups=groups_b,
    )
    sim = Simulation(Scene((a, b), params=SimParams(gravity=(0.0, 0.0), kappa=None)))
    gap = []
    for _ in range(40):
        sim.step()
        gap.append(sim.body_positions(1)[:, 0].min() - sim.body_positions(0)[:, 0].max())
    return sim, np.array(gap)


def test_bodies_in_different_collision_groups_pass_through_each_other():
    sim, _ = _crossing_pair((1,), (2,))
    assert centroid(sim, 0)[0] > centroid(sim, 1)[0] + 0.5  # swapped places


def test_bodies_sharing_a_group_never_cross():
    sim, gap = _crossing_pair((1, 2), (2, 5))
    assert gap.min() > 0.0
    assert centroid(sim, 0)[0] < centroid(sim, 1)[0]


def test_linked_bodies_may_overlap_unless_they_collide():
    """Two overlapping links of a chain, pinned where they overlap: valid (a
    link excludes its bodies' contacts); asked to collide, refused."""
    a = rectangle("a", (-0.3, -0.05), (0.05, 0.05), 4, 1)
    b = rectangle("b", (-0.05, -0.05), (0.3, 0.05), 4, 1)
    pin = Link("hinge", "pin", anchor_at(a, (0.0, 0.0)), anchor_at(b, (0.0, 0.0)))
    hook = Link("hook", "pin", anchor_at(a, (-0.25, 0.0)), LinkAnchor(position=(-0.25, 0.0)))
    sim = Simulation(Scene((a, b), params=SimParams(), links=(pin, hook)))
    for _ in range(20):
        sim.step()
    assert centroid(sim, 1)[1] < -0.05  # the free link swings down
    with pytest.raises(SolverInputError, match="overlap"):
        Simulation(Scene((a, b), params=SimParams(), links=(replace(pin, collide=True), hook)))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"kind": "hinge"}, "link 'l': kind: expected one of 'pin', 'weld', 'spring', 'rope', got 'hinge'"),
        ({"a": LinkAnchor(body="nobody")}, "link 'l': a.body: no body named 'nobody'"),
        (
            {"a": LinkAnchor(body="b", triangle=9)},
            r"link 'l': a.triangle: expected a triangle index in \[0, 8\)",
        ),
        (
            {"a": LinkAnchor(body="b", barycentric=(1.2, -0.2, 0.0))},
            "link 'l': a.barycentric: the anchor is outside",
        ),
        ({"a": LinkAnchor(position=(0.0, 0.0))}, "link 'l': a.body: the first anchor must be on a body"),
        ({"kind": "spring"}, "link 'l': stiffness: a spring needs a stiffness"),
        ({"kind": "rope", "length": -1.0}, "link 'l': length: expected a number >= 0"),
        ({"length": 1.0}, "link 'l': length: a pin has no length"),
        ({"break_force": 0.0}, "link 'l': break_force: expected a number > 0"),
        ({"damping": 1.0}, "link 'l': damping: only springs are damped"),
    ],
)
def test_link_validation_names_the_link(change, message):
    body = rectangle("b", (-0.05, -0.05), (0.05, 0.05), 2, 2)
    link = replace(Link("l", "pin", anchor_at(body, (0.0, 0.0)), LinkAnchor(position=(0.0, 0.0))), **change)
    with pytest.raises(SolverInputError, match=message):
        Simulation(Scene((body,), links=(link,)))


def test_collision_groups_are_validated():
    with pytest.raises(
        SolverInputError, match=r"body 'b': collision_groups\[0\]: expected an integer in \[0, 64\)"
    ):
        Simulation(Scene((rectangle("b", (0, 0), (1, 1), 1, 1, collision_groups=(64,)),)))


def test_anchor_outside_the_body_is_refused():
    body = rectangle("b", (-0.05, -0.05), (0.05, 0.05), 2, 2)
    with pytest.raises(SolverInputError, match=r"body 'b': the point \(1.0, 0.0\) is outside it"):
        anchor_at(body, (1.0, 0.0))


def test_checkpoint_keeps_broken_links():
    body = rectangle("b", (-0.05, -0.05), (0.05, 0.05), 2, 2, Material(E=1e7, nu=0.3, density=100.0, mu=0.0))
    pin = Link("pin", "pin", anchor_at(body, (0.0, 0.0)), LinkAnchor(position=(0.0, 0.0)), break_force=1.0)
    scene = Scene((body,), params=SimParams(), links=(pin,))
    sim = Simulation(scene)
    sim.step()  # 1 kg under gravity: 9.8 N > 1 N
    assert not sim.link_active[0]
    cp = sim.checkpoint()
    again = Simulation.from_checkpoint(scene, type(cp).from_text(cp.to_text()))
    assert not again.link_active[0]
    sim.step()
    again.step()
    np.testing.assert_array_equal(sim.x, again.x)


def test_links_and_groups_round_trip_through_json():
    from solver.io.scene_io import dumps_scene, load_scene, scene_to_dict

    a = rectangle("a", (-0.3, -0.05), (0.05, 0.05), 4, 1, collision_groups=(1, 3))
    b = rectangle("b", (-0.05, -0.05), (0.3, 0.05), 4, 1)
    moving = LinkAnchor(times=np.array([0.0, 1.0]), positions=np.array([[0.0, 1.0], [1.0, 1.0]]))
    links = (
        Link("hinge", "pin", anchor_at(a, (0.0, 0.0)), anchor_at(b, (0.0, 0.0)), break_force=30.0),
        Link("s", "spring", anchor_at(b, (0.25, 0.0)), moving, stiffness=5.0, damping=0.5, collide=True),
        Link("r", "rope", anchor_at(a, (-0.25, 0.0)), LinkAnchor(position=(-0.25, 0.5)), length=0.6),
    )
    scene = Scene((a, b), links=links)
    text = dumps_scene(scene)
    again = load_scene(scene_to_dict(scene))
    assert dumps_scene(again) == text
    assert again.bodies[0].collision_groups == (1, 3) and again.bodies[1].collision_groups == (0,)
    assert "collision_groups" not in scene_to_dict(scene)["bodies"][1]  # the default is not written
    for got, want in zip(again.links, links, strict=True):
        assert (got.name, got.kind, got.a.body, got.a.triangle) == (
            want.name,
            want.kind,
            want.a.body,
            want.a.triangle,
        )
        assert (got.stiffness, got.damping, got.break_force, got.collide) == (
            want.stiffness,
            want.damping,
            want.break_force,
            want.collide,
        )


def test_a_bad_link_in_a_scene_file_names_its_entry():
    from solver.io.scene_io import load_scene, scene_to_dict

    body = rectangle("b", (-0.05, -0.05), (0.05, 0.05), 2, 2)
    data = scene_to_dict(Scene((body,), links=(Link("l", "pin", anchor_at(body, (0.0, 0.0)), LinkAnchor()),)))
    data["links"][0]["a"]["barycentric"] = [2.0, -1.0, 0.0]
    with pytest.raises(
        SolverInputError, match=r'links\[0\]\.a\.barycentric: the anchor is outside .* \(link "l"\)'
    ):
        load_scene(data)
    data["links"][0]["a"] = {"body": "b", "triangle": 0}
    with pytest.raises(
        SolverInputError, match=r"links\[0\]\.a: missing required field 'barycentric' \(link \"l\"\)"
    ):
        load_scene(data)


@pytest.mark.parametrize("kind", ["weld", "pin"])
def test_a_weld_holds_a_cantilever_a_pin_lets_it_swing(kind):
    """A horizontal bar held at one end: welded, its tip sags by the weld's
    compliance only; pinned, it swings down."""
    bar = rectangle("bar", (0.0, -0.025), (0.5, 0.025), 20, 2)
    link = Link("root", kind, anchor_at(bar, (0.0, 0.0)), LinkAnchor(position=(0.0, 0.0)))
    sim = Simulation(Scene((bar,), params=SimParams(), links=(link,)))
    for _ in range(40):
        sim.step()
    drop = -sim.body_positions(0)[:, 1].min() - 0.025
    if kind == "weld":
        assert drop < 0.02 * 0.5
    else:
        assert drop > 0.2 * 0.5


def _pinned_at_corners(body, engaged_times, engaged, stiffness=None):
    """Pins from two of the body's corners to their rest positions, engaged per schedule."""
    corners = (body.vertices[0], body.vertices[2])
    return tuple(
        Link(
            f"pin{i}",
            "pin",
            anchor_at(body, p),
            LinkAnchor(position=tuple(p)),
            stiffness=stiffness,
            engaged_times=np.asarray(engaged_times, float),
            engaged=np.asarray(engaged, bool),
        )
        for i, p in enumerate(corners)
    )


def test_a_released_pin_falls_g_t2_over_2_after_its_release():
    """Held (rigid default) until t_r, released: the body then falls freely,
    its centre g (t - t_r)^2 / 2 below where it hung (to implicit Euler's
    one-step lag g h (t - t_r) / 2)."""
    body = rectangle("b", (-0.05, -0.05), (0.05, 0.05), 2, 2)
    t_r, h = 0.2, 0.01
    pins = _pinned_at_corners(body, [0.0, t_r], [True, False])
    sim = Simulation(Scene((body,), params=SimParams(dt=h), links=pins))
    while sim.time < t_r - 1e-9:
        sim.step()
    hung = centroid(sim, 0)[1]
    assert abs(hung) < 2e-3  # held (it sags by its own elasticity)
    for _ in range(30):
        sim.step()
        t = sim.time - t_r
        fall = hung - centroid(sim, 0)[1]
        assert abs(fall - 0.5 * G * t * t) <= 0.5 * G * h * t + 1e-9


def test_a_pin_engaged_again_pulls_the_body_back():
    """Released for 0.1 s, engaged again: a soft pull (k) brings it back."""
    body = rectangle("b", (-0.05, -0.05), (0.05, 0.05), 2, 2)
    pins = _pinned_at_corners(body, [0.0, 0.1, 0.2], [True, False, True], stiffness=2000.0)
    sim = Simulation(Scene((body,), params=SimParams(gravity=(0.0, -9.81)), links=pins))
    lowest = 0.0
    while sim.time < 1.5:
        sim.step()
        lowest = min(lowest, centroid(sim, 0)[1])
    assert lowest < -0.04  # it fell while released
    assert centroid(sim, 0)[1] > 0.5 * lowest  # pulled back up (damped by implicit Euler)


def test_engaged_schedule_round_trips_and_is_validated():
    import json

    from solver.io.scene_io import dumps_scene, load_scene

    body = rectangle("b", (-0.05, -0.05), (0.05, 0.05), 2, 2)
    pins = _pinned_at_corners(body, [0.0, 0.2], [True, False])
    back = load_scene(json.loads(dumps_scene(Scene((body,), links=pins))))
    np.testing.assert_array_equal(back.links[0].engaged, [True, False])
    np.testing.assert_array_equal(back.links[0].engaged_times, [0.0, 0.2])
    bad = replace(pins[0], engaged=np.array([True]))
    with pytest.raises(SolverInputError, match="link 'pin0': engaged: expected 2 booleans"):
        Simulation(Scene((body,), links=(bad,)))


def test_bodies_collide_again_once_apart_after_their_link_broke():
    """B overlaps A's end, hinged there by a breakable link that does not
    collide; a soft pin to a moving point drags B to the right: the link
    breaks, B leaves A; the point comes back: B must now collide with A, not
    pass through it."""
    a = rectangle("a", (-0.3, -0.05), (0.05, 0.05), 4, 1)
    b = rectangle("b", (-0.05, -0.05), (0.15, 0.05), 2, 1)
    hold = Link("hold", "weld", anchor_at(a, (-0.2, 0.0)), LinkAnchor(position=(-0.2, 0.0)))
    hinge = Link("hinge", "pin", anchor_at(a, (0.0, 0.0)), anchor_at(b, (0.0, 0.0)), break_force=100.0)
    track = LinkAnchor(
        times=np.array([0.0, 0.3, 0.6]), positions=np.array([[0.05, 0.0], [0.45, 0.0], [0.05, 0.0]])
    )
    back = Link("drag", "pin", anchor_at(b, (0.05, 0.0)), track, stiffness=900.0)
    scene = Scene((a, b), params=SimParams(gravity=(0.0, 0.0)), links=(hold, hinge, back))
    sim = Simulation(scene)
    assert not sim.model.owner_contact[0, 1]
    gaps, rejoined_at = [], None
    for _ in range(100):
        sim.step()
        gap = sim.body_positions(1)[:, 0].min() - sim.body_positions(0)[:, 0].max()
        if rejoined_at is None and sim.model.owner_contact[0, 1]:
            rejoined_at = len(gaps)
        gaps.append(gap)
    assert not sim.link_active[1]  # the hinge broke
    assert rejoined_at is not None and gaps[rejoined_at] > 0.0  # contact back on once apart
    after = np.array(gaps[rejoined_at:])
    assert after.min() > 0.0  # ... and B never crossed into A again
    assert after.min() < 0.01  # though the spring brought it back against A
    # a restored simulation makes the same choice (state-based rule)
    cp = sim.checkpoint()
    again = Simulation.from_checkpoint(scene, type(cp).from_text(cp.to_text()))
    assert again.model.owner_contact[0, 1]
