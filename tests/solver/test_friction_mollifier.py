"""The friction mollifier option (issue 30, point 7): 'linear' (the default)
and 'ipc' (seed 000's f1 = 2y/eps - y^2/eps^2).  The ipc profile against
values worked out by hand from the seed's formulas, finite-difference
gradient and Hessian of the friction energy with both profiles, the
majorizer and the Newton piece helpers with the ipc profile, and the
option's way from SimParams into the friction sets of a step."""

import math

import numpy as np
import pytest
from invariants import assert_close_rel, contact_scene, fd_gradient, fd_jacobian, grid_square

from solver import Body, HalfPlane, Scene, SimParams, Simulation, friction
from solver.contacts import build_contact_set, candidate_stencils, pair_friction, plane_friction
from solver.errors import SolverInputError
from solver.friction import IPC, LINEAR, MOLLIFIERS, FrictionSet
from solver.model import build_model
from solver.validate import check_params

# (y, eps, f0, f1, f0'') for the ipc profile, by hand from seed 000:
# f0 = -y^3/(3 eps^2) + y^2/eps + eps/3, f1 = 2y/eps - y^2/eps^2, f0'' = 2/eps - 2y/eps^2 (y < eps);
# f0 = y, f1 = 1, f0'' = 0 beyond.
IPC_BY_HAND = [
    (0.0, 1.0, 1 / 3, 0.0, 2.0),
    (0.25, 1.0, 25 / 64, 7 / 16, 1.5),  # -1/192 + 1/16 + 1/3 = 75/192
    (0.5, 1.0, 13 / 24, 3 / 4, 1.0),  # -1/24 + 1/4 + 1/3
    (-0.5, 1.0, 13 / 24, 3 / 4, 1.0),  # even in y
    (0.75, 1.0, 145 / 192, 15 / 16, 0.5),  # -9/64 + 36/64 + 1/3 = 27/64 + 1/3
    (1.0, 1.0, 1.0, 1.0, 0.0),  # the sliding branch: f0(eps) = eps, f1(eps) = 1
    (2.5, 1.0, 2.5, 1.0, 0.0),
    (1e-3, 2e-3, 13 / 12 * 1e-3, 3 / 4, 500.0),  # y = eps / 2: f0 = eps 13/24, f0'' = 1/eps
]


@pytest.mark.parametrize("y, eps, f0, f1, f0_d2", IPC_BY_HAND)
def test_ipc_profile_is_the_seeds_formula(y, eps, f0, f1, f0_d2):
    y_ = np.array([y])
    assert math.isclose(IPC.f0(y_, eps)[0], f0, rel_tol=1e-14)
    assert math.isclose(IPC.f1(y_, eps)[0], f1, rel_tol=1e-14, abs_tol=1e-300)
    assert math.isclose(IPC.f0_d2(y_, eps)[0], f0_d2, rel_tol=1e-14, abs_tol=1e-300)


def test_the_option_names_the_two_profiles_and_linear_is_the_default():
    assert MOLLIFIERS == {"linear": LINEAR, "ipc": IPC}
    assert SimParams().friction_mollifier == "linear"
    assert FrictionSet.empty(1).mollifier is LINEAR
    # the module's f0/f1/f0_d2 stay the default (linear) profile
    y = np.array([0.5e-3])
    assert friction.f1(y, 1e-3)[0] == 0.5 and friction.f0(y, 1e-3)[0] == 0.625e-3


@pytest.mark.parametrize("mollifier", [LINEAR, IPC], ids=lambda m: m.name)
def test_profiles_are_c1_and_their_derivatives_are_consistent(mollifier):
    eps = 1e-3
    for fn in (mollifier.f0, mollifier.f1):  # value and force continuous at the edge of the zone
        lo, hi = fn(np.array([eps * (1 - 1e-9)]), eps)[0], fn(np.array([eps * (1 + 1e-9)]), eps)[0]
        assert abs(lo - hi) < 1e-6
    y = np.concatenate([np.linspace(0.01, 0.99, 20), np.linspace(1.01, 2.9, 20)]) * eps
    h = 1e-9
    assert np.allclose((mollifier.f0(y + h, eps) - mollifier.f0(y - h, eps)) / (2 * h), mollifier.f1(y, eps))
    assert np.allclose(
        (mollifier.f1(y + h, eps) - mollifier.f1(y - h, eps)) / (2 * h), mollifier.f0_d2(y, eps), rtol=1e-6
    )
    # convex (PSD Hessian) and a force that never exceeds the Coulomb limit
    assert (mollifier.f0_d2(y, eps) >= 0).all() and (mollifier.f1(y, eps) <= 1.0).all()


