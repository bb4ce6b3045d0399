"""Kernel functions over Arrow arrays: whole batches of tuples in, one Arrow array out.

They are the bodies of the arrow UDFs that DuckDB and Spark call (the same functions on
both engines); the arithmetic is `numpy_kernels`. Every array value of a batch has the
same length (a relation's sub-tensor size).
"""
from __future__ import annotations

from typing import Callable

import numpy as np
import pyarrow as pa

from ..blocks import stored
from ..program.ops import AGGREGATES
from .numpy_kernels import Packed, position_offsets, run_kernel, run_sparse_kernel, sparsify
from .spec import GatherSpec, KernelSpec


_NUMPY_TYPES = {pa.float64(): np.float64, pa.int64(): np.int64, pa.int32(): np.int32}


def from_arrow(array: pa.Array) -> np.ndarray:
    """An arrow array as NumPy, zero-copy for numbers without NULLs (pyarrow's to_numpy
    imports pandas, a second or more of a first call's wall time)."""
    dtype = _NUMPY_TYPES.get(array.type)
    if dtype is None or array.null_count:
        return array.to_numpy(zero_copy_only=False)
    return np.frombuffer(array.buffers()[1], dtype=dtype, count=len(array),
                         offset=array.offset * np.dtype(dtype).itemsize)


def to_arrow(values: np.ndarray) -> pa.Array:
    """A NumPy array of numbers as an arrow array without copying (pa.array imports pandas)."""
    values = np.ascontiguousarray(values)
    if values.dtype not in (np.float64, np.int64, np.int32):
        return pa.array(values)
    return pa.Array.from_buffers(pa.from_numpy_dtype(values.dtype), len(values),
                                 [None, pa.py_buffer(values)])


def _numpy(array, part) -> np.ndarray:
    """`part` of each chunk of an arrow column, as one array (no copy for one chunk:
    pyarrow's combine_chunks copies list columns slowly, even a single chunk)."""
    chunks = array.chunks if isinstance(array, pa.ChunkedArray) else [array]
    parts = [from_arrow(part(c)) for c in chunks]
    return parts[0] if len(parts) == 1 else np.concatenate(parts) if parts else np.zeros(0)


def rows(array) -> np.ndarray:
    """A DOUBLE[] arrow column as a (rows, width) array (every list has the same length)."""
    n = len(array)
    flat = _numpy(array, lambda chunk: chunk.flatten())
    return flat.reshape(n, -1) if n else flat.reshape(0, 0)


def scalars(array) -> np.ndarray:
    return _numpy(array, lambda chunk: chunk)


def packed(array) -> Packed:
    """A DOUBLE[] arrow column of packed sparse payloads (lists of any length)."""
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    offsets = from_arrow(array.offsets).astype(np.int64)    # into the whole child, even
    values = from_arrow(array.values)                        # for a slice of the array
    start = offsets[0] if len(offsets) else 0
    return Packed(values[start:offsets[-1] if len(offsets) else 0], offsets - start)


def ragged_array(values: np.ndarray, bounds: np.ndarray) -> pa.Array:
    """Lists of any length: list t is values[bounds[t]:bounds[t + 1]]."""
    bounds = np.asarray(bounds if len(bounds) else [0])
    offsets = to_arrow(bounds.astype(np.int64 if bounds[-1] >= 1 << 31 else np.int32))
    cls = pa.LargeListArray if offsets.type == pa.int64() else pa.ListArray
    return cls.from_arrays(offsets, to_arrow(np.asarray(values, dtype=np.float64)))


def list_array(values: np.ndarray, mask: np.ndarray | None = None) -> pa.Array:
    """(rows, width) -> a DOUBLE[] arrow array; rows where `mask` is True are NULL."""
    n, width = values.shape
    offsets = to_arrow(np.arange(0, n * width + 1, max(width, 1), dtype=np.int32)[: n + 1]
                       if width else np.zeros(n + 1, dtype=np.int32))
    flat = to_arrow(np.ascontiguousarray(values, dtype=np.float64).reshape(-1))
    if mask is None:
        return pa.ListArray.from_arrays(offsets, flat)
    bits = pa.py_buffer(np.packbits(np.asarray(mask, dtype=bool), bitorder="little"))
    return pa.ListArray.from_arrays(offsets, flat, mask=pa.Array.from_buffers(
        pa.bool_(), n, [None, bits]))


