"""Touching starts (solver/touching.py) without Blender: bodies snapped onto the ground, onto a
collider or onto each other are moved apart rigidly by the stated gaps; real overlaps are
refused naming both objects. Distances are measured with the tests' own formulas."""

from dataclasses import replace

import numpy as np
import pytest
from invariants import boundary_edges, grid_square, point_segment_distance

from solver import Body, Collider, HalfPlane, Pin, Scene, SimParams, Simulation, SolverInputError
from solver.links import anchor_at
from solver.scene import Link
from solver.touching import BODY_GAP, PLANE_GAP, separate

DHAT = 0.01


def square(name, centre, side=0.2, **kw):
    v, t = grid_square(side, 2, centre)
    return Body(name, v, t, **kw)


def gap(a, b):
    """Smallest distance between the boundary vertices of one body and the boundary edges of
    the other, both ways."""
    best = np.inf
    for p, q in ((a, b), (b, a)):
        e = boundary_edges(np.asarray(q.triangles))
        pts = np.asarray(p.vertices)[np.unique(boundary_edges(np.asarray(p.triangles)))]
        for i, j in e:
            d = point_segment_distance(pts, np.asarray(q.vertices)[i], np.asarray(q.vertices)[j])
            best = min(best, float(np.min(d)))
    return best


def scene(bodies, colliders=(), ground=True):
    planes = (HalfPlane((0.0, 0.0), (0.0, 1.0), 0.4, "Ground"),) if ground else ()
    return Scene(tuple(bodies), tuple(colliders), planes, SimParams(dhat=DHAT))


def test_body_on_the_ground_is_lifted_by_the_plane_gap():
    box = square("box", (0.0, 0.1))  # bottom exactly at y = 0
    out, moves = separate(scene([box]))
    lift = out.bodies[0].vertices - box.vertices
    np.testing.assert_allclose(lift, np.tile([0.0, PLANE_GAP * DHAT], (len(lift), 1)), rtol=0, atol=1e-15)
    assert moves == [("box", "the Ground", pytest.approx(PLANE_GAP * DHAT))]
    Simulation(out).step()  # the solver takes the separated start


def test_stacked_bodies_end_the_body_gap_apart_the_upper_one_moving():
    low, high = square("low", (0.0, 0.2)), square("high", (0.0, 0.4))  # sharing a side at y = 0.3
    out, moves = separate(scene([low, high]))
    assert np.array_equal(out.bodies[0].vertices, low.vertices)  # the lower one stays
    shift = out.bodies[1].vertices - high.vertices
    assert np.allclose(shift, shift[0], rtol=0, atol=1e-15) and shift[0, 1] > 0  # rigid, upwards
    assert gap(out.bodies[0], out.bodies[1]) == pytest.approx(BODY_GAP * DHAT, rel=1e-9)
    assert [m[:2] for m in moves] == [("high", "low")]
    Simulation(out).step()


def test_pinned_body_stays_and_the_free_one_moves():
    pinned = square("pinned", (0.0, 0.4), pins=(Pin(np.array([0])),))
    free = square("free", (0.0, 0.2))  # below the pinned one: it moves although it is lower
    out, _ = separate(scene([free, pinned], ground=False))
    assert np.array_equal(out.bodies[1].vertices, pinned.vertices)
    assert gap(out.bodies[0], out.bodies[1]) == pytest.approx(BODY_GAP * DHAT, rel=1e-9)


def test_body_on_a_collider_is_moved_off_it():
    box = square("box", (0.0, 0.6))  # bottom on the collider line y = 0.5
    lid = Collider.static("ledge", [[-1.0, 0.5], [1.0, 0.5]], [[0, 1]])
    out, moves = separate(scene([box], [lid], ground=False))
    low = np.asarray(out.bodies[0].vertices)[:, 1].min()
    assert low - 0.5 == pytest.approx(PLANE_GAP * DHAT, rel=1e-9)
    assert moves[0][:2] == ("box", "ledge")


def test_real_overlap_is_refused_naming_both():
    a, b = square("A", (0.0, 0.4)), square("B", (0.15, 0.45))  # 5 cm into A: outlines cross
    with pytest.raises(SolverInputError, match="'A' and 'B' overlap at the start"):
        separate(scene([a, b]))


def test_an_overlap_whose_outlines_only_share_lines_is_refused():
    """B 5 cm into A at the same height: their outlines cross nowhere (the top and bottom
    edges lie on the same lines) and B's vertices inside A lie on edges between A's triangles;
    still a real overlap, not a touching start to move apart (as it was taken before)."""
    a, b = square("A", (0.0, 0.4)), square("B", (0.15, 0.4))
    with pytest.raises(SolverInputError, match="'A' and 'B' overlap at the start"):
        separate(scene([a, b]))


def test_apart_bodies_are_left_alone():
    a, b = square("A", (0.0, 0.4)), square("B", (0.5, 0.4))
    s = scene([a, b])
    out, moves = separate(s)
    assert moves == [] and out.bodies == s.bodies


def test_objects_that_do_not_collide_may_overlap_and_are_left_alone():
    """Bodies without a collision group in common, or joined by a link that does not collide,
    and a body and a collider of different groups: neither moved nor refused (the solver lets
    them overlap); a link that collides, or a shared group, still refuses the overlap."""
    a, b = square("A", (0.0, 0.4)), square("B", (0.15, 0.45))  # 5 cm into A: outlines cross
    apart = scene([a, replace(b, collision_groups=(1,))])
    out, moves = separate(apart)
    assert moves == [] and out.bodies == apart.bodies
    pin = Link("hinge", "pin", anchor_at(a, (0.09, 0.45)), anchor_at(b, (0.09, 0.45)))
    out, moves = separate(replace(scene([a, b]), links=(pin,)))
    assert moves == [] and out.bodies == (a, b)
    with pytest.raises(SolverInputError, match="'A' and 'B' overlap at the start"):
        separate(replace(scene([a, b]), links=(replace(pin, collide=True),)))
    ledge = Collider.static("ledge", [[-1.0, 0.45], [1.0, 0.45]], [[0, 1]])  # across A
    with pytest.raises(SolverInputError, match="'A' and 'ledge' overlap at the start"):
        separate(scene([a], [ledge], ground=False))
    out, moves = separate(scene([a], [replace(ledge, collision_groups=(3,))], ground=False))
    assert moves == [] and out.bodies == (a,)
