"""PostgreSQL SpMM ``einsum("ij,jf->if", A, H)`` as a user calls it, against scipy, and what
moving its bytes costs alone.

    python -m experiments.bench_pg_loads [--dsn DSN] [--nnz 1000000] [--rows 100000]
                                         [--width 64] [--repeats 7]

Side by side in one process, all in the same rounds (harness.side_by_side, medians):
scipy's CSR @ dense; the whole ``se.einsum`` call with its inputs bound to the
statement that reads them (the default) and stored in tables first
(``pg_bind.BOUND_READS = 0``: how every load ran before), and bound on one backend kept
open across calls (no connection and session set-up). Then the floors: the call's
statement with its inputs bound, computing the result but sending only its size
(inputs in, se_rows, the kernel), and reading its inputs only (inputs in, se_rows); and
the same bytes moved without a kernel: the inputs' raw bytes as parameters of a
statement that only measures them; a result-sized payload sent as a parameter and
returned as the call reads it (send, fetch, one copy); the inputs' bytes by binary COPY
into a bytea column of an UNLOGGED table (TOAST, uncompressed), and that payload
selected back (TOAST read and fetch); a NumPy copy of the result as the yardstick of
memory.
Without --dsn it uses $SE_TEST_PG_DSN, else a throwaway cluster.
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

import sparse_einsum as se
from sparse_einsum.api import einsum_session
from sparse_einsum.backends import pg_bind
from sparse_einsum.backends.pg_cluster import pg_server
from sparse_einsum.backends.pg_copy import execute_raw, result_arrays
from sparse_einsum.backends.pg_kernels import install_kernels
from sparse_einsum.backends.postgres import PostgresBackend
from sparse_einsum.blocks import decompose
from sparse_einsum.sql.pipeline import statement_query

from . import harness
from .bench_spmm import spmm_data
from .common import Report


def _copy_bytea(conn, table: str, payloads: list[bytes]) -> None:
    """Binary COPY of one row of bytea columns."""
    row = len(payloads).to_bytes(2, "big") + b"".join(
        len(p).to_bytes(4, "big") + p for p in payloads)
    with conn.cursor() as cur, cur.copy(f"COPY {table} FROM STDIN (FORMAT BINARY)") as copy:
        copy.write(b"PGCOPY\n\xff\r\n\x00" + b"\x00" * 8 + row + b"\xff\xff")


def _statement(backend: PostgresBackend, a, h, kernel: bool):
    """The call's statement with its inputs bound as the backend binds them, sending back
    the number of elements of its result only (or, without the `kernel`, of its inputs
    as se_rows reads them)."""
    with einsum_session("ij,jf->if", a, h, backend=backend) as session:
        *loads, step = session.compile("optimal").steps
        arrays = session.values.arrays(session.exact_integers)
    blocks = [decompose(arrays[s.target.tensor], s.target.tiling, s.target.sparse) for s in loads]

    def run() -> None:
        for load, held in zip(loads, blocks):
            assert backend.bound.keep(load.target, held)
        try:
            inputs, params = backend.bound.bind(sorted(step.reads))
            size = "SELECT cardinality(val) FROM {} AS q"
            query = size.format(f"({statement_query(step, backend.dialect, inputs)})") \
                if kernel else backend.dialect.with_tables(inputs, "SELECT " + " + ".join(
                    f"({size.format(backend.dialect.q(t))})" for t, _ in inputs))
            execute_raw(backend.conn, query, params)
        finally:
            for load in loads:
                backend.bound.pop(load.target.table)
    return run


def _floors(backend: PostgresBackend, a, h, result: np.ndarray) -> dict:
    """The floors (see the module's docstring), by name; they leave a table to drop."""
    conn = backend.conn
    inputs = [decompose(a, a.shape, sparse=True).values, np.ascontiguousarray(h).reshape(-1)]
    raw = [p.tobytes() for p in inputs]
    cols = ", ".join(f"b{n} bytea" for n in range(len(raw)))
    external = ", ".join(f"ALTER COLUMN b{n} SET STORAGE EXTERNAL" for n in range(len(raw)))

    def stored() -> None:
        conn.execute("DROP TABLE IF EXISTS bench_loads")
        conn.execute(f"CREATE UNLOGGED TABLE bench_loads ({cols}); "
                     f"ALTER TABLE bench_loads {external}")
        _copy_bytea(conn, "bench_loads", raw)

    return {
        "the call's statement, result not sent": _statement(backend, a, h, kernel=True),
        "its inputs read through se_rows only": _statement(backend, a, h, kernel=False),
        "inputs as parameters, measured only": lambda: execute_raw(
            conn, "SELECT " + " + ".join(f"length(${n + 1})" for n in range(len(inputs))),
            inputs, rows=True),
        "result-sized payload sent and returned": lambda: result_arrays(execute_raw(
            conn, "SELECT $1", [result], rows=True))[1].copy(),
        "inputs by binary COPY into a table (TOAST)": stored,
        "result-sized payload selected from a table": lambda: conn.execute(
            "SELECT b1 FROM bench_loads", binary=True).fetchone(),
        "NumPy copy of the result": lambda: result.copy(),
    }


def _bound(reads: int, call):
    """`call` with inputs bound to their statement for up to `reads` statements (0: none)."""
    def run():
        kept, pg_bind.BOUND_READS = pg_bind.BOUND_READS, reads
        try:
            return call()
        finally:
            pg_bind.BOUND_READS = kept
    return run


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m experiments.bench_pg_loads",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--dsn", default=os.environ.get("SE_TEST_PG_DSN"))
    ap.add_argument("--nnz", type=int, default=1_000_000)
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--width", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args(argv)
    if args.dsn:
        _run(args.dsn, args, argv)
        return
    with pg_server() as dsn:
        if dsn is None:
            sys.exit("no PostgreSQL: pass --dsn or install postgresql")
        _run(dsn, args, argv)


def _run(dsn: str, args: argparse.Namespace, argv: list[str] | None) -> None:
    install_kernels(dsn)
    report = Report()
    report(harness.Provenance("bench_pg_loads", argv).header())
    a, h = spmm_data(args.rows, args.nnz, args.width)
    expected = a @ h
    report(f"SpMM: {a.nnz:,} non-zeros, {args.rows:,} rows, f = {args.width}; "
           f"median of {args.repeats}, side by side")

    def check(name: str, out: object) -> None:
        if name.startswith("se."):
            np.testing.assert_allclose(out, expected, rtol=1e-9, atol=1e-9)

    with PostgresBackend(dsn) as backend:
        def call(target: object = "postgres") -> np.ndarray:
            options = {"dsn": dsn} if target == "postgres" else {}
            return se.einsum("ij,jf->if", a, h, backend=target, **options)

        try:
            timings = harness.side_by_side({
                "scipy CSR @ dense": lambda: a @ h,
                "se.einsum, inputs bound": _bound(pg_bind.BOUND_READS, call),
                "se.einsum, inputs stored": _bound(0, call),
                "se.einsum, inputs bound, one open backend": _bound(pg_bind.BOUND_READS,
                                                                    lambda: call(backend)),
                **_floors(backend, a, h, expected),
            }, args.repeats, check=check)
        finally:
            backend.conn.execute("DROP TABLE IF EXISTS bench_loads")
        for line in timings.lines("scipy CSR @ dense"):
            report(line)
    report(f"load average at the end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
