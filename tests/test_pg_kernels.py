"""The PostgreSQL C kernels (udf_kernels/postgres) against a NumPy reading of the spec texts,
plus the binary COPY helpers."""
from __future__ import annotations


import numpy as np
import pytest

from sparse_einsum.backends.pg_copy import copy_in_arrays, copy_out_arrays, insert_rows
from sparse_einsum.backends.pg_kernels import KERNELS_VERSION, check_kernels, install_kernels
from sparse_einsum.errors import BackendError
from kernel_cases import (BIG, HANDWRITTEN, PRODUCTS, SPARSE, UNARY, V4, bad_offset, mark, packed,
                          random_spec, ref_kernel)

psycopg = pytest.importorskip("psycopg")
RTOL = ATOL = 1e-12

# ---------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def conn(pg_kernels):
    assert install_kernels(pg_kernels) == KERNELS_VERSION     # again: an update is a no-op
    with psycopg.connect(pg_kernels, autocommit=True) as c:
        yield c


def _arr(v) -> list[float]:
    return [float(x) for x in np.atleast_1d(v)]


def kernel(conn, spec: str, a, b=None) -> np.ndarray:
    if b is None:
        row = conn.execute("SELECT se_kernel1(%s, %s::float8[])", (spec, _arr(a))).fetchone()
    else:
        row = conn.execute("SELECT se_kernel2(%s, %s::float8[], %s::float8[])",
                           (spec, _arr(a), _arr(b))).fetchone()
    return np.array(row[0], dtype=np.float64)


def check(conn, spec: str, a, b=None) -> None:
    got, want = kernel(conn, spec, a, b), ref_kernel(spec, np.asarray(a, float),
                                                     None if b is None else np.asarray(b, float))
    assert got.shape == want.shape, spec
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL, err_msg=spec)


# ---------------------------------------------------------------- kernels

@pytest.mark.parametrize("spec,a,b", HANDWRITTEN)
def test_binary_kernels(conn, spec, a, b):
    check(conn, spec, a, b)


@pytest.mark.parametrize("spec,a", UNARY)
def test_unary_kernels(conn, spec, a):
    check(conn, spec, a)


@pytest.mark.parametrize("fn", ["id", "neg", "relu", "exp", "log", "sqrt", "sigmoid", "tanh", "abs"])
def test_every_unary_function(conn, fn):
    x = [-2.0, -0.5, 0.0, 0.5, 3.0, np.inf, -np.inf, np.nan]
    check(conn, f"{fn};sum;1;8;1", x)
    check(conn, f"{fn};sum;0;4;1", [0.1, 0.2, 0.3, 0.4])


@pytest.mark.parametrize("fn", ["mulc", "addc", "subc", "rsubc", "divc", "rdivc", "maxc", "minc", "powc"])
@pytest.mark.parametrize("c", ["2.5", "-1e-3", "0"])
def test_every_const_function(conn, fn, c):
    x = [-2.0, -0.5, 0.0, 0.5, 3.0, np.inf, np.nan]
    check(conn, f"{fn}:{c};sum;1;7;1", x)
    check(conn, f"{fn}:{c};max;1;2,3;1,2", x[:6])


@pytest.mark.parametrize("seed", range(24))
def test_random_specs(conn, seed):
    rng = np.random.default_rng(seed)
    op = ["mul", "add", "sub", "div", "exp", "abs", "mulc:1.5"][seed % 7]
    spec, sizes = random_spec(rng, op, ["sum", "max", "min"][seed % 3])
    args = [rng.normal(size=max(s, 1)) for s in sizes]
    check(conn, spec, *args)


@pytest.mark.parametrize("blas", ["on", "off"])
@pytest.mark.parametrize("spec,a,b", PRODUCTS)
def test_matrix_products_with_and_without_blas(conn, spec, a, b, blas):
    conn.execute(f"SET sparse_einsum_kernels.blas = {blas}")
    try:
        check(conn, spec, a, b)
    finally:
        conn.execute("RESET sparse_einsum_kernels.blas")


