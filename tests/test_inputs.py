"""Every kind of input gives the same result as the same data as scipy.sparse: data frames
(pandas, polars), Arrow tables and Parquet/CSV files, on DuckDB and PostgreSQL."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest
import scipy.sparse as sp

from sparse_einsum import DataError, Session, einsum, run

N, F = 30, 4
PROGRAM = "input A[i,j]\ninput H[j,f]\nY[i,f] = A[i,j] * H[j,f]\nD[i] = max(A[i,j])\noutput Y, D"


@pytest.fixture(scope="module")
def graph():
    """COO columns with duplicate keys and a zero, the same as scipy.sparse, and features."""
    rng = np.random.default_rng(3)
    src = np.r_[rng.integers(0, N, 120), 0, 0, N - 1]
    dst = np.r_[rng.integers(0, N, 120), 1, 1, N - 1]
    weight = np.r_[rng.normal(size=120), 2.0, -0.5, 0.0]
    matrix = sp.coo_matrix((weight, (src, dst)), shape=(N, N)).tocsr()     # duplicates summed
    return {"src": src, "dst": dst, "weight": weight}, matrix, rng.normal(size=(N, F))


def _expected(matrix, h):
    dense = matrix.toarray()
    return {"Y": dense @ h, "D": dense.max(axis=1)}


def _check(got, want):
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-12, atol=1e-12)


def _frames(columns):
    pandas = pytest.importorskip("pandas")
    frames = {"pandas": pandas.DataFrame(columns), "arrow": pa.table(columns)}
    try:
        import polars
        frames["polars"] = polars.DataFrame(columns)
    except ImportError:
        pass
    return frames


@pytest.mark.parametrize("plan", ["optimal", "relational", "dense", "random:3"])
def test_data_frames_match_scipy_sparse(graph, backend, plan):
    columns, matrix, h = graph
    want = _expected(matrix, h)
    _check(run(PROGRAM, {"A": matrix, "H": h}, plan=plan, backend=backend), want)
    for kind, frame in _frames(columns).items():
        got = run(PROGRAM, {"A": frame, "H": h}, plan=plan, backend=backend)
        _check(got, want)


def test_columns_named_by_the_declaration(graph, backend):
    columns, matrix, h = graph
    frame = pa.table({"weight": columns["weight"], "extra": columns["src"] * 0,
                      "dst": columns["dst"], "src": columns["src"]})
    program = PROGRAM.replace("input A[i,j]", "input A[i,j] from edges(src, dst, weight)")
    _check(run(program, {"A": frame, "H": h}, backend=backend), _expected(matrix, h))
    unweighted = sp.csr_matrix((np.ones(len(columns["src"])), (columns["src"], columns["dst"])),
                               shape=(N, N))
    program = PROGRAM.replace("input A[i,j]", "input A[i,j] from edges(src, dst)")
    _check(run(program, {"A": frame, "H": h}, backend=backend), _expected(unweighted, h))


def test_einsum_takes_a_data_frame(graph, backend):
    columns, matrix, h = graph
    got = einsum("ij,jf->if", _frames(columns)["pandas"], h, backend=backend)
    np.testing.assert_allclose(got, matrix.toarray() @ h, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_files_match_scipy_sparse(graph, backend, tmp_path, fmt):
    columns, matrix, h = graph
    table = pa.table(columns)
    path = tmp_path / f"edges.{fmt}"
    pq.write_table(table, path) if fmt == "parquet" else pcsv.write_csv(table, path)
    want = _expected(matrix, h)
    # a path relative to the program file, and an absolute one
    program_file = tmp_path / "gcn.se"
    program_file.write_text(PROGRAM.replace(
        "input A[i,j]", f"input A[i:{N},j:{N}] from 'edges.{fmt}'(src, dst, weight)"))
    _check(run(program_file, {"H": h}, backend=backend), want)
    text = PROGRAM.replace("input A[i,j]", f"input A[i,j] from '{path}'(src, dst, weight)")
    for plan in ("relational", "random:2"):
        _check(run(text, {"H": h}, plan=plan, backend=backend), want)


def test_bad_frames_and_files_say_what_is_wrong(graph, backend, tmp_path):
    columns, _, h = graph
    fractional = pa.table({"src": columns["src"] + 0.5, "dst": columns["dst"],
                           "weight": columns["weight"]})
    with pytest.raises(DataError, match="key column 'src' .* must hold integers"):
        run(PROGRAM, {"A": fractional, "H": h}, backend=backend)
    with pytest.raises(DataError, match="has 4 columns; expected 2 key columns"):
        run(PROGRAM, {"A": pa.table({**columns, "x": columns["src"]}), "H": h}, backend=backend)
    negative = pa.table({"src": columns["src"] - 1, "dst": columns["dst"]})
    with pytest.raises(DataError, match="negative key -1"):
        run(PROGRAM, {"A": negative, "H": h}, backend=backend)
    missing = PROGRAM.replace("input A[i,j]", "input A[i,j] from 'nope.parquet'(src, dst)")
    with pytest.raises(DataError, match="nope.parquet does not exist"):
        run(missing, {"H": h}, backend=backend)
    pq.write_table(pa.table(columns), tmp_path / "e.parquet")
    wrong = PROGRAM.replace("input A[i,j]", f"input A[i,j] from '{tmp_path / 'e.parquet'}'(src, to)")
    with pytest.raises(DataError):
        run(wrong, {"H": h}, backend=backend)


def test_nothing_is_left_behind(graph, backend):
    columns, _, h = graph
    with Session(PROGRAM, {"A": pa.table(columns), "H": h}, backend=backend) as session:
        session.run("relational")
    left = backend.query("SELECT table_name FROM information_schema.tables WHERE table_name "
                         f"LIKE {backend.dialect.param}", [session.prefix + "%"])
    assert left == []
