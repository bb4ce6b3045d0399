"""The DuckDB backend: loads relations from Arrow, runs the compiled statements with the
sparse_einsum extension's C kernels (or, where it cannot be loaded, NumPy kernels as
arrow UDFs) and fetches results."""
from __future__ import annotations

import os
import re
import warnings
from pathlib import Path
from typing import Callable, Sequence

import duckdb
import numpy as np
import pyarrow as pa
from duckdb import sqltypes

from ..blocks import Blocks
from ..errors import BackendError
from ..inputs import SourceInput
from ..kernels.numpy_kernels import (
    Packed, position_offsets, run_kernel, run_sparse_kernel, sparsify,
)
from ..kernels.spec import GatherSpec, KernelSpec
from ..memory import parse_size
from ..program.ops import AGGREGATES
from ..sql.dialect import Dialect
from ..sql.duckdb import DuckDBDialect, DuckDBNativeDialect, file_scan
from ..sql.steps import KernelUse, Step, TableRelation
from . import duckdb_extension
from .base import Backend

_LIST = sqltypes.DuckDBPyType(list[float])
# database files this package creates are readable by DuckDB from this version on (the
# duckdb shell on PyPI, duckdb-cli, is at 1.5 while the Python package is at 2.0)
STORAGE_VERSION = "v1.5.0"
_SPILL_FILE = re.compile(r"^duckdb_temp_([0-9]+)_")


def _literal(text: str) -> str:
    return "'" + str(text).replace("'", "''") + "'"


def _type(is_list: bool):
    return _LIST if is_list else sqltypes.DOUBLE


_NUMPY_TYPES = {pa.float64(): np.float64, pa.int64(): np.int64, pa.int32(): np.int32}


def _from_arrow(array: pa.Array) -> np.ndarray:
    """An arrow array as NumPy, zero-copy for numbers without NULLs (pyarrow's to_numpy
    imports pandas, a second or more of a first call's wall time)."""
    dtype = _NUMPY_TYPES.get(array.type)
    if dtype is None or array.null_count:
        return array.to_numpy(zero_copy_only=False)
    return np.frombuffer(array.buffers()[1], dtype=dtype, count=len(array),
                         offset=array.offset * np.dtype(dtype).itemsize)


def _to_arrow(values: np.ndarray) -> pa.Array:
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
    parts = [_from_arrow(part(c)) for c in chunks]
    return parts[0] if len(parts) == 1 else np.concatenate(parts) if parts else np.zeros(0)


def _rows(array) -> np.ndarray:
    """A DOUBLE[] arrow column as a (rows, width) array (every list has the same length)."""
    n = len(array)
    flat = _numpy(array, lambda chunk: chunk.flatten())
    return flat.reshape(n, -1) if n else flat.reshape(0, 0)


def _packed(array) -> Packed:
    """A DOUBLE[] arrow column of packed sparse payloads (lists of any length)."""
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    offsets = _from_arrow(array.offsets).astype(np.int64)   # into the whole child, even
    values = _from_arrow(array.values)                       # for a slice of the array
    start = offsets[0] if len(offsets) else 0
    return Packed(values[start:offsets[-1] if len(offsets) else 0], offsets - start)


def _ragged_array(values: np.ndarray, bounds: np.ndarray) -> pa.Array:
    """Lists of any length: list t is values[bounds[t]:bounds[t + 1]]."""
    bounds = np.asarray(bounds if len(bounds) else [0])
    offsets = _to_arrow(bounds.astype(np.int64 if bounds[-1] >= 1 << 31 else np.int32))
    cls = pa.LargeListArray if offsets.type == pa.int64() else pa.ListArray
    return cls.from_arrays(offsets, _to_arrow(np.asarray(values, dtype=np.float64)))


def _scalars(array) -> np.ndarray:
    return _numpy(array, lambda chunk: chunk)


