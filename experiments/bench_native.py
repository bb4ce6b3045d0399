"""Native kernels (the DuckDB extension, the PostgreSQL kernels with BLAS) against NumPy,
scipy and the fallback paths, side by side in one run: round-robin, medians.

    python -m experiments.bench_native [--cases grouped-sum,spmm,einsum-call,matvec,gemm,wq]
        [--engines duckdb,postgres] [--repeats 5] [--dsn DSN] [--out experiments/results]
        [--publish]

Cases (the targets of the native-kernels work):

* grouped-sum: 200k vectors of 767 doubles summed into 20k groups. DuckDB
  ``CREATE TABLE AS SELECT g, se_vsum(val) ... GROUP BY g`` against ``np.add.reduceat``
  (over the rows sorted by group, as reduceat needs; the sort is a part), and scipy's
  group-indicator matrix product.
* spmm: ``Y[i,f] = A[i,j] * H[j,f]`` under the per-label plan ``IJ,Jf->If``, 1M
  non-zeros, 100k rows, 64 wide: the plan's statements (inputs already loaded) on
  DuckDB with the extension, DuckDB with UDF kernels and PostgreSQL, against scipy.
* einsum-call: the whole ``se.einsum("ij,jf->if", A, H, plan="IJ,Jf->If")`` with 200k
  non-zeros on 20k nodes and 767-wide H on DuckDB, as the user times it, and its parts.
* matvec: per-row vector x matrix with a 767 x 256 weight held in one tuple, 20k rows,
  on PostgreSQL (BLAS on and off) and DuckDB, against NumPy's batched matmul.
* gemm: the GCN's dense product ``Z[i,h] = NX[i,f] * W1[f,h]`` at Amazon-Computers size
  (13,752 x 767 by 767 x 256) as one tuple each and in 256-row tiles, on PostgreSQL
  (BLAS on and off) and DuckDB, against NumPy.
* wq: the attention benchmark's projection ``T0[I,k] = X[I,m] * WQ[m,k]`` on the Cora
  graph (X 2708 x 1433 sparse features, WQ 1433 x 1024 as one tuple) on PostgreSQL and
  DuckDB, against NumPy.

PostgreSQL runs on --dsn, else on a throwaway cluster (sparse_einsum.backends.pg_cluster);
the kernels are installed (or updated) there. --engines keeps the cases' methods on those
engines (NumPy and scipy always run). Every method's result is checked.
"""
from __future__ import annotations

import argparse
import contextlib
import itertools
import statistics
import time
from typing import Callable

import numpy as np
import pyarrow as pa
import scipy.sparse as sp

import sparse_einsum as se
from sparse_einsum import Session
from sparse_einsum.api import einsum_session
from sparse_einsum.backends import open_backend
from sparse_einsum.backends.duckdb import DuckDBBackend
from sparse_einsum.backends.pg_cluster import pg_server
from sparse_einsum.blocks import compose, decompose
from sparse_einsum.sql.steps import TableRelation

from . import harness
from .common import Report, add_output_arguments, output_dirs
from .workloads import workload

CASES = ("grouped-sum", "spmm", "einsum-call", "matvec", "gemm", "wq")
ENGINES = ("duckdb", "postgres")


def side_by_side(methods: dict[str, Callable[[], object]], repeats: int, baseline: str,
                 say: Report, title: str) -> None:
    """Time `methods` in turn (`harness.side_by_side`); print and keep medians and ratios
    to the baseline."""
    say.timings(title, harness.side_by_side(methods, repeats), baseline)


def list_array(values: np.ndarray) -> pa.Array:
    rows, width = values.shape
    offsets = pa.array(np.arange(0, rows * width + 1, width, dtype=np.int32))
    return pa.ListArray.from_arrays(offsets, pa.array(values.reshape(-1)))


# ---------------------------------------------------------------- cases

