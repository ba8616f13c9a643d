"""JSON scene format: strict validation with field paths, round trips, motions."""

import copy
import json
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solver import Body, Collider, HalfPlane, Material, Pin, Scene, SimParams, SolverInputError
from solver.examples import EXAMPLES, compressing_squares, square_mesh
from solver.io.scene_io import dumps_scene, load_scene, save_scene, scene_from_dict, scene_to_dict


def minimal():
    """Smallest valid scene dict: one triangle, header only, all defaults."""
    return {
        "format": "blender-ipc-scene",
        "version": 1,
        "bodies": [{"name": "tri", "vertices": [[0, 0], [1, 0], [0, 1]], "triangles": [[0, 1, 2]]}],
    }


def rich():
    """A dict exercising every field: two bodies, pins, velocity, all motion kinds."""
    v, t = square_mesh(1.0, 2, (0.0, 0.0))
    return {
        "format": "blender-ipc-scene",
        "version": 1,
        "description": "test scene",
        "bodies": [
            {
                "name": "a",
                "vertices": v.tolist(),
                "triangles": t.tolist(),
                "material": {"E": 2e5, "nu": 0.3, "density": 500.0, "mu": 0.2, "mu_static": 0.3},
                "velocity": [1.0, -2.0],
                "pins": [
                    {"indices": [0, 1]},
                    {"indices": [8], "times": [0.0, 1.0], "positions": [[[0.5, 0.5]], [[0.6, 0.5]]]},
                ],
            },
            {
                "name": "top",
                "vertices": (v + np.array([0, 2])).tolist(),
                "triangles": t.tolist(),
                "material": {"nu": 0.45},
                "velocity": np.zeros((9, 2)).tolist(),
            },
        ],
        "colliders": [
            {"name": "wall", "vertices": [[3, -1], [3, 1]], "edges": [[0, 1]], "mu": 0.1},
            {
                "name": "lid",
                "edges": [[0, 1]],
                "motion": {
                    "type": "sampled",
                    "times": [0.0, 2.0],
                    "positions": [[[-1, 5], [1, 5]], [[-1, 4], [1, 4]]],
                },
            },
            {
                "name": "arm",
                "vertices": [[1, 0], [2, 0]],
                "edges": [[0, 1]],
                "motion": {
                    "type": "rigid",
                    "times": [0.0, 1.0],
                    "angles": [0.0, math.pi / 2],
                    "translations": [[0, 0], [0, 1]],
                    "pivot": [0, 0],
                },
            },
            {
                "name": "aff",
                "vertices": [[0, 0], [1, 0]],
                "edges": [[0, 1]],
                "motion": {
                    "type": "affine",
                    "times": [0.0, 1.0],
                    "matrices": [[[1, 0, 0], [0, 1, 0]], [[2, 0, 1], [0, 1, 3]]],
                },
            },
        ],
        "half_planes": [
            {"name": "ground", "point": [0, -3], "normal": [0, 2], "mu": 0.5},
            {"point": [-4, 0], "normal": [1, 0]},
        ],
        "params": {
            "dt": 0.005,
            "dhat": 0.002,
            "kappa": None,
            "formulation": "convergent",
            "eps_v": 1e-4,
            "friction_mollifier": "ipc",
            "newton_tol": 1e-3,
            "max_newton_iters": 50,
            "gravity": [0, -1.62],
            "strict": False,
            "linear_solver": "numpy",
        },
    }


def assert_scenes_equal(a, b):
    assert len(a.bodies) == len(b.bodies)
    for x, y in zip(a.bodies, b.bodies, strict=True):
        assert x.name == y.name and x.material == y.material
        np.testing.assert_array_equal(x.vertices, y.vertices)
        np.testing.assert_array_equal(x.triangles, y.triangles)
        assert (x.velocity is None) == (y.velocity is None)
        if x.velocity is not None:
            np.testing.assert_array_equal(x.velocity, y.velocity)
        assert len(x.pins) == len(y.pins)
        for p, q in zip(x.pins, y.pins, strict=True):
            np.testing.assert_array_equal(p.indices, q.indices)
            assert (p.times is None) == (q.times is None)
            if p.times is not None:
                np.testing.assert_array_equal(p.times, q.times)
                np.testing.assert_array_equal(p.positions, q.positions)
    assert len(a.colliders) == len(b.colliders)
    for x, y in zip(a.colliders, b.colliders, strict=True):
        assert x.name == y.name and x.mu == y.mu
        for attr in ("vertices", "edges", "times", "positions"):
            np.testing.assert_array_equal(getattr(x, attr), getattr(y, attr))
    assert a.half_planes == b.half_planes
    assert a.params == b.params


