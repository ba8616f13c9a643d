"""Sleeping bodies (solver/sleep.py, docs/design/18-sleeping.md):

* a settled pile falls asleep and its steps then solve nothing (no unknowns,
  no contacts evaluated), a probe step aside, after which it sleeps again;
* a body thrown onto a sleeping pile: while it flies, Newton solves its 6
  unknowns only; it wakes the pile where it lands, and nothing ever crosses;
* a block on a slope steeper than its friction never sleeps; one stuck on a
  gentler slope sleeps; a sleeping block wakes when gravity tilts past its
  friction angle and slides as it does with sleeping off;
* the error is bounded as claimed: the kinetic energy dropped by at most
  1/2 M (speed newton_tol)^2, a probe keeps asleep only bodies slower than
  that, and a sleeping pile is within (speed newton_tol) x its time asleep
  of the same pile awake;
* a deformable body sleeps too; a collider that starts moving wakes what it
  touches.

References come from the solver with sleeping off or from closed forms.
"""

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from invariants import boundary_edges, crossing_edge_pairs, grid_square, point_segment_distance
from test_analytic import slope_scene

from solver import Body, Collider, HalfPlane, Material, Scene, SimParams, Simulation
from solver.broad_phase import Groups
from solver.contacts import candidate_stencils
from solver.examples import pile
from solver.io import cli
from solver.model import build_model
from solver.scene import Animation, Track
from solver.settings import SolverSettings
from solver.sleep import KEY_BAND, Sleep, SleepSettings, components, fixed_q, free_unknowns, held_system

SLEEP = SolverSettings(sleep=SleepSettings(enabled=True))
TOL = SimParams().newton_tol  # the piles' newton_tol too
G = 9.81


def all_rigid(scene):
    bodies = tuple(dataclasses.replace(b, kind="rigid") for b in scene.bodies)
    return dataclasses.replace(scene, bodies=bodies)


def rigid_pile(extra=()):
    """8 rigid shapes settling in a box (no ceiling), plus the bodies extra."""
    scene = all_rigid(pile(8, 4, n_seg=4, n_rings=2, n_boundary=16, ceiling_speed=0.0))
    return dataclasses.replace(scene, bodies=scene.bodies + tuple(extra))


def run(scene, steps, settings=SLEEP, check=None):
    sim = Simulation(scene, settings=settings)
    stats = []
    for _ in range(steps):
        stats.append(sim.step())
        if check is not None:
            check(sim)
    return sim, stats


def body_mass(body):
    v, t = body.vertices, body.triangles
    a, b, c = v[t[:, 0]], v[t[:, 1]], v[t[:, 2]]
    area = 0.5 * np.sum((b - a)[:, 0] * (c - a)[:, 1] - (b - a)[:, 1] * (c - a)[:, 0])
    return body.material.density * area


def test_a_settled_pile_falls_asleep_and_its_steps_solve_nothing():
    scene = rigid_pile()
    _, stats = run(scene, 260)
    n = len(scene.bodies)
    assert stats[10].unknowns == 6 * n and stats[10].contacts_evaluated == 0  # falling, all awake
    first = next(k for k, s in enumerate(stats) if s.sleep.sleeping == n)
    assert stats[first].sleep.fell_asleep == n and first < 160
    held = [s for s in stats[first + 1 :] if math.isnan(s.sleep.probe_speed)]
    probes = [s for s in stats[first + 1 :] if not math.isnan(s.sleep.probe_speed)]
    assert len(held) > 50 and len(probes) >= 1
    for s in held:  # nothing solved, nothing evaluated
        assert (s.unknowns, s.contacts_evaluated, s.newton_iters, s.sleep.sleeping) == (0, 0, 0, n)
    for s in probes:  # solved awake, asleep again at once
        assert s.unknowns == 6 * n and s.contacts_evaluated > 0
        assert s.sleep.probe_speed < TOL and s.sleep.sleeping == n and s.sleep.woke == 0


