"""The Friction Mollifier setting (issue 30, point 7): the scene setting reaches the solver's
parameters in a bake, the panel shows it, and the bake signature leaves it out at its default
(bakes made before the setting existed stay current) but marks a bake outdated, and refuses to
continue it, when it changes."""

import bpy
import harness


def setup_function():
    harness.setup()


def teardown_function():
    harness.teardown()


def _squares(end=4):
    return harness.sub("examples").build_compressing_squares(
        bpy.context, n_seg=2, fps=25, substeps=2, n_frames=end
    )


def _baked_params(bake_job):
    """Bake, recording the SimParams of every Simulation the bake creates."""
    seen = []
    original = bake_job.Simulation

    class Spy(original):
        def __init__(self, scene, *args, **kwargs):
            seen.append(scene.params)
            super().__init__(scene, *args, **kwargs)

    bake_job.Simulation = Spy
    try:
        assert bpy.ops.ipc.bake() == {"FINISHED"}
    finally:
        bake_job.Simulation = original
    return seen


def test_the_setting_defaults_to_linear_and_reaches_the_solver():
    _squares()
    s = bpy.context.scene.ipc
    assert s.friction_mollifier == "linear"
    assert {item.identifier for item in s.bl_rna.properties["friction_mollifier"].enum_items} == {
        "linear",
        "ipc",
    }
    bake_job = harness.sub("bake_job")
    assert [p.friction_mollifier for p in _baked_params(bake_job)] == ["linear"]
    s.friction_mollifier = "ipc"
    assert [p.friction_mollifier for p in _baked_params(bake_job)] == ["ipc"]


def test_the_scene_panel_shows_it_next_to_the_friction_speed():
    drawn = []

    class Layout:
        def column(self, *args, **kwargs):
            return self

        row = column

        def prop(self, data, name, **kwargs):
            assert name in data.bl_rna.properties, name
            drawn.append(name)

        def label(self, *args, **kwargs):
            pass

    harness.sub("panels").draw_advanced(Layout(), bpy.context)
    i = drawn.index("eps_v")
    assert drawn[i + 1] == "friction_mollifier", drawn


def test_signature_leaves_the_default_out_and_names_a_change():
    top, bottom, ceiling = _squares()
    signature = harness.sub("signature")
    scene = bpy.context.scene
    bodies, colliders = [top, bottom], [ceiling]
    at_default = signature.signature_parts(scene, bodies, colliders)
    hash_at_default = signature.input_signature(scene, bodies, colliders)
    # at its default the setting is not in the hash: a bake made before it existed stays current
    assert not any("Mollifier" in label for label in at_default), list(at_default)
    scene.ipc.friction_mollifier = "ipc"
    changed = signature.signature_parts(scene, bodies, colliders)
    assert changed["setting 'Friction Mollifier'"] == "ipc"
    assert signature.input_signature(scene, bodies, colliders) != hash_at_default
    assert signature.changed_inputs(at_default, changed) == ["setting 'Friction Mollifier' (linear -> ipc)"]
    assert signature.changed_inputs(changed, at_default) == ["setting 'Friction Mollifier' (ipc -> linear)"]
    assert signature.changed_inputs(at_default, at_default) == []


def test_a_changed_mollifier_outdates_the_bake_and_refuses_continue():
    top, _, _ = _squares(end=4)
    scene = bpy.context.scene
    assert bpy.ops.ipc.bake() == {"FINISHED"}
    adapter = harness.sub("adapter")
    assert not adapter.is_outdated(bpy.context, top)
    scene.ipc.friction_mollifier = "ipc"
    assert adapter.is_outdated(bpy.context, top)
    text = harness.bake_error("continue_bake", frame_end=6)
    assert "setting 'Friction Mollifier' (linear -> ipc)" in text, text
    scene.ipc.friction_mollifier = "linear"  # back as it was: current, and continuing works
    assert not adapter.is_outdated(bpy.context, top)
    assert bpy.ops.ipc.continue_bake(frame_end=6) == {"FINISHED"}
