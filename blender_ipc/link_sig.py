"""What links, collision groups and pin settings add to the bake signature (signature.py):
only what differs from the defaults, so that bakes made before these settings existed stay
current (and can be continued)."""

from __future__ import annotations

from .common import fcurves_of
from .links import N_GROUPS, anchor_objects, layer_objects, link_set

_DEFAULT_GROUPS = (True,) + (False,) * (N_GROUPS - 1)
_PIN_DEFAULTS = {"pin_strength": "HARD", "pin_stiffness": 1000.0, "pin_engaged": True}
_LINK_FIELDS = (
    "kind",
    "stiffness",
    "damping",
    "use_length",
    "length",
    "breakable",
    "break_threshold",
    "collide",
)


def later_object_text(obj) -> str:
    """The object's collision groups, static friction and pin settings as text, '' at their
    defaults (a keyed
    Engaged by its F-curve, in the object's animation, not by its value at the current frame)."""
    s = obj.ipc
    text = ""
    groups = tuple(getattr(s, "collision_groups", _DEFAULT_GROUPS))
    if groups != _DEFAULT_GROUPS:
        text += f"groups{[i for i, on in enumerate(groups) if on]}"
    if getattr(s, "use_static_friction", False):
        text += f"static_friction={s.static_friction};"
    keyed = {fc.data_path for fc in fcurves_of(obj)}
    for name, default in _PIN_DEFAULTS.items():
        if f"ipc.{name}" in keyed:
            text += f"{name} keyed;"
            continue
        value = getattr(s, name, default)
        if value != default:
            text += f"{name}={value};"
    return text


def link_empties_of(scene, bodies) -> list:
    """The link Empties that hold one of the bodies: the bake's own set (links.link_set)."""
    return link_set(layer_objects(scene), bodies)[0]


def link_text(empty) -> str:
    """A link Empty's settings and the names of its objects (and anchors, when set), as text."""
    s = empty.ipc_link
    names = [o.name if o is not None else "" for o in (s.object1, s.object2)]
    text = f"{names}" + "".join(f"{name}={getattr(s, name)};" for name in _LINK_FIELDS)
    anchors = anchor_objects(empty)
    return text + (f"anchors={[a.name for a in anchors]};" if anchors else "")


def moved_objects(empty) -> list:
    """The objects whose motion the link's signature covers: its Empty and its anchors."""
    return [empty, *anchor_objects(empty)]
