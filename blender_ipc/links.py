"""Links, set up as Blender's Rigid Body Constraint is (issue 32, point 1): an Empty carries
the link (``Object.ipc_link``: type, Object 1, Object 2, ...), read here into solver
:class:`~solver.scene.Link` s, plus the bodies' collision groups (``Object.ipc.collision_groups``,
20 booleans as Blender's Collision Collections) as the solver's group numbers.

Where the ends are:

- Pin and Weld: at the Empty's location (the pivot) at the start frame, on Object 1 and on
  Object 2 (the pivot must lie inside both: linked bodies that do not collide may overlap);
  without Object 2 the second end is the Empty itself, sampled per substep, so an animated
  Empty drags Object 1. With Object 2 set only the start frame's pivot counts (as a Rigid Body
  Constraint's frame): an animated Empty is named in the bake's note;
- Spring and Rope: at the Anchor 1 and Anchor 2 objects (an Empty parented to the body, say)
  at the start frame, each on its body; an Anchor left empty is the body's Origin (Set Origin
  moves it). Without Object 2 the second end is the Empty, as for a Pin.

Everything is read at the start frame in the simulation plane, as the bodies are. Which link
Empties count: those of the view layer (Blender evaluates only its objects), for the bake and
its signature alike (:func:`link_set`); a link without Object 1 (its object was deleted) is
skipped with a note naming the Empty, as Blender's Rigid Body skips such a constraint.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from .common import PLANE_AXES, IPCError
from .solver.links import barycentric
from .solver.scene import Link, LinkAnchor

N_GROUPS = 20  # as Blender's Rigid Body Collision Collections
KINDS = {"PIN": "pin", "WELD": "weld", "SPRING": "spring", "ROPE": "rope"}
TYPE_NAMES = {"PIN": "Pin", "WELD": "Weld", "SPRING": "Spring", "ROPE": "Rope"}


def link_empties(objs) -> list:
    """The Empties of objs that carry an IPC link (sorted by name)."""
    return sorted((o for o in objs if is_link(o)), key=lambda o: o.name)


def is_link(obj) -> bool:
    settings = getattr(obj, "ipc_link", None)
    return obj.type == "EMPTY" and settings is not None and settings.kind != "NONE"


def _ends(empty) -> list:
    s = empty.ipc_link
    return [o for o in (s.object1, s.object2) if o is not None]


def link_problem(empty, bodies=None) -> str:
    """Why the link on empty cannot be simulated, in the panel's words, or '' (cheap)."""
    s = empty.ipc_link
    name = f"IPC link '{empty.name}'"
    if s.object1 is None:
        return f"{name}: Object 1 is not set (or its object was deleted); pick the body it holds"
    for label, obj in (("Object 1", s.object1), ("Object 2", s.object2)):
        if obj is None:
            continue
        if obj.ipc.role != "BODY" or obj.type != "MESH":
            return (
                f"{name}: {label} '{obj.name}' is not a deformable body (its IPC role is "
                f"{obj.ipc.role.title()}); give it the role Deformable Body or pick another object"
            )
        if bodies is not None and obj not in bodies:
            return (
                f"{name}: {label} '{obj.name}' is not baked with the other bodies; select it "
                "too (or bake the scene)"
            )
    if s.object1 == s.object2:
        return f"{name}: Object 1 and Object 2 are both '{s.object1.name}'; pick two bodies"
    if s.kind == "SPRING" and not s.stiffness > 0:
        return f"{name}: Stiffness must be above 0 N/m"
    return ""


def layer_objects(scene) -> list:
    """The objects of the view layer being worked in (the one Blender evaluates: an Empty in
    an excluded collection does not move), or the scene's without one."""
    import bpy

    layer = bpy.context.view_layer if bpy.context.scene == scene else None
    return list(layer.objects) if layer is not None else list(scene.objects)