@pytest.mark.parametrize("spec,a,b,want", [c[1:] for c in BIG], ids=[c[0] for c in BIG])
def test_big_products_split_over_threads(conn, spec, a, b, want):
    """Products big enough to run on several threads (inside the server process) equal
    NumPy's; a bad offset in a late range of a packed input is reported."""
    np.testing.assert_allclose(kernel(conn, spec, a, b), want, rtol=1e-10, atol=1e-9)
    if "~" in spec:
        with pytest.raises(psycopg.Error, match="offset 9e\\+06 outside a payload"):
            kernel(conn, spec, bad_offset(a, 3000 * 3000), b)


@pytest.mark.parametrize("spec,inputs,want", SPARSE)
def test_packed_sparse_inputs(conn, spec, inputs, want):
    got = kernel(conn, spec, *inputs)
    assert got.shape == want.shape, spec
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL, err_msg=spec)


def test_packed_rows_against_a_cached_matrix(conn):
    """Packed rows against a weight matrix from a table, cached across rows with its
    finiteness (finite, then holding inf: 0 * inf is NaN)."""
    rng = np.random.default_rng(2)
    x = rng.normal(size=(40, 64)) * (rng.random((40, 64)) < 0.2)
    x[3] = 0.0
    w = rng.normal(size=(2, 64, 64))
    w[1, 7, 5] = np.inf
    conn.execute("DROP TABLE IF EXISTS t_w, t_x")
    conn.execute("CREATE TABLE t_w (k int8, m float8[])")
    conn.execute("CREATE TABLE t_x (i int8, val float8[])")
    copy_in_arrays(conn, "t_w", {"k": np.arange(2)}, w.reshape(2, -1), value_column="m")
    conn.execute("INSERT INTO t_x SELECT i, v::float8[] FROM unnest(%s::int8[], %s::text[]) AS u(i, v)",
                 (list(range(40)), ["{" + ",".join(str(float(v)) for v in packed(r)) + "}" for r in x]))
    spec = mark("mul;sum;1;64,64;64,1;0,1", (1,))
    for cache in ("on", "off"):
        conn.execute(f"SET sparse_einsum_kernels.cache_broadcast = {cache}")
        rows = conn.execute(f"SELECT k, i, se_kernel2('{spec}', m, val) FROM t_w o, LATERAL "
                            "(SELECT * FROM t_x WHERE o IS NOT NULL OFFSET 0) s ORDER BY k, i").fetchall()
        got = np.array([r[2] for r in rows]).reshape(2, 40, 64)
        with np.errstate(invalid="ignore"):
            np.testing.assert_allclose(got, np.einsum("kij,nj->kni", w, x), rtol=RTOL, atol=ATOL)
    conn.execute("RESET sparse_einsum_kernels.cache_broadcast")


def test_densify_and_sparsify(conn):
    for row in ([0.0, 1.5, 0.0, -2.0], [0.0] * 4, [np.nan, 0.0, np.inf, 0.0]):
        pack, back = conn.execute("SELECT se_sparsify(%s::float8[]), se_densify(se_sparsify(%s::float8[]), 4)",
                                  (row, row)).fetchone()
        np.testing.assert_array_equal(np.array(pack, dtype=float), packed(row))
        np.testing.assert_array_equal(np.array(back, dtype=float), row)


def test_value_functions_return_the_one_element(conn):
    spec = "mul;sum;0;4;1;1"
    got = conn.execute("SELECT se_value2(%s, %s::float8[], %s::float8[]), se_value1(%s, %s::float8[])",
                       (spec, _arr(V4), _arr(V4), "exp;sum;0;;", [0.5])).fetchone()
    assert got == (pytest.approx(float(V4 @ V4), rel=1e-15), pytest.approx(np.exp(0.5), rel=1e-15))
    with pytest.raises(psycopg.Error, match="has 4 outputs; se_value1 returns one"):
        conn.execute("SELECT se_value1('id;sum;1;4;1', ARRAY[1.0, 2, 3, 4]::float8[])")