def _set(rng, n, k, mu_static, mollifier):
    idx = np.arange(n * k).reshape(n, k)
    mu_lam = rng.uniform(0.5, 5.0, n)
    mus = mu_lam * rng.uniform(1.2, 2.0, n) if mu_static else None
    return FrictionSet(idx, rng.normal(size=(n, 2 * k)), mu_lam, mus, mollifier)


def _gradient(fs, v, eps):
    g = np.zeros(len(v))
    np.add.at(g, fs.dofs.ravel(), friction.gradient(fs, v.reshape(-1, 2), eps).ravel())
    return g


def _hessian(fs, v, eps, project=False):
    H = np.zeros((len(v), len(v)))
    for dofs, block in zip(
        fs.dofs, friction.hessian(fs, v.reshape(-1, 2), eps, project=project), strict=True
    ):
        np.add.at(H, np.ix_(dofs, dofs), block)  # a duplicate term repeats its DOFs
    return H


def _displacement_with_slips(rng, fs, slips):
    """Displacements (N, 2) giving contact k the slip slips[k] (stencils disjoint): a
    random one, its slip replaced by moving along the contact's w."""
    n, k = fs.idx.shape
    dx = rng.normal(size=(n, 2 * k)) * np.abs(slips)[:, None]
    u = np.einsum("ni,ni->n", fs.w, dx)
    dx += ((slips - u) / np.einsum("ni,ni->n", fs.w, fs.w))[:, None] * fs.w
    return dx.reshape(-1, 2)


@pytest.mark.parametrize("mollifier", [LINEAR, IPC], ids=lambda m: m.name)
@pytest.mark.parametrize("k", [1, 3])
@pytest.mark.parametrize("mu_static", [False, True])
@pytest.mark.parametrize("region", [0.1, 0.5, 0.9, 1.5, 3.0])  # |u| / eps: stick x3, blend, slide
def test_friction_energy_fd_with_both_mollifiers(mollifier, k, mu_static, region):
    rng = np.random.default_rng(int(region * 10) + 100 * k + mu_static)
    eps, n = 1e-3, 6
    fs = _set(rng, n, k, mu_static, mollifier)
    slips = region * eps * rng.choice([-1.0, 1.0], n)
    z = _displacement_with_slips(rng, fs, slips).ravel()
    h = 1e-7 * eps
    assert_close_rel(
        _gradient(fs, z, eps), fd_gradient(lambda v: friction.value(fs, v.reshape(-1, 2), eps), z, h), 1e-6
    )
    assert_close_rel(_hessian(fs, z, eps), fd_jacobian(lambda v: _gradient(fs, v, eps), z, h), 1e-6)
    # the force on the slip direction, against the formula: mu_s lambda f1 while sticking
    g = friction.gradient(fs, z.reshape(-1, 2), eps)
    force = np.einsum("ni,ni->n", g, fs.w) / np.einsum("ni,ni->n", fs.w, fs.w)
    r = region
    f1 = {"linear": r, "ipc": 2 * r - r * r}[mollifier.name] if r < 1 else None
    if f1 is not None:
        assert np.allclose(force, np.sign(slips) * fs.static * f1, rtol=1e-12)
    elif r > 2:
        assert np.allclose(force, np.sign(slips) * fs.mu_lambda, rtol=1e-12)
    # the projected Hessian is PSD
    assert np.linalg.eigvalsh(_hessian(fs, z, eps, project=True)).min() >= -1e-9


@pytest.mark.parametrize("formulation", ["original", "convergent"])
def test_real_friction_sets_fd_with_the_ipc_mollifier(formulation):
    """Pair (with the convergent formulation's negative duplicates) and
    half-plane sets of a contact scene, built with the ipc profile."""
    scene = contact_scene(formulation)
    m, p = build_model(scene), scene.params
    x0 = m.rest
    cs = build_contact_set(m, candidate_stencils(m, x0, x0, p.dhat), p.kappa, p.dhat, formulation)
    sets = (pair_friction(m, cs, x0, p.dhat, IPC), plane_friction(m, x0, p.kappa, p.dhat, IPC))
    assert all(s.mollifier is IPC and len(s) for s in sets)
    rng = np.random.default_rng(3)
    eps = 1e-3
    for scale in (0.2, 20.0):  # slips mostly in the static zone / mostly sliding
        z = (rng.normal(size=(m.n, 2)) * scale * eps).ravel()
        for fs in sets:
            E = lambda v, fs=fs: friction.value(fs, v.reshape(-1, 2), eps)  # noqa: E731
            assert_close_rel(_gradient(fs, z, eps), fd_gradient(E, z, 1e-7 * eps), 1e-6, "gradient")
            G = lambda v, fs=fs: _gradient(fs, v, eps)  # noqa: E731
            assert_close_rel(_hessian(fs, z, eps), fd_jacobian(G, z, 1e-7 * eps), 1e-5, "Hessian")


