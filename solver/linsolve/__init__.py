"""The linear solver: sparse symmetric systems assembled as COO triplets, solved by dense,
banded (scipy) or multifrontal sparse Cholesky (numpy only or scipy), with the fill-reducing
orderings and the integer-array helpers they need.

This package imports nothing else of the solver; the rest of the solver imports it only through
the names below.
"""

from .arrays import sorted_union, sorted_unique
from .linalg import (
    BandOrdering,
    BandOrderingState,
    Factorization,
    NotPositiveDefinite,
    RowSums,
    conjugate_gradients,
    factorize,
    group_sums,
    project_psd,
    solve,
    woodbury_solve,
)
from .sparse_cholesky import SparseCholeskyState

__all__ = [
    "BandOrdering",
    "BandOrderingState",
    "Factorization",
    "NotPositiveDefinite",
    "RowSums",
    "SparseCholeskyState",
    "conjugate_gradients",
    "factorize",
    "group_sums",
    "project_psd",
    "solve",
    "sorted_union",
    "sorted_unique",
    "woodbury_solve",
]
