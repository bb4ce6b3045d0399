"""NumPy implementations of the kernel functions, applied to whole batches of tuples.

They are the bodies of the arrow UDFs registered in DuckDB; the operations themselves
come from the table in `sparse_einsum.program.ops`.
"""
from __future__ import annotations

from math import prod

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ..program.ops import AGGREGATES, OPS, numpy_function
from .spec import KernelSpec

# elements one kernel chunk may materialise (op applied before the reduction)
_CHUNK_ELEMENTS = 1 << 22


def _view(flat: np.ndarray, dims: tuple[int, ...], strides: tuple[int, ...],
          keep_broadcast: bool) -> tuple[np.ndarray, list[int]]:
    """A (batch, *dims) strided view of a (batch, size) array; drops stride-0 dims
    unless `keep_broadcast`. Returns the view and the loop dims it covers."""
    axes = [t for t, s in enumerate(strides) if keep_broadcast or s != 0]
    item = flat.itemsize
    view = as_strided(flat, shape=(flat.shape[0], *(dims[t] for t in axes)),
                      strides=(flat.strides[0], *(strides[t] * item for t in axes)),
                      writeable=False)
    return view, axes


def run_kernel(spec: KernelSpec, *inputs: np.ndarray | None,
               constants: dict[int, np.ndarray] | None = None) -> np.ndarray:
    """Apply a kernel to a batch: each input is (batch, size) or (batch,) for size 1.

    `constants` maps an input position to one flat value shared by every tuple (that
    input is then None in `inputs`). Returns (batch, out_size), or (batch,) for scalars.
    """
    constants = constants or {}
    batched = [k for k, x in enumerate(inputs) if k not in constants]
    batch = inputs[batched[0]].shape[0]
    flats: list[np.ndarray] = []
    for k, x in enumerate(inputs):
        flat = constants[k].reshape(1, -1) if k in constants else x.reshape(batch, -1)
        flat = np.ascontiguousarray(flat, dtype=np.float64)
        if flat.shape[1] != spec.in_sizes[k]:
            raise ValueError(f"kernel input {k} has {flat.shape[1]} elements, "
                             f"spec needs {spec.in_sizes[k]}")
        flats.append(flat)
    out_size = spec.out_size
    out = np.empty((batch, out_size))
    contraction = spec.arity == 2 and spec.op == "mul" and spec.agg == "sum"
    per_row = out_size + sum(size for k, size in enumerate(spec.in_sizes) if k not in constants) \
        if contraction else prod(spec.dims)
    step = max(1, _CHUNK_ELEMENTS // max(1, per_row))
    with np.errstate(all="ignore"):
        for lo in range(0, batch, step):
            chunk = [f if k in constants else f[lo:lo + step] for k, f in enumerate(flats)]
            n = min(step, batch - lo)
            out[lo:lo + step] = _run_chunk(spec, chunk, set(constants), n).reshape(n, out_size)
    return out if spec.out_dims else out[:, 0]


def _run_chunk(spec: KernelSpec, flats: list[np.ndarray], shared: set[int], n: int
               ) -> np.ndarray:
    """One chunk of `n` tuples; inputs in `shared` are a single (1, size) row for all."""
    n_loop = len(spec.dims)
    reduce_axes = tuple(range(1 + spec.n_out, 1 + n_loop))
    if spec.arity == 2 and spec.op == "mul" and spec.agg == "sum":   # a contraction
        terms = []
        for k, (flat, strides) in enumerate(zip(flats, spec.strides)):
            view, axes = _view(flat, spec.dims, strides, keep_broadcast=False)
            if k in shared or n == 1:
                terms += [view[0], axes]
            else:
                terms += [view, [n_loop] + axes]
        result = np.einsum(*terms, [n_loop] + list(range(spec.n_out))
                           if len(shared) < 2 and n > 1 else list(range(spec.n_out)),
                           optimize=True)
        return result.reshape(n, -1) if n > 1 and len(shared) < 2 else \
            np.broadcast_to(result.reshape(1, -1), (n, max(result.size, 1)))
    views = [_view(f, spec.dims, s, keep_broadcast=True)[0] for f, s in zip(flats, spec.strides)]
    if spec.arity == 2:
        values = OPS[spec.op].numpy(views[0], views[1])
    else:
        values = numpy_function(spec.op)(views[0])
    if reduce_axes:
        values = AGGREGATES[spec.agg].numpy(values, axis=reduce_axes)
    return np.broadcast_to(np.asarray(values), (n, *np.shape(values)[1:]))


def position_offsets(positions: np.ndarray, dims, strides) -> np.ndarray:
    """Flat offsets of row-major positions over `dims` placed with `strides`."""
    positions = np.asarray(positions, dtype=np.int64)
    offset = np.zeros(positions.shape, dtype=np.int64)
    rest = positions.copy()
    for d, s in zip(reversed(tuple(dims)), reversed(tuple(strides))):
        offset += (rest % d) * s
        rest //= d
    return offset

