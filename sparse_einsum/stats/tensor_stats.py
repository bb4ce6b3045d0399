"""Statistics of a tensor: T(U), the number of non-zeros, and V(l, U) per axis,
the number of non-empty sub-tensors when only that axis is promoted; for inputs also
the degrees per axis (the non-zeros at each index): their l2 norm, their maximum, and
the dot products of two axes' degrees, which bound and size joins on skewed data."""
from __future__ import annotations

from dataclasses import dataclass, field
import math
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
    degrees: "Degrees | None" = None        # exact degree statistics (inputs)
    # tuples() per tiling, computed once (the optimizer asks for a few tilings many times)
    _tuples: dict[Tiling, float] = field(init=False, repr=False, compare=False,
                                         default_factory=dict)

    def tuples(self, tiling: Tiling) -> float:
        """Expected tuples (non-empty payloads) under a tiling: counted for inputs, else
        formula 7 over the occupied tile indices of the keyed axes (uniform placement),
        or the propagated support of the keyed axes when that is smaller."""
        found = self._tuples.get(tiling)
        if found is None:
            found = self._tuples[tiling] = self._estimate(tiling)
        return found

    def _estimate(self, tiling: Tiling) -> float:
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


@dataclass(frozen=True)
class Degrees:
    """The degrees of a tensor along each axis: d_a(x) = non-zeros with index x on axis a."""
    l2: tuple[float, ...]                  # per axis: sqrt(sum_x d_a(x)^2)
    max: tuple[float, ...]                 # per axis: max_x d_a(x)
    dots: dict[tuple[int, int], float]     # axes a < b of one size: sum_x d_a(x) d_b(x)

    @classmethod
    def of(cls, counts: list[np.ndarray]) -> "Degrees":
        """From the degree vector of each axis."""
        c = [x.astype(np.float64) for x in counts]
        return cls(tuple(float(np.sqrt(x @ x)) for x in c),
                   tuple(float(x.max(initial=0.0)) for x in c),
                   {(a, b): float(c[a] @ c[b]) for a in range(len(c))
                    for b in range(a + 1, len(c)) if len(c[a]) == len(c[b])})


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
        nnz = len(rows)
        counts = [np.diff(csr.indptr) if nonzero.all() else
                  np.bincount(rows, minlength=csr.shape[0]),
                  np.bincount(cols, minlength=csr.shape[1])]
        distinct = tuple(float(np.count_nonzero(c)) for c in counts)
        return TensorStats(tuple(csr.shape), float(nnz), distinct,
                           tile_counts=_tile_counts(csr.shape, rows, cols),
                           degrees=Degrees.of(counts), **_values(csr.data[nonzero]))
    array = np.asarray(x)
    nonzero = array != 0
    nnz = int(np.count_nonzero(nonzero))
    counts = []
    for axis in range(array.ndim):
        others = tuple(a for a in range(array.ndim) if a != axis)
        counts.append(np.count_nonzero(nonzero, axis=others) if others else nonzero)
    distinct = [float(np.count_nonzero(c)) for c in counts]
    tiles = None
    if array.ndim == 2:
        tiles = _tile_counts(array.shape, *np.nonzero(nonzero)) if nnz < array.size else \
            {tiling: float(key_range(tiling[0], array.shape[0]) *
                           key_range(tiling[1], array.shape[1]))
             for tiling in _tilings(array.shape)}
    return TensorStats(tuple(array.shape), float(nnz), tuple(distinct),
                       tile_counts=tiles, degrees=Degrees.of(counts), **_values(array))


def _tilings(shape: tuple[int, int]) -> list[Tiling]:
    """The candidate tilings of a matrix in which at least one axis is tiled (the
    promotions are counted by the distinct counts and the support)."""
    options = [(1, *tile_sizes(n), n) for n in shape]
    return [(b0, b1) for b1 in options[1] for b0 in options[0]
            if not (b0 in (1, shape[0]) and b1 in (1, shape[1]))]


def _tile_counts(shape: tuple[int, int], rows: np.ndarray, cols: np.ndarray
                 ) -> dict[Tiling, float]:
    """Non-empty tiles of a matrix with non-zeros at (rows, cols), given in row-major
    order, for every candidate tiling: per column tile size one stable sort of the
    distinct (row, column tile) pairs by column tile, then one linear pass per row tile
    size (coarsening the rows keeps that order)."""
    counts: dict[Tiling, float] = {}
    wanted = _tilings(shape)
    rows, cols = rows.astype(np.int32, copy=False), cols.astype(np.int32, copy=False)
    for b1 in sorted({b1 for _, b1 in wanted}):
        col_tile = _tile_of(cols, b1)
        first = np.ones(len(rows), dtype=bool)
        first[1:] = (rows[1:] != rows[:-1]) | (col_tile[1:] != col_tile[:-1])
        r, c = rows[first], col_tile[first]
        if b1 < shape[1]:
            order = _stable_order(c, key_range(b1, shape[1]))
            r, c = r[order], c[order]
        col_changes = c[1:] != c[:-1]
        for b0 in (b0 for b0, b in wanted if b == b1):
            row_tile = _tile_of(r, b0)
            changes = np.count_nonzero(col_changes | (row_tile[1:] != row_tile[:-1]))
            counts[(b0, b1)] = float(changes + 1) if len(r) else 0.0
    return counts


def _tile_of(index: np.ndarray, b: int) -> np.ndarray:
    """index // b, as a shift when b is a power of two."""
    return index >> (b.bit_length() - 1) if b & (b - 1) == 0 else index // b


def _stable_order(keys: np.ndarray, bound: int) -> np.ndarray:
    """A stable argsort of non-negative integer keys below `bound`, as radix sorts of
    16-bit digits (linear time)."""
    order = np.argsort(keys.astype(np.uint16), kind="stable")
    if bound > 1 << 16:
        order = order[np.argsort((keys[order] >> 16).astype(np.uint16), kind="stable")]
    return order


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


def dense_stats(shape: tuple[int, ...], **values) -> TensorStats:
    return TensorStats(tuple(shape), float(prod(shape)), tuple(float(s) for s in shape), **values)


__all__ = ["TensorStats", "Degrees", "exact_stats", "distinct_after", "dense_stats"]