def test_weighted_sum(conn, agg_table):
    g, val = agg_table
    for s in PARALLEL:
        conn.execute(s)
    try:
        query = "SELECT g, se_wsum(val[1], val) FROM t_agg GROUP BY g ORDER BY g"
        assert "Partial" in "\n".join(r[0] for r in conn.execute("EXPLAIN " + query))
        _, got = copy_out_arrays(conn, query)
    finally:
        conn.execute("RESET ALL")
    want = np.zeros((5, val.shape[1]))
    np.add.at(want, g, val[:, :1] * val)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
    assert conn.execute("SELECT se_wsum(w, v) FROM (VALUES (NULL::float8, ARRAY[1.0]::float8[]), "
                        "(2.0, ARRAY[3.0])) t(w, v)").fetchone()[0] == [6.0]


@pytest.mark.parametrize("old", ["1.0", "1.1", "1.2", "1.3"])
def test_install_updates_an_older_extension(pg_kernels, old):
    """A database on an older version is updated in place by install_kernels (as by
    .ci/pg_setup.sh)."""
    from psycopg.conninfo import make_conninfo
    with psycopg.connect(pg_kernels, autocommit=True) as admin:
        admin.execute("DROP DATABASE IF EXISTS se_kernels_update")
        admin.execute("CREATE DATABASE se_kernels_update")
    dsn = make_conninfo(pg_kernels, dbname="se_kernels_update")
    try:
        with psycopg.connect(dsn, autocommit=True) as c:
            c.execute(f"CREATE EXTENSION sparse_einsum_kernels VERSION '{old}'")
            with pytest.raises(BackendError, match=f"{old} .* installed, {KERNELS_VERSION} needed"):
                check_kernels(c)
        assert install_kernels(dsn) == KERNELS_VERSION
        with psycopg.connect(dsn, autocommit=True) as c:
            check_kernels(c)
            assert c.execute("SELECT se_value2('mul;sum;0;2;1;1', ARRAY[1.0, 2.0]::float8[], "
                             "ARRAY[3.0, 4.0]::float8[])").fetchone()[0] == 11.0
            libraries = {r[0] for r in c.execute(
                "SELECT DISTINCT probin FROM pg_proc WHERE proname LIKE 'se\\_%' AND prokind = 'f'")}
            assert libraries == {f"$libdir/sparse_einsum_kernels-{KERNELS_VERSION}"}
    finally:
        with psycopg.connect(pg_kernels, autocommit=True) as admin:
            admin.execute("DROP DATABASE IF EXISTS se_kernels_update")


def test_version_and_check(conn):
    assert conn.execute("SELECT se_kernels_version()").fetchone()[0] == KERNELS_VERSION
    check_kernels(conn)


