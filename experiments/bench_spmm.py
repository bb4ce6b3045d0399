"""SpMM-like statement T[i,f] = A[i,j] * H[j,f]: relational vs tensor-relational vs scipy.

    python experiments/bench_spmm.py [--nnz 1000000] [--rows 100000] [--width 64]
                                     [--backend duckdb|postgres] [--dsn DSN] [--repeats 3]

Prints the median time of each method (execution only, data already loaded) and the
ratios. Both SQL plans are checked against scipy.
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import scipy.sparse as sp

from sparse_einsum.api import build_dag, choose_plan, einsum_program, make_backend
from sparse_einsum.executor import execute


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nnz", type=int, default=1_000_000)
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--width", type=int, default=64)
    ap.add_argument("--backend", default="duckdb")
    ap.add_argument("--dsn")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()

    rng = np.random.default_rng(0)
    a = sp.csr_matrix((rng.random(args.nnz), (rng.integers(0, args.rows, args.nnz),
                                              rng.integers(0, args.rows, args.nnz))),
                      shape=(args.rows, args.rows))
    h = rng.normal(size=(args.rows, args.width))
    data = {"T0": a, "T1": h}
    dag = build_dag(einsum_program(["ij", "jf"], "if"), data)
    expected = a @ h

    times: dict[str, list[float]] = {"scipy CSR @ dense": []}
    for _ in range(args.repeats):
        start = time.perf_counter()
        a @ h
        times["scipy CSR @ dense"].append(time.perf_counter() - start)

    db = make_backend(args.backend, **({"dsn": args.dsn} if args.dsn else {}))
    plans = {"relational (IJ,JF->IF)": "relational",
             "tensor-relational (IJ,Jf->If)": "IJ,Jf->If"}
    try:
        for label, spec in plans.items():
            plan = choose_plan(dag, spec, data, backend=db.name)
            times[label] = []
            for _ in range(args.repeats):
                run = execute(dag, plan, data, db)
                times[label].append(sum(s.seconds for s in run.steps if s.vertex))
                np.testing.assert_allclose(run.outputs["OUT"], expected, rtol=1e-9, atol=1e-9)
    finally:
        db.close()

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
