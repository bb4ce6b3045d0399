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
    array = np.asarray(tensor, dtype=np.float64)
    demoted = [a for a in range(array.ndim) if a not in promoted]
    n_keys = prod(array.shape[a] for a in promoted)
    flat = np.transpose(array, list(promoted) + demoted).reshape(n_keys, -1)
    nonzero = np.flatnonzero(np.any(flat != 0, axis=1))
    keys = np.unravel_index(nonzero, [array.shape[a] for a in promoted]) if promoted else ()
    values = flat[nonzero]
    return Blocks([np.asarray(k, dtype=np.int64) for k in keys],
                  values if demoted else values[:, 0])


def _decompose_sparse(matrix, promoted: tuple[int, ...]) -> Blocks:
    if matrix.ndim != 2:
        raise ValueError("scipy.sparse inputs must be matrices")
    if promoted == (0, 1):
        csr = sp.csr_matrix(matrix)
        if not csr.has_canonical_format:
            csr = csr.copy()
            csr.sum_duplicates()
        rows = np.repeat(np.arange(csr.shape[0], dtype=np.int64), np.diff(csr.indptr))
        keep = csr.data != 0
        return Blocks([rows[keep], csr.indices[keep].astype(np.int64)],
                        csr.data[keep].astype(np.float64))
    if promoted == ():
        return decompose(matrix.toarray(), ())
    major = sp.csr_matrix(matrix) if promoted == (0,) else sp.csc_matrix(matrix)
    major.eliminate_zeros()
    rows = np.flatnonzero(np.diff(major.indptr))
    picked = major[rows] if promoted == (0,) else major[:, rows].T
    return Blocks([rows.astype(np.int64)], np.asarray(picked.toarray(), dtype=np.float64))


def compose(blocks: Blocks, shape: tuple[int, ...], promoted: tuple[int, ...]) -> np.ndarray:
    """The dense tensor `blocks` stand for (missing keys are zeros)."""
    promoted = tuple(sorted(promoted))
    demoted = [a for a in range(len(shape)) if a not in promoted]
    key_shape = [shape[a] for a in promoted]
    dense = np.zeros((prod(key_shape), prod(shape[a] for a in demoted)))
    if len(blocks):
        index = np.ravel_multi_index(blocks.keys, key_shape) if promoted else np.zeros(
            len(blocks), dtype=np.int64)
        dense[index] = np.asarray(blocks.values, dtype=np.float64).reshape(len(blocks), -1)
    arranged = dense.reshape(key_shape + [shape[a] for a in demoted])
    order = np.argsort(list(promoted) + demoted)
    if (order == np.arange(len(order))).all():
        return arranged             # the keys lead: no copy (arranged views our own array)
    return np.transpose(arranged, order).copy()