@pytest.mark.parametrize("sql,args,message", [
    ("SELECT se_kernel2(%s, %s::float8[], %s::float8[])",
     ("mul;sum;1;3,4;4,1;0,1", [1.0] * 11, [1.0] * 4), "has 11 elements but spec"),
    ("SELECT se_kernel2(%s, %s::float8[], %s::float8[])",
     ("mul;sum;1;3,4;4,1;0,1", [1.0] * 12, [1.0] * 3), "input b has 3 elements"),
    ("SELECT se_kernel1(%s, %s::float8[])", ("id;sum;1;3;1", [1.0, None, 2.0]), "NULL elements"),
    ("SELECT se_kernel1(%s, %s::float8[])", ("mul;sum;1;3;1", [1.0] * 3), "takes 2 input"),
    ("SELECT se_kernel1(%s, %s::float8[])", ("foo;sum;1;3;1", [1.0] * 3), "unknown operator"),
    ("SELECT se_kernel1(%s, %s::float8[])", ("id;sum;1;3,2;1", [1.0] * 3), "one stride per loop dim"),
    ("SELECT se_kernel1(%s, %s::float8[])", ("powc;sum;1;3;1", [1.0] * 3), "needs a constant"),
    ("SELECT se_kernel2(%s, %s::float8[], %s::float8[])", ("id;sum;1;3;1", [1.0] * 3, [1.0] * 3),
     "is for 1 input"),
    ("SELECT se_kernel2(%s, %s::float8[], %s::float8[])",
     ("mul;sum;1;3,4;~4,1;0,1", [1.0] * 3, [1.0] * 4), "even length"),
    ("SELECT se_kernel2(%s, %s::float8[], %s::float8[])",
     ("mul;sum;1;3,4;~4,1;0,1", [12.0, 2.0], [1.0] * 4), "input a of spec .*: offset 12 outside a payload of 12"),
    ("SELECT se_kernel2(%s, %s::float8[], %s::float8[])",
     ("add;sum;1;3,4;~4,1;0,1", [-1.0, 2.0], [1.0] * 4), "offset -1 outside"),
    ("SELECT se_densify(%s::float8[], %s)", ([1.0], 4), "even length"),
    ("SELECT se_densify(%s::float8[], %s)", ([4.0, 1.0], 4), "offset 4 outside a payload of 4"),
])
def test_errors(conn, sql, args, message):
    with pytest.raises(psycopg.Error, match=message):
        conn.execute(sql, args)


def test_broadcast_argument_from_a_table(conn):
    """Weight matrices from a table (one toasted out of line, one compressed inline), cached
    across rows, give the right answers with the cache on and off."""
    rng = np.random.default_rng(1)
    w = np.stack([rng.normal(size=(64, 64)), np.tile([1.0, 2.0, 0.0, 0.5], (64, 16))])
    x = rng.normal(size=(50, 64))
    conn.execute("DROP TABLE IF EXISTS t_w, t_x")
    conn.execute("CREATE TABLE t_w (k int8, m float8[])")
    conn.execute("CREATE TABLE t_x (i int8, val float8[])")
    copy_in_arrays(conn, "t_w", {"k": np.arange(2)}, w.reshape(2, -1), value_column="m")
    copy_in_arrays(conn, "t_x", {"i": np.arange(50)}, x)
    sizes = [r[0] for r in conn.execute("SELECT pg_column_size(m) FROM t_w ORDER BY k")]
    assert sizes[0] >= 64 * 64 * 8 and sizes[1] < 2000, sizes  # external, inline compressed
    spec = "mul;sum;1;64,64;64,1;0,1"
    for cache in ("on", "off"):
        conn.execute(f"SET sparse_einsum_kernels.cache_broadcast = {cache}")
        for outer, inner in (("t_w", "t_x"), ("t_x", "t_w")):   # m repeats / m alternates
            conn.execute(f"CREATE TEMP TABLE t_out AS SELECT k, i, se_kernel2('{spec}', m, val) v "
                         f"FROM {outer} o, LATERAL (SELECT * FROM {inner} WHERE o IS NOT NULL "
                         f"OFFSET 0) s")
            _, got = copy_out_arrays(conn, "SELECT k, i, v FROM t_out ORDER BY k, i")
            conn.execute("DROP TABLE t_out")
            np.testing.assert_allclose(got.reshape(2, 50, 64), np.einsum("kij,nj->kni", w, x),
                                       rtol=RTOL, atol=ATOL)
    conn.execute("RESET sparse_einsum_kernels.cache_broadcast")


# ---------------------------------------------------------------- aggregates

PARALLEL = ("SET max_parallel_workers_per_gather = 2", "SET parallel_setup_cost = 0",
            "SET parallel_tuple_cost = 0", "SET min_parallel_table_scan_size = 0")


@pytest.fixture(scope="module")
def agg_table(conn):
    rng = np.random.default_rng(3)
    n, w = 60000, 16
    g, val = rng.integers(0, 5, n), rng.uniform(-1, 1, (n, w))
    conn.execute("DROP TABLE IF EXISTS t_agg")
    conn.execute("CREATE TABLE t_agg (g int4, val float8[])")
    copy_in_arrays(conn, "t_agg", {"g": g}, val)
    conn.execute("ANALYZE t_agg")
    return g, val


