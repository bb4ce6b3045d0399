"""Where PostgreSQL intermediates live: UNLOGGED tables in autocommit (the old way, litter
after a kill), TEMP tables, or UNLOGGED tables inside a transaction (the product's way).

    python -m experiments.bench_scope --dsn DSN [--nnz 1000000] [--rows 100000] [--repeats 3]
                                          [--out FILE.csv]

Runs SpMM and a row sum, Z[i] = sum_f (A[i,j] * H[j,f]), under the optimal plan, the three
ways alternately, and prints each one's median run time, noise and ratio to the transaction.
"""
from __future__ import annotations

import argparse
from contextlib import nullcontext

import numpy as np
import scipy.sparse as sp

from sparse_einsum.backends.postgres import PostgresBackend
from sparse_einsum.session import Session
from sparse_einsum.sql.postgres import PostgresDialect

from . import harness

PROGRAM = "input A[i,j]\ninput H[j,f]\nY[i,f] = A[i,j] * H[j,f]\nZ[i] = sum(Y[i,f])\noutput Z"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m experiments.bench_scope",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--dsn", required=True)
    ap.add_argument("--nnz", type=int, default=1_000_000)
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", help="write the medians to this CSV file")
    args = ap.parse_args(argv)
    provenance = harness.Provenance("bench_scope", argv)
    rng = np.random.default_rng(0)
    n = args.rows
    a = sp.coo_matrix((rng.random(args.nnz), (rng.integers(0, n, args.nnz),
                                              rng.integers(0, n, args.nnz))), shape=(n, n)).tocsr()
    h = rng.random((n, 64))
    expected = (a @ h).sum(axis=1)
    ways = {"unlogged, autocommit": ("UNLOGGED TABLE", False),
            "temp tables": ("TEMP TABLE", False),
            "unlogged in a transaction": ("UNLOGGED TABLE", True)}
    kind = PostgresDialect.table_kind
    db = PostgresBackend(args.dsn)

    def run_as(table_kind: str, transaction: bool):
        def run():
            PostgresDialect.table_kind = table_kind
            db.scope = db.conn.transaction if transaction else nullcontext   # the session's
            with Session(PROGRAM, {"A": a, "H": h}, backend=db) as session:
                plan = session.plan("optimal")
                return harness.timed(lambda: session.run(plan).outputs["Z"])
        return run

    seconds: dict[str, list[float]] = {way: [] for way in ways}

    def check(way: str, result) -> None:
        seconds[way].append(result[0])
        np.testing.assert_allclose(result[1], expected, rtol=1e-9)

    try:
        harness.side_by_side({way: run_as(*how) for way, how in ways.items()}, args.repeats,
                             warmup=0, check=check)
    finally:
        PostgresDialect.table_kind = kind
        db.close()
    timings = harness.Timings(seconds)      # the runs alone, without planning
    print("\n".join(timings.lines("unlogged in a transaction")))
    if args.out:
        harness.write_csv(args.out, timings.rows("unlogged in a transaction", nnz=args.nnz,
                                                 rows=args.rows), provenance)

if __name__ == "__main__":
    main()
