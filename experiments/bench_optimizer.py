"""Does the optimizer's ranking hold on the engine? Estimated cost vs measured time.

    python -m experiments.bench_optimizer [--dataset cora] [--d-k 256] [--repeats 3]
        [--backend duckdb|postgres] [--dsn DSN] [--programs gcn_layer,sparse_attention,chain3]
        [--timing-dataset amazon-computers] [--out experiments/results] [--publish]

For each program (GCN layer, sparse attention, 3-matrix chain) it runs the plans of
`candidate_plans` (the list the calibration and the harness compare): the top 3
plans, the greedy plan, the relational and the dense plan (when the dense plan fits
the memory cap), each decomposition once (``rank:1 = greedy``: the same plan). It
checks their results agree, and prints estimated cost beside measured time (median
time of ``session.run``: input loading included, as in the cost model; plans are run
round-robin), the Spearman rank correlation, and whether rank 1 was the fastest; both
also counting as agreeing with the estimate two plans whose medians differ by less
than the run-to-run noise (`same_time`). Then
it times what a user waits for before a run, Session + statistics + optimisation (top 3),
at the size of the Amazon-Computers graph.

The printed report is also written to ``bench_optimizer_<dataset>_<backend>.txt`` in
``<out>/generated/`` (ignored by git), or with ``--publish`` in ``--out`` itself.
"""
from __future__ import annotations

import argparse
import functools
import statistics
import sys

import numpy as np
from scipy.stats import spearmanr

from sparse_einsum import Session
from sparse_einsum.backends import open_backend
from sparse_einsum.optimizer.strategies import candidate_plans

from . import harness
from .common import Report, add_output_arguments, output_dirs
from .workloads import workload

PROGRAMS = ("gcn_layer", "sparse_attention", "chain3")


def measure(program: str, dataset: str, d_k: int, repeats: int, db, say: Report) -> dict:
    path, data = workload(program, dataset, d_k=d_k)
    say(f"\n{program} on {dataset}")
    with Session(path, data, backend=db) as session:
        ctx = session.optimizer()
        found = candidate_plans(ctx, top=3)
        plans, names = [], {}
        for p in found:
            if not p.fits:
                say(f"  ({p.name} plan skipped: a tuple exceeds the memory cap)")
                continue
            plans.append(p)
            names[p.name] = " = ".join([p.name, *p.aliases])
        loads = {p.name: [] for p in plans}
        reference = []

        def check(name: str, run) -> None:
            loads[name].append(run.seconds() - run.seconds(loads=False))
            out = run.outputs[session.dag.outputs[0]]
            reference[:] = reference or [out]
            np.testing.assert_allclose(out, reference[0], rtol=1e-8, atol=1e-8)

        timings = harness.side_by_side({p.name: functools.partial(session.run, p) for p in plans},
                                       repeats, check=check)
    say.rows += timings.rows(None, case="plans", program=program, dataset=dataset)
    rows = [(names[p.name], p.cost, timings.median(p.name), statistics.median(loads[p.name]),
             timings.noise(p.name)) for p in plans]
    say(f"  {'plan':<32} {'est. cost':>10} {'measured s':>11} {'of it load':>10} {'noise s':>8}")
    for name, cost, seconds, load, spread in rows:
        say(f"  {name:<32} {cost:>10.3f} {seconds:>11.3f} {load:>10.3f} {spread:>8.3f}")
    costs, medians = [r[1] for r in rows], [r[2] for r in rows]
    rho = spearmanr(costs, medians).statistic
    same = [[same_time(a, b, repeats) for b in rows] for a in rows]
    rho_ties = spearmanr(costs, tied_ranks(medians, same, costs)).statistic
    # the criterion: rank 1 against ranks 2-3, relational and dense (greedy shown only)
    compared = [k for k, r in enumerate(rows) if r[0] != "greedy"]
    fastest = min(compared, key=lambda k: medians[k])
    first = rows[0]
    ties = [f"{rows[a][0]} ~ {rows[b][0]}" for a in range(len(rows))
            for b in range(a + 1, len(rows)) if same[a][b]]
    say(f"  Spearman rank correlation {rho:.2f} ({rho_ties:.2f} with plans the same time within "
        f"noise in the estimate's order); rank 1 {'IS' if fastest == 0 else 'is NOT'} the "
        f"fastest of top 3 + relational + dense ({first[2]:.3f} s vs best {rows[fastest][2]:.3f} s by "
        f"{rows[fastest][0]}{', within noise' if fastest and same[0][fastest] else ''})")
    say(f"  the same time within noise: {', '.join(ties) or 'none'}")
    return {"program": program, "rho": rho, "rho_ties": rho_ties, "first_is_fastest": fastest == 0,
            "first_ties_fastest": same[0][fastest]}


