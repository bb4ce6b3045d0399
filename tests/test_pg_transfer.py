"""Loads and fetches of the PostgreSQL backend (raw bytes through se_rows and se_raw for
payloads, binary COPY for scalars) against NumPy: values bit for bit, dtypes, sparse
(ragged) payloads, empty relations, exact BIGINT tensors."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import scipy.sparse as sp

import sparse_einsum as se
from sparse_einsum.api import einsum_session
from sparse_einsum.blocks import compose, decompose
from sparse_einsum.sql.steps import Step, TableRelation

PLANS = ["IJ->IJ", "Ij->Ij", "iJ->iJ", "ij->ij", "I/2j->I/2j"]


def _special(shape: tuple[int, int], seed: int) -> np.ndarray:
    x = np.random.default_rng(seed).normal(size=shape)
    x.flat[:6] = [np.nan, np.inf, -np.inf, -0.0, 0.0, 1e-310]
    return x


def _same(got: np.ndarray, want: np.ndarray) -> None:
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    assert (np.signbit(got) == np.signbit(want)).all()


@pytest.mark.parametrize("plan", PLANS)
def test_values_round_trip_bit_for_bit(pg, plan):
    x = _special((6, 5), 1)
    _same(se.einsum("ij->ij", x, backend=pg, plan=plan), np.einsum("ij->ij", x))


@pytest.mark.parametrize("tiling", [(1, 5), (2, 5), (1, 1), (6, 5)])
def test_load_fetch_blocks(pg, tiling):
    """Backend.load then Backend.fetch gives the tensor back, empty tiles left out."""
    x = _special((6, 5), 2)
    x[2:4] = 0.0
    rel = TableRelation("se_test_transfer", "X", x.shape, tiling, ("i", "j"))
    with pg.scope():
        pg.load(rel, decompose(x, tiling))
        try:
            back = pg.fetch(rel)
        finally:
            pg.drop(rel)
    assert all(k.dtype == np.int64 for k in back.keys)
    _same(compose(back, x.shape, tiling), x)


def test_load_sparse_payloads(pg):
    """Packed sparse payloads (ragged rows) arrive as written: densified on the server
    they are the tensor's rows."""
    x = _special((6, 5), 3)
    x[2:4] = 0.0
    x[4, 1:] = 0.0
    rel = TableRelation("se_test_transfer", "X", x.shape, (1, 5), ("i", "j"), sparse=True)
    with pg.scope():
        pg.load(rel, decompose(x, (1, 5), sparse=True))
        try:
            rows = pg.query(f"SELECT {rel.columns[0]}, se_densify(val, 5) FROM se_test_transfer "
                            f"ORDER BY 1")
        finally:
            pg.drop(rel)
    assert [r[0] for r in rows] == [0, 1, 4, 5]
    _same(np.array([r[1] for r in rows]), x[[0, 1, 4, 5]])


@pytest.mark.parametrize("plan", ["IJ,JK->IK", "Ij,jk->Ik", "ij,jk->ik"])
def test_bigint_tensors(pg, plan):
    """Integers exact through scalar (bigint) relations; NumPy's dtype either way."""
    a = np.array([[2**40 + 1, -3], [7, 2**41 - 5]], dtype=np.int64)
    b = np.array([[1, 2], [3, -4]], dtype=np.int64)
    got = se.einsum("ij,jk->ik", a, b, backend=pg, plan=plan)
    want = np.einsum("ij,jk->ik", a, b)
    assert got.dtype == want.dtype == np.int64
    if plan == "IJ,JK->IK":
        np.testing.assert_array_equal(got, want)
    else:     # payloads are float8: exact below 2**53
        np.testing.assert_allclose(got, want, rtol=1e-15)


@pytest.mark.parametrize("plan", PLANS[:4])
def test_all_zero_inputs_load_and_fetch_empty_relations(pg, plan):
    x = np.zeros((4, 5))
    _same(se.einsum("ij->ij", x, backend=pg, plan=plan), x.copy())


