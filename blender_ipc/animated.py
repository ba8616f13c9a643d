"""Settings that follow their keyframes (issue 32, point 5), read for the solver
(solver/animated.py) at every substep: the scene's gravity (Blender's, or the
IPC panel's own), the Ground's friction, and each body's Young's modulus,
density and friction; and a body's per-vertex stiffness from a painted vertex
group (Stiffness Group: each triangle's E scaled between Stiffness Min and Max
by the mean weight of its vertices).

Only keyed (or driven) values are sampled: a scene without keys gets no
animation, and bakes exactly as before.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .common import IPCError, fcurves_of
from .solver.scene import Animation, MaterialAnimation, Track

# keyed property paths of a body -> the solver's material value
MATERIAL_PATHS = {"ipc.youngs_modulus": "E", "ipc.density": "density", "ipc.friction": "mu"}
_ATTR = {"E": "youngs_modulus", "density": "density", "mu": "friction"}


def keyed_paths(id_data) -> set[str]:
    """The data paths id_data's F-curves and drivers animate."""
    anim = getattr(id_data, "animation_data", None)
    drivers = {d.data_path for d in anim.drivers} if anim else set()
    return {fc.data_path for fc in fcurves_of(id_data)} | drivers


def _scene_keyed(scene):
    keyed = keyed_paths(scene)
    gravity = (
        ("gravity" in keyed or "use_gravity" in keyed)
        if scene.ipc.use_scene_gravity
        else ("ipc.gravity" in keyed)
    )
    return gravity, "ipc.ground_friction" in keyed and scene.ipc.use_ground


def stiffness_weights(obj, used):
    """(len(used),) the Stiffness Group's weights of the body's solver vertices (0 outside
    the group), or None without a group."""
    name = obj.ipc.stiffness_group
    if not name:
        return None
    group = obj.vertex_groups.get(name)
    if group is None:
        raise IPCError(f"'{obj.name}': stiffness vertex group '{name}' does not exist")
    gi = group.index
    w = np.zeros(len(obj.data.vertices))
    # Vertex-group weights have no foreach accessor; this runs once per bake, not per step.
    for v in obj.data.vertices:
        for g in v.groups:
            if g.group == gi:
                w[v.index] = g.weight
    return w[used]


def read_animation(context, body_objs, bodies, frame_start, n_samples, substeps, times):
    """The scene's :class:`~solver.scene.Animation` (None when nothing is keyed or
    painted), its keyed values sampled at every substep (n_samples + 1 samples at
    times). The caller restores the current frame."""
    from .reading import _gravity  # the scene's gravity in the plane, as a bake reads it

    scene = context.scene
    gravity_keyed, ground_keyed = _scene_keyed(scene)
    keyed = [[MATERIAL_PATHS[p] for p in sorted(keyed_paths(o)) if p in MATERIAL_PATHS] for o in body_objs]
    weights = [stiffness_weights(o, b.used) for o, b in zip(body_objs, bodies, strict=True)]
    if not (gravity_keyed or ground_keyed or any(keyed) or any(w is not None for w in weights)):
        return None
    g, ground, values = [], [], [{k: [] for k in ks} for ks in keyed]
    if gravity_keyed or ground_keyed or any(keyed):
        for i in range(n_samples + 1):
            frame, sub = divmod(i, substeps)
            scene.frame_set(frame_start + frame, subframe=sub / substeps)
            g.append(_gravity(scene))
            ground.append(scene.ipc.ground_friction)
            for o, vals in zip(body_objs, values, strict=True):
                for k, samples in vals.items():
                    samples.append(float(getattr(o.ipc, _ATTR[k])))
    t = np.asarray(times, float)[: n_samples + 1]
    materials = []
    for o, vals, w in zip(body_objs, values, weights, strict=True):
        if not vals and w is None:
            continue
        tracks = {k: Track(t, np.array(s)) for k, s in vals.items()}
        factors = (o.ipc.stiffness_min, o.ipc.stiffness_max)
        materials.append(MaterialAnimation(o.name, stiffness_weights=w, stiffness_factors=factors, **tracks))
    return Animation(
        gravity=Track(t, np.array(g)) if gravity_keyed else None,
        materials=tuple(materials),
        plane_mu=(("Ground", Track(t, np.array(ground))),) if ground_keyed else (),
    )


def at_start(materials, body_objs, animation):
    """The bodies' materials with each keyed value as at the start frame (its first sample), so
    that the bake does not depend on the frame it is started from (the masses, which a
    checkpoint of Continue Bake must match, come from the density)."""
    if animation is None:
        return materials
    first = {m.body: m for m in animation.materials}
    out = list(materials)
    for i, obj in enumerate(body_objs):
        m = first.get(obj.name)
        if m is not None:
            keyed = {
                k: float(getattr(m, k).values[0]) for k in ("E", "density", "mu") if getattr(m, k) is not None
            }
            out[i] = dataclasses.replace(out[i], **keyed)
    return out


def start_gravity(solver_scene):
    """The scene with its gravity setting as at the start frame when gravity is keyed (the
    solver scales its weight-based tolerances and the start's separation by it; read at the
    current frame it made the bake depend on the frame it was started from)."""
    track = solver_scene.animation.gravity
    if track is None:
        return solver_scene
    g = tuple(float(x) for x in np.asarray(track.values)[0])
    return dataclasses.replace(solver_scene, params=dataclasses.replace(solver_scene.params, gravity=g))
