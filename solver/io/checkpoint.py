"""A checkpoint of a :class:`~solver.simulation.Simulation`: the declared state a step
continues from, so that a fresh simulation of the same scene restored from it continues
bit for bit as the original would have (``Simulation.checkpoint()`` /
``Simulation.restore(cp)``; the text form for storing it, e.g. in a .blend:
``cp.to_text()`` / ``Checkpoint.from_text(s)``).

What a step depends on besides the scene (the fields of :class:`Checkpoint`):

- positions ``x`` and velocities ``v`` (the inertial predictor x + h v + h^2 g), the simulated
  time (collider targets are sampled at ``time + h``) and the step counter;
- the barrier stiffness kappa (the adaptive one grows when contacts get close) and whether
  it was balanced already (done once, when contact first appears);
- the contact stencils the last step found at ``x`` (the next step's lagged friction and
  first contact set are built from them, in their order: the order of summation);
- the linear solver's orderings (:class:`~solver.linsolve.linalg.BandOrderingState`: the reverse
  Cuthill-McKee permutation, recomputed only when the band grows, and the sparse
  Cholesky's nested dissection and analysed vertex pairs,
  :class:`~solver.linsolve.sparse_cholesky.SparseCholeskyState`, reused while the pattern allows):
  they depend on the history of the solves and decide the order of the arithmetic;
- whether Newton starts the next step on the projected Hessian (large systems whose exact
  Hessian the last step's start showed indefinite);
- which links still hold (breakable links break), stored only for scenes with links (absent:
  all hold, which is all a checkpoint taken before links existed can mean: the state format
  is unchanged);
- which colliders are stopped where the bodies stopped them (``Simulation._stopped_colliders``,
  kin-group indices), stored only while one is (absent: none, which is all a checkpoint taken
  before stops existed can mean: the state format is unchanged, as for the links).

Everything is stored exactly, field by field: arrays as ``.npz`` bytes (float64 bit
patterns), the text form is base64 of those bytes.

Versions: a checkpoint names its :data:`STATE_FORMAT` (the fields above and their
meaning) and the :func:`solver_build` that took it.  Another solver build continues a
checkpoint of the same state format (an add-on update that left the state alone: a
build whose arithmetic differs continues from the same state, its later steps those it
computes); a checkpoint of another state format is refused (:class:`OtherStateFormat`):
simulate again from the start.  Change STATE_FORMAT with any change of the fields or of
what they mean.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import SolverInputError
from ..linsolve import BandOrdering, BandOrderingState, SparseCholeskyState

FORMAT = "blender-ipc-checkpoint"
# 1: the ordering object stored by its attributes (a generic object snapshot)
# 2: the declared state of the orderings (BandOrderingState)
STATE_FORMAT = 2


def source_hash(directory: Path) -> str:
    """Hash of the solver package's source files in ``directory`` and its subpackages
    (names relative to it, line endings normalised: an unpacked add-on and a checkout
    agree).  Recorded in a checkpoint as the build that took it."""
    root = Path(directory)
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py"), key=lambda p: p.relative_to(root).as_posix()):
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(path.read_bytes().replace(b"\r\n", b"\n"))
    return digest.hexdigest()[:16]


@functools.cache
def solver_build() -> str:
    """This solver's :func:`source_hash`, computed on first use (only checkpoints need it, not
    importing the solver)."""
    return source_hash(Path(__file__).parent.parent)  # the solver package (this is solver/io/)


class OtherStateFormat(SolverInputError):
    """The checkpoint's state format is not this solver's :data:`STATE_FORMAT`."""

    def __init__(self, found):
        self.found, self.expected = found, STATE_FORMAT
        super().__init__(
            f"checkpoint: its state format is {found}, this solver reads format {STATE_FORMAT} "
            "(taken by another version of the solver); it cannot be continued: simulate again "
            "from the start"
        )


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
    ordering: BandOrderingState  # of the linear solver's orderings (Newton.ordering)
    fingerprint: str  # of the model it was taken from (vertices, triangles, masses, dt)
    start_projected: bool = False  # Newton.start_projected: the next solve starts projected
    solver_build: str = ""  # the solver_build() that took it
    links_active: np.ndarray | None = None  # (n_links,) bool: which links hold; None: all
    stopped_colliders: tuple[int, ...] = ()  # the model's kin_groups held where bodies stopped them

    def to_bytes(self) -> bytes:
        arrays = {
            "meta": np.array([FORMAT, str(STATE_FORMAT), self.fingerprint, self.solver_build]),
            "step_index": np.array(self.step_index, np.int64),
            "time": np.array(self.time, np.float64),
            "x": np.ascontiguousarray(self.x, np.float64),
            "v": np.ascontiguousarray(self.v, np.float64),
            "kappa": np.array(self.kappa, np.float64),
            "kappa_balanced": np.array(self.kappa_balanced, bool),
            "start_projected": np.array(self.start_projected, bool),
        }
        _put(
            arrays, "state_stencils", None if self.state_stencils is None else np.asarray(self.state_stencils)
        )
        _put_ordering(arrays, self.ordering)
        _put(
            arrays, "links_active", None if self.links_active is None else np.asarray(self.links_active, bool)
        )
        if self.stopped_colliders:
            arrays["stopped_colliders"] = np.asarray(self.stopped_colliders, np.int64)
        buf = io.BytesIO()
        np.savez_compressed(buf, **arrays)
        return buf.getvalue()

    @classmethod
    def from_bytes(cls, data: bytes) -> Checkpoint:
        try:
            with np.load(io.BytesIO(data), allow_pickle=False) as z:
                meta = [str(s) for s in z["meta"]]
                if meta[0] != FORMAT:
                    raise SolverInputError(f"checkpoint: unknown format {meta[0]!r}")
                if meta[1] != str(STATE_FORMAT):
                    raise OtherStateFormat(meta[1])
                stencils = _get(z, "state_stencils")
                return cls(
                    step_index=int(z["step_index"]),
                    time=float(z["time"]),
                    x=z["x"].copy(),
                    v=z["v"].copy(),
                    kappa=float(z["kappa"]),
                    kappa_balanced=bool(z["kappa_balanced"]),
                    state_stencils=None if stencils is None else stencils.astype(np.intp),
                    ordering=_get_ordering(z),
                    fingerprint=meta[2],
                    start_projected=bool(z["start_projected"]),
                    solver_build=meta[3],
                    links_active=_get(z, "links_active"),
                    stopped_colliders=_get_ints(z, "stopped_colliders"),
                )
        except (OSError, ValueError, KeyError, IndexError) as err:
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


# ----------------------------------------------------------------------------- fields <-> arrays
# A field that is None is left out of the file.


def _put(arrays, name, value):
    if value is not None:
        arrays[name] = np.asarray(value)


def _get(z, name):
    return z[name].copy() if name in z.files else None


def _get_ints(z, name):
    return () if name not in z.files else tuple(int(i) for i in z[name])


def _get_int(z, name):
    return None if name not in z.files else int(z[name])


def _put_ordering(arrays, o: BandOrderingState):
    s = o.sparse
    _put(arrays, "ordering.perm", o.perm)
    _put(arrays, "ordering.band", np.int64(o.band))
    _put(arrays, "ordering.sparse_n", None if o.sparse_n is None else np.int64(o.sparse_n))
    _put(arrays, "ordering.sparse.n", None if s.n is None else np.int64(s.n))
    _put(arrays, "ordering.sparse.order", s.order)
    _put(arrays, "ordering.sparse.bounds", s.bounds)
    _put(arrays, "ordering.sparse.edges", s.edges)
    _put(arrays, "ordering.sparse.dissection_flops", np.float64(s.dissection_flops))
    calls = s.calls_since_analysis
    _put(arrays, "ordering.sparse.calls_since_analysis", None if calls is None else np.int64(calls))


def _get_ordering(z) -> BandOrderingState:
    sparse = SparseCholeskyState(
        n=_get_int(z, "ordering.sparse.n"),
        order=_get(z, "ordering.sparse.order"),
        bounds=_get(z, "ordering.sparse.bounds"),
        edges=_get(z, "ordering.sparse.edges"),
        dissection_flops=float(z["ordering.sparse.dissection_flops"]),
        calls_since_analysis=_get_int(z, "ordering.sparse.calls_since_analysis"),
    )
    perm = _get(z, "ordering.perm")
    return BandOrderingState(
        perm=None if perm is None else perm.astype(np.intp),
        band=int(z["ordering.band"]),
        sparse_n=_get_int(z, "ordering.sparse_n"),
        sparse=sparse,
    )


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
        ordering=sim._newton.ordering.state(),
        fingerprint=model_fingerprint(sim.model, sim.params),
        start_projected=bool(sim._newton.start_projected),
        solver_build=solver_build(),
        links_active=sim.link_active.copy() if len(sim.link_active) else None,
        stopped_colliders=tuple(sim._stopped_colliders),
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
    sim._newton.ordering = BandOrdering.from_state(cp.ordering)
    sim._newton.start_projected = bool(cp.start_projected)
    active = (
        np.ones(len(sim.link_active), bool) if cp.links_active is None else np.asarray(cp.links_active, bool)
    )
    if active.shape != sim.link_active.shape:
        raise SolverInputError(f"checkpoint: {len(active)} links, the scene has {len(sim.link_active)}")
    sim.link_active = active.copy()
    stopped = tuple(cp.stopped_colliders)
    collider = sim._prescribed.collider_of_group
    if any(not 0 <= gi < len(collider) or collider[gi] < 0 for gi in stopped):
        raise SolverInputError(f"checkpoint: stopped colliders {stopped} are not the scene's colliders")
    sim._stopped_colliders = stopped