@pytest.mark.parametrize("u0", [-4.0, -1.5, -0.6, -0.1, 0.0, 0.05, 0.3, 0.9, 1.0, 2.2, 7.0])
@pytest.mark.parametrize("ratio", [1.0, 2.0])
def test_majorizing_curvature_bounds_the_ipc_friction_potential(u0, ratio):
    """phi'(y)/y is non-increasing for the ipc profile too (2/eps - y/eps^2 in
    the static zone), so the majorized model lies above the energy everywhere."""
    eps = 1e-3
    t = np.array([0.6, 0.8])
    fs = FrictionSet(np.array([[0]]), t[None, :], np.array([2.0]), np.array([2.0 * ratio]), IPC)
    x0 = (u0 * eps * t)[None, :]
    g = friction.gradient(fs, x0, eps)[0] @ t
    c = t @ friction.hessian(fs, x0, eps, majorize=np.array([True]))[0] @ t
    for u in np.linspace(-8.0, 8.0, 321) * eps:
        model = friction.value(fs, x0, eps) + g * (u - u0 * eps) + 0.5 * c * (u - u0 * eps) ** 2
        actual = friction.value(fs, (u * t)[None, :], eps)
        assert model >= actual - 1e-12 * max(1.0, abs(actual))


def test_newton_pieces_with_the_ipc_mollifier():
    """force_curvature is the ipc energy's own; on the sliding pieces the
    piece model is exact; the static piece is modelled by the secant
    quadratic mu_s lambda u^2 / (2 eps) (force right at u = 0 and |u| = eps)."""
    rng = np.random.default_rng(11)
    eps = 1e-3
    fs = _set(rng, 7, 3, False, IPC)
    r = np.array([0.0, 0.25, -0.5, 0.75, 2.5, -3.0, 6.0])
    u = r * eps
    piece = friction.regime(u, eps)
    assert piece.tolist() == [0, 0, 0, 0, 1, -1, 1]
    everyone = np.ones(len(u), bool)
    f, c = friction.force_curvature(fs, everyone, u, eps)
    a = fs.static
    stick = np.abs(r) < 1
    assert np.allclose(f[stick], (a * np.sign(r) * (2 * np.abs(r) - r * r))[stick], rtol=1e-12, atol=0)
    assert np.allclose(c[stick], (a * (2 - 2 * np.abs(r)) / eps)[stick], rtol=1e-12)
    assert np.allclose(f[~stick], (a * np.sign(r))[~stick]) and not c[~stick].any()
    f_p, c_p = friction.piece_force_curvature(fs, everyone, u, piece, eps)
    assert np.allclose(f_p[~stick], f[~stick]) and not c_p[~stick].any()
    f_0, c_0 = friction.piece_force_curvature(fs, everyone, u, np.zeros(7, np.int8), eps)
    assert np.allclose(f_0, a * r) and np.allclose(c_0, a / eps)
    # zero slip is where the ipc energy is least too, so the zero-slip stop holds for it
    y = np.linspace(-3, 3, 601) * eps
    assert np.argmin(friction._phi(y, 1.0, 1.0, eps, IPC)) == 300


def _stack_run(mollifier, steps=30):
    """Two squares dropped onto the ground, one on the other: the friction sets of
    every step (pair and half-plane) and the simulation after the steps."""
    dhat = SimParams().dhat
    bodies = tuple(
        Body(f"square{k}", *grid_square(0.1, 2, (0.02 * k, 1.5 * dhat + k * (0.1 + 1.5 * dhat) + 0.05)))
        for k in range(2)
    )
    params = SimParams(friction_mollifier=mollifier)
    sim = Simulation(Scene(bodies, half_planes=(HalfPlane(),), params=params))
    seen = []
    original = sim._potential

    def spy(consts, penalized, k_pen):
        seen.append((consts["pair_friction"], consts["plane_friction"]))
        return original(consts, penalized, k_pen)

    sim._potential = spy
    for _ in range(steps):
        sim.step()
    return seen, sim


def test_the_scene_parameter_reaches_the_step_friction_sets():
    seen, sim_ipc = _stack_run("ipc")
    pairs = [p for p, _ in seen if len(p)]
    planes = [q for _, q in seen if len(q)]
    assert pairs and planes  # the squares touched each other and the ground
    assert all(fs.mollifier is IPC for fs in pairs + planes)
    seen, sim_lin = _stack_run("linear")
    assert all(fs.mollifier is LINEAR for pair in seen for fs in pair)
    # and it changes the motion (contacts in the static zone feel a different force)
    assert not np.allclose(sim_ipc.x, sim_lin.x, rtol=0, atol=1e-12)


def test_an_unknown_mollifier_is_refused():
    with pytest.raises(SolverInputError, match="friction_mollifier"):
        check_params(SimParams(friction_mollifier="cubic"))
