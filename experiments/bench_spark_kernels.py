"""The Spark backend's JVM kernels against DuckDB (and, with --fallback, the Arrow UDF
fallback), side by side on one program and data set: whole ``session.run`` calls under
the same plan spec, the methods alternating in each round, one Spark session for both
kinds of Spark kernels.

    python -m experiments.bench_spark_kernels [--workload gcn2] [--dataset cora]
        [--hidden 16] [--master local[2]] [--repeats 5] [--fallback]
        [--out experiments/results]

Reported per method: the median wall seconds of a run with their noise and ratio to
DuckDB; the median CPU seconds of a run (this process, plus on a local master the Spark
driver JVM the tasks run in: on a machine shared with other work these move less than
the wall times) and their ratio; for Spark, the jobs and tasks a run starts. Every
result is checked against DuckDB's. Results: ``bench_spark_kernels_<workload>_<dataset>
_h<hidden>.csv`` in --out, with the log in <out>/generated.
"""
from __future__ import annotations

import argparse
import os
import statistics
import time
from typing import Callable

import numpy as np

from sparse_einsum import Session
from sparse_einsum.backends import open_backend
from sparse_einsum.backends.spark import SparkBackend

from .common import Report, add_output_arguments, output_dirs
from .harness import Provenance, side_by_side, write_csv
from .workloads import workload


def process_cpu(pid: int) -> float:
    """CPU seconds (user and system) another process on this machine has used."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def spark_work(backend: SparkBackend) -> Callable[[], tuple[int, int]]:
    """A counter of the jobs, and their tasks, Spark ran in the backend's session since
    the counter's last call."""
    tracker = backend.spark.sparkContext.statusTracker()
    seen: set[int] = set()

    def count() -> tuple[int, int]:
        jobs = set(tracker.getJobIdsForGroup(None)) - seen
        seen.update(jobs)
        stages = {s for j in jobs for s in getattr(tracker.getJobInfo(j), "stageIds", ())}
        return len(jobs), sum(info.numCompletedTasks for info in map(tracker.getStageInfo, stages)
                              if info is not None)
    return count


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.bench_spark_kernels",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--workload", default="gcn2")
    ap.add_argument("--dataset", default="cora")
    ap.add_argument("--hidden", type=int, default=16)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--plan", default="optimal")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--fallback", action="store_true",
                    help="also run the Arrow UDF fallback (slow at Amazon-Photo size and up)")
    add_output_arguments(ap)
    args = ap.parse_args(argv)
    provenance = Provenance("bench_spark_kernels", argv)
    tables_dir, generated = output_dirs(args.out, args.publish)
    log = Report()
    path, data = workload(args.workload, args.dataset, hidden=args.hidden, d_k=args.hidden)
    duck, _ = open_backend("duckdb")
    start = time.perf_counter()
    jvm = SparkBackend(args.master, native=True)
    log(f"Spark session started in {time.perf_counter() - start:.1f} s")
    local = args.master.startswith("local[")
    driver = jvm.spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid() \
        if local else None
    backends = {"duckdb": duck, f"spark {args.master} jvm": jvm}
    if args.fallback:
        backends[f"spark {args.master} arrow-udf"] = SparkBackend(session=jvm.spark,
                                                                  native=False)
    work = spark_work(jvm)
    cpu: dict[str, list[float]] = {name: [] for name in backends}
    jobs: dict[str, tuple[int, int]] = {}
    results: dict[str, np.ndarray] = {}

    def method(name: str, session: Session) -> Callable[[], object]:
        def jvm_cpu() -> float:
            return process_cpu(driver) if driver and name != "duckdb" else 0.0

        def run():
            before = time.process_time() + jvm_cpu()
            outputs = session.run(args.plan).outputs
            cpu[name].append(time.process_time() + jvm_cpu() - before)
            return outputs
        return run

    def check(name: str, outputs) -> None:
        """Outside the timed runs: the result against DuckDB's, and the Spark work since
        the previous method's run (the methods run in turn, DuckDB first)."""
        got, = outputs.values()
        want = results.setdefault("duckdb", got) if name == "duckdb" else results["duckdb"]
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9, err_msg=name)
        jobs[name] = work()

    with duck, jvm:
        sessions = {name: Session(path, data, backend=b) for name, b in backends.items()}
        timings = side_by_side({name: method(name, s) for name, s in sessions.items()},
                               args.repeats, check=check)
        for session in sessions.values():
            session.close()
    title = (f"{args.workload} on {args.dataset}, hidden {args.hidden}, plan {args.plan}: "
             "whole session.run calls")
    log.timings(title, timings, baseline="duckdb")
    rows = []
    cpu_base = statistics.median(cpu["duckdb"][-args.repeats:])
    for row in log.rows:
        name = row["method"]
        seconds = statistics.median(cpu[name][-args.repeats:])
        spark_jobs, tasks = jobs[name]
        row.update(workload=args.workload, dataset=args.dataset, hidden=args.hidden,
                   plan=args.plan, cpu_s=f"{seconds:.4f}", cpu_ratio=f"{seconds / cpu_base:.2f}",
                   cpu_measured="this process" + (" + the Spark driver JVM"
                                                  if name != "duckdb" and driver else ""),
                   spark_jobs=spark_jobs if name != "duckdb" else "",
                   spark_tasks=tasks if name != "duckdb" else "")
        rows.append(row)
        log(f"  {name}: CPU {seconds:.3f} s a run ({seconds / cpu_base:.1f}x DuckDB)"
            + (f", {spark_jobs} Spark jobs, {tasks} tasks" if name != "duckdb" else ""))
    stem = f"bench_spark_kernels_{args.workload}_{args.dataset}_h{args.hidden}"
    write_csv(tables_dir / f"{stem}.csv", rows, provenance)
    (generated / f"{stem}.txt").write_text(provenance.header() + "\n" + "\n".join(log.lines)
                                           + "\n")
    print(f"wrote {tables_dir / (stem + '.csv')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
