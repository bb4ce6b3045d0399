"""The Spark backend's JVM kernels against its Arrow UDF fallback and DuckDB, side by side
on one program and data set (whole ``session.run`` calls, the same plan spec, the methods
alternating; one Spark session serves both kinds of kernels).

    python -m experiments.bench_spark_kernels [--workload gcn2] [--dataset cora]
        [--hidden 16] [--master local[2]] [--repeats 3] [--out experiments/results]

Results: ``bench_spark_kernels_<workload>_<dataset>.csv`` (median, min and max seconds per
method, and the ratio to DuckDB).
"""
from __future__ import annotations

import argparse
import csv
import statistics
import time

from sparse_einsum import Session
from sparse_einsum.backends import open_backend
from sparse_einsum.backends.spark import SparkBackend

from .common import add_output_arguments, output_dirs
from .workloads import workload


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.bench_spark_kernels",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--workload", default="gcn2")
    ap.add_argument("--dataset", default="cora")
    ap.add_argument("--hidden", type=int, default=16)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--plan", default="optimal")
    ap.add_argument("--repeats", type=int, default=3)
    add_output_arguments(ap)
    args = ap.parse_args(argv)
    tables_dir, _ = output_dirs(args.out, args.publish)
    path, data = workload(args.workload, args.dataset, hidden=args.hidden, d_k=args.hidden)
    duck, _ = open_backend("duckdb")
    jvm = SparkBackend(args.master, native=True)
    methods = {"duckdb": duck, f"spark {args.master} jvm": jvm,
               f"spark {args.master} arrow-udf": SparkBackend(session=jvm.spark, native=False)}
    times: dict[str, list[float]] = {name: [] for name in methods}
    with duck, jvm:
        sessions = {name: Session(path, data, backend=b) for name, b in methods.items()}
        for _ in range(args.repeats + 1):            # the first round warms up
            for name, session in sessions.items():
                start = time.perf_counter()
                session.run(args.plan)
                times[name].append(time.perf_counter() - start)
        for session in sessions.values():
            session.close()
    base = statistics.median(times["duckdb"][1:])
    rows = [{"workload": args.workload, "dataset": args.dataset, "hidden": args.hidden,
             "method": name, "plan": args.plan, "median_s": statistics.median(t[1:]),
             "min_s": min(t[1:]), "max_s": max(t[1:]),
             "ratio_to_duckdb": statistics.median(t[1:]) / base, "repeats": args.repeats}
            for name, t in times.items()]
    for row in rows:
        print(f"{row['method']:32} {row['median_s']:8.2f} s  ({row['min_s']:.2f}-"
              f"{row['max_s']:.2f})  {row['ratio_to_duckdb']:6.1f}x DuckDB")
    target = tables_dir / f"bench_spark_kernels_{args.workload}_{args.dataset}.csv"
    with open(target, "w", newline="") as f:
        out = csv.DictWriter(f, fieldnames=list(rows[0]))
        out.writeheader()
        out.writerows(rows)
    print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
