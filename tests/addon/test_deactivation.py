"""Deactivation (sleeping bodies, docs/design/18-sleeping.md) in the add-on: the scene checkbox
reaches the solver, the bake report says how many bodies slept, and a block resting on the
ground ends where the same bake without Deactivation leaves it (within the Newton Tolerance
times the time it slept). Off (the default) nothing sleeps and a bake made before the setting
existed stays current."""

import types

import bpy
import harness
import numpy as np

FPS, SUBSTEPS, N_FRAMES = 25, 4, 40
SIDE = 0.2


def setup_function():
    harness.setup()


def teardown_function():
    harness.teardown()


def _scene(deactivation):
    scene = bpy.context.scene
    scene.render.fps, scene.render.fps_base = FPS, 1.0
    scene.frame_start, scene.frame_end = 1, N_FRAMES
    t = np.linspace(-SIDE / 2, SIDE / 2, 3)
    xs, zs = np.meshgrid(t, t + SIDE / 2 + 0.02)
    verts = np.column_stack([xs.ravel(), np.zeros(9), zs.ravel()])
    quads = [(0, 1, 4, 3), (1, 2, 5, 4), (3, 4, 7, 6), (4, 5, 8, 7)]
    block = harness.make_mesh_object("Block", verts, faces=quads)
    block.ipc.body_type = "RIGID"
    s = scene.ipc
    s.plane, s.substeps, s.use_ground, s.use_deactivation = "XZ", SUBSTEPS, True, deactivation
    bpy.context.view_layer.update()
    block.select_set(True)
    return block


def _bake(block):
    """Bake the selection; the block's vertices (local x, z) at every baked frame."""
    assert bpy.ops.ipc.bake(target="SELECTED") == {"FINISHED"}
    keys = block.data.shape_keys.key_blocks[1:]  # after the basis: one per frame
    return np.array([[(v.co.x, v.co.z) for v in key.data] for key in keys])


def test_deactivation_puts_the_resting_block_to_sleep_and_the_report_says_so():
    awake = _bake(_scene(False))
    assert bpy.context.scene.ipc.stat_slept_bodies == 0
    harness.teardown()
    harness.setup()
    asleep = _bake(_scene(True))
    s = bpy.context.scene.ipc
    assert s.stat_slept_bodies == 1
    labels = []
    box = types.SimpleNamespace(label=lambda text="", **_: labels.append(text))
    harness.sub("frame_motion").draw_report(box, s)
    assert "Bodies asleep at once (Deactivation): up to 1" in labels, labels
    # the drop is the same; at the end the two differ by less than newton_tol x the bake's time
    assert len(asleep) == len(awake) >= N_FRAMES - 1
    np.testing.assert_allclose(asleep[:5], awake[:5], atol=1e-6)
    assert np.abs(asleep[-1] - awake[-1]).max() < s.newton_tol * N_FRAMES / FPS


def test_deactivation_is_an_input_of_the_bake():
    block = _scene(False)
    sig = harness.sub("signature")
    before = sig.input_signature(bpy.context.scene, [block], [])
    bpy.context.scene.ipc.use_deactivation = True
    assert sig.input_signature(bpy.context.scene, [block], []) != before
    bpy.context.scene.ipc.use_deactivation = False
    assert sig.input_signature(bpy.context.scene, [block], []) == before
