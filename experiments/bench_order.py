"""Contraction order chosen with sparsity against opt_einsum's path, both with their best
decompositions, on products of a power-law graph and dense features.

    python -m experiments.bench_order [--dataset cora] [--width 64] [--repeats 3]
                                      [--backend duckdb|postgres] [--dsn DSN]
                                      [--out FILE.csv]

For each product of 4-6 tensors, the session's optimal plan with the cost model's order
(`paths="cost"`) and with opt_einsum's (`paths="opt_einsum"`) run alternately; prints
their medians (execution of the plan, loads included) and ratio, and the time each
took to order and plan. Then the planning time of a 10-tensor product. Results are
checked against NumPy.
"""
from __future__ import annotations

import argparse
import functools
import time

import numpy as np

from experiments.datasets import make_graph
from sparse_einsum.api import einsum_session

from . import harness

# (subscripts, operands by letter: A the graph, X features n x w, W weights w x w)
PRODUCTS = [
    ("ij,jk,kf->if", "AAX"),
    ("ij,jk,kf,fg->ig", "AAXW"),
    ("fg,kf,jk,ij->ig", "WXAA"),
    ("ij,jk,kl,lf,fg->ig", "AAAXW"),
    ("ij,jf,fg,ik,kh,gh->i", "AXWAXW"),
    ("ik,ij,jk,jf->if", "XAXX"),
]
TEN = ("ij,jk,kl,lm,ma,ab,bc,cd,de,ef->if", "AAAAXWWWWW")


def _operands(letters: str, graph, width: int, rng) -> list:
    n = graph.num_nodes
    x, w = rng.normal(size=(n, width)), rng.normal(size=(width, width)) / width
    return [{"A": graph.adjacency, "X": x, "W": w}[c] for c in letters]


def _plan_seconds(session) -> float:
    return session.timings["order_seconds"] + session.timings["optimize_seconds"]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m experiments.bench_order",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="cora")
    ap.add_argument("--width", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--backend", default="duckdb")
    ap.add_argument("--dsn")
    ap.add_argument("--out", help="write the medians to this CSV file")
    args = ap.parse_args(argv)
    provenance, rows = harness.Provenance("bench_order", argv), []
    options = {"dsn": args.dsn} if args.dsn else {}
    rng = np.random.default_rng(0)
    graph = make_graph(args.dataset)
    print(f"{args.dataset}: {graph.num_nodes:,} nodes, {graph.num_edges:,} non-zeros; "
          f"features {args.width} wide; {args.backend}; median of {args.repeats} runs")
    print(f"{'product':<26} {'order':<10} {'plan s':>6} {'run s':>8} {'est. cost':>10}  "
          "vs opt_einsum")
    for subscripts, letters in PRODUCTS:
        ops = _operands(letters, graph, args.width, rng)
        expected = np.einsum(subscripts, *(o.toarray() if hasattr(o, "toarray") else o
                                           for o in ops), optimize=True)
        sessions = {paths: einsum_session(subscripts, *ops, backend=args.backend, paths=paths,
                                          **options)
                    for paths in ("cost", "opt_einsum")}
        plans = {paths: s.plan("optimal") for paths, s in sessions.items()}

        def check(paths: str, out) -> None:
            np.testing.assert_allclose(out, expected, rtol=1e-7, atol=1e-7)

        timings = harness.side_by_side(
            {paths: functools.partial(lambda s, p: s.run(p).outputs["OUT"], s, plans[paths])
             for paths, s in sessions.items()}, args.repeats, check=check)
        med = {paths: timings.median(paths) for paths in sessions}
        rows += timings.rows("opt_einsum", product=f"{subscripts} {letters}",
                             dataset=args.dataset, backend=args.backend)
        same = len({plans[p].describe(s.dag)
                    for p, s in sessions.items()}) == 1
        for paths, session in sessions.items():
            ratio = med[paths] / med["opt_einsum"]
            print(f"{subscripts + ' ' + letters:<26} {paths:<10} {_plan_seconds(session):6.3f} "
                  f"{med[paths]:8.3f} {plans[paths].cost:10.4g}  {ratio:.2f}x"
                  + ("  (the same plan)" if same and paths == "cost" else ""))
            session.close()

    subscripts, letters = TEN
    ops = _operands(letters, graph, args.width, rng)
    start, cpu = time.perf_counter(), time.process_time()
    with einsum_session(subscripts, *ops, backend=None, dialect=_dialect(args.backend)) as s:
        order = s.timings["order_seconds"]
        s.plan("optimal")
        print(f"10 tensors {subscripts} ({letters}): order {order:.3f} s, session and plan "
              f"{time.perf_counter() - start:.3f} s wall, {time.process_time() - cpu:.3f} s CPU")
    if args.out:
        harness.write_csv(args.out, rows, provenance)


def _dialect(backend: str):
    from sparse_einsum.sql.duckdb import DuckDBDialect
    from sparse_einsum.sql.postgres import PostgresDialect
    return PostgresDialect() if backend == "postgres" else DuckDBDialect()


if __name__ == "__main__":
    main()
