"""Links, pins that let go and collision groups (issue 32, points 1-3 and 6) baked from scenes
built with ordinary operators; every frame checked independently (no inverted face, no crossing,
no vertex inside another body) and the behaviour asked for checked against the Empties and
closed forms, read from Blender (not from the add-on)."""

import bpy
import checks
import harness
import numpy as np
import test_artist_input as art

SIDE = 0.2


def setup_function():
    harness.setup()


def teardown_function():
    harness.teardown()


def _square(name, centre, n=2, side=SIDE):
    """A flat n x n grid square in the XZ plane, a deformable body (stiff rubber)."""
    bpy.ops.mesh.primitive_grid_add(
        x_subdivisions=n,
        y_subdivisions=n,
        size=side,
        location=(centre[0], 0.0, centre[1]),
        rotation=(np.pi / 2, 0, 0),
    )
    obj = bpy.context.active_object
    obj.name = name
    bpy.ops.object.transform_apply(location=False, rotation=True, scale=False)
    obj.ipc.role = "BODY"
    obj.ipc.youngs_modulus, obj.ipc.density, obj.ipc.friction = 1e6, 500.0, 0.0
    return obj


def _empty(name, location, kind="PIN", object1=None, object2=None):
    bpy.ops.object.empty_add(type="PLAIN_AXES", location=location)
    empty = bpy.context.active_object
    empty.name = name
    s = empty.ipc_link
    s.kind, s.object1 = kind, object1
    if object2 is not None:
        s.object2 = object2
    return empty


def _scene(n_frames=13, ground=False):
    art._frames(n_frames=n_frames)
    bpy.context.scene.ipc.use_ground = ground


def _rest_point(obj, point):
    """The triangle (mesh vertex ids) of obj's rest mesh holding the plane point, and its
    barycentric weights: the material point the link holds."""
    x = art._world_xz(obj)
    tris = art._face_triangles(obj)
    for t in tris:
        a, b, c = x[t]
        m = np.column_stack([b - a, c - a])
        w12 = np.linalg.solve(m, np.asarray(point) - a)
        w = np.array([1.0 - w12.sum(), *w12])
        if (w >= -1e-9).all():
            return t, w
    raise AssertionError("point outside the body")


def _material_point(obj, tri, w):
    return w @ art._world_xz(obj)[tri]


def _bake(*objs):
    for o in bpy.context.view_layer.objects:
        o.select_set(o in objs)
    assert "FINISHED" in bpy.ops.ipc.bake(target="SELECTED")


def test_pin_holds_the_body_to_an_animated_empty_every_frame():
    """A square hinged at its corner region to an Empty keyed to move sideways: its pivot point
    follows the Empty in every frame (within 1 % of the square) while gravity swings it."""
    _scene()
    body = _square("Plate", (0.0, 0.0))
    pivot = (-0.05, 0.05)
    empty = _empty("Hinge", (pivot[0], 0.0, pivot[1]), "PIN", body)
    for frame, x in ((1, pivot[0]), (13, pivot[0] + 0.2)):
        empty.location.x = x
        empty.keyframe_insert("location", index=0, frame=frame)
    scene = bpy.context.scene
    scene.frame_set(1)
    tri, w = _rest_point(body, pivot)
    _bake(body)
    art._assert_baked_frames_clean([body])
    spin = []
    for frame in range(1, 14):
        scene.frame_set(frame)
        held = _material_point(body, tri, w)
        target = np.array([empty.matrix_world.translation.x, empty.matrix_world.translation.z])
        assert np.hypot(*(held - target)) < 0.01 * SIDE, f"frame {frame}: pivot {held} vs Empty {target}"
        x = art._world_xz(body)
        spin.append(np.arctan2(*(x[-1] - x[0])[::-1]))
    assert abs(spin[-1] - spin[0]) > 0.05  # it swung about the pivot (not held rigidly)


def test_pin_between_two_bodies_keeps_their_points_together():
    """Two overlapping squares hinged where they overlap, the first held by a second pin to the
    world: the second swings down, the hinge's two material points stay together (from the
    start: the overlap is not taken for a touching start and moved apart)."""
    _scene()
    a = _square("A", (0.0, 0.0))
    b = _square("B", (0.15, 0.0))
    pivot = (0.075, 0.0)
    _empty("Hinge", (pivot[0], 0.0, pivot[1]), "WELD", a)  # holds A still
    _empty("Joint", (0.09, 0.0, 0.0), "PIN", a, b)
    bpy.context.scene.frame_set(1)
    ta, wa = _rest_point(a, (0.09, 0.0))
    tb, wb = _rest_point(b, (0.09, 0.0))
    _bake(a, b)
    scene = bpy.context.scene
    assert "touching at the start" not in scene.ipc.stat_notes  # they may overlap: not moved apart
    for frame in range(1, 14):
        scene.frame_set(frame)
        gap = _material_point(a, ta, wa) - _material_point(b, tb, wb)
        assert np.hypot(*gap) < 0.01 * SIDE, f"frame {frame}: hinge opened by {gap}"
    assert art._world_xz(b).mean(axis=0)[1] < -0.02  # B swung down about the joint