def test_sparse_input_with_ragged_payloads(pg):
    """A scipy.sparse input under the optimal plan (packed sparse payloads of different
    lengths, some rows empty) against scipy."""
    rng = np.random.default_rng(3)
    a = sp.random(300, 200, density=0.02, random_state=4, format="csr")
    a.data[:3] = [np.inf, -0.0, np.nan]
    h = rng.normal(size=(200, 16))
    got = se.einsum("ij,jf->if", a, h, backend=pg)
    np.testing.assert_allclose(got, np.einsum("ij,jf->if", a.toarray(), h), rtol=1e-12,
                               atol=1e-12)


def test_payload_past_a_chunk_in_one_row(pg):
    """A payload tuple larger than the load's 1 MB statements (sent with libpq blocking)
    arrives bit for bit, and the connection is nonblocking again after it."""
    x = _special((1, 300_000), 5)
    rel = TableRelation("se_test_transfer", "X", x.shape, (1, 300_000), ("i", "j"))
    with pg.scope():
        pg.load(rel, decompose(x, rel.tiling))
        try:
            back = pg.fetch(rel)
        finally:
            pg.drop(rel)
    assert pg.conn.pgconn.nonblocking
    _same(compose(back, x.shape, rel.tiling), x)


@pytest.mark.parametrize("plan,zero", [("ij,jk->ik", False), ("Ij,jk->Ik", False),
                                       ("IJ,JK->IK", True), ("Ij,jk->Ik", True)])
def test_outputs_read_from_their_statement_unstored(pg, plan, zero):
    """An output no later statement reads comes straight from its query (COPY): no table
    is made for it; an empty result has no keys and no payload rows of its width."""
    a = np.arange(6.0).reshape(2, 3)
    b = np.zeros((3, 4)) if zero else np.random.default_rng(6).normal(size=(3, 4))
    with einsum_session("ij,jk->ik", a, b, backend=pg) as session:
        compiled = session.compile(plan)
        *loads, step = compiled.steps
        arrays = session.values.arrays(session.exact_integers)
        with pg.scope():
            for load in loads:
                pg.load(load.target, decompose(arrays[load.target.tensor], load.target.tiling))
            got = pg.run_and_fetch(step)
            made = pg.query("SELECT to_regclass(%s) IS NOT NULL", (step.target.table,))[0][0]
            for load in loads:
                pg.drop(load.target)
    assert not made
    out = step.target
    if zero and plan == "IJ,JK->IK":
        assert got.values.shape == (0,) and [len(k) for k in got.keys] == [0, 0]
    np.testing.assert_array_equal(compose(got, out.shape, out.tiling), a @ b)


def test_loads_leave_the_sessions_plan_cache_mode(pg):
    """Payload inserts run with generic plans and then restore the caller's setting, also
    when an insert fails inside a transaction (its rollback restores it)."""
    import psycopg

    from sparse_einsum.backends.pg_copy import insert_rows

    x = _special((6, 5), 4)
    rel = TableRelation("se_test_transfer", "X", x.shape, (1, 5), ("i", "j"))
    pg.execute("SET plan_cache_mode = force_custom_plan")
    try:
        with pg.scope():
            pg.load(rel, decompose(x, (1, 5)))
            pg.drop(rel)
        assert pg.query("SHOW plan_cache_mode") == [("force_custom_plan",)]
        with pytest.raises(psycopg.Error), pg.scope():   # a column of the wrong type
            pg.execute("CREATE TEMP TABLE se_test_text (i bigint, val bigint)")
            insert_rows(pg.conn, "se_test_text", {"i": np.arange(6)}, x, np.arange(7) * 5)
        assert pg.query("SHOW plan_cache_mode") == [("force_custom_plan",)]
    finally:
        pg.execute("RESET plan_cache_mode")


def _exists(pg, table: str) -> bool:
    """Whether `table` is stored (on the connection: `pg.query` would store held inputs)."""
    return pg.conn.execute("SELECT to_regclass(%s) IS NOT NULL", (table,)).fetchone()[0]


