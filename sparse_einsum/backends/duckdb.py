"""The DuckDB backend: loads relations from Arrow, runs the compiled statements with the
sparse_einsum extension's C kernels (or, where it cannot be loaded, NumPy kernels as
arrow UDFs) and fetches results."""
from __future__ import annotations

import copy
import os
import re
import threading
import warnings
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence

import duckdb
import pyarrow as pa

from ..blocks import Blocks
from ..errors import BackendError
from ..inputs import SourceInput
from ..memory import parse_size
from ..sql.dialect import Dialect
from ..sql.duckdb import DuckDBDialect, DuckDBNativeDialect, file_scan
from ..sql.pipeline import statement_query
from ..sql.steps import KernelUse, Step, TableRelation
from ..sql.templates import SQL, literal, render
from . import blas, duckdb_extension, udfs
from .base import Backend, arrow_relation, relation_blocks

# database files this package creates are readable by DuckDB from this version on (the
# duckdb shell on PyPI, duckdb-cli, is at 1.5 while the Python package is at 2.0)
STORAGE_VERSION = "v1.5.0"
# rows per Arrow batch of a loaded input (DuckDB scans batches in parallel)
LOAD_BATCH_ROWS = 16384
_SPILL_FILE = re.compile(r"^duckdb_temp_([0-9]+)_")


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


@dataclass
class _Threads:
    """The thread count of a database a backend opened, and whether runs use one now."""
    count: int
    one: bool = False


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
        self._registered: set[str] = set()     # loaded inputs: Arrow tables scanned in place
        if connection is None:
            self.con = connect(database, read_only=read_only, native=native is not False)
        else:
            self.con = connection.cursor()
        try:
            self._set("enable_progress_bar", SQL("false"))
            for setting, value, what in (
                    ("memory_limit", memory_limit, "is not a size such as 2GB, 512MiB or 50%"),
                    ("temp_directory", temp_directory, "cannot be used")):
                if value:
                    try:
                        self._set(setting, literal(str(value)))
                    except duckdb.Error:
                        raise BackendError(f"{setting.replace('_', ' ')} {value!r} {what}") from None
            if threads:
                self._set("threads", SQL(str(int(threads))))
            # the database's threads, where this backend opened it (`prepare_run`)
            self._threads = None if connection else _Threads(int(self._setting("threads")))
            self.dialect = self._kernels(native)
        except BaseException:
            self.con.close()
            raise

    def _set(self, setting: str, value: SQL) -> None:
        self.con.execute(render("duckdb/set", setting=setting, value=value))

    def _setting(self, setting: str):
        return self.query(render("duckdb/setting", setting=literal(setting)))[0][0]

    # (pid, the in-memory database this process keeps open, the first backend on it)
    _engine: tuple[int, duckdb.DuckDBPyConnection, "DuckDBBackend"] | None = None
    _engine_lock = threading.Lock()
    _engine_limit: tuple[int, str] | None = None   # its memory_limit, which nobody else sets

    @classmethod
    def shared(cls) -> "DuckDBBackend":
        """A cursor on the in-memory database this process keeps open (made on first use;
        a forked child makes its own), with what the first backend on it found: a call
        neither opens a database nor loads the extension (about 0.07 s a call) nor asks
        which kernels and BLAS it has (about 1.5 ms a call), and its TEMP tables go with
        the cursor."""
        with cls._engine_lock:
            if cls._engine is None or cls._engine[0] != os.getpid():
                con = connect(":memory:")
                first = cls(con)
                first._threads = _Threads(int(first._setting("threads")))   # the engine is ours
                first._engine_limit = first.memory_limit()
                cls._engine = (os.getpid(), con, first)
            first = cls._engine[2]
        backend = copy.copy(first)
        backend._registered = set()
        backend.con = first.con.cursor()
        try:
            backend._set("enable_progress_bar", SQL("false"))
        except BaseException:
            backend.con.close()
            raise
        return backend

    def _kernels(self, native: bool | None) -> Dialect:
        """The native dialect when the extension loads, else the UDF one (`fallback` says why)."""
        if native is False:
            self.fallback = "the extension was not requested (native=False)"
            return DuckDBDialect()
        try:
            duckdb_extension.load(self.con)
            self.kernel_detail = blas.describe(self.query(render("duckdb/extension_blas"))[0][0])
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
        directory = Path(self._setting("temp_directory") or ".tmp")
        if not directory.is_dir():
            return []
        return [path for path in sorted(directory.iterdir())
                if (m := _SPILL_FILE.match(path.name)) and not _alive(int(m.group(1)))]

    def memory_limit(self) -> tuple[int, str] | None:
        if self._engine_limit:
            return self._engine_limit
        text = self._setting("memory_limit")
        size = parse_size(str(text).replace(" ", ""))
        return (size, f"DuckDB's memory_limit {text}") if size else None

    def close(self) -> None:
        self.con.close()     # our own connection, or our cursor on the caller's

    # -- data in and out ----------------------------------------------------
    def load(self, rel: TableRelation, blocks: Blocks) -> None:
        # scanned in place by the statements (copying it into a table took longer than
        # every scan of it), in batches that DuckDB's threads share
        table = arrow_relation(rel, blocks)
        self.con.register(rel.table, pa.Table.from_batches(
            table.to_batches(max_chunksize=LOAD_BATCH_ROWS), table.schema))
        self._registered.add(rel.table)

    def drop(self, rel: TableRelation) -> None:
        if rel.table in self._registered:
            self._registered.discard(rel.table)
            self.con.unregister(rel.table)
        else:
            super().drop(rel)

    def fetch(self, rel: TableRelation, source: str | None = None) -> Blocks:
        """The relation `rel` from its table, or from the query `source` that computes it."""
        q = self.dialect.q
        cols = ", ".join([q(c) for c in rel.columns] + [f"{q(rel.value)} AS val"])
        source = f"({source}) AS q" if source else self.dialect.q(rel.table)
        return relation_blocks(rel, self.con.sql(f"SELECT {cols} FROM {source}").to_arrow_table())

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
    def prepare_run(self, steps: list[Step]) -> None:
        """One DuckDB thread for a run whose every statement is of one-tuple relations
        (`Step.one_tuple`), the database's own count otherwise. Such statements gain
        nothing from more threads (their kernels have threads of their own), and DuckDB
        stores the large array of such a statement about twice as fast on one thread,
        whose memory stays warm. The count stays until a run needs the other (changing it
        leaves the next statement's memory cold), and is changed only on a database this
        backend opened: it is the database's setting, and a caller's keeps its own."""
        one = all(step.one_tuple for step in steps if step.kind == "sql")
        if self._threads is not None and one != self._threads.one:
            self._set("threads", SQL(str(1 if one else self._threads.count)))
            self._threads.one = one

    def run(self, step: Step) -> None:
        with self._registered_kernels(step):
            self.con.execute(step.sql)

    def run_and_fetch(self, step: Step) -> Blocks:
        """Read straight from the step's query: its result is never stored."""
        with self._registered_kernels(step):
            return self.fetch(step.target, statement_query(step, self.dialect))

    @contextmanager
    def _registered_kernels(self, step: Step) -> Iterator[None]:
        for use in step.kernels:
            self._register(use)
        try:
            yield
        finally:
            for use in step.kernels:
                self.con.remove_function(use.name)

    def _register(self, use: KernelUse) -> None:
        fn, params, returns = udfs.udf(use, self)
        self.con.create_function(use.name, fn, [duckdb.sqltype(t) for t in params],
                                 duckdb.sqltype(returns), type="arrow",
                                 null_handling="special", side_effects=False)
