"""Animated settings (issue 32, point 5) as the add-on reads them: keyed
gravity, ground friction and a body's Young's modulus, density and friction
sampled at every substep (checked against Blender's own F-curve evaluation),
the painted stiffness group's weights, and the bake signature: the keys are an
input, the keyed values' current value is not."""

import bpy
import harness
import numpy as np

FPS, SUBSTEPS = 25, 4


def setup_function():
    harness.setup()


def teardown_function():
    harness.teardown()


def _body():
    verts = [(0, 0, 0), (0.2, 0, 0), (0.2, 0, 0.2), (0, 0, 0.2)]
    obj = harness.make_mesh_object("Slab", verts, faces=[(0, 1, 2, 3)])
    bpy.context.view_layer.update()
    return obj


def _key(id_data, path, values, index=-1):
    for frame, value in values:
        target, attr = (id_data.ipc, path[4:]) if path.startswith("ipc.") else (id_data, path)
        if index >= 0:
            getattr(target, attr)[index] = value
        else:
            setattr(target, attr, value)
        id_data.keyframe_insert(path, frame=frame, index=index)


def _read(objs):
    bodies = [harness.sub("reading").read_body(o, "XZ") for o in objs]
    n = 3 * SUBSTEPS
    times = np.arange(n + 1) / (FPS * SUBSTEPS)
    read = harness.sub("animated").read_animation
    return read(bpy.context, objs, bodies, 1, n, SUBSTEPS, times), times


def _evaluated(id_data, path, index=0):
    """Blender's own value of an F-curve at every substep from frame 1."""
    fc = next(
        c
        for c in harness.sub("adapter").fcurves_of(id_data)
        if c.data_path == path and c.array_index == index
    )
    return np.array([fc.evaluate(1 + i / SUBSTEPS) for i in range(3 * SUBSTEPS + 1)])


def test_a_scene_without_keys_has_no_animation():
    scene = bpy.context.scene
    scene.ipc.plane = "XZ"
    animation, _ = _read([_body()])
    assert animation is None


def test_keyed_settings_are_sampled_per_substep():
    scene = bpy.context.scene
    scene.render.fps, scene.render.fps_base = FPS, 1.0
    s = scene.ipc
    s.plane, s.substeps, s.use_ground = "XZ", SUBSTEPS, True
    slab = _body()
    _key(slab, "ipc.youngs_modulus", [(1, 1e5), (3, 2e5)])
    _key(slab, "ipc.friction", [(1, 0.2), (4, 0.8)])
    _key(scene, "ipc.ground_friction", [(1, 0.1), (4, 0.5)])
    scene.ipc.use_scene_gravity = True
    _key(scene, "gravity", [(1, -9.81), (4, -1.0)], index=2)
    animation, times = _read([slab])
    (mat,) = animation.materials
    assert mat.body == "Slab" and mat.density is None and mat.stiffness_weights is None
    np.testing.assert_allclose(mat.E.values, _evaluated(slab, "ipc.youngs_modulus"), rtol=1e-6)
    np.testing.assert_allclose(mat.mu.values, _evaluated(slab, "ipc.friction"), rtol=1e-6)
    np.testing.assert_array_equal(mat.E.times, times)
    ((name, ground),) = animation.plane_mu
    assert name == "Ground"
    np.testing.assert_allclose(ground.values, _evaluated(scene, "ipc.ground_friction"), rtol=1e-6)
    np.testing.assert_allclose(animation.gravity.values[:, 1], _evaluated(scene, "gravity", 2), rtol=1e-6)
    assert np.all(animation.gravity.values[:, 0] == 0.0)
    assert len(set(mat.E.values.tolist())) > 4, "values between the keys, per substep"


def test_painted_stiffness_group_gives_each_vertex_its_weight():
    bpy.context.scene.ipc.plane = "XZ"
    slab = _body()
    group = slab.vertex_groups.new(name="stiff")
    group.add([2, 3], 1.0, "REPLACE")
    group.add([1], 0.25, "REPLACE")
    slab.ipc.stiffness_group, slab.ipc.stiffness_min, slab.ipc.stiffness_max = "stiff", 0.5, 4.0
    animation, _ = _read([slab])
    (mat,) = animation.materials
    np.testing.assert_allclose(mat.stiffness_weights, [0.0, 0.25, 1.0, 1.0])
    assert mat.stiffness_factors == (0.5, 4.0)
    slab.ipc.stiffness_group = "missing"
    try:
        _read([slab])
    except harness.sub("common").IPCError as err:
        assert "'Slab': stiffness vertex group 'missing' does not exist" in str(err)
    else:
        raise AssertionError("a missing stiffness group must be refused")


def test_signature_keys_are_inputs_current_keyed_values_are_not():
    sig = harness.sub("signature")
    scene = bpy.context.scene
    scene.ipc.plane = "XZ"
    slab = _body()
    before = sig.signature_parts(scene, [slab], [])
    _key(slab, "ipc.youngs_modulus", [(1, 1e5), (10, 3e5)])
    _key(scene, "ipc.ground_friction", [(1, 0.1), (10, 0.5)])
    keyed = sig.signature_parts(scene, [slab], [])
    changed = sig.changed_inputs(before, keyed)
    assert "the animation of 'Slab'" in changed and "keyframes of the scene settings (new)" in changed
    scene.frame_set(7)
    assert sig.changed_inputs(keyed, sig.signature_parts(scene, [slab], [])) == []
    slab.ipc.stiffness_group = "stiff"
    assert sig.changed_inputs(keyed, sig.signature_parts(scene, [slab], [])) == ["body 'Slab'"]
