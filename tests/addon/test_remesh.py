"""Make Simulation Mesh (issue 12, point 10): the mesher on closed-form shapes (square, 20-gon
disc, annulus, L) and the operator on a Text object and a 20-gon n-gon, baked frame by frame."""

import math

import bpy
import harness
import numpy as np
import test_artist_input

MIN_ANGLE = 28.0


def setup_function():
    harness.setup()


def teardown_function():
    harness.teardown()


def _ngon(n, r=1.0, c=(0.0, 0.0)):
    a = 2 * np.pi * np.arange(n) / n
    return np.column_stack([c[0] + r * np.cos(a), c[1] + r * np.sin(a)])


def _on_outline(points, loops, tol=1e-9):
    core = harness.sub("solver.meshing")
    a = np.vstack(loops)
    b = np.vstack([np.roll(lp, -1, axis=0) for lp in loops])
    return core.distance_to_segments(points, a, b) <= tol


def _check_mesh(loops, h, area):
    core, remesh = harness.sub("solver.meshing"), harness.sub("remesh")
    x, tris = core.mesh_region(loops, h, MIN_ANGLE, cdt=remesh.cdt)
    signed = harness.sub("solver.geometry").signed_areas(x, tris)
    assert (signed > 0).all(), "every triangle counter-clockwise"
    assert abs(signed.sum() - area) <= 1e-9 * area, (signed.sum(), area)
    worst = core.min_angles(x, tris).min()
    assert worst >= MIN_ANGLE, worst
    e = np.sort(np.vstack([tris[:, [0, 1]], tris[:, [1, 2]], tris[:, [2, 0]]]), axis=1)
    uniq, counts = np.unique(e, axis=0, return_counts=True)
    assert counts.max() <= 2, "no edge shared by three triangles"
    boundary = np.unique(uniq[counts == 1])
    assert _on_outline(x[boundary], loops).all(), "boundary vertices on the input outline"
    interior = np.setdiff1d(np.arange(len(x)), boundary)
    assert len(interior) > 0
    assert len(np.unique(tris)) == len(x), "no unused vertex"
    edges = np.linalg.norm(x[uniq[:, 0]] - x[uniq[:, 1]], axis=1)
    assert edges.max() <= 1.6 * h, edges.max()
    return worst, len(tris)


def test_square_mesh():
    _check_mesh([np.array([[0, 0], [1, 0], [1, 1], [0, 1]], float)], 0.1, 1.0)


def test_disc_mesh():
    _check_mesh([_ngon(20)], 0.1, 10 * math.sin(2 * math.pi / 20))


def test_annulus_mesh():
    area = 10 * math.sin(2 * math.pi / 20) * (1 - 0.4**2)
    _check_mesh([_ngon(20), _ngon(20, 0.4)[::-1]], 0.1, area)
    _check_mesh([_ngon(20), _ngon(20, 0.4)], 0.15, area)  # hole wound either way


def test_l_shape_mesh():
    _check_mesh([np.array([[0, 0], [2, 0], [2, 1], [1, 1], [1, 2], [0, 2]], float)], 0.17, 3.0)


# ----------------------------------------------------------------------------- the operator


def _min_angle_of(obj):
    core = harness.sub("solver.meshing")
    xz = test_artist_input._world_xz(obj)
    return float(core.min_angles(xz, test_artist_input._face_triangles(obj)).min())


class _Operator:
    """Stands in for the operator instance: its properties and the reports it makes."""

    edge_length = 0.0
    min_angle = MIN_ANGLE

    def __init__(self):
        self.reports = []

    def report(self, kind, message):
        self.reports.append((set(kind), message))


def _convert(obj, reports=None):
    bpy.ops.object.select_all(action="DESELECT")
    obj.select_set(True)
    bpy.context.view_layer.objects.active = obj
    if reports is None:
        assert bpy.ops.ipc.make_sim_mesh() == {"FINISHED"}
    else:  # the operator's own execute, to read its report
        ops = harness.sub("operators")
        assert ops.IPC_OT_make_sim_mesh.execute(reports, bpy.context) == {"FINISHED"}
    new = bpy.data.objects[obj.name + "_sim"]
    assert new.type == "MESH" and new.ipc.role == "BODY"
    assert bpy.context.view_layer.objects.active == new and new.select_get()
    assert obj.hide_get() and obj.name in bpy.data.objects
    return new


def _ground_bake(new):
    test_artist_input._frames(n_frames=13)
    new.location.z += 0.05  # fall onto the ground
    assert bpy.ops.ipc.bake(target="SCENE") == {"FINISHED"}
    assert new.ipc.is_baked
    test_artist_input._assert_baked_frames_clean([new])


