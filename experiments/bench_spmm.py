"""SpMM-like statement T[i,f] = A[i,j] * H[j,f]: relational, tensor-relational and the
optimizer's plan against scipy, and the whole `sparse_einsum.einsum` call.

    python -m experiments.bench_spmm [--nnz 1000000] [--rows 100000] [--width 64]
                                     [--backend duckdb|postgres] [--dsn DSN] [--repeats 3]
                                     [--no-relational]

Prints the median time of each method (plans: execution only, the statements of the plan
without loading the inputs; the einsum call: everything, from the arrays to the result)
and the ratios. Every result is checked against scipy.
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import scipy.sparse as sp

from sparse_einsum.api import einsum, einsum_session


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m experiments.bench_spmm",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--nnz", type=int, default=1_000_000)
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--width", type=int, default=64)
    ap.add_argument("--backend", default="duckdb")
    ap.add_argument("--dsn")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--no-relational", action="store_true",
                    help="leave out the relational plan (minutes on PostgreSQL)")
    args = ap.parse_args(argv)

    rng = np.random.default_rng(0)
    a = sp.csr_matrix((rng.random(args.nnz), (rng.integers(0, args.rows, args.nnz),
                                              rng.integers(0, args.rows, args.nnz))),
                      shape=(args.rows, args.rows))
    h = rng.normal(size=(args.rows, args.width))
    expected = a @ h
    options = {"backend": args.backend, "dsn": args.dsn} if args.dsn else {"backend": args.backend}

    scipy_label, call_label = "scipy CSR @ dense", "se.einsum call (optimal, with loads)"
    times: dict[str, list[float]] = {scipy_label: []}
    plans = {"relational (IJ,JF->IF)": "relational",
             "tensor-relational (IJ,Jf->If)": "IJ,Jf->If",
             "optimal": "optimal"}
    if args.no_relational:
        del plans["relational (IJ,JF->IF)"]
    with einsum_session("ij,jf->if", a, h, **options) as session:
        chosen = {label: session.plan(spec) for label, spec in plans.items()}
        uclc = chosen["optimal"].uclc(session.dag, session.dag.vertices[0])
        times.update({label: [] for label in chosen})
        times[call_label] = []
        for _ in range(args.repeats):          # the methods alternate, run after run
            start = time.perf_counter()
            a @ h
            times[scipy_label].append(time.perf_counter() - start)
            for label, plan in chosen.items():
                run = session.run(plan)
                times[label].append(run.seconds(loads=False))
                np.testing.assert_allclose(run.outputs["OUT"], expected, rtol=1e-9, atol=1e-9)
            start = time.perf_counter()
            got = einsum("ij,jf->if", a, h, **options)
            times[call_label].append(time.perf_counter() - start)
            np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-9)

    med = {k: statistics.median(v) for k, v in times.items()}
    base = med[scipy_label]
    print(f"SpMM on {args.backend}: {args.nnz:,} non-zeros, {args.rows:,} rows, f = {args.width}; "
          f"median of {args.repeats}; optimal plan {uclc}")
    for label, seconds in med.items():
        print(f"  {label:<38} {seconds:8.3f} s   {seconds / base:6.1f}x scipy")
    if not args.no_relational:
        rel, tr = med["relational (IJ,JF->IF)"], med["tensor-relational (IJ,Jf->If)"]
        print(f"  tensor-relational vs relational: {rel / tr:.1f}x faster")


if __name__ == "__main__":
    main()
