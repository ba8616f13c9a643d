"""Adversarial inputs (issue 6, point 2): each raises SolverInputError whose
message names the object and the problem, and leaves its input untouched.

Inputs the solver does not catch yet are listed in tests/stress/FINDINGS.md
(F1-F4); their tests fail until the solver is fixed.
"""

import copy
import json
import math
import re

import numpy as np
import pytest
from invariants import assert_same_values as _same

from solver import (
    Body,
    Collider,
    HalfPlane,
    Material,
    Pin,
    Scene,
    SimParams,
    Simulation,
    SolverInputError,
)
from solver.examples import square_mesh
from solver.io.scene_io import load_scene

TRI_V = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
TRI_T = np.array([[0, 1, 2]])
DEFAULT_PARAMS = SimParams()  # frozen dataclass: one shared instance is safe


# ------------------------------------------------------------------ helpers


def rejected(scene, *patterns):
    """Simulation(scene) raises SolverInputError matching every pattern; scene unchanged."""
    before = copy.deepcopy(scene)
    with pytest.raises(SolverInputError) as info:
        Simulation(scene)
    msg = str(info.value)
    for p in patterns:
        assert re.search(p, msg, re.IGNORECASE), f"{p!r} not in message {msg!r}"
    _same(scene, before)
    return msg


def one(body, params=DEFAULT_PARAMS, colliders=(), planes=()):
    return Scene(bodies=(body,), colliders=colliders, half_planes=planes, params=params)


def square(name="b", side=1.0, n=2, center=(0.0, 0.0), **kw):
    v, t = square_mesh(side, n, center)
    return Body(name, v, t, **kw)


# ------------------------------------------------------------------ meshes


def _centre_split():
    v, t = square_mesh(1.0, 2)
    v2 = np.vstack([v, v[4]])  # vertex 9 duplicates the centre vertex 4
    t2 = t.copy()
    uses = np.flatnonzero(t2.ravel() == 4)
    flat = t2.ravel()
    flat[uses[1::2]] = 9
    return v2, flat.reshape(-1, 3)


DUPLICATES = {
    # centre vertex duplicated, half its triangles use the copy: pinched boundary
    "centre-split": _centre_split(),
    # two triangles meeting along an edge whose vertices are duplicated (an open seam)
    "seam": (np.array([[0, 0], [1, 0], [0, 1], [1, 0], [1, 1], [0, 1.0]]), np.array([[0, 1, 2], [3, 4, 5]])),
    # two coincident copies of the same triangle on distinct vertices
    "coincident-copies": (np.vstack([TRI_V, TRI_V]), np.array([[0, 1, 2], [3, 4, 5]])),
}


@pytest.mark.parametrize("case", DUPLICATES)
def test_duplicate_vertices_rejected(case):
    v, t = DUPLICATES[case]
    rejected(one(Body("dup", v, t)), r"'dup'", r"non-manifold|overlap|duplicate|closer")


@pytest.mark.parametrize(
    "verts",
    [
        [[0, 0], [1, 0], [2, 0]],  # collinear
        [[0, 0], [0, 0], [0, 0]],  # one point
        [[0, 0], [1, 1e-14], [2, 0]],  # below the relative area tolerance
    ],
    ids=["collinear", "point", "sliver-1e-14"],
)
def test_zero_area_triangle_rejected(verts):
    rejected(one(Body("flat", np.array(verts, float), TRI_T)), r"'flat'", r"degenerate|zero area")


def test_zero_area_triangle_inside_mesh_rejected():
    v, t = square_mesh(1.0, 2)
    v = np.vstack([v, [0.25, -0.5]])  # on the bottom edge, between vertices 0 and 1
    t = np.vstack([t, [[0, 9, 1]]])
    rejected(one(Body("flat", v, t)), r"'flat'", r"degenerate|zero area")


def test_inverted_triangle_rejected():
    v, t = square_mesh(1.0, 2)
    t = t.copy()
    t[3] = t[3, [0, 2, 1]]
    rejected(one(Body("inv", v, t)), r"'inv'", r"inverted|orientation")


