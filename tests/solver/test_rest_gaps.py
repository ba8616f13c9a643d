"""Rest shapes closer than dhat (solver/rest_gaps.py): a saw whose teeth are
closer than dhat to each other at rest simulates (dhat reduced below the gap,
with a note giving the numbers), and its teeth never cross."""

import re
import warnings

import numpy as np
import pytest
from invariants import boundary_edges, crossing_edge_pairs, point_segment_distance, sampled_motion_crossings

from solver import Body, HalfPlane, Material, Scene, SimParams, Simulation, simulate
from solver.errors import SolverInputError

GAP = 0.009999875  # the issue's: just below dhat = 0.01


def comb(n_teeth, tooth=0.01, gap=GAP, height=0.02, base=0.01, origin=(0.0, 0.0)):
    """A comb (a saw with square teeth) pointing down: a base strip on top of
    n_teeth teeth `tooth` wide, `gap` apart, `height` long; a grid of quads
    (two triangles each) over the columns, the gap columns only in the base."""
    xs = np.cumsum([0.0] + [tooth, gap] * (n_teeth - 1) + [tooth])
    ys = np.array([0.0, height, height + base])
    grid = {}
    verts, tris = [], []

    def vid(i, j):
        if (i, j) not in grid:
            grid[(i, j)] = len(verts)
            verts.append((xs[i] + origin[0], ys[j] + origin[1]))
        return grid[(i, j)]

    for i in range(len(xs) - 1):
        rows = [0, 1] if i % 2 == 0 else [1]  # a tooth column, or a gap column (base only)
        for j in rows:
            a, b, c, d = vid(i, j), vid(i + 1, j), vid(i + 1, j + 1), vid(i, j + 1)
            tris += [[a, b, c], [a, c, d]]
    return np.array(verts), np.array(tris)


def facing_sides(n_teeth):
    """(n_teeth - 1, 2, 2) vertex ids of comb(n_teeth)'s facing tooth sides across
    each gap: [[right side of tooth k], [left side of tooth k + 1]] (the grid's
    numbering: tooth columns first in order of creation, see comb)."""
    v, _ = comb(n_teeth)
    key = {(round(p[0], 9), round(p[1], 9)): i for i, p in enumerate(v)}
    xs = np.cumsum([0.0] + [0.01, GAP] * (n_teeth - 1) + [0.01])
    side = [[key[(round(xs[i], 9), 0.0)], key[(round(xs[i], 9), 0.02)]] for i in range(1, len(xs) - 1)]
    return np.array(side).reshape(n_teeth - 1, 2, 2)


def gaps_between_teeth(x, sides):
    """(n,) distance of each pair of facing sides (two segments that do not cross)."""
    a, b = x[sides[:, 0]], x[sides[:, 1]]  # (n, 2 ends, 2)
    d = [point_segment_distance(a[:, i], b[:, 0], b[:, 1]) for i in range(2)]
    d += [point_segment_distance(b[:, i], a[:, 0], a[:, 1]) for i in range(2)]
    return np.min(d, axis=0)


def saw_scene(n_teeth=6, dhat=0.01, slope=0.0, E=2e4):
    v, t = comb(n_teeth, origin=(-0.05, 0.004))
    body = Body("saw", v, t, Material(E=E, nu=0.3, density=500.0, mu=0.1))
    ground = HalfPlane((0.0, -0.1 * np.sin(slope)), (np.sin(slope), np.cos(slope)), mu=0.1)
    return Scene((body,), (), (ground,), SimParams(dt=0.01, dhat=dhat, strict=True))


def test_a_saw_closer_than_dhat_to_itself_simulates_with_a_note():
    with pytest.warns(UserWarning) as record:
        sim = Simulation(saw_scene())
    note = sim.notes[0]
    assert str(record[0].message) == note
    # the numbers: the given dhat, the gap (printed so that it reads below dhat), the new dhat
    m = re.search(
        r"dhat reduced from 0.01 to ([0-9.e-]+) m .*'saw' comes within ([0-9.e-]+) m of itself", note
    )
    new_dhat, gap = float(m.group(1)), float(m.group(2))
    assert gap == pytest.approx(GAP, rel=1e-6) and gap < 0.01
    assert new_dhat == pytest.approx(0.9 * GAP, rel=1e-6) and new_dhat < gap
    assert sim.params.dhat == pytest.approx(0.9 * GAP, rel=1e-12)
    assert sim.params.dhat < GAP


def test_without_a_close_gap_nothing_changes():
    scene = saw_scene(dhat=0.005)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        sim = Simulation(scene)
    assert sim.notes == () and sim.params.dhat == 0.005 and sim.scene is scene


def test_a_body_touching_itself_is_still_refused():
    """A gap far below dhat (100x) reads as a body drawn into itself, not a fine feature."""
    v, t = comb(3, gap=5e-5)
    scene = Scene((Body("saw", v, t),), params=SimParams(dhat=0.01))
    with pytest.raises(
        SolverInputError, match=r"body 'saw' and itself .*closer than dhat=0.01.*distance 5e-05"
    ):
        Simulation(scene)


@pytest.mark.parametrize("slope", [0.0, 0.5])
def test_the_saw_lands_and_its_teeth_never_cross(slope):
    """A soft saw dropped teeth first on flat and on tilted ground (the teeth
    bend sideways towards each other): every state and every step's straight
    motion is free of crossings, and no tooth gets closer to the next than 0."""
    scene = saw_scene(slope=slope)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        traj = simulate(scene, 30)
    assert traj.notes and all(s.converged for s in traj.stats)
    x = traj.body_positions[0]
    edges = boundary_edges(scene.bodies[0].triangles)
    for k in range(1, len(x)):
        assert len(crossing_edge_pairs(x[k], edges)) == 0
        assert len(sampled_motion_crossings(x[k - 1], x[k], edges, 0.25 * GAP)) == 0
    # it landed: the teeth touch the ground's barrier
    assert min(s.min_distance for s in traj.stats) < 0.01
    gaps = np.array([gaps_between_teeth(xk, facing_sides(6)) for xk in x])
    assert gaps[0].min() == pytest.approx(GAP, rel=1e-9)
    assert gaps.min() > 0.0
    if slope > 0.0:  # the teeth bent towards each other, into the (reduced) barrier
        assert gaps.min() < 0.9 * GAP


def test_the_cli_prints_and_records_the_note(tmp_path, capsys):
    from solver.io import cli
    from solver.io.scene_io import save_scene

    save_scene(saw_scene(), tmp_path / "saw.json")
    out = tmp_path / "saw.npz"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        code = cli.main(["run", str(tmp_path / "saw.json"), "-o", str(out), "--steps", "2", "--quiet"])
    assert code == cli.EXIT_OK
    err = capsys.readouterr().err
    assert "solver: note: dhat reduced from 0.01 to " in err
    notes = cli.read_trajectory(out)["notes"].tolist()
    assert len(notes) == 1 and notes[0] in err and "'saw' comes within" in notes[0]
