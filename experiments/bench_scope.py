"""Where PostgreSQL intermediates live: UNLOGGED tables in autocommit (the old way, litter
after a kill), TEMP tables, or UNLOGGED tables inside a transaction (the product's way).

    python -m experiments.bench_scope --dsn DSN [--nnz 1000000] [--rows 100000] [--repeats 3]

Runs SpMM and a row sum, Z[i] = sum_f (A[i,j] * H[j,f]), under the optimal plan, the three
ways alternately, and prints each one's run times, median and ratio to the transaction.
"""
from __future__ import annotations

import argparse
import statistics
import time
from contextlib import nullcontext

import numpy as np
import scipy.sparse as sp

from sparse_einsum.backends.postgres import PostgresBackend
from sparse_einsum.session import Session
from sparse_einsum.sql.postgres import PostgresDialect

PROGRAM = "input A[i,j]\ninput H[j,f]\nY[i,f] = A[i,j] * H[j,f]\nZ[i] = sum(Y[i,f])\noutput Z"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m experiments.bench_scope",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--dsn", required=True)
    ap.add_argument("--nnz", type=int, default=1_000_000)
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    n = args.rows
    a = sp.coo_matrix((rng.random(args.nnz), (rng.integers(0, n, args.nnz),
                                              rng.integers(0, n, args.nnz))), shape=(n, n)).tocsr()
    h = rng.random((n, 64))
    expected = (a @ h).sum(axis=1)
    ways = {"unlogged, autocommit": ("UNLOGGED TABLE", False),
            "temp tables": ("TEMP TABLE", False),
            "unlogged in a transaction": ("UNLOGGED TABLE", True)}
    times: dict[str, list[float]] = {way: [] for way in ways}
    kind = PostgresDialect.table_kind
    db = PostgresBackend(args.dsn)
    try:
        for _ in range(args.repeats):
            for way, (table_kind, transaction) in ways.items():
                PostgresDialect.table_kind = table_kind
                db.scope = db.conn.transaction if transaction else nullcontext   # the session's
                with Session(PROGRAM, {"A": a, "H": h}, backend=db) as session:
                    plan = session.plan("optimal")
                    start = time.perf_counter()
                    out = session.run(plan).outputs["Z"]
                    times[way].append(time.perf_counter() - start)
                np.testing.assert_allclose(out, expected, rtol=1e-9)
    finally:
        PostgresDialect.table_kind = kind
        db.close()
    base = statistics.median(times["unlogged in a transaction"])
    for way, seconds in times.items():
        median = statistics.median(seconds)
        print(f"{way:<28} {' '.join(f'{s:.2f}' for s in seconds)}  median {median:.2f} s "
              f"({median / base:.2f}x)")


if __name__ == "__main__":
    main()