def test_a_body_thrown_onto_a_sleeping_pile_wakes_it_and_never_crosses_it():
    v, t = grid_square(0.15, 3, (0.0, 1.0))
    thrown = Body("thrown", v, t, Material(E=1e5, density=1000.0, mu=0.3), velocity=(0.0, 9.0), kind="rigid")
    scene = rigid_pile((thrown,))
    edges = Simulation(scene).model.edges

    def no_crossing(sim):
        assert not len(crossing_edge_pairs(sim.positions, edges))

    sim, stats = run(scene, 260, check=no_crossing)
    n = len(scene.bodies)
    asleep = [k for k, s in enumerate(stats) if s.sleep.sleeping == n - 1]
    assert asleep, "the pile never fell asleep before the throw landed"
    # the steps that start with the pile asleep solve for the thrown body only
    flying = [stats[k] for k in asleep if k - 1 in asleep and math.isnan(stats[k].sleep.probe_speed)]
    assert len(flying) > 10 and all(s.unknowns == 6 for s in flying)
    woken = next(k for k, s in enumerate(stats) if k > asleep[0] and s.sleep.woke)
    assert stats[woken].sleep.sleeping < n - 1
    # it landed on the pile: above the pile's top when it fell asleep
    top = max(sim.body_positions(i)[:, 1].max() for i in range(n - 1))
    assert sim.body_positions(n - 1)[:, 1].min() > 0.5 * top
    assert sim.body_positions(n - 1)[:, 1].max() < 1.0


def slope(theta_deg, mu, steps):
    scene = all_rigid(slope_scene(math.radians(theta_deg), mu, dhat=SimParams().dhat, eps_v=1e-3))
    scene = dataclasses.replace(scene, params=SimParams(eps_v=1e-3))
    return run(scene, steps)


def test_a_block_that_would_slide_never_sleeps():
    for theta, mu in ((35.0, 0.2), (30.0, 0.5)):  # tan theta = 0.70, 0.58
        _, stats = slope(theta, mu, 150)
        assert all(s.sleep.sleeping == 0 for s in stats)


def test_a_block_stuck_on_a_slope_falls_asleep():
    _, stats = slope(20.0, 0.5, 150)  # tan theta = 0.36
    assert stats[-1].sleep.sleeping == 1 and stats[-1].unknowns == 0


def tilting_block(settings, tilt_at=1.0, tilt_deg=35.0, mu=0.3, steps=150, kind="rigid"):
    """A block resting on flat ground; gravity tilts by tilt_deg at tilt_at:
    past its friction angle it slides along +x.  Returns its x track and stats."""
    scene = slope_scene(0.0, mu, dhat=SimParams().dhat, eps_v=1e-3, gap=0.5)
    scene = dataclasses.replace(scene, bodies=tuple(dataclasses.replace(b, kind=kind) for b in scene.bodies))
    th = math.radians(tilt_deg)
    down, tilted = (0.0, -G), (G * math.sin(th), -G * math.cos(th))
    gravity = Track(np.array([0.0, tilt_at, tilt_at + 0.01]), np.array([down, down, tilted]))
    scene = dataclasses.replace(scene, params=SimParams(eps_v=1e-3), animation=Animation(gravity=gravity))
    sim = Simulation(scene, settings=settings)
    track, stats = [], []
    for _ in range(steps):
        stats.append(sim.step())
        track.append(sim.body_positions(0)[:, 0].mean())
    return np.array(track), stats


def test_a_sleeping_block_wakes_when_gravity_tilts_past_its_friction():
    track, stats = tilting_block(SLEEP)
    reference, _ = tilting_block(SolverSettings())
    assert stats[99].sleep.sleeping == 1  # asleep before the tilt (t = 1 s)
    assert any(s.sleep.woke for s in stats[100:103]) and stats[-1].sleep.sleeping == 0
    slid = reference[-1] - reference[100]
    a = G * (math.sin(math.radians(35.0)) - 0.3 * math.cos(math.radians(35.0)))
    assert slid > 0.5 * 0.5 * a * 0.49**2  # it slides (the closed form, within the landing's start)
    assert abs((track[-1] - track[100]) - slid) < 0.02 * slid


