"""Artist input (issue 12): loose geometry, unselected bodies, Delete Bake, BLAS threads, flipped
faces and messages in Blender's words. Every bake here is checked frame by frame for crossing
boundary edges, inverted faces and vertices inside another body."""

import bpy
import checks
import harness
import numpy as np
import test_ui


def setup_function():
    harness.setup()


def teardown_function():
    harness.teardown()


def _frames(n_frames=13, fps=24, substeps=2):
    scene = bpy.context.scene
    scene.render.fps, scene.frame_start, scene.frame_end = fps, 1, n_frames
    scene.ipc.substeps = substeps
    scene.ipc.use_ground, scene.ipc.ground_height = True, 0.0


def _world_xz(obj):
    """Evaluated (shape-keyed) vertices of obj in world XZ at the current frame."""
    m = np.array([list(r) for r in obj.matrix_world])
    world = harness.evaluated_local(obj).astype(np.float64) @ m[:3, :3].T + m[:3, 3]
    return world[:, [0, 2]]


def _face_triangles(obj):
    mesh = obj.data
    mesh.calc_loop_triangles()
    tris = np.empty(len(mesh.loop_triangles) * 3, dtype=np.int64)
    mesh.loop_triangles.foreach_get("vertices", tris)
    return tris.reshape(-1, 3)


def _assert_baked_frames_clean(objs, triangles=None):
    """Every frame of the scene: the faces of objs (oriented as at the start frame, so a face
    whose normal the artist flipped counts as inverted only if it turns over) do not invert,
    their boundary edges never cross, no vertex enters another object's faces, and no boundary
    edge crosses a collider as Blender evaluates it at that frame.
    triangles: {name: (m, 3) mesh vertex indices} instead of Blender's loop triangles."""
    scene = bpy.context.scene
    scene.frame_set(scene.frame_start)
    meshes = []
    for obj in objs:
        tris = (triangles or {}).get(obj.name)
        tris = _face_triangles(obj) if tris is None else np.array(tris)
        flip = checks.signed_areas(_world_xz(obj), tris) < 0
        tris[flip] = tris[flip][:, [0, 2, 1]]
        used = np.unique(tris)
        remap = np.full(len(obj.data.vertices), -1)
        remap[used] = np.arange(len(used))
        meshes.append((used, remap[tris]))
    for frame in range(scene.frame_start, scene.frame_end + 1):
        scene.frame_set(frame)
        bodies = [(_world_xz(o)[used], tris) for o, (used, tris) in zip(objs, meshes, strict=True)]
        for x, tris in bodies:
            assert (checks.signed_areas(x, tris) > 0).all(), f"frame {frame}: a face inverted"
        checks.assert_intersection_free(bodies, label=f"frame {frame}")
        _assert_clear_of_animated_colliders(bodies, frame)
    scene.frame_set(scene.frame_start)


def _animated_collider_segments():
    """(S, 2, 2) edges of every collider (mesh or curve) as Blender evaluates it at the current
    frame (animation, shape keys, modifiers), in world XZ: what the artist sees."""
    depsgraph = bpy.context.evaluated_depsgraph_get()
    segs = []
    for obj in bpy.context.scene.objects:
        if obj.ipc.role != "COLLIDER" or obj.type not in {"MESH", "CURVE"}:
            continue
        ev = obj.evaluated_get(depsgraph)
        mesh = ev.to_mesh()
        try:
            co = np.array([tuple(v.co) for v in mesh.vertices], float).reshape(-1, 3)
            edges = np.array([tuple(e.vertices) for e in mesh.edges], int).reshape(-1, 2)
        finally:
            ev.to_mesh_clear()
        m = np.array([list(r) for r in ev.matrix_world])
        xz = (co @ m[:3, :3].T + m[:3, 3])[:, [0, 2]]
        segs.append(xz[edges])
    return np.concatenate(segs) if segs else np.zeros((0, 2, 2))


def _assert_clear_of_animated_colliders(bodies, frame):
    """No boundary edge of a body crosses a collider edge at the collider's animated position."""
    col = _animated_collider_segments()
    if not len(col):
        return
    for x, tris in bodies:
        b = x[checks.boundary_edges(tris)]
        o = checks._orient
        a0, a1 = b[:, None, 0], b[:, None, 1]
        c0, c1 = col[None, :, 0], col[None, :, 1]
        cross = (o(a0, a1, c0) * o(a0, a1, c1) < 0) & (o(c0, c1, a0) * o(c0, c1, a1) < 0)
        assert not cross.any(), f"frame {frame}: {int(cross.sum())} body edges cross an animated collider"


