"""SpMM-like statement T[i,f] = A[i,j] * H[j,f]: relational vs tensor-relational vs scipy.

    python -m experiments.bench_spmm [--nnz 1000000] [--rows 100000] [--width 64]
                                     [--backend duckdb|postgres] [--dsn DSN] [--repeats 3]

Prints the median time of each method (execution only: the statements of the plan,
without loading the inputs) and the ratios. Both SQL plans are checked against scipy.
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import scipy.sparse as sp

from sparse_einsum.api import einsum_session


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m experiments.bench_spmm",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--nnz", type=int, default=1_000_000)
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--width", type=int, default=64)
    ap.add_argument("--backend", default="duckdb")
    ap.add_argument("--dsn")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)

    rng = np.random.default_rng(0)
    a = sp.csr_matrix((rng.random(args.nnz), (rng.integers(0, args.rows, args.nnz),
                                              rng.integers(0, args.rows, args.nnz))),
                      shape=(args.rows, args.rows))
    h = rng.normal(size=(args.rows, args.width))
    expected = a @ h

    times: dict[str, list[float]] = {"scipy CSR @ dense": []}
    for _ in range(args.repeats):
        start = time.perf_counter()
        a @ h
        times["scipy CSR @ dense"].append(time.perf_counter() - start)

    plans = {"relational (IJ,JF->IF)": "relational",
             "tensor-relational (IJ,Jf->If)": "IJ,Jf->If"}
    with einsum_session("ij,jf->if", a, h, backend=args.backend, dsn=args.dsn) as session:
        for label, spec in plans.items():
            plan = session.plan(spec)
            times[label] = []
            for _ in range(args.repeats):
                run = session.run(plan)
                times[label].append(run.seconds(loads=False))
                np.testing.assert_allclose(run.outputs["OUT"], expected, rtol=1e-9, atol=1e-9)

    med = {k: statistics.median(v) for k, v in times.items()}
    base = med["scipy CSR @ dense"]
    print(f"SpMM on {args.backend}: {args.nnz:,} non-zeros, {args.rows:,} rows, f = {args.width}; "
          f"median of {args.repeats}")
    for label, seconds in med.items():
        print(f"  {label:<34} {seconds:8.3f} s   {seconds / base:6.1f}x scipy")
    rel, tr = med["relational (IJ,JF->IF)"], med["tensor-relational (IJ,Jf->If)"]
    print(f"  tensor-relational vs relational: {rel / tr:.1f}x faster")


if __name__ == "__main__":
    main()
