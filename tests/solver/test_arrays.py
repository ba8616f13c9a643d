"""solver/linsolve/arrays.py: sorted_unique against np.unique (values, first indices
of a sorted array, inverse, counts) and sorted_union against np.union1d on
random integer arrays."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solver.linsolve.arrays import sorted_union, sorted_unique

values = st.lists(st.integers(-5, 40), max_size=60)


@settings(max_examples=200, deadline=None)
@given(values)
def test_sorted_unique_is_numpy_unique(v):
    a = np.array(v, np.int64)
    np.testing.assert_array_equal(sorted_unique(a), np.unique(a))
    for got, want in zip(
        sorted_unique(a, return_inverse=True, return_counts=True),
        np.unique(a, return_inverse=True, return_counts=True),
        strict=True,
    ):
        np.testing.assert_array_equal(got, np.ravel(want))
    s = np.sort(a)
    for got, want in zip(
        sorted_unique(s, presorted=True, return_index=True, return_counts=True),
        np.unique(s, return_index=True, return_counts=True),
        strict=True,
    ):
        np.testing.assert_array_equal(got, want)


@settings(max_examples=100, deadline=None)
@given(values, values)
def test_sorted_union_is_numpy_union1d(u, v):
    a, b = np.array(u, np.int64), np.array(v, np.int64)
    np.testing.assert_array_equal(sorted_union(a, b), np.union1d(a, b))


def test_first_indices_need_a_sorted_array():
    with pytest.raises(ValueError, match="presorted"):
        sorted_unique(np.array([3, 1, 3]), return_index=True)