def test_frame_check_sees_a_body_through_an_animated_collider():
    """The frame check above is independent of the add-on: a collider strip keyed down through a
    body (nothing baked) fails it at the frames where they cross, and only there."""
    _frames(n_frames=5)
    box = harness.make_mesh_object(
        "Box", [(0, 0, 0), (0.2, 0, 0), (0.2, 0, 0.2), (0, 0, 0.2)], faces=[(0, 1, 2, 3)]
    )
    lid = harness.make_mesh_object("Lid", [(-0.1, 0, 0.3), (0.3, 0, 0.3)], edges=[(0, 1)], role="COLLIDER")
    scene = bpy.context.scene
    for frame, z in ((1, 0.0), (5, -0.2)):  # the strip at z = 0.3 moves to z = 0.1, inside the box
        scene.frame_set(frame)
        lid.location = (0.0, 0.0, z)
        lid.keyframe_insert("location", frame=frame)
    try:
        _assert_baked_frames_clean([box])
    except AssertionError as err:
        assert "cross an animated collider" in str(err), err
    else:
        raise AssertionError("a body crossed by the animated collider passed the frame check")


# ----------------------------------------------------------------------------- 1. loose geometry


def test_loose_vertices_and_edges_follow_the_body():
    _frames()
    # A plate (two quads) with: a loose vertex inside a face (4 is not in any face), a dangling
    # edge from the corner 2 to the loose vertex 7 outside, and a separate loose edge 8-9.
    verts = [
        (0.0, 0, 0.3),
        (0.2, 0, 0.3),
        (0.2, 0, 0.5),
        (0.0, 0, 0.5),  # left quad 0-1-2-3
        (0.1, 0, 0.4),  # 4: loose, inside the left quad
        (0.4, 0, 0.3),
        (0.4, 0, 0.5),  # right quad 1-5-6-2
        (0.2, 0, 0.71),  # 7: dangling from 2 (edge 2-7 is in no face)
        (0.45, 0, 0.6),
        (0.6, 0, 0.62),  # loose edge 8-9 beside the plate
    ]
    faces = [(0, 1, 2, 3), (1, 5, 6, 2)]
    plate = harness.make_mesh_object("Plate", verts, faces=faces, edges=[(2, 7), (8, 9)])
    bpy.context.view_layer.update()
    rest = np.array(verts)[:, [0, 2]]
    assert bpy.ops.ipc.bake(target="SCENE") == {"FINISHED"}
    _assert_baked_frames_clean([plate])
    scene = bpy.context.scene
    scene.frame_set(scene.frame_end)
    x = _world_xz(plate)
    drop = rest[:4].mean(axis=0) - x[:4].mean(axis=0)
    assert drop[1] > 0.2, f"the plate did not fall ({drop})"
    # Loose geometry moved with the plate (0.3 m down): by the plate's mean displacement, up to
    # the plate's own elastic deformation on landing (a few mm) ...
    for i in (4, 7, 8, 9):
        np.testing.assert_allclose(rest[i] - x[i], drop, atol=1e-2, err_msg=f"loose vertex {i}")
    # ... the loose vertex at the centre of a face stays on the middle of a diagonal (the face's
    # triangulation), loose edges keep their length.
    mid = min(np.linalg.norm(x[4] - (x[0] + x[2]) / 2), np.linalg.norm(x[4] - (x[1] + x[3]) / 2))
    assert mid < 1e-5, mid
    for a, b in ((2, 7), (8, 9)):
        r0, r1 = np.linalg.norm(rest[a] - rest[b]), np.linalg.norm(x[a] - x[b])
        assert abs(r1 - r0) < 0.03 * r0, f"loose edge {a}-{b}: {r0:.3f} -> {r1:.3f} m"
    # The user's mesh is unchanged (the bake is only in the shape keys).
    np.testing.assert_array_equal(harness.local_coords(plate.data)[:, [0, 2]], rest.astype(np.float32))


# ----------------------------------------------------------------------------- 2. unselected bodies


def _quad(name, x0, z0, w, h):
    verts = [(x0, 0, z0), (x0 + w, 0, z0), (x0 + w, 0, z0 + h), (x0, 0, z0 + h)]
    return harness.make_mesh_object(name, verts, faces=[(0, 1, 2, 3)])


def _select_only(*objs):
    bpy.context.view_layer.update()
    for o in bpy.context.view_layer.objects:
        o.select_set(o in objs)