@pytest.mark.parametrize("agg,ref", [("se_vsum", np.sum), ("se_vmax", np.max), ("se_vmin", np.min)])
def test_elementwise_aggregates_parallel(conn, agg_table, agg, ref):
    g, val = agg_table
    for s in PARALLEL:
        conn.execute(s)
    try:
        for query, groups in [(f"SELECT g, {agg}(val) FROM t_agg GROUP BY g ORDER BY g", range(5)),
                              (f"SELECT 0::int4, {agg}(val) FROM t_agg", [None])]:
            plan = "\n".join(r[0] for r in conn.execute("EXPLAIN " + query))
            assert "Partial" in plan and "Gather" in plan, plan
            keys, got = copy_out_arrays(conn, query)
            want = [ref(val if k is None else val[g == k], axis=0) for k in groups]
            np.testing.assert_allclose(got, np.array(want), rtol=RTOL, atol=ATOL)
    finally:
        conn.execute("RESET ALL")


def test_elementwise_aggregates_edge_cases(conn):
    assert conn.execute("SELECT se_vsum(v) FROM (SELECT ARRAY[1.0]::float8[] v) t WHERE false"
                        ).fetchone()[0] is None
    assert conn.execute("SELECT se_vmax(v) FROM (VALUES (ARRAY[1.0, 5.0]::float8[]), (NULL), "
                        "(ARRAY[3.0, 2.0])) t(v)").fetchone()[0] == [3.0, 5.0]
    with pytest.raises(psycopg.Error, match="same length"):
        conn.execute("SELECT se_vsum(v) FROM (VALUES (ARRAY[1.0, 2.0]::float8[]), "
                     "(ARRAY[1.0, 2.0, 3.0])) t(v)")


# ---------------------------------------------------------------- take / stack


