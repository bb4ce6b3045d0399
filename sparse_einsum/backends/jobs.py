"""The dialects a compiled job (see `compile_job`) is written in, one row each: its SQL
dialect, the shell that runs the job, and how the job is wrapped for that shell."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..sql.dialect import Dialect
from ..sql.duckdb import DuckDBBuiltinDialect, DuckDBNativeDialect
from ..sql.postgres import PostgresDialect
from ..sql.spark import KERNEL_CATALOG, SparkNativeDialect
from . import duckdb_extension, spark_jar
from ..sql.templates import SQL, literal, render
from .pg_kernels import KERNELS_VERSION
from .pg_settings import CLIENT_CHECK_SECONDS


@dataclass(frozen=True)
class JobDialect:
    """One dialect a job is written in: its SQL dialect, the shell that runs the job and
    the template (in ``sql_templates/``) wrapping the job's transaction for that shell."""
    dialect: type[Dialect]
    shell: str                          # named in the header: the engine and its client
    run: tuple[str, ...]                # the header's run instructions ({extension}: its path)
    template: str                       # its wrapper (hole ``body``: the job's statements)
    options: tuple[str, ...]            # the compile options (JOB_OPTIONS) it takes
    extension: bool = False             # LOADs the sparse_einsum DuckDB extension
    checks: bool = False                # checks the kernels' version and the client first
    kernels: Callable[[], Path] | None = None   # the kernels file it needs by default
    without_kernels: str = ""           # what to do without them, after "--extension"
    output: str = "common/job_output"   # writes an output (holes output, columns, table)
    publish: str | None = None          # renames staged outputs at the end (no transactions)
    drop: str = "common/job_drop"       # drops an intermediate
    fold_case: bool = False             # identifiers are case-insensitive even when quoted
    trains: bool = True                 # compiles training iterations (`compile --train`)
    atomic: str = ("One transaction: on any error nothing is changed; intermediates are TEMP "
                   "tables, dropped at the end.")

    def written(self, output: str, prefix: str) -> str:
        """The table an output is written to: its own, or a staged one when published."""
        return f"{prefix}_new_{output}" if self.publish else output

    def wrap(self, body: str, extension: str | None = None) -> str:
        """The job's statements `body` in the wrapper: stop at the first error, check
        for (or LOAD) the kernels, one transaction."""
        holes: dict = {"body": SQL(body)}
        if self.extension:
            holes["extension"] = literal(extension)
        if self.checks:
            holes |= {"check_seconds": CLIENT_CHECK_SECONDS,
                      "kernels_version": literal(KERNELS_VERSION)}
        return render(self.template, **holes)


_STATISTICS = "--dsn is for postgres, --database for duckdb"
JOB_OPTIONS = {"dsn": _STATISTICS, "database": _STATISTICS,    # option -> where it applies
               "extension": "--extension is for duckdb and spark"}
_DUCKDB = "DuckDB (duckdb command-line shell)"
JOBS = {
    "postgres": JobDialect(
        PostgresDialect, "PostgreSQL (psql)",
        ("run:  psql \"DSN\" -f job.sql",
         f"      (needs the sparse_einsum_kernels extension {KERNELS_VERSION}: "
         "sparse-einsum install-kernels --dsn DSN)"),
        "postgres/job", ("dsn",), checks=True),
    "duckdb": JobDialect(
        DuckDBNativeDialect, _DUCKDB,
        ("run:  duckdb -unsigned FILE.duckdb -f job.sql   (-unsigned lets it load the extension)",
         "      (needs the sparse_einsum DuckDB extension at {extension}; "
         "sparse-einsum build-extension builds it and prints its path)"),
        "duckdb/job", ("database", "extension"), extension=True,
        kernels=duckdb_extension.extension_path, fold_case=True,
        without_kernels=", or compile with --dialect duckdb-builtin (no extension, small arrays "
                        "only)"),
    "duckdb-builtin": JobDialect(
        DuckDBBuiltinDialect, _DUCKDB,
        ("run:  duckdb FILE.duckdb -f job.sql   (or: duckdb FILE.duckdb < job.sql)",),
        "duckdb/job_builtin", ("database",), fold_case=True),
    "spark": JobDialect(
        SparkNativeDialect, "Spark SQL (spark-sql)",
        ("run:  spark-sql --jars {extension} --conf "
         f"spark.sql.catalog.{KERNEL_CATALOG}={spark_jar.CATALOG_CLASS} -f job.sql",
         "      (needs the sparse_einsum Spark kernel jar at {extension}: "
         "sparse-einsum build-extension --spark builds it and prints its path)"),
        "spark/job", ("extension",), kernels=spark_jar.jar_path, output="spark/job_output",
        publish="spark/job_publish", drop="spark/job_drop", fold_case=True, trains=False,
        atomic="Spark SQL has no transactions: the job stops at its first error, and writes "
               "its outputs to staged tables renamed over the old ones at the end, so a "
               "failure before then changes no output; intermediates are cached temporary "
               "views, dropped at the end."),
}