NON_MANIFOLD = {
    "edge-in-three-triangles": (
        np.array([[0, 0], [1, 0], [0.5, 1], [0.5, -1], [1.5, 0.5]], float),
        np.array([[0, 1, 2], [1, 0, 3], [0, 1, 4]]),
    ),
    "bow-tie-vertex": (
        np.array([[0, 0], [1, 0], [0, 1], [-1, 0], [0, -1.0]]),
        np.array([[0, 1, 2], [0, 3, 4]]),
    ),
    # F2: every edge used twice, no boundary at all
    "duplicate-triangle": (TRI_V, np.array([[0, 1, 2], [0, 1, 2]])),
}


@pytest.mark.parametrize("case", NON_MANIFOLD)
def test_non_manifold_rejected(case):
    v, t = NON_MANIFOLD[case]
    rejected(one(Body("nm", v, t)), r"'nm'", r"non-manifold|duplicate|repeat")


def _spiral():
    n = 30
    ang = np.linspace(0, 3 * np.pi, n)
    r_in = 1 + 0.02 * ang
    inner = np.stack([r_in * np.cos(ang), r_in * np.sin(ang)], 1)
    outer = np.stack([(r_in + 0.5) * np.cos(ang), (r_in + 0.5) * np.sin(ang)], 1)
    k = np.arange(n - 1)
    t = np.concatenate([np.stack([k, k + 1, n + k + 1], 1), np.stack([k, n + k + 1, n + k], 1)])
    return np.vstack([inner, outer]), t


SELF_OVERLAP = {
    # 1.5 turns of a strip: its boundary crosses itself
    "spiral-strip": _spiral(),
    # bow-tie polygon (0,0) (2,2) (2,0) (0,2) fan-triangulated from vertex 0
    "bow-tie-polygon": (np.array([[0, 0], [2, 2], [2, 0], [0, 2.0]]), np.array([[0, 1, 2], [0, 2, 3]])),
    # two separate triangles of one body overlapping
    "overlapping-pieces": (
        np.array([[0, 0], [2, 0], [1, 1], [1, 0.5], [3, 0.5], [2.5, 2]], float),
        np.array([[0, 1, 2], [3, 4, 5]]),
    ),
    # F1: a second component lying inside the first one's triangle (no boundary edge crosses)
    "nested-component": (
        np.array([[0, 0], [4, 0], [0, 4], [0.5, 0.5], [1, 0.5], [0.5, 1.0]]),
        np.array([[0, 1, 2], [3, 4, 5]]),
    ),
}


@pytest.mark.parametrize("case", SELF_OVERLAP)
def test_self_overlap_rejected(case):
    v, t = SELF_OVERLAP[case]
    rejected(one(Body("self", v, t)), r"'self'", r"overlap|inverted|orientation|inside|non-manifold")


# ------------------------------------------------------------------ start state


def test_bodies_closer_than_dhat_rejected():
    scene = Scene(bodies=(square("left"), square("right", center=(1.005, 0.0))), params=SimParams(dhat=0.01))
    rejected(scene, r"'left'", r"'right'", r"closer than dhat|overlap")


def test_overlapping_bodies_rejected():
    scene = Scene(bodies=(square("left"), square("right", center=(0.7, 0.3))))
    rejected(scene, r"'left'|'right'", r"overlap")


@pytest.mark.parametrize("center", [(0.013, 0.031), (0.0, 0.0)], ids=["generic", "on-interior-edge"])
def test_body_inside_body_rejected(center):
    # "on-interior-edge" is F3: the probe vertex lies on the outer mesh's diagonal
    scene = Scene(bodies=(square("outer", side=2.0), square("inner", side=0.2, n=1, center=center)))
    rejected(scene, r"'inner'", r"'outer'", r"inside|overlap")


def test_body_through_half_plane_rejected():
    rejected(one(square("b"), planes=(HalfPlane((0.0, 0.2), (0.0, 1.0), 0.5, "floor"),)), r"'b'", r"'floor'")


def test_body_crossing_collider_rejected():
    wall = Collider.static("wall", [[0.2, -2.0], [0.2, 2.0]], [[0, 1]])
    rejected(one(square("b"), colliders=(wall,)), r"'b'", r"'wall'", r"overlap|touch")


# ------------------------------------------------------------------ non-finite values


def test_nan_vertex_rejected():
    v, t = square_mesh(1.0, 2)
    v = v.copy()
    v[4, 1] = np.nan
    rejected(one(Body("nan", v, t)), r"'nan'", r"NaN")