# --------------------------------------------------------------------------
# valid input
# --------------------------------------------------------------------------


def test_minimal_scene_gets_documented_defaults():
    s = load_scene(minimal())
    assert s.params == SimParams()
    assert s.bodies[0].material == Material()
    assert s.colliders == () and s.half_planes == ()
    assert s.bodies[0].vertices.dtype == np.float64 and s.bodies[0].vertices.shape == (3, 2)
    assert s.bodies[0].triangles.dtype == np.int64 and s.bodies[0].triangles.shape == (1, 3)
    assert s.bodies[0].velocity is None and s.bodies[0].pins == ()


def test_rich_scene_fields():
    s = load_scene(rich())
    a, top = s.bodies
    assert a.material == Material(E=2e5, nu=0.3, density=500.0, mu=0.2, mu_static=0.3)
    np.testing.assert_array_equal(a.velocity, [1.0, -2.0])
    assert top.velocity.shape == (9, 2)
    assert a.pins[0].times is None and a.pins[0].positions is None
    np.testing.assert_array_equal(a.pins[0].indices, [0, 1])
    assert a.pins[1].positions.shape == (2, 1, 2)
    assert s.params == SimParams(
        dt=0.005,
        dhat=0.002,
        kappa=None,
        formulation="convergent",
        eps_v=1e-4,
        friction_mollifier="ipc",
        newton_tol=1e-3,
        max_newton_iters=50,
        gravity=(0.0, -1.62),
        strict=False,
        linear_solver="numpy",
    )
    # Normals are normalised; the unnamed half-plane gets an index-based name.
    assert s.half_planes[0] == HalfPlane((0.0, -3.0), (0.0, 1.0), 0.5, "ground")
    assert s.half_planes[1] == HalfPlane((-4.0, 0.0), (1.0, 0.0), 0.4, "half_plane_1")


def test_collider_motions():
    wall, lid, arm, aff = load_scene(rich()).colliders
    # static: one sample equal to the vertices
    np.testing.assert_array_equal(wall.times, [0.0])
    np.testing.assert_array_equal(wall.positions, [[[3, -1], [3, 1]]])
    # sampled without explicit vertices: vertices = first sample
    np.testing.assert_array_equal(lid.vertices, [[-1, 5], [1, 5]])
    np.testing.assert_array_equal(lid.positions[1], [[-1, 4], [1, 4]])
    # rigid: (1,0),(2,0) turned 90 deg CCW about the origin -> (0,1),(0,2), then +(0,1)
    np.testing.assert_allclose(arm.positions[0], [[1, 0], [2, 0]], atol=1e-15)
    np.testing.assert_allclose(arm.positions[1], [[0, 2], [0, 3]], atol=1e-15)
    # affine: x' = 2x + 1, y' = y + 3
    np.testing.assert_allclose(aff.positions[1], [[1, 3], [3, 3]])


def test_rigid_rotation_about_pivot_and_defaults():
    d = minimal()
    d["colliders"] = [
        {
            "name": "c",
            "vertices": [[1, 0], [2, 0], [2, 1]],
            "edges": [[0, 1], [1, 2]],
            "motion": {"type": "rigid", "times": [0, 1, 2], "angles": [0, math.pi, 0], "pivot": [1, 0]},
        }
    ]
    c = load_scene(d).colliders[0]
    np.testing.assert_allclose(c.positions[1], [[1, 0], [0, 0], [0, -1]], atol=1e-15)
    np.testing.assert_allclose(c.positions[2], c.positions[0])
    d["colliders"][0]["motion"] = {"type": "rigid", "times": [0, 1], "translations": [[0, 0], [5, 0]]}
    c = load_scene(d).colliders[0]
    np.testing.assert_allclose(c.positions[1], [[6, 0], [7, 0], [7, 1]])


