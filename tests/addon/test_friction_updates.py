"""The Friction Updates setting (friction taken again at each step's result,
docs/design/20-friction-lag-updates.md) in the add-on: a rigid box dropped onto a slope it grips
(the ground with gravity tilted by t, tan t < mu) stops where Coulomb's law stops it with the
setting at 1, and slides on past that bound at 0 (the default: friction from each step's start);
the panel shows it among the solver's internals; the bake signature leaves it out at its default
and names a change."""

import math

import bpy
import harness
import test_artist_input as artist
import test_ui

THETA = math.radians(20.0)  # tan 0.36: gripped by mu 0.5
MU = 0.5  # box and ground: the pair's coefficient is sqrt(0.5 * 0.5)
DROP = 0.004  # the box starts this far above the ground [m]
FPS, SUBSTEPS, N_FRAMES = 24, 2, 13


def setup_function():
    harness.setup()


def teardown_function():
    harness.teardown()


def _box():
    artist._frames(n_frames=N_FRAMES, fps=FPS, substeps=SUBSTEPS)
    s = bpy.context.scene.ipc
    s.use_scene_gravity, s.gravity = False, (9.81 * math.sin(THETA), -9.81 * math.cos(THETA))
    s.ground_friction = MU
    box = artist._quad("Box", -0.1, DROP, 0.2, 0.2)
    box.ipc.body_type, box.ipc.friction = "RIGID", MU
    artist._select_only(box)
    return box


def _drift(updates):
    """(along, across, bound): how far the box's centre moved down the slope and towards it from
    the first frame to the last, and the most Coulomb's law lets it slide from rest: mu times its
    path across the slope plus eps_v t (while it sticks, friction holds it below eps_v). Why:
    while it slides, m dv_t = (m g sin t - mu N) dt and m dv_n = (N - m g cos t) dt give
    d(v_t + mu v_n) = g (sin t - mu cos t) dt < 0, so from rest v_t <= mu (-v_n). It slides at
    least tan t times its path across: in free fall, before friction acts."""
    box = _box()
    scene = bpy.context.scene
    scene.ipc.friction_updates = updates
    assert bpy.ops.ipc.bake() == {"FINISHED"}
    artist._assert_baked_frames_clean([box])
    scene.frame_set(1)
    start = artist._world_xz(box).mean(axis=0)
    scene.frame_set(N_FRAMES)
    end = artist._world_xz(box).mean(axis=0)
    t = (N_FRAMES - 1) / FPS
    across = start[1] - end[1]
    return end[0] - start[0], across, MU * across + scene.ipc.eps_v * t


def test_with_one_update_a_landing_box_stops_within_coulombs_bound():
    along, across, bound = _drift(1)
    assert math.tan(THETA) * across <= along <= bound, (along, across, bound)


def test_without_updates_the_landing_box_slides_past_the_bound():
    # friction from the step's start: no normal force yet in the step it lands
    along, _, bound = _drift(0)
    assert along > bound, (along, bound)


def test_the_advanced_panel_shows_it_after_the_friction_settings():
    log = []
    harness.sub("panels").draw_advanced(test_ui._Layout(log), bpy.context)
    drawn = [name for kind, name in log if kind == "prop"]
    i = drawn.index("friction_mollifier")
    assert drawn[i + 1] == "friction_updates", drawn


def test_signature_leaves_the_default_out_and_names_a_change():
    box = _box()
    signature = harness.sub("signature")
    scene = bpy.context.scene
    at_default = signature.signature_parts(scene, [box], [])
    assert not any("Friction Updates" in label for label in at_default), list(at_default)
    scene.ipc.friction_updates = 1
    changed = signature.signature_parts(scene, [box], [])
    assert signature.changed_inputs(at_default, changed) == ["setting 'Friction Updates' (0 -> 1)"]
