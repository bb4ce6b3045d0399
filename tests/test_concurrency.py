"""Two runs of the same program at the same time on the same database do not interfere;
calls without a backend of their own share the process's DuckDB."""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import duckdb
import numpy as np

from sparse_einsum import run
from sparse_einsum.backends.duckdb import DuckDBBackend
from sparse_einsum.backends.postgres import PostgresBackend

PROGRAM = """input A[i,j]
input H[j,f]
AH[i,f] = A[i,j] * H[j,f]
Y[i,f] = relu(AH[i,f])
M[i] = max(Y[i,f])
output Y, M"""


def _data(seed):
    rng = np.random.default_rng(seed)
    return {"A": np.where(rng.random((40, 40)) < 0.1, rng.normal(size=(40, 40)), 0.0),
            "H": rng.normal(size=(40, 8))}


def _check(results, datas):
    for got, data in zip(results, datas):
        y = np.maximum(data["A"] @ data["H"], 0.0)
        np.testing.assert_allclose(got["Y"], y, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(got["M"], y.max(axis=1), rtol=1e-12, atol=1e-12)


def test_concurrent_runs_on_one_postgres_database(pg_dsn, pg):
    datas = [_data(s) for s in range(6)]

    def one(k):
        backend = PostgresBackend(pg_dsn)
        try:
            return run(PROGRAM, datas[k], plan=["relational", "optimal", "random:2"][k % 3],
                       backend=backend)
        finally:
            backend.close()

    tables = "SELECT table_name FROM information_schema.tables"
    before = set(pg.query(tables, []))
    with ThreadPoolExecutor(3) as pool:
        _check(list(pool.map(one, range(6))), datas)
    assert set(pg.query(tables, [])) == before


def test_concurrent_runs_on_one_duckdb_file(tmp_path):
    path = str(tmp_path / "shared.duckdb")
    root = duckdb.connect(path)
    datas = [_data(s) for s in range(6)]

    def one(k):
        backend = DuckDBBackend(root.cursor())
        return run(PROGRAM, datas[k], plan=["relational", "optimal", "random:2"][k % 3],
                   backend=backend)

    try:
        with ThreadPoolExecutor(3) as pool:
            _check(list(pool.map(one, range(6))), datas)
        assert root.execute("SELECT count(*) FROM information_schema.tables").fetchall()[0][0] == 0
    finally:
        root.close()


def test_calls_without_a_backend_share_the_process_database_and_leave_nothing():
    """Calls that name DuckDB without options run on cursors of one in-memory database,
    also from several threads at once, and leave no table, view or registered input in
    it; a call with options opens its own, and so does a forked child."""
    datas = [_data(s) for s in range(6)]
    with ThreadPoolExecutor(3) as pool:
        _check(list(pool.map(lambda k: run(PROGRAM, datas[k]), range(6))), datas)
    pid, engine, _ = DuckDBBackend._engine
    assert pid == os.getpid()
    assert engine.execute("SELECT count(*) FROM duckdb_tables()").fetchall() == [(0,)]
    assert engine.execute("SELECT count(*) FROM duckdb_views() WHERE NOT internal"
                          ).fetchall() == [(0,)]
    _check([run(PROGRAM, datas[0], threads=1)], datas[:1])
    assert DuckDBBackend._engine[1] is engine
    DuckDBBackend._engine = (pid + 1, *DuckDBBackend._engine[1:])   # as a forked child finds it
    _check([run(PROGRAM, datas[1])], datas[1:2])
    assert DuckDBBackend._engine[0] == pid and DuckDBBackend._engine[1] is not engine


def test_shared_backends_reuse_what_the_engine_found(monkeypatch):
    """A call on the process's database neither loads the extension again nor asks for its
    BLAS or its memory limit: the first backend on it found them."""
    first = DuckDBBackend.shared()
    first.close()

    def refused(*args, **kwargs):
        raise AssertionError("asked the engine again")
    monkeypatch.setattr("sparse_einsum.backends.duckdb.duckdb_extension.load", refused)
    monkeypatch.setattr(DuckDBBackend, "_setting", refused)
    data = _data(3)
    backend = DuckDBBackend.shared()
    try:
        assert type(backend.dialect) is type(first.dialect)
        assert backend.memory_limit() == first.memory_limit()
        _check([run(PROGRAM, data, backend=backend)], [data])
    finally:
        backend.close()