def _edge_angle(obj):
    """The direction [rad] of the plate's bottom edge (its first two mesh vertices)."""
    x = art._world_xz(obj)
    return float(np.arctan2(*(x[1] - x[0])[::-1]))


def test_a_weld_keeps_two_bodies_from_turning_against_each_other():
    """A swinging on a Pin at its upper left corner; B welded to A where they overlap: every
    frame B turns exactly as A does (within 0.01 rad) while A swings by more than 0.1 rad; a
    Pin in the Weld's place lets B turn against A."""
    turned = {}
    for kind in ("WELD", "PIN"):
        harness.teardown()
        harness.setup()
        _scene()
        a = _square("A", (0.0, 0.0))
        b = _square("B", (0.15, 0.0))
        _empty("Hinge", (-0.08, 0.0, 0.08), "PIN", a)
        _empty("Joint", (0.075, 0.0, 0.0), kind, a, b)
        _bake(a, b)
        for obj in (a, b):  # each on its own: linked bodies may overlap
            art._assert_baked_frames_clean([obj])
        scene = bpy.context.scene
        scene.frame_set(1)
        start = _edge_angle(a), _edge_angle(b)
        relative = []
        for frame in range(1, 14):
            scene.frame_set(frame)
            relative.append((_edge_angle(b) - start[1]) - (_edge_angle(a) - start[0]))
        assert abs(_edge_angle(a) - start[0]) > 0.1, "A did not swing"
        turned[kind] = np.abs(relative).max()
    assert turned["WELD"] < 0.01, turned
    assert turned["PIN"] > 0.05, turned


def test_add_ipc_link_is_in_the_object_menu_with_its_types():
    link_ui = harness.sub("link_ui")
    assert link_ui.draw_menu in bpy.types.VIEW3D_MT_object._dyn_ui_initialize()
    calls = []
    layout = type("Layout", (), {})()
    layout.separator = lambda: None
    layout.operator_menu_enum = lambda op, prop, text="": calls.append((op, prop, text))
    link_ui.draw_menu(type("Menu", (), {"layout": layout})(), bpy.context)
    assert calls == [("ipc.add_link", "kind", "Add IPC Link")]


def test_add_link_operator_makes_an_empty_between_two_selected_bodies():
    a = _square("A", (0.0, 0.0))
    b = _square("B", (0.5, 0.0))
    for o in (a, b):
        o.select_set(True)
    bpy.context.view_layer.objects.active = a
    assert "FINISHED" in bpy.ops.ipc.add_link(kind="SPRING")
    empty = bpy.context.scene.objects["IPC_Link_A"]
    s = empty.ipc_link
    assert (s.kind, s.object1, s.object2) == ("SPRING", a, b)
    assert tuple(empty.location) == (0.25, 0.0, 0.0)


def test_spring_between_two_bodies_pulls_them_together_without_crossing():
    _scene(n_frames=25)
    bpy.context.scene.ipc.use_scene_gravity = False
    bpy.context.scene.ipc.gravity = (0.0, 0.0)
    a = _square("A", (-0.3, 0.0))
    b = _square("B", (0.3, 0.0))
    empty = _empty("Spring", (0.0, 0.0, 0.0), "SPRING", a, b)
    s = empty.ipc_link
    s.stiffness, s.use_length, s.length, s.collide = 20.0, True, 0.1, True
    _bake(a, b)
    art._assert_baked_frames_clean([a, b])
    scene = bpy.context.scene
    scene.frame_set(25)
    gap = art._world_xz(b)[:, 0].min() - art._world_xz(a)[:, 0].max()
    assert gap < 0.35  # pulled closer than the 0.4 m at the start


def _pinned_plate(name="Plate", n=2):
    """A square whose top row of vertices is its Pinned Group."""
    body = _square(name, (0.0, 0.0), n=n)
    group = body.vertex_groups.new(name="Top")
    top = [v.index for v in body.data.vertices if v.co.z > SIDE / 2 - 1e-6]
    group.add(top, 1.0, "REPLACE")
    body.ipc.pin_group = "Top"
    return body


