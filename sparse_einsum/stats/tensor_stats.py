"""Statistics of a tensor: T(U), the number of non-zeros, and V(l, U) per axis,
the number of non-empty sub-tensors when only that axis is promoted."""
from __future__ import annotations

from dataclasses import dataclass
from math import prod

import numpy as np
import scipy.sparse as sp


@dataclass(frozen=True)
class TensorStats:
    shape: tuple[int, ...]
    nnz: float                      # T(U)
    distinct: tuple[float, ...]     # V(axis, U) for each axis

    def tuples(self, axes: tuple[int, ...] | frozenset[int]) -> float:
        """Formula 7: expected tuples when `axes` are promoted (uniform placement)."""
        if self.nnz <= 0:
            return 0.0
        n = prod(max(self.distinct[a], 1.0) for a in axes)
        return n * -np.expm1(-self.nnz / n) if n < 1e300 else self.nnz

    @property
    def density(self) -> float:
        size = prod(self.shape)
        return self.nnz / size if size else 0.0


def exact_stats(x: object) -> TensorStats:
    """Exact T and V from a NumPy array or scipy.sparse matrix (vectorised)."""
    if sp.issparse(x):
        csr = sp.csr_matrix(x)
        csr.eliminate_zeros()
        rows = int(np.count_nonzero(np.diff(csr.indptr)))
        cols = int(np.count_nonzero(np.bincount(csr.indices, minlength=csr.shape[1])))
        return TensorStats(tuple(csr.shape), float(csr.nnz), (float(rows), float(cols)))
    array = np.asarray(x, dtype=np.float64)
    nonzero = array != 0
    distinct = []
    for axis in range(array.ndim):
        others = tuple(a for a in range(array.ndim) if a != axis)
        distinct.append(float(np.count_nonzero(nonzero.any(axis=others) if others else nonzero)))
    return TensorStats(tuple(array.shape), float(np.count_nonzero(nonzero)), tuple(distinct))


def distinct_after(values: float, draws: float) -> float:
    """Expected distinct values seen when `draws` items fall uniformly on `values` values."""
    if values <= 0 or draws <= 0:
        return 0.0
    return values * -float(np.expm1(-draws / values))


def dense_stats(shape: tuple[int, ...]) -> TensorStats:
    return TensorStats(tuple(shape), float(prod(shape)), tuple(float(s) for s in shape))


__all__ = ["TensorStats", "exact_stats", "distinct_after", "dense_stats"]
