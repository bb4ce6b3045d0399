"""Shared fixtures: one DuckDB backend per test session, a PostgreSQL DSN when available."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

try:
    from pg_server import pg_dsn  # noqa: E402,F401
except ImportError:  # written alongside the PostgreSQL backend
    pass


@pytest.fixture(scope="session")
def duck():
    from sparse_einsum.backends.duckdb import DuckDBBackend
    backend = DuckDBBackend()
    yield backend
    backend.close()