@pytest.mark.parametrize("make", [rich, minimal])
def test_round_trip_dict(make):
    s = load_scene(make())
    d = scene_to_dict(s)
    assert_scenes_equal(s, load_scene(d))
    # The dict is plain JSON: serialising and parsing changes nothing.
    assert json.loads(json.dumps(d)) == d


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_round_trip_examples_through_file(name, tmp_path):
    s = EXAMPLES[name]()
    path = tmp_path / "scene.json"
    save_scene(s, path)
    assert_scenes_equal(s, load_scene(path))
    assert_scenes_equal(s, load_scene(str(path)))


def test_dumps_is_valid_json_matching_dict():
    s = load_scene(rich())
    assert json.loads(dumps_scene(s)) == scene_to_dict(s)
    text = dumps_scene(compressing_squares(n_seg=4))
    # One vertex row per line keeps files readable (not one number per line).
    assert "[-0.225, -0.225]," in text


def test_dict_with_numpy_arrays_accepted():
    d = minimal()
    d["bodies"][0]["vertices"] = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    d["bodies"][0]["triangles"] = np.array([[0, 1, 2]], dtype=np.int32)
    s = load_scene(d)
    assert s.bodies[0].triangles.dtype == np.int64


def test_loader_does_not_alias_or_mutate_input():
    d = rich()
    before = copy.deepcopy(d)
    s = load_scene(d)
    assert d == before
    s.bodies[0].vertices[0, 0] = 99.0
    assert d["bodies"][0]["vertices"][0][0] != 99.0


def test_kappa_auto_string_means_automatic():
    d = minimal()
    d["params"] = {"kappa": "auto"}
    assert load_scene(d).params.kappa is None


# --------------------------------------------------------------------------
# invalid input: every case names the field path
# --------------------------------------------------------------------------


def _set(d, path, value):
    """Set d[...] along a path of keys/indices (value DELETE removes the key)."""
    target = d
    for key in path[:-1]:
        target = target[key]
    if value is DELETE:
        del target[path[-1]]
    else:
        target[path[-1]] = value


DELETE = object()