def test_unselected_bodies_are_obstacles():
    _frames(n_frames=19)
    shelf = _quad("Shelf", -0.5, 0.1, 1.0, 0.05)
    box = _quad("Box", -0.1, 0.35, 0.2, 0.2)
    # 1. The shelf is not selected and not baked: it stays where it is, and the box lands on it.
    _select_only(box)
    assert bpy.ops.ipc.bake(target="SELECTED") == {"FINISHED"}
    assert shelf.data.shape_keys is None and not shelf.ipc.is_baked
    _assert_baked_frames_clean([box, shelf])
    scene = bpy.context.scene
    scene.frame_set(scene.frame_end)
    assert _world_xz(box)[:, 1].min() > 0.15, "the box fell through the unselected shelf"
    assert _world_xz(box)[:, 1].min() < 0.16, "the box did not land on the shelf"
    assert not harness.sub("adapter").is_outdated(bpy.context, box)
    assert harness.sub("adapter").unselected_bodies(bpy.context) == 1  # the panel's hint
    # 2. Bake the shelf alone (it falls away from the baked box, an obstacle now, onto the
    # ground), then re-bake the box alone: it follows the shelf's bake down and lands on it.
    _select_only(shelf)
    assert bpy.ops.ipc.bake(target="SELECTED") == {"FINISHED"}
    assert harness.sub("adapter").is_outdated(bpy.context, box), "the box's obstacle moved"
    _select_only(box)
    assert bpy.ops.ipc.bake(target="SELECTED") == {"FINISHED"}
    _assert_baked_frames_clean([box, shelf])
    scene.frame_set(scene.frame_end)
    top_of_shelf = _world_xz(shelf)[:, 1].max()
    assert top_of_shelf < 0.06, "the shelf did not fall to the ground"
    assert 0.0 < _world_xz(box)[:, 1].min() - top_of_shelf < 0.01, "the box is not on the shelf"


# ----------------------------------------------------------------------------- 3. Delete Bake


def _bake_fields(obj):
    s = obj.ipc
    return (s.is_baked, s.bake_hash, s.bake_frame_start, s.bake_frame_end, s.bake_partial, s.bake_message)


def _scene_stats():
    s = bpy.context.scene.ipc
    return {
        name: (getattr(s, name) if name != "stat_colliders" else len(s.stat_colliders))
        for name in (p.identifier for p in s.bl_rna.properties)
        if name.startswith("stat_")
    }


def test_delete_bake_clears_frames_and_statistics():
    _frames()
    a = _quad("A", 0.0, 0.3, 0.2, 0.2)
    b = _quad("B", 0.5, 0.3, 0.2, 0.2)
    wall = harness.make_mesh_object(
        "Wall",
        [(-0.2, 0, 0), (-0.2, 0, 1), (-0.1, 0, 1), (-0.1, 0, 0)],
        faces=[(0, 1, 2, 3)],
        role="COLLIDER",
    )
    fresh_object, fresh_scene = _bake_fields(a), _scene_stats()
    assert bpy.ops.ipc.bake(target="SCENE") == {"FINISHED"}
    _assert_baked_frames_clean([a, b])
    assert _bake_fields(a)[2:4] == (1, 13) and _scene_stats()["stat_frames"] == 13
    assert len(bpy.context.scene.ipc.stat_colliders) == 1, wall.name
    # Deleting one body's bake clears its fields; the statistics still describe B's bake.
    _select_only(a)
    assert bpy.ops.ipc.delete_bake(target="SELECTED") == {"FINISHED"}
    assert _bake_fields(a) == fresh_object
    assert _scene_stats()["stat_frames"] == 13
    # Deleting the last body of the bake clears the panel's statistics too.
    assert bpy.ops.ipc.delete_bake(target="SCENE") == {"FINISHED"}
    assert _bake_fields(b) == fresh_object
    assert _scene_stats() == fresh_scene
    assert a.data.shape_keys is None and b.data.shape_keys is None


# ----------------------------------------------------------------------------- 4. BLAS threads


