"""Shared fixtures: a DuckDB backend, a PostgreSQL backend (when a server is available;
never skipped in CI), and `backend`, which runs a test once on each."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from pg_server import pg_dsn  # noqa: E402,F401


@pytest.fixture(scope="session")
def duck():
    from sparse_einsum.backends.duckdb import DuckDBBackend
    backend = DuckDBBackend()
    yield backend
    backend.close()


@pytest.fixture(scope="session")
def pg(pg_dsn):
    from sparse_einsum.backends.pg_kernels import install_kernels
    from sparse_einsum.backends.postgres import PostgresBackend
    from sparse_einsum.errors import BackendError
    try:
        backend = PostgresBackend(pg_dsn)
    except BackendError:
        install_kernels(pg_dsn)
        backend = PostgresBackend(pg_dsn)
    yield backend
    backend.close()


@pytest.fixture(params=["duckdb", "postgres"])
def backend(request):
    return request.getfixturevalue("duck" if request.param == "duckdb" else "pg")
