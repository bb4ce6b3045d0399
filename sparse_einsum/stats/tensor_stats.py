"""Statistics of a tensor: T(U), the number of non-zeros, and V(l, U) per axis,
the number of non-empty sub-tensors when only that axis is promoted."""
from __future__ import annotations

from dataclasses import dataclass
import math
from math import prod

import numpy as np
import scipy.sparse as sp


@dataclass(frozen=True)
class TensorStats:
    shape: tuple[int, ...]
    nnz: float                      # T(U)
    distinct: tuple[float, ...]     # V(axis, U) for each axis
    # estimated non-empty sub-tensors per set of promoted axes, propagated from the
    # operands' structure (intermediates only; see stats.propagate)
    support: dict[frozenset[int], float] | None = None

    def tuples(self, axes: tuple[int, ...] | frozenset[int]) -> float:
        """Expected tuples when `axes` are promoted: formula 7 (uniform placement),
        or the propagated support when that is smaller."""
        if self.nnz <= 0:
            return 0.0
        uniform = occupied(self.nnz, [self.distinct[a] for a in axes], list(self.distinct))
        if self.support is not None and frozenset(axes) in self.support:
            return min(uniform, self.support[frozenset(axes)])
        return uniform


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


def occupied(nnz: float, promoted: list[float], every: list[float]) -> float:
    """Formula 7 without replacement: non-empty sub-tensors when `nnz` non-zeros fall
    uniformly on distinct cells of the box of non-empty indices (sizes `every`), grouped
    by the promoted axes (sizes `promoted`). For sparse data this is formula 7,
    n (1 - exp(-T/n)); for dense data it is exactly n."""
    n = prod(max(v, 1.0) for v in promoted)
    cells = max(prod(max(v, 1.0) for v in every), n)
    density = min(nnz / cells, 1.0)
    if density >= 1.0:
        return n
    return n * -math.expm1(cells / n * math.log1p(-density))   # math: 20x quicker on floats


def distinct_after(values: float, draws: float) -> float:
    """Expected distinct values seen when `draws` items fall uniformly on `values` values."""
    if values <= 0 or draws <= 0:
        return 0.0
    return values * -float(np.expm1(-draws / values))


def dense_stats(shape: tuple[int, ...]) -> TensorStats:
    return TensorStats(tuple(shape), float(prod(shape)), tuple(float(s) for s in shape))


__all__ = ["TensorStats", "exact_stats", "distinct_after", "dense_stats"]
