"""Shared fixtures: a DuckDB backend, a PostgreSQL backend (when a server is available;
never skipped in CI), and `backend`, which runs a test once on each."""
from __future__ import annotations

import os

import pytest

from sparse_einsum.backends.pg_cluster import shared_dsn


@pytest.fixture(scope="session")
def pg_dsn() -> str:
    """DSN of a PostgreSQL server; skips without one (fails when $CI is set)."""
    try:
        dsn = shared_dsn()
    except RuntimeError as e:
        if os.environ.get("CI"):
            pytest.fail(f"PostgreSQL test server failed to start: {e}")
        pytest.skip(f"PostgreSQL test server failed to start: {e}")
    if dsn is None:
        msg = "no PostgreSQL: set SE_TEST_PG_DSN or install postgresql (initdb)"
        if os.environ.get("CI"):
            pytest.fail(msg + " (CI is set: run .ci/pg_setup.sh first)")
        pytest.skip(msg)
    return dsn


@pytest.fixture(scope="session")
def duck():
    from sparse_einsum.backends.duckdb import DuckDBBackend
    with DuckDBBackend() as backend:
        yield backend


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
    with backend:
        yield backend


@pytest.fixture(params=["duckdb", "postgres"])
def backend(request):
    return request.getfixturevalue("duck" if request.param == "duckdb" else "pg")
