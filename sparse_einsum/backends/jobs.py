"""The dialects a compiled job (see `compile_job`) is written in, one row each: its SQL
dialect, the shell that runs the job, and how the job is wrapped for that shell."""
from __future__ import annotations

from dataclasses import dataclass
from ..sql.dialect import Dialect
from ..sql.duckdb import DuckDBBuiltinDialect, DuckDBNativeDialect
from ..sql.postgres import PostgresDialect
from .pg_kernels import KERNELS_VERSION
from .pg_settings import CLIENT_CHECK


@dataclass(frozen=True)
class JobDialect:
    """One dialect a job is written in: its SQL dialect, the shell that runs the job and
    how the job wraps its transaction for that shell."""
    dialect: type[Dialect]
    shell: str                          # named in the header: the engine and its client
    run: tuple[str, ...]                # the header's run instructions ({extension}: its path)
    stop_on_error: str                  # the shell's command to stop at the first error
    options: tuple[str, ...]            # the compile options (JOB_OPTIONS) it takes
    checks: tuple[str, ...] = ()        # statements run before the transaction
    extension: bool = False             # LOADs the sparse_einsum DuckDB extension


# psql's session: the server ends the job's statements within CLIENT_CHECK of psql
# vanishing (PostgreSQL 14 or later where it can check; nothing elsewhere)
_CLIENT_CHECK = (f"-- the server stops this job within {CLIENT_CHECK} of psql vanishing\n"
                 "DO $se_client$\nBEGIN\n"
                 f"  SET client_connection_check_interval = '{CLIENT_CHECK}';\n"
                 "EXCEPTION WHEN undefined_object OR invalid_parameter_value THEN\n"
                 "  NULL;   -- before PostgreSQL 14, or a platform where it cannot check\n"
                 "END\n$se_client$;")

_HINT = "install them with: sparse-einsum install-kernels --dsn DSN"
_KERNELS_CHECK = (
    "DO $se_check$\nBEGIN\n"
    "  IF to_regprocedure('se_kernels_version()') IS NULL THEN\n"
    "    RAISE EXCEPTION 'this job needs the sparse_einsum_kernels extension %, which is "
    f"not installed in this database', '{KERNELS_VERSION}' USING HINT = '{_HINT}';\n"
    "  END IF;\n"
    f"  IF se_kernels_version() <> '{KERNELS_VERSION}' THEN\n"
    "    RAISE EXCEPTION 'this job needs sparse_einsum_kernels %, found %', "
    f"'{KERNELS_VERSION}', se_kernels_version() USING HINT = '{_HINT}';\n"
    "  END IF;\nEND\n$se_check$;")


_STATISTICS = "--dsn is for postgres, --database for duckdb"
JOB_OPTIONS = {"dsn": _STATISTICS, "database": _STATISTICS,    # option -> where it applies
               "extension": "--extension is for duckdb"}
_DUCKDB = "DuckDB (duckdb command-line shell)"
JOBS = {
    "postgres": JobDialect(
        PostgresDialect, "PostgreSQL (psql)",
        ("run:  psql \"DSN\" -f job.sql",
         f"      (needs the sparse_einsum_kernels extension {KERNELS_VERSION}: "
         "sparse-einsum install-kernels --dsn DSN)"),
        "\\set ON_ERROR_STOP on", ("dsn",), checks=(_CLIENT_CHECK, _KERNELS_CHECK)),
    "duckdb": JobDialect(
        DuckDBNativeDialect, _DUCKDB,
        ("run:  duckdb -unsigned FILE.duckdb -f job.sql   (-unsigned lets it load the extension)",
         "      (needs the sparse_einsum DuckDB extension at {extension}; "
         "sparse-einsum build-extension builds it and prints its path)"),
        ".bail on", ("database", "extension"), extension=True),
    "duckdb-builtin": JobDialect(
        DuckDBBuiltinDialect, _DUCKDB,
        ("run:  duckdb FILE.duckdb -f job.sql   (or: duckdb FILE.duckdb < job.sql)",),
        ".bail on", ("database",)),
}
