"""The statements of a training iteration (Adam, the Cora GCN, hidden 256) on DuckDB: its
one-tuple statements as nested calls over one positional scan of their tables
(`sql.nested`), as compiled now, against the same statements with the intermediates
streamed into them as common table expressions joined ON TRUE (the extension without
`Capabilities.nested_calls`). Two trainers from the same weights, alternating in one
process; whole iterations and the update statements.

    python -m experiments.bench_update_statement --repeats 9
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from unittest import mock

from experiments import harness
from experiments.common import add_output_arguments, output_dirs
from experiments.train_gcn import GCN, LOSS, setup
from sparse_einsum.sql.duckdb import DuckDBNativeDialect
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
    data = setup("cora", 256)
    options = dict(loss=LOSS, params=["W1", "W2"], lr=0.1)
    nested = Trainer(GCN, data, tables="bench_nested", **options)
    joins = replace(DuckDBNativeDialect.capabilities, nested_calls=False)
    with mock.patch.object(DuckDBNativeDialect, "capabilities", joins):
        joined = Trainer(GCN, data, tables="bench_joined", **options)
    trainers = {"nested": nested, "joined": joined}
    updates = {f"{what} ({name})": [] for what in ("statements", "W1 update", "W2 update")
               for name in trainers}
    losses: dict[str, float] = {}

    def check(name: str, result: dict) -> None:
        """The same loss from both, and each one's statements and update statements."""
        losses[name] = result["loss"]
        if len(losses) == 2:
            assert losses["nested"] == losses["joined"], losses
            losses.clear()
        trainer = trainers[name]
        updates[f"statements ({name})"].append(trainer.last_run.seconds(loads=False))
        for step in trainer.last_run.steps:
            for param in ("W1", "W2"):
                if step.label.startswith(trainer.job.next_table(param) + " "):
                    updates[f"{param} update ({name})"].append(step.seconds)

    with nested, joined:
        timings = harness.side_by_side({name: t.iterate for name, t in trainers.items()},
                                       args.repeats, check=check)
    timings.samples.update(updates)
    print(f"Adam on the Cora GCN, one iteration, its statements and its update statements "
          f"(median of {args.repeats}):")
    print("\n".join(timings.lines("joined")))
    path = tables / "bench_update_statement_nested_cora_duckdb.csv"
    harness.write_csv(path, timings.rows("joined"), provenance)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
