"""The second demo scene (`make demo SCENE=chain`): it bakes at its own settings, its first link
stays on its pivot, the chain swings down and no face turns over."""

import bpy
import checks
import harness
import numpy as np
import test_artist_input as artist


def setup_function():
    harness.setup()


def teardown_function():
    harness.teardown()


def test_chain_in_wind_bakes_hinged_and_blown_downwind():
    chain, _, _ = harness.sub("examples").build_chain_in_wind(bpy.context, n_frames=25)
    assert bpy.ops.ipc.bake(target="SCENE") == {"FINISHED"}
    scene = bpy.context.scene
    tris = {o.name: artist._face_triangles(o) for o in chain}
    start = {o.name: artist._world_xz(o) for o in chain}
    pivot = np.array([0.025, 0.0])  # the Pivot Empty: the middle of the first link's left end
    near_pivot = np.linalg.norm(start[chain[0].name] - pivot, axis=1).argmin()
    for frame in range(scene.frame_start, scene.frame_end + 1):
        scene.frame_set(frame)
        for o in chain:
            assert (checks.signed_areas(artist._world_xz(o), tris[o.name]) > 0).all(), (frame, o.name)
        held = artist._world_xz(chain[0])[near_pivot]
        gap = np.linalg.norm(held - start[chain[0].name][near_pivot])
        assert gap < 0.01, f"frame {frame}: the first link left its pivot by {gap:.4f} m"
    tip = artist._world_xz(chain[-1]).mean(axis=0)
    assert tip[1] < -0.1, "the chain did not swing down"
