"""The DuckDB backend: loads relations from Arrow, runs the compiled statements with the
sparse_einsum extension's C kernels (or, where it cannot be loaded, NumPy kernels as
arrow UDFs) and fetches results."""
from __future__ import annotations

import warnings
from typing import Callable, Sequence

import duckdb
import numpy as np
import pyarrow as pa
from duckdb import sqltypes

from ..blocks import Blocks
from ..errors import BackendError
from ..inputs import SourceInput
from ..kernels.numpy_kernels import position_offsets, run_kernel
from ..kernels.spec import GatherSpec, KernelSpec
from ..program.ops import AGGREGATES
from ..sql.dialect import Dialect
from ..sql.duckdb import DuckDBDialect, DuckDBNativeDialect, file_scan
from ..sql.steps import KernelUse, Step, TableRelation
from . import duckdb_extension
from .base import Backend

_LIST = sqltypes.DuckDBPyType(list[float])


def _literal(text: str) -> str:
    return "'" + str(text).replace("'", "''") + "'"


def _type(is_list: bool):
    return _LIST if is_list else sqltypes.DOUBLE


def _numpy(array, part) -> np.ndarray:
    """`part` of each chunk of an arrow column, as one array (no copy for one chunk:
    pyarrow's combine_chunks copies list columns slowly, even a single chunk)."""
    chunks = array.chunks if isinstance(array, pa.ChunkedArray) else [array]
    parts = [part(c).to_numpy(zero_copy_only=False) for c in chunks]
    return parts[0] if len(parts) == 1 else np.concatenate(parts) if parts else np.zeros(0)


def _rows(array) -> np.ndarray:
    """A DOUBLE[] arrow column as a (rows, width) array (every list has the same length)."""
    n = len(array)
    flat = _numpy(array, lambda chunk: chunk.flatten())
    return flat.reshape(n, -1) if n else flat.reshape(0, 0)


def _scalars(array) -> np.ndarray:
    return _numpy(array, lambda chunk: chunk)


def _list_array(values: np.ndarray, mask: np.ndarray | None = None) -> pa.Array:
    """(rows, width) -> a DOUBLE[] arrow array; rows where `mask` is True are NULL."""
    rows, width = values.shape
    offsets = pa.array(np.arange(0, rows * width + 1, max(width, 1), dtype=np.int32)[: rows + 1]
                       if width else np.zeros(rows + 1, dtype=np.int32))
    flat = pa.array(np.ascontiguousarray(values).reshape(-1))
    if mask is None:
        return pa.ListArray.from_arrays(offsets, flat)
    return pa.ListArray.from_arrays(offsets, flat, mask=pa.array(mask))


class DuckDBBackend(Backend):
    """Runs compiled steps on a DuckDB connection (in-memory unless `database` is given).

    Its own connections allow unsigned extensions and load the sparse_einsum extension.
    `native`: None (default) uses it when it loads and otherwise falls back to the
    UDF kernels with one warning (a caller's connection opened without
    allow_unsigned_extensions, no C compiler); True requires it; False never loads it.
    A caller's connection gets its own cursor: same database, and an unfinished result
    of the caller's does not block our statements."""
    name = "duckdb"

    def __init__(self, connection: duckdb.DuckDBPyConnection | None = None, *,
                 database: str = ":memory:", memory_limit: str | None = None,
                 temp_directory: str | None = None, threads: int | None = None,
                 read_only: bool = False, native: bool | None = None):
        if connection is None:
            config = {} if native is False else {"allow_unsigned_extensions": "true"}
            connection = duckdb.connect(database, read_only=read_only, config=config)
            self.con = connection
        else:
            self.con = connection.cursor()
        self.con.execute("SET enable_progress_bar = false")
        for setting, value in (("memory_limit", memory_limit), ("temp_directory", temp_directory)):
            if value:
                self.con.execute(f"SET {setting} = {_literal(value)}")
        if threads:
            self.con.execute(f"SET threads = {int(threads)}")
        self.dialect = self._kernels(native)

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

    def close(self) -> None:
        self.con.close()     # our own connection, or our cursor on the caller's

    # -- data in and out ----------------------------------------------------
    def load(self, rel: TableRelation, blocks: Blocks) -> None:
        columns = {c: pa.array(k, type=pa.int64()) for c, k in zip(rel.columns, blocks.keys)}
        if rel.is_scalar:
            columns["val"] = pa.array(blocks.values)        # DOUBLE, or BIGINT for integers
        else:
            columns["val"] = _list_array(np.asarray(blocks.values, dtype=np.float64)
                                         .reshape(len(blocks), rel.sub_size))
        view = f"{rel.table}_arrow"
        self.con.register(view, pa.table(columns))
        try:
            self.con.execute(f'CREATE TABLE "{rel.table}" AS SELECT * FROM "{view}"')
        finally:
            self.con.unregister(view)

    def fetch(self, rel: TableRelation) -> Blocks:
        cols = ", ".join(self.dialect.q(c) for c in rel.columns + ("val",))
        table = self.con.sql(f"SELECT {cols} FROM {self.dialect.q(rel.table)}").to_arrow_table()
        keys = [_scalars(table.column(c)).astype(np.int64) for c in rel.columns]
        val = table.column("val")
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
        if use.kind == "split":
            return _split_udf(use.spec), [_LIST], sqltypes.DuckDBPyType(list[list[float]])
        if use.kind == "stack":
            item = duckdb.struct_type({"p": sqltypes.BIGINT, "v": _type(use.args_are_lists[0])})
            return _stack_udf(use.spec, use.args_are_lists[0]), [duckdb.list_type(item)], _LIST
        raise ValueError(use.kind)

    def _kernel_udf(self, use: KernelUse):
        spec: KernelSpec = use.spec
        constants: dict[int, np.ndarray] = {}
        if use.constant is not None:
            position, rel = use.constant
            fetched = self.fetch(rel)
            constants[position] = np.zeros(rel.sub_size) if len(fetched) == 0 else \
                np.asarray(fetched.values, dtype=np.float64).reshape(-1)

        def apply(*arrays):
            batch = iter((_rows(a) if is_list else _scalars(a)) for a, is_list in
                         zip(arrays, use.args_are_lists))
            inputs = [None if k in constants else next(batch) for k in range(spec.arity)]
            out = run_kernel(spec, *inputs, constants=constants)
            return _list_array(out) if use.returns_list else pa.array(out)

        params = [_type(is_list) for is_list in use.args_are_lists]
        udf = (lambda a: apply(a)) if len(params) == 1 else (lambda a, b: apply(a, b))
        return udf, params, _type(use.returns_list)


def _aggregate_udf(agg: str, expected: int):
    """Element-wise AGG over each group's list of vectors (and 0 where tuples are missing)."""
    pairwise = AGGREGATES[agg].pairwise

    def udf(groups, counts):
        if isinstance(groups, pa.ChunkedArray):
            groups = groups.combine_chunks()
        lengths = groups.value_lengths().to_numpy(zero_copy_only=False)
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
        return pa.ListArray.from_arrays(pa.array(outer), inner)
    return udf


def _stack_udf(spec: GatherSpec, values_are_lists: bool):
    offsets = position_offsets(np.arange(spec.sub_size), spec.sub_dims, spec.sub_strides)

    def udf(groups):
        if isinstance(groups, pa.ChunkedArray):
            groups = groups.combine_chunks()
        lengths = groups.value_lengths().to_numpy(zero_copy_only=False)
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
