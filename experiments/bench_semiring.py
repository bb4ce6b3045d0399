"""Shortest paths by min-plus steps in SQL, against scipy's sparse min-plus step.

    python -m experiments.bench_semiring [--nodes 100000] [--edges 1000000]
                                         [--backend duckdb|duckdb-udf|postgres ...]
                                         [--plan optimal relational ...]
                                         [--dsn DSN] [--source 0] [--out FILE.csv]

Single-source shortest distances on a random directed graph (weights in [1, 10)) as a
user computes them with sparse_einsum: a prepared program ``N[j] = min(D[i] + W[i,j])``
(see `experiments.paths`), called until the distances stop changing. Each step is timed
side by side with the same step in scipy/NumPy (a gather and `np.minimum.reduceat` over
the looped graph's columns), alternating, from the same distances; the two must agree at
every step, and the final distances must equal `scipy.sparse.csgraph.dijkstra`'s. Each
plan named (`--plan`, default optimal) is run on each backend in turn.
Reported: median seconds per step of each with its noise, their ratio, the steps taken
and Dijkstra's time for the whole search (and, with --out, the medians as CSV rows
with the run's provenance).
"""
from __future__ import annotations

import argparse
import time

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import dijkstra

from . import harness
from .paths import random_graph, scipy_step, shortest_paths, with_loops

SCIPY, SQL = "scipy min-plus step", "prepared SQL step"
BACKENDS = {"duckdb": ("duckdb", {}), "duckdb-udf": ("duckdb", {"native": False}),
            "postgres": ("postgres", {})}


def run(graph: sp.csr_array, source: int, backend: object, options: dict
        ) -> tuple[np.ndarray, harness.Timings]:
    """Distances by prepared SQL steps until nothing changes, each step followed by
    scipy's from the same distances and checked against it; the distances and the
    seconds of both per step."""
    columns = sp.csc_array(with_loops(graph))
    timings = harness.Timings({SCIPY: [], SQL: []})

    def compare(before: np.ndarray, after: np.ndarray, seconds: float) -> None:
        timings.samples[SQL].append(seconds)
        scipy_s, expected = harness.timed(lambda: scipy_step(before, columns))
        timings.samples[SCIPY].append(scipy_s)
        np.testing.assert_array_equal(after, expected)

    distances, _ = shortest_paths(graph, source, backend=backend, on_step=compare, **options)
    return distances, timings


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m experiments.bench_semiring",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=100_000)
    ap.add_argument("--edges", type=int, default=1_000_000)
    ap.add_argument("--source", type=int, default=0)
    ap.add_argument("--backend", nargs="+", default=["duckdb"], choices=sorted(BACKENDS))
    ap.add_argument("--plan", nargs="+", default=["optimal"],
                    help="plans of the prepared step, each run in turn (default: optimal)")
    ap.add_argument("--dsn", help="PostgreSQL connection string")
    ap.add_argument("--out", help="write the medians to this CSV file")
    args = ap.parse_args(argv)
    provenance = harness.Provenance("bench_semiring", argv)
    print(provenance.header())
    graph = random_graph(args.nodes, args.edges)
    dijkstra_s, expected = harness.timed(lambda: dijkstra(graph, indices=args.source))
    print(f"shortest paths: {args.nodes:,} nodes, {graph.nnz:,} edges, source {args.source}; "
          f"{np.isfinite(expected).sum():,} reachable; scipy dijkstra {dijkstra_s:.3f} s")
    rows = []
    for name in args.backend:
        for plan in args.plan:
            backend, options = BACKENDS[name]
            options = {**options, "plan": plan}
            if backend == "postgres":
                options["dsn"] = args.dsn
            distances, timings = run(graph, args.source, backend, options)
            np.testing.assert_array_equal(distances, expected)
            steps = len(timings.samples[SQL])
            print(f"{name}, plan {plan}: {steps} steps, distances equal dijkstra's; per step:")
            print("\n".join(timings.lines(SCIPY)))
            rows += timings.rows(SCIPY, backend=name, plan=plan, nodes=args.nodes,
                                 edges=graph.nnz, steps=steps, dijkstra_s=f"{dijkstra_s:.6f}")
    if args.out:
        harness.write_csv(args.out, rows, provenance)


if __name__ == "__main__":
    main()
