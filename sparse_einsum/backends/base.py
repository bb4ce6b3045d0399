"""What every backend does: the whole protocol, and the code the engines share.

An engine implements `execute`, `query`, `load`, `fetch`, `close` and how it reads an
input held in COO form (`source_from`); the rest (running steps, counting, dropping,
importing tables, files and data frames with their statistics) is shared here.
Backends are context managers.
"""
from __future__ import annotations

import itertools

import re
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import ClassVar, ContextManager, Iterator, Sequence

import numpy as np
import pyarrow as pa

from ..blocks import Blocks
from ..cost import CostParams
from ..errors import DataError
from ..inputs import SourceInput, check_key_type
from ..kernels.arrow_kernels import list_array, packed, ragged_array, rows, scalars, to_arrow
from ..kernels.numpy_kernels import Packed
from ..sql.dialect import Dialect
from ..sql.sources import bounds_select, import_select
from ..sql.steps import KernelUse, Step, TableRelation, key_column
from ..sql.templates import SQL, render
from ..stats.tensor_stats import Degrees, TensorStats

# tables an older version left behind: Session prefixes are se_ and 10 hex digits
LEFTOVER_TABLE = re.compile(r"^se_[0-9a-f]{10}_[A-Za-z0-9_]+$")

# information_schema type names of integer columns (DuckDB and PostgreSQL)
INTEGER_TYPES = {"tinyint", "smallint", "integer", "bigint", "hugeint", "utinyint", "usmallint",
                 "uinteger", "ubigint", "uhugeint", "int", "int2", "int4", "int8"}