@pytest.mark.parametrize("fill", [0.0, np.inf])
def test_take_stack_round_trip(conn, fill):
    """Pieces all the fill (the tensor's default) are NULL; a stack fills what it does not
    write with it."""
    big = np.arange(0.0, 24.0).reshape(4, 6)
    big[2:4, 0:3] = fill                                 # position 2 is all fill
    spec = "24;2,2;12,3;2,3;6,1" + (f";{fill!r}" if fill else "")   # 2x2 blocks of 2x3
    rows = conn.execute("SELECT p, se_take(%s, %s::float8[], p) FROM generate_series(0, 3) p",
                        (spec, _arr(big.ravel()))).fetchall()
    blocks = {p: big[2 * (p // 2):2 * (p // 2) + 2, 3 * (p % 2):3 * (p % 2) + 3].ravel() for p in range(4)}
    for p, v in rows:
        if p == 2:
            assert v is None
        else:
            np.testing.assert_array_equal(v, blocks[p])
    got = conn.execute("SELECT se_stack(%s, se_take(%s, %s::float8[], p), p) FROM generate_series(0, 3) p",
                       (spec, spec, _arr(big.ravel()))).fetchone()[0]
    np.testing.assert_array_equal(got, big.ravel())
    with pytest.raises(psycopg.Error, match="out of range"):
        conn.execute("SELECT se_take(%s, %s::float8[], 4)", (spec, _arr(big.ravel())))
    with pytest.raises(psycopg.Error, match="SIZE 24"):
        conn.execute("SELECT se_take(%s, %s::float8[], 0)", (spec, [1.0] * 23))


def test_stack_parallel(conn):
    rng = np.random.default_rng(5)
    big = rng.normal(size=(3, 40, 40))                  # per group g, 8x8 blocks of 5x5
    spec = "1600;8,8;200,5;5,5;40,1"
    pos = np.arange(64)
    blocks = big.reshape(3, 8, 5, 8, 5).transpose(0, 1, 3, 2, 4).reshape(3, 64, 25)
    conn.execute("DROP TABLE IF EXISTS t_blocks")
    conn.execute("CREATE TABLE t_blocks (g int4, p int8, val float8[])")
    reps = 300                                          # repeated rows: enough pages for workers
    copy_in_arrays(conn, "t_blocks", {"g": np.repeat(np.arange(3), 64 * reps),
                                      "p": np.tile(np.repeat(pos, reps), 3)},
                   np.repeat(blocks.reshape(-1, 25), reps, axis=0))
    conn.execute("ANALYZE t_blocks")
    for s in PARALLEL:
        conn.execute(s)
    try:
        query = f"SELECT g, se_stack('{spec}', val, p) FROM t_blocks GROUP BY g ORDER BY g"
        plan = "\n".join(r[0] for r in conn.execute("EXPLAIN " + query))
        assert "Partial" in plan, plan
        _, got = copy_out_arrays(conn, query)
        np.testing.assert_array_equal(got, big.reshape(3, -1))
    finally:
        conn.execute("RESET ALL")


# ---------------------------------------------------------------- binary COPY


@pytest.mark.parametrize("width", [1, 2, 7, 64, 300])
def test_copy_round_trip_arrays(conn, width):
    rng = np.random.default_rng(width)
    n = 1000
    i, j, val = rng.integers(-2**40, 2**40, n), rng.integers(-1000, 1000, n).astype(np.int32), \
        rng.normal(size=(n, width))
    val[0, 0] = np.nan
    conn.execute("DROP TABLE IF EXISTS t_copy")
    conn.execute("CREATE TABLE t_copy (i int8, j int4, val float8[])")
    assert copy_in_arrays(conn, "t_copy", {"i": i, "j": j}, val) == n
    assert conn.execute("SELECT count(*), sum(array_length(val, 1)) FROM t_copy").fetchone() == (n, n * width)
    keys, got = copy_out_arrays(conn, "SELECT i, j, val FROM t_copy ORDER BY i")
    order = np.argsort(i, kind="stable")
    np.testing.assert_array_equal(keys["i"], i[order])
    np.testing.assert_array_equal(keys["j"], j[order])
    np.testing.assert_array_equal(got, val[order])
    assert got.dtype == np.float64 and keys["j"].dtype == np.int32
    assert conn.pgconn.transaction_status == psycopg.pq.TransactionStatus.IDLE


def test_copy_round_trip_scalars(conn):
    rng = np.random.default_rng(11)
    n = 5000
    i, v = np.arange(n), rng.normal(size=n)
    conn.execute("DROP TABLE IF EXISTS t_sc")
    conn.execute("CREATE TABLE t_sc (i int8, v float8)")
    copy_in_arrays(conn, "t_sc", {"i": i}, v, value_column="v")
    assert abs(conn.execute("SELECT sum(v) FROM t_sc").fetchone()[0] - v.sum()) < 1e-9
    keys, got = copy_out_arrays(conn, "SELECT i, v FROM t_sc ORDER BY i")
    np.testing.assert_array_equal(keys["i"], i)
    np.testing.assert_array_equal(got, v)
    keys, none = copy_out_arrays(conn, "SELECT i FROM t_sc WHERE i < 3 ORDER BY i", values=False)
    assert none is None and keys["i"].tolist() == [0, 1, 2]
    keys, empty = copy_out_arrays(conn, "SELECT i, v FROM t_sc WHERE false")
    assert keys["i"].shape == (0,) and empty.shape == (0,)


def test_raw_rows_round_trip(conn):
    """insert_rows (se_rows) and copy_out_arrays of se_raw move payloads bit for bit:
    NaN, inf, -0.0, ragged rows, empty rows, keys beyond 32 bits, several chunks."""
    from sparse_einsum.backends import pg_copy
    rng = np.random.default_rng(5)
    counts = rng.integers(0, 9, 3000)
    bounds = np.concatenate([[0], np.cumsum(counts)])
    vals = rng.normal(size=bounds[-1])
    vals[:4] = [np.nan, np.inf, -np.inf, -0.0]
    i, j = rng.integers(-2**62, 2**62, len(counts)), np.arange(len(counts))
    conn.execute("DROP TABLE IF EXISTS t_raw")
    conn.execute("CREATE TABLE t_raw (i bigint, j bigint, val float8[])")
    chunk, pg_copy._RAW_CHUNK_BYTES = pg_copy._RAW_CHUNK_BYTES, 4096   # many statements
    try:
        assert insert_rows(conn, "t_raw", {"i": i, "j": j}, vals, bounds) == len(counts)
    finally:
        pg_copy._RAW_CHUNK_BYTES = chunk
    rows = conn.execute("SELECT i, j, coalesce(array_length(val, 1), 0) FROM t_raw ORDER BY j").fetchall()
    assert rows == [(a, b, c) for a, b, c in zip(i.tolist(), j.tolist(), counts.tolist())]
    stored = conn.execute("SELECT val FROM t_raw WHERE j = 0").fetchone()[0]
    assert np.isnan(stored[0]) and stored[1:3] == [np.inf, -np.inf] and np.signbit(stored[3])
    width = 5
    conn.execute("DELETE FROM t_raw")
    dense = rng.normal(size=(400, width))
    dense[0] = [np.nan, np.inf, -np.inf, -0.0, 0.0]
    insert_rows(conn, "t_raw", {"i": np.arange(400), "j": -np.arange(400)}, dense,
                np.arange(401) * width)
    keys, got = copy_out_arrays(conn, f"SELECT i, j, se_raw(val, {width}) FROM t_raw ORDER BY i")
    np.testing.assert_array_equal(keys["j"], -np.arange(400))
    assert got.dtype == np.float64 and got.shape == (400, width) and got.flags.writeable
    np.testing.assert_array_equal(got, dense)
    assert np.signbit(got[0, 3]) and not np.signbit(got[0, 4])
    keys, empty = copy_out_arrays(conn, f"SELECT i, se_raw(val, {width}) FROM t_raw WHERE false")
    assert keys["i"].shape == (0,) and empty.shape == (0, 0)
    with pytest.raises(psycopg.errors.ArraySubscriptError, match="3 were expected"):
        copy_out_arrays(conn, "SELECT i, se_raw(val, 3) FROM t_raw")


@pytest.mark.parametrize("columns,args,message", [
    ("v float8[]", (b"", b"", np.array([0, 1], np.int64).tobytes()), "to the number of values"),
    ("v float8[]", (b"", b"\0" * 16, np.array([0, 2, 1, 2], np.int64).tobytes()), "not decrease"),
    ("v float8[]", (b"", b"\0" * 8, b"\0" * 3), "whole int64"),
    ("k bigint, v float8[]", (b"\0" * 8, b"", np.zeros(3, np.int64).tobytes()), "8 key bytes"),
])
def test_se_rows_errors(conn, columns, args, message):
    with pytest.raises(psycopg.errors.InvalidParameterValue, match=message):
        conn.execute(f"SELECT * FROM se_rows(%b, %b, %b) AS r({columns})", args)
    with pytest.raises(psycopg.errors.DatatypeMismatch, match="bigint keys"):
        conn.execute("SELECT * FROM se_rows(%b, %b, %b) AS r(v float8)", args)


def test_copy_errors(conn):
    conn.execute("DROP TABLE IF EXISTS t_sc2")
    conn.execute("CREATE TABLE t_sc2 (i int4, val float8[])")
    from sparse_einsum.errors import DataError
    with pytest.raises(DataError, match="outside"):
        copy_in_arrays(conn, "t_sc2", {"i": np.array([2**40])}, np.zeros((1, 2)))
    with pytest.raises(DataError, match="differ in layout"):
        copy_out_arrays(conn, "SELECT 1::int4, ARRAY[1.0]::float8[] UNION ALL SELECT 2, ARRAY[1.0, 2.0]::float8[]")
