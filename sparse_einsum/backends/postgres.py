"""The PostgreSQL backend: binary COPY in and out, kernels from the C extension; inputs
held in one tuple bound as parameters to the statements that read only them (`pg_bind`);
outputs no later statement reads are copied out of their statement's query, never
stored."""
from __future__ import annotations

from contextlib import contextmanager, nullcontext
from typing import Iterator, Sequence

import numpy as np

from ..blocks import Blocks
from ..errors import BackendError
from ..extras import require
from ..inputs import SourceInput, read_file
from ..sql.pipeline import statement_query
from ..sql.postgres import PostgresDialect
from ..sql.steps import Step, TableRelation
from ..sql.templates import render
from . import blas
from .base import Backend, arrow_columns
from .pg_bind import BoundInputs
from .pg_copy import copy_in_arrays, copy_out_arrays, execute_raw, insert_rows, result_arrays
from .pg_kernels import check_kernels
from .pg_settings import CLIENT_CHECK, client_check_works, session_setting


class PostgresBackend(Backend):
    """Runs compiled steps on a PostgreSQL database given by `dsn` (or a psycopg connection)."""
    name = "postgres"

    def __init__(self, dsn: str | None = None, *, connection=None, work_mem: str = "256MB"):
        psycopg = require("psycopg")
        self._owns = connection is None
        if connection is None:
            if not dsn:
                raise BackendError("the postgres backend needs a DSN (--dsn or dsn=...)")
            try:
                connection = psycopg.connect(dsn, autocommit=True)
            except psycopg.Error as exc:
                first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                raise BackendError(f"cannot connect to PostgreSQL: {first}") from None
        self.conn = connection
        self.conn.prepare_threshold = None      # tables are made and dropped all the time
        check_kernels(self.conn)
        self.kernel_detail = blas.describe(self.conn.execute(
            render("postgres/setting"), ("sparse_einsum_kernels.blas_library",)).fetchone()[0])
        self._set("work_mem", work_mem)
        # Tables are made and filled just before they are read, without statistics: the
        # planner's estimates run to billions of rows and its JIT compiles (with LLVM
        # inlining and optimisation) for seconds what runs in less (measured: the SpMM
        # statement 4.1 s with JIT, 2.6 s without)
        self._set("jit", "off")
        try:   # arrays in tuples: lz4 TOAST compression is several times faster than pglz
            self._set("default_toast_compression", "lz4")
        except psycopg.Error:
            pass
        # The server ends a statement whose client vanished within CLIENT_CHECK instead of
        # running it to its end: for this session, or on a caller's connection for the
        # backend's transactions only (nothing where the server cannot check)
        checks = client_check_works(self.conn)
        if checks and self._owns:
            self._set("client_connection_check_interval", CLIENT_CHECK)
        self._check_in_transactions = checks and not self._owns
        self.dialect = PostgresDialect()
        self.bound = BoundInputs(self.dialect, self.memory_limit()[0])

    def _set(self, name: str, value: str) -> None:
        """The session's setting `name` is `value` from now on."""
        self.conn.execute(render("postgres/set_setting"), (name, value))

    def scope(self):
        return self.transaction()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        checking = (session_setting(self.conn, "client_connection_check_interval", CLIENT_CHECK)
                    if self._check_in_transactions else nullcontext())
        with self.conn.transaction(), checking:
            yield

    def drop(self, rel: TableRelation) -> None:
        from psycopg import pq
        if self.bound.pop(rel.table) is None and \
                self.conn.info.transaction_status != pq.TransactionStatus.INERROR:
            # else the failed transaction's rollback removes it
            self.conn.execute(render("common/drop_table", self.dialect.quote, table=rel.table))

    def row_count(self, rel: TableRelation) -> int:
        if (held := self.bound.relations.get(rel.table)) is not None:
            return len(held[1])
        return int(self.conn.execute(render("common/row_count", self.dialect.quote,
                                            table=rel.table)).fetchone()[0])

    def memory_limit(self) -> tuple[int, str] | None:
        text, size = self.conn.execute(render("postgres/work_mem")).fetchone()
        return int(size), f"PostgreSQL's work_mem {text}"

    def close(self) -> None:
        if self._owns:
            self.conn.close()

    def load(self, rel: TableRelation, blocks: Blocks) -> None:
        if not self.bound.keep(rel, blocks):
            self._store(rel, blocks)

    def _store(self, rel: TableRelation, blocks: Blocks) -> None:
        q = self.dialect.q
        keys = [f"{q(c)} bigint" for c in rel.columns]
        integers = blocks.values.dtype.kind in "biu"
        value = "val float8[]" if not rel.is_scalar else ("val bigint" if integers else "val float8")
        create = (f"CREATE {self.dialect.table_kind} {q(rel.table)} "
                  f"({', '.join(keys + [value])}){self.dialect.table_options}")
        if not rel.is_scalar:   # payloads past a page: TOAST them without trying compression
            create += f"; ALTER TABLE {q(rel.table)} ALTER COLUMN val SET STORAGE EXTERNAL"
        self.conn.execute(create)
        if len(blocks) == 0:
            return
        keys = dict(zip(rel.columns, blocks.keys))
        if rel.is_scalar:
            copy_in_arrays(self.conn, q(rel.table), keys, blocks.values)
        elif rel.sparse:
            insert_rows(self.conn, q(rel.table), keys, blocks.values, blocks.bounds)
        else:
            insert_rows(self.conn, q(rel.table), keys, blocks.values,
                        np.arange(len(blocks) + 1, dtype=np.int64) * rel.sub_size)

    def _store_held(self, tables) -> None:
        """Store those of the `tables` that are held (see `pg_bind`)."""
        for table in tables:
            if (held := self.bound.pop(table)) is not None:
                self._store(*held)

    def _bound_to(self, step: Step) -> tuple[list[tuple[str, str]], list[np.ndarray]]:
        """The held inputs that go with `step` as parameters: their common table
        expressions and parameters (`BoundInputs.bind`); the others it reads are stored."""
        taken = self.bound.takes(step)
        self._store_held(step.reads - set(taken))
        return self.bound.bind(taken)

    def fetch(self, rel: TableRelation, source: str | None = None,
              params: list[np.ndarray] = ()) -> Blocks:
        """The relation `rel` from its table, or from the query `source` that computes it
        (binary COPY; a query with `params`, which COPY cannot take, as a SELECT with
        binary results)."""
        q = self.dialect.q
        value = "val" if rel.is_scalar else f"se_raw(val, {rel.sub_size})"   # raw bytes
        cols = ", ".join([f"CAST({q(c)} AS bigint) AS {q(c)}" for c in rel.columns] + [value])
        if not source:
            self._store_held([rel.table])
        select = f"SELECT {cols} FROM {f'({source}) AS q' if source else q(rel.table)}"
        if params:
            keys, values = result_arrays(execute_raw(self.conn, select, params, rows=True))
        else:
            keys, values = copy_out_arrays(self.conn, select)
        shape = (len(values),) if rel.is_scalar else (len(values), rel.sub_size)
        return Blocks(list(keys.values()), values.reshape(shape))

    def run(self, step: Step) -> None:
        """The step's statement; the held inputs it takes go with it as parameters."""
        inputs, params = self._bound_to(step)
        if not inputs:
            self.conn.execute(step.sql)
            return
        execute_raw(self.conn, self.dialect.create(
            step.target.table, statement_query(step, self.dialect, inputs)), params)

    def run_and_fetch(self, step: Step) -> Blocks:
        """Read straight from the step's query through COPY: its result is never stored
        (measured: a 51 MB result tuple costs 0.3 s to write and 0.3 s to fetch back)."""
        inputs, params = self._bound_to(step)
        return self.fetch(step.target, statement_query(step, self.dialect, inputs), params)

    def query(self, sql: str, params: Sequence = ()) -> list[tuple]:
        self._store_held(list(self.bound.relations))     # SQL not composed here
        return self.conn.execute(sql, list(params) or None).fetchall()

    def execute(self, sql: str) -> None:
        self._store_held(list(self.bound.relations))
        self.conn.execute(sql)

    def source_from(self, source: SourceInput, scratch: str) -> str:
        """Files and Arrow tables are copied in (binary COPY) to a scratch table."""
        table = arrow_columns(source, read_file(source) if source.kind == "file" else source.arrow)
        q = self.dialect.q
        cols = [f"{q(k)} bigint" for k in source.keys] + (
            [f"{q(source.value)} float8"] if source.value else [])
        self.conn.execute(f"CREATE TEMP TABLE {q(scratch)} ({', '.join(cols)})")
        if table.num_rows:
            keys = {k: table.column(k).to_numpy() for k in source.keys}
            values = table.column(source.value).to_numpy() if source.value else None
            copy_in_arrays(self.conn, q(scratch), keys, values,
                           value_column=source.value or "val")
        return q(scratch)

    def release_source(self, scratch: str) -> None:
        self.conn.execute(render("common/drop_table", self.dialect.quote, table=scratch))
