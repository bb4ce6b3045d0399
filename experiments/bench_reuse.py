"""Plan once, run many: repeated and first calls against scipy, side by side in one process.

    python -m experiments.bench_reuse [--repeats 7] [--rows 10000] [--nnz 100000] [--width 64]
                                     [--out FILE.csv]

Medians of ``--repeats`` after a warm-up round, each method alternating with scipy's on
the same data (`experiments.harness`):

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
import functools

import numpy as np
import scipy.sparse as sp

import sparse_einsum as se
from sparse_einsum import Session
from sparse_einsum.api import einsum_session
from sparse_einsum.backends import open_backend
from sparse_einsum.reuse import PLANS

from . import harness
from .bench_first_call import first_call
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


def bench_gcn(repeats: int) -> None:
    path, data = workload("gcn2", "cora")
    program = path.read_text()
    rng = np.random.default_rng(1)

    def new_features() -> dict:
        x = data["X"].copy()
        x.data = x.data * rng.uniform(0.5, 1.5, x.nnz)
        return {**data, "X": x}

    state = {"call": new_features()}
    engine: dict[str, list[float]] = {"se.run loads": [], "se.run statements": []}

    def check(name: str, result: np.ndarray) -> None:
        """Against scipy's; after each round, the engine's share and the next features."""
        if name == "scipy":
            state["want"] = result
            return
        np.testing.assert_allclose(result, state["want"], rtol=1e-9, atol=1e-12)
        if name == "prepared call":
            with Session(program, state["call"], reuse=True) as session:
                loads, statements = engine_seconds(session.run().steps)
            engine["se.run loads"].append(loads)
            engine["se.run statements"].append(statements)
            state["call"] = new_features()

    with se.prepare(program, data) as step:
        timings = harness.side_by_side(
            {"scipy": lambda: scipy_gcn(state["call"]),
             "se.run": lambda: se.run(program, state["call"])["Y"],
             "prepared call": lambda: step(state["call"])["Y"]}, repeats, check=check)
    timings.samples.update(engine)
    _print("2-layer GCN, Cora size, new feature values each call", timings, repeats)

    db, _ = open_backend("duckdb", shared=True)
    runs: list[tuple[float, dict[str, float]]] = []
    try:
        harness.side_by_side({"first": functools.partial(first_call, program, data, db)},
                             repeats, check=lambda _, run: runs.append(run))
    finally:
        db.close()
    _print("first call of the GCN: statistics and planning, nothing cached", harness.Timings({
        "statistics + planning": [total for total, _ in runs],       # without the copies
        "  Session (stats, order)": [total - split["plan"] for total, split in runs],
        "    of which order": [split["order"] for _, split in runs],
        "  plan('optimal')": [split["plan"] for _, split in runs]}), repeats)


def bench_sddmm(repeats: int, rows: int, nnz: int, width: int) -> None:
    rng = np.random.default_rng(0)
    m = sp.csr_array((rng.random(nnz), (rng.integers(0, rows, nnz),
                                        rng.integers(0, rows, nnz))), shape=(rows, rows))
    m.sum_duplicates()
    x, y = rng.normal(size=(rows, width)), rng.normal(size=(rows, width))
    want = scipy_sddmm(x, m, y)
    state = {"fresh": [x.copy(), m.copy(), y.copy()]}
    engine: dict[str, list[float]] = {"se.einsum loads": [], "se.einsum statements": []}

    def check(name: str, result) -> None:
        """Against scipy's; before each first call, nothing cached: no plans, new arrays;
        after each round, the engine's share."""
        if name == "scipy":
            PLANS.clear()
            state["fresh"] = [x.copy(), m.copy(), y.copy()]
            return
        assert sp.issparse(result)
        np.testing.assert_allclose(result.data, want.data, rtol=1e-9, atol=1e-9)
        if name == "se.einsum again":
            with einsum_session("ik,ij,jk->ij", *state["fresh"], reuse=True) as session:
                loads, statements = engine_seconds(session.run(format="auto").steps)
            engine["se.einsum loads"].append(loads)
            engine["se.einsum statements"].append(statements)

    timings = harness.side_by_side(
        {"scipy": lambda: scipy_sddmm(x, m, y),
         "se.einsum first call": lambda: se.einsum("ik,ij,jk->ij", *state["fresh"]),
         "se.einsum again": lambda: se.einsum("ik,ij,jk->ij", *state["fresh"])},
        repeats, check=check)
    timings.samples.update(engine)
    _print(f"SDDMM, {rows:,} x {rows:,} mask with {m.nnz:,} non-zeros, X and Y "
           f"{rows:,} x {width}, defaults (sparse result)", timings, repeats)


def _print(title: str, timings: harness.Timings, repeats: int) -> None:
    """Medians, noise and ratios to scipy's; the rows kept for --out."""
    baseline = "scipy" if "scipy" in timings.samples else None
    print(f"{title} (median of {repeats}):")
    print("\n".join(timings.lines(baseline)))
    ROWS.extend(timings.rows(baseline, case=title))


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
