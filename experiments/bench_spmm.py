"""SpMM ``einsum("ij,jf->if", A, H)`` as a user times it, against scipy's CSR @ dense.

    python -m experiments.bench_spmm [--nnz 1000000] [--rows 100000] [--width 64]
                                     [--backend duckdb|duckdb-udf|postgres ...] [--dsn DSN]
                                     [--repeats 3] [--out FILE.csv]

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

import numpy as np
import scipy.sparse as sp

import sparse_einsum as se
from sparse_einsum.api import einsum_session

from . import harness
from .common import Report

BACKENDS = {"duckdb": ("duckdb", {}), "duckdb-udf": ("duckdb", {"native": False}),
            "postgres": ("postgres", {})}


def _parts(a, h, expected, backend: str, options: dict) -> tuple[dict[str, float], str]:
    """One session's parts (seconds) and the chosen plan's UCLC line."""
    with einsum_session("ij,jf->if", a, h, backend=backend, **options) as session:
        plan = session.plan("optimal")
        total, run = harness.timed(lambda: session.run(plan))
        np.testing.assert_allclose(run.outputs["OUT"], expected, rtol=1e-9, atol=1e-9)
        loads = run.seconds() - run.seconds(loads=False)
        parts = {"statistics": session.timings["statistics_seconds"],
                 "optimise": session.timings["optimize_seconds"],
                 "load": loads, "statements": run.seconds(loads=False),
                 "fetch": total - run.seconds()}
        return parts, plan.uclc(session.dag, session.dag.vertex("OUT"))


def spmm_data(rows: int, nnz: int, width: int) -> tuple[sp.csr_matrix, np.ndarray]:
    """A random rows x rows CSR matrix of about `nnz` non-zeros and dense rows x `width`
    features (seeded)."""
    rng = np.random.default_rng(0)
    a = sp.csr_matrix((rng.random(nnz), (rng.integers(0, rows, nnz),
                                         rng.integers(0, rows, nnz))), shape=(rows, rows))
    return a, rng.normal(size=(rows, width))


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
    ap.add_argument("--out", help="write the medians to this CSV file")
    args = ap.parse_args(argv)
    report, provenance = Report(), harness.Provenance("bench_spmm", argv)
    report(provenance.header())

    a, h = spmm_data(args.rows, args.nnz, args.width)
    expected = a @ h
    report(f"SpMM: {a.nnz:,} non-zeros, {args.rows:,} rows, f = {args.width}; "
           f"median of {args.repeats}")

    for name in args.backend:
        backend, options = BACKENDS[name]
        if backend == "postgres":
            options = {**options, "dsn": args.dsn}
        parts, plans = [], []
        baseline = "scipy CSR @ dense"

        def check(method: str, out) -> None:
            if method == "se.einsum, whole call":
                np.testing.assert_allclose(out, expected, rtol=1e-9, atol=1e-9)
            elif method == "optimal plan, in parts":
                parts.append(out[0])
                plans.append(out[1])

        timings = harness.side_by_side(
            {baseline: lambda: a @ h,
             "se.einsum, whole call": lambda: se.einsum("ij,jf->if", a, h, backend=backend,
                                                        **options),
             "optimal plan, in parts": lambda: _parts(a, h, expected, backend, options)},
            args.repeats, check=check)
        del timings.samples["optimal plan, in parts"]         # its parts are the numbers
        timings.samples["optimal plan, statements"] = [p["statements"] for p in parts]
        report.timings(f"{name}: optimal plan {plans[-1]}", timings, baseline, backend=name)
        split = harness.Timings({k: [p[k] for p in parts] for k in parts[0]})
        report("  parts: " + ", ".join(f"{k} {split.median(k):.3f} s ±{split.noise(k):.3f}"
                                       for k in split.samples))
    if args.out:
        harness.write_csv(args.out, report.rows, provenance)

if __name__ == "__main__":
    main()
