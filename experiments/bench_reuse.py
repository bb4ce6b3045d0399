"""Plan once, run many: repeated and first calls against scipy, side by side in one process.

    python -m experiments.bench_reuse [--repeats 7] [--rows 10000] [--nnz 100000] [--width 64]
                                     [--out FILE.csv]

Medians of ``--repeats``, each method alternating with scipy's on the same data:

* gcn2 at Cora size (experiments/programs/gcn2.se): ``se.run`` called again with new
  feature values of the same shape and pattern (plan and SQL reused), and the calls of
  ``se.prepare``'s object; beside them the engine's share (input loads and statements,
  from ``Session.run``'s steps);
* the first call's statistics and planning of the same GCN: fresh arrays, nothing cached,
  on an open backend: ``Session(...)`` (binding, exact statistics, contraction order)
  plus ``plan("optimal")``, with the split ``Session.timings`` reports;
* SDDMM ``se.einsum("ik,ij,jk->ij", X, M, Y)`` as users call it (defaults: a sparse
  mask gives a sparse result), X and Y ``--rows`` x ``--width``, M ``--rows`` square
  with ``--nnz`` non-zeros: its first call (nothing cached), repeated calls, and the
  engine's share, against scipy's gather-and-dot.

Every result is checked against scipy's. On a machine with few cores, scipy's OpenBLAS
and the DuckDB extension's (scipy-openblas32) keep separate thread pools whose threads
spin after each call, slowing whichever runs next; ``OPENBLAS_NUM_THREADS=1`` shows
the times without that contention.
"""
from __future__ import annotations

import argparse
import time

import numpy as np
import scipy.sparse as sp

import sparse_einsum as se
from sparse_einsum import Session
from sparse_einsum.api import einsum_session
from sparse_einsum.backends import open_backend
from sparse_einsum.reuse import PLANS

from . import harness
from .bench_sddmm import scipy_sddmm
from .workloads import workload

ROWS: list[dict] = []      # the medians of every table printed, for --out


def scipy_gcn(data: dict) -> np.ndarray:
    """The 2-layer GCN of gcn2.se with scipy.sparse and NumPy."""
    scale = sp.diags_array(data["d"])
    n = (scale @ data["A"] @ scale).tocsr()
    h = np.maximum(n @ (data["X"] @ data["W1"]), 0.0)
    return n @ (h @ data["W2"])


def engine_seconds(steps) -> tuple[float, float]:
    """(input loads, statements) of a run's steps."""
    loads = sum(s.seconds for s in steps if s.label.startswith("load "))
    return loads, sum(s.seconds for s in steps) - loads


def _fresh(data: dict) -> dict:
    """Copies: new objects, so that no statistics are kept for them."""
    return {name: value.copy() for name, value in data.items()}


def bench_gcn(repeats: int) -> None:
    path, data = workload("gcn2", "cora")
    program = path.read_text()
    rng = np.random.default_rng(1)

    def new_features() -> dict:
        x = data["X"].copy()
        x.data = x.data * rng.uniform(0.5, 1.5, x.nnz)
        return {**data, "X": x}

    times: dict[str, list[float]] = {k: [] for k in (
        "scipy", "se.run", "se.run loads", "se.run statements", "prepared call")}
    se.run(program, data)                                   # plans once
    with se.prepare(program, data) as step:
        for _ in range(repeats):
            call = new_features()
            seconds, want = harness.timed(lambda: scipy_gcn(call))
            times["scipy"].append(seconds)
            seconds, got = harness.timed(lambda: se.run(program, call)["Y"])
            times["se.run"].append(seconds)
            np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
            with Session(program, call, reuse=True) as session:
                loads, statements = engine_seconds(session.run().steps)
            times["se.run loads"].append(loads)
            times["se.run statements"].append(statements)
            seconds, got = harness.timed(lambda: step(call)["Y"])
            times["prepared call"].append(seconds)
            np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
    _print("2-layer GCN, Cora size, new feature values each call", times, repeats)

    db, _ = open_backend("duckdb", shared=True)
    first: dict[str, list[float]] = {k: [] for k in (
        "statistics + planning", "  Session (stats, order)", "    of which order",
        "  plan('optimal')")}
    try:
        for _ in range(repeats):
            fresh = _fresh(data)
            start = time.perf_counter()
            with Session(program, fresh, backend=db) as session:
                built = time.perf_counter()
                session.plan("optimal")
                end = time.perf_counter()
            first["statistics + planning"].append(end - start)
            first["  Session (stats, order)"].append(built - start)
            first["    of which order"].append(session.timings["order_seconds"])
            first["  plan('optimal')"].append(end - built)
    finally:
        db.close()
    _print("first call of the GCN: statistics and planning, nothing cached", first, repeats)


def bench_sddmm(repeats: int, rows: int, nnz: int, width: int) -> None:
    rng = np.random.default_rng(0)
    m = sp.csr_array((rng.random(nnz), (rng.integers(0, rows, nnz),
                                        rng.integers(0, rows, nnz))), shape=(rows, rows))
    m.sum_duplicates()
    x, y = rng.normal(size=(rows, width)), rng.normal(size=(rows, width))
    times: dict[str, list[float]] = {k: [] for k in (
        "scipy", "se.einsum first call", "se.einsum again", "se.einsum loads",
        "se.einsum statements")}
    for _ in range(repeats):
        seconds, want = harness.timed(lambda: scipy_sddmm(x, m, y))
        times["scipy"].append(seconds)
        PLANS.clear()
        fresh = [x.copy(), m.copy(), y.copy()]
        seconds, got = harness.timed(lambda: se.einsum("ik,ij,jk->ij", *fresh))
        times["se.einsum first call"].append(seconds)
        assert sp.issparse(got)
        np.testing.assert_allclose(got.data, want.data, rtol=1e-9, atol=1e-9)
        seconds, got = harness.timed(lambda: se.einsum("ik,ij,jk->ij", *fresh))
        times["se.einsum again"].append(seconds)
        with einsum_session("ik,ij,jk->ij", *fresh, reuse=True) as session:
            loads, statements = engine_seconds(session.run(format="auto").steps)
        times["se.einsum loads"].append(loads)
        times["se.einsum statements"].append(statements)
    _print(f"SDDMM, {rows:,} x {rows:,} mask with {m.nnz:,} non-zeros, X and Y "
           f"{rows:,} x {width}, defaults (sparse result)", times, repeats)


def _print(title: str, times: dict[str, list[float]], repeats: int) -> None:
    """Medians, noise and ratios to scipy's (`harness.Timings`); the rows kept for --out."""
    timings = harness.Timings(times)
    print(f"{title} (median of {repeats}):")
    print("\n".join(timings.lines("scipy" if "scipy" in times else None)))
    ROWS.extend(timings.rows("scipy" if "scipy" in times else None, case=title))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m experiments.bench_reuse",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--rows", type=int, default=10_000)
    ap.add_argument("--nnz", type=int, default=100_000)
    ap.add_argument("--width", type=int, default=64)
    ap.add_argument("--out", help="write the medians to this CSV file")
    args = ap.parse_args(argv)
    provenance = harness.Provenance("bench_reuse", argv)
    db, _ = open_backend("duckdb", shared=True)
    print(f"DuckDB kernels: {db.dialect.name} ({db.kernel_detail or db.fallback})")
    db.close()
    bench_gcn(args.repeats)
    bench_sddmm(args.repeats, args.rows, args.nnz, args.width)
    if args.out:
        harness.write_csv(args.out, ROWS, provenance)


if __name__ == "__main__":
    main()
