"""A tensor in memory split by a tiling into keyed blocks, and back.

`Blocks` hold one integer key array per keyed axis (ascending axis order) and the
payload of each key: the sub-tensor over the payload axes, flattened row-major (a
scalar when there is no payload axis), with the padding of edge tiles zero; or, for
sparse payloads, its non-zeros packed as ``[offsets..., values...]`` (the flat offsets
within the payload, then the values, as doubles). All-zero payloads are not kept, but
for a tensor in one tile: a one-tuple relation always has its tuple. For a
tensor whose absent entries hold a default other than 0, read "the default" for "zero".
This is how arrays go into and come out of the engines.
"""
from __future__ import annotations

from dataclasses import dataclass
from math import prod

import numpy as np
import scipy.sparse as sp

from .tiling import Tiling, key_range, keyed_axes, payload_size, split_index


@dataclass
class Blocks:
    keys: list[np.ndarray]      # one int64 array per keyed axis
    values: np.ndarray          # dense: (tuples, payload size), or (tuples,) without a
                                # payload; sparse: the packed payloads, one after another
    bounds: np.ndarray | None = None   # sparse: tuple t is values[bounds[t]:bounds[t + 1]]

    def __len__(self) -> int:
        return int(self.values.shape[0]) if self.bounds is None else len(self.bounds) - 1

    def dense(self, size: int, default: float = 0.0) -> np.ndarray:
        """The payloads as a (tuples, size) array (a packed one's absent entries `default`)."""
        if self.bounds is None:
            return self.values.reshape(len(self), size)
        return unpack(self.values, self.bounds, size, default)


def stored(values: np.ndarray, default: float = 0.0) -> np.ndarray:
    """Which values a relation stores: all but +0.0 (1 / -0.0 is -inf, as in NumPy), or,
    for a tensor of another default, all but that."""
    return (values != 0) | np.signbit(values) if default == 0 else values != default