BAD = [
    # (path to modify, new value, expected message fragment)
    (
        ("bodies", 1, "material", "nu"),
        0.7,
        'bodies[1].material.nu: expected a number in (-1, 0.5), got 0.7 (body "top")',
    ),
    (("bodies", 0, "material", "nu"), -1, "bodies[0].material.nu: expected a number in (-1, 0.5), got -1"),
    (("bodies", 0, "material", "nu"), 0.5, "bodies[0].material.nu: expected a number in (-1, 0.5)"),
    (("bodies", 0, "material", "E"), 0, "bodies[0].material.E: expected a number > 0, got 0"),
    (("bodies", 0, "material", "E"), True, "bodies[0].material.E: expected a number > 0, got true"),
    (
        ("bodies", 0, "material", "E"),
        "1e5",
        "bodies[0].material.E: expected a number > 0, got the string '1e5'",
    ),
    (("bodies", 0, "material", "density"), -3.0, "bodies[0].material.density: expected a number > 0"),
    (("bodies", 0, "material", "mu"), -0.1, "bodies[0].material.mu: expected a number >= 0"),
    (("bodies", 0, "material", "mu_static"), 0.1, "bodies[0].material.mu_static: expected a number >= 0.2"),
    (("bodies", 0, "material", "colour"), "red", "bodies[0].material: unknown field 'colour'"),
    (("bodies", 0, "colour"), "red", "bodies[0]: unknown field 'colour'"),
    (("bodies", 0, "vertices"), DELETE, "bodies[0]: missing required field 'vertices'"),
    (("bodies", 0, "name"), DELETE, "bodies[0]: missing required field 'name'"),
    (("bodies", 0, "name"), "", "bodies[0].name: expected a non-empty string"),
    (("bodies", 0, "vertices"), "abc", "bodies[0].vertices: expected a list, got the string 'abc'"),
    (
        ("bodies", 0, "vertices", 2, 1),
        float("nan"),
        "bodies[0].vertices[2][1]: expected a finite number, got nan",
    ),
    (
        ("bodies", 0, "vertices", 3, 0),
        float("inf"),
        "bodies[0].vertices[3][0]: expected a finite number, got inf",
    ),
    (
        ("bodies", 0, "vertices", 1),
        [0.0, 0.0, 0.0],
        "bodies[0].vertices[1]: expected a list of 2 entries, got 3",
    ),
    (("bodies", 0, "vertices", 1), 4.0, "bodies[0].vertices[1]: expected a list, got 4.0"),
    (("bodies", 0, "triangles", 0, 2), 99, "bodies[0].triangles[0][2]: vertex index 99 out of range [0, 9)"),
    (("bodies", 0, "triangles", 5, 0), -1, "bodies[0].triangles[5][0]: vertex index -1 out of range [0, 9)"),
    (("bodies", 0, "triangles", 0, 1), 1.5, "bodies[0].triangles[0][1]: expected an integer, got 1.5"),
    (("bodies", 0, "triangles", 0), [0, 0, 4], "bodies[0].triangles[0]: triangle uses a vertex twice"),
    (("bodies", 0, "triangles", 0), [0, 1, 2], "bodies[0].triangles[0]: zero area (degenerate)"),
    (("bodies", 0, "triangles"), [], "bodies[0].triangles: expected at least 1 triangle"),
    (("bodies", 0, "velocity"), [1.0], "bodies[0].velocity: expected a list of 2 entries, got 1"),
    (("bodies", 0, "velocity"), [[0.0, 0.0]] * 3, "bodies[0].velocity: expected a list of 9 entries, got 3"),
    (
        ("bodies", 0, "pins", 0, "indices", 1),
        9,
        "bodies[0].pins[0].indices[1]: vertex index 9 out of range [0, 9)",
    ),
    (("bodies", 0, "pins", 0, "indices"), [3, 3], "bodies[0].pins[0].indices[1]: vertex 3 listed twice"),
    (
        ("bodies", 0, "pins", 1, "indices"),
        [1],
        "bodies[0].pins[1].indices[0]: vertex 1 is already pinned by bodies[0].pins[0]",
    ),
    (("bodies", 0, "pins", 1, "positions"), DELETE, "bodies[0].pins[1]: missing required field 'positions'"),
    (
        ("bodies", 0, "pins", 1, "times"),
        [1.0, 1.0],
        "bodies[0].pins[1].times[1]: times must be strictly increasing",
    ),
    (
        ("bodies", 0, "pins", 1, "positions"),
        [[[0.5, 0.5]]],
        "bodies[0].pins[1].positions: expected a list of 2 entries, got 1",
    ),
    (("bodies",), [], "bodies: expected at least 1 entry, got 0"),
    (("bodies", 1, "name"), "a", "bodies[1].name: duplicate body name 'a' (also bodies[0])"),
    (("colliders", 0, "edges", 0, 1), 2, "colliders[0].edges[0][1]: vertex index 2 out of range [0, 2)"),
    (("colliders", 0, "edges", 0), [1, 1], "colliders[0].edges[0]: edge connects vertex 1 to itself"),
    (
        ("colliders", 1, "motion", "positions", 1, 1),
        [-1, 4],
        "colliders[1].edges[0]: zero-length edge at motion sample 1",
    ),
    (("colliders", 0, "vertices"), DELETE, "colliders[0]: missing required field 'vertices'"),
    (("colliders", 0, "mu"), -1, 'colliders[0].mu: expected a number >= 0, got -1 (collider "wall")'),
    (
        ("colliders", 1, "motion", "type"),
        "wobbly",
        "colliders[1].motion.type: expected one of 'static', 'sampled', 'rigid', 'affine', got 'wobbly'",
    ),
    (("colliders", 1, "motion", "type"), DELETE, "colliders[1].motion: missing required field 'type'"),
    (
        ("colliders", 1, "motion", "positions", 1),
        [[-1, 4]],
        "colliders[1].motion.positions[1]: expected a list of 2 entries like "
        "colliders[1].motion.positions[0], got 1 (ragged array)",
    ),
    (("colliders", 1, "motion", "speed"), 3, "colliders[1].motion: unknown field 'speed'"),
    (
        ("colliders", 1, "vertices"),
        [[-1, 5], [1, 6]],
        "colliders[1].vertices: must equal motion.positions[0]",
    ),
    (
        ("colliders", 2, "motion", "translations"),
        [[0, 0]],
        "colliders[2].motion.translations: expected a list of 2 entries, got 1",
    ),
    (
        ("colliders", 2, "motion", "times"),
        [1.0, 0.0],
        "colliders[2].motion.times[1]: times must be strictly increasing",
    ),
    (
        ("colliders", 3, "motion", "matrices", 1, 0),
        [2, 0],
        "colliders[3].motion.matrices[1][0]: expected a list of 3 entries, got 2",
    ),
    (("colliders", 3, "name"), "wall", "colliders[3].name: duplicate collider name 'wall'"),
    (("half_planes", 0, "normal"), [0, 0], "half_planes[0].normal: expected a non-zero vector"),
    (("half_planes", 0, "point"), DELETE, "half_planes[0]: missing required field 'point'"),
    (("half_planes", 1, "mu"), None, "half_planes[1].mu: expected a number >= 0, got null"),
    (
        ("params", "formulation"),
        "fancy",
        "params.formulation: expected one of 'original', 'convergent', got 'fancy'",
    ),
    (
        ("params", "friction_mollifier"),
        "cubic",
        "params.friction_mollifier: expected one of 'linear', 'ipc', got 'cubic'",
    ),
    (("params", "dt"), 0.0, "params.dt: expected a number > 0, got 0.0"),
    (("params", "dhat"), -1e-3, "params.dhat: expected a number > 0"),
    (("params", "kappa"), 0, "params.kappa: expected a number > 0, got 0"),
    (("params", "kappa"), "big", "params.kappa: expected a number > 0, null or 'auto'"),
    (("params", "max_newton_iters"), 0, "params.max_newton_iters: expected an integer >= 1, got 0"),
    (("params", "max_newton_iters"), 2.5, "params.max_newton_iters: expected an integer, got 2.5"),
    (("params", "strict"), "yes", "params.strict: expected true or false"),
    (("params", "gravity"), [0.0], "params.gravity: expected a list of 2 entries, got 1"),
    (("params", "linear_solver"), "magic", "params.linear_solver: expected one of 'auto', 'scipy', 'numpy'"),
    (("params", "steps"), 10, "params: unknown field 'steps'"),
    (("format",), "something", "format: expected 'blender-ipc-scene', got the string 'something'"),
    (("version",), 2, "version: unsupported version 2 (this solver reads version 1)"),
    (("version",), DELETE, "missing required field 'version'"),
    (("extra",), 1, "unknown field 'extra'"),
    (("colliders",), {}, "colliders: expected a list, got an object"),
]