def test_bake_limits_blas_threads_and_restores_them():
    blas = harness.sub("blas_threads")
    pools = blas.controls()
    # numpy's bundled OpenBLAS (bpy wheel) / Debian's OpenBLAS (Debian blender) are found.
    assert pools, "no BLAS thread control found"
    before = blas.current()
    blas.set_threads([2] * len(pools))
    try:
        _frames()
        a = _quad("A", 0.0, 0.3, 0.2, 0.2)
        b = _quad("B", 0.05, 0.6, 0.2, 0.2)
        bpy.context.view_layer.update()
        adapter = harness.sub("adapter")
        seen = []
        job = adapter.BakeJob(bpy.context, "SCENE")
        step = job.sim.step
        job.sim.step = lambda: (seen.append(blas.current()), step())[1]
        job.run()
        assert seen and all(c == [1] * len(pools) for c in seen), seen[:3]
        assert blas.current() == [2] * len(pools), "the BLAS thread count was not restored"
        limited = [job.body_frames(i) for i in range(2)]
        # The same bake with the process's own thread count gives the same result.
        free = adapter.BakeJob(bpy.context, "SCENE")
        free.blas_threads = None
        free.run()
        for i in range(2):
            np.testing.assert_allclose(free.body_frames(i), limited[i], rtol=0, atol=1e-9)
        # Through the operator: baked, restored, and the bake is clean.
        assert bpy.ops.ipc.bake(target="SCENE") == {"FINISHED"}
        assert blas.current() == [2] * len(pools)
        _assert_baked_frames_clean([a, b])
    finally:
        blas.set_threads(before)


# ----------------------------------------------------------------------------- 5. flipped faces


def test_flipped_face_is_oriented_in_the_solver_copy_only():
    _frames()
    verts = [(0.0, 0, 0.3), (0.2, 0, 0.3), (0.2, 0, 0.5), (0.0, 0, 0.5), (0.4, 0, 0.3), (0.4, 0, 0.5)]
    # The second quad is wound the other way (its normal flipped), as after a bad extrude.
    plate = harness.make_mesh_object("Plate", verts, faces=[(0, 1, 2, 3), (1, 2, 5, 4)])
    other = _quad("Other", 0.05, 0.6, 0.2, 0.2)
    faces_before = [tuple(p.vertices) for p in plate.data.polygons]
    assert bpy.ops.ipc.bake(target="SCENE") == {"FINISHED"}
    assert [tuple(p.vertices) for p in plate.data.polygons] == faces_before, "the user's mesh changed"
    _assert_baked_frames_clean([plate, other])
    scene = bpy.context.scene
    scene.frame_set(scene.frame_end)
    assert _world_xz(plate)[:, 1].min() < 0.01, "the plate did not fall onto the ground"


def test_ngon_with_vertices_on_its_sides_bakes():
    _frames()
    # A 0.4 x 0.2 rectangle as ONE face whose sides carry extra vertices (knife cuts, imports):
    # 14 vertices, 10 of them on straight sides. Blender's triangulation may fan across them.
    xs, zs = [0.0, 0.05, 0.1, 0.2, 0.3, 0.4], [0.3, 0.35, 0.4, 0.5]
    outline = [(x, zs[0]) for x in xs] + [(xs[-1], z) for z in zs[1:]]
    outline += [(x, zs[-1]) for x in reversed(xs[:-1])] + [(xs[0], z) for z in reversed(zs[1:-1])]
    plate = harness.make_mesh_object("Plate", [(x, 0, z) for x, z in outline], faces=[range(len(outline))])
    faces_before = [tuple(p.vertices) for p in plate.data.polygons]
    job = harness.sub("adapter").BakeJob(bpy.context, "SCENE")
    body = job.solver_scene.bodies[0]
    areas = checks.signed_areas(np.asarray(body.vertices), np.asarray(body.triangles))
    assert len(areas) == len(outline) - 2 and (areas > 1e-6).all(), areas  # no zero-area triangle
    np.testing.assert_allclose(areas.sum(), 0.4 * 0.2, rtol=1e-6)
    assert bpy.ops.ipc.bake(target="SCENE") == {"FINISHED"}
    assert [tuple(p.vertices) for p in plate.data.polygons] == faces_before, "the user's mesh changed"
    # Checked on the bake's own triangles (Blender's may be flat ones, area 0 in every frame).
    _assert_baked_frames_clean([plate], {"Plate": job.inputs[0].used[np.asarray(body.triangles)]})
    scene = bpy.context.scene
    scene.frame_set(scene.frame_end)
    assert _world_xz(plate)[:, 1].min() < 0.01, "the plate did not fall onto the ground"


# ----------------------------------------------------------------------------- 6. Blender's words


def _refused(*words, absent=()):
    before = harness.snapshot()
    message = harness.bake_error(target="SCENE")
    for word in words:
        assert word.lower() in message.lower(), f"{word!r} not in {message!r}"
    for word in absent:
        assert word.lower() not in message.lower(), f"{word!r} in {message!r}"
    assert harness.snapshot() == before, "the failed bake changed the scene"
    return message


