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
- the linear solver's ordering object (reverse Cuthill-McKee permutation, recomputed only when
  the band grows, and any analysis a solver keeps on it between solves, such as a sparse
  Cholesky's nested dissection and fronts, reused while the pattern allows): it depends on the
  history of the solves and decides the order of the arithmetic, so the whole object is
  stored as it is (:func:`snapshot`: its attributes, recursively, as long as they are numbers,
  strings, numpy arrays, lists, tuples, dicts and objects of this package's classes);
- whether Newton starts the next step on the projected Hessian (large systems whose exact
  Hessian the last step's start showed indefinite).

Everything is stored exactly: arrays as ``.npz`` bytes (float64 bit patterns), the text form
is base64 of those bytes.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import importlib
import io
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .errors import SolverInputError

FORMAT = "blender-ipc-checkpoint"
VERSION = 1
PACKAGE = __name__.rsplit(".", 1)[0]  # "solver" (or "blender_ipc.solver" in the add-on)


def source_hash(directory: Path) -> str:
    """Hash of the solver package's source files in ``directory``.  A checkpoint continues
    bit for bit only in the solver that took it: other code may order its arithmetic
    differently, and the analysis kept on the ordering object (see the module doc) is stored
    by its attributes, which another version may not have.  Line endings are normalised (an
    unpacked add-on and a checkout must agree)."""
    digest = hashlib.sha256()
    for path in sorted(Path(directory).glob("*.py")):
        digest.update(path.name.encode())
        digest.update(path.read_bytes().replace(b"\r\n", b"\n"))
    return digest.hexdigest()[:16]


@functools.cache
def solver_build() -> str:
    """This solver's :func:`source_hash`, computed on first use (only checkpoints need it, not
    importing the solver)."""
    return source_hash(Path(__file__).parent)


class OtherSolverVersion(SolverInputError):
    """The checkpoint was taken by another version of the solver (see :func:`source_hash`)."""


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
    ordering: Snapshot  # of the linear solver's ordering object (Newton.ordering)
    fingerprint: str  # of the model it was taken from (vertices, triangles, masses, dt)
    start_projected: bool = False  # Newton.start_projected: the next solve starts projected

    def to_bytes(self) -> bytes:
        arrays = {
            "meta": np.array([FORMAT, str(VERSION), self.fingerprint, solver_build()]),
            "step_index": np.array(self.step_index, np.int64),
            "time": np.array(self.time, np.float64),
            "x": np.ascontiguousarray(self.x, np.float64),
            "v": np.ascontiguousarray(self.v, np.float64),
            "kappa": np.array(self.kappa, np.float64),
            "kappa_balanced": np.array(self.kappa_balanced, bool),
            "ordering": np.array(self.ordering.structure),
            "start_projected": np.array(self.start_projected, bool),
        }
        if self.state_stencils is not None:
            arrays["state_stencils"] = np.asarray(self.state_stencils, np.int64)
        for name, a in self.ordering.arrays.items():
            arrays[f"ordering.{name}"] = a
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
                if meta[3:4] != [solver_build()]:
                    raise OtherSolverVersion(
                        "checkpoint: taken by another version of the solver; continuing it would "
                        "not give the steps of a simulation run in one go"
                    )
                files = set(z.files)
                ordering = Snapshot(
                    str(z["ordering"]),
                    {f.split(".", 1)[1]: z[f].copy() for f in z.files if f.startswith("ordering.")},
                )
                return cls(
                    step_index=int(z["step_index"]),
                    time=float(z["time"]),
                    x=z["x"].copy(),
                    v=z["v"].copy(),
                    kappa=float(z["kappa"]),
                    kappa_balanced=bool(z["kappa_balanced"]),
                    state_stencils=z["state_stencils"].astype(np.intp) if "state_stencils" in files else None,
                    ordering=ordering,
                    fingerprint=meta[2],
                    start_projected=bool(z["start_projected"]),
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
    stencils = sim._state_stencils
    return Checkpoint(
        step_index=int(sim.step_index),
        time=float(sim.time),
        x=sim.x.copy(),
        v=sim.v.copy(),
        kappa=float(sim.kappa),
        kappa_balanced=bool(sim.kappa_balanced),
        state_stencils=None if stencils is None else np.array(stencils, np.intp),
        ordering=snapshot(sim._newton.ordering),
        fingerprint=model_fingerprint(sim.model, sim.params),
        start_projected=bool(sim._newton.start_projected),
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
    sim._newton.ordering = cp.ordering.restore()
    sim._newton.start_projected = bool(cp.start_projected)


# ----------------------------------------------------------------------------- object snapshots


@dataclass(frozen=True)
class Snapshot:
    """An object of this package (with everything it refers to) as JSON text and numpy arrays:
    numbers (floats by their hex form: exact, inf and nan included), strings, None, arrays of
    numbers, lists, tuples, dicts and objects of this package's classes (their instance
    dictionaries), shared references and cycles kept. :meth:`restore` builds an equal object;
    it creates only classes of this package and runs none of their code (no __init__), so a
    snapshot from a file cannot run anything else."""

    structure: str
    arrays: dict

    def restore(self):
        return _Decoder(self.arrays).decode(json.loads(self.structure))


def snapshot(obj) -> Snapshot:
    """The :class:`Snapshot` of obj; TypeError names an attribute of a type it cannot hold."""
    enc = _Encoder()
    return Snapshot(json.dumps(enc.encode(obj, "ordering"), separators=(",", ":")), enc.arrays)


class _Encoder:
    def __init__(self):
        self.arrays, self.memo, self.keep = {}, {}, []

    def encode(self, v, path):
        if v is None or isinstance(v, (bool, str)):
            return v
        if isinstance(v, (int, np.integer)) and not isinstance(v, np.bool_):
            return {"int": int(v)}
        if isinstance(v, (float, np.floating)):
            return {"float": float(v).hex()}
        if isinstance(v, np.bool_):
            return bool(v)
        ref = self.memo.get(id(v))
        if ref is not None:
            return {"ref": ref}
        self.memo[id(v)] = ref = len(self.memo)
        self.keep.append(v)  # ids stay unique while encoding
        if isinstance(v, np.ndarray):
            if v.dtype.kind not in "biufc":
                raise TypeError(f"checkpoint: {path} is an array of {v.dtype}")
            name = str(len(self.arrays))
            self.arrays[name] = np.array(v)
            return {"id": ref, "array": name}
        if isinstance(v, (list, tuple)):
            kind = "list" if isinstance(v, list) else "tuple"
            return {"id": ref, kind: [self.encode(x, f"{path}[{i}]") for i, x in enumerate(v)]}
        if isinstance(v, dict):
            items = [[self.encode(k, f"{path} key"), self.encode(x, f"{path}[{k!r}]")] for k, x in v.items()]
            return {"id": ref, "dict": items}
        cls = type(v)
        if cls.__module__.split(".")[: len(PACKAGE.split("."))] == PACKAGE.split(".") and hasattr(
            v, "__dict__"
        ):
            state = {k: self.encode(x, f"{path}.{k}") for k, x in vars(v).items()}
            return {"id": ref, "object": f"{cls.__module__}:{cls.__qualname__}", "state": state}
        raise TypeError(f"checkpoint: {path} is a {cls.__module__}.{cls.__qualname__}, which it cannot store")


class _Decoder:
    def __init__(self, arrays):
        self.arrays, self.memo = arrays, {}

    def decode(self, v):
        if not isinstance(v, dict):
            return v
        if "int" in v:
            return int(v["int"])
        if "float" in v:
            return float.fromhex(v["float"])
        if "ref" in v:
            return self.memo[v["ref"]]
        ref = v["id"]
        if "array" in v:
            out = self.memo[ref] = np.array(self.arrays[v["array"]])
            return out
        if "list" in v:
            out = self.memo[ref] = []
            out.extend(self.decode(x) for x in v["list"])
            return out
        if "tuple" in v:
            out = self.memo[ref] = tuple(self.decode(x) for x in v["tuple"])
            return out
        if "dict" in v:
            out = self.memo[ref] = {}
            out.update((self.decode(k), self.decode(x)) for k, x in v["dict"])
            return out
        module, qualname = v["object"].split(":")
        parts = module.split(".")
        if "solver" not in parts:
            raise SolverInputError(f"checkpoint: class {v['object']} is not the solver's")
        # the same module of this copy of the solver (a checkpoint of the stand-alone solver
        # restores in the add-on's copy and back)
        suffix = parts[len(parts) - parts[::-1].index("solver") :]
        cls = importlib.import_module(".".join([PACKAGE, *suffix]))
        for part in qualname.split("."):
            cls = getattr(cls, part)
        if not isinstance(cls, type):
            raise SolverInputError(f"checkpoint: {v['object']} is not a class")
        out = self.memo[ref] = cls.__new__(cls)
        out.__dict__.update({k: self.decode(x) for k, x in v["state"].items()})
        return out
