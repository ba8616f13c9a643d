"""Rest shapes closer than dhat: a body whose own boundary comes closer than
dhat to itself at rest (a saw with 1 cm teeth 1 cm apart, dhat = 1 cm) is
valid input, not a start inside the barrier.

The scene's dhat is reduced, for this simulation only, to REST_GAP_FRACTION
of the smallest such gap, repeated while the smaller exclusion radius admits
closer pairs, and the change is reported (``DhatFit.note``).  Why, and the
alternatives: docs/design/15-rest-shapes-closer-than-dhat.md.  Bodies closer
than dhat to *other* bodies are still refused (validate.py).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from .contacts import candidate_stencils
from .distance import distance_sq, point_edge_case
from .model import build_model
from .validate import format_distance

REST_GAP_FRACTION = 0.9  # the dhat chosen: this fraction of the smallest gap at rest
# below this fraction of the scene's dhat the shape is refused as today (a body
# touching itself, not one drawn with a fine feature)
SMALLEST_FRACTION = 0.01
FIT_ROUNDS = 8  # each round only ever lowers dhat; a few suffice


@dataclass(frozen=True)
class DhatFit:
    """The scene as simulated (its dhat possibly reduced), its model, and a
    note saying what was changed and why ("" when nothing was)."""

    scene: object
    model: object
    note: str = ""


def smallest_self_gap(model, x, dhat):
    """(distance, body index) of the closest pair of a body's own boundary
    features that may contact, among those closer than dhat at x; None if
    there is none."""
    st = candidate_stencils(model, x, x, dhat)
    same = ~model.is_collider[st[:, 0]] & (model.owner[st[:, 0]] == model.owner[st[:, 1]])
    st = st[same]
    if len(st) == 0:
        return None
    X = x[st]
    d = np.sqrt(distance_sq(X, point_edge_case(X)))
    k = int(np.argmin(d))
    return (float(d[k]), int(model.owner[st[k, 0]])) if d[k] < dhat else None


def fit_dhat(scene) -> DhatFit:
    """The scene with dhat below every body's smallest gap to itself at rest (see module doc)."""
    model = build_model(scene)
    dhat0 = scene.params.dhat
    found = smallest_self_gap(model, model.rest, dhat0)
    if found is None:
        return DhatFit(scene, model)
    gap, body = found
    fitted = scene
    for _ in range(FIT_ROUNDS):
        dhat = REST_GAP_FRACTION * gap
        if dhat < SMALLEST_FRACTION * dhat0:
            return DhatFit(scene, build_model(scene))  # refused by the geometry check, as before
        fitted = dataclasses.replace(scene, params=dataclasses.replace(scene.params, dhat=dhat))
        model = build_model(fitted)
        found = smallest_self_gap(model, model.rest, dhat)
        if found is None:
            break
        gap, body = found
    else:
        return DhatFit(scene, build_model(scene))
    name = model.names[body]
    note = (
        f"dhat reduced from {dhat0:g} to {format_distance(dhat, dhat0)} m ({REST_GAP_FRACTION:g} x the gap): "
        f"body '{name}' comes within {format_distance(gap, dhat0)} m of itself at rest "
        f"(boundary features more than 2 dhat apart along its outline), closer than dhat={dhat0:g}"
    )
    return DhatFit(fitted, model, note)
