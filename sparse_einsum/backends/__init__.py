"""Database backends, by name: each a `Backend` (see `base`) over one engine, and one row
each in BACKENDS saying which connection objects it runs on and which options it takes."""
from __future__ import annotations

from dataclasses import dataclass
from importlib import import_module

from ..errors import SparseEinsumError
from ..extras import missing
from .base import Backend


@dataclass(frozen=True)
class Option:
    """A command-line option of a backend: `--flag VALUE` is its keyword `keyword`."""
    flag: str
    keyword: str
    help: str
    metavar: str | None = None


@dataclass(frozen=True)
class BackendRow:
    cls: str                        # "module:Class" of the Backend
    connections: tuple[str, ...]    # top-level modules of the connection objects it runs on
    connection: str                 # the keyword that takes such an object
    described: str                  # such an object, in messages
    options: tuple[Option, ...]     # its command-line options


BACKENDS = {
    "duckdb": BackendRow(
        "sparse_einsum.backends.duckdb:DuckDBBackend", ("duckdb", "_duckdb"), "connection",
        "a DuckDB connection",
        (Option("--database", "database", "DuckDB database file (default: in memory)",
                "FILE.duckdb"),
         Option("--memory-limit", "memory_limit", "DuckDB memory limit such as 2GB", "SIZE"))),
    "postgres": BackendRow(
        "sparse_einsum.backends.postgres:PostgresBackend", ("psycopg",), "connection",
        "a psycopg connection",
        (Option("--dsn", "dsn", "PostgreSQL connection string (--backend postgres)"),)),
    "spark": BackendRow(
        "sparse_einsum.backends.spark:SparkBackend", ("pyspark",), "session", "a SparkSession",
        (Option("--spark", "master", "Spark master (local[N], spark://HOST:7077, yarn, ...) or "
                "Spark Connect URL (sc://HOST:15002) (--backend spark; default local[*])",
                "URL"),)),
}


def backend_class(name: str) -> type[Backend]:
    if name not in BACKENDS:
        raise SparseEinsumError(f"unknown backend {name!r}: use {' or '.join(map(repr, BACKENDS))}")
    module, cls = BACKENDS[name].cls.split(":")
    try:
        return getattr(import_module(module), cls)
    except ImportError as exc:
        raise (missing(exc) or exc) from None


def open_backend(spec: object = "duckdb", *, shared: bool = False, **options
                 ) -> tuple[Backend, bool]:
    """A backend from a name (with its options), a Backend, or a connection object of a
    backend (a DuckDB or psycopg connection, a SparkSession); and whether the caller owns it
    (must close it). `shared`: a name without options may run on the engine the process
    keeps open (see `Backend.shared`; for sessions, whose tables are temporary)."""
    options = {k: v for k, v in options.items() if v is not None}
    if isinstance(spec, Backend):
        _no_options(spec, options)
        return spec, False
    if isinstance(spec, str):
        cls = backend_class(spec)
        backend = cls.shared() if shared and not options else None
        return backend or cls(**options), True
    kind = type(spec).__module__.split(".")[0]
    for name, row in BACKENDS.items():
        if kind in row.connections:
            return backend_class(name)(**{row.connection: spec}, **options), True
    *first, last = [row.described for row in BACKENDS.values()]
    raise SparseEinsumError(f"unknown backend {spec!r}: use {' or '.join(map(repr, BACKENDS))}, "
                            f"{', '.join(first)} or {last}")


def _no_options(backend: Backend, options: dict) -> None:
    if options:
        raise SparseEinsumError(f"options {', '.join(sorted(options))} apply to a backend opened "
                                f"by name, not to the {backend.name} backend given")
