"""Programs over existing tables, on DuckDB and PostgreSQL: values, statistics, errors, names."""
from __future__ import annotations

import numpy as np
import pytest

from sparse_einsum import DataError, Session, run

HOSTILE = 'x"; DROP TABLE y; --'


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


@pytest.fixture
def tables(backend):
    """An edge table with a duplicate key and a table with a hostile name."""
    db = backend
    for t in ("edges", HOSTILE, "y"):
        db.execute(f"DROP TABLE IF EXISTS {_q(t)}")
    db.execute("CREATE TABLE edges (src BIGINT, dst BIGINT, weight DOUBLE PRECISION)")
    db.execute("INSERT INTO edges VALUES (0,1,2.0),(1,2,3.0),(1,2,1.0),(2,0,-1.0),(3,3,0.0)")
    db.execute(f'CREATE TABLE {_q(HOSTILE)} (a BIGINT, "b c" BIGINT)')
    db.execute(f"INSERT INTO {_q(HOSTILE)} VALUES (0,0),(2,1),(2,1)")
    db.execute("CREATE TABLE y (k BIGINT)")
    yield db
    for t in ("edges", HOSTILE, "y"):
        db.execute(f"DROP TABLE IF EXISTS {_q(t)}")


EDGES = np.zeros((4, 4))
EDGES[0, 1], EDGES[1, 2], EDGES[2, 0] = 2.0, 4.0, -1.0


@pytest.mark.parametrize("plan", ["optimal", "relational", "dense", "random:1", "random:4", "greedy"])
def test_program_over_a_table_matches_numpy(tables, plan):
    h = np.arange(8.0).reshape(4, 2)
    program = ("input A[i,j] from edges(src, dst, weight)\ninput H[j,f]\n"
               "Y[i,f] = A[i,j] * H[j,f]\nD[i] = max(A[i,j])\noutput Y, D")
    got = run(program, {"H": h}, plan=plan, backend=tables)
    np.testing.assert_allclose(got["Y"], EDGES @ h, rtol=1e-12)
    np.testing.assert_allclose(got["D"], EDGES.max(axis=1), rtol=1e-12)


def test_statistics_come_from_sql(tables):
    with Session("input A[i,j] from edges(src, dst, weight)\nS[i] = A[i,j]", {},
                 backend=tables) as session:
        stats = session.stats()["A"]
        assert stats.shape == (4, 4) and stats.nnz == 3 and stats.distinct == (3.0, 3.0)


def _tables(db) -> set[str]:
    return {r[0] for r in db.query("SELECT table_name FROM information_schema.tables", [])}


def test_hostile_names_are_quoted_and_nothing_is_left_behind(tables):
    program = f'input B[i:3,j:2] from "{HOSTILE.replace(chr(34), chr(34) * 2)}"(a, "b c")\nS[i] = B[i,j]'
    before = _tables(tables)
    got = run(program, {}, backend=tables)
    np.testing.assert_array_equal(got["S"], [1.0, 0.0, 2.0])
    assert _tables(tables) == before
    assert tables.query("SELECT count(*) FROM y", [])[0][0] == 0   # still there


@pytest.mark.parametrize("program,message", [
    ("input A[i,j] from nope(src, dst)\nY[i] = A[i,j]", "table 'nope' does not exist"),
    ("input A[i,j] from edges(src, nope)\nY[i] = A[i,j]", "has no column 'nope'"),
    ("input A[i:2,j] from edges(src, dst)\nY[i] = A[i,j]", "outside the declared bound i:2"),
])
def test_table_errors_name_the_problem(tables, program, message):
    with pytest.raises(DataError, match=message):
        run(program, {}, backend=tables)


@pytest.mark.parametrize("kind", ["DOUBLE PRECISION", "VARCHAR(10)"])
def test_key_columns_must_hold_integers(backend, kind):
    """Fractional (1.5, 2.6) or text keys: one line naming the table and the column."""
    backend.execute("DROP TABLE IF EXISTS fk")
    backend.execute(f"CREATE TABLE fk (src {kind}, dst BIGINT, w DOUBLE PRECISION)")
    try:
        value = "'1.5'" if kind.startswith("VARCHAR") else "1.5"
        backend.execute(f"INSERT INTO fk VALUES ({value}, 2, 1.0)")
        with pytest.raises(DataError, match="key column 'src' of table 'fk' has type .*; key "
                                            "columns must hold integers"):
            run("input A[i,j] from fk(src, dst, w)\nS[i] = A[i,j]", {}, backend=backend)
    finally:
        backend.execute("DROP TABLE IF EXISTS fk")