def test_text_becomes_a_simulation_mesh_that_bakes():
    curve = bpy.data.curves.new("IPC", type="FONT")
    curve.body = "IPC"
    text = bpy.data.objects.new("IPC", curve)
    bpy.context.scene.collection.objects.link(text)
    text.rotation_euler = (math.pi / 2, 0, 0)  # in the XZ plane
    text.scale = (0.3, 0.3, 0.3)
    text.location.z = 0.1
    text.ipc.youngs_modulus = 3.0e5
    bpy.context.view_layer.update()
    remesh, core = harness.sub("remesh"), harness.sub("solver.meshing")
    before = remesh.source_min_angle(bpy.context, text, "XZ")
    loops, _w, _extent = remesh.outline_of(bpy.context, text, "XZ")
    h = remesh.default_edge_length(bpy.context, text, "XZ")
    points_before = [tuple(p.co) for p in curve.splines[0].bezier_points] if curve.splines else None
    stand_in = _Operator()
    new = _convert(text, stand_in)
    after = _min_angle_of(new)
    deviation = core.outline_deviation(loops, test_artist_input._world_xz(new), _tri_faces(new))
    print(
        f"Text 'IPC': min angle {before:.2f} -> {after:.2f} deg, {len(new.data.polygons)} triangles, "
        f"outline within {deviation * 1e3:.3f} mm = {deviation / h:.3f} h (h = {h * 1e3:.2f} mm)"
    )
    # Measured (bpy 5.0.1 and Blender 3.4): 0.002 -> 29.95 deg, 226 triangles, outline within
    # 0.1 h. Before the circumcentres of one refinement round were made independent it
    # stopped at 15.3 deg (neighbouring circumcentres inserted together made new slivers).
    assert before < 5.0 and after >= MIN_ANGLE, (before, after)
    assert len(new.data.polygons) <= 400, len(new.data.polygons)
    assert deviation <= 0.15 * h, (deviation, h)
    [(kind, message)] = stand_in.reports
    assert kind == {"INFO"} and f"smallest angle {after:.1f}°" in message, message
    assert "outline within" in message and "'IPC'" in message, message
    assert text.type == "FONT" and curve.body == "IPC"
    assert points_before is None or points_before == [tuple(p.co) for p in curve.splines[0].bezier_points]
    assert abs(new.ipc.youngs_modulus - 3.0e5) < 1e-3
    _ground_bake(new)


def _tri_faces(obj):
    """The new mesh's faces (all triangles) as an (m, 3) array."""
    faces = np.array([list(p.vertices) for p in obj.data.polygons], dtype=np.int64)
    assert faces.shape[1] == 3
    return faces


def test_ngon_disc_becomes_a_simulation_mesh_that_bakes():
    verts = [(0.1 * math.cos(a), 0.0, 0.15 + 0.1 * math.sin(a)) for a in 2 * np.pi * np.arange(20) / 20]
    disc = harness.make_mesh_object("Disc", verts, faces=[tuple(range(20))])
    local = harness.local_coords(disc.data).copy()
    before = _min_angle_of(disc)
    new = _convert(disc)
    after = _min_angle_of(new)
    print(f"20-gon: min angle {before:.2f} -> {after:.2f} deg, {len(new.data.polygons)} triangles")
    assert before < 10.0 and after >= MIN_ANGLE - 1e-6, (before, after)
    assert (harness.local_coords(disc.data) == local).all() and disc.ipc.role == "NONE"
    _ground_bake(new)


def test_errors_leave_the_scene_unchanged():
    tilted = harness.make_mesh_object("Tilted", [(0, 0, 0), (1, 0, 0), (1, 1, 1)], faces=[(0, 1, 2)])
    edges = harness.make_mesh_object("Wire", [(0, 0, 0), (1, 0, 0)], edges=[(0, 1)])
    snap = harness.snapshot()
    for obj, words in ((tilted, "not flat"), (edges, "no faces")):
        bpy.context.view_layer.objects.active = obj
        try:
            bpy.ops.ipc.make_sim_mesh()
            raise AssertionError("expected an error")
        except RuntimeError as err:
            assert obj.name in str(err) and words in str(err), str(err)
    assert harness.snapshot() == snap
    assert not tilted.hide_get()


def test_tiny_outline_steps_are_merged_within_the_stated_tolerance():
    """A square whose bottom side has a 2 mm step, a notch and two vertices 0.1 mm apart (what
    a font's outline has at a serif): without merging them the refinement has to follow them
    with tiny triangles; merged, the mesh keeps the minimum angle and the outline stays within
    h/10 of the input."""
    core, remesh = harness.sub("solver.meshing"), harness.sub("remesh")
    loop = np.array(
        [
            [0, 0],
            [0.4, 0],
            [0.4, 0.002],  # 2 mm step up
            [0.6, 0.002],
            [0.6001, 0.002],  # 0.1 mm apart
            [0.7, 0.002],
            [0.702, 0.0],  # notch back down
            [1, 0],
            [1, 1],
            [0, 1],
        ],
        float,
    )
    h = 0.1
    # the merging itself: tests/solver/test_meshing.py
    x, tris = core.mesh_region([loop], h, MIN_ANGLE, cdt=remesh.cdt)
    worst = core.min_angles(x, tris).min()
    deviation = core.outline_deviation([loop], x, tris)
    print(
        f"stepped square: {len(tris)} triangles, min angle {worst:.2f} deg, deviation {deviation / h:.3f} h"
    )
    assert worst >= MIN_ANGLE, worst
    assert 0.0019 <= deviation <= 0.1 * h, deviation  # the 2 mm step is gone, no more
    areas = harness.sub("solver.geometry").signed_areas(x, tris)
    assert (areas > 0).all()
    area_in = 0.5 * float(np.sum(loop[:, 0] * np.roll(loop[:, 1], -1) - np.roll(loop[:, 0], -1) * loop[:, 1]))
    assert abs(areas.sum() - area_in) <= 0.31 * 0.002  # the step's 0.3 m x 2 mm at most
