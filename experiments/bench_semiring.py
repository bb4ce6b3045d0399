"""Shortest paths by min-plus steps in SQL, against scipy's sparse min-plus step.

    python -m experiments.bench_semiring [--nodes 100000] [--edges 1000000]
                                         [--backend duckdb|duckdb-udf|postgres ...]
                                         [--dsn DSN] [--source 0]

Single-source shortest distances on a random directed graph (weights in [1, 10)) as a
user computes them with sparse_einsum: a prepared program ``N[j] = min(D[i] + W[i,j])``
(see `experiments.paths`), called until the distances stop changing. Each step is timed
side by side with the same step in scipy/NumPy (a gather and `np.minimum.reduceat` over
the looped graph's columns), alternating, from the same distances; the two must agree at
every step, and the final distances must equal `scipy.sparse.csgraph.dijkstra`'s.
Reported: median seconds per step of each, their ratio, the steps taken and Dijkstra's
time for the whole search.
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import dijkstra

from .common import Report, code_version, command_line
from .paths import random_graph, scipy_step, shortest_paths, with_loops

BACKENDS = {"duckdb": ("duckdb", {}), "duckdb-udf": ("duckdb", {"native": False}),
            "postgres": ("postgres", {})}


def run(graph: sp.csr_array, source: int, backend: object, options: dict
        ) -> tuple[np.ndarray, list[float], list[float]]:
    """Distances by prepared SQL steps until nothing changes, each step followed by
    scipy's from the same distances and checked against it; (distances, SQL step
    seconds, scipy step seconds)."""
    columns = sp.csc_array(with_loops(graph))
    sql_s, scipy_s = [], []

    def compare(before: np.ndarray, after: np.ndarray, seconds: float) -> None:
        sql_s.append(seconds)
        start = time.perf_counter()
        expected = scipy_step(before, columns)
        scipy_s.append(time.perf_counter() - start)
        np.testing.assert_array_equal(after, expected)

    distances, _ = shortest_paths(graph, source, backend=backend, on_step=compare, **options)
    return distances, sql_s, scipy_s


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m experiments.bench_semiring",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=100_000)
    ap.add_argument("--edges", type=int, default=1_000_000)
    ap.add_argument("--source", type=int, default=0)
    ap.add_argument("--backend", nargs="+", default=["duckdb"], choices=sorted(BACKENDS))
    ap.add_argument("--dsn", help="PostgreSQL connection string")
    args = ap.parse_args(argv)
    report = Report()
    report(f"{command_line('bench_semiring', argv)}  ({code_version()})")
    graph = random_graph(args.nodes, args.edges)
    start = time.perf_counter()
    expected = dijkstra(graph, indices=args.source)
    dijkstra_s = time.perf_counter() - start
    report(f"shortest paths: {args.nodes:,} nodes, {graph.nnz:,} edges, source {args.source}; "
           f"{np.isfinite(expected).sum():,} reachable; scipy dijkstra {dijkstra_s:.3f} s")
    for name in args.backend:
        backend, options = BACKENDS[name]
        if backend == "postgres":
            options = {**options, "dsn": args.dsn}
        distances, sql_s, scipy_s = run(graph, args.source, backend, options)
        np.testing.assert_array_equal(distances, expected)
        sql, base = statistics.median(sql_s), statistics.median(scipy_s)
        report(f"{name}: {len(sql_s)} steps, distances equal dijkstra's")
        report(f"  scipy min-plus step          {base:8.4f} s")
        report(f"  prepared SQL step            {sql:8.4f} s  {sql / base:6.1f}x scipy "
               f"(whole search {sum(sql_s):.2f} s)")


if __name__ == "__main__":
    main()