def _list_array(values: np.ndarray, mask: np.ndarray | None = None) -> pa.Array:
    """(rows, width) -> a DOUBLE[] arrow array; rows where `mask` is True are NULL."""
    rows, width = values.shape
    offsets = _to_arrow(np.arange(0, rows * width + 1, max(width, 1), dtype=np.int32)[: rows + 1]
                        if width else np.zeros(rows + 1, dtype=np.int32))
    flat = _to_arrow(np.ascontiguousarray(values, dtype=np.float64).reshape(-1))
    if mask is None:
        return pa.ListArray.from_arrays(offsets, flat)
    bits = pa.py_buffer(np.packbits(np.asarray(mask, dtype=bool), bitorder="little"))
    return pa.ListArray.from_arrays(offsets, flat, mask=pa.Array.from_buffers(
        pa.bool_(), rows, [None, bits]))


def connect(database: str, read_only: bool = False, native: bool = True
            ) -> duckdb.DuckDBPyConnection:
    """A connection to a DuckDB database file (or ``:memory:``), allowing the unsigned
    sparse_einsum extension when `native`; a file another process holds, or one in a
    missing directory, is a one-line BackendError. A file it creates is written in
    STORAGE_VERSION, so that the duckdb shell can run compiled jobs on it."""
    new_file = database != ":memory:" and not Path(database).exists()
    config = {"storage_compatibility_version": STORAGE_VERSION} if new_file else {}
    if native:
        config["allow_unsigned_extensions"] = "true"
    try:
        return duckdb.connect(database, read_only=read_only, config=config)
    except duckdb.Error as exc:
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        holder = re.search(r"Conflicting lock is held in (.*) \(PID (\d+)\)", message)
        parent = Path(database).parent
        if holder:
            why = f"it is in use by process {holder.group(2)} ({holder.group(1)})"
        elif not parent.is_dir():
            why = f"directory {parent} does not exist"
        else:
            why = message
        raise BackendError(f"cannot open DuckDB database {database}: {why}") from None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:                 # exists, owned by someone else
        return True
    return True