def grouped_sum(repeats: int, say: Report, **_) -> None:
    rng = np.random.default_rng(0)
    n, width, groups = 200_000, 767, 20_000
    g, v = rng.integers(0, groups, n), rng.normal(size=(n, width))
    db = DuckDBBackend(native=True)
    db.con.register("src", pa.table({"g": g, "val": list_array(v)}))
    db.execute("CREATE TABLE t AS SELECT * FROM src")
    db.con.unregister("src")
    order = np.argsort(g, kind="stable")
    v_sorted, g_sorted = v[order], g[order]
    starts = np.flatnonzero(np.r_[True, g_sorted[1:] != g_sorted[:-1]])
    indicator = sp.csr_matrix((np.ones(n), (g, np.arange(n))), shape=(groups, n))

    def duck():
        db.execute("CREATE OR REPLACE TABLE r AS SELECT g, se_vsum(val) AS val FROM t GROUP BY g")

    def reduceat_with_sort():
        o = np.argsort(g, kind="stable")
        s = g[o]
        return np.add.reduceat(v[o], np.flatnonzero(np.r_[True, s[1:] != s[:-1]]), axis=0)

    want = np.add.reduceat(v_sorted, starts, axis=0)
    duck()
    got = db.con.sql("SELECT g, val FROM r ORDER BY g").to_arrow_table()
    np.testing.assert_allclose(np.stack(got.column("val").to_pylist()), want, rtol=1e-9, atol=1e-9)
    side_by_side({"NumPy: np.add.reduceat over rows sorted by group": reduceat_with_sort,
                  "DuckDB + extension: se_vsum GROUP BY (CREATE TABLE AS)": duck,
                  "  part of NumPy: np.add.reduceat alone (rows pre-sorted)":
                      lambda: np.add.reduceat(v_sorted, starts, axis=0),
                  "scipy: group indicator (CSR) @ vectors": lambda: indicator @ v},
                 repeats, "NumPy: np.add.reduceat over rows sorted by group", say,
                 f"grouped sum: {n:,} x {width} into {groups:,} groups")
    db.close()


def _spmm_data(nnz: int, rows: int, width: int) -> tuple[sp.csr_matrix, np.ndarray]:
    rng = np.random.default_rng(0)
    a = sp.csr_matrix((rng.random(nnz), (rng.integers(0, rows, nnz), rng.integers(0, rows, nnz))),
                      shape=(rows, rows))
    return a, rng.normal(size=(rows, width))


def spmm(repeats: int, say: Report, pg: str | None, engines: set[str], **_) -> None:
    a, h = _spmm_data(1_000_000, 100_000, 64)
    expected = a @ h
    backends = {"DuckDB + extension": DuckDBBackend(native=True),
                "DuckDB, UDF kernels (fallback)": DuckDBBackend(native=False)
                } if "duckdb" in engines else {}
    if pg:
        backends["PostgreSQL (C kernels)"] = open_backend("postgres", dsn=pg)[0]
    methods: dict[str, Callable[[], object]] = {"scipy: CSR @ dense": lambda: a @ h}
    with contextlib.ExitStack() as stack:
        for db in backends.values():
            stack.enter_context(db)              # closed after the sessions' cleanup
        for label, db in backends.items():
            session = stack.enter_context(einsum_session("ij,jf->if", a, h, backend=db))
            plan = session.plan("IJ,Jf->If")
            compiled = session.compile(plan)
            loaded = _load_inputs(session, compiled)
            stack.callback(lambda s=session, c=loaded: [s.backend.drop(r) for r in c])

            def statements(session=session, compiled=compiled):
                for step in compiled.steps:
                    if step.kind == "sql":
                        session.backend.run(step)
                        last = step.target
                for step in compiled.steps:
                    if step.kind == "sql" and step.target != last:
                        session.backend.drop(step.target)
                return last

            out = statements()
            got = compose(session.backend.fetch(out), out.shape, out.tiling)
            np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-9)
            session.backend.drop(out)

            def timed(session=session, statements=statements):
                session.backend.drop(statements())
            methods[f"{label}: the plan's statements"] = timed
        side_by_side(methods, repeats, "scipy: CSR @ dense", say,
                     "SpMM IJ,Jf->If: 1,000,000 non-zeros, 100,000 rows, f = 64")