def pack(values: np.ndarray, default: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """Dense payloads (tuples, size) as packed sparse payloads: (values, bounds)."""
    rows, cols = np.nonzero(stored(values, default))
    counts = np.bincount(rows, minlength=len(values))
    return _pack(rows, cols, values[rows, cols], counts)


def _pack(tuples: np.ndarray, offsets: np.ndarray, values: np.ndarray, counts: np.ndarray
          ) -> tuple[np.ndarray, np.ndarray]:
    """Packed payloads of non-zeros grouped by tuple (ascending), `counts` per tuple."""
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    packed = np.empty(2 * len(values), dtype=np.float64)
    position = np.arange(len(values)) + starts[tuples]
    packed[position] = offsets
    packed[position + counts[tuples]] = values
    return packed, np.concatenate([[0], 2 * np.cumsum(counts)]).astype(np.int64)


def unpack(packed: np.ndarray, bounds: np.ndarray, size: int, default: float = 0.0
           ) -> np.ndarray:
    """Packed sparse payloads as dense ones (tuples, size), absent entries `default`."""
    tuples, offsets, values = entries(packed, bounds)
    dense = np.full((len(bounds) - 1, size), default)
    dense[tuples, offsets] = values
    return dense


def entries(packed: np.ndarray, bounds: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(tuple, flat offset, value) of every non-zero of packed sparse payloads."""
    counts = np.diff(bounds) // 2
    tuples = np.repeat(np.arange(len(counts)), counts)
    first = np.repeat(bounds[:-1], counts) + (np.arange(len(tuples)) -
                                              np.repeat(np.cumsum(counts) - counts, counts))
    return tuples, packed[first].astype(np.int64), packed[first + counts[tuples]]


def _grid(shape: tuple[int, ...], tiling: Tiling) -> list[tuple[int, int]]:
    """Per axis (key range, tile size) of the padded tensor."""
    return [(key_range(b, n), b) if b < n else (1, n) for b, n in zip(tiling, shape)]


def decompose(tensor: np.ndarray | sp.spmatrix | sp.sparray, tiling: Tiling,
              sparse: bool = False, default: float = 0.0) -> Blocks:
    """Split `tensor` by `tiling` into blocks (zero blocks left out), with dense or
    sparse payloads. A tensor whose absent entries hold a `default` other than 0 (a
    scipy.sparse matrix's unstored entries hold it) keeps its entries that differ from
    it; its dense payloads (and their padding) hold it elsewhere."""
    if sp.issparse(tensor):
        return _decompose_sparse(tensor, tiling, sparse, default)
    if sparse:
        blocks = decompose(tensor, tiling, default=default)
        return Blocks(blocks.keys, *pack(blocks.dense(payload_size(tiling)), default))
    array = np.asarray(tensor) if default == 0 else np.asarray(tensor, dtype=np.float64)
    grid = _grid(array.shape, tiling)
    padding = [(0, r * b - n) for (r, b), n in zip(grid, array.shape)]
    if any(p for _, p in padding):
        array = np.pad(array, padding, constant_values=default)
    tiles = array.reshape([x for rb in grid for x in rb])
    order = list(range(0, 2 * len(grid), 2)) + list(range(1, 2 * len(grid), 2))
    flat = tiles.transpose(order).reshape(prod(r for r, _ in grid), -1)
    if default == 0:
        kept = np.any(flat, axis=1)
        kept[~kept] = np.signbit(flat[~kept]).any(axis=1)     # tiles of zeros, -0.0 kept
    else:
        kept = np.any(flat != default, axis=1)
    if kept.all() or (len(flat) == 1 and flat.size):   # every tile (or the one): no copy
        return _blocks(np.arange(len(flat)), flat, array.shape, tiling, grid)
    nonzero = np.flatnonzero(kept)
    return _blocks(nonzero, flat[nonzero], array.shape, tiling, grid)


def _blocks(tile_ids: np.ndarray, values: np.ndarray, shape: tuple[int, ...], tiling: Tiling,
            grid: list[tuple[int, int]]) -> Blocks:
    keyed = keyed_axes(tiling, shape)
    keys = np.unravel_index(tile_ids, [r for r, _ in grid]) if grid else ()
    return Blocks([np.asarray(keys[a], dtype=np.int64) for a in keyed],
                  values if payload_size(tiling) > 1 else values.reshape(len(values)))


def _decompose_sparse(matrix, tiling: Tiling, sparse: bool, default: float) -> Blocks:
    """A scipy.sparse matrix by its coordinates: never densified beyond its (dense)
    blocks, and the caller's matrix left unchanged."""
    if matrix.ndim != 2:
        raise ValueError("scipy.sparse inputs must be matrices")
    csr = canonical(matrix, "csr")
    rows = np.repeat(np.arange(csr.shape[0], dtype=np.int64), np.diff(csr.indptr))
    cols, data = csr.indices.astype(np.int64), csr.data
    keep = stored(data, default)
    if not keep.all():
        rows, cols, data = rows[keep], cols[keep], data[keep]
    if tiling == (1, 1) and min(csr.shape) > 1:     # one tuple per non-zero, in CSR order
        return Blocks([rows, cols], data)
    grid = _grid(csr.shape, tiling)
    (r0, b0), (r1, b1) = grid
    if sparse and r0 * r1 == 1:      # one tuple: its offsets ascend in CSR order
        packed = np.empty(2 * len(data))
        np.multiply(rows, b1, out=packed[:len(data)], casting="unsafe")
        packed[:len(data)] += cols
        packed[len(data):] = data
        bounds = [0, len(packed)] if min(csr.shape) else [0]     # a zero-size one has none
        return Blocks([], packed, np.array(bounds, dtype=np.int64))
    (row_tile, row_offset), (col_tile, col_offset) = (split_index(rows, b0, csr.shape[0]),
                                                    split_index(cols, b1, csr.shape[1]))
    tile = row_tile * r1 + col_tile
    offsets = row_offset * b1 + col_offset
    if sparse:
        if np.any(tile[1:] < tile[:-1]):   # grouped by tile, CSR order within each
            order = np.argsort(tile, kind="stable")
            tile, offsets, data = tile[order], offsets[order], data[order]
        tile_ids, slot = _unique(tile)
        packed, bounds = _pack(slot, offsets, data, np.bincount(slot, minlength=len(tile_ids)))
        blocks = _blocks(tile_ids, np.zeros((len(tile_ids), 2)), csr.shape, tiling, grid)
        return Blocks(blocks.keys, packed, bounds)
    tile_ids, slot = (np.zeros(1, np.int64), tile) if r0 * r1 == 1 and min(csr.shape) \
        else _unique(tile)
    values = np.full((len(tile_ids), b0 * b1), default,
                     dtype=data.dtype if default == 0 else np.float64)
    values[slot, offsets] = data
    return _blocks(tile_ids, values, csr.shape, tiling, grid)


def _unique(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct ids ascending, and each id's position among them (linear when sorted, as
    CSR coordinates with one row per tile are)."""
    if len(ids) and np.all(ids[1:] >= ids[:-1]):
        first = np.r_[True, ids[1:] != ids[:-1]]
        return ids[first], np.cumsum(first) - 1
    return np.unique(ids, return_inverse=True)


def canonical(matrix, fmt: str):
    """`matrix` in CSR or CSC with duplicates summed; a copy where that changes anything."""
    converted = matrix.asformat(fmt)
    if not converted.has_canonical_format:
        converted = converted.copy()
        converted.sum_duplicates()
    return converted


def compose(blocks: Blocks, shape: tuple[int, ...], tiling: Tiling, default: float = 0.0
            ) -> np.ndarray:
    """The dense tensor `blocks` stand for (missing keys hold `default`)."""
    grid = _grid(shape, tiling)
    keyed = keyed_axes(tiling, shape)
    flat = np.full((prod(r for r, _ in grid), prod(b for _, b in grid)), default,
                   dtype=blocks.values.dtype if default == 0 else np.float64)
    if len(blocks):
        keys = [np.zeros(len(blocks), dtype=np.int64)] * len(grid)
        for a, k in zip(keyed, blocks.keys):
            keys[a] = k
        index = np.ravel_multi_index(keys, [r for r, _ in grid]) if grid else 0
        flat[index] = blocks.dense(flat.shape[1], default)
    tiles = flat.reshape([r for r, _ in grid] + [b for _, b in grid])
    order = [x for a in range(len(grid)) for x in (a, len(grid) + a)]
    padded = tiles.transpose(order).reshape([r * b for r, b in grid])
    result = padded[tuple(slice(0, n) for n in shape)]
    # a contiguous view of our own array needs no copy (no padding cut off, no transpose)
    return result if getattr(result, "ndim", 0) and result.flags.c_contiguous else result.copy()


def compose_sparse(blocks: Blocks, shape: tuple[int, ...], tiling: Tiling,
                   default: float = 0.0) -> sp.sparray:
    """The tensor `blocks` stand for as a scipy.sparse array, its entries that differ from
    `default` only (never densified): CSR for a matrix, COO for any other number of axes."""
    grid = _grid(shape, tiling)
    size = prod(b for _, b in grid)
    offsets = None                    # the entries' flat offsets in their payloads
    if blocks.bounds is not None:
        tuples, offsets, values = entries(blocks.values, blocks.bounds)
        kept = values != default
        tuples, offsets, values = tuples[kept], offsets[kept], values[kept]
    elif size == 1:                   # scalar payloads: the keys are the coordinates
        values = blocks.values.reshape(len(blocks))
        kept = values != default
        tuples = slice(None) if kept.all() else np.flatnonzero(kept)
        values = values[tuples]
    else:
        payload = blocks.values.reshape(len(blocks), size)
        tuples, offsets = np.nonzero(payload != default)
        values = payload[tuples, offsets]
    within = np.unravel_index(offsets, [b for _, b in grid]) if offsets is not None else None
    keys = dict(zip(keyed_axes(tiling, shape), blocks.keys))
    # scipy.sparse's own index type where it fits: the array is built 2x quicker
    index = np.int32 if max(shape) < 2 ** 31 else np.int64
    coords = []
    for a, (_, b) in enumerate(grid):
        coord = keys[a][tuples] if a in keys else np.zeros(len(values), dtype=index)
        if b > 1:
            coord = coord * b + within[a]
        coords.append(coord.astype(index, copy=False))
    if len(shape) == 2:
        return sp.csr_array((values, tuple(coords)), shape=shape)
    return sp.coo_array((values, tuple(coords)), shape=shape)