def test_a_block_just_past_its_friction_angle_keeps_sliding_at_the_coulomb_acceleration():
    """Gravity tilts 0.17 deg past the friction angle (a slope in gravity's frame):
    a = 0.031 m/s^2, slower than the still speed (0.01 m/s) for the 20 steps that
    once put the sliding block back to sleep.  A body speeding up by more than
    the solver's force resolution (acceleration x g) over its still steps must
    not sleep: rigid and deformable, the fitted acceleration is the closed form's."""
    mu, tilt_deg, tilt_at = 0.3, 16.87, 1.0
    th = math.radians(tilt_deg)
    exact = G * (math.sin(th) - mu * math.cos(th))
    assert 0.0 < exact < 0.1
    for kind in ("rigid", "deformable"):
        track, stats = tilting_block(SLEEP, tilt_at, tilt_deg, mu, steps=300, kind=kind)
        assert stats[99].sleep.sleeping == 1  # asleep on the flat ground before the tilt
        assert all(s.sleep.sleeping == 0 for s in stats[102:]), kind
        t = 0.01 * np.arange(1, len(track) + 1)
        late = t > tilt_at + 0.3
        a = 2.0 * np.polyfit(t[late], track[late], 2)[0]
        assert abs(a - exact) < 0.02 * exact, (kind, a, exact)


def test_a_pair_resting_at_dhat_does_not_keep_a_body_awake():
    """A still block whose pair with a wall flickers across dhat by rounding (no
    force there either way) sleeps after `steps` still steps; a partner that
    comes within KEY_BAND dhat is a change, one that leaves beyond dhat too."""
    v, t = grid_square(0.1, 2, (0.0, 0.05))
    block = Body("block", v, t, Material(E=1e5, density=1000.0, mu=0.3), kind="rigid")
    planes = (
        HalfPlane((0.0, 0.0), (0.0, 1.0), 0.3, "ground"),
        HalfPlane((0.06, 0.0), (-1.0, 0.0), 0.3, "wall"),
    )
    scene = Scene((block,), half_planes=planes)
    model, p = build_model(scene), scene.params
    settings = SleepSettings(enabled=True)
    ground, wall = 1, 2  # planes numbered after the owners (one body)
    no_stencils = np.zeros((0, 3), np.intp)

    def step(sleep, partners, dist):
        k = len(partners)
        contacts = (np.zeros(k, np.intp), np.array(partners), np.array(dist) * p.dhat, no_stencils)
        return sleep.end_step(np.zeros((model.n, 2)), contacts, model.mass[:, None] * (0.0, -G), p.dt)

    for wall_at, sleeps in ((1.0 - 1e-12, True), (0.5 * (1.0 + KEY_BAND), True), (0.99 * KEY_BAND, False)):
        sleep = Sleep(model, settings, p, G)  # the wall within dhat every other step only
        flicker = [([ground, wall], [0.5, wall_at]) if k % 2 else ([ground], [0.5]) for k in range(40)]
        fell = [k for k, f in enumerate(flicker) if step(sleep, *f).fell_asleep]
        assert fell == ([settings.steps] if sleeps else []), wall_at


def pair_distances(sim):
    """Every body-body and body-half-plane distance within dhat, from the
    positions with the independent helpers (boundary vertices against the
    other bodies' boundary edges; vertices against each plane)."""
    scene = sim.scene
    out = []
    for i, bi in enumerate(scene.bodies):
        xi = sim.body_positions(i)
        for j, bj in enumerate(scene.bodies):
            if i != j:
                xj, e = sim.body_positions(j), boundary_edges(np.asarray(bj.triangles))
                p = xi[np.unique(boundary_edges(np.asarray(bi.triangles)))]
                out.append(point_segment_distance(p[:, None], xj[e[:, 0]][None], xj[e[:, 1]][None]).ravel())
        for h in scene.half_planes:
            out.append((xi - np.asarray(h.point)) @ np.asarray(h.normal))
    d = np.concatenate(out)
    return d[d < scene.params.dhat]


