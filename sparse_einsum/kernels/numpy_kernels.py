"""NumPy implementations of the kernel functions, applied to whole batches of tuples.

They are the bodies of the arrow UDFs registered in DuckDB; the operations themselves
come from the table in `sparse_einsum.program.ops`.
"""
from __future__ import annotations

from math import prod
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from numpy.lib.stride_tricks import as_strided

from ..blocks import entries, pack, unpack
from ..program.ops import AGGREGATES, OPS, SPARSE_DRIVEN, numpy_function
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



# -- sparse payloads -----------------------------------------------------------------------
class Packed(NamedTuple):
    """A batch of packed sparse payloads (see `sparse_einsum.blocks`): tuple t is
    values[bounds[t]:bounds[t + 1]]."""
    values: np.ndarray
    bounds: np.ndarray


def run_sparse_kernel(spec: KernelSpec, inputs: list, sparse: tuple[bool, ...],
                      constants: dict[int, object] | None = None) -> np.ndarray:
    """`run_kernel` where the inputs flagged in `sparse` are `Packed` batches (a constant
    one: a Packed of one tuple). A contraction with one sparse operand in matrix-product
    form is one scipy CSR x dense product per batch (a min or max of sums over absent infs,
    `SPARSE_DRIVEN`, folds its stored entries' sums in); anything else runs densified (a
    packed input's absent entries filled with its default, `KernelSpec.fills`)."""
    constants = constants or {}
    fills = spec.fills or (0.0,) * spec.arity
    if spec.arity == 2 and sum(sparse) == 1 and \
            SPARSE_DRIVEN.get((spec.op, spec.agg)) == fills[sparse.index(True)]:
        s = sparse.index(True)
        found = _sparse_product(spec, s, inputs, constants)
        if found is not None:
            return found if spec.out_dims else found[:, 0]
    dense = [x if not packed or x is None else unpack(*x, size, fill)
             for x, packed, size, fill in zip(inputs, sparse, spec.in_sizes, fills)]
    dense_constants = {k: unpack(*c, spec.in_sizes[k], fills[k])[0] if sparse[k] else c
                       for k, c in constants.items()}
    return run_kernel(spec, *dense, constants=dense_constants)


def _matrix_axes(strides: tuple[int, ...], dims: tuple[int, ...], size: int) -> list[int] | None:
    """The loop dimensions an operand's payload holds, in its row-major order, when its
    strides are a row-major layout of them (no diagonal); None otherwise."""
    mine = sorted((t for t, s in enumerate(strides) if s), key=lambda t: -strides[t])
    step = 1
    for t in reversed(mine):
        if strides[t] != step:
            return None
        step *= dims[t]
    return mine if step == size else None


def _sparse_product(spec: KernelSpec, s: int, inputs: list, constants: dict) -> np.ndarray | None:
    """out = S @ D per tuple as one block-diagonal CSR product (for a min or max of sums,
    S's entries plus D's rows folded in), or None when the kernel is not in matrix-product
    form (every reduced dimension in both operands, every output dimension in exactly one)
    or the dense operand holds values the absent entries would meet (0 * inf and inf + -inf
    must give NaN, as densified)."""
    d = 1 - s
    dims, n_out = spec.dims, spec.n_out
    dense = constants[d].reshape(1, -1) if d in constants else inputs[d]
    absent = SPARSE_DRIVEN[(spec.op, spec.agg)]
    if np.isnan(dense).any() or (np.isinf(dense).any() if spec.agg == "sum"
                                 else (dense == -absent).any()):
        return None
    s_axes = _matrix_axes(spec.strides[s], dims, spec.in_sizes[s])
    d_axes = _matrix_axes(spec.strides[d], dims, spec.in_sizes[d])
    if s_axes is None or d_axes is None:
        return None
    in_s, in_d = set(s_axes), set(d_axes)
    if any((t in in_s) == (t in in_d) for t in range(n_out)) or \
            any(t not in in_s or t not in in_d for t in range(n_out, len(dims))):
        return None
    rows_t = [t for t in range(n_out) if t in in_s]          # S's output dims, loop order
    cols_t = list(range(n_out, len(dims)))                   # contracted dims
    outd_t = [t for t in range(n_out) if t in in_d]          # D's output dims
    R, K, N = (prod(dims[t] for t in ts) for ts in (rows_t, cols_t, outd_t))
    packed = constants.get(s, inputs[s])
    tuples, offsets, values = entries(packed.values, packed.bounds)
    index = np.unravel_index(offsets, [dims[t] for t in s_axes])
    at = dict(zip(s_axes, index))

    def flat(ts: list[int]) -> np.ndarray:
        if not ts:
            return np.zeros(len(offsets), dtype=np.int64)
        return np.ravel_multi_index([at[t] for t in ts], [dims[t] for t in ts])

    rows, cols = flat(rows_t), flat(cols_t)
    batch = len(dense) if s in constants else len(packed.bounds) - 1
    # D as (tuples, K, N): its payload axes reordered to contracted dims, then its outputs
    d_view = np.asarray(dense, dtype=np.float64).reshape([len(dense)] + [dims[t] for t in d_axes])
    order = [0] + [1 + d_axes.index(t) for t in cols_t + outd_t]
    d_mat = d_view.transpose(order).reshape(len(dense), K, N)
    if spec.agg != "sum":          # each stored entry plus D's row, folded into its row
        fold, result = AGGREGATES[spec.agg].pairwise, np.full((batch, R, N), absent)
        if s in constants:         # one S for every tuple of D
            targets = ((t * R + rows, d_mat[t, cols]) for t in range(batch))
        else:
            targets = [(tuples * R + rows, d_mat[0 if d in constants else tuples, cols])]
        for at_row, d_rows in targets:     # flat indices: ufunc.at's fast path (10x)
            fold.at(result.reshape(-1), (at_row[:, None] * N + np.arange(N)).ravel(),
                    (values[:, None] + d_rows).ravel())
    elif s in constants:             # one S for every tuple: S @ [D_1 ... D_T]
        s_mat = sp.csr_matrix((values, (rows, cols)), shape=(R, K))
        result = (s_mat @ d_mat.transpose(1, 0, 2).reshape(K, -1)).reshape(R, batch, N)
        result = result.transpose(1, 0, 2)
    elif d in constants:           # [S_1; ...; S_T] @ D
        s_mat = sp.csr_matrix((values, (tuples * R + rows, cols)), shape=(batch * R, K))
        result = (s_mat @ d_mat[0]).reshape(batch, R, N)
    else:                          # block diagonal: S_t @ D_t for every t
        s_mat = sp.csr_matrix((values, (tuples * R + rows, tuples * K + cols)),
                              shape=(batch * R, batch * K))
        result = (s_mat @ d_mat.reshape(batch * K, N)).reshape(batch, R, N)
    # (tuples, S outputs, D outputs) into the kernel's output order
    shaped = np.asarray(result).reshape([batch] + [dims[t] for t in rows_t + outd_t])
    place = rows_t + outd_t
    return shaped.transpose([0] + [1 + place.index(t) for t in range(n_out)]).reshape(batch, -1)


def sparsify(values: np.ndarray) -> Packed:
    """Dense payloads (tuples, size) packed sparse."""
    return Packed(*pack(values))
