"""Database backends, by name: each a `Backend` (see `base`) over one engine."""
from __future__ import annotations

from importlib import import_module

from ..errors import SparseEinsumError
from ..extras import missing
from .base import Backend

BACKENDS = {"duckdb": "sparse_einsum.backends.duckdb:DuckDBBackend",
            "postgres": "sparse_einsum.backends.postgres:PostgresBackend",
            "spark": "sparse_einsum.backends.spark:SparkBackend"}


def backend_class(name: str) -> type[Backend]:
    if name not in BACKENDS:
        raise SparseEinsumError(f"unknown backend {name!r}: use {' or '.join(map(repr, BACKENDS))}")
    module, cls = BACKENDS[name].split(":")
    try:
        return getattr(import_module(module), cls)
    except ImportError as exc:
        raise (missing(exc) or exc) from None


def open_backend(spec: object = "duckdb", *, shared: bool = False, **options
                 ) -> tuple[Backend, bool]:
    """A backend from a name (with its options), a Backend, or a DuckDB or psycopg
    connection or a SparkSession; and whether the caller owns it (must close it).
    `shared`: a name without options may run on the engine the process keeps open (see
    `Backend.shared`; for sessions, whose tables are temporary)."""
    options = {k: v for k, v in options.items() if v is not None}
    if isinstance(spec, Backend):
        _no_options(spec, options)
        return spec, False
    if isinstance(spec, str):
        cls = backend_class(spec)
        backend = cls.shared() if shared and not options else None
        return backend or cls(**options), True
    kind = type(spec).__module__.split(".")[0]
    if kind in ("duckdb", "_duckdb"):
        return backend_class("duckdb")(spec, **options), True
    if kind == "psycopg":
        return backend_class("postgres")(connection=spec, **options), True
    if kind == "pyspark":
        return backend_class("spark")(session=spec, **options), True
    raise SparseEinsumError(f"unknown backend {spec!r}: use {' or '.join(map(repr, BACKENDS))}, "
                            "a DuckDB connection, a psycopg connection or a SparkSession")


def _no_options(backend: Backend, options: dict) -> None:
    if options:
        raise SparseEinsumError(f"options {', '.join(sorted(options))} apply to a backend opened "
                                f"by name, not to the {backend.name} backend given")