def link_set(objs, bodies) -> tuple[list, list[str]]:
    """(the link Empties of objs that hold one of the bodies, notes naming those skipped: a
    link without Object 1, as Blender's Rigid Body skips a constraint whose object is gone).
    The bake and the bake signature both take their links from here."""
    used, notes = [], []
    for empty in link_empties(objs):
        if empty.ipc_link.object1 is None:
            notes.append(f"IPC link '{empty.name}' has no Object 1 (deleted, or never picked) and is ignored")
        elif any(o in bodies for o in _ends(empty)):
            used.append(empty)
    return used, notes


def linked(objs, bodies) -> tuple[list, list[str]]:
    """:func:`link_set`, checked: raises IPCError for a link that cannot be simulated (nothing
    is changed)."""
    used, notes = link_set(objs, bodies)
    for empty in used:
        problem = link_problem(empty, bodies)
        if problem:
            raise IPCError(problem)
    return used, notes


def anchor_objects(empty) -> list:
    """The Anchor objects a Spring or a Rope uses (Anchor 2 only with Object 2)."""
    s = empty.ipc_link
    if s.kind not in ("SPRING", "ROPE"):
        return []
    pairs = ((s.object1, s.anchor1), (s.object2, s.anchor2))
    return [anchor for body, anchor in pairs if body is not None and anchor is not None]


def anchor_points(empties) -> dict:
    """{anchor object name: its world matrix} now (the bake calls it at the start frame)."""
    from .common import matrix_of

    return {a.name: matrix_of(a.matrix_world) for e in empties for a in anchor_objects(e)}


@dataclass(frozen=True)
class LinkInput:
    """A link as read at the start frame: its Empty's name and the solver Link's fields."""

    name: str
    link: Link


def _plane_point(matrix, plane) -> np.ndarray:
    u, v, _ = PLANE_AXES[plane]
    return np.array([matrix[u, 3], matrix[v, 3]], float)


def _anchor(body, point, what, empty_name) -> LinkAnchor:
    """A material point of the solver body at the plane point; IPCError when it is outside."""
    v, t = np.asarray(body.vertices, float), np.asarray(body.triangles, np.intp)
    w = barycentric(point, v[t[:, 0]], v[t[:, 1]], v[t[:, 2]])
    inside = np.all(w >= -1e-9, axis=1)
    if not inside.any():
        raise IPCError(
            f"IPC link '{empty_name}': {what} is outside '{body.name}' "
            f"(at {point[0]:.3g}, {point[1]:.3g} in the plane); move it onto the body"
        )
    i = int(np.argmax(inside))
    w = np.clip(w[i], 0.0, 1.0)
    return LinkAnchor(body=body.name, triangle=i, barycentric=tuple((w / w.sum()).tolist()))


def _end_point(empty, k, origins, anchors, plane):
    """(plane point, its words for a message) of a Spring's or Rope's end on Object k: its
    Anchor k at the start frame, or the Origin of the body."""
    s = empty.ipc_link
    body, anchor = (s.object1, s.anchor1) if k == 1 else (s.object2, s.anchor2)
    if body is None:
        return None, ""
    if anchor is not None:
        return _plane_point(anchors[anchor.name], plane), f"Anchor {k} '{anchor.name}'"
    return _plane_point(origins[body.name], plane), f"the Origin of '{body.name}'"