def test_the_dense_broad_phase_leaves_out_the_held_and_apart_pairs_as_the_grid_does():
    """Small scenes' dense box test (model.pair_eligible) skips the pairs within
    an apart group, the held vertices' one included: the stencils are those of a
    loop over every point and edge whose boxes overlap, that may contact and are
    not both in one apart group, in the grid's order (point, then edge)."""
    sim = Simulation(rigid_pile())
    m, x, pad = sim.model, sim.x, 0.05  # (a pad above the shapes' own gaps: own pairs to skip)
    assert m.pair_eligible is not None
    held = np.isin(m.owner, [0, 2, 3])
    owners = Groups(m.owner[m.points], m.owner[m.edges[:, 0]], np.array([False, True] * 4))
    groups = owners.with_held(held[m.points], held[m.edges].all(axis=1))
    got = candidate_stencils(m, x, x, pad, groups=groups)
    want = []
    for i, p in enumerate(m.points):
        for j, (a, b) in enumerate(m.edges):
            lo, hi = np.minimum(x[a], x[b]), np.maximum(x[a], x[b])
            overlap = np.all(x[p] - pad <= hi) and np.all(lo <= x[p] + pad)
            same = groups.point[i] == groups.edge[j] and groups.apart[groups.point[i]]
            if overlap and not same and m.may_contact(np.array([p]), np.array([a]), np.array([b]))[0]:
                want.append((p, a, b))
    assert len(want) > 50 and len(want) < len(candidate_stencils(m, x, x, pad))
    np.testing.assert_array_equal(got, np.array(want))
    assert not held[got].all(axis=1).any()


def test_the_smallest_distance_reported_covers_sleeping_pairs():
    scene = rigid_pile()
    n = len(scene.bodies)
    seen = []

    def check(sim):
        if sim._sleep.asleep.all():
            seen.append((sim.step_index, pair_distances(sim)))

    _, stats = run(scene, 200, check=check)
    held = [(k, d) for k, d in seen if stats[k - 1].unknowns == 0]  # (not the step they fell asleep in)
    assert len(held) > 20
    for k, d in held[:: len(held) // 10]:
        s = stats[k - 1]
        assert s.sleep.sleeping == n and len(d) > n
        assert s.min_distance == pytest.approx(d.min(), rel=1e-9)
        assert s.active_contacts == len(d)  # every pair within dhat counted too


def test_the_error_is_bounded_as_claimed():
    scene = rigid_pile()
    mass = sum(body_mass(b) for b in scene.bodies)
    sim, stats = run(scene, 260)
    awake, _ = run(scene, 260, settings=SolverSettings())
    fell = [s for s in stats if s.sleep.fell_asleep]
    assert fell
    for s in fell:
        assert 0.0 <= s.sleep.dropped_energy <= 0.5 * mass * TOL**2
    for s in stats:
        if not math.isnan(s.sleep.probe_speed):
            assert s.sleep.probe_speed < TOL
    first = next(k for k, s in enumerate(stats) if s.sleep.sleeping)
    asleep_for = (len(stats) - 1 - first) * scene.params.dt
    gap = np.abs(sim.positions - awake.positions).max()
    assert gap <= TOL * asleep_for


def test_a_deformable_body_sleeps_too():
    v, t = grid_square(0.1, 3, (0.0, 0.06))
    body = Body("box", v, t, Material(E=1e5, density=1000.0, mu=0.5))
    scene = Scene((body,), half_planes=(HalfPlane((0.0, 0.0), (0.0, 1.0), 0.5, "ground"),))
    _, stats = run(scene, 120)
    assert stats[0].unknowns == 2 * len(v)
    assert stats[-1].sleep.sleeping == 1 and stats[-1].unknowns == 0


def test_a_collider_that_starts_moving_wakes_the_body_it_touches():
    """A block asleep near a wall; the wall pushes it from t = 1 s on."""
    v, t = grid_square(0.1, 2, (0.0, 0.0505))
    body = Body("box", v, t, Material(E=1e5, density=1000.0, mu=0.3), kind="rigid")
    wall = np.array([[-0.065, 0.0], [-0.065, 0.2]])
    times = np.array([0.0, 1.0, 2.0])
    positions = np.stack([wall, wall, wall + np.array([0.2, 0.0])])
    pusher = Collider("pusher", wall, np.array([[0, 1]]), times, positions)
    ground = HalfPlane((0.0, 0.0), (0.0, 1.0), 0.3, "ground")
    scene = Scene((body,), colliders=(pusher,), half_planes=(ground,))
    sim, stats = run(scene, 150)
    assert stats[95].sleep.sleeping == 1
    assert stats[-1].sleep.sleeping == 0
    assert sim.body_positions(0)[:, 0].min() > sim.collider_positions(0)[:, 0].max()  # pushed, not crossed
    assert sim.body_positions(0)[:, 0].mean() > 0.05


def test_components_label_each_connected_group_by_its_smallest_node():
    a = np.array([5, 1, 3, 6])
    b = np.array([2, 0, 5, 3])
    assert components(8, a, b).tolist() == [0, 0, 2, 2, 4, 2, 2, 7]


def _smallest_reachable(n, a, b):
    """Each node's smallest reachable node, by a plain search (the reference)."""
    nbrs = [[] for _ in range(n)]
    for i, j in zip(a.tolist(), b.tolist(), strict=True):
        nbrs[i].append(j)
        nbrs[j].append(i)
    out = [-1] * n
    for start in range(n):  # ascending: the first start to reach a node is its smallest
        if out[start] >= 0:
            continue
        out[start], todo = start, [start]
        while todo:
            for j in nbrs[todo.pop()]:
                if out[j] < 0:
                    out[j] = start
                    todo.append(j)
    return out


@given(
    st.integers(1, 60).flatmap(
        lambda n: st.tuples(
            st.just(n), st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=90)
        )
    )
)
def test_components_agree_with_a_plain_search(graph):
    n, edges = graph
    pairs = np.array(edges, dtype=int).reshape(-1, 2)
    a, b = pairs[:, 0], pairs[:, 1]
    assert components(n, a, b).tolist() == _smallest_reachable(n, a, b)