class DuckDBBackend(Backend):
    """Runs compiled steps on a DuckDB connection (in-memory unless `database` is given).

    Its own connections allow unsigned extensions and load the sparse_einsum extension.
    `native`: None (default) uses it when it loads and otherwise falls back to the
    UDF kernels with one warning (a caller's connection opened without
    allow_unsigned_extensions, no C compiler); True requires it; False never loads it.
    A caller's connection gets its own cursor: same database, and an unfinished result
    of the caller's does not block our statements."""
    name = "duckdb"
    memory_share = 1 / 2     # one tuple or kernel call: at most half, the rest for the operators

    def __init__(self, connection: duckdb.DuckDBPyConnection | None = None, *,
                 database: str = ":memory:", memory_limit: str | None = None,
                 temp_directory: str | None = None, threads: int | None = None,
                 read_only: bool = False, native: bool | None = None):
        if connection is None:
            self.con = connect(database, read_only=read_only, native=native is not False)
        else:
            self.con = connection.cursor()
        try:
            self.con.execute("SET enable_progress_bar = false")
            for setting, value, what in (
                    ("memory_limit", memory_limit, "is not a size such as 2GB, 512MiB or 50%"),
                    ("temp_directory", temp_directory, "cannot be used")):
                if value:
                    try:
                        self.con.execute(f"SET {setting} = {_literal(value)}")
                    except duckdb.Error:
                        raise BackendError(f"{setting.replace('_', ' ')} {value!r} {what}") from None
            if threads:
                self.con.execute(f"SET threads = {int(threads)}")
            self.dialect = self._kernels(native)
        except BaseException:
            self.con.close()
            raise

    def _kernels(self, native: bool | None) -> Dialect:
        """The native dialect when the extension loads, else the UDF one (`fallback` says why)."""
        if native is False:
            self.fallback = "the extension was not requested (native=False)"
            return DuckDBDialect()
        try:
            duckdb_extension.load(self.con)
            return DuckDBNativeDialect()
        except BackendError as exc:
            if native:
                raise
            self.fallback = str(exc)
            warnings.warn(f"sparse-einsum runs DuckDB kernels as Python UDFs (slower): "
                          f"{self.fallback}", RuntimeWarning, stacklevel=2)
            return DuckDBDialect()

    def leftover_files(self) -> list[Path]:
        """Spill files of DuckDB processes that are gone (named duckdb_temp_PID_...)."""
        directory = Path(self.query("SELECT current_setting('temp_directory')")[0][0] or ".tmp")
        if not directory.is_dir():
            return []
        return [path for path in sorted(directory.iterdir())
                if (m := _SPILL_FILE.match(path.name)) and not _alive(int(m.group(1)))]

    def memory_limit(self) -> tuple[int, str] | None:
        text = self.query("SELECT current_setting('memory_limit')")[0][0]
        size = parse_size(str(text).replace(" ", ""))
        return (size, f"DuckDB's memory_limit {text}") if size else None

    def close(self) -> None:
        self.con.close()     # our own connection, or our cursor on the caller's

    # -- data in and out ----------------------------------------------------
    def load(self, rel: TableRelation, blocks: Blocks) -> None:
        columns = {c: _to_arrow(np.asarray(k, dtype=np.int64))
                   for c, k in zip(rel.columns, blocks.keys)}
        if rel.is_scalar:
            columns["val"] = _to_arrow(blocks.values)       # DOUBLE, or BIGINT for integers
        elif rel.sparse:
            columns["val"] = _ragged_array(blocks.values, blocks.bounds)
        else:
            columns["val"] = _list_array(np.asarray(blocks.values, dtype=np.float64)
                                         .reshape(len(blocks), rel.sub_size))
        view = f"{rel.table}_arrow"
        self.con.register(view, pa.table(columns))
        try:
            self.con.execute(self.dialect.create(rel.table, f'SELECT * FROM "{view}"'))
        finally:
            self.con.unregister(view)

    def fetch(self, rel: TableRelation) -> Blocks:
        cols = ", ".join(self.dialect.q(c) for c in rel.columns + ("val",))
        table = self.con.sql(f"SELECT {cols} FROM {self.dialect.q(rel.table)}").to_arrow_table()
        keys = [_scalars(table.column(c)).astype(np.int64) for c in rel.columns]
        val = table.column("val")
        if rel.sparse:
            return Blocks(keys, *_packed(val))
        values = _scalars(val) if rel.is_scalar else \
            _rows(val).reshape(table.num_rows, rel.sub_size)
        return Blocks(keys, values)

    def query(self, sql: str, params: Sequence = ()) -> list[tuple]:
        return self.con.execute(sql, list(params)).fetchall()

    def execute(self, sql: str) -> None:
        self.con.execute(sql)

    def source_from(self, source: SourceInput, scratch: str) -> str:
        """Files are read in place; an Arrow table is scanned through a registered view
        (their columns were checked when they were bound)."""
        if source.kind == "file":
            return file_scan(source.location, source.file_format)
        self.con.register(scratch, source.arrow)
        return self.dialect.q(scratch)

    def release_source(self, scratch: str) -> None:
        try:
            self.con.unregister(scratch)
        except duckdb.Error:
            pass

    # -- statements ---------------------------------------------------------
    def run(self, step: Step) -> None:
        for use in step.kernels:
            self._register(use)
        try:
            self.con.execute(step.sql)
        finally:
            for use in step.kernels:
                self.con.remove_function(use.name)

    def _register(self, use: KernelUse) -> None:
        fn, params, returns = self._udf(use)
        self.con.create_function(use.name, fn, params, returns, type="arrow",
                                 null_handling="special", side_effects=False)

    def _udf(self, use: KernelUse) -> tuple[Callable, list, object]:
        if use.kind == "kernel":
            return self._kernel_udf(use)
        if use.kind == "aggregate":
            return _aggregate_udf(use.agg, use.expected_count), [
                sqltypes.DuckDBPyType(list[list[float]]), sqltypes.BIGINT], _LIST
        if use.kind == "sparsify":
            return (lambda dense: _ragged_array(*sparsify(_rows(dense)))), [_LIST], _LIST
        if use.kind == "split":
            return _split_udf(use.spec), [_LIST], sqltypes.DuckDBPyType(list[list[float]])
        if use.kind == "stack":
            item = duckdb.struct_type({"p": sqltypes.BIGINT, "v": _type(use.args_are_lists[0])})
            return _stack_udf(use.spec, use.args_are_lists[0]), [duckdb.list_type(item)], _LIST
        raise ValueError(use.kind)

    def _kernel_udf(self, use: KernelUse):
        spec: KernelSpec = use.spec
        sparse = use.sparse or (False,) * spec.arity
        constants: dict[int, object] = {}
        if use.constant is not None:
            position, rel = use.constant
            fetched = self.fetch(rel)
            if rel.sparse:
                constants[position] = Packed(fetched.values, fetched.bounds) if len(fetched) \
                    else Packed(np.zeros(0), np.zeros(2, dtype=np.int64))
            else:
                constants[position] = np.zeros(rel.sub_size) if len(fetched) == 0 else \
                    np.asarray(fetched.values, dtype=np.float64).reshape(-1)

        def read(array, is_list: bool, packed: bool):
            return (_packed(array) if packed else _rows(array)) if is_list else _scalars(array)

        def apply(*arrays):
            batch = iter(read(a, is_list, packed) for a, is_list, packed in
                         zip(arrays, use.args_are_lists,
                             [s for k, s in enumerate(sparse) if k not in constants]))
            inputs = [None if k in constants else next(batch) for k in range(spec.arity)]
            if any(sparse):
                out = run_sparse_kernel(spec, inputs, sparse, constants)
            else:
                out = run_kernel(spec, *inputs, constants=constants)
            return _list_array(out) if use.returns_list else _to_arrow(out)

        params = [_type(is_list) for is_list in use.args_are_lists]
        udf = (lambda a: apply(a)) if len(params) == 1 else (lambda a, b: apply(a, b))
        return udf, params, _type(use.returns_list)