def _centre_z(obj):
    return float(art._world_xz(obj)[:, 1].mean())


def assert_held_then_falling(body, release, g, substeps=4):
    """body held (its centre within 1 % of the plate's side of z = 0) until the release frame,
    then falling g t^2 / 2 to the scene's end (to implicit Euler's lag of g h t / 2)."""
    scene = bpy.context.scene
    scene.frame_set(release)
    released = _centre_z(body)
    assert abs(released) < 0.01 * SIDE, f"not held until frame {release}: {released}"
    h = 1.0 / (scene.render.fps * substeps)
    for frame in range(release + 1, scene.frame_end + 1):
        scene.frame_set(frame)
        t = (frame - release) / scene.render.fps
        fall = released - _centre_z(body)
        assert abs(fall - 0.5 * g * t * t) <= 0.5 * g * h * t + 0.002, f"frame {frame}: fell {fall}"


def test_a_released_pin_lets_the_body_fall_g_t2_over_2():
    """Engaged keyed on at frame 1 and off at frame 7: from frame 7 the body falls freely,
    g t^2 / 2 (to implicit Euler's lag of g h t / 2 and its own wobble)."""
    _scene(n_frames=19)
    scene = bpy.context.scene
    scene.ipc.substeps = 4
    body = _pinned_plate()
    body.ipc.youngs_modulus = 1e7
    for frame, on in ((1, True), (7, False)):
        body.ipc.pin_engaged = on
        body.keyframe_insert("ipc.pin_engaged", frame=frame)
    _bake(body)
    art._assert_baked_frames_clean([body])
    assert_held_then_falling(body, 7, 9.81)


def test_a_pulling_pin_holds_softly_and_a_bad_stiffness_is_refused():
    _scene()
    body = _pinned_plate()
    body.ipc.pin_strength = "PULL"
    body.ipc.pin_stiffness = 0.0
    before = harness.snapshot()
    body.select_set(True)
    err = harness.bake_error()
    assert "'Plate': Pull Stiffness must be above 0 N/m" in err
    assert harness.snapshot() == before
    body.ipc.pin_stiffness = 2000.0
    _bake(body)
    art._assert_baked_frames_clean([body])
    bpy.context.scene.frame_set(13)
    sag = -_centre_z(body)
    # the plate's weight m g hangs on the three pinned vertices' springs: about m g / (3 k)
    mass = SIDE * SIDE * body.ipc.density
    assert 0.2 * mass * 9.81 / (3 * 2000.0) < sag < 3.0 * mass * 9.81 / (3 * 2000.0)


def _thrown_pair(groups_a, groups_b):
    """Two squares thrown at each other (no gravity), in the given Collision Groups."""
    _scene(n_frames=13)
    scene = bpy.context.scene
    scene.ipc.use_scene_gravity, scene.ipc.gravity = False, (0.0, 0.0)
    a = _square("A", (-0.2, 0.0))
    b = _square("B", (0.2, 0.0))
    for obj, groups, v in ((a, groups_a, 2.0), (b, groups_b, -2.0)):
        obj.ipc.initial_velocity = (v, 0.0)
        obj.ipc.collision_groups = [i in groups for i in range(20)]
    _bake(a, b)
    scene.frame_set(13)
    return a, b


def test_bodies_in_different_collision_groups_pass_through_each_other():
    a, b = _thrown_pair({1}, {2})
    scene = bpy.context.scene
    for frame in range(1, 14):  # each body on its own: no inverted face
        scene.frame_set(frame)
        for obj in (a, b):
            x, tris = art._world_xz(obj), art._face_triangles(obj)
            assert (checks.signed_areas(x, tris) > 0).all(), f"frame {frame}: '{obj.name}' inverted"
    assert art._world_xz(a)[:, 0].mean() > art._world_xz(b)[:, 0].mean() + 0.2  # swapped places


def test_bodies_sharing_a_collision_group_collide():
    a, b = _thrown_pair({0, 3}, {3, 7})
    art._assert_baked_frames_clean([a, b])
    assert art._world_xz(a)[:, 0].mean() < art._world_xz(b)[:, 0].mean()


def _onto_a_shelf(shelf_groups):
    """A plate dropped onto a shelf (a collider, its top 0.1 m below the plate); the plate in
    group 1."""
    _scene(n_frames=13)
    plate = _square("Plate", (0.0, 0.0))
    plate.ipc.collision_groups = [i == 1 for i in range(20)]
    shelf = _square("Shelf", (0.0, -0.5), side=0.6)
    shelf.ipc.role = "COLLIDER"
    shelf.ipc.collision_groups = [i in shelf_groups for i in range(20)]
    _bake(plate)
    bpy.context.scene.frame_set(13)
    return plate


