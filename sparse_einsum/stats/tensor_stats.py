"""Statistics of a tensor: T(U), the number of non-zeros, and V(l, U) per axis,
the number of non-empty sub-tensors when only that axis is promoted; for inputs also
the degrees per axis (the non-zeros at each index): their l2 norm, their maximum, and
the dot products of two axes' degrees, which bound and size joins on skewed data."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
import math
from math import prod
import threading
from typing import Callable, Iterator

import numpy as np
import scipy.sparse as sp

from ..tiling import Tiling, key_range, keyed_axes, tile_distinct, tile_index, tile_sizes


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
    tile_counts: Mapping[Tiling, float] | None = None   # exact non-empty tiles (inputs)
    degrees: "Degrees | None" = None        # degree statistics (exact for inputs)
    # per axis, the input axis whose degrees an intermediate's follow (None: unknown)
    lineage: "tuple[Lineage | None, ...] | None" = field(default=None, compare=False)
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
    # axes a, b of one size (a == b too): the indices x with d_a(x) > 0 grouped by
    # log2 d_a(x), per group their count and means of d_a and d_b (`Histogram`)
    histograms: dict[tuple[int, int], "Histogram"] = field(default_factory=dict, compare=False)

    @classmethod
    def of(cls, counts: list[np.ndarray]) -> "Degrees":
        """From the degree vector of each axis (integers: their products are exact up to
        3e9 non-zeros and never go through BLAS, whose threads cost more than the sum)."""
        c = [x.astype(np.int64, copy=False) for x in counts]
        pairs = [(a, b) for a in range(len(c)) for b in range(len(c)) if len(c[a]) == len(c[b])]
        return cls(tuple(math.sqrt(int(x @ x)) for x in c),
                   tuple(float(x.max(initial=0)) for x in c),
                   {(a, b): float(c[a] @ c[b]) for a, b in pairs if a < b},
                   {(a, b): Histogram.of(c[a], c[b]) for a, b in pairs})


@dataclass(frozen=True)
class Histogram:
    """Indices grouped by log2 of one degree vector d_a (those with d_a > 0): per group
    the count and the means of d_a and of another axis's d_b at the same indices, so that
    sum_x f(d_a(x)) g(d_b(x)) of increasing f, g is estimated from about 30 groups."""
    count: np.ndarray
    mean_a: np.ndarray
    mean_b: np.ndarray

    @classmethod
    def of(cls, da: np.ndarray, db: np.ndarray) -> "Histogram":
        kept = da > 0
        group = np.log2(da[kept]).astype(np.int64)
        count = np.bincount(group).astype(np.float64)
        used = count > 0
        count = count[used]
        return cls(count, np.bincount(group, da[kept])[used] / count,
                   np.bincount(group, db[kept])[used] / count)


@dataclass(frozen=True)
class Lineage:
    """An intermediate's degrees along one axis as a function of an input's along one of
    its axes (`base.degrees`): a product's output at index x holds the distinct groups
    its join tuples at x fall on, d(x) = cap (1 - exp(-m d_in(x) / cap)), applied once per
    product along the chain (`steps`: (m, cap) pairs; cap inf: just scaled)."""
    base: TensorStats = field(compare=False)
    axis: int
    steps: tuple[tuple[float, float], ...] = ()

    def then(self, m: float, cap: float) -> "Lineage":
        return Lineage(self.base, self.axis, self.steps + ((m, cap),))

    def __call__(self, degrees: np.ndarray | float) -> np.ndarray | float:
        """The intermediate's degrees where the input's are `degrees`."""
        for m, cap in self.steps:
            degrees = degrees * m if math.isinf(cap) else cap * -np.expm1(-degrees * m / cap)
        return degrees


def _values(values: np.ndarray) -> dict:
    """max_abs and finite of some values."""
    if values.size == 0:
        return {"max_abs": 0.0, "finite": True}
    if values.dtype.kind in "biu":
        return {"max_abs": float(np.abs(values.astype(np.float64)).max()), "finite": True}
    low, high = float(values.min()), float(values.max())    # NaN and inf show in these
    finite = math.isfinite(low) and math.isfinite(high)
    return {"max_abs": max(-low, high) if finite else float("inf"), "finite": finite}


def exact_stats(x: object, default: float = 0.0) -> TensorStats:
    """Exact T and V (and the values' bound and finiteness) from a NumPy array or a
    scipy.sparse matrix, and for matrices the non-empty tiles of every candidate tiling
    (vectorised); the entries equal to `default` count as absent (a scipy.sparse
    matrix's unstored ones hold it)."""
    if sp.issparse(x):
        csr = x.asformat("csr")
        if not csr.has_canonical_format:
            csr = csr.copy()
            csr.sum_duplicates()
        pattern = _pattern(csr, csr.data != default)
        counts = [np.diff(pattern.indptr), np.bincount(pattern.indices, minlength=csr.shape[1])]
        distinct = tuple(float(np.count_nonzero(c)) for c in counts)
        structure = (pattern.indptr, pattern.indices)
        return TensorStats(tuple(csr.shape), float(pattern.nnz), distinct,
                           tile_counts=TileCounts.of(csr.shape, lambda: structure,
                                                     structure[0].nbytes + structure[1].nbytes),
                           degrees=Degrees.of(counts), **_values(pattern.data))
    array = np.asarray(x)
    nonzero = array != default
    nnz = int(np.count_nonzero(nonzero))
    counts = []
    for axis in range(array.ndim):
        others = tuple(a for a in range(array.ndim) if a != axis)
        if nnz == array.size:               # no zeros: every index has them all
            counts.append(np.full(array.shape[axis], array.size // max(array.shape[axis], 1)))
        else:
            counts.append(np.count_nonzero(nonzero, axis=others) if others else nonzero)
    distinct = [float(np.count_nonzero(c)) for c in counts]
    tiles = None
    if array.ndim == 2:
        tiles = TileCounts.of(array.shape, lambda: _structure(sp.csr_array(nonzero)),
                              nonzero.nbytes) if nnz < array.size else \
            {tiling: float(key_range(tiling[0], array.shape[0]) *
                           key_range(tiling[1], array.shape[1]))
             for tiling in _tilings(array.shape)}
    return TensorStats(tuple(array.shape), float(nnz), tuple(distinct),
                       tile_counts=tiles, degrees=Degrees.of(counts),
                       **_values(array if default == 0 else array[nonzero]))


def _pattern(csr: sp.csr_array, nonzero: np.ndarray) -> sp.csr_array:
    """The canonical CSR pattern of the entries of `csr` where `nonzero`."""
    if nonzero.all():
        return csr
    kept = np.cumsum(np.r_[0, nonzero])[csr.indptr]
    return sp.csr_array((csr.data[nonzero], csr.indices[nonzero], kept), shape=csr.shape)


def _tilings(shape: tuple[int, int]) -> list[Tiling]:
    """The candidate tilings of a matrix in which at least one axis is tiled (the
    promotions are counted by the distinct counts and the support)."""
    options = [(1, *tile_sizes(n), n) for n in shape]
    return [(b0, b1) for b1 in options[1] for b0 in options[0]
            if not (b0 in (1, shape[0]) and b1 in (1, shape[1]))]


def _structure(csr: sp.csr_array) -> tuple[np.ndarray, np.ndarray]:
    return csr.indptr, csr.indices


class TileCounts(Mapping):
    """The non-empty tiles of a matrix for every candidate tiling (`_tile_counts`),
    counted when one is first asked: plans without tiles ask none. Until then it holds
    the structure of the matrix's non-zeros (`structure()` makes it): up to LAZY_BYTES,
    else the counts are made at once."""
    LAZY_BYTES = 16 << 20

    def __init__(self, shape: tuple[int, int],
                 structure: Callable[[], tuple[np.ndarray, np.ndarray]]):
        self._wanted = frozenset(_tilings(shape))
        self._shape, self._structure = shape, structure
        self._counts: dict[Tiling, float] | None = None
        self._lock = threading.Lock()

    @classmethod
    def of(cls, shape: tuple[int, int], structure: Callable[[], tuple[np.ndarray, np.ndarray]],
           held: int) -> "Mapping[Tiling, float]":
        """Counted when first asked while what it holds (`held` bytes) is small."""
        if held > cls.LAZY_BYTES:
            return _tile_counts(shape, *structure())
        return cls(shape, structure)

    def counts(self) -> dict[Tiling, float]:
        with self._lock:
            if self._counts is None:
                self._counts = _tile_counts(self._shape, *self._structure())
                self._structure = None
            return self._counts

    def __contains__(self, tiling: object) -> bool:
        return tiling in self._wanted

    def __getitem__(self, tiling: Tiling) -> float:
        return self.counts()[tiling]

    def __iter__(self) -> Iterator[Tiling]:
        return iter(self.counts())

    def __len__(self) -> int:
        return len(self._wanted)


def _tile_counts(shape: tuple[int, int], indptr: np.ndarray, indices: np.ndarray
                 ) -> dict[Tiling, float]:
    """Non-empty tiles of a matrix, given the structure of its non-zeros (canonical CSR),
    for every candidate tiling, in linear time: with whole rows as keys the (row, column
    tile) pairs change between neighbours in row-major order, with whole columns in
    column-major order; tiles on both axes (at most 4096 along each, powers of two or the
    whole axis) are reduced from a bitmap of the finest ones."""
    wanted = _tilings(shape)
    if not len(indices):
        return {tiling: 0.0 for tiling in wanted}
    structure = sp.csr_array((np.ones(len(indices), dtype=np.int8), indices, indptr),
                             shape=shape)
    counts: dict[Tiling, float] = {}
    for axis, compressed in ((0, structure), (1, structure.tocsc())):
        major = np.repeat(np.arange(shape[axis], dtype=compressed.indices.dtype),
                          np.diff(compressed.indptr))
        if axis == 0:
            rows, cols = major, compressed.indices
        changes = major[1:] != major[:-1]
        for tiling in (t for t in wanted if t[axis] == 1):
            minor = tile_index(compressed.indices, tiling[1 - axis])
            counts[tiling] = float(np.count_nonzero(changes | (minor[1:] != minor[:-1])) + 1)
    tiled = [t for t in wanted if 1 not in t]
    if tiled:
        finest = [min(t[axis] for t in tiled) for axis in (0, 1)]
        grid = np.zeros([key_range(b, n) for b, n in zip(finest, shape)], dtype=bool)
        # set through flat positions: NumPy's two-index assignment takes 4x longer
        grid.reshape(-1)[tile_index(rows, finest[0]) * grid.shape[1]
                         + tile_index(cols, finest[1])] = True
        by_rows = {b0: _coarsen(grid, 0, b0, finest[0], shape[0]) for b0, _ in tiled}
        for b0, b1 in tiled:
            coarse = _coarsen(by_rows[b0], 1, b1, finest[1], shape[1])
            counts[(b0, b1)] = float(np.count_nonzero(coarse))
    return counts


def _coarsen(grid: np.ndarray, axis: int, b: int, f: int, n: int) -> np.ndarray:
    """A bitmap of occupied tiles of size f along `axis` (of length n) as one of tiles of
    size b, a multiple of f or the whole axis."""
    step = b // f if b < n else grid.shape[axis]
    if step == 1:
        return grid
    return np.logical_or.reduceat(grid, np.arange(0, grid.shape[axis], step), axis=axis)


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
    return values * -math.expm1(-draws / values)


def dense_stats(shape: tuple[int, ...], **values) -> TensorStats:
    return TensorStats(tuple(shape), float(prod(shape)), tuple(float(s) for s in shape), **values)


__all__ = ["TensorStats", "Degrees", "Histogram", "Lineage", "exact_stats", "distinct_after", "dense_stats"]
