"""Statistics of a tensor: T(U), the number of non-zeros, and V(l, U) per axis,
the number of non-empty sub-tensors when only that axis is promoted."""
from __future__ import annotations

from dataclasses import dataclass
from math import prod

import numpy as np
import scipy.sparse as sp

from ..tiling import Tiling, key_range, keyed_axes, tile_distinct, tile_sizes


@dataclass(frozen=True)
class TensorStats:
    shape: tuple[int, ...]
    nnz: float                      # T(U)
    distinct: tuple[float, ...]     # V(axis, U) for each axis
    # estimated non-empty sub-tensors per set of promoted axes, propagated from the
    # operands' structure (intermediates only; see stats.propagate)
    support: dict[frozenset[int], float] | None = None
    max_abs: float = float("inf")   # a bound on |value| (exact for inputs)
    finite: bool = True             # no NaN or inf (exact for inputs; may-be for the rest)
    tile_counts: dict[Tiling, float] | None = None   # exact non-empty tiles (inputs)

    def tuples(self, tiling: Tiling) -> float:
        """Expected tuples (non-empty payloads) under a tiling: counted for inputs, else
        formula 7 over the occupied tile indices of the keyed axes (uniform placement),
        or the propagated support of the keyed axes when that is smaller."""
        if self.nnz <= 0:
            return 0.0
        if self.tile_counts and tiling in self.tile_counts:
            return self.tile_counts[tiling]
        keyed = keyed_axes(tiling, self.shape)
        slots = [tile_distinct(self.distinct[a], self.shape[a], tiling[a]) for a in keyed]
        uniform = occupied(self.nnz, slots, list(self.distinct))
        if self.support is not None and frozenset(keyed) in self.support:
            return min(uniform, self.support[frozenset(keyed)])
        return uniform


def _values(values: np.ndarray) -> dict:
    """max_abs and finite of some values."""
    if values.size == 0:
        return {"max_abs": 0.0, "finite": True}
    if values.dtype.kind in "biu":
        return {"max_abs": float(np.abs(values.astype(np.float64)).max()), "finite": True}
    finite = bool(np.isfinite(values).all())
    return {"max_abs": float(np.abs(values).max()) if finite else float("inf"), "finite": finite}


def exact_stats(x: object) -> TensorStats:
    """Exact T and V (and the values' bound and finiteness) from a NumPy array or a
    scipy.sparse matrix, and for matrices the non-empty tiles of every candidate tiling
    (vectorised)."""
    if sp.issparse(x):
        csr = x.asformat("csr")
        if not csr.has_canonical_format:
            csr = csr.copy()
            csr.sum_duplicates()
        nonzero = csr.data != 0
        rows = np.repeat(np.arange(csr.shape[0]), np.diff(csr.indptr))[nonzero]
        cols = csr.indices[nonzero]
        return TensorStats(tuple(csr.shape), float(np.count_nonzero(nonzero)),
                           (float(len(np.unique(rows))), float(len(np.unique(cols)))),
                           tile_counts=_tile_counts(csr.shape, rows, cols),
                           **_values(csr.data[nonzero]))
    array = np.asarray(x)
    nonzero = array != 0
    distinct = []
    for axis in range(array.ndim):
        others = tuple(a for a in range(array.ndim) if a != axis)
        distinct.append(float(np.count_nonzero(nonzero.any(axis=others) if others else nonzero)))
    counts = None
    if array.ndim == 2:
        counts = _tile_counts(array.shape, *np.nonzero(nonzero))
    return TensorStats(tuple(array.shape), float(np.count_nonzero(nonzero)), tuple(distinct),
                       tile_counts=counts, **_values(array))


def _tile_counts(shape: tuple[int, int], rows: np.ndarray, cols: np.ndarray
                 ) -> dict[Tiling, float]:
    """Non-empty tiles of a matrix with non-zeros at (rows, cols), for every pair of
    candidate tile sizes of which one tiles its axis."""
    options = [(1, *tile_sizes(n), n) for n in shape]
    counts = {}
    for b0 in options[0]:
        r0 = rows // b0
        for b1 in options[1]:
            if b0 in (1, shape[0]) and b1 in (1, shape[1]):
                continue                     # promotions: distinct counts and support
            r1 = key_range(b1, shape[1])
            ids = r0 * r1 + cols // b1
            n = key_range(b0, shape[0]) * r1
            found = np.count_nonzero(np.bincount(ids, minlength=n)) if n <= 1 << 26 else \
                len(np.unique(ids))
            counts[(b0, b1)] = float(found)
    return counts


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
    return float(n * -np.expm1(cells / n * np.log1p(-density)))


def distinct_after(values: float, draws: float) -> float:
    """Expected distinct values seen when `draws` items fall uniformly on `values` values."""
    if values <= 0 or draws <= 0:
        return 0.0
    return values * -float(np.expm1(-draws / values))


def dense_stats(shape: tuple[int, ...], **values) -> TensorStats:
    return TensorStats(tuple(shape), float(prod(shape)), tuple(float(s) for s in shape), **values)


__all__ = ["TensorStats", "exact_stats", "distinct_after", "dense_stats"]