def test_inf_vertex_rejected():
    v = TRI_V.copy()
    v[1, 0] = np.inf
    rejected(one(Body("inf", v, TRI_T)), r"'inf'", r"NaN or infinite|infinite")


@pytest.mark.parametrize("shape", ["uniform", "per-vertex"])
def test_nan_velocity_rejected(shape):
    # "uniform" is F4
    vel = np.array([np.nan, 0.0]) if shape == "uniform" else np.where(np.eye(3, 2) > 0, np.nan, 0.0)
    rejected(one(Body("fast", TRI_V.copy(), TRI_T, velocity=vel)), r"'fast'", r"velocity")


def test_nan_collider_position_rejected():
    pos = np.array([[[5.0, 0.0], [5.0, 1.0]], [[np.nan, 0.0], [5.0, 1.0]]])
    col = Collider("lid", pos[0].copy(), np.array([[0, 1]]), np.array([0.0, 1.0]), pos)
    rejected(one(square("b"), colliders=(col,)), r"'lid'", r"NaN")


def test_nan_pin_target_rejected():
    pin = Pin(np.array([0]), np.array([0.0, 1.0]), np.array([[[0.0, 0.0]], [[np.nan, 0.0]]]))
    rejected(one(square("b", pins=(pin,))), r"'b'", r"pin", r"NaN")


# ------------------------------------------------------------------ empty


@pytest.mark.parametrize(
    "verts,tris",
    [
        (np.zeros((0, 2)), np.zeros((0, 3), np.int64)),
        (TRI_V, np.zeros((0, 3), np.int64)),
    ],
    ids=["no-vertices", "no-triangles"],
)
def test_empty_mesh_rejected(verts, tris):
    rejected(one(Body("empty", verts, tris)), r"'empty'", r"at least|m >= 1")


def test_no_bodies_rejected():
    rejected(Scene(bodies=()), r"at least one body")


def test_collider_without_edges_rejected():
    col = Collider.static("bar", [[3.0, 0.0], [4.0, 0.0]], np.zeros((0, 2), np.int64))
    rejected(one(square("b"), colliders=(col,)), r"'bar'", r"edge")


# ------------------------------------------------------------------ absurd parameters


@pytest.mark.parametrize(
    "field,value",
    [
        ("dt", 0.0),
        ("dt", -0.01),
        ("dt", math.nan),
        ("dt", math.inf),
        ("dhat", 0.0),
        ("dhat", -1e-3),
        ("dhat", math.nan),
        ("kappa", 0.0),
        ("kappa", -1.0),
        ("eps_v", 0.0),
        ("newton_tol", -1.0),
        ("max_newton_iters", 0),
        ("gravity", (0.0, math.nan)),
        ("formulation", "fancy"),
        ("linear_solver", "magic"),
        ("dt", "0.01"),
        ("dt", True),
    ],
)
def test_absurd_params_rejected(field, value):
    rejected(one(square("b"), params=SimParams(**{field: value})), re.escape(f"params.{field}"))


@pytest.mark.parametrize(
    "field,value,problem",
    [
        ("E", 0.0, r"E\b"),
        ("E", -1e5, r"E\b"),
        ("E", math.inf, r"E\b"),
        ("E", "1e5", r"E\b"),
        ("nu", 0.5, r"nu"),
        ("nu", 0.7, r"nu"),
        ("nu", -1.0, r"nu"),
        ("nu", -1.5, r"nu"),
        ("nu", math.nan, r"nu"),
        ("density", 0.0, r"density"),
        ("mu", -0.1, r"mu"),
    ],
)
def test_absurd_material_rejected(field, value, problem):
    rejected(one(square("rubber", material=Material(**{field: value}))), r"'rubber'", problem)


def test_mu_static_below_mu_rejected():
    rejected(one(square("rubber", material=Material(mu=0.5, mu_static=0.2))), r"'rubber'", r"mu_static")


# ------------------------------------------------------------------ scene JSON


def _doc():
    v, t = square_mesh(1.0, 1)
    return {
        "format": "blender-ipc-scene",
        "version": 1,
        "bodies": [
            {
                "name": "box",
                "vertices": v.tolist(),
                "triangles": t.tolist(),
                "material": {"E": 1e5, "nu": 0.3},
            }
        ],
        "colliders": [{"name": "wall", "vertices": [[2, 0], [2, 1]], "edges": [[0, 1]]}],
        "half_planes": [{"name": "ground", "point": [0, -1], "normal": [0, 1]}],
        "params": {"dt": 0.01, "dhat": 0.01},
    }


