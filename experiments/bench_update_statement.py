"""The update statement of a training iteration (Adam on W1 of the Cora GCN, with its
moments): the compiled statement, which joins the parameter and its state side by side
to one row, against the same statement reading them through scalar subqueries (before),
alternating in one process on DuckDB.

    python -m experiments.bench_update_statement --repeats 9
"""
from __future__ import annotations

import argparse
import re
import sys

from experiments import harness
from experiments.common import add_output_arguments, output_dirs
from experiments.train_gcn import GCN, LOSS, setup
from sparse_einsum.training import Trainer


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=9)
    add_output_arguments(ap)
    args = ap.parse_args(argv)
    tables, _ = output_dirs(args.out, args.publish)
    provenance = harness.Provenance("bench_update_statement", argv)
    print(provenance.header())
    with Trainer(GCN, setup("cora", 256), loss=LOSS, params=["W1", "W2"], lr=0.1,
                 tables="bench_update") as trainer:
        trainer.iterate()
        backend = trainer.backend
        step = next(s for s in trainer.compiled.steps if s.target.table == "bench_update_W1_next")
        joined = step.sql.replace('"bench_update_W1_next"', '"bench_update_out"', 1)
        gradient = re.search(r'FROM "(se_\w+)" AS u0 JOIN', joined).group(1)
        backend.execute(f'CREATE TEMP TABLE "{gradient}" AS SELECT val FROM "bench_update_W1"')
        head, _, tail = joined.rpartition(") SELECT ")
        parts = re.findall(r'LEFT JOIN ("\w+") AS c\d ON TRUE', tail)
        columns = re.findall(r'AS ("\w+")', tail.split(" FROM ")[0])
        subqueries = head + ") SELECT " + ", ".join(
            f"(SELECT val FROM {t}) AS {c}" for t, c in zip(parts, columns))

        def run(sql: str):
            return lambda: (backend.execute(sql),
                            backend.execute('DROP TABLE "bench_update_out"'))

        timings = harness.side_by_side({"joined": run(joined), "subqueries": run(subqueries)},
                                       args.repeats)
    print("\n".join(timings.lines("subqueries")))
    path = tables / "bench_update_statement_cora_duckdb.csv"
    harness.write_csv(path, timings.rows("subqueries"), provenance)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
