"""A checkpoint of a :class:`~solver.simulation.Simulation`: everything that influences the
steps after it, so that a fresh simulation of the same scene restored from it continues
bit for bit as the original would have (``Simulation.checkpoint()`` /
``Simulation.restore(cp)``; the text form for storing it, e.g. in a .blend:
``cp.to_text()`` / ``Checkpoint.from_text(s)``).

What a step depends on besides the scene:

- positions ``x`` and velocities ``v`` (the inertial predictor x + h v + h^2 g), the simulated
  time (collider targets are sampled at ``time + h``) and the step counter;
- the barrier stiffness kappa (the adaptive one grows when contacts get close) and whether
  it was balanced already (done once, when contact first appears);
- the contact stencils the last step found at ``x`` (the next step's lagged friction and
  first contact set are built from them, in their order: the order of summation);
- the band ordering of the linear solves (reverse Cuthill-McKee, recomputed only when the
  band grows, so it depends on the history; its permutation decides the rounding of the
  banded Cholesky). Caches that are pure functions of the ordering and the matrix pattern
  are rebuilt on demand and give the same bits, so they are not stored.

Everything is stored exactly: arrays as ``.npz`` bytes (float64 bit patterns), the text form
is base64 of those bytes.
"""

from __future__ import annotations

import base64
import hashlib
import io
from dataclasses import dataclass

import numpy as np

from .errors import SolverInputError

FORMAT = "blender-ipc-checkpoint"
VERSION = 1
# BandOrdering state that depends on the history of the solves (see module doc).
ORDERING_FIELDS = ("perm", "inv", "band")


@dataclass(frozen=True)
class Checkpoint:
    """The state of a simulation after ``step_index`` steps (see the module doc)."""

    step_index: int
    time: float
    x: np.ndarray  # (N, 2) positions, bodies then colliders
    v: np.ndarray  # (N, 2) velocities
    kappa: float
    kappa_balanced: bool
    state_stencils: np.ndarray | None  # (s, 3) contact stencils at x, or None
    ordering_perm: np.ndarray | None  # BandOrdering.perm / inv / band
    ordering_inv: np.ndarray | None
    ordering_band: int
    fingerprint: str  # of the model it was taken from (vertices, triangles, masses, dt)

    def to_bytes(self) -> bytes:
        arrays = {
            "meta": np.array([FORMAT, str(VERSION), self.fingerprint]),
            "step_index": np.array(self.step_index, np.int64),
            "time": np.array(self.time, np.float64),
            "x": np.ascontiguousarray(self.x, np.float64),
            "v": np.ascontiguousarray(self.v, np.float64),
            "kappa": np.array(self.kappa, np.float64),
            "kappa_balanced": np.array(self.kappa_balanced, bool),
            "ordering_band": np.array(self.ordering_band, np.int64),
        }
        for name in ("state_stencils", "ordering_perm", "ordering_inv"):
            value = getattr(self, name)
            if value is not None:
                arrays[name] = np.asarray(value, np.int64)
        buf = io.BytesIO()
        np.savez_compressed(buf, **arrays)
        return buf.getvalue()

    @classmethod
    def from_bytes(cls, data: bytes) -> Checkpoint:
        try:
            with np.load(io.BytesIO(data), allow_pickle=False) as z:
                meta = [str(s) for s in z["meta"]]
                if meta[:2] != [FORMAT, str(VERSION)]:
                    raise SolverInputError(f"checkpoint: unknown format {meta[:2]}")
                files = set(z.files)

                def opt(name):
                    return z[name].astype(np.intp) if name in files else None

                return cls(
                    step_index=int(z["step_index"]),
                    time=float(z["time"]),
                    x=z["x"].copy(),
                    v=z["v"].copy(),
                    kappa=float(z["kappa"]),
                    kappa_balanced=bool(z["kappa_balanced"]),
                    state_stencils=opt("state_stencils"),
                    ordering_perm=opt("ordering_perm"),
                    ordering_inv=opt("ordering_inv"),
                    ordering_band=int(z["ordering_band"]),
                    fingerprint=meta[2],
                )
        except (OSError, ValueError, KeyError) as err:
            if isinstance(err, SolverInputError):
                raise
            raise SolverInputError(f"checkpoint: unreadable data ({err})") from err

    def to_text(self) -> str:
        return base64.b64encode(self.to_bytes()).decode("ascii")

    @classmethod
    def from_text(cls, text: str) -> Checkpoint:
        try:
            data = base64.b64decode(text.encode("ascii"), validate=True)
        except (ValueError, UnicodeEncodeError) as err:
            raise SolverInputError(f"checkpoint: not base64 text ({err})") from err
        return cls.from_bytes(data)


def model_fingerprint(model, params) -> str:
    """What a checkpoint must match: vertex count, rest positions, triangles, masses, which
    vertices are collider vertices, and the time step (not the colliders' sampled motion,
    which a longer bake samples further)."""
    h = hashlib.sha256()
    for array in (model.rest, model.elements.tris, model.mass, model.is_collider):
        a = np.ascontiguousarray(array)
        h.update(f"{a.dtype.str}{a.shape}".encode())
        h.update(a.tobytes())
    h.update(np.float64(params.dt).tobytes())
    return h.hexdigest()


def take(sim) -> Checkpoint:
    """The checkpoint of ``sim`` (copies: later steps do not change it)."""
    o = sim._newton.ordering
    stencils = sim._state_stencils
    return Checkpoint(
        step_index=int(sim.step_index),
        time=float(sim.time),
        x=sim.x.copy(),
        v=sim.v.copy(),
        kappa=float(sim.kappa),
        kappa_balanced=bool(sim.kappa_balanced),
        state_stencils=None if stencils is None else np.array(stencils, np.intp),
        ordering_perm=None if o.perm is None else np.array(o.perm, np.intp),
        ordering_inv=None if o.inv is None else np.array(o.inv, np.intp),
        ordering_band=int(o.band),
        fingerprint=model_fingerprint(sim.model, sim.params),
    )


def restore(sim, cp: Checkpoint):
    """Put ``sim`` (a simulation of the same scene) in the state of ``cp``. Raises
    SolverInputError when the checkpoint belongs to another scene."""
    if cp.fingerprint != model_fingerprint(sim.model, sim.params):
        raise SolverInputError(
            "checkpoint: it was taken from a different scene "
            "(vertices, triangles, masses or time step differ)"
        )
    if cp.x.shape != sim.x.shape or cp.v.shape != sim.v.shape:
        raise SolverInputError(f"checkpoint: {cp.x.shape[0]} vertices, the scene has {sim.x.shape[0]}")
    sim.x = np.array(cp.x, np.float64)
    sim.v = np.array(cp.v, np.float64)
    sim.time = float(cp.time)
    sim.step_index = int(cp.step_index)
    sim.kappa = float(cp.kappa)
    sim.kappa_balanced = bool(cp.kappa_balanced)
    sim._state_stencils = None if cp.state_stencils is None else np.array(cp.state_stencils, np.intp)
    # A fresh ordering object (its pattern caches start empty and are rebuilt on demand) with
    # the history-dependent permutation of the checkpoint.
    ordering = type(sim._newton.ordering)()
    ordering.perm = None if cp.ordering_perm is None else np.array(cp.ordering_perm, np.intp)
    ordering.inv = None if cp.ordering_inv is None else np.array(cp.ordering_inv, np.intp)
    ordering.band = int(cp.ordering_band)
    sim._newton.ordering = ordering