def _load_inputs(session: Session, compiled) -> list[TableRelation]:
    """Load the plan's input relations once (the statements are what is timed)."""
    loaded = []
    for step in compiled.steps:
        if step.kind == "load":
            arrays = session.values.arrays(session.exact_integers)
            session.backend.load(step.target, decompose(arrays[step.target.tensor],
                                                        step.target.tiling))
            loaded.append(step.target)
    return loaded


def einsum_call(repeats: int, say: Report, **_) -> None:
    a, h = _spmm_data(200_000, 20_000, 767)
    parts: dict[str, list[float]] = {}

    def call():
        return se.einsum("ij,jf->if", a, h, plan="IJ,Jf->If")

    def call_in_parts():
        start = time.perf_counter()
        with einsum_session("ij,jf->if", a, h) as session:
            opened = time.perf_counter()
            plan = session.plan("IJ,Jf->If")
            planned = time.perf_counter()
            run = session.run(plan)
            ran = time.perf_counter()
        closed = time.perf_counter()
        steps = {"load": sum(s.seconds for s in run.steps if s.label.startswith("load ")),
                 "statement": run.seconds(loads=False)}
        for name, seconds in (("open DuckDB, bind inputs, lower", opened - start),
                              ("statistics and plan", planned - opened),
                              ("load A and H (Arrow)", steps["load"]),
                              ("the statement (join + se_wsum)", steps["statement"]),
                              ("fetch and compose the output",
                               ran - planned - steps["load"] - steps["statement"]),
                              ("drop and close", closed - ran)):
            parts.setdefault(name, []).append(seconds)

    np.testing.assert_allclose(call(), a @ h, rtol=1e-9, atol=1e-9)
    side_by_side({"scipy: CSR @ dense": lambda: a @ h,
                  "se.einsum(..., plan='IJ,Jf->If') on DuckDB + extension": call,
                  "  the same call, timed in parts": call_in_parts},
                 repeats, "scipy: CSR @ dense", say,
                 "the whole call: 200,000 non-zeros on 20,000 nodes, H 767 wide")
    for name, seconds in parts.items():
        say(f"    {name:<56} {statistics.median(seconds):8.3f} s")


def _projection(label: str, db, x: np.ndarray, w: np.ndarray, plan: str
                ) -> tuple[Callable[[], None], Callable[[], None]]:
    """The timed statement of plan `plan` for X @ W on `db` (result checked) and its cleanup."""
    session = einsum_session("im,mk->ik", x, w, backend=db)
    compiled = session.compile(plan)
    loaded = _load_inputs(session, compiled)
    step = next(s for s in compiled.steps if s.kind == "sql")

    def statement():
        session.backend.drop(step.target)
        session.backend.run(step)

    def cleanup():
        for rel in loaded + [step.target]:
            session.backend.drop(rel)
        session.close()

    statement()
    got = compose(session.backend.fetch(step.target), step.target.shape, step.target.tiling)
    np.testing.assert_allclose(got, x @ w, rtol=1e-9, atol=1e-9)
    return statement, cleanup


def projections(cases: dict, x: np.ndarray, w: np.ndarray, repeats: int, say: Report,
                title: str, plans: tuple[str, ...] = ("Im,mk->Ik",)) -> None:
    """X @ W under each plan (by default a per-row kernel against one weight tuple) on each
    backend (PostgreSQL also without BLAS), beside NumPy."""
    baseline = "NumPy: X @ W (batched matmul, BLAS)"
    methods: dict[str, Callable[[], object]] = {baseline: lambda: x @ w}
    cleanup = []
    for (label, db), plan in itertools.product(cases.items(), plans):
        statement, done = _projection(label, db, x, w, plan)
        methods[f"{label}: the statement {plan}"] = statement
        cleanup.append(done)
        if db.name == "postgres":
            def without_blas(statement=statement, db=db):
                db.execute("SET sparse_einsum_kernels.blas = off")
                try:
                    statement()
                finally:
                    db.execute("RESET sparse_einsum_kernels.blas")
            methods[f"{label}, BLAS off (C loops): {plan}"] = without_blas
    side_by_side(methods, repeats, baseline, say, title)
    for done in reversed(cleanup):     # sessions on one backend nest: the last first
        done()


