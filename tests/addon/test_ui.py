"""Panels and registration. Panels cannot be drawn in background mode, so the draw functions
run against a layout stand-in that checks every property and operator they reference exists."""

import bpy
import harness


def setup_function():
    harness.setup()


def teardown_function():
    harness.teardown()


class _Layout:
    """Records what a panel draws; fails on unknown properties or operators."""

    def __init__(self, log):
        self.log = log

    def _sub(self, *args, **kwargs):
        return _Layout(self.log)

    column = row = box = _sub

    def prop(self, data, name, **kwargs):
        assert name in data.bl_rna.properties, f"no property {name!r} on {data}"
        self.log.append(("prop", name))

    def prop_search(self, data, name, search_data, search_name, **kwargs):
        assert name in data.bl_rna.properties, name
        assert hasattr(search_data, search_name), search_name
        self.log.append(("prop", name))

    def operator(self, idname, **kwargs):
        module, name = idname.split(".")
        assert hasattr(getattr(bpy.ops, module), name), idname
        getattr(getattr(bpy.ops, module), name).get_rna_type()  # raises if not registered
        self.log.append(("op", idname))

    def label(self, text="", **kwargs):
        self.log.append(("label", text))

    def popover(self, panel, **kwargs):
        assert hasattr(bpy.types, panel), f"no panel {panel!r}"
        self.log.append(("popover", panel))


def _draw_all(context):
    panels = harness.sub("panels")
    log = []
    layout = _Layout(log)
    panels.draw_object(layout, context, context.object)
    panels.draw_scene(layout, context)
    panels.draw_advanced(layout, context)
    panels.draw_bake(layout, context)
    return log


def test_registered_under_namespaced_pointers():
    assert isinstance(bpy.context.scene.ipc, bpy.types.PropertyGroup)
    assert hasattr(bpy.types.Object, "ipc") and hasattr(bpy.types.Scene, "ipc")
    for cls in harness.addon().CLASSES:
        assert getattr(cls, "is_registered", True), cls


def test_panels_draw_before_and_after_a_bake():
    ctx = bpy.context
    top, _, _ = harness.sub("examples").build_compressing_squares(
        ctx, n_seg=2, fps=50, substeps=2, n_frames=4
    )
    log = _draw_all(ctx)
    assert ("prop", "role") in log and ("prop", "youngs_modulus") in log
    assert ("op", "ipc.bake") in log and ("op", "ipc.delete_bake") in log
    assert bpy.ops.ipc.bake() == {"FINISHED"}
    labels = [text for kind, text in _draw_all(ctx) if kind == "label"]
    assert any(t.startswith("baked: frames 1-4") for t in labels), labels
    assert any(t.startswith("Last bake: 4 frames") for t in labels), labels
    assert not any(t.startswith("Outdated") for t in labels)
    top.ipc.poisson_ratio = 0.3
    labels = [text for kind, text in _draw_all(ctx) if kind == "label"]
    assert any(t.startswith("Outdated") for t in labels), labels


def test_unregister_removes_everything():
    mod = harness.addon()
    harness.teardown()
    try:
        assert not hasattr(bpy.types.Scene, "ipc") and not hasattr(bpy.types.Object, "ipc")
        assert not hasattr(bpy.ops.ipc, "bake") or not _op_registered("ipc.bake")
    finally:
        harness.setup()
    assert mod is harness.addon()


def _op_registered(idname):
    module, name = idname.split(".")
    try:
        getattr(getattr(bpy.ops, module), name).get_rna_type()
    except (KeyError, AttributeError):
        return False
    return True


def test_panel_points_to_make_simulation_mesh_for_slivers_and_text_bodies():
    """A body mesh with a sliver triangle gets the hint row with the operator; a Text object
    given the body role gets the error box with the operator; a good mesh gets neither."""
    ctx = bpy.context
    good = harness.make_mesh_object(
        "Good", [(0, 0, 0), (1, 0, 0), (1, 0, 1), (0, 0, 1)], faces=[(0, 1, 2, 3)]
    )
    sliver = harness.make_mesh_object(
        "Sliver", [(2, 0, 0), (3, 0, 0), (3, 0, 1), (2.5, 0, 0.01)], faces=[(0, 1, 3), (1, 2, 3)]
    )
    bpy.ops.object.text_add(location=(5, 0, 0), rotation=(1.5707963, 0, 0))
    text = ctx.active_object
    text.ipc.role = "BODY"
    panels = harness.sub("panels")

    def drawn(obj):
        log = []
        ctx.view_layer.objects.active = obj
        panels.draw_object(_Layout(log), ctx, obj)
        return log

    good_log = drawn(good)
    assert ("op", "ipc.make_sim_mesh") not in good_log
    assert not any(kind == "label" and text.startswith("Mesh has slivers") for kind, text in good_log)
    sliver_log = drawn(sliver)
    assert any(kind == "label" and text.startswith("Mesh has slivers") for kind, text in sliver_log), (
        sliver_log
    )
    assert ("op", "ipc.make_sim_mesh") in sliver_log
    text_log = drawn(text)
    assert any(kind == "label" and "Text object" in text for kind, text in text_log), text_log
    assert ("op", "ipc.make_sim_mesh") in text_log


def test_everyday_settings_first_and_solver_internals_in_a_closed_advanced_panel():
    harness.sub("examples").build_compressing_squares(bpy.context, n_seg=2, fps=50, substeps=2, n_frames=4)
    panels = harness.sub("panels")
    scene_log, advanced_log, object_log = [], [], []
    panels.draw_scene(_Layout(scene_log), bpy.context)
    panels.draw_advanced(_Layout(advanced_log), bpy.context)
    panels.draw_object(_Layout(object_log), bpy.context, bpy.context.object)
    internals = {
        "dhat_mode",
        "kappa_auto",
        "formulation",
        "eps_v",
        "newton_tol",
        "force_tol",
        "max_newton_iters",
    }
    assert internals <= {name for kind, name in advanced_log if kind == "prop"}
    assert not internals & {name for kind, name in scene_log if kind == "prop"}
    assert {"plane", "substeps", "use_ground"} <= {name for kind, name in scene_log if kind == "prop"}
    for advanced in (panels.IPC_PT_physics_advanced, panels.IPC_PT_sidebar_advanced):
        assert advanced.bl_options == {"DEFAULT_CLOSED"} and advanced.bl_parent_id.startswith("IPC_PT_")
    # a body shows both friction coefficients: sliding and sticking
    assert {("prop", "friction"), ("prop", "static_friction"), ("prop", "use_static_friction")} <= set(
        object_log
    )


def test_a_stiff_body_shows_its_modes_and_bakes():
    ctx = bpy.context
    top, _, _ = harness.sub("examples").build_compressing_squares(
        ctx, n_seg=2, fps=50, substeps=2, n_frames=4
    )
    ctx.view_layer.objects.active = top
    assert ("prop", "modes") not in _draw_all(ctx)
    top.ipc.body_type = "STIFF"
    top.ipc.modes = 3
    assert ("prop", "modes") in _draw_all(ctx)
    assert bpy.ops.ipc.bake() == {"FINISHED"}
    keys = top.data.shape_keys.key_blocks
    assert len(keys) > 2  # Basis and one per baked frame
    moved = max(abs(a.co.z - b.co.z) for a, b in zip(keys[-1].data, keys[0].data, strict=True))
    assert moved > 1e-3  # it fell
