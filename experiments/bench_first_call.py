"""First calls: statistics and planning of the benchmark programs, nothing cached.

    python -m experiments.bench_first_call [--dataset cora] [--repeats 9] [--profile N]
                                         [--out FILE.csv]
        [--programs gcn2,...]

For each program of experiments/programs, and a ten-statement program (a 3-layer GCN
with a row maximum, `TEN_STATEMENTS`), on the data of `--dataset`: fresh copies of the
inputs (so no statistics are kept for them), ``Session(...)`` on an open DuckDB backend
(binding, exact statistics, contraction order) plus ``plan("optimal")``, split as
`Session.timings` reports it. Medians of ``--repeats`` after one warm-up call. With
``--profile N``, the N entries of most own time (cProfile) over five first calls of
each program.
"""
from __future__ import annotations

import argparse
import cProfile
import functools
import io
import pstats
import time

import numpy as np

from sparse_einsum import Session
from sparse_einsum.backends import open_backend

from . import harness
from .workloads import WORKLOADS, workload

TEN_STATEMENTS = """\
input A[i,j]
input d[i]
input X[j,f]
input W1[f,h]
input W2[h,g]
input W3[g,c]
N[i,j]   = d[i] * A[i,j] * d[j]
NX[i,f]  = N[i,j] * X[j,f]
Z1[i,h]  = NX[i,f] * W1[f,h]
H1[i,h]  = relu(Z1[i,h])
NH1[i,h] = N[i,j] * H1[j,h]
Z2[i,g]  = NH1[i,h] * W2[h,g]
H2[i,g]  = relu(Z2[i,g])
NH2[i,g] = N[i,j] * H2[j,g]
Y[i,c]   = NH2[i,g] * W3[g,c]
M[i]     = max(Y[i,c])
output Y
output M
"""


def programs(dataset: str) -> dict[str, tuple[str, dict]]:
    """Name -> (program text, inputs): the benchmark programs and the ten-statement one."""
    found = {}
    for name in WORKLOADS:
        path, data = workload(name, dataset)
        found[name] = (path.read_text(), data)
    _, gcn = workload("gcn2", dataset)
    rng = np.random.default_rng(0)
    hidden = gcn["W1"].shape[1]
    found["gcn3 (10 statements)"] = (TEN_STATEMENTS, {
        **{k: gcn[k] for k in ("A", "d", "X", "W1")},
        "W2": rng.normal(scale=hidden ** -0.5, size=(hidden, hidden)),
        "W3": gcn["W2"]})
    return found


def first_call(program: str, data: dict, db) -> tuple[float, dict[str, float]]:
    """Seconds of statistics and planning on fresh copies of `data`, and the split."""
    fresh = {name: value.copy() for name, value in data.items()}
    start = time.perf_counter()
    with Session(program, fresh, backend=db) as session:
        built = time.perf_counter()
        session.plan("optimal")
        end = time.perf_counter()
    timings = session.timings
    return end - start, {"statistics": timings["statistics_seconds"],
                         "order": timings["order_seconds"], "plan": end - built}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m experiments.bench_first_call",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="cora")
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--profile", type=int, default=0, metavar="N")
    ap.add_argument("--programs", default=None,
                    help="comma-separated names as printed (default: all)")
    ap.add_argument("--out", help="write the medians to this CSV file")
    args = ap.parse_args(argv)
    provenance, rows = harness.Provenance("bench_first_call", argv), []
    db, _ = open_backend("duckdb", shared=True)
    try:
        print(f"first call: statistics + planning, {args.dataset} size, median of "
              f"{args.repeats} (ms)")
        print(f"  {'program':<24} {'statements':>10} {'total':>8} {'statistics':>10} "
              f"{'order':>8} {'plan':>8}")
        chosen = args.programs.split(",") if args.programs else None
        for name, (program, data) in programs(args.dataset).items():
            if chosen is not None and name.split()[0] not in chosen:
                continue
            runs: list[tuple[float, dict]] = []
            harness.side_by_side({name: functools.partial(first_call, program, data, db)},
                                 args.repeats, check=lambda _, run: runs.append(run))
            timings = harness.Timings({name: [r[0] for r in runs]})   # without the copies
            statements = sum(1 for line in program.splitlines()
                             if "=" in line.split("#")[0])
            parts = harness.Timings({k: [r[1][k] for r in runs] for k in runs[0][1]})
            split = {k: parts.median(k) * 1e3 for k in parts.samples}
            print(f"  {name:<24} {statements:>10} {timings.median(name) * 1e3:>8.1f} "
                  f"{split['statistics']:>10.1f} {split['order']:>8.1f} {split['plan']:>8.1f}")
            rows += timings.rows(None, dataset=args.dataset, statements=statements,
                                 **{f"{k}_ms": f"{v:.2f}" for k, v in split.items()})
            if args.profile:
                profile = cProfile.Profile()
                profile.enable()
                for _ in range(5):
                    first_call(program, data, db)
                profile.disable()
                out = io.StringIO()
                pstats.Stats(profile, stream=out).sort_stats("tottime").print_stats(
                    args.profile)
                print(out.getvalue())
    finally:
        db.close()
    if args.out:
        harness.write_csv(args.out, rows, provenance)


if __name__ == "__main__":
    main()
