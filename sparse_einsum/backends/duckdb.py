"""The DuckDB backend: loads relations from Arrow, registers NumPy kernels as
arrow UDFs, runs the compiled statements and fetches results."""
from __future__ import annotations

from typing import Callable, Sequence

import duckdb
from duckdb import sqltypes

from ..blocks import Blocks
from ..inputs import SourceInput
from ..kernels.arrow_kernels import (aggregate_function, kernel_function, sparsify_function,
                                     split_function, stack_function)
from ..sql.duckdb import DuckDBDialect, file_scan
from ..sql.steps import KernelUse, Step, TableRelation
from .base import Backend, arrow_relation, relation_blocks

_LIST = sqltypes.DuckDBPyType(list[float])


def _literal(text: str) -> str:
    return "'" + str(text).replace("'", "''") + "'"


def _type(is_list: bool):
    return _LIST if is_list else sqltypes.DOUBLE


class DuckDBBackend(Backend):
    """Runs compiled steps on a DuckDB connection (in-memory unless `database` is given).

    A caller's connection gets its own cursor: same database, and an unfinished result
    of the caller's does not block our statements."""
    name = "duckdb"

    def __init__(self, connection: duckdb.DuckDBPyConnection | None = None, *,
                 database: str = ":memory:", memory_limit: str | None = None,
                 temp_directory: str | None = None, threads: int | None = None,
                 read_only: bool = False):
        if connection is None:
            connection = duckdb.connect(database, read_only=read_only)
            self.con = connection
        else:
            self.con = connection.cursor()
        self.con.execute("SET enable_progress_bar = false")
        for setting, value in (("memory_limit", memory_limit), ("temp_directory", temp_directory)):
            if value:
                self.con.execute(f"SET {setting} = {_literal(value)}")
        if threads:
            self.con.execute(f"SET threads = {int(threads)}")
        self.dialect = DuckDBDialect()

    def close(self) -> None:
        self.con.close()     # our own connection, or our cursor on the caller's

    # -- data in and out ----------------------------------------------------
    def load(self, rel: TableRelation, blocks: Blocks) -> None:
        view = f"{rel.table}_arrow"
        self.con.register(view, arrow_relation(rel, blocks))
        try:
            self.con.execute(f'CREATE TABLE "{rel.table}" AS SELECT * FROM "{view}"')
        finally:
            self.con.unregister(view)

    def fetch(self, rel: TableRelation) -> Blocks:
        cols = ", ".join(self.dialect.q(c) for c in rel.columns + ("val",))
        return relation_blocks(rel, self.con.sql(
            f"SELECT {cols} FROM {self.dialect.q(rel.table)}").to_arrow_table())

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
            return aggregate_function(use.agg, use.expected_count), [
                sqltypes.DuckDBPyType(list[list[float]]), sqltypes.BIGINT], _LIST
        if use.kind == "sparsify":
            return sparsify_function, [_LIST], _LIST
        if use.kind == "split":
            return split_function(use.spec), [_LIST], sqltypes.DuckDBPyType(list[list[float]])
        if use.kind == "stack":
            item = duckdb.struct_type({"p": sqltypes.BIGINT, "v": _type(use.args_are_lists[0])})
            return stack_function(use.spec, use.args_are_lists[0]), [duckdb.list_type(item)], _LIST
        raise ValueError(use.kind)

    def _kernel_udf(self, use: KernelUse):
        apply = kernel_function(use.spec, use.args_are_lists, use.returns_list,
                                self.kernel_constants(use), use.sparse)
        params = [_type(is_list) for is_list in use.args_are_lists]
        udf = (lambda a: apply(a)) if len(params) == 1 else (lambda a, b: apply(a, b))
        return udf, params, _type(use.returns_list)
