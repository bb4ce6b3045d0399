"""Time each stage of a long program, parse to compiled SQL (nothing runs):

    python -m experiments.bench_long_program [--statements 4000 16000 220000] [--out FILE.csv]

Statement k alternates a product with a max and an element-wise expression reading the
previous tensor twice (so that every result is shared); 220,000 statements are 11 MB.
Prints seconds per stage and per 1,000 statements, to show that every stage is linear;
``--out`` writes them as CSV rows with the run's provenance.
"""
from __future__ import annotations

import argparse

import numpy as np

from sparse_einsum.program.parser import parse_program
from sparse_einsum.session import Session
from sparse_einsum.sql.duckdb import DuckDBDialect

from . import harness
from .common import Report

STAGES = ("parse", "lower", "stats", "plan", "compile")


def program_text(statements: int) -> str:
    lines = ["input A[i,j]", "input B[j,k]", "T0[i,k] = A[i,j] * B[j,k]"]
    for k in range(1, statements):
        lines.append(f"T{k}[i,k] = T{k - 1}[i,k] * 0.5 + relu(T{k - 1}[i,k]) - A[i,k]" if k % 2
                     else f"T{k}[i,k] = max(T{k - 1}[i,j] * B[j,k])")
    return "\n".join(lines) + "\n"


def stage_seconds(text: str, data: dict) -> dict[str, float]:
    """Seconds of each stage, parse to compiled SQL, of one program."""
    seconds = {}
    seconds["parse"], program = harness.timed(lambda: parse_program(text))
    seconds["lower"], session = harness.timed(
        lambda: Session(program, data, backend=None, dialect=DuckDBDialect()))
    with session:
        seconds["stats"], _ = harness.timed(session.optimizer)
        seconds["plan"], plan = harness.timed(lambda: session.plan("optimal"))
        seconds["compile"], _ = harness.timed(lambda: session.compile(plan))
    return seconds


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m experiments.bench_long_program",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--statements", type=int, nargs="+", default=[4000, 16000])
    ap.add_argument("--out", help="write the seconds per stage to this CSV file")
    args = ap.parse_args(argv)
    report, provenance = Report(), harness.Provenance("bench_long_program", argv)
    report(provenance.header())
    rng = np.random.default_rng(0)
    data = {"A": rng.random((20, 20)), "B": rng.random((20, 20))}
    report(f"{'statements':>10} {'MB':>6} " + " ".join(f"{s:>7}" for s in STAGES)
           + "   (seconds)")
    rows = []
    for n in args.statements:
        text = program_text(n)
        seconds = stage_seconds(text, data)
        report(f"{n:>10} {len(text) / 1e6:>6.1f} "
               + " ".join(f"{seconds[s]:>7.1f}" for s in STAGES))
        rows += [{"statements": n, "megabytes": f"{len(text) / 1e6:.2f}", "stage": s,
                  "seconds": f"{seconds[s]:.4f}",
                  "seconds_per_1000": f"{1000 * seconds[s] / n:.5f}"} for s in STAGES]
    if args.out:
        harness.write_csv(args.out, rows, provenance)


if __name__ == "__main__":
    main()
