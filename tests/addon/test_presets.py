"""Body presets (issue 34): the built-in ones set Type, elasticity, density and both frictions and
reach the solver; the artist's own are added, applied and removed with Blender's preset
mechanism (in a scratch folder, never the user's); the preset list draws."""

import os
import shutil
import tempfile

import bpy
import harness
import numpy as np
import test_reading as rd
import test_ui


def setup_function():
    harness.setup()


def teardown_function():
    harness.teardown()


def _body():
    obj = rd._square("Body", 0.0, 0.0)
    for o in bpy.context.view_layer.objects:
        o.select_set(o is obj)
    bpy.context.view_layer.objects.active = obj
    return obj


def _material():
    body = rd._job().solver_scene.bodies[0]
    m = body.material
    return body.kind, m.E, m.nu, m.density, m.mu, m.mu_static


def _static(mu, mu_static):
    return mu if mu_static is None else mu_static


def test_a_built_in_preset_reaches_the_solver_and_replaces_every_value():
    obj = _body()
    assert "FINISHED" in bpy.ops.ipc.body_preset_apply(preset="METAL_PROP")
    kind, E, nu, density, mu, mu_static = _material()
    assert kind == "rigid"
    np.testing.assert_allclose((density, mu, mu_static), (7800.0, 0.4, 0.6), rtol=1e-6)
    assert "FINISHED" in bpy.ops.ipc.body_preset_apply(preset="JELLY")
    kind, E, nu, density, mu, mu_static = _material()
    assert kind == "deformable"
    np.testing.assert_allclose((E, nu, density, mu), (1e4, 0.45, 1000.0, 0.3), rtol=1e-6)
    assert mu_static is None  # Jelly has no static friction of its own: the kinetic one
    assert not obj.ipc.use_static_friction


def test_every_built_in_preset_is_physically_sensible():
    presets = harness.sub("presets")
    _body()
    types = bpy.types.Object.bl_rna.properties["ipc"].fixed_type.properties["body_type"].enum_items.keys()
    for key, p in presets.BODY_PRESETS.items():
        assert "FINISHED" in bpy.ops.ipc.body_preset_apply(preset=key)
        kind, E, nu, density, mu, mu_static = _material()
        assert p.body_type in types, key
        assert kind == p.body_type.lower(), key
        assert 1e3 <= E <= 1e9 and 0.0 <= nu < 0.5, key  # what a 2D Newton solve handles well
        assert 50.0 <= density <= 2e4, key  # foam to lead, kg/m^2 of a 1 m slab
        assert 0.0 < mu <= _static(mu, mu_static) + 1e-7 and _static(mu, mu_static) <= 1.5, key
    rigid = {p.label for p in presets.BODY_PRESETS.values() if p.body_type == "RIGID"}
    assert {"Metal Prop", "Wooden Prop"} <= rigid
    b = presets.BODY_PRESETS
    assert b["METAL_PROP"].density > b["STONE"].density > b["WOOD_PROP"].density > b["FOAM"].density
    assert b["ICE"].friction == min(p.friction for p in b.values())


class _Scratch:
    """Blender's user-script and preset folders redirected to a scratch folder (restored after)."""

    def __enter__(self):
        self.root = tempfile.mkdtemp(prefix="ipc_presets_")
        self.saved = bpy.utils.user_resource, bpy.utils.preset_paths

        def user_resource(kind, path="", create=False):
            target = os.path.join(self.root, path)
            if create:
                os.makedirs(target, exist_ok=True)
            return target

        def preset_paths(subdir):
            d = os.path.join(self.root, "presets", subdir)
            return [d] if os.path.isdir(d) else []

        bpy.utils.user_resource, bpy.utils.preset_paths = user_resource, preset_paths
        return self.root

    def __exit__(self, *_exc):
        bpy.utils.user_resource, bpy.utils.preset_paths = self.saved
        shutil.rmtree(self.root, ignore_errors=True)


def test_an_artists_preset_is_added_applied_and_removed():
    obj = _body()
    with _Scratch() as root:
        bpy.ops.ipc.body_preset_apply(preset="STONE")
        obj.ipc.density = 1234.0
        assert "FINISHED" in bpy.ops.ipc.body_preset_add(name="My Stone")
        path = os.path.join(root, "presets", "ipc_body", "My_Stone.py")
        with open(path) as f:
            text = f.read()
        assert "s.density = 1234.0" in text and "s.body_type = 'RIGID'" in text
        bpy.ops.ipc.body_preset_apply(preset="RUBBER")
        assert obj.ipc.body_type == "DEFORMABLE"
        menu = "IPC_PT_body_presets"
        assert "FINISHED" in bpy.ops.script.execute_preset(filepath=path, menu_idname=menu)
        kind, _, _, density, mu, mu_static = _material()
        assert kind == "rigid"
        np.testing.assert_allclose((density, mu, mu_static), (1234.0, 0.6, 0.7), rtol=1e-6)
        _draws_the_list(["My Stone"])
        assert "FINISHED" in bpy.ops.ipc.body_preset_add(name="My Stone", remove_name=True)
        assert not os.path.exists(path)
        assert bpy.utils.preset_paths("ipc_body") == [os.path.dirname(path)]  # the empty folder
        _draws_the_list([])


class _Props:
    """What layout.operator returns: takes any property."""


class _PresetLayout(test_ui._Layout):
    emboss, operator_context = "NORMAL", "INVOKE_DEFAULT"

    def _sub(self, *args, **kwargs):
        return _PresetLayout(self.log)

    column = row = box = _sub

    def operator(self, idname, text="", **kwargs):
        super().operator(idname, **kwargs)
        self.log.append(("text", text))
        return _Props()

    def separator(self, **kwargs):
        pass


def _draws_the_list(own):
    """The preset list draws every built-in preset, the artist's own and the add button."""
    presets = harness.sub("presets")
    log = []
    panel = presets.IPC_PT_body_presets
    stand_in = type("Drawn", (), {"layout": _PresetLayout(log), "bl_idname": panel.__name__})()
    for name in ("preset_subdir", "preset_operator", "preset_add_operator", "preset_extensions"):
        setattr(stand_in, name, getattr(panel, name))
    stand_in.path_menu = bpy.types.Menu.path_menu.__get__(stand_in)
    panel.draw(stand_in, bpy.context)
    texts = [v for k, v in log if k == "text"]
    assert texts[: len(presets.BODY_PRESETS)] == [p.label for p in presets.BODY_PRESETS.values()]
    for name in own:
        assert name in texts
    assert ("op", "ipc.body_preset_add") in log