def kernel_function(spec: KernelSpec, args_are_lists: tuple[bool, ...], returns_list: bool,
                    constants: dict[int, object], sparse: tuple[bool, ...] = ()
                    ) -> Callable[..., pa.Array]:
    """The kernel over a batch; inputs in `constants` are bound (not passed per tuple);
    `sparse` (per input position) marks packed sparse payloads."""
    sparse = sparse or (False,) * spec.arity
    passed = [s for k, s in enumerate(sparse) if k not in constants]

    def read(array, is_list: bool, is_packed: bool):
        return (packed(array) if is_packed else rows(array)) if is_list else scalars(array)

    def apply(*arrays):
        batch = iter(read(a, is_list, is_packed)
                     for a, is_list, is_packed in zip(arrays, args_are_lists, passed))
        inputs = [None if k in constants else next(batch) for k in range(spec.arity)]
        out = run_sparse_kernel(spec, inputs, sparse, constants) if any(sparse) else \
            run_kernel(spec, *inputs, constants=constants)
        return list_array(out) if returns_list else to_arrow(out)
    return apply


def sparsify_function(dense: pa.Array) -> pa.Array:
    """Dense payloads packed sparse."""
    return ragged_array(*sparsify(rows(dense)))


def aggregate_function(agg: str, expected: int) -> Callable[[pa.Array, pa.Array], pa.Array]:
    """Element-wise AGG over each group's list of vectors (and 0 where tuples are missing)."""
    pairwise = AGGREGATES[agg].pairwise

    def apply(groups, counts):
        if isinstance(groups, pa.ChunkedArray):
            groups = groups.combine_chunks()
        lengths = from_arrow(groups.value_lengths())
        values = rows(groups.flatten())
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
        out = pairwise.reduceat(values, starts, axis=0) if len(values) else np.zeros((0, 0))
        if agg != "sum":
            short = scalars(counts) < expected
            out[short] = pairwise(out[short], 0.0)
        return list_array(out)
    return apply


def split_function(spec: GatherSpec) -> Callable[[pa.Array], pa.Array]:
    """Every piece of each value along the new axes, NULL where a piece is all the spec's
    fill (+0.0: a piece of -0.0 is kept, 1 / -0.0 is -inf)."""
    base = position_offsets(np.arange(spec.positions), spec.new_dims, spec.new_strides)
    offsets = position_offsets(np.arange(spec.sub_size), spec.sub_dims, spec.sub_strides)
    index = (base[:, None] + offsets[None, :]).reshape(-1)

    def apply(values):
        values = rows(values)
        pieces = values[:, index].reshape(len(values) * spec.positions, spec.sub_size) \
            if len(values) else np.zeros((0, spec.sub_size))
        inner = list_array(pieces, mask=~np.any(stored(pieces, spec.fill), axis=1))
        outer = np.arange(0, len(values) * spec.positions + 1, spec.positions, dtype=np.int32)
        return pa.ListArray.from_arrays(to_arrow(outer), inner)
    return apply


def stack_function(spec: GatherSpec, values_are_lists: bool) -> Callable[[pa.Array], pa.Array]:
    """Scatter each group's list of {p, v} (position, sub-tensor) into a tensor of the
    spec's fill."""
    offsets = position_offsets(np.arange(spec.sub_size), spec.sub_dims, spec.sub_strides)

    def apply(groups):
        if isinstance(groups, pa.ChunkedArray):
            groups = groups.combine_chunks()
        lengths = from_arrow(groups.value_lengths())
        items = groups.flatten()
        positions = scalars(items.field("p")).astype(np.int64)
        values = items.field("v")
        values = rows(values) if values_are_lists else scalars(values).reshape(-1, 1)
        group = np.repeat(np.arange(len(lengths)), lengths)
        out = np.full((len(lengths), spec.size), spec.fill)
        base = position_offsets(positions, spec.new_dims, spec.new_strides)
        out[group[:, None], base[:, None] + offsets[None, :]] = values
        return list_array(out)
    return apply