def test_a_body_passes_through_a_collider_of_another_group_and_rests_on_one_of_its_own():
    """Groups filter body-collider pairs too (as Rigid Body's Collision Collections): the
    plate falls through a shelf in group 0 only, every frame clean against one in 0 and 1."""
    fell = -_centre_z(_onto_a_shelf({0}))
    t = 12 / bpy.context.scene.render.fps
    assert abs(fell - 0.5 * 9.81 * t * t) < 0.1 * 0.5 * 9.81 * t * t, fell
    harness.teardown()
    harness.setup()
    plate = _onto_a_shelf({0, 1})
    assert _centre_z(plate) > -0.2 + SIDE / 2 - 0.01  # on the shelf's top (z = -0.2)
    art._assert_baked_frames_clean([plate])


def test_a_body_in_no_collision_group_is_refused_naming_it():
    _scene()
    a = _square("A", (0.0, 0.0))
    a.ipc.collision_groups = [False] * 20
    before = harness.snapshot()
    a.select_set(True)
    assert "'A': no Collision Group is on" in harness.bake_error()
    assert harness.snapshot() == before


def _refused(*objs):
    """Bake objs expecting a refusal; the scene must be as it was. Returns the message."""
    bpy.context.view_layer.update()
    for o in bpy.context.view_layer.objects:
        o.select_set(o in objs)
    before = harness.snapshot()
    err = harness.bake_error()
    assert harness.snapshot() == before
    return err


def test_bad_links_are_refused_naming_the_empty_and_the_object():
    _scene()
    a = _square("A", (0.0, 0.0))
    b = _square("B", (0.5, 0.0))
    empty = _empty("Hinge", (0.3, 0.0, 0.0), "PIN", a)  # between the two: outside A
    assert "IPC link 'Hinge': its location (the pivot) is outside 'A'" in _refused(a)
    empty.location.x = 0.0
    empty.ipc_link.object2 = b  # the pivot is not on B
    assert "IPC link 'Hinge': its location (the pivot) is outside 'B'" in _refused(a, b)
    b.ipc.role = "COLLIDER"
    assert "IPC link 'Hinge': Object 2 'B' is not a deformable body" in _refused(a)
    b.ipc.role = "BODY"
    assert "IPC link 'Hinge': Object 2 'B' is not baked with the other bodies" in _refused(a)


def test_a_link_whose_object_1_was_deleted_is_skipped_with_a_note():
    """As Blender's Rigid Body skips a constraint whose object is gone: the bake goes on
    without the link (B falls freely, as without it), its note names the Empty; the link is
    no input of the bake either (its signature is the one without the link)."""
    _scene()
    a = _square("A", (0.0, 0.0))
    b = _square("B", (0.5, 0.0))
    _empty("Hinge", (0.5, 0.0, 0.0), "PIN", a, b)
    bpy.data.objects.remove(a)
    bpy.context.view_layer.update()
    _bake(b)
    scene = bpy.context.scene
    assert (
        "IPC link 'Hinge' has no Object 1 (deleted, or never picked) and is ignored" in scene.ipc.stat_notes
    )
    scene.frame_set(13)
    fell = -_centre_z(b)
    t = 12 / scene.render.fps
    assert abs(fell - 0.5 * 9.81 * t * t) < 0.1 * 0.5 * 9.81 * t * t, fell
    signature = harness.sub("signature")
    parts = signature.signature_parts(scene, [b], [])
    assert not any(label.startswith("link ") for label in parts), parts
    assert not signature.is_outdated(bpy.context, b)


def test_a_changed_link_marks_the_bake_outdated_and_continue_names_it():
    _scene(n_frames=7)
    a = _square("A", (0.0, 0.0))
    empty = _empty("Rope", (0.0, 0.0, 0.3), "ROPE", a)
    _bake(a)
    signature = harness.sub("signature")
    assert not signature.is_outdated(bpy.context, a)
    empty.ipc_link.use_length, empty.ipc_link.length = True, 0.5
    assert signature.is_outdated(bpy.context, a)
    bpy.context.scene.frame_end = 9
    a.select_set(True)
    err = harness.bake_error("continue_bake")
    assert "inputs changed since it was baked: link 'Rope'" in err, err
    empty.ipc_link.use_length = False
    a.ipc.collision_groups[4] = True
    assert "inputs changed since it was baked: body 'A'" in harness.bake_error("continue_bake")


