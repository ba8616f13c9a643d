"""Contact sets from a model (solver/contacts.py): the convergent formulation's corner
duplicate, and the pair and half-plane friction sets built from a scene's contacts."""

import math

import numpy as np
import pytest
from invariants import assert_close_rel, contact_scene, fd_gradient, point_segment_distance
from invariants import barrier_ref as _barrier_ref

from solver import barrier, friction
from solver.contacts import build_contact_set, candidate_stencils, pair_friction, plane_friction
from solver.model import build_model


def _weights_ref(model_edges, x, n):
    w = np.zeros(n)
    for a, b in model_edges:
        L = np.linalg.norm(x[a] - x[b])
        w[a] += 0.5 * L
        w[b] += 0.5 * L
    return w


@pytest.mark.parametrize("formulation", ["original", "convergent"])
def test_pair_and_plane_friction_sets_from_a_scene(formulation):
    """Frozen lambda = -dE/dd (FD in d, independent barrier), tangent
    perpendicular to the point-to-closest-point normal, mu the geometric mean,
    and the FD check of the real sets in both slip regions."""
    scene = contact_scene(formulation)
    m = build_model(scene)
    p = scene.params
    x0 = m.rest
    kappa, dhat = p.kappa, p.dhat
    cs = build_contact_set(m, candidate_stencils(m, x0, x0, dhat), kappa, dhat, formulation)
    fs = pair_friction(m, cs, x0, dhat)
    assert len(fs) >= 4
    w_ref = _weights_ref(m.edges, x0, m.n)

    def B(s):
        return -((s - 1) ** 2) * np.log(s) if 0 < s < 1 else 0.0

    for k in range(len(fs)):
        pt, e0, e1 = fs.idx[k]
        duplicate = e0 == e1
        d = point_segment_distance(x0[pt], x0[e0], x0[e1])
        assert 0 < d < dhat
        sign = -1.0 if duplicate else 1.0
        coef = sign * 0.5 * kappa * dhat * w_ref[pt]
        h = 1e-7 * dhat
        lam = -(coef * B((d + h) ** 2 / dhat**2) - coef * B((d - h) ** 2 / dhat**2)) / (2 * h)
        mu = math.sqrt(m.mu[pt] * m.mu[e0])
        assert math.isclose(fs.mu_lambda[k], mu * lam, rel_tol=1e-5)
        # tangent: w = Gamma (x) t with t orthogonal to the contact normal
        t = fs.w[k, 0:2]
        assert math.isclose(np.linalg.norm(t), 1.0, rel_tol=1e-12)
        if not duplicate:
            # closest point on the edge, independently
            e = x0[e1] - x0[e0]
            r = np.clip((x0[pt] - x0[e0]) @ e / (e @ e), 0, 1)
            nrm = x0[pt] - (x0[e0] + r * e)
            assert abs(t @ nrm) < 1e-9 * np.linalg.norm(nrm)
            assert np.allclose(fs.w[k, 2:4], -(1 - r) * t) and np.allclose(fs.w[k, 4:6], -r * t)
    if formulation == "convergent":
        assert np.any(fs.idx[:, 1] == fs.idx[:, 2]) and np.any(fs.mu_lambda < 0)

    pfs = plane_friction(m, x0, kappa, dhat)
    assert len(pfs) == 3  # A's three bottom vertices are within dhat of the ground
    nrm = m.plane_normal[0]
    for k in range(len(pfs)):
        v = pfs.idx[k, 0]
        d = (x0[v] - m.plane_point[0]) @ nrm
        coef = kappa * dhat * w_ref[v]
        h = 1e-7 * dhat
        lam = -(coef * B((d + h) ** 2 / dhat**2) - coef * B((d - h) ** 2 / dhat**2)) / (2 * h)
        assert math.isclose(pfs.mu_lambda[k], math.sqrt(0.4 * 0.5) * lam, rel_tol=1e-5)
        assert abs(pfs.w[k] @ nrm) < 1e-12

    # FD of the real sets: small (stick) and large (slide) displacements
    rng = np.random.default_rng(7)
    eps = 1e-3
    for scale in (0.05, 20.0):
        disp = rng.normal(size=(m.n, 2)) * scale * eps
        for S in (fs, pfs):
            # `S` bound as a default (the closures are used in this iteration only).
            def E(v, S=S):
                return friction.value(S, v.reshape(-1, 2), eps)

            def G(v, S=S):
                g = np.zeros(len(v))
                np.add.at(
                    g,
                    (2 * S.idx[:, :, None] + np.arange(2)).ravel(),
                    friction.gradient(S, v.reshape(-1, 2), eps).ravel(),
                )
                return g

            z = disp.ravel()
            assert_close_rel(G(z), fd_gradient(E, z, 1e-7 * eps), 1e-6, "scene friction gradient")


def test_convergent_formulation_removes_the_duplicate_at_a_corner():
    """A point in the Voronoi cone of a convex corner (closest to the corner
    vertex for both incident edges): 'original' counts b(d) twice,
    'convergent' once (the max, seed 004)."""
    energies = {}
    for form in ("original", "convergent"):
        scene = contact_scene(form)
        m = build_model(scene)
        p = scene.params
        x = m.rest.copy()
        # body A's top-right corner is vertex 8 at (0.15, 0.15); place body B
        # (vertices 9..12) so its lowest vertex sits diagonally outside it
        b = m.body_slices[1]
        low = b.start + int(np.argmin(x[b, 1]))
        x[b] += np.array([0.15 + 0.2 * p.dhat, 0.15 + 0.2 * p.dhat]) - x[low]
        corner = 8
        assert np.allclose(x[corner], [0.15, 0.15])
        cs = build_contact_set(m, candidate_stencils(m, x, x, p.dhat), p.kappa, p.dhat, form)
        sub = cs.subset(cs.idx[:, 0] == low)
        X = sub.gather(x)
        energies[form] = barrier.pe_value(X, sub.cases(X), sub.coef, p.dhat)
        w_low = sum(np.linalg.norm(x[a] - x[c]) / 2 for a, c in m.edges if low in (a, c))
        d = np.linalg.norm(x[low] - x[corner])
        single = 0.5 * w_low * p.kappa * p.dhat * float(_barrier_ref(np.array(d * d / p.dhat**2)))
    assert single > 0
    assert np.isclose(energies["convergent"], single, rtol=1e-10)
    assert np.isclose(energies["original"], 2 * single, rtol=1e-10)
