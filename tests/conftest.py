"""Shared fixtures: a DuckDB backend with the native extension and one falling back to
UDF kernels, a PostgreSQL backend (when a server is available; never skipped in CI),
`backend`, which runs a test once on each, `spark`: Spark in local[2] and in
local-cluster[2,1,2048] (two executor processes) with the JVM kernels, and on local[2]
with the Arrow UDF fallback, one session at a time (never skipped in CI), and the duckdb
shell of compiled jobs."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

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
    """DuckDB with the sparse_einsum extension (native C kernels)."""
    from sparse_einsum.backends.duckdb import DuckDBBackend
    with DuckDBBackend(native=True) as backend:
        yield backend


@pytest.fixture(scope="session")
def duck_udf():
    """DuckDB on a caller's connection that does not allow unsigned extensions: the
    fallback to NumPy kernels as arrow UDFs."""
    import duckdb

    from sparse_einsum.backends.duckdb import DuckDBBackend
    with duckdb.connect() as con:
        with pytest.warns(RuntimeWarning, match="allow_unsigned_extensions"):
            backend = DuckDBBackend(con)
        assert backend.dialect.name == "duckdb"
        with backend:
            yield backend


def _missing(what: str) -> None:
    """Skip for a missing optional component (fail when $CI is set: CI installs them all)."""
    if os.environ.get("CI"):
        pytest.fail(what)
    pytest.skip(what)


@pytest.fixture(scope="session")
def pg_kernels(pg_dsn) -> str:
    """pg_dsn with the kernels installed (built here when they are not); skips when they
    cannot be built (no server headers, no make)."""
    from sparse_einsum.backends.pg_kernels import check_kernels, install_kernels
    from sparse_einsum.errors import BackendError
    import psycopg
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        try:
            check_kernels(conn)
            return pg_dsn
        except BackendError:
            pass
    try:
        install_kernels(pg_dsn)
    except BackendError as e:
        _missing(f"the PostgreSQL kernels cannot be installed: {e}")
    return pg_dsn


@pytest.fixture(scope="session")
def pg(pg_kernels):
    from sparse_einsum.backends.postgres import PostgresBackend
    with PostgresBackend(pg_kernels) as backend:
        yield backend


BACKEND_FIXTURES = {"duckdb": "duck", "duckdb-udf": "duck_udf", "postgres": "pg"}


@pytest.fixture(params=list(BACKEND_FIXTURES))
def backend(request):
    """Each engine, DuckDB with and without its extension."""
    return request.getfixturevalue(BACKEND_FIXTURES[request.param])


@pytest.fixture(scope="session")
def duckdb_cli() -> str:
    """The duckdb shell of the PyPI package duckdb-cli (or on PATH)."""
    try:
        import duckdb_cli
        found = Path(duckdb_cli.__file__).parent / "duckdb"
        path = str(found) if found.is_file() else shutil.which("duckdb")
    except ImportError:
        path = shutil.which("duckdb")
    if not path:
        if os.environ.get("CI"):
            pytest.fail("no duckdb shell: pip install duckdb-cli (in the [dev] extra)")
        pytest.skip("no duckdb shell: pip install duckdb-cli")
    return path
# for many small statements: few shuffle partitions, no adaptive re-planning, no code
# generation, and JVMs that compile quickly (C1 only); measured to halve the test time.
# Generous heartbeat timeouts: on a saturated machine (load 25 on 2 cores) an executor
# missed heartbeats for 171 s, was declared lost, and its local checkpoints with it
SPARK_TEST_CONFIG = {
    "spark.network.timeout": "900s",
    "spark.executor.heartbeatInterval": "60s",
    "spark.sql.shuffle.partitions": "2",
    "spark.sql.adaptive.enabled": "false",
    "spark.sql.codegen.wholeStage": "false",
    "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
    "spark.executor.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
}


# (master, kernels): the JVM kernels on both masters, the Arrow UDF fallback on local[2]
# (a second backend on the same session)
SPARK_RUNS = (("local[2]", "jvm"), ("local[2]", "python"), ("local-cluster[2,1,2048]", "jvm"))


@pytest.fixture(scope="session")
def spark_sessions():
    """The backend that owns each master's session, one master at a time."""
    owners: dict = {}
    yield owners
    for owner in owners.values():
        owner.close()


@pytest.fixture(scope="session", params=SPARK_RUNS, ids=["-".join(r) for r in SPARK_RUNS])
def spark(request, spark_sessions):
    """A Spark backend per master and kind of kernels (Spark takes 20-40 s to start: the
    two kinds share a session); skips without pyspark or Java (fails when $CI is set)."""
    from sparse_einsum.errors import BackendError
    master, kernels = request.param
    for other in [m for m in spark_sessions if m != master]:
        spark_sessions.pop(other).close()
    try:
        from sparse_einsum.backends.spark import SparkBackend
        if master not in spark_sessions:
            spark_sessions[master] = SparkBackend(master, config=SPARK_TEST_CONFIG, native=True)
        owner = spark_sessions[master]
        backend = owner if kernels == "jvm" else SparkBackend(session=owner.spark, native=False)
    except (ImportError, BackendError) as e:
        if os.environ.get("CI"):
            pytest.fail(f"Spark did not start: {e}")
        pytest.skip(f"Spark did not start: {e}")
    yield backend
