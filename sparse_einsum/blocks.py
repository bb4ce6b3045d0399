"""A tensor in memory decomposed by a set of promoted axes into blocks, and back.

`Blocks` hold one integer key array per promoted axis (ascending axis order) and the
dense sub-tensor over the demoted axes of each key, flattened row-major (a scalar
when nothing is demoted). All-zero sub-tensors are not kept. This is how arrays go
into and come out of the engines.
"""
from __future__ import annotations

from dataclasses import dataclass
from math import prod

import numpy as np
import scipy.sparse as sp


@dataclass
class Blocks:
    keys: list[np.ndarray]      # one int64 array per promoted axis
    values: np.ndarray          # (tuples, sub_size), or (tuples,) when nothing is demoted

    def __len__(self) -> int:
        return int(self.values.shape[0])


def decompose(tensor: np.ndarray | sp.spmatrix | sp.sparray,
              promoted: tuple[int, ...]) -> Blocks:
    """Split `tensor` by the promoted axes (ascending) into blocks."""
    promoted = tuple(sorted(promoted))
    if sp.issparse(tensor):
        return _decompose_sparse(tensor, promoted)
    array = np.asarray(tensor)
    demoted = [a for a in range(array.ndim) if a not in promoted]
    n_keys = prod(array.shape[a] for a in promoted)
    flat = np.transpose(array, list(promoted) + demoted).reshape(n_keys, -1)
    nonzero = np.flatnonzero(np.any(flat != 0, axis=1))
    keys = np.unravel_index(nonzero, [array.shape[a] for a in promoted]) if promoted else ()
    values = flat[nonzero]
    return Blocks([np.asarray(k, dtype=np.int64) for k in keys],
                  values if demoted else values[:, 0])


def _decompose_sparse(matrix, promoted: tuple[int, ...]) -> Blocks:
    """Without densifying, and without changing the caller's matrix."""
    if matrix.ndim != 2:
        raise ValueError("scipy.sparse inputs must be matrices")
    if promoted == ():
        return decompose(matrix.toarray(), ())
    major = canonical(matrix, "csc" if promoted == (1,) else "csr")
    lines = np.repeat(np.arange(major.shape[promoted[0]], dtype=np.int64), np.diff(major.indptr))
    keep = major.data != 0
    if promoted == (0, 1):
        return Blocks([lines[keep], major.indices[keep].astype(np.int64)], major.data[keep])
    rows = np.unique(lines[keep])
    picked = major[rows] if promoted == (0,) else major[:, rows].T
    return Blocks([rows], picked.toarray())


def canonical(matrix, fmt: str):
    """`matrix` in CSR or CSC with duplicates summed; a copy where that changes anything."""
    converted = matrix.asformat(fmt)
    if not converted.has_canonical_format:
        converted = converted.copy()
        converted.sum_duplicates()
    return converted


def compose(blocks: Blocks, shape: tuple[int, ...], promoted: tuple[int, ...]) -> np.ndarray:
    """The dense tensor `blocks` stand for (missing keys are zeros)."""
    promoted = tuple(sorted(promoted))
    demoted = [a for a in range(len(shape)) if a not in promoted]
    key_shape = [shape[a] for a in promoted]
    dense = np.zeros((prod(key_shape), prod(shape[a] for a in demoted)), dtype=blocks.values.dtype)
    if len(blocks):
        index = np.ravel_multi_index(blocks.keys, key_shape) if promoted else np.zeros(
            len(blocks), dtype=np.int64)
        dense[index] = blocks.values.reshape(len(blocks), -1)
    arranged = dense.reshape(key_shape + [shape[a] for a in demoted])
    return np.transpose(arranged, np.argsort(list(promoted) + demoted)).copy()
