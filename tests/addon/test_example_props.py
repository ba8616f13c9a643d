"""The third demo scene (`make demo SCENE=props`, issue 34 point 6): soft characters dropped into a
box of rigid props. A short bake at its own settings, every frame checked independently (no face
turns over, no boundaries cross, no vertex inside another body or through the box), the props
stay rigid and in the box, and the characters land in it."""

import bpy
import harness
import numpy as np
import test_artist_input as artist


def setup_function():
    harness.setup()


def teardown_function():
    harness.teardown()


def _edge_lengths(x):
    return np.hypot(*(x[1:] - x[:-1]).T)


def test_props_in_box_bakes_clean_with_rigid_props_and_landed_characters():
    examples = harness.sub("examples")
    bodies, _ = examples.build_props_in_box(bpy.context, n_frames=25)
    characters, props = bodies[: len(examples.CHARACTERS)], bodies[len(examples.CHARACTERS) :]
    assert all(o.ipc.body_type == "RIGID" for o in props)
    assert all(o.ipc.body_type == "DEFORMABLE" for o in characters)
    assert bpy.ops.ipc.bake(target="SCENE") == {"FINISHED"}
    artist._assert_baked_frames_clean(bodies)
    scene = bpy.context.scene
    scene.frame_set(scene.frame_start)
    rest = {o.name: _edge_lengths(artist._world_xz(o)) for o in props}
    inner = examples.BOX_WIDTH / 2
    for frame in range(scene.frame_start, scene.frame_end + 1):
        scene.frame_set(frame)
        for o in props:
            x = artist._world_xz(o)
            strain = np.abs(_edge_lengths(x) / rest[o.name] - 1).max()
            assert strain < 1e-3, f"frame {frame}: {o.name} deformed by {strain:.1e}"
            assert (np.abs(x[:, 0]) < inner).all() and (x[:, 1] > 0).all(), (frame, o.name)
    for o in characters:
        x = artist._world_xz(o)
        assert (np.abs(x[:, 0]) < inner).all(), f"{o.name} missed the box"
        assert x[:, 1].min() < examples.BOX_HEIGHT + 0.3, f"{o.name} did not land by the last frame"
