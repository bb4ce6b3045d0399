"""The Spark backend's JVM kernels against its Arrow UDF fallback and DuckDB, side by side
on one program and data set (whole ``session.run`` calls, the same plan spec, the methods
alternating; one Spark session serves both kinds of kernels).

    python -m experiments.bench_spark_kernels [--workload gcn2] [--dataset cora]
        [--hidden 16] [--master local[2]] [--repeats 3] [--out experiments/results]

Results: ``bench_spark_kernels_<workload>_<dataset>.csv`` (median and noise of the seconds
per method, the ratio to DuckDB, and the run's provenance).
"""
from __future__ import annotations

import argparse

from sparse_einsum import Session
from sparse_einsum.backends import open_backend
from sparse_einsum.backends.spark import SparkBackend

from . import harness
from .common import Report, add_output_arguments, output_dirs
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
    report, provenance = Report(), harness.Provenance("bench_spark_kernels", argv)
    report(provenance.header())
    tables_dir, _ = output_dirs(args.out, args.publish)
    path, data = workload(args.workload, args.dataset, hidden=args.hidden, d_k=args.hidden)
    duck, _ = open_backend("duckdb")
    jvm = SparkBackend(args.master, native=True)
    backends = {"duckdb": duck, f"spark {args.master} jvm": jvm,
                f"spark {args.master} arrow-udf": SparkBackend(session=jvm.spark, native=False)}
    with duck, jvm:
        sessions = {name: Session(path, data, backend=b) for name, b in backends.items()}
        try:
            timings = harness.side_by_side(
                {name: (lambda s=session: s.run(args.plan)) for name, session in sessions.items()},
                args.repeats)
        finally:
            for session in sessions.values():
                session.close()
    report.timings(f"{args.workload} on {args.dataset}, hidden {args.hidden}, plan {args.plan}",
                   timings, "duckdb", workload=args.workload, dataset=args.dataset,
                   hidden=args.hidden, plan=args.plan)
    target = tables_dir / f"bench_spark_kernels_{args.workload}_{args.dataset}.csv"
    harness.write_csv(target, report.rows, provenance)
    report(f"wrote {target}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
