"""SpMM ``einsum("ij,jf->if", A, H)`` as a user times it, against scipy's CSR @ dense.

    python -m experiments.bench_spmm [--nnz 1000000] [--rows 100000] [--width 64]
                                     [--backend duckdb|duckdb-udf|postgres ...] [--dsn DSN]
                                     [--repeats 3]

Per backend, side by side with scipy in one process (alternating, medians):
the whole ``se.einsum`` call (load, statistics, optimise, execute, fetch), and inside one
session the chosen plan's parts: statistics, optimisation, loading the inputs in the
plan's decompositions, the statements, fetching the result (where the engine reads the
output's statement straight into the fetch, as DuckDB and PostgreSQL do, that time is in
the statements and "fetch" is only composing the array). Every result is checked
against scipy. ``duckdb-udf`` is the DuckDB backend without its extension (NumPy kernels).
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import scipy.sparse as sp

import sparse_einsum as se
from sparse_einsum.api import einsum_session

from .common import Report, code_version, command_line

BACKENDS = {"duckdb": ("duckdb", {}), "duckdb-udf": ("duckdb", {"native": False}),
            "postgres": ("postgres", {})}


def _timed(call) -> tuple[float, object]:
    start = time.perf_counter()
    result = call()
    return time.perf_counter() - start, result


def _parts(a, h, expected, backend: str, options: dict) -> tuple[dict[str, float], str]:
    """One session's parts (seconds) and the chosen plan's UCLC line."""
    with einsum_session("ij,jf->if", a, h, backend=backend, **options) as session:
        plan = session.plan("optimal")
        total, run = _timed(lambda: session.run(plan))
        np.testing.assert_allclose(run.outputs["OUT"], expected, rtol=1e-9, atol=1e-9)
        loads = run.seconds() - run.seconds(loads=False)
        parts = {"statistics": session.timings["statistics_seconds"],
                 "optimise": session.timings["optimize_seconds"],
                 "load": loads, "statements": run.seconds(loads=False),
                 "fetch": total - run.seconds()}
        return parts, plan.uclc(session.dag, session.dag.vertex("OUT"))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m experiments.bench_spmm",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--nnz", type=int, default=1_000_000)
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--width", type=int, default=64)
    ap.add_argument("--backend", nargs="+", default=["duckdb", "duckdb-udf"],
                    choices=sorted(BACKENDS))
    ap.add_argument("--dsn", help="PostgreSQL connection string")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    report = Report()
    report(f"{command_line('bench_spmm', argv)}  ({code_version()})")

    rng = np.random.default_rng(0)
    a = sp.csr_matrix((rng.random(args.nnz), (rng.integers(0, args.rows, args.nnz),
                                              rng.integers(0, args.rows, args.nnz))),
                      shape=(args.rows, args.rows))
    h = rng.normal(size=(args.rows, args.width))
    expected = a @ h
    report(f"SpMM: {a.nnz:,} non-zeros, {args.rows:,} rows, f = {args.width}; "
           f"median of {args.repeats}")

    for name in args.backend:
        backend, options = BACKENDS[name]
        if backend == "postgres":
            options = {**options, "dsn": args.dsn}
        scipy_s, call_s, parts = [], [], []
        plan = ""
        for _ in range(args.repeats):
            scipy_s.append(_timed(lambda: a @ h)[0])
            seconds, out = _timed(lambda: se.einsum("ij,jf->if", a, h, backend=backend,
                                                    **options))
            np.testing.assert_allclose(out, expected, rtol=1e-9, atol=1e-9)
            call_s.append(seconds)
            part, plan = _parts(a, h, expected, backend, options)
            parts.append(part)
        base = statistics.median(scipy_s)
        call = statistics.median(call_s)
        median = {k: statistics.median(p[k] for p in parts) for k in parts[0]}
        report(f"{name}: optimal plan {plan}")
        report(f"  scipy CSR @ dense            {base:8.3f} s")
        report(f"  se.einsum, whole call        {call:8.3f} s  {call / base:6.1f}x scipy")
        report(f"  optimal plan, statements     {median['statements']:8.3f} s  "
               f"{median['statements'] / base:6.1f}x scipy")
        report("  parts: " + ", ".join(f"{k} {v:.3f} s" for k, v in median.items()))


if __name__ == "__main__":
    main()
