"""se_kernel2_rows, the PostgreSQL window function that runs rows against one matrix as
one matrix product a chunk: row for row the values of se_kernel2 and of NumPy (inf, NaN,
NULL rows, runs of different matrices, chunk boundaries, empty input), and the plans that
use it."""
from __future__ import annotations

import numpy as np
import pytest

from sparse_einsum import einsum
from sparse_einsum.api import einsum_session
from sparse_einsum.backends.pg_copy import insert_rows

psycopg = pytest.importorskip("psycopg")

VECMAT = "mul;sum;1;3,5;0,1;1,3"           # out[k] = sum_m a[m] b[m, k]; a 5, b 5 x 3
MATMAT = "mul;sum;2;2,3,5;5,0,1;0,1,3"     # out[i, k] = sum_m a[i, m] b[m, k]; a 2 x 5
ELEMENTWISE = "add;sum;1;5;1;1"            # not a product: row by row


def _table(conn, name: str, rows: np.ndarray, keys: np.ndarray) -> None:
    conn.execute(f"CREATE TEMP TABLE {name} (i bigint, g bigint, val float8[])")
    if len(rows):
        width = rows.shape[1]
        insert_rows(conn, name, {"i": keys[:, 0], "g": keys[:, 1]}, rows.reshape(-1),
                    np.arange(len(rows) + 1, dtype=np.int64) * width)


@pytest.fixture
def conn(pg):
    with pg.conn.transaction() as tx:
        yield pg.conn
        tx.force_rollback = True


def _rows(conn, spec: str, order: str = "a.i, b.g") -> list[tuple]:
    """(i, g, se_kernel2_rows, se_kernel2) of every row of a joined to every b."""
    return conn.execute(
        f"SELECT a.i, b.g, se_kernel2_rows('{spec}', a.val, b.val) OVER () AS r, "
        f"se_kernel2('{spec}', a.val, b.val) AS k FROM a JOIN b ON a.g = b.g OR b.g < 0 "
        f"ORDER BY {order}").fetchall()


@pytest.mark.parametrize("spec,a_shape", [(VECMAT, (5,)), (MATMAT, (2, 5)), (ELEMENTWISE, (5,))])
def test_rows_match_numpy_and_the_row_kernel(conn, spec, a_shape):
    rng = np.random.default_rng(3)
    n = 2600                                  # more than two chunks of 1024 rows
    x = rng.normal(size=(n, *a_shape))
    x[7, ..., 1] = np.inf
    x[1500, ..., 2] = np.nan
    b_shape = (5,) if spec == ELEMENTWISE else (5, 3)
    w = rng.normal(size=(2, *b_shape))
    w[1, 0] = -np.inf
    groups = (np.arange(n) // 700) % 2       # runs of rows against b 0, then b 1, ...
    _table(conn, "a", x.reshape(n, -1), np.stack([np.arange(n), groups], axis=1))
    _table(conn, "b", w.reshape(2, -1), np.array([[0, 0], [1, 1]]))
    conn.execute("UPDATE a SET val = NULL WHERE i IN (0, 1023, 1024, 2599)")
    rows = _rows(conn, spec)
    assert len(rows) == n
    for i, g, got, row_kernel in rows:
        if i in (0, 1023, 1024, 2599):
            assert got is None and row_kernel is None
            continue
        with np.errstate(invalid="ignore"):
            want = (x[i] + w[g] if spec == ELEMENTWISE else x[i] @ w[g]).reshape(-1)
        np.testing.assert_allclose(np.array(got), want, rtol=1e-12, atol=1e-12, equal_nan=True)
        np.testing.assert_allclose(np.array(got), np.array(row_kernel), rtol=1e-12, atol=1e-12,
                                   equal_nan=True)


def test_rows_of_alternating_matrices_and_empty_input(conn):
    """Each row against both matrices: b changes from row to row (chunks of one row)."""
    rng = np.random.default_rng(4)
    x, w = rng.normal(size=(50, 5)), rng.normal(size=(2, 5, 3))
    _table(conn, "a", x, np.stack([np.arange(50), np.zeros(50, dtype=np.int64)], axis=1))
    _table(conn, "b", w.reshape(2, -1), np.array([[0, -1], [1, -2]]))
    rows = _rows(conn, VECMAT, "a.i, b.g")
    assert len(rows) == 100
    for i, g, got, _ in rows:
        np.testing.assert_allclose(np.array(got), x[i] @ w[-g - 1], rtol=1e-12, atol=1e-12)
    conn.execute("DELETE FROM a")
    assert _rows(conn, VECMAT) == []


def test_rows_reject_short_arrays(conn):
    _table(conn, "a", np.ones((3, 4)), np.zeros((3, 2), dtype=np.int64))
    _table(conn, "b", np.ones((1, 15)), np.zeros((1, 2), dtype=np.int64))
    with pytest.raises(psycopg.errors.ArraySubscriptError,
                       match="se_kernel2_rows: input a has 4 elements but spec .* reads 5"):
        _rows(conn, VECMAT)


def test_per_row_products_run_as_one_product_a_chunk(pg):
    """The plan Im,mk->Ik: one tuple per row of X against the one tuple of W, beyond a chunk,
    with inf and NaN; float64 like NumPy."""
    rng = np.random.default_rng(5)
    x, w = rng.normal(size=(2100, 40)), rng.normal(size=(40, 30))
    x[3, 4], x[2000, 5], w[6, 7] = np.inf, np.nan, -np.inf
    with einsum_session("im,mk->ik", x, w, backend=pg) as session:
        assert "se_kernel2_rows(" in " ".join(s.sql for s in session.compile("Im,mk->Ik").steps)
    with np.errstate(invalid="ignore"):
        want = x @ w
    got = einsum("im,mk->ik", x, w, plan="Im,mk->Ik", backend=pg)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10, equal_nan=True)
    empty = einsum("im,mk->ik", np.zeros((4, 40)), w, plan="Im,mk->Ik", backend=pg)
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(empty, np.zeros((4, 40)) @ w)