@pytest.mark.parametrize("plan,rows,bound", [("ij,jk->ik", False, True),
                                             ("Ij,jk->Ik", False, False),
                                             ("ij,jk->ik", True, False)])
def test_one_tuple_inputs_are_bound_not_stored(pg, plan, rows, bound):
    """A load of one payload tuple makes no table; a statement that reads only such
    inputs gets them as parameters (values bit for bit); one that also reads a stored
    relation (here the rows of x), or generates rows, finds them stored."""
    x = np.random.default_rng(7).normal(size=(4, 3))
    x.flat[:2] = [-0.0, 1e-310]
    y = np.random.default_rng(8).normal(size=(3, 2))
    with einsum_session("ij,jk->ik", x, y, backend=pg) as session:
        compiled = session.compile(plan)
        *loads, step = compiled.steps
        arrays = session.values.arrays(session.exact_integers)
        with pg.scope():
            for load in loads:
                pg.load(load.target, decompose(arrays[load.target.tensor], load.target.tiling))
            made = [_exists(pg, load.target.table) for load in loads]
            got = pg.run_and_fetch(replace(step, generates_rows=rows))
            then = [_exists(pg, load.target.table) for load in loads]
            for load in loads:
                pg.drop(load.target)
    assert made == [plan == "Ij,jk->Ik", False] and then == [not bound, not bound]
    assert not pg.bound.relations
    _same(compose(got, step.target.shape, step.target.tiling), x @ y)


def test_bound_input_read_by_several_statements_and_stored_on_demand(pg):
    """A bound input goes with each statement that reads it, up to BOUND_READS of them;
    the next one stores it first, as does SQL the backend does not compose (a query:
    every held input)."""
    from sparse_einsum.backends.pg_bind import BOUND_READS

    x, w = _special((4, 4), 9), np.random.default_rng(10).normal(size=(4, 4))
    prog = ("input X[i, j]\ninput W[j, k]\nA[i,k] = X[i,j] * W[j,k]\n"
            "B[i,k] = A[i,k] * W[i,k]\noutput B")
    _same(se.run(prog, {"X": x, "W": w}, backend=pg, plan="optimal")["B"], (x @ w) * w)
    rel = TableRelation("se_test_transfer", "W", w.shape, w.shape, ("i", "j"))
    other = replace(rel, table="se_test_other")
    out = TableRelation("se_test_out", "W", w.shape, w.shape, ("i", "j"))
    read = Step("sql", out, reads=frozenset({rel.table}), query='SELECT * FROM "se_test_transfer"')
    with pg.scope():
        pg.load(rel, decompose(w, rel.tiling))
        for reads in range(1, BOUND_READS + 2):
            _same(compose(pg.run_and_fetch(read), w.shape, w.shape), w)
            assert _exists(pg, rel.table) == (reads > BOUND_READS)
        pg.drop(rel)
        pg.load(rel, decompose(w, rel.tiling))
        pg.load(other, decompose(x, rel.tiling))
        rows = pg.query("SELECT se_raw(val, 16) FROM se_test_transfer")
        assert _exists(pg, rel.table) and _exists(pg, other.table)
        pg.drop(rel)
        pg.drop(other)
    assert not pg.bound.relations
    _same(np.frombuffer(rows[0][0], np.float64).reshape(4, 4), w)


def test_failed_statement_with_raw_parameters(pg):
    """An error in a statement with raw parameters is psycopg's error; the session's
    plan_cache_mode and nonblocking mode are as before, the connection usable."""
    import psycopg

    from sparse_einsum.backends.pg_copy import execute_raw

    with pytest.raises(psycopg.errors.DivisionByZero), pg.scope():
        execute_raw(pg.conn, "SELECT length($1) / 0", [np.arange(3.0)])
    assert pg.conn.pgconn.nonblocking
    assert pg.query("SHOW plan_cache_mode") == [("auto",)]
    res = execute_raw(pg.conn, "SELECT length($1)", [np.arange(3.0)], rows=True)
    assert int.from_bytes(res.get_value(0, 0), "big") == 24
