"""Blender <-> solver adapter, by concern:

- ``common``: names, plane axes, the user-facing :class:`IPCError`, array helpers, units;
- ``reading``: which objects a bake takes, their meshes as solver arrays, the solver scene,
  solver messages in Blender's words;
- ``colliders``: collider edges, motion sampled per substep, lag / overlap reports;
- ``signature``: the input hash that marks a bake outdated;
- ``shape_keys``: writing and deleting the baked shape keys;
- ``bake_job``: the bake in progress (read, step, finish);
- ``resume``: the solver checkpoints a bake stores for Continue Bake, and what continuing needs.

This module re-exports what the operators, panels, scripts and tests use.
"""

from .bake_job import BakeJob, BakeStats
from .colliders import (
    ColliderInput,
    ColliderReport,
    collider_reports,
    lag_warning,
    may_deform,
    read_collider,
    sample_matrices,
)
from .common import (
    KEY_PREFIX,
    PLANE_AXES,
    IPCError,
    fcurves_of,
    format_length,
    frame_range,
    is_our_bake,
    sim_dt,
)
from .reading import (
    COLLIDER_TYPES,
    BodyInput,
    attach_to_nearest_triangle,
    body_type_problem,
    build_scene,
    check_bakeable,
    gather_objects,
    in_blender_words,
    is_obstacle_body,
    obstacles,
    read_body,
    role_problem,
    sim_params,
    unselected_bodies,
)
from .resume import discard_unused as discard_unused_checkpoints
from .resume import prepare as prepare_resume
from .shape_keys import clear_stats_if_gone, delete_bake, to_local_frames, write_bake
from .signature import input_signature, is_outdated, is_outdated_cached
from .solver import Simulation

__all__ = [
    "COLLIDER_TYPES",
    "KEY_PREFIX",
    "PLANE_AXES",
    "BakeJob",
    "BakeStats",
    "BodyInput",
    "ColliderInput",
    "ColliderReport",
    "IPCError",
    "Simulation",
    "attach_to_nearest_triangle",
    "body_type_problem",
    "build_scene",
    "check_bakeable",
    "clear_stats_if_gone",
    "collider_reports",
    "delete_bake",
    "discard_unused_checkpoints",
    "fcurves_of",
    "format_length",
    "frame_range",
    "gather_objects",
    "in_blender_words",
    "input_signature",
    "is_obstacle_body",
    "is_our_bake",
    "is_outdated",
    "is_outdated_cached",
    "lag_warning",
    "may_deform",
    "obstacles",
    "prepare_resume",
    "read_body",
    "read_collider",
    "role_problem",
    "sample_matrices",
    "sim_dt",
    "sim_params",
    "to_local_frames",
    "unselected_bodies",
    "write_bake",
]
