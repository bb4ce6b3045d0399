"""The 2-layer GCN forward on Spark (local-cluster with 1 and 2 workers) and DuckDB, side by
side, and the Spark cost model's top 3 plans against their measured times (the paper's
Table 2 columns Opt / 2nd / 3rd).

    python -m experiments.bench_spark [--dataset ogbn-arxiv] [--workers 1,2] [--top 3]
        [--repeats 1] [--hidden 256] [--worker-memory 6144] [--out experiments/results]

Each configuration is what a user runs: a `Session` on the program and the data with
the backend (Spark: ``local-cluster[W,1,MB]``, W worker processes of one core each; the
plans are ranked with the Spark constants and the cluster's parallelism), its plan and
``session.run``. Reported per plan: the estimated cost, the median wall time of
``--repeats`` runs as the user sees it (loading the inputs, the statements, fetching
the result) and the statements alone; every result is checked against scipy. Spark's
start-up is reported separately. Results: ``bench_spark_gcn2_<dataset>.csv`` in --out
and the log ``.txt`` in <out>/generated (next to the CSV with --publish).
"""
from __future__ import annotations

import argparse
import csv
import os
import statistics
import sys
import time

import numpy as np

from sparse_einsum import Session
from sparse_einsum.backends import open_backend

from .bench import library_methods, load_workload, max_abs_diff
from .common import add_output_arguments, code_version, command_line, output_dirs

TOLERANCE = 1e-7          # relative to max |reference|
RANKS = ("Opt", "2nd", "3rd")


def measure(session: Session, plan, repeats: int, reference, scale: float) -> dict:
    """Median wall and statement seconds of `plan`, checked against the reference."""
    walls, statements, diff = [], [], 0.0
    for _ in range(repeats):
        start = time.perf_counter()
        run = session.run(plan)
        walls.append(time.perf_counter() - start)
        statements.append(run.seconds(loads=False))
        diff = max(diff, max_abs_diff(run.outputs["Y"], reference))
    if diff > TOLERANCE * scale:
        raise SystemExit(f"{plan.name}: result differs from scipy by {diff:.3g}")
    return {"wall_s": statistics.median(walls), "statements_s": statistics.median(statements),
            "max_abs_diff": diff}


def run_configuration(label: str, backend, w, top: int, repeats: int, reference, scale: float,
                      log) -> list[dict]:
    rows = []
    with Session(w.program, w.data, backend=backend) as session:
        ranked = session.plans("rank:1", top)
        constants = session.optimizer().model.p
        log(f"\n== {label}: parallelism {constants.parallelism:g}, c_shuffle "
            f"{constants.c_shuffle:.3g} ==")
        for rank, plan in zip(RANKS, ranked):
            log(f"  {rank}: estimated cost {plan.cost:.4g}")
            for line in plan.describe(session.dag).splitlines():
                log(f"      {line}")
            row = {"configuration": label, "rank": rank, "plan": plan.name,
                   "est_cost": plan.cost, **measure(session, plan, repeats, reference, scale)}
            log(f"      wall {row['wall_s']:.2f} s, statements {row['statements_s']:.2f} s")
            rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.bench_spark",
                                 description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", default="ogbn-arxiv")
    ap.add_argument("--workers", default="1,2", help="worker processes per Spark run")
    ap.add_argument("--top", type=int, default=3, help="plans of the ranking to time")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--worker-memory", type=int, default=4096, help="MB per worker")
    add_output_arguments(ap)
    args = ap.parse_args(argv)
    tables_dir, generated_dir = output_dirs(args.out, args.publish)
    lines = [f"command: {command_line('bench_spark', sys.argv[1:] if argv is None else argv)}",
             f"code: {code_version()}", f"machine: {os.cpu_count()} cores"]

    def log(msg: str) -> None:
        print(msg, flush=True)
        lines.append(msg)

    for line in lines:
        print(line)
    w = load_workload("gcn2", args.dataset, hidden=args.hidden)
    log(f"gcn2 on {args.dataset}: {w.describe}")
    prep, compute, _ = library_methods(w)["scipy"]
    start = time.perf_counter()
    reference = compute(prep())
    log(f"scipy: {time.perf_counter() - start:.2f} s")
    scale = max(1.0, float(np.abs(reference).max()))

    rows = []
    duck, _ = open_backend("duckdb")
    with duck:
        rows += run_configuration("duckdb", duck, w, args.top, args.repeats, reference, scale,
                                  log)
    from sparse_einsum.backends.spark import SparkBackend
    for workers in (int(n) for n in args.workers.split(",")):
        master = f"local-cluster[{workers},1,{args.worker_memory}]"
        start = time.perf_counter()
        spark = SparkBackend(master, config={
            "spark.executor.memory": f"{args.worker_memory - 512}m",
            "spark.driver.memory": "4g", "spark.sql.shuffle.partitions": str(4 * workers)})
        log(f"\nSpark {master} started in {time.perf_counter() - start:.1f} s")
        with spark:
            rows += run_configuration(f"spark {master}", spark, w, args.top, args.repeats,
                                      reference, scale, log)

    log("\n| configuration | rank | est. cost | wall s | statements s | plan |\n"
        "|---|---|---|---|---|---|")
    for r in rows:
        log(f"| {r['configuration']} | {r['rank']} | {r['est_cost']:.4g} | {r['wall_s']:.2f} | "
            f"{r['statements_s']:.2f} | {r['plan']} |")
    for label in dict.fromkeys(r["configuration"] for r in rows):
        ranked = [r for r in rows if r["configuration"] == label]
        fastest = min(ranked, key=lambda r: r["wall_s"])
        log(f"{label}: the fastest of the top {len(ranked)} is {fastest['rank']}"
            + (" (the optimizer's choice)" if fastest["rank"] == "Opt" else ""))
    stem = f"bench_spark_gcn2_{args.dataset}"
    with open(tables_dir / f"{stem}.csv", "w", newline="") as f:
        out = csv.DictWriter(f, fieldnames=list(rows[0]))
        out.writeheader()
        out.writerows(rows)
    (generated_dir / f"{stem}.txt").write_text("\n".join(lines) + "\n")
    log(f"wrote {tables_dir / stem}.csv and {generated_dir / stem}.txt")
    return 0


if __name__ == "__main__":
    sys.exit(main())
