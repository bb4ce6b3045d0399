"""Time each stage of a long program, parse to compiled SQL (nothing runs):

    python -m experiments.bench_long_program [--statements 4000 16000 220000]

Statement k alternates a product with a max and an element-wise expression reading the
previous tensor twice (so that every result is shared); 220,000 statements are 11 MB.
Prints seconds per stage and per 1,000 statements, to show that every stage is linear.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from sparse_einsum.program.parser import parse_program
from sparse_einsum.session import Session
from sparse_einsum.sql.duckdb import DuckDBDialect


def program_text(statements: int) -> str:
    lines = ["input A[i,j]", "input B[j,k]", "T0[i,k] = A[i,j] * B[j,k]"]
    for k in range(1, statements):
        lines.append(f"T{k}[i,k] = T{k - 1}[i,k] * 0.5 + relu(T{k - 1}[i,k]) - A[i,k]" if k % 2
                     else f"T{k}[i,k] = max(T{k - 1}[i,j] * B[j,k])")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m experiments.bench_long_program",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--statements", type=int, nargs="+", default=[4000, 16000])
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    data = {"A": rng.random((20, 20)), "B": rng.random((20, 20))}
    print(f"{'statements':>10} {'MB':>6} {'parse':>7} {'lower':>7} {'stats':>7} {'plan':>7} "
          f"{'compile':>7}   (seconds)")
    for n in args.statements:
        text = program_text(n)
        times = [time.perf_counter()]
        program = parse_program(text)
        times.append(time.perf_counter())
        with Session(program, data, backend=None, dialect=DuckDBDialect()) as session:
            times.append(time.perf_counter())
            session.optimizer()
            times.append(time.perf_counter())
            plan = session.plan("optimal")
            times.append(time.perf_counter())
            session.compile(plan)
            times.append(time.perf_counter())
        stages = [b - a for a, b in zip(times, times[1:])]
        print(f"{n:>10} {len(text) / 1e6:>6.1f} " + " ".join(f"{s:>7.1f}" for s in stages))


if __name__ == "__main__":
    main()