def _backends(pg: str | None, engines: set[str]) -> dict:
    cases = {"DuckDB + extension": DuckDBBackend(native=True)} if "duckdb" in engines else {}
    if pg:
        cases = {"PostgreSQL": open_backend("postgres", dsn=pg)[0], **cases}
    return cases


def matvec(repeats: int, say: Report, pg: str | None, engines: set[str], **_) -> None:
    rng = np.random.default_rng(0)
    x, w = rng.normal(size=(20_000, 767)), rng.normal(size=(767, 256))
    cases = _backends(pg, engines)
    projections(cases, x, w, repeats, say, "per-row vector x matrix: 20,000 rows of 767, one "
                "767 x 256 weight tuple")
    for db in cases.values():
        db.close()


def gemm(repeats: int, say: Report, pg: str | None, engines: set[str], **_) -> None:
    rng = np.random.default_rng(0)
    x, w = rng.normal(size=(13_752, 767)), rng.normal(size=(767, 256))
    cases = _backends(pg, engines)
    projections(cases, x, w, repeats, say, "the GCN's dense product NX W at Amazon-Computers "
                "size: 13,752 x 767 by 767 x 256, one tuple each, and 256-row tiles",
                plans=("im,mk->ik", "I/256m,mk->I/256k"))
    for db in cases.values():
        db.close()


def wq(repeats: int, say: Report, pg: str | None, engines: set[str], **_) -> None:
    _, data = workload("sparse_attention", "cora", d_k=1024)
    x, w = data["X"], data["WQ"]
    dense_x = x.toarray()
    cases = _backends(pg, engines)
    projections(cases, dense_x, w, repeats, say, "WQ projection of the attention benchmark "
                f"(Cora: X {x.shape[0]} x {x.shape[1]}, {x.nnz:,} non-zeros; WQ {w.shape[0]} x "
                f"{w.shape[1]} as one tuple)")
    for db in cases.values():
        db.close()


RUNNERS = {"grouped-sum": grouped_sum, "spmm": spmm, "einsum-call": einsum_call,
           "matvec": matvec, "gemm": gemm, "wq": wq}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m experiments.bench_native",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default=",".join(CASES),
                    help=f"comma-separated, from {', '.join(CASES)}")
    ap.add_argument("--engines", default=",".join(ENGINES),
                    help=f"comma-separated, from {', '.join(ENGINES)}")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--dsn", help="PostgreSQL (default: a throwaway cluster)")
    add_output_arguments(ap)
    args = ap.parse_args(argv)
    cases = [c for c in args.cases.split(",") if c]
    engines = {e for e in args.engines.split(",") if e}
    unknown = set(cases) - set(CASES) | engines - set(ENGINES)
    if unknown:
        ap.error(f"unknown cases or engines {', '.join(sorted(unknown))}")
    say, provenance = Report(), harness.Provenance("bench_native", argv)
    say(provenance.header())
    with contextlib.ExitStack() as stack:
        pg = args.dsn
        if "postgres" not in engines:
            pg = None
        elif pg is None and {"spmm", "matvec", "gemm", "wq"} & set(cases):
            pg = stack.enter_context(pg_server())
        if pg:
            from sparse_einsum.backends.pg_kernels import install_kernels
            install_kernels(pg)
        for case in cases:
            RUNNERS[case](repeats=args.repeats, say=say, pg=pg, engines=engines)
    tables, generated = output_dirs(args.out, args.publish)
    log = generated / "bench_native.txt"
    log.write_text("\n".join(say.lines) + "\n")
    harness.write_csv(tables / "bench_native.csv", say.rows, provenance)
    print(f"\nwritten to {log} and {tables / 'bench_native.csv'}")


if __name__ == "__main__":
    main()