def _drop(path):
    def edit(d):
        *head, last = path
        for k in head:
            d = d[k]
        del d[last]

    return edit


def _put(path, value):
    def edit(d):
        *head, last = path
        for k in head:
            d = d[k]
        d[last] = value

    return edit


JSON_CASES = {
    # missing fields
    "missing-format": (_drop(["format"]), r"format"),
    "missing-bodies": (_drop(["bodies"]), r"bodies"),
    "missing-vertices": (_drop(["bodies", 0, "vertices"]), r"bodies\[0\].*vertices"),
    "missing-triangles": (_drop(["bodies", 0, "triangles"]), r"bodies\[0\].*triangles"),
    "missing-collider-edges": (_drop(["colliders", 0, "edges"]), r"colliders\[0\].*edges"),
    "missing-plane-normal": (_drop(["half_planes", 0, "normal"]), r"half_planes\[0\].*normal"),
    # extra fields
    "extra-top": (_put(["colour"], "red"), r"colour"),
    "extra-body": (_put(["bodies", 0, "colour"], "red"), r"bodies\[0\].*colour"),
    "extra-material": (_put(["bodies", 0, "material", "hardness"], 3), r"bodies\[0\]\.material.*hardness"),
    "extra-params": (_put(["params", "substeps"], 4), r"params.*substeps"),
    "extra-plane": (_put(["half_planes", 0, "offset"], 1.0), r"half_planes\[0\].*offset"),
    # wrong types
    "vertices-string": (_put(["bodies", 0, "vertices"], "square"), r"bodies\[0\]\.vertices"),
    "vertex-bool": (_put(["bodies", 0, "vertices", 0, 0], True), r"bodies\[0\]\.vertices\[0\]\[0\]"),
    "triangle-float": (_put(["bodies", 0, "triangles", 0, 1], 1.5), r"bodies\[0\]\.triangles\[0\]\[1\]"),
    "E-string": (_put(["bodies", 0, "material", "E"], "soft"), r"bodies\[0\]\.material\.E"),
    "nu-out-of-range": (_put(["bodies", 0, "material", "nu"], 0.5), r"bodies\[0\]\.material\.nu"),
    "dt-bool": (_put(["params", "dt"], True), r"params\.dt"),
    "dt-negative": (_put(["params", "dt"], -0.01), r"params\.dt"),
    "dhat-zero": (_put(["params", "dhat"], 0), r"params\.dhat"),
    "iters-float": (_put(["params", "max_newton_iters"], 1.5), r"params\.max_newton_iters"),
    "kappa-string": (_put(["params", "kappa"], "stiff"), r"params\.kappa"),
    "name-number": (_put(["bodies", 0, "name"], 7), r"bodies\[0\]\.name"),
    "bodies-object": (_put(["bodies"], {"name": "box"}), r"bodies"),
    "planes-string": (_put(["half_planes"], "ground"), r"half_planes"),
    "vertex-nan": (_put(["bodies", 0, "vertices", 1, 1], float("nan")), r"bodies\[0\]\.vertices\[1\]\[1\]"),
    "ragged-vertices": (_put(["bodies", 0, "vertices", 2], [1.0]), r"bodies\[0\]\.vertices\[2\]"),
    "version-string": (_put(["version"], "1"), r"version"),
}


@pytest.mark.parametrize("case", JSON_CASES)
def test_scene_json_names_the_field(case):
    edit, field = JSON_CASES[case]
    doc = _doc()
    edit(doc)
    before = copy.deepcopy(doc)
    with pytest.raises(SolverInputError) as info:
        load_scene(doc)
    assert re.search(field, str(info.value)), f"{field!r} not in {str(info.value)!r}"
    _same(doc, before, "doc")


def test_scene_json_file_with_nan_literal_names_the_field(tmp_path):
    doc = _doc()
    doc["params"]["dhat"] = float("nan")
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))  # Python writes the NaN literal
    with pytest.raises(SolverInputError, match=r"params\.dhat"):
        load_scene(str(path))


def test_valid_document_loads():
    """The base document of the JSON cases is itself valid (so each case tests one defect)."""
    Simulation(load_scene(_doc()))