@pytest.mark.parametrize(
    "path,value,message", BAD, ids=[".".join(map(str, b[0])) + "=" + repr(b[1])[:20] for b in BAD]
)
def test_invalid_field_is_named(path, value, message):
    d = rich()
    _set(d, path, value)
    with pytest.raises(SolverInputError) as info:
        load_scene(d)
    assert message in str(info.value)


def test_unused_vertex_rejected():
    d = minimal()
    d["bodies"][0]["vertices"].append([5.0, 5.0])
    with pytest.raises(
        SolverInputError, match=r"bodies\[0\]\.vertices\[3\]: vertex is not used by any triangle"
    ):
        load_scene(d)


def test_numpy_float_triangles_rejected_and_nonfinite_numpy_named():
    d = minimal()
    d["bodies"][0]["triangles"] = np.array([[0.0, 1.0, 2.0]])
    with pytest.raises(SolverInputError, match=r"bodies\[0\]\.triangles: expected an array of integers"):
        load_scene(d)
    d = minimal()
    d["bodies"][0]["vertices"] = np.array([[0.0, 0.0], [1.0, np.nan], [0.0, 1.0]])
    with pytest.raises(SolverInputError, match=r"bodies\[0\]\.vertices\[1\]\[1\]: expected a finite number"):
        load_scene(d)


