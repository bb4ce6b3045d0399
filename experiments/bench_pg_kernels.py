"""Micro-benchmark of the PostgreSQL C kernels (not a test).

    python -m experiments.bench_pg_kernels [--dsn DSN] [--rows 100000] [--width 64] [--groups 10000]
                                           [--repeats 3] [--out FILE.csv]

Without --dsn it uses $SE_TEST_PG_DSN, else starts a throwaway cluster
(sparse_einsum.backends.pg_cluster).
Loads rows x width float8[] by binary COPY, then times (medians of --repeats, the forms
of each comparison alternating, `experiments.harness`) SpMM-like aggregations: the C
kernel form, plain se_vsum, relational unnest SQL, and a matrix-vector kernel whose
64x64 weight comes from a one-row table (broadcast cache on/off, or a query constant).
"""
from __future__ import annotations

import argparse
import contextlib
import functools
import os
import sys

import numpy as np

from sparse_einsum.backends.pg_cluster import pg_server
from sparse_einsum.backends.pg_copy import copy_in_arrays, copy_out_arrays
from sparse_einsum.backends.pg_kernels import install_kernels

from . import harness
from .common import Report


KERNEL = "C kernel: se_vsum(se_kernel2(w*val))"


def run(dsn: str, rows: int, width: int, groups: int, repeats: int, report: Report) -> None:
    import psycopg

    install_kernels(dsn)
    rng = np.random.default_rng(0)
    dst, w, val = rng.integers(0, groups, rows), rng.random(rows), rng.normal(size=(rows, width))
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS bench_t, bench_w")
        conn.execute("CREATE TABLE bench_t (dst int8, w float8, val float8[])")

        def load() -> None:
            conn.execute("TRUNCATE bench_t")
            copy_in_arrays(conn, "bench_t", {"dst": dst, "w": w}, val)

        def read_back() -> np.ndarray:
            return copy_out_arrays(conn, "SELECT dst, val FROM bench_t")[1]

        def check_back(name: str, back) -> None:
            if name == "read back":
                assert back.shape == val.shape

        report.timings(f"{rows} x {width} float8 by binary COPY",
                       harness.side_by_side({"load": load, "read back": read_back}, repeats,
                                            check=check_back))
        conn.execute("VACUUM ANALYZE bench_t")

        spec = f"mul;sum;1;{width};0;1"
        forms = {
            KERNEL:
                f"SELECT dst, se_vsum(se_kernel2('{spec}', ARRAY[w], val)) v FROM bench_t GROUP BY dst",
            "plain se_vsum(val)":
                "SELECT dst, se_vsum(val) v FROM bench_t GROUP BY dst",
            "relational unnest":
                "SELECT dst, array_agg(s ORDER BY k) v FROM (SELECT dst, k, sum(w * x) s FROM bench_t, "
                "unnest(val) WITH ORDINALITY u(x, k) GROUP BY dst, k) q GROUP BY dst",
        }
        want = np.zeros((groups, width))
        np.add.at(want, dst, w[:, None] * val)
        for workers in (0, 2):
            conn.execute(f"SET max_parallel_workers_per_gather = {workers}")
            keys, got = copy_out_arrays(conn, forms[KERNEL] + " ORDER BY dst")
            np.testing.assert_allclose(got, want[keys["dst"]], rtol=1e-9, atol=1e-9)
            timings = harness.side_by_side(
                {name: functools.partial(fetch_one, conn,
                                         f"SELECT count(*), sum(v[1]) FROM ({q}) q")
                 for name, q in forms.items()}, repeats)
            report.timings(f"SpMM-like aggregation, {groups} groups, "
                           f"max_parallel_workers_per_gather={workers}", timings, KERNEL,
                           workers=workers)

        conn.execute("SET max_parallel_workers_per_gather = 0")
        m = rng.normal(size=(width, width))
        conn.execute("CREATE TABLE bench_w (m float8[])")
        copy_in_arrays(conn, "bench_w", {}, m.reshape(1, -1), value_column="m")
        size = conn.execute("SELECT pg_column_size(m) FROM bench_w").fetchone()[0]
        report(f"\nbroadcast: a {width}x{width} weight ({size} bytes stored, toasted) from a "
               f"one-row table in a cross join, serial")
        weight = [float(x) for x in m.ravel()]
        for label, spec in (("matrix-vector", f"mul;sum;1;{width},{width};{width},1;0,1"),
                            ("dot with weight row 0", f"mul;sum;0;{width};1;1")):
            joined = (f"SELECT count(*), sum(v[1]) FROM (SELECT se_kernel2('{spec}', m, val) v "
                      f"FROM bench_t, bench_w) q")

            def cached(setting: str) -> tuple:
                conn.execute(f"SET sparse_einsum_kernels.cache_broadcast = {setting}")
                return fetch_one(conn, joined)

            timings = harness.side_by_side(
                {"cache_broadcast=on": functools.partial(cached, "on"),
                 "cache_broadcast=off": functools.partial(cached, "off"),
                 "weight as a query constant (no toast)": functools.partial(
                     fetch_one, conn, f"SELECT count(*), sum(v[1]) FROM (SELECT se_kernel2("
                     f"'{spec}', %s::float8[], val) v FROM bench_t) q", (weight,))},
                repeats)
            report.timings(f"broadcast, {label}", timings, "cache_broadcast=on")
        conn.execute("RESET sparse_einsum_kernels.cache_broadcast")
        conn.execute("DROP TABLE bench_t, bench_w")


def fetch_one(conn, query: str, params: tuple = ()) -> tuple:
    return conn.execute(query, params).fetchone()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m experiments.bench_pg_kernels",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--dsn", default=os.environ.get("SE_TEST_PG_DSN"))
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--width", type=int, default=64)
    ap.add_argument("--groups", type=int, default=10_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", help="write the medians to this CSV file")
    args = ap.parse_args(argv)
    report, provenance = Report(), harness.Provenance("bench_pg_kernels", argv)
    report(provenance.header())
    with contextlib.nullcontext(args.dsn) if args.dsn else pg_server() as dsn:
        if dsn is None:
            sys.exit("no PostgreSQL: pass --dsn or install postgresql")
        run(dsn, args.rows, args.width, args.groups, args.repeats, report)
    if args.out:
        harness.write_csv(args.out, report.rows, provenance)


if __name__ == "__main__":
    main()