def test_messages_use_face_indices_and_panel_names():
    _frames()
    verts = [(0.0, 0, 0.3), (0.2, 0, 0.3), (0.2, 0, 0.5), (0.0, 0, 0.5)]
    verts += [(0.4, 0, 0.3), (0.5, 0, 0.3), (0.6, 0, 0.3)]  # face 1: zero area (solver triangle 2)
    bad = harness.make_mesh_object("Sliver", verts, faces=[(0, 1, 2, 3), (4, 5, 6)])
    _refused("'Sliver'", "face 1", "zero area", absent=("triangle", "body '"))
    bpy.data.objects.remove(bad)
    a = _quad("A", 0.0, 0.3, 0.2, 0.2)
    b = _quad("B", 0.2005, 0.3, 0.2, 0.2)  # 0.5 mm from A
    s = bpy.context.scene.ipc
    s.dhat_mode, s.dhat = "ABSOLUTE", 0.01
    # Closer than the Contact Gap: separated for the simulation (point 7), said in its words.
    note = harness.sub("adapter").BakeJob(bpy.context, "SCENE").note
    assert "Contact Gap is 10 mm" in note and "'B' 10.5 mm away from 'A'" in note, note
    b.location.x = 0.5
    s.ground_height = 0.35
    _refused("'A'", "Ground (height 350 mm)", absent=("half-plane",))
    s.ground_height = 0.0
    assert bpy.ops.ipc.bake(target="SCENE") == {"FINISHED"}
    _assert_baked_frames_clean([a, b])


# ----------------------------------------------------------------------------- 7. touching starts


def _bake_touching(objs, *names):
    """Bake objs (touching at the start); the report names every object in names. Returns it."""
    note = harness.sub("adapter").BakeJob(bpy.context, "SCENE").note
    for name in names:
        assert name in note, f"{name!r} not in {note!r}"
    assert bpy.ops.ipc.bake(target="SCENE") == {"FINISHED"}
    _assert_baked_frames_clean(objs)
    scene = bpy.context.scene
    for frame in range(scene.frame_start, scene.frame_end + 1):
        scene.frame_set(frame)
        for obj in objs:
            assert _world_xz(obj)[:, 1].min() >= -1e-6, f"frame {frame}: '{obj.name}' below the ground"
    return note


def test_square_snapped_onto_the_ground_bakes():
    _frames()
    box = _quad("Box", 0.0, 0.0, 0.2, 0.2)  # exactly on the ground: distance 0
    note = _bake_touching([box], "'Box'", "the Ground")
    dhat = bpy.context.scene.ipc.dhat_relative * np.hypot(0.2, 0.2)
    assert f"{dhat * 0.5 * 1e6:.3g} µm" in note, note  # lifted to half the Contact Gap
    bpy.context.scene.frame_set(13)
    assert abs(_world_xz(box)[:, 1].min()) < dhat, "the box did not stay on the ground"


def test_squares_sharing_an_edge_bake():
    _frames()
    a = _quad("A", 0.0, 0.0, 0.2, 0.2)  # on the ground
    b = _quad("B", 0.0, 0.2, 0.2, 0.2)  # stacked exactly on A
    c = _quad("C", 0.2, 0.0, 0.2, 0.2)  # beside A, sharing its right side
    rest = {o.name: harness.local_coords(o.data).tobytes() for o in (a, b, c)}
    note = _bake_touching([a, b, c], "'A'", "'B'", "'C'", "the Ground")
    for obj in (a, b, c):  # the meshes are unchanged; only the shape keys hold the motion
        assert harness.local_coords(obj.data).tobytes() == rest[obj.name], obj.name
    bpy.context.scene.frame_set(13)
    assert _world_xz(b)[:, 1].min() - _world_xz(a)[:, 1].max() < 0.005, "B does not rest on A"
    assert note.startswith("IPC: objects touching at the start were separated")


def test_real_overlap_is_refused_naming_both():
    _frames()
    _quad("A", 0.0, 0.3, 0.2, 0.2)
    _quad("B", 0.15, 0.35, 0.2, 0.2)  # 5 cm into A: outlines cross
    _refused("'A'", "'B'", "overlap")


# ----------------------------------------------------------------------------- 9. initial velocity