def test_a_long_chain_numbered_at_random_is_one_component():
    order = np.random.default_rng(3).permutation(20_000)
    label = components(20_000, order[:-1], order[1:])
    assert (label == 0).all()


def test_sleeping_rigid_bodies_hold_their_six_unknowns():
    scene = rigid_pile()
    model = Simulation(scene).model
    fixed = np.zeros(model.n, bool)
    fixed[model.body_slices[2]] = True
    held = fixed_q(model.basis, np.repeat(fixed, 2))
    base = model.basis.a_dofs[2, 0]
    assert np.flatnonzero(held).tolist() == list(range(base, base + 6))
    assert free_unknowns(model, fixed) == 6 * (len(scene.bodies) - 1)


def test_the_command_line_says_what_slept(tmp_path, capsys):
    args = ["example", "block-on-slope", "--arg", "theta=0.1", "--arg", "mu=0.8", "--steps", "60"]
    out = tmp_path / "block.npz"
    assert cli.main([*args, "--quiet", "--out", str(out)]) == 0
    assert "sleeping" not in capsys.readouterr().err
    assert not np.load(out)["sleeping_bodies"].any()
    assert cli.main([*args, "--sleep", "--quiet", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    asleep = np.load(out)["sleeping_bodies"]
    assert asleep[0] == 0 and asleep[-1] == 1
    # every step after the one it fell asleep in solved nothing
    held = int(np.sum(asleep == 1)) - 1
    assert f"at most 1 bodies asleep at once (1 fell asleep, 0 woken); {held} step(s)" in err


def test_held_rigid_unknowns_leave_the_system_and_the_step_is_the_same():
    rng = np.random.default_rng(1)
    n, first_rigid = 14, 2  # 2 plain unknowns, then two bodies of 6
    M = rng.normal(size=(n, n))
    A = M @ M.T + n * np.eye(n)
    r, c = np.nonzero(np.ones((n, n)))
    g = rng.normal(size=n)
    held = np.zeros(n, bool)
    held[8:] = True  # the second body sleeps
    g[held] = 0.0
    (rows, cols, vals), rhs, free = held_system((r, c, A[r, c]), g, held, first_rigid)
    assert free.tolist() == list(range(8))
    K = np.zeros((8, 8))
    np.add.at(K, (rows, cols), vals)
    np.testing.assert_allclose(np.linalg.solve(K, rhs), np.linalg.solve(A[:8, :8], -g[:8]))
    plain = np.zeros(n, bool)
    plain[0] = True  # a fixed plain unknown (a pinned vertex): an identity row, as before
    (rows, cols, vals), rhs, free = held_system((r, c, A[r, c]), g, plain, first_rigid)
    assert free is None and len(rhs) == n and np.sum((rows == 0) & (cols == 0)) == 1
