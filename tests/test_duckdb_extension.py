"""The sparse_einsum DuckDB extension (udf_kernels/duckdb): its kernels against a NumPy
reading of the spec texts (the cases of the PostgreSQL kernels' tests), its aggregates,
take/stack, errors, and how the backend loads it or falls back."""
from __future__ import annotations

import duckdb
import numpy as np
import pytest
import scipy.sparse as sp

from kernel_cases import (BIG, FUSED, HANDWRITTEN, PRODUCTS, SPARSE, UNARY, bad_offset,
                          fused_reference, mark, packed, random_spec, ref_kernel)
from sparse_einsum import Session, einsum
from sparse_einsum.backends import duckdb_extension
from sparse_einsum.backends.duckdb import DuckDBBackend
from sparse_einsum.kernels import arrow_kernels
from sparse_einsum import blocks
from sparse_einsum.errors import BackendError

RTOL = ATOL = 1e-12


@pytest.fixture(scope="module")
def con():
    connection = duckdb.connect(config={"allow_unsigned_extensions": "true"})
    duckdb_extension.load(connection)
    yield connection
    connection.close()


def kernel(con, spec: str, a, b=None) -> np.ndarray:
    args = [spec, [float(x) for x in np.atleast_1d(a)]]
    call = "se_kernel1(?, ?::DOUBLE[])"
    if b is not None:
        args.append([float(x) for x in np.atleast_1d(b)])
        call = "se_kernel2(?, ?::DOUBLE[], ?::DOUBLE[])"
    return np.array(con.execute(f"SELECT {call}", args).fetchall()[0][0], dtype=np.float64)


def check(con, spec: str, a, b=None) -> None:
    want = ref_kernel(spec, np.asarray(a, float), None if b is None else np.asarray(b, float))
    np.testing.assert_allclose(kernel(con, spec, a, b), want, rtol=RTOL, atol=ATOL, err_msg=spec)


# ---------------------------------------------------------------- kernels

@pytest.mark.parametrize("spec,a,b", HANDWRITTEN + PRODUCTS)
def test_binary_kernels(con, spec, a, b):
    check(con, spec, a, b)


@pytest.mark.parametrize("spec,a", UNARY)
def test_unary_kernels(con, spec, a):
    check(con, spec, a)


@pytest.mark.parametrize("fn", ["id", "neg", "relu", "exp", "log", "sqrt", "sigmoid", "tanh",
                                "abs", "mulc:2.5", "rdivc:-1e-3", "maxc:0", "minc:0", "powc:0"])
def test_every_function(con, fn):
    check(con, f"{fn};sum;1;8;1", [-2.0, -0.5, 0.0, 0.5, 3.0, np.inf, -np.inf, np.nan])


@pytest.mark.parametrize("seed", range(24))
def test_random_specs(con, seed):
    rng = np.random.default_rng(seed)
    op = ["mul", "add", "sub", "div", "exp", "abs", "mulc:1.5"][seed % 7]
    spec, sizes = random_spec(rng, op, ["sum", "max", "min"][seed % 3])
    check(con, spec, *[rng.normal(size=max(s, 1)) for s in sizes])