def test_thrown_body_moves_and_spins_with_its_initial_velocity():
    _frames(n_frames=13, fps=24, substeps=4)
    s = bpy.context.scene.ipc
    s.use_ground, s.use_scene_gravity, s.gravity = False, False, (0.0, 0.0)  # free flight
    thrown = _quad("Thrown", 0.0, 0.3, 0.2, 0.2)
    spun = _quad("Spun", 1.0, 0.3, 0.2, 0.2)
    thrown.ipc.initial_velocity = (1.5, -0.5)
    spun.ipc.initial_angular_velocity = 2.0
    assert bpy.ops.ipc.bake(target="SCENE") == {"FINISHED"}
    _assert_baked_frames_clean([thrown, spun])
    scene = bpy.context.scene
    for frame in (7, 13):
        scene.frame_set(frame)
        t = (frame - 1) / 24.0
        # v0 * t: the centre moves in a straight line at v0, the square keeps its shape.
        centre = _world_xz(thrown).mean(axis=0)
        np.testing.assert_allclose(
            centre - (0.1, 0.4), (1.5 * t, -0.5 * t), atol=1e-3, err_msg=f"frame {frame}"
        )
        # omega * t: the spun square turns counter-clockwise about its (fixed) centre.
        x = _world_xz(spun)
        np.testing.assert_allclose(x.mean(axis=0), (1.1, 0.4), atol=1e-3)
        side = x[1] - x[0]
        angle = np.arctan2(side[1], side[0])
        assert abs(angle - 2.0 * t) < 0.03 * 2.0 * t + 1e-3, f"frame {frame}: {angle:.4f} vs {2.0 * t:.4f}"
    # The velocities are inputs of the bake: changing one marks it outdated.
    assert not harness.sub("adapter").is_outdated(bpy.context, thrown)
    spun.ipc.initial_angular_velocity = 1.0
    assert harness.sub("adapter").is_outdated(bpy.context, thrown)


# ----------------------------------------------------------------------------- 13. code layout, UI


def test_adapter_modules_ship_in_the_add_on_and_keep_the_layers():
    addon = harness.addon()
    for name in ("common", "reading", "colliders", "signature", "shape_keys", "bake_job", "adapter"):
        module = harness.sub(name)
        assert module.__name__.startswith(addon.__name__ + "."), module.__name__
        # adapter modules never reach up into the UI layer
        assert not {"operators", "panels", "properties"} & set(vars(module)), name
    adapter = harness.sub("adapter")
    assert adapter.BakeJob is harness.sub("bake_job").BakeJob
    assert adapter.write_bake is harness.sub("shape_keys").write_bake


def test_every_property_has_a_tooltip():
    props = harness.sub("properties")
    missing = [
        f"{cls.__name__}.{p.identifier}"
        for cls in props.CLASSES
        for p in cls.bl_rna.properties
        if p.identifier not in ("rna_type", "name") and not p.description.strip()
    ]
    assert not missing, missing


def test_panel_does_not_rehash_meshes_when_nothing_changed():
    _frames(n_frames=3)
    a = _quad("A", 0.0, 0.3, 0.2, 0.2)
    assert bpy.ops.ipc.bake(target="SCENE") == {"FINISHED"}
    panels, signature = harness.sub("panels"), harness.sub("signature")
    calls = []
    hashing = signature.input_signature
    signature.input_signature = lambda *args: (calls.append(1), hashing(*args))[1]
    try:

        def draw():
            log = []
            panels.draw_object(test_ui._Layout(log), bpy.context, a)
            panels.draw_bake(test_ui._Layout(log), bpy.context)
            return any(kind == "label" and t.startswith("Outdated") for kind, t in log)

        bpy.context.view_layer.update()
        assert not draw()
        first = len(calls)
        for _ in range(5):
            assert not draw()
        assert len(calls) == first, "the panel hashed the meshes again with nothing changed"
        bpy.context.scene.frame_set(2)  # playback: no new hash either
        assert not draw() and len(calls) == first
        # An edit of the mesh (through the depsgraph) or of a setting (even before any
        # depsgraph update) makes the panel hash again and mark the bake outdated.
        x0 = a.data.vertices[0].co.x
        a.data.vertices[0].co.x -= 0.01
        a.data.update()
        bpy.context.view_layer.update()
        assert draw() and len(calls) == first + 1
        a.data.vertices[0].co.x = x0  # back as it was: not outdated
        a.data.update()
        bpy.context.view_layer.update()
        assert not draw()
        a.ipc.friction = 0.1
        assert draw()
    finally:
        signature.input_signature = hashing