def _aggregate_udf(agg: str, expected: int):
    """Element-wise AGG over each group's list of vectors (and 0 where tuples are missing)."""
    pairwise = AGGREGATES[agg].pairwise

    def udf(groups, counts):
        if isinstance(groups, pa.ChunkedArray):
            groups = groups.combine_chunks()
        lengths = _from_arrow(groups.value_lengths())
        rows = _rows(groups.flatten())
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
        out = pairwise.reduceat(rows, starts, axis=0) if len(rows) else np.zeros((0, 0))
        if agg != "sum":
            short = _scalars(counts) < expected
            out[short] = pairwise(out[short], 0.0)
        return _list_array(out)
    return udf


def _split_udf(spec: GatherSpec):
    """Every piece of each value along the new axes, NULL where a piece is all zero."""
    base = position_offsets(np.arange(spec.positions), spec.new_dims, spec.new_strides)
    offsets = position_offsets(np.arange(spec.sub_size), spec.sub_dims, spec.sub_strides)
    index = (base[:, None] + offsets[None, :]).reshape(-1)

    def udf(values):
        rows = _rows(values)
        pieces = rows[:, index].reshape(len(rows) * spec.positions, spec.sub_size) if len(rows) \
            else np.zeros((0, spec.sub_size))
        inner = _list_array(pieces, mask=~np.any(pieces != 0, axis=1))
        outer = np.arange(0, len(rows) * spec.positions + 1, spec.positions, dtype=np.int32)
        return pa.ListArray.from_arrays(_to_arrow(outer), inner)
    return udf


def _stack_udf(spec: GatherSpec, values_are_lists: bool):
    offsets = position_offsets(np.arange(spec.sub_size), spec.sub_dims, spec.sub_strides)

    def udf(groups):
        if isinstance(groups, pa.ChunkedArray):
            groups = groups.combine_chunks()
        lengths = _from_arrow(groups.value_lengths())
        items = groups.flatten()
        positions = _scalars(items.field("p")).astype(np.int64)
        values = items.field("v")
        values = _rows(values) if values_are_lists else _scalars(values).reshape(-1, 1)
        group = np.repeat(np.arange(len(lengths)), lengths)
        out = np.zeros((len(lengths), spec.size))
        base = position_offsets(positions, spec.new_dims, spec.new_strides)
        out[group[:, None], base[:, None] + offsets[None, :]] = values
        return _list_array(out)
    return udf
