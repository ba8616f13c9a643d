"""Mesh quantities (solver/mesh.py) on meshes small enough to work out by hand: lumped masses,
contact weights, connected components."""

import numpy as np

from solver import mesh

# unit square split along its diagonal 0-2, counter-clockwise; vertex 4 unused
SQUARE = np.array([[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0], [5.0, 5.0]])
SQUARE_TRIS = np.array([[0, 1, 2], [0, 2, 3]])


def test_lumped_mass_is_a_third_of_each_incident_triangle():
    # each triangle has area 1/2: at density 3 it brings 1/2 to each of its corners
    m = mesh.lumped_mass(SQUARE, SQUARE_TRIS, 3.0)
    np.testing.assert_allclose(m, [1.0, 0.5, 1.0, 0.5, 0.0])
    # a clockwise triangle weighs the same; a density per triangle is taken per triangle
    np.testing.assert_allclose(mesh.lumped_mass(SQUARE, SQUARE_TRIS[:, ::-1], 3.0), m)
    per_tri = mesh.lumped_mass(SQUARE, SQUARE_TRIS, np.array([3.0, 6.0]))
    np.testing.assert_allclose(per_tri, [1.5, 0.5, 1.5, 1.0, 0.0])


def test_vertex_weights_are_half_the_incident_edge_lengths():
    edges = np.array([[0, 1], [1, 2], [2, 0]])  # lengths 1, 1, sqrt 2
    w = mesh.vertex_weights(SQUARE, edges, 5)
    half_diag = 0.5 * np.sqrt(2.0)
    np.testing.assert_allclose(w, [0.5 + half_diag, 1.0, 0.5 + half_diag, 0.0, 0.0])
    assert mesh.vertex_weights(SQUARE, np.zeros((0, 2), np.int64), 3).tolist() == [0.0, 0.0, 0.0]


def test_components_are_labelled_by_their_smallest_vertex():
    # a chain of triangles numbered against the chain (labels must travel far), a lone
    # triangle, and an unused vertex
    tris = np.array([[6, 7, 8], [5, 6, 8], [4, 5, 8], [2, 4, 8], [1, 3, 9]])
    label = mesh.components(tris, 11)
    assert label.tolist() == [0, 1, 2, 1, 2, 2, 2, 2, 2, 1, 10]
