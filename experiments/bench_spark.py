"""The 2-layer GCN forward on Spark (local-cluster with 1 and 2 workers) and DuckDB, side by
side, and the Spark cost model's top 3 plans against their measured times (the paper's
Table 2 columns Opt / 2nd / 3rd).

    python -m experiments.bench_spark [--dataset ogbn-arxiv] [--workers 1,2] [--local 2]
        [--top 3] [--repeats 3] [--no-warmup] [--hidden 256] [--worker-memory 4096]
        [--master spark://host:7077 ...] [--out experiments/results]

Each configuration is what a user runs: a `Session` on the program and the data with
the backend (Spark: ``local-cluster[W,1,MB]``, W worker processes of one core each, and
with --local N ``local[N]``, N task threads in the driver's JVM; the
plans are ranked with the Spark constants and the cluster's parallelism), its plan and
``session.run``. Each plan runs once to warm up (not with --no-warmup), then the plans
run ``--repeats`` times in turn (round robin, `harness.side_by_side`). Reported per plan:
the estimated cost, the median and noise of the wall time as the user sees it (loading
the inputs, the statements, fetching the result) and of the statements alone, the
machine's cores busy during a run (every process: a 2-core machine running 2 workers and
the driver shows whether it had cores to spare), whether it was the fastest of the top
plans, and the median seconds of each step; every result is
checked against scipy. Spark's start-up is reported separately. Results:
``bench_spark_gcn2_<dataset>.csv`` in --out (rows with the run's provenance) and the log
``.txt`` in <out>/generated (next to the CSV with --publish).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np

from sparse_einsum import Session
from sparse_einsum.backends import open_backend

from . import harness
from .bench import library_methods, load_workload, max_abs_diff
from .common import Report, add_output_arguments, output_dirs

TOLERANCE = 1e-7          # relative to max |reference|
RANKS = ("Opt", "2nd", "3rd")


def check_run(plan, run, reference, scale: float) -> None:
    """Stop where a run of `plan` differs from the reference."""
    diff = max_abs_diff(run.outputs["Y"], reference)
    if diff > TOLERANCE * scale:
        raise SystemExit(f"{plan.name}: result differs from scipy by {diff:.3g}")


def step_medians(runs: list) -> dict[str, float]:
    """Median seconds of each step (by its label; a label repeated within a run is
    numbered) over the timed runs."""
    per_step: dict[str, list[float]] = {}
    for run in runs:
        seen: dict[str, int] = {}
        for step in run.steps:
            seen[step.label] = seen.get(step.label, 0) + 1
            label = step.label + (f" #{seen[step.label]}" if seen[step.label] > 1 else "")
            per_step.setdefault(label, []).append(step.seconds)
    return {label: statistics.median(times) for label, times in per_step.items()}


def run_configuration(label: str, backend, w, top: int, repeats: int, reference, scale: float,
                      log, warmup: bool = True) -> list[dict]:
    """The top plans of the ranking, each run once to warm up (unless not `warmup`), then
    `repeats` times in turn (round robin: load and noise fall on every plan alike)."""
    with Session(w.program, w.data, backend=backend) as session:
        ranked = session.plans("rank:1", top)
        constants = session.optimizer().model.p
        log(f"\n== {label}: parallelism {constants.parallelism:g}, c_shuffle "
            f"{constants.c_shuffle:.3g}, c_statement {constants.c_statement:.3g} ==")
        for rank, plan in zip(RANKS, ranked):
            log(f"  {rank}: estimated cost {plan.cost:.4g}")
            for line in plan.describe(session.dag).splitlines():
                log(f"      {line}")
        plans = dict(zip(RANKS, ranked))
        runs: dict[str, list] = {rank: [] for rank in plans}
        busy: dict[str, list[float]] = {rank: [] for rank in plans}

        def check(rank: str, result) -> None:
            cores, run = result
            check_run(plans[rank], run, reference, scale)
            runs[rank].append(run)
            busy[rank].append(cores)

        walls = harness.side_by_side(
            {rank: (lambda plan=plan: harness.busy_cores(lambda: session.run(plan)))
             for rank, plan in plans.items()},
            repeats, warmup=int(warmup), check=check)
    statements = harness.Timings({rank: [run.seconds(loads=False) for run in timed]
                                  for rank, timed in runs.items()})
    rows = [{"configuration": label, "rank": rank, "plan": plan.name, "est_cost": plan.cost,
             "wall_s": walls.median(rank), "wall_noise_s": walls.noise(rank),
             "statements_s": statements.median(rank),
             "statements_noise_s": statements.noise(rank),
             "statements": len(runs[rank][0].steps), "repeats": repeats,
             "busy_cores": statistics.median(busy[rank])}
            for rank, plan in plans.items()]
    steps = [step_medians(timed) for timed in runs.values()]
    log(f"  median seconds per step ({repeats} runs; steps the plans share, then their own):")
    labels = list(dict.fromkeys(label for s in steps for label in s))
    log("      " + " ".join(f"{rank:>8}" for rank in RANKS[:len(steps)]) + "  step")
    for step in labels:
        log("      " + " ".join(f"{s[step]:8.2f}" if step in s else f"{'':>8}" for s in steps)
            + f"  {step}")
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.bench_spark",
                                 description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", default="ogbn-arxiv")
    ap.add_argument("--workers", default="1,2", help="worker processes per Spark run")
    ap.add_argument("--local", type=int, default=0,
                    help="also run Spark local[N] with N task threads (0: not)")
    ap.add_argument("--top", type=int, default=3, help="plans of the ranking to time")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--no-warmup", action="store_true",
                    help="time the first runs too (at ogbn-arxiv size a run takes minutes)")
    ap.add_argument("--worker-memory", type=int, default=4096, help="MB per worker")
    ap.add_argument("--master", action="append", default=[],
                    help="also run on this Spark master (a cluster: spark://host:7077, yarn, "
                         "k8s://...), with its own settings; repeatable")
    add_output_arguments(ap)
    args = ap.parse_args(argv)
    tables_dir, generated_dir = output_dirs(args.out, args.publish)
    log, provenance = Report(), harness.Provenance("bench_spark", argv)
    log(provenance.header())
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
    runs = [(f"local[{args.local}]", args.local)] if args.local else []
    runs += [(f"local-cluster[{n},1,{args.worker_memory}]", int(n))
             for n in filter(None, args.workers.split(","))]
    runs += [(master, None) for master in args.master]     # a cluster: its own settings
    for master, slots in runs:
        config = {} if slots is None else {"spark.sql.shuffle.partitions": str(4 * slots)}
        if master.startswith("local-cluster"):
            config |= {"spark.executor.memory": f"{args.worker_memory - 512}m",
                       "spark.driver.memory": "4g"}
        start = time.perf_counter()
        spark = SparkBackend(master, config=config)
        log(f"\nSpark {master} started in {time.perf_counter() - start:.1f} s; kernels: "
            f"{spark.dialect.kernels}" + (f" (fallback: {spark.fallback})" if spark.fallback
                                          else ""))
        with spark:
            rows += run_configuration(f"spark {master}", spark, w, args.top, args.repeats,
                                      reference, scale, log, not args.no_warmup)

    log("\n| configuration | rank | est. cost | wall s (median ± noise) | statements s "
        "(median ± noise) | busy cores | fastest | plan |\n|---|---|---|---|---|---|---|---|")
    for label in dict.fromkeys(r["configuration"] for r in rows):
        ranked = [r for r in rows if r["configuration"] == label]
        fastest = min(ranked, key=lambda r: r["wall_s"])
        for r in ranked:
            r["fastest"] = r is fastest
            log(f"| {label} | {r['rank']} | {r['est_cost']:.4g} | {r['wall_s']:.2f} "
                f"± {r['wall_noise_s']:.2f} | {r['statements_s']:.2f} "
                f"± {r['statements_noise_s']:.2f} | {r['busy_cores']:.2f} | "
                f"{'yes' if r['fastest'] else ''} | {r['plan']} |")
    for label in dict.fromkeys(r["configuration"] for r in rows):
        ranked = [r for r in rows if r["configuration"] == label]
        fastest = next(r for r in ranked if r["fastest"])
        log(f"{label}: the fastest of the top {len(ranked)} (median wall) is "
            f"{fastest['rank']}" + (" (the optimizer's choice)" if fastest["rank"] == "Opt"
                                     else ""))
    stem = f"bench_spark_gcn2_{args.dataset}"
    harness.write_csv(tables_dir / f"{stem}.csv", rows, provenance)
    (generated_dir / f"{stem}.txt").write_text("\n".join(log.lines) + "\n")
    log(f"wrote {tables_dir / stem}.csv and {generated_dir / stem}.txt")
    return 0


if __name__ == "__main__":
    sys.exit(main())
