"""The PostgreSQL backend: binary COPY in and out, kernels from the C extension."""
from __future__ import annotations

import numpy as np

from ..errors import BackendError
from ..relation import Relation
from ..sql.postgres_dialect import PostgresDialect
from ..sql.relations import RelInfo, Step
from .pg_copy import copy_in_arrays, copy_out_arrays
from .pg_kernels import check_kernels


class PostgresBackend:
    """Runs compiled steps on a PostgreSQL database given by `dsn` (or a psycopg connection)."""
    name = "postgres"

    def __init__(self, dsn: str | None = None, *, connection=None, work_mem: str = "256MB"):
        import psycopg
        self.owns = connection is None
        if connection is None:
            if not dsn:
                raise BackendError("the postgres backend needs a DSN (--dsn or dsn=...)")
            try:
                connection = psycopg.connect(dsn, autocommit=True)
            except psycopg.Error as exc:
                first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                raise BackendError(f"cannot connect to PostgreSQL: {first}") from None
        self.conn = connection
        check_kernels(self.conn)
        self.conn.execute("SELECT set_config('work_mem', %s, false)", (work_mem,))
        try:   # arrays in tuples: lz4 TOAST compression is several times faster than pglz
            self.conn.execute("SET default_toast_compression = 'lz4'")
        except psycopg.Error:
            pass
        self.dialect = PostgresDialect()

    def close(self) -> None:
        if self.owns:
            self.conn.close()

    def load(self, rel: RelInfo, relation: Relation) -> None:
        q = self.dialect.q
        keys = [f"{q(c)} bigint" for c in rel.columns]
        value = "val float8" if rel.is_scalar else "val float8[]"
        self.conn.execute(f"CREATE UNLOGGED TABLE {q(rel.table)} ({', '.join(keys + [value])})")
        if len(relation) == 0:
            return
        values = np.asarray(relation.values, dtype=np.float64)
        if not rel.is_scalar:
            values = values.reshape(len(relation), rel.sub_size)
        copy_in_arrays(self.conn, q(rel.table), dict(zip(rel.columns, relation.keys)), values)

    def fetch(self, rel: RelInfo) -> Relation:
        q = self.dialect.q
        if self.row_count(rel) == 0:
            shape = (0,) if rel.is_scalar else (0, rel.sub_size)
            return Relation([np.zeros(0, dtype=np.int64) for _ in rel.columns], np.zeros(shape))
        cols = ", ".join([f"CAST({q(c)} AS bigint) AS {q(c)}" for c in rel.columns] + ["val"])
        keys, values = copy_out_arrays(self.conn, f"SELECT {cols} FROM {q(rel.table)}")
        key_arrays = [np.asarray(k, dtype=np.int64) for k in keys.values()]
        values = np.asarray(values, dtype=np.float64)
        if not rel.is_scalar:
            values = values.reshape(len(values), rel.sub_size)
        return Relation(key_arrays, values)

    def run(self, step: Step) -> None:
        self.conn.execute(step.sql)

    def query(self, sql: str, params: list) -> list[tuple]:
        return self.conn.execute(sql, params or None).fetchall()

    def execute(self, sql: str) -> None:
        self.conn.execute(sql)

    def row_count(self, rel: RelInfo) -> int:
        return int(self.conn.execute(f"SELECT count(*) FROM {self.dialect.q(rel.table)}")
                   .fetchone()[0])

    def drop(self, rel: RelInfo) -> None:
        self.conn.execute(f"DROP TABLE IF EXISTS {self.dialect.q(rel.table)}")