def read_link(empty, solver_bodies, origins, track, times, plane, anchors=None) -> Link:
    """The solver Link of the Empty. solver_bodies: name -> solver Body (start-frame rest
    space); origins: name -> the body's world matrix at the start frame; track: (T, 4, 4) the
    Empty's world matrices sampled at times (T,); anchors: :func:`anchor_points` at the start
    frame."""
    s = empty.ipc_link
    kind = KINDS[s.kind]
    b1 = solver_bodies[s.object1.name]
    b2 = solver_bodies[s.object2.name] if s.object2 is not None else None
    pivot = _plane_point(track[0], plane)
    if kind in ("pin", "weld"):
        p1 = p2 = pivot
        what1 = what2 = "its location (the pivot)"
    else:
        (p1, what1), (p2, what2) = (_end_point(empty, k, origins, anchors, plane) for k in (1, 2))
        if b2 is None:
            p2 = pivot
    a = _anchor(b1, p1, what1, empty.name)
    if b2 is not None:
        b = _anchor(b2, p2, what2, empty.name)
    else:
        u, v, _ = PLANE_AXES[plane]
        positions = track[:, [u, v], 3]
        moving = bool(np.any(positions != positions[0]))
        b = (
            LinkAnchor(times=np.asarray(times, float), positions=positions)
            if moving
            else LinkAnchor(position=tuple(positions[0].tolist()))
        )
    length = None
    if kind in ("spring", "rope") and s.use_length:
        length = float(s.length)
    return Link(
        name=empty.name,
        kind=kind,
        a=a,
        b=b,
        length=length,
        stiffness=float(s.stiffness) if kind == "spring" else None,
        damping=float(s.damping) if kind == "spring" else 0.0,
        break_force=float(s.break_threshold) if s.breakable else None,
        collide=bool(s.collide),
    )


def group_numbers(obj) -> tuple[int, ...]:
    """The object's collision groups (indices of its 20 booleans); (0,) without settings."""
    flags = getattr(obj.ipc, "collision_groups", None)
    if flags is None:
        return (0,)
    return tuple(i for i, on in enumerate(flags) if on)


# --------------------------------------------------------------------------- pins that let go


def _engaged_curve(obj):
    from .common import fcurves_of

    for fc in fcurves_of(obj):
        if fc.data_path == "ipc.pin_engaged":
            return fc
    return None


def pins_are_links(obj) -> bool:
    """Whether obj's Pinned Group is simulated as links (a pull, or an Engaged setting that is
    keyframed or off) instead of hard prescribed vertices."""
    s = obj.ipc
    return bool(s.pin_group) and (
        s.pin_strength == "PULL" or not s.pin_engaged or _engaged_curve(obj) is not None
    )


def pin_problem(obj) -> str:
    """Why obj's pin settings cannot be simulated, in the panel's words, or ''."""
    s = obj.ipc
    if s.pin_group and s.pin_strength == "PULL" and not s.pin_stiffness > 0:
        return (
            f"'{obj.name}': Pull Stiffness must be above 0 N/m (it is {s.pin_stiffness:g}); "
            "raise it, or set Pin Strength to Hard"
        )
    return ""


def _engaged_samples(obj, times, frame_start, fps):
    """(T,) bool: the Engaged setting at each sample time (its keyframes evaluated there)."""
    fc = _engaged_curve(obj)
    if fc is None:
        return np.full(len(times), bool(obj.ipc.pin_engaged))
    frames = frame_start + np.asarray(times) * fps
    return np.array([fc.evaluate(float(f)) >= 0.5 for f in frames], bool)


def pin_links(obj, body, frame_start, fps) -> tuple:
    """The links holding body's pinned vertices (its solver Pin) to their animated places:
    zero-length springs of the rigid default (Hard) or the Pull Stiffness each, engaged as the
    object's Engaged setting is keyed."""
    (pin,) = body.pins
    s = obj.ipc
    tris = np.asarray(body.triangles)
    engaged = _engaged_samples(obj, pin.times, frame_start, fps)
    out = []
    for k, vertex in enumerate(np.asarray(pin.indices)):
        tri, corner = np.argwhere(tris == vertex)[0]
        w = np.zeros(3)
        w[corner] = 1.0
        out.append(
            Link(
                name=f"{obj.name} pin {vertex}",
                kind="pin",
                a=LinkAnchor(body=body.name, triangle=int(tri), barycentric=tuple(w.tolist())),
                b=LinkAnchor(times=np.asarray(pin.times, float), positions=np.asarray(pin.positions)[:, k]),
                stiffness=float(s.pin_stiffness) if s.pin_strength == "PULL" else None,
                engaged_times=np.asarray(pin.times, float),
                engaged=engaged,
            )
        )
    return tuple(out)