class Backend:
    """A database the compiled steps run on."""
    name: ClassVar[str]
    dialect: Dialect
    # the share of `memory_limit()` one tuple or kernel call may take (the optimizer's cap)
    memory_share: ClassVar[float] = 1.0
    fallback: str | None = None     # why the engine's native kernels are not in use
    kernel_detail: str | None = None    # what else explain says of them (DuckDB: its BLAS)

    def __enter__(self) -> "Backend":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- what each engine implements ----------------------------------------------
    def execute(self, sql: str) -> None:
        raise NotImplementedError

    def query(self, sql: str, params: Sequence = ()) -> list[tuple]:
        raise NotImplementedError

    def load(self, rel: TableRelation, blocks: Blocks) -> None:
        """Create the table of `rel` holding `blocks`."""
        raise NotImplementedError

    def fetch(self, rel: TableRelation, source: str | None = None) -> Blocks:
        """The relation `rel` from its table, or from the query `source` that computes it."""
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def source_from(self, source: SourceInput, scratch: str) -> str:
        """A FROM item reading a file or an Arrow table (`scratch`: a name the engine may
        use for a view or table, removed by `release_source`)."""
        raise NotImplementedError

    def release_source(self, scratch: str) -> None:
        """Remove what `source_from` made."""

    @classmethod
    def shared(cls) -> "Backend | None":
        """A backend on an engine this process keeps open for calls that name the engine
        without options (None: every call connects anew)."""
        return None

    def cost_params(self, params: CostParams) -> CostParams:
        """The cost constants with what this connection knows of the engine (a cluster's
        parallelism, say)."""
        return params

    def scope(self) -> ContextManager:
        """Where a session's tables live so that nothing outlives the process: engines whose
        intermediates are TEMP tables need nothing; PostgreSQL runs a transaction (a
        savepoint when nested), so a failure, Ctrl-C or a dropped connection rolls back
        every table made inside."""
        return nullcontext()

    def prepare_run(self, steps: list[Step]) -> None:
        """Settings for a run of `steps`, before the first (none by default)."""

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One transaction: committed at the end of the block, rolled back on any error."""
        self.execute("BEGIN TRANSACTION")
        try:
            yield
        except BaseException:
            self.execute("ROLLBACK")
            raise
        self.execute("COMMIT")

    def memory_limit(self) -> tuple[int, str] | None:
        """The engine's memory limit in bytes and the setting it comes from (for messages),
        or None when there is none."""
        return None

    # -- shared ---------------------------------------------------------------------
    def run(self, step: Step) -> None:
        self.execute(step.sql)

    def run_and_fetch(self, step: Step) -> Blocks:
        """The relation a step computes, fetched and not kept (engines that can read a
        query's result directly do so without storing it)."""
        self.run(step)
        try:
            return self.fetch(step.target)
        finally:
            self.drop(step.target)

    def kernel_constants(self, use: KernelUse) -> dict[int, object]:
        """The operand a kernel binds once (a relation of one tuple): a flat array, or a
        `Packed` of one tuple for a sparse payload."""
        if use.constant is None:
            return {}
        position, rel = use.constant
        fetched = self.fetch(rel)
        if rel.sparse:
            return {position: Packed(fetched.values, fetched.bounds) if len(fetched) else
                    Packed(np.zeros(0), np.zeros(2, dtype=np.int64))}
        return {position: np.zeros(rel.sub_size) if len(fetched) == 0 else
                np.asarray(fetched.values, dtype=np.float64).reshape(-1)}

    def create(self, table: str, select: str, temporary: bool = False) -> None:
        """Create the table `table` holding the rows of `select`."""
        self.execute(self.dialect.create(table, select, temporary))

    def row_count(self, rel: TableRelation) -> int:
        return int(self.query(render("common/row_count", self.dialect.quote,
                                     table=rel.table))[0][0])

    def drop(self, rel: TableRelation) -> None:
        self.execute(render("common/drop_table", self.dialect.quote, table=rel.table))

    def leftovers(self) -> list[str]:
        """What killed runs of older versions left: tables named like a session's
        intermediates (se_ and 10 hex digits), outside temporary schemas."""
        rows = self.query(render("common/tables"))
        q = self.dialect.q
        return [f"{q(schema)}.{q(name)}" for schema, name in rows
                if LEFTOVER_TABLE.match(name) and not schema.startswith("pg_temp")]

    def leftover_files(self) -> list[Path]:
        """Files killed processes left (DuckDB's spill files)."""
        return []

    def cleanup(self, dry_run: bool = False) -> list[str]:
        """Remove (or with `dry_run` only list) the `leftovers` and `leftover_files`."""
        tables, files = self.leftovers(), self.leftover_files()
        if not dry_run:
            for table in tables:
                self.execute(f"DROP TABLE IF EXISTS {table}")
            for path in files:
                path.unlink(missing_ok=True)
        return [f"table {t}" for t in tables] + [f"file {p}" for p in files]

    def table_columns(self, table: str) -> dict[str, str] | None:
        """Column name -> type name of a table, None when there is no such table."""
        rows = self.query(render("common/table_columns", param=SQL(self.dialect.param)), [table])
        return {name: str(kind).lower() for name, kind in rows} or None

    def import_source(self, source: SourceInput, table: str, temporary: bool = False
                      ) -> tuple[TableRelation, TensorStats]:
        """Create the all-promoted relation of `source` as `table`; its keys are checked
        (integers, non-negative, within declared bounds) and its statistics come from SQL."""
        decl = source.decl
        if source.kind == "table":
            columns = self.table_columns(source.location)
            if columns is None:
                raise DataError(f"input {decl.name}: table {source.location!r} does not exist")
            for col in list(source.keys) + ([source.value] if source.value else []):
                if col not in columns:
                    raise DataError(f"input {decl.name}: table {source.location!r} has no column "
                                    f"{col!r} (it has {', '.join(map(repr, columns))})")
            for col in source.keys:
                if columns[col].split("(")[0] not in INTEGER_TYPES:
                    raise DataError(f"input {decl.name}: key column {col!r} of table "
                                    f"{source.location!r} has type {columns[col].upper()}; key "
                                    "columns must hold integers")
            from_sql = self.dialect.q(source.location)
        else:
            from_sql = self.source_from(source, f"{table}_src")
        try:
            shape = self._source_shape(source, from_sql)
            select = import_select(decl.labels, source.keys, source.value, from_sql, self.dialect)
            self.create(table, select, temporary)
        finally:
            if source.kind != "table":
                self.release_source(f"{table}_src")
        rel = TableRelation(table, decl.name, shape, (1,) * len(shape), decl.labels)
        try:
            return rel, self.table_stats(rel)
        except BaseException:
            self.drop(rel)
            raise

    def _source_shape(self, source: SourceInput, from_sql: str) -> tuple[int, ...]:
        decl = source.decl
        row = self.query(bounds_select(source.keys, from_sql, self.dialect))[0] if source.keys else ()
        shape = []
        for n, (label, bound, col) in enumerate(zip(decl.labels, decl.bounds, source.keys)):
            low, high = row[2 * n], row[2 * n + 1]
            if low is not None and low < 0:
                raise DataError(f"input {decl.name}: column {col!r} of {source.describe()} holds "
                                f"the negative key {low} (keys index from 0)")
            size = 0 if high is None else int(high) + 1
            if bound is not None and size > bound:
                raise DataError(f"input {decl.name}: column {col!r} of {source.describe()} holds "
                                f"key {high}, outside the declared bound {label}:{bound}")
            shape.append(bound if bound is not None else size)
        return tuple(shape)

    def table_stats(self, rel: TableRelation) -> TensorStats:
        """GETSTATS by SQL: T(U) and V(l, U) of an all-promoted relation, the bound and
        finiteness of its values, and its degrees per axis."""
        q = self.dialect.q
        distinct = "".join(f", count(DISTINCT {q(key_column(l, a))})"
                           for a, l in enumerate(rel.labels))
        row = self.query(render("common/table_stats", self.dialect.quote, table=rel.table,
                                finite=SQL(self.dialect.finite_sql.format(x="val")),
                                distinct=SQL(distinct)))[0]
        finite = bool(row[2])
        return TensorStats(rel.shape, float(row[0]), tuple(float(x) for x in row[3:]),
                           max_abs=float(row[1]) if finite else float("inf"), finite=finite,
                           degrees=self.table_degrees(rel))

    def table_degrees(self, rel: TableRelation) -> Degrees:
        """The degrees of an all-promoted relation by SQL: per key column the l2 norm and
        the maximum of its rows per key, and for two key columns of one size the dot
        product of their degrees."""
        quote = self.dialect.quote
        cols = [key_column(l, a) for a, l in enumerate(rel.labels)]
        l2, top = [], []
        for col in cols:
            norm, most = self.query(render("common/key_degrees", quote, table=rel.table,
                                           key=col))[0]
            l2.append(float(norm) ** 0.5)
            top.append(float(most))
        dots = {}
        for a, b in itertools.combinations(range(len(cols)), 2):
            if rel.shape[a] == rel.shape[b]:
                dots[(a, b)] = float(self.query(render(
                    "common/degree_dot", quote, table=rel.table, a=cols[a], b=cols[b]))[0][0])
        return Degrees(tuple(l2), tuple(top), dots)


def arrow_columns(source: SourceInput, table: pa.Table) -> pa.Table:
    """The key (int64) and value (float64) columns of an input's Arrow table, checked;
    rows with a NULL are left out (as the import SQL leaves them out)."""
    for col in source.keys:
        check_key_type(source.name, source.describe(), col, table.schema.field(col).type)
    names = list(source.keys) + ([source.value] if source.value else [])
    types = [pa.int64()] * len(source.keys) + ([pa.float64()] if source.value else [])
    try:
        table = pa.table([table.column(n).cast(t) for n, t in zip(names, types)], names=names)
        return table.drop_null()
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise DataError(f"input {source.name}: the columns of {source.describe()} do not convert "
                        f"to integer keys and a double value: {exc}") from None


def arrow_relation(rel: TableRelation, blocks: Blocks) -> pa.Table:
    """The Arrow table of a relation: int64 key columns and ``val`` (DOUBLE, BIGINT for
    exact integers, or DOUBLE[]: dense, or packed sparse)."""
    columns = {c: to_arrow(np.asarray(k, dtype=np.int64))
               for c, k in zip(rel.columns, blocks.keys)}
    if rel.is_scalar:
        columns["val"] = to_arrow(blocks.values)
    elif rel.sparse:
        columns["val"] = ragged_array(blocks.values, blocks.bounds)
    else:
        columns["val"] = list_array(np.asarray(blocks.values, dtype=np.float64)
                                    .reshape(len(blocks), rel.sub_size))
    return pa.table(columns)


def relation_blocks(rel: TableRelation, table: pa.Table) -> Blocks:
    """The blocks of a relation fetched as an Arrow table (its key columns and ``val``)."""
    keys = [scalars(table.column(c)).astype(np.int64) for c in rel.columns]
    val = table.column("val")
    if rel.sparse:
        return Blocks(keys, *packed(val))
    values = scalars(val) if rel.is_scalar else \
        rows(val).reshape(table.num_rows, rel.sub_size)
    return Blocks(keys, values)
