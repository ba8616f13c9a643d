"""The modifier stack (issue 32, point 9): detail modifiers (Subdivision Surface, Solidify,
Bevel) stay on a body through a bake and apply on top of its baked shape keys; a modifier that
changes the shape in the plane is refused by name; an obstacle body's detail modifiers do not
change what the bake collides with and are shown again afterwards."""

import bpy
import harness
import numpy as np
import test_artist_input as artist


def setup_function():
    harness.setup()


def teardown_function():
    harness.teardown()


def _detail_stack(obj):
    obj.modifiers.new("Subdiv", "SUBSURF")
    obj.modifiers.new("Thick", "SOLIDIFY").thickness = 0.02
    obj.modifiers.new("Round", "BEVEL").width = 0.005


def _stack(obj):
    return [(m.name, m.type, m.show_viewport, m.show_render) for m in obj.modifiers]


def _show_modifiers(obj, on):
    for m in obj.modifiers:
        m.show_viewport = on


def test_detail_modifiers_stay_and_apply_on_top_of_the_bake():
    artist._frames(n_frames=13)
    box = artist._quad("Box", -0.1, 0.2, 0.2, 0.2)
    _detail_stack(box)
    stack = _stack(box)
    artist._select_only(box)
    assert bpy.ops.ipc.bake(target="SELECTED") == {"FINISHED"}
    assert box.ipc.is_baked and _stack(box) == stack, "the bake changed the modifier stack"
    scene = bpy.context.scene
    scene.frame_set(scene.frame_end)
    with_detail = harness.evaluated_local(box)
    assert len(with_detail) > 4, "the detail modifiers are not evaluated on top of the bake"
    _show_modifiers(box, False)
    baked = harness.evaluated_local(box)
    # The box fell onto the ground: its baked shape and its detailed shape moved together.
    assert baked[:, 2].min() < 0.01
    np.testing.assert_allclose(with_detail.mean(0)[[0, 2]], baked.mean(0)[[0, 2]], atol=0.01)
    artist._assert_baked_frames_clean([box])


def test_shape_changing_modifier_is_refused_by_name():
    artist._frames()
    box = artist._quad("Box", -0.1, 0.2, 0.2, 0.2)
    box.modifiers.new("Subdiv", "SUBSURF")
    box.modifiers.new("Copy", "MIRROR")
    artist._select_only(box)
    before = harness.snapshot()
    message = harness.bake_error(target="SELECTED")
    for word in ("Box", "'Copy'", "(Mirror)", "changes the shape"):
        assert word in message, f"{word!r} not in {message!r}"
    assert "'Subdiv'" not in message
    assert harness.snapshot() == before, "the failed bake changed the scene"


def test_obstacle_body_collides_as_simulated_and_keeps_its_modifiers():
    artist._frames(n_frames=19)
    shelf = artist._quad("Shelf", -0.5, 0.1, 1.0, 0.05)
    box = artist._quad("Box", -0.1, 0.35, 0.2, 0.2)
    _detail_stack(shelf)
    stack = _stack(shelf)
    artist._select_only(box)
    assert bpy.ops.ipc.bake(target="SELECTED") == {"FINISHED"}
    assert _stack(shelf) == stack, "the shelf's modifiers were not shown again"
    scene = bpy.context.scene
    scene.frame_set(scene.frame_end)
    bottom = artist._world_xz(box)[:, 1].min()
    assert 0.15 < bottom < 0.16, f"the box did not land on the simulated shelf (bottom {bottom:.4f} m)"
    _show_modifiers(shelf, False)
    artist._assert_baked_frames_clean([box, shelf])
