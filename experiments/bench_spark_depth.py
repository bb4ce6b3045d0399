"""Seconds per statement along a deep program on Spark: does the time stay flat as the
program gets deeper? Side by side in one session, alternating: statements persisted with
their lineage (the backend's `materialize`, reliable checkpoints every CHECKPOINT_DEPTH
statements) and statements kept as local checkpoints (the backend before; unsafe when an
executor is lost).

    python -m experiments.bench_spark_depth [--statements 48] [--repeats 2] [--master local[2]]

Statement k reads statement k-1 twice (a chain whose unfolded plan doubles at each step).
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from sparse_einsum.backends.spark import SparkBackend
from sparse_einsum.session import Session


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
    args = ap.parse_args(argv)
    data = {"A": np.random.default_rng(0).random((30, 30))}
    program = program_text(args.statements)
    with SparkBackend(args.master, config={"spark.sql.shuffle.partitions": "2"}) as owner:
        methods = {"persisted": SparkBackend(session=owner.spark),
                   "local checkpoints": LocalCheckpoints(session=owner.spark)}
        times: dict[str, list[list[float]]] = {name: [] for name in methods}
        step_times(methods["persisted"], program, data)          # warm-up
        for _ in range(args.repeats):
            for name, backend in methods.items():
                times[name].append(step_times(backend, program, data))
        for backend in methods.values():
            backend.close()
    print(f"{'method':>18} {'first 10':>9} {'last 10':>9}   (median s per statement)")
    for name, runs in times.items():
        first = statistics.median(t for run in runs for t in run[1:11])
        last = statistics.median(t for run in runs for t in run[-10:])
        print(f"{name:>18} {first:>9.3f} {last:>9.3f}")


if __name__ == "__main__":
    main()