def test_root_must_be_object_and_header_required():
    with pytest.raises(SolverInputError, match="expected an object, got a list"):
        scene_from_dict([1, 2])
    d = minimal()
    del d["format"]
    with pytest.raises(SolverInputError, match="missing required field 'format'"):
        load_scene(d)
    with pytest.raises(SolverInputError, match="expected a file path or a dict"):
        load_scene(42)


def test_file_errors(tmp_path):
    with pytest.raises(SolverInputError, match="cannot read scene file"):
        load_scene(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "blender-ipc-scene",\n "version": 1,,}')
    with pytest.raises(SolverInputError, match=r"bad\.json: invalid JSON at line 2 column"):
        load_scene(bad)
    # Python's json accepts NaN / Infinity literals; the loader still rejects them.
    nan = tmp_path / "nan.json"
    nan.write_text(json.dumps(minimal()).replace('"triangles"', '"velocity": [NaN, 0], "triangles"'))
    with pytest.raises(
        SolverInputError, match=r"bodies\[0\]\.velocity\[0\]: expected a finite number, got nan"
    ):
        load_scene(nan)


# --------------------------------------------------------------------------
# property-based: round trip of random valid scenes, robustness to garbage
# --------------------------------------------------------------------------

finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False)


@st.composite
def random_scenes(draw):
    bodies = []
    for i in range(draw(st.integers(1, 3))):
        n_seg = draw(st.integers(1, 3))
        v, t = square_mesh(draw(st.floats(0.01, 10.0)), n_seg, (draw(finite), draw(finite)))
        vel = draw(st.one_of(st.none(), st.tuples(finite, finite).map(np.array)))
        k = draw(st.integers(0, 2))
        pins = (Pin(np.arange(k)),) if k else ()
        mat = Material(
            E=draw(st.floats(1.0, 1e9)),
            nu=draw(st.floats(-0.99, 0.49)),
            density=draw(st.floats(1.0, 1e4)),
            mu=draw(st.floats(0.0, 2.0)),
        )
        bodies.append(Body(f"b{i}", v, t, mat, vel, pins))
    cols = []
    for j in range(draw(st.integers(0, 2))):
        n_t = draw(st.integers(1, 4))
        times = np.cumsum(draw(st.lists(st.floats(1e-3, 10.0), min_size=n_t, max_size=n_t)))
        pos = np.array(draw(st.lists(finite, min_size=n_t * 4, max_size=n_t * 4))).reshape(n_t, 2, 2)
        pos[:, 1] = pos[:, 0] + np.array(draw(st.tuples(st.floats(0.1, 5), st.floats(-5, 5))))
        if draw(st.booleans()):
            times = times - times[0]  # starting at t=0 (written as 'static' when T == 1)
        if not np.all(np.diff(times) > 0):
            continue
        cols.append(Collider(f"c{j}", pos[0].copy(), np.array([[0, 1]]), times, pos, draw(st.floats(0, 1))))
    params = SimParams(
        dt=draw(st.floats(1e-5, 0.1)),
        kappa=draw(st.one_of(st.none(), st.floats(1.0, 1e9))),
        formulation=draw(st.sampled_from(["original", "convergent"])),
        friction_mollifier=draw(st.sampled_from(["linear", "ipc"])),
        gravity=(draw(finite), draw(finite)),
    )
    return Scene(tuple(bodies), tuple(cols), (HalfPlane((0.0, -1.0), (0.0, 1.0), 0.3, "g"),), params)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_scenes())
def test_random_scene_round_trip(scene):
    assert_scenes_equal(scene, load_scene(json.loads(dumps_scene(scene))))


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 20) | st.floats(allow_nan=True) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=8,
)


def _all_paths(node, prefix=()):
    yield prefix
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _all_paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _all_paths(v, (*prefix, i))


RICH_PATHS = [p for p in _all_paths(rich()) if p]


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(RICH_PATHS), json_values)
def test_garbage_anywhere_raises_only_solver_input_error(path, value):
    d = rich()
    _set(d, path, value)
    try:
        load_scene(d)
    except SolverInputError as exc:
        assert str(exc).strip()