def test_continuing_a_bake_with_links_gives_the_bits_of_one_bake():
    """A breakable rope and a released pin: bake to frame 7 and continue to 13, against one
    bake to 13."""

    def build():
        _scene(n_frames=7)
        body = _pinned_plate()
        for frame, on in ((1, True), (4, False)):
            body.ipc.pin_engaged = on
            body.keyframe_insert("ipc.pin_engaged", frame=frame)
        rope = _empty("Rope", (0.0, 0.0, 0.1), "ROPE", body)
        rope.ipc_link.use_length, rope.ipc_link.length = True, 0.15
        rope.ipc_link.breakable, rope.ipc_link.break_threshold = True, 50.0
        return body

    body = build()
    _bake(body)
    bpy.context.scene.frame_end = 13
    assert "FINISHED" in bpy.ops.ipc.continue_bake()
    continued = [kb.data[0].co.copy() for kb in body.data.shape_keys.key_blocks]
    harness.teardown()
    harness.setup()
    body = build()
    bpy.context.scene.frame_end = 13
    _bake(body)
    once = [kb.data[0].co.copy() for kb in body.data.shape_keys.key_blocks]
    assert len(once) == len(continued) == 13
    assert all(tuple(p) == tuple(q) for p, q in zip(once, continued, strict=True))


def test_panels_draw_links_pins_groups_and_the_advanced_settings():
    import test_ui

    a = _square("A", (0.0, 0.0))
    a.vertex_groups.new(name="Top")
    a.ipc.pin_group, a.ipc.pin_strength = "Top", "PULL"
    empty = _empty("Spring", (0.0, 0.0, 0.0), "SPRING", a)
    log = []
    layout = test_ui._Layout(log)
    harness.sub("panels").draw_object(layout, bpy.context, a)
    harness.sub("link_ui").draw_link(layout, empty)
    for name in ("collision_groups", "pin_strength", "pin_stiffness", "pin_engaged", "static_friction"):
        assert ("prop", name) in log, name
    for name in ("object1", "object2", "anchor1", "stiffness", "damping", "length", "breakable", "collide"):
        assert ("prop", name) in log, name
    assert ("op", "ipc.add_link_anchors") in log  # Anchor 1 is empty: offered
    log.clear()
    panels = harness.sub("panels")
    panels.draw_scene(layout, bpy.context)
    everyday = {name for kind, name in log if kind == "prop"}
    log.clear()
    panels.draw_advanced(layout, bpy.context)
    advanced = {name for kind, name in log if kind == "prop"}
    assert {"formulation", "eps_v", "newton_tol", "force_tol", "max_newton_iters", "kappa_auto"} <= advanced
    assert not advanced & everyday and {"substeps", "plane"} <= everyday
    assert panels.IPC_PT_physics_advanced.bl_options == {"DEFAULT_CLOSED"}


def test_static_and_kinetic_friction_reach_the_solver():
    _scene()
    a = _square("A", (0.0, 0.3))
    a.ipc.friction, a.ipc.use_static_friction, a.ipc.static_friction = 0.3, True, 0.5
    a.select_set(True)
    job = harness.sub("adapter").BakeJob(bpy.context, "SELECTED")
    material = job.solver_scene.bodies[0].material
    assert abs(material.mu - 0.3) < 1e-6 and abs(material.mu_static - 0.5) < 1e-6
    a.ipc.static_friction = 0.1  # below the kinetic: refused in the panel's words
    assert "'A': Static Friction" in _refused(a)


def test_a_breakable_link_lets_go_above_its_threshold_only():
    """A plate (20 kg: 196 N) hung from a Pin at its top: a 50 N threshold breaks at once and
    the plate falls freely; a 1000 N one holds."""
    falls = {}
    for threshold in (50.0, 1000.0):
        harness.teardown()
        harness.setup()
        _scene()
        body = _square("Plate", (0.0, 0.0))
        hinge = _empty("Hinge", (0.0, 0.0, 0.09), "PIN", body)
        hinge.ipc_link.breakable, hinge.ipc_link.break_threshold = True, threshold
        _bake(body)
        art._assert_baked_frames_clean([body])
        scene = bpy.context.scene
        scene.frame_set(1)
        start = _centre_z(body)
        scene.frame_set(13)
        falls[threshold] = start - _centre_z(body)
    t = 12 / bpy.context.scene.render.fps
    assert abs(falls[50.0] - 0.5 * 9.81 * t * t) < 0.05 * 0.5 * 9.81 * t * t
    assert falls[1000.0] < 0.01 * SIDE