@pytest.mark.parametrize("spec,a,b", PRODUCTS)
def test_products_with_a_matrix_shared_by_many_rows(con, spec, a, b):
    """One tuple joined to every row: the rows go four at a time against it (with zero
    rows, rows left over, a NULL row: all zeros, and the shared operand on either side)."""
    rng = np.random.default_rng(3)
    rows = rng.normal(size=(11, a.size)) * (rng.random((11, a.size)) < 0.5)
    rows[2] = 0.0
    con.execute("CREATE OR REPLACE TEMP TABLE t_rows AS SELECT unnest(?) AS i, "
                "unnest(?::DOUBLE[][]) AS v", [list(range(11)), rows.tolist()])
    con.execute("INSERT INTO t_rows VALUES (11, NULL)")
    con.execute("CREATE OR REPLACE TEMP TABLE t_shared AS SELECT ?::DOUBLE[] AS m", [b.tolist()])
    got = con.execute(f"SELECT i, se_kernel2('{spec}', r.v, s.m) FROM t_rows r, t_shared s "
                      "ORDER BY i").fetchall()
    rows = np.vstack([rows, np.zeros(a.size)])
    for i, out in got:
        np.testing.assert_allclose(out, ref_kernel(spec, rows[i], b), rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("spec,inputs,want", SPARSE)
def test_packed_sparse_inputs(con, spec, inputs, want):
    np.testing.assert_allclose(kernel(con, spec, *inputs), want, rtol=RTOL, atol=ATOL, err_msg=spec)


@pytest.mark.parametrize("spec,a,b", PRODUCTS)
def test_packed_rows_against_a_shared_matrix(con, spec, a, b):
    """Packed rows joined to one dense tuple (finite, then holding inf): the finiteness of
    the shared operand is checked once per run of rows, and a NULL row is all zeros
    (the tuple an outer join did not find)."""
    rng = np.random.default_rng(5)
    rows = rng.normal(size=(9, a.size)) * (rng.random((9, a.size)) < 0.3)
    rows[4] = 0.0
    con.execute("CREATE OR REPLACE TEMP TABLE t_packed AS SELECT unnest(?) AS i, "
                "unnest(?::DOUBLE[][]) AS v", [list(range(9)), [packed(r).tolist() for r in rows]])
    con.execute("INSERT INTO t_packed VALUES (9, NULL)")
    for shared in (b, np.where(np.arange(b.size) == 1, np.inf, b)):
        con.execute("CREATE OR REPLACE TEMP TABLE t_shared AS SELECT ?::DOUBLE[] AS m", [shared.tolist()])
        got = con.execute(f"SELECT i, se_kernel2('{mark(spec, (0,))}', r.v, s.m) "
                          "FROM t_packed r, t_shared s ORDER BY i").fetchall()
        for i, out in got:
            row = rows[i] if i < len(rows) else np.zeros(a.size)
            np.testing.assert_allclose(out, ref_kernel(spec, row, shared), rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("spec,a,b,want", [c[1:] for c in BIG], ids=[c[0] for c in BIG])
def test_big_products_split_over_threads(con, spec, a, b, want):
    """Products big enough to run on several threads equal NumPy's; a bad offset in a
    late range of a packed input is reported."""
    np.testing.assert_allclose(kernel(con, spec, a, b), want, rtol=1e-10, atol=1e-9)
    if "~" in spec:
        with pytest.raises(duckdb.Error, match="offset 9e\\+06 outside a payload"):
            kernel(con, spec, bad_offset(a, 3000 * 3000), b)


def test_densify_and_sparsify(con):
    rows = [[0.0, 1.5, 0.0, -2.0], [0.0] * 4, [np.nan, 0.0, np.inf, 0.0]]
    con.execute("CREATE OR REPLACE TEMP TABLE t_dense AS SELECT unnest(?) AS i, "
                "unnest(?::DOUBLE[][]) AS v", [[0, 1, 2], rows])
    con.execute("INSERT INTO t_dense VALUES (3, NULL)")
    got = con.execute("SELECT i, se_sparsify(v), se_densify(se_sparsify(v), 4) FROM t_dense "
                      "ORDER BY i").fetchall()
    for (i, pack, back), row in zip(got, rows):
        np.testing.assert_array_equal(pack, packed(row))
        np.testing.assert_array_equal(back, row)
    assert got[3] == (3, None, None)


def test_null_arrays_are_zeros_and_null_scalars_give_null(con):
    """A NULL array argument is the all-zero payload of a tuple that an outer join did not
    find (0 x inf is NaN, as NumPy); a NULL scalar or spec gives NULL."""
    con.execute("CREATE OR REPLACE TEMP TABLE t_nulls AS SELECT CAST(NULL AS DOUBLE[]) AS v, "
                "CAST(NULL AS DOUBLE) AS x, CAST(NULL AS VARCHAR) AS spec")
    got = con.execute("SELECT se_kernel2('add;sum;1;3;1;1', v, [1.0, 2.0, 3.0]), "
                      "se_kernel2('mul;sum;1;3;1;1', [1.0, 2.0, 3.0], v), "
                      "se_value2('mul;sum;0;2;1;1', v, [1.0, 'inf'::DOUBLE]), "
                      "se_kernel2('mul;sum;1;3;~1;0', v, 2.0), "
                      "se_kernel2('mul;sum;1;3;1;0', [1.0, 2.0, 3.0], x), "
                      "se_kernel1(spec, [1.0]) FROM t_nulls").fetchall()[0]
    assert got[:2] == ([1.0, 2.0, 3.0], [0.0, 0.0, 0.0]) and got[3] == [0.0, 0.0, 0.0]
    assert np.isnan(got[2]) and got[4:] == (None, None)


def test_scalar_arguments_and_results(con):
    got = con.execute("SELECT se_kernel2('mul;sum;1;3;1;0', [1.0, 2.0, 3.0], 2.0), "
                      "se_value2('mul;sum;0;3;1;1', [1.0, 2.0, 3.0], [1.0, 1.0, 1.0]), "
                      "se_value1('log;sum;0;;', 0.0), se_value2('div;sum;0;;;', 1.0, 0.0)"
                      ).fetchall()[0]
    assert got == ([2.0, 4.0, 6.0], 6.0, -np.inf, np.inf)


@pytest.mark.parametrize("sql,message", [
    ("SELECT se_kernel2('mul;sum;1;3,4;4,1;0,1', [1.0, 2.0], [1.0, 1, 1, 1])",
     "input a has 2 elements but spec"),
    ("SELECT se_kernel1('id;sum;1;3;1', [1.0, NULL, 2.0])", "NULL elements"),
    ("SELECT se_kernel1('mul;sum;1;3;1', [1.0, 2.0, 3.0])", "takes 2 input"),
    ("SELECT se_kernel1('foo;sum;1;3;1', [1.0])", "unknown operator"),
    ("SELECT se_kernel1('id;sum;1;3,2;1', [1.0])", "one stride per loop dim"),
    ("SELECT se_kernel1('powc;sum;1;3;1', [1.0])", "needs a constant"),
    ("SELECT se_kernel2('id;sum;1;3;1', [1.0], [1.0])", "is for 1 input"),
    ("SELECT se_value1('id;sum;1;3;1', [1.0, 2.0, 3.0])", "has 3 outputs"),
    ("SELECT se_vsum(v) FROM (VALUES ([1.0]), ([1.0, 2.0])) t(v)", "same length"),
    ("SELECT se_split('24;2,2;12,3;2,3;6,1', [1.0])", "SIZE 24"),
    ("SELECT se_stack('4;2;2;2;1', [1.0, 2.0], 5)", "out of range"),
    ("SELECT se_kernel2('mul;sum;1;3,4;~4,1;0,1', [1.0, 2.0, 3.0], [1.0, 1, 1, 1])", "even length"),
    ("SELECT se_kernel2('mul;sum;1;3,4;~4,1;0,1', [12.0, 2.0], [1.0, 1, 1, 1])",
     "input a of spec .*: offset 12 outside a payload of 12"),
    ("SELECT se_kernel2('add;sum;1;3,4;~4,1;0,1', [-1.0, 2.0], [1.0, 1, 1, 1])", "offset -1 outside"),
    ("SELECT se_densify([1.0], 4)", "even length"),
    ("SELECT se_densify([4.0, 1.0], 4)", "offset 4 outside a payload of 4"),
    ("SELECT se_densify([], -1)", "negative"),
])
def test_errors_are_raised_by_duckdb(con, sql, message):
    with pytest.raises(duckdb.Error, match=message):
        con.execute(sql).fetchall()


# ---------------------------------------------------------------- aggregates

@pytest.fixture(scope="module")
def groups(con):
    rng = np.random.default_rng(4)
    n, width = 60_000, 16
    g, val = rng.integers(0, 500, n), rng.uniform(-1, 1, (n, width))
    val[7, 3] = np.nan
    con.execute("CREATE TABLE t_agg AS SELECT unnest(?) AS g, unnest(?::DOUBLE[][]) AS val",
                [g.tolist(), val.tolist()])
    return g, val


@pytest.mark.parametrize("agg,ufunc", [("se_vsum", np.add), ("se_vmax", np.maximum),
                                       ("se_vmin", np.minimum), ("se_wsum", np.add)])
def test_aggregates_in_parallel(con, groups, agg, ufunc):
    """Grouped over two threads (combine), NaN propagating as in NumPy."""
    g, val = groups
    con.execute("SET threads = 2")
    args = "val[2], val" if agg == "se_wsum" else "val"
    result = con.execute(f"SELECT g, {agg}({args}) FROM t_agg GROUP BY g ORDER BY g").fetchall()
    init = {"se_vmax": -np.inf, "se_vmin": np.inf}.get(agg, 0.0)
    want = np.full((500, val.shape[1]), init)
    ufunc.at(want, g, val[:, 1:2] * val if agg == "se_wsum" else val)
    np.testing.assert_allclose(np.array([r[1] for r in result]), want[[r[0] for r in result]],
                               rtol=1e-12, atol=1e-12)
    assert np.isnan(want[g[7], 3])


KERNEL_SUM_SPECS = ["mul;sum;2;3,4;1,0;0,1",           # outer products: X^T Y over the rows
                    "mul;sum;2;4,3;0,1;1,0",           # ... into a transposed result
                    "mul;sum;2;3,5,4;4,0,1;0,1,5",     # matrix products, stacked along k
                    "mul;sum;1;3,4;1,0;0,1",           # a one-sided sum (no matrix product)
                    "mul;sum;1;3,4;4,1;4,1",           # a batch (no stacking)
                    "mul;sum;2;3,4;4,1;4,1"]           # element-wise


@pytest.mark.parametrize("spec", KERNEL_SUM_SPECS + [random_spec(np.random.default_rng(s), "mul", "sum")[0]
                                                     for s in range(6)])
@pytest.mark.parametrize("n_groups", [1, 3, 700])
def test_kernel_sums_in_parallel(con, spec, n_groups):
    """se_ksum(spec, a, b) = the sum of se_kernel2(spec, a, b) over a group's rows, grouped
    over two threads; with an inf meeting zeros NaN, as the kernels give."""
    rng = np.random.default_rng(len(spec) + n_groups)
    _, _, _, dims, *strides = spec.split(";")
    dims = [int(d) for d in dims.split(",")]
    sizes = [1 + sum((d - 1) * int(t) for d, t in zip(dims, st.split(","))) for st in strides]
    n = 1500
    a, b = rng.normal(size=(n, sizes[0])), rng.normal(size=(n, sizes[1]))
    a[11, :] = 0.0
    a[11, 0] = np.inf
    g = rng.integers(0, n_groups, n)
    con.execute("SET threads = 2")
    con.execute("CREATE OR REPLACE TABLE t_ksum AS SELECT unnest(?) AS g, unnest(?::DOUBLE[][]) AS a, "
                "unnest(?::DOUBLE[][]) AS b", [g.tolist(), a.tolist(), b.tolist()])
    result = con.execute(f"SELECT g, se_ksum('{spec}', a, b) FROM t_ksum GROUP BY g ORDER BY g").fetchall()
    rows = np.array([ref_kernel(spec, a[r], b[r]) for r in range(n)]).reshape(n, -1)
    want = np.zeros((n_groups, rows.shape[1]))
    np.add.at(want, g, rows)
    np.testing.assert_allclose(np.array([r[1] for r in result]).reshape(len(result), -1),
                               want[[r[0] for r in result]], rtol=1e-9, atol=1e-9, err_msg=spec)


@pytest.mark.parametrize("sql,message", [
    ("SELECT se_ksum('add;sum;1;2;1;1', [1.0, 2.0], [1.0, 2.0])", "not a product-sum"),
    ("SELECT se_ksum('mul;sum;2;3,4;1,0;0,1', [1.0, 2.0], [1.0, 2.0, 3.0, 4.0])",
     "input a has 2 elements but spec .* reads 3"),
    ("SELECT se_ksum('mul;sum;1;2;~1;1', [0.0, 2.0], [1.0, 2.0])", "not a product-sum of two dense"),
])
def test_kernel_sum_errors(con, sql, message):
    with pytest.raises(duckdb.Error, match=message):
        con.execute(sql).fetchall()


def test_aggregates_skip_nulls_and_give_null_for_nothing(con):
    assert con.execute("SELECT se_vsum(v) FROM (SELECT [1.0] AS v) WHERE false").fetchall() == [(None,)]
    assert con.execute("SELECT se_vmax(v), se_wsum(w, v) FROM (VALUES ([1.0, 5.0], 2.0), (NULL, 1.0), "
                       "([3.0, 2.0], NULL)) t(v, w)").fetchall() == [([3.0, 5.0], [2.0, 10.0])]
    assert con.execute("SELECT se_ksum('mul;sum;1;2;1;1', v, w) FROM (VALUES ([1.0, 5.0], [2.0, 1.0]), "
                       "(NULL, [1.0, 1.0]), ([3.0, 2.0], NULL)) t(v, w)").fetchall() == [([2.0, 5.0],)]


@pytest.mark.parametrize("fill", [0.0, np.inf])
def test_split_and_stack_round_trip(con, fill):
    """Pieces all the fill (the tensor's default) are NULL; a stack fills what it does not
    write with it."""
    big = np.arange(0.0, 24.0).reshape(4, 6)
    big[2:4, 0:3] = fill                             # position 2 is all fill
    spec = "24;2,2;12,3;2,3;6,1" + (f";{fill!r}" if fill else "")   # 2x2 blocks of 2x3
    rows = con.execute(f"SELECT generate_subscripts(v, 1) - 1, unnest(v) FROM "
                       f"(SELECT se_split('{spec}', ?::DOUBLE[]) AS v)", [big.ravel().tolist()]
                       ).fetchall()
    assert [p for p, _ in rows] == [0, 1, 2, 3]
    for p, v in rows:
        block = big[2 * (p // 2):2 * (p // 2) + 2, 3 * (p % 2):3 * (p % 2) + 3].ravel()
        assert (v is None) if p == 2 else v == block.tolist()
    got = con.execute(f"SELECT se_stack('{spec}', v, p) FROM (SELECT generate_subscripts(x, 1) - 1 "
                      f"AS p, unnest(x) AS v FROM (SELECT se_split('{spec}', ?::DOUBLE[]) AS x))",
                      [big.ravel().tolist()]).fetchall()[0][0]
    assert got == big.ravel().tolist()
    assert con.execute(f"SELECT se_stack('3;3;1;;{';inf' if fill else ''}', v, p) FROM "
                       "(VALUES (2.0, 0), (5.0, 2)) t(v, p)").fetchall() == [([2.0, fill, 5.0],)]


def test_stack_packed_sorts_positions_in_parallel_groups(con):
    """se_stack_packed packs scalars at positions (positions sorted, then the values, as
    se_sparsify packs an array), per group over two threads; explicit zeros, -0.0, NaN
    and inf are kept as given; positions beyond 2^32 sort."""
    rng = np.random.default_rng(5)
    n = 50_000
    g = rng.integers(0, 3, n)
    pos = rng.choice(1 << 40, n, replace=False)
    val = rng.uniform(-1, 1, n)
    val[:4] = [0.0, -0.0, np.nan, np.inf]
    con.execute("SET threads = 2")
    con.execute("CREATE OR REPLACE TEMP TABLE t_pack AS SELECT unnest(?) AS g, "
                "unnest(?::BIGINT[]) AS p, unnest(?::DOUBLE[]) AS v",
                [g.tolist(), pos.tolist(), val.tolist()])
    got = dict(con.execute("SELECT g, se_stack_packed(p, v) FROM t_pack GROUP BY g").fetchall())
    for group in range(3):
        order = np.argsort(pos[g == group])
        want = np.concatenate([pos[g == group][order].astype(np.float64), val[g == group][order]])
        np.testing.assert_array_equal(np.array(got[group]), want)
        assert np.signbit(np.array(got[group])).sum() == np.signbit(want).sum()
    assert con.execute("SELECT se_stack_packed(p, v) FROM (VALUES (3, 1.0), (1, 2.0)) t(p, v)"
                       ).fetchall() == [([1.0, 3.0, 2.0, 1.0],)]
    assert con.execute("SELECT se_stack_packed(p, v) FROM t_pack WHERE false").fetchall() == [(None,)]
    for rows, message in [("(1, 1.0), (1, 2.0)", "position 1 appears twice"),
                          ("(1, NULL)", "val is NULL"), ("(-1, 1.0)", "negative position")]:
        with pytest.raises(duckdb.Error, match=message):
            con.execute(f"SELECT se_stack_packed(p, v) FROM (VALUES {rows}) t(p, v)").fetchall()


def test_split_gives_every_piece_of_every_row(con):
    """se_split's pieces of many rows (over several chunks) in position order, NULL when all
    +0.0 (-0.0 kept), a NULL array NULL."""
    rng = np.random.default_rng(5)
    spec = "24;2,2;12,3;2,3;6,1"                     # 2x2 blocks of 2x3 of a 4x6 array
    arrays = [rng.uniform(-1, 1, 24) for _ in range(3000)]
    arrays[1][12:15] = arrays[1][18:21] = 0.0        # its position 2 is all zeros
    arrays[2][:] = 0.0
    arrays[2][3] = -0.0                              # alone in position 1
    con.execute("CREATE TABLE t_split AS SELECT unnest(range(3001)) AS k, "
                "unnest(?::DOUBLE[][]) AS v", [[a.tolist() for a in arrays] + [None]])
    split = dict(con.execute(f"SELECT k, se_split('{spec}', v) FROM t_split").fetchall())
    assert split[3000] is None
    for k, a in enumerate(arrays):
        blocks = a.reshape(2, 2, 2, 3).transpose(0, 2, 1, 3).reshape(4, 6)
        assert split[k] == [b.tolist() if (b != 0).any() or np.signbit(b).any() else None
                            for b in blocks], k
    assert split[1][2] is None and split[2] == [None, [-0.0, 0.0, 0.0, 0.0, 0.0, 0.0], None, None]
    assert np.signbit(split[2][1][0])


# ---------------------------------------------------------------- the backend

def test_a_connection_without_unsigned_extensions_falls_back(recwarn):
    with duckdb.connect() as con:
        with pytest.warns(RuntimeWarning, match="allow_unsigned_extensions") as caught:
            backend = DuckDBBackend(con)
        assert len(caught) == 1 and backend.dialect.name == "duckdb"
        a = sp.random(30, 20, density=0.2, random_state=1, format="csr")
        h = np.random.default_rng(1).normal(size=(20, 300))
        with Session("input A[i,j]\ninput H[j,f]\nY[i,f] = A[i,j] * H[j,f]\noutput Y",
                     {"A": a, "H": h}, backend=backend) as session:
            assert "fallback: the DuckDB connection was opened without allow_unsigned" in \
                session.explain(top=1)["kernels"]
            np.testing.assert_allclose(session.run("IJ,Jf->If").outputs["Y"], a @ h, rtol=1e-12)
        backend.close()
        with pytest.raises(BackendError, match="allow_unsigned_extensions"):
            DuckDBBackend(con, native=True)


def test_own_connections_and_allowing_connections_load_it():
    with duckdb.connect(config={"allow_unsigned_extensions": "true"}) as con:
        assert DuckDBBackend(con).dialect.name == "duckdb-native"
    a = np.random.default_rng(2).normal(size=(6, 5))
    with Session("input A[i,j]\nM[i] = max(A[i,j])\noutput M", {"A": a}) as session:
        assert session.dialect.name == "duckdb-native"
        assert session.explain(top=1)["kernels"].startswith("native C")
        np.testing.assert_allclose(session.run("Ij->I").outputs["M"], a.max(axis=1))
    np.testing.assert_allclose(einsum("ij,j->i", a, np.ones(5), plan="Ij,j->I", native=False),
                               a.sum(axis=1))


def test_metadata_footer_matches_what_duckdb_reads():
    footer = duckdb_extension.metadata_footer("abc")
    fields = [footer[22 + 32 * k:22 + 32 * (k + 1)].rstrip(b"\0").decode() for k in range(8)]
    assert fields[3:] == ["C_STRUCT", "abc", duckdb_extension.C_API_VERSION, "linux_amd64", "4"]
    assert len(footer) == 22 + 512 and footer.endswith(bytes(256))


def test_packed_payloads_read_from_a_slice_of_an_arrow_column():
    """The UDF path reads packed payloads of an Arrow slice (offsets into the whole child)."""
    dense = np.array([[0.0, 2.0, 0.0], [1.0, 0.0, 3.0], [0.0, 0.0, 0.0], [4.0, 5.0, 6.0]])
    column = arrow_kernels.ragged_array(*blocks.pack(dense))
    for start in range(len(dense) + 1):
        np.testing.assert_array_equal(blocks.unpack(*arrow_kernels.packed(column.slice(start)), 3),
                                      dense[start:])



@pytest.mark.parametrize("text,leaves", FUSED)
def test_fused_chains_match_numpy(con, text, leaves):
    args = ", ".join("NULL::DOUBLE[]" if v is None else "?::DOUBLE" if np.isscalar(v)
                     else "?::DOUBLE[]" for v in leaves)
    params = [v if np.isscalar(v) else [float(x) for x in v] for v in leaves if v is not None]
    got = con.execute(f"SELECT se_fused(?, {args})", [text, *params]).fetchall()[0][0]
    expected = fused_reference(text, leaves)
    if expected is None:
        assert got is None
    else:
        np.testing.assert_allclose(np.array(got, dtype=np.float64), expected, rtol=RTOL,
                                   atol=ATOL)


@pytest.mark.parametrize("text,args,error", [
    ("fused;3;3,3;$0,$2,add@j", "[1.0, 2, 3]::DOUBLE[], [1.0, 2, 3]::DOUBLE[]",
     'bad leaf "\\$2" \\(of 2\\)'),
    ("fused;3;3,3;$0,add@j", "[1.0, 2, 3]::DOUBLE[], [1.0, 2, 3]::DOUBLE[]",
     '"add" needs 2 operand'),
    ("fused;3;3,3;$0,$1,add@u2", "[1.0, 2, 3]::DOUBLE[], [1.0, 2, 3]::DOUBLE[]", 'bad rule "u2"'),
    ("fused;3;3,3;$0,$1", "[1.0, 2, 3]::DOUBLE[], [1.0, 2, 3]::DOUBLE[]", "end in an operation"),
    ("fused;3;3,3;$0,$1,add@j", "[1.0, 2]::DOUBLE[], [1.0, 2, 3]::DOUBLE[]",
     "input 0 has 2 elements"),
    ("fused;3;3;$0,sqrt@f", "[1, 2, 3]", "input 0 is neither DOUBLE"),
    ("fused;3;3;$0,sqrt@f", "[1.0, 2, 3]::DOUBLE[], [1.0]::DOUBLE[]", "reads 1 inputs, given 2"),
])
def test_fused_chains_refuse_bad_specs_and_inputs(con, text, args, error):
    with pytest.raises(duckdb.Error, match=error):
        con.execute(f"SELECT se_fused('{text}', {args})").fetchall()
