"""Seconds per statement along a deep program on Spark: does the time stay flat as the
program gets deeper? Side by side in one session, alternating: statements persisted with
their lineage (the backend's `materialize`, reliable checkpoints every CHECKPOINT_DEPTH
statements) and statements kept as local checkpoints (the backend before; unsafe when an
executor is lost).

    python -m experiments.bench_spark_depth [--statements 48] [--repeats 2] [--master local[2]]
                                            [--out FILE.csv]

Statement k reads statement k-1 twice (a chain whose unfolded plan doubles at each step).
Prints (and with ``--out`` writes as CSV rows with the run's provenance) the median
seconds per statement of the first and the last ten statements, per method.
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from sparse_einsum.backends.spark import SparkBackend
from sparse_einsum.session import Session

from . import harness
from .common import Report


class LocalCheckpoints(SparkBackend):
    """The same backend, with every statement kept as a local checkpoint."""

    def materialize(self, view, frame, reads=""):
        frame.localCheckpoint(eager=True).createOrReplaceTempView(view)
        self._frames[view] = (None, None)


def program_text(statements: int) -> str:
    return "input A[i,j]\nT0[i,j] = A[i,j] * 1.0\n" + "".join(
        f"T{k}[i,j] = T{k - 1}[i,j] * 0.5 + relu(T{k - 1}[i,j])\n"
        for k in range(1, statements)) + \
        f"output {', '.join(f'T{k}' for k in range(statements))}\n"      # a statement each


def step_times(backend, program: str, data) -> list[float]:
    stamps = []
    with Session(program, data, backend=backend) as session:
        session.run("relational", progress=lambda line: stamps.append(time.perf_counter()))
    return [b - a for a, b in zip(stamps, stamps[1:])]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m experiments.bench_spark_depth",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--statements", type=int, default=48)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--out", help="write the medians to this CSV file")
    args = ap.parse_args(argv)
    report, provenance = Report(), harness.Provenance("bench_spark_depth", argv)
    report(provenance.header())
    data = {"A": np.random.default_rng(0).random((30, 30))}
    program = program_text(args.statements)
    with SparkBackend(args.master, config={"spark.sql.shuffle.partitions": "2"}) as owner:
        backends = {"persisted": SparkBackend(session=owner.spark),
                    "local checkpoints": LocalCheckpoints(session=owner.spark)}
        runs: dict[str, list[list[float]]] = {name: [] for name in backends}
        harness.side_by_side({name: (lambda b=b: step_times(b, program, data))
                              for name, b in backends.items()}, args.repeats,
                             check=lambda name, times: runs[name].append(times))
        for backend in backends.values():
            backend.close()
    report(f"{'method':>18} {'first 10':>9} {'last 10':>9}   (median s per statement)")
    rows = []
    for name, times in runs.items():
        first = statistics.median(t for run in times for t in run[1:11])
        last = statistics.median(t for run in times for t in run[-10:])
        report(f"{name:>18} {first:>9.3f} {last:>9.3f}")
        rows.append({"method": name, "statements": args.statements, "runs": len(times),
                     "first10_median_s": f"{first:.4f}", "last10_median_s": f"{last:.4f}"})
    if args.out:
        harness.write_csv(args.out, rows, provenance)


if __name__ == "__main__":
    main()
