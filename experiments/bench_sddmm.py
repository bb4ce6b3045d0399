"""SDDMM, OUT[i,j] = M[i,j] * sum_k X[i,k] Y[j,k]: the whole einsum call against scipy.

    python -m experiments.bench_sddmm [--rows 10000] [--nnz 100000] [--width 64]
                                      [--backend duckdb|postgres] [--dsn DSN] [--repeats 5]
                                      [--out FILE.csv]

The einsum call ``se.einsum("ik,ij,jk->ij", X, M, Y, format="sparse")`` is timed whole
(session, statistics, contraction order, plan, loads, SQL, sparse result), alternating
with scipy's equivalent (gather the rows of X and Y at the mask's non-zeros, dot them,
multiply by the mask's values). Prints the medians, their ratio, the plan, the order
chosen and the largest estimated intermediate against the mask x k; the results are
checked against scipy's.
"""
from __future__ import annotations

import argparse

import numpy as np
import scipy.sparse as sp

import sparse_einsum as se
from sparse_einsum.api import einsum_session

from . import harness


def scipy_sddmm(x: np.ndarray, m: sp.csr_array, y: np.ndarray) -> sp.csr_array:
    """The mask's non-zeros times the dot products of their rows of X and Y."""
    coo = m.tocoo()
    dots = np.einsum("nk,nk->n", x[coo.row], y[coo.col])
    return sp.csr_array((coo.data * dots, (coo.row, coo.col)), shape=m.shape)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m experiments.bench_sddmm",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10_000)
    ap.add_argument("--nnz", type=int, default=100_000)
    ap.add_argument("--width", type=int, default=64)
    ap.add_argument("--backend", default="duckdb")
    ap.add_argument("--dsn")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", help="write the medians to this CSV file")
    args = ap.parse_args(argv)
    options = {"dsn": args.dsn} if args.dsn else {}
    provenance = harness.Provenance("bench_sddmm", argv)

    rng = np.random.default_rng(0)
    n, k = args.rows, args.width
    m = sp.csr_array((rng.random(args.nnz), (rng.integers(0, n, args.nnz),
                                             rng.integers(0, n, args.nnz))), shape=(n, n))
    m.sum_duplicates()
    x, y = rng.normal(size=(n, k)), rng.normal(size=(n, k))

    with einsum_session("ik,ij,jk->ij", x, m, y, backend=args.backend, **options) as session:
        plan = session.plan("optimal")
        stats = session.optimizer().stats
        print(plan.describe(session.dag))
        largest = max(stats[v.name].nnz for v in session.dag.vertices)
        print(f"order chosen in {session.timings['order_seconds']:.3f} s; largest estimated "
              f"intermediate {largest:,.0f} non-zeros (mask x k = {m.nnz * k:,})")

    def check(name: str, result) -> None:
        np.testing.assert_allclose(result.toarray() if n <= 4000 else result.data,
                                   expected.toarray() if n <= 4000 else expected.data,
                                   rtol=1e-9, atol=1e-9)

    expected = scipy_sddmm(x, m, y)
    baseline = "scipy (gather, dot)"
    timings = harness.side_by_side(
        {baseline: lambda: scipy_sddmm(x, m, y),
         "se.einsum": lambda: se.einsum("ik,ij,jk->ij", x, m, y, format="sparse",
                                        backend=args.backend, **options)},
        args.repeats, check=check)
    print(f"SDDMM on {args.backend}: {n:,} x {n:,} mask with {m.nnz:,} non-zeros, k = {k}; "
          f"median of {args.repeats}, whole calls")
    print("\n".join(timings.lines(baseline)))
    if args.out:
        harness.write_csv(args.out, timings.rows(baseline, backend=args.backend, rows=n,
                                                 nnz=m.nnz, width=k), provenance)

if __name__ == "__main__":
    main()