def _with_pin_links(bodies, body_objs, frame_start, fps):
    """(bodies with the pins that are links taken out, those links)."""
    objs = {o.name: o for o in body_objs}
    out, extra = [], []
    for body in bodies:
        obj = objs.get(body.name)
        if obj is not None and body.pins and pins_are_links(obj):
            problem = pin_problem(obj)
            if problem:
                raise IPCError(problem)
            extra += pin_links(obj, body, frame_start, fps)
        out.append(replace(body, pins=()) if obj is not None and pins_are_links(obj) else body)
    return tuple(out), tuple(extra)


# --------------------------------------------------------------------------- the scene


@dataclass(frozen=True)
class Samples:
    """How the bake sampled the scene: mats (T, n, 4, 4) world matrices of the bodies, the
    colliders and then the link Empties at times (T,) [s from the start frame]; the plane, the
    start frame, the frame rate and the Spring and Rope anchors at the start frame
    (:func:`anchor_points`)."""

    mats: np.ndarray
    times: np.ndarray
    plane: str
    frame_start: int
    fps: float
    anchors: dict = field(default_factory=dict)


def unused_motion(empties, tracks) -> list[str]:
    """Notes naming the link Empties that move although their motion is not used: with
    Object 2 set, a Pin's or a Weld's pivot is its place at the start frame (as a Rigid Body
    Constraint's frame), and a Spring's or a Rope's ends are its anchors. tracks: (T, n, 4, 4)
    the Empties' sampled world matrices."""
    moving = np.any(tracks[:, :, :3, 3] != tracks[:1, :, :3, 3], axis=(0, 2))
    out = []
    for empty, moves in zip(empties, moving, strict=True):
        s = empty.ipc_link
        if not moves or s.object2 is None:
            continue
        used = "only its place at the start frame counts (the pivot)"
        if s.kind in ("SPRING", "ROPE"):
            used = "its place is not used (the ends are the anchors)"
        out.append(
            f"IPC link '{empty.name}' moves, but with Object 2 set {used}; clear Object 2 to "
            "drag Object 1 with it"
        )
    return out


def compose(solver_scene, body_objs, collider_objs, empties, samples: Samples):
    """(the solver scene with the links of the Empties, the pins that are links and every
    body's and collider's collision groups; notes on the links, :func:`unused_motion`)."""
    mats, times, plane = samples.mats, samples.times, samples.plane
    groups = {o.name: group_numbers(o) for o in list(body_objs) + list(collider_objs)}
    for name, g in groups.items():
        if not g:
            raise IPCError(
                f"'{name}': no Collision Group is on, so it would collide with nothing; "
                "switch at least one on"
            )
    bodies = tuple(replace(b, collision_groups=groups.get(b.name, (0,))) for b in solver_scene.bodies)
    colliders = tuple(replace(c, collision_groups=groups.get(c.name, (0,))) for c in solver_scene.colliders)
    bodies, pins = _with_pin_links(bodies, body_objs, samples.frame_start, samples.fps)
    if not empties and not pins:
        return replace(solver_scene, bodies=bodies, colliders=colliders), []
    by_name = {b.name: b for b in bodies}
    origins = {o.name: mats[0, j] for j, o in enumerate(body_objs)}
    first = len(body_objs) + len(collider_objs)
    tracks = mats[:, first : first + len(empties)]
    new_links = tuple(
        read_link(e, by_name, origins, tracks[:, i], times, plane, samples.anchors)
        for i, e in enumerate(empties)
    )
    scene = replace(solver_scene, bodies=bodies, colliders=colliders, links=new_links + pins)
    return scene, unused_motion(empties, tracks)
