"""Micro-benchmark of the PostgreSQL C kernels (not a test).

    python -m experiments.bench_pg_kernels [--dsn DSN] [--rows 100000] [--width 64] [--groups 10000]

Without --dsn it uses $SE_TEST_PG_DSN, else starts a throwaway cluster
(sparse_einsum.backends.pg_cluster).
Loads rows x width float8[] by binary COPY, then times (median of 3) SpMM-like
aggregations: the C kernel form, plain se_vsum, relational unnest SQL, and a
matrix-vector kernel whose 64x64 weight comes from a one-row table (broadcast cache on/off).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

from sparse_einsum.backends.pg_cluster import pg_server
from sparse_einsum.backends.pg_copy import copy_in_arrays, copy_out_arrays
from sparse_einsum.backends.pg_kernels import install_kernels


def median_time(fn, reps: int = 3) -> float:
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def run(dsn: str, rows: int, width: int, groups: int) -> None:
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

        t_load = median_time(load)
        print(f"load {rows} x {width} float8 by binary COPY: {t_load:.3f} s (median of 3)")
        conn.execute("VACUUM ANALYZE bench_t")
        _, back = copy_out_arrays(conn, "SELECT dst, val FROM bench_t")
        assert back.shape == val.shape
        t_out = median_time(lambda: copy_out_arrays(conn, "SELECT dst, val FROM bench_t"))
        print(f"read back by binary COPY: {t_out:.3f} s")

        spec = f"mul;sum;1;{width};0;1"
        forms = {
            "C kernel: se_vsum(se_kernel2(w*val))":
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
            print(f"\nSpMM-like aggregation, {groups} groups, max_parallel_workers_per_gather={workers}")
            times = {}
            for name, q in forms.items():
                if name.startswith("C kernel"):
                    keys, got = copy_out_arrays(conn, q + " ORDER BY dst")
                    np.testing.assert_allclose(got, want[keys["dst"]], rtol=1e-9, atol=1e-9)
                times[name] = median_time(lambda: conn.execute(
                    f"SELECT count(*), sum(v[1]) FROM ({q}) q").fetchone())
            base = times["C kernel: se_vsum(se_kernel2(w*val))"]
            for name, t in times.items():
                print(f"  {name:40s} {t:7.3f} s  {t / base:6.2f}x")

        conn.execute("SET max_parallel_workers_per_gather = 0")
        m = rng.normal(size=(width, width))
        conn.execute("CREATE TABLE bench_w (m float8[])")
        copy_in_arrays(conn, "bench_w", {}, m.reshape(1, -1), value_column="m")
        size = conn.execute("SELECT pg_column_size(m) FROM bench_w").fetchone()[0]
        print(f"\nbroadcast: a {width}x{width} weight ({size} bytes stored, toasted) from a one-row "
              f"table in a cross join, serial")
        for label, spec in (("matrix-vector", f"mul;sum;1;{width},{width};{width},1;0,1"),
                            ("dot with weight row 0", f"mul;sum;0;{width};1;1")):
            res = {}
            for cache in ("on", "off"):
                conn.execute(f"SET sparse_einsum_kernels.cache_broadcast = {cache}")
                res[cache] = median_time(lambda: conn.execute(
                    f"SELECT count(*), sum(v[1]) FROM (SELECT se_kernel2('{spec}', m, val) v "
                    f"FROM bench_t, bench_w) q").fetchone())
            res["const"] = median_time(lambda: conn.execute(
                f"SELECT count(*), sum(v[1]) FROM (SELECT se_kernel2('{spec}', %s::float8[], val) v "
                f"FROM bench_t) q", ([float(x) for x in m.ravel()],)).fetchone())
            print(f"  {label}:")
            print(f"    cache_broadcast=on                      {res['on']:7.3f} s")
            print(f"    cache_broadcast=off                     {res['off']:7.3f} s  "
                  f"{res['off'] / res['on']:6.2f}x")
            print(f"    weight as a query constant (no toast)   {res['const']:7.3f} s  "
                  f"{res['const'] / res['on']:6.2f}x")
        conn.execute("RESET sparse_einsum_kernels.cache_broadcast")
        conn.execute("DROP TABLE bench_t, bench_w")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m experiments.bench_pg_kernels",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--dsn", default=os.environ.get("SE_TEST_PG_DSN"))
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--width", type=int, default=64)
    ap.add_argument("--groups", type=int, default=10_000)
    args = ap.parse_args(argv)
    if args.dsn:
        run(args.dsn, args.rows, args.width, args.groups)
        return
    with pg_server() as dsn:
        if dsn is None:
            sys.exit("no PostgreSQL: pass --dsn or install postgresql")
        run(dsn, args.rows, args.width, args.groups)


if __name__ == "__main__":
    main()