def same_time(a: tuple, b: tuple, repeats: int) -> bool:
    """Whether two plans' median times (a[2], b[2]; noise a[4], b[4]) differ by less than
    twice the standard error of the difference of two medians of `repeats` runs."""
    error = 1.2533 * ((a[4] ** 2 + b[4] ** 2) / repeats) ** 0.5
    return abs(a[2] - b[2]) <= 2 * error


def tied_ranks(values: list[float], same: list[list[bool]], costs: list[float]) -> list[int]:
    """Ranks of the measured `values` where plans the same time within noise (linked by
    `same`, directly or through others) count as agreeing with the estimate: groups by
    their fastest member, in a group by estimated cost."""
    group = list(range(len(values)))
    for a in range(len(values)):
        for b in range(len(values)):
            if same[a][b]:
                old, new = group[b], group[a]
                group = [new if g == old else g for g in group]
    fastest = {g: min(v for v, h in zip(values, group) if h == g) for g in group}
    order = sorted(range(len(values)), key=lambda k: (fastest[group[k]], costs[k]))
    return [order.index(k) + 1 for k in range(len(values))]


def timing(dataset: str, d_k: int, repeats: int, db, say: Report) -> None:
    say(f"\nSession + statistics + optimisation (top 3) time at {dataset} size "
        f"(median of {repeats})")
    for program in PROGRAMS:
        path, data = workload(program, dataset, d_k=d_k)

        def plan_top3():
            with Session(path, data, backend=db) as session:
                session.plans("rank:1", 3)
        timings = harness.side_by_side({program: plan_top3}, repeats)
        say(f"  {program:<18} {timings.median(program):.3f} s")
        say.rows += timings.rows(None, case="optimisation", program=program, dataset=dataset)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.bench_optimizer",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="cora")
    ap.add_argument("--d-k", type=int, default=256)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--backend", default="duckdb")
    ap.add_argument("--dsn")
    ap.add_argument("--programs", default=",".join(PROGRAMS))
    ap.add_argument("--timing-dataset", default="amazon-computers",
                    help="graph of the optimisation timing ('' to skip it)")
    add_output_arguments(ap)
    args = ap.parse_args(argv)
    tables, generated_dir = output_dirs(args.out, args.publish)
    say, provenance = Report(), harness.Provenance("bench_optimizer", argv)
    say(provenance.header())
    db, _ = open_backend(args.backend, dsn=args.dsn)
    with db:
        results = [measure(p, args.dataset, args.d_k, args.repeats, db, say)
                   for p in args.programs.split(",")]
        wins = sum(r["first_is_fastest"] for r in results)
        ties = sum(r["first_ties_fastest"] and not r["first_is_fastest"] for r in results)
        held = sum(r["rho"] >= 0.8 for r in results)
        held_ties = sum(r["rho_ties"] >= 0.8 for r in results)
        say(f"\nrank 1 fastest on {wins} of {len(results)} programs (strictly; {wins + ties} "
            f"counting the same time within noise); Spearman >= 0.8 on {held} ({held_ties} "
            "with ties)")
        if args.timing_dataset:
            timing(args.timing_dataset, 1024, args.repeats, db, say)
    path = generated_dir / f"bench_optimizer_{args.dataset}_{db.name}.txt"
    path.write_text("\n".join(say.lines) + "\n")
    table = tables / f"bench_optimizer_{args.dataset}_{db.name}.csv"
    harness.write_csv(table, say.rows, provenance)
    print(f"\nwrote {path} and {table}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
