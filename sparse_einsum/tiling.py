"""How a tensor is split between the key columns of a relation and the payload of its
tuples: a tile size per axis.

An axis of size n with tile size b is

* promoted (b = 1): the key column holds the index; nothing of it is in the payload;
* demoted (b = n): the payload holds the whole axis; there is no key column;
* tiled (1 < b < n): the key column holds ``index // b`` and the payload axis, of
  length b, holds ``index % b``. When b does not divide n the last tile is padded with
  zeros; only vertices where padding stays zero use such tiles (see `pads`).

So an axis has a key column when b < n and a payload axis when b > 1 (an axis of size
1 has neither). A payload is stored dense (row-major over the payload axes) or sparse
(`SPARSE`: the flat offsets of its non-zeros, then their values, in one array).
"""
from __future__ import annotations

from functools import lru_cache
from math import ceil, expm1, log1p, prod

import numpy as np

Tiling = tuple[int, ...]           # a tile size per axis
# the functions of tilings below are cached: the optimizer asks about a few tilings many times


def promotion(shape: tuple[int, ...], keyed: tuple[int, ...] | frozenset[int]) -> Tiling:
    """The tiling that promotes the axes `keyed` and demotes the others."""
    return tuple(1 if a in keyed else n for a, n in enumerate(shape))


@lru_cache(maxsize=None)
def keyed_axes(tiling: Tiling, shape: tuple[int, ...]) -> tuple[int, ...]:
    """Axes with a key column (promoted or tiled)."""
    return tuple(a for a, (b, n) in enumerate(zip(tiling, shape)) if b < n)


@lru_cache(maxsize=None)
def payload_axes(tiling: Tiling) -> tuple[int, ...]:
    """Axes in the payload (demoted or tiled)."""
    return tuple(a for a, b in enumerate(tiling) if b > 1)


@lru_cache(maxsize=None)
def payload_dims(tiling: Tiling) -> tuple[int, ...]:
    return tuple(b for b in tiling if b > 1)


@lru_cache(maxsize=None)
def payload_size(tiling: Tiling) -> int:
    return prod(payload_dims(tiling))


@lru_cache(maxsize=None)
def middle_tiling(have: Tiling, need: Tiling) -> Tiling:
    """A repartition's intermediate tiling: an axis whose tile size changes is cut into the
    tiles it needs where those divide the tiles it has, else promoted (a 169,343 x 256
    tensor of rows into 64 x 64 tiles explodes into 677k pieces of 64, not 43M scalars)."""
    return tuple(h if h == n else n if h % n == 0 else 1 for h, n in zip(have, need))


def stacks_scalars(have: Tiling, need: Tiling) -> bool:
    """Whether repartitioning `have` into `need` stacks scalars only (the payloads that
    `need` has come wholly from keys): an engine can then pack them sparse directly."""
    middle = middle_tiling(have, need)
    return middle != need and not payload_axes(middle)


def key_range(b: int, n: int) -> int:
    """How many values a key column of tile size b takes on an axis of size n."""
    return ceil(n / b)


def split_index(index: np.ndarray, b: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(index // b, index % b) of integers in [0, n): shifts and masks when b is a power
    of two (inputs are split this way on every load), nothing computed for b = 1 or n."""
    if b == 1:
        return index, np.zeros_like(index)
    if b >= n:
        return np.zeros_like(index), index
    if b & (b - 1) == 0:
        return tile_index(index, b), index & (b - 1)
    return np.divmod(index, b)


def tile_index(index: np.ndarray, b: int) -> np.ndarray:
    """index // b of non-negative integers (`index` itself for b = 1)."""
    if b == 1:
        return index
    return index >> (b.bit_length() - 1) if b & (b - 1) == 0 else index // b


@lru_cache(maxsize=None)
def pads(tiling: Tiling, shape: tuple[int, ...]) -> bool:
    """Whether some tile is padded (a tile size that does not divide its axis)."""
    return any(1 < b < n and n % b for b, n in zip(tiling, shape))


def render(label: str, b: int, n: int) -> str:
    """A label in UCLC notation: ``I`` promoted, ``i`` demoted, ``I/1024`` tiled."""
    if b >= n:
        return label
    return label.upper() if b == 1 else f"{label.upper()}/{b}"


def tile_sizes(n: int) -> tuple[int, ...]:
    """Candidate tile sizes strictly between 1 and n: powers of two from 64 to n/2, no
    smaller than n/4096 (at most 4096 tiles along an axis), at most three of them,
    spread out."""
    found = [1 << k for k in range(6, max(n, 2).bit_length())
             if max(64, n / 4096) <= 1 << k <= n / 2]
    if len(found) > 3:
        found = [found[0], found[len(found) // 2], found[-1]]
    return tuple(found)


@lru_cache(maxsize=None)
def tile_distinct(distinct: float, n: int, b: int) -> float:
    """Expected occupied tile indices along an axis of size n with `distinct` occupied
    indices, spread uniformly, grouped by tiles of b (exact for b = 1 and b = n)."""
    if b >= n:
        return 1.0 if distinct > 0 else 0.0
    if b == 1 or n <= 0:
        return float(distinct)
    if distinct >= n:
        return float(key_range(b, n))
    return key_range(b, n) * -expm1(b * log1p(-distinct / n))
