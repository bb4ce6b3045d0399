"""Golden SQL: the statements compiled for a few small programs under fixed plans, per
dialect, checked in as ``tests/golden/<dialect>/<case>.sql`` so that a change to the SQL
the compiler generates shows as a diff in review.

After an intended change, regenerate them and review the diff:

    SE_UPDATE_GOLDEN=1 python -m pytest tests/test_golden_sql.py
"""
from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from sparse_einsum import Session
from sparse_einsum.plan import Choice, Plan
from sparse_einsum.program.parser import load_program
from sparse_einsum.sql.duckdb import DuckDBBuiltinDialect, DuckDBNativeDialect
from sparse_einsum.sql.postgres import PostgresDialect
from sparse_einsum.sql.pretty import pretty
from sparse_einsum.sql.spark import SparkDialect

GOLDEN = Path(__file__).resolve().parent / "golden"
UPDATE = os.environ.get("SE_UPDATE_GOLDEN") == "1"
DIALECTS = {d.name: d for d in (DuckDBNativeDialect(), DuckDBBuiltinDialect(), PostgresDialect(),
                                SparkDialect())}

MATMUL = "input A[i,j]\ninput B[j,k]\nC[i,k] = A[i,j] * B[j,k]\noutput C\n"
CHAIN = ("input A[i,k]\ninput B[k,j]\ninput x[j]\nT[i,j] = A[i,k] * B[k,j]\n"
         "S[i] = T[i,j] * x[j]\noutput S\n")
NON_ANNIHILATING = ("input A[i,j]\ninput b[j]\nS[i,j] = A[i,j] + b[j]\nM[i] = max(S[i,j])\n"
                    "T[] = sum(exp(M[i]))\nP[i] = exp(M[i]) / T[]\noutput S, P\n")
SDDMM = ("input X[i,k]\ninput M[i,j]\ninput Y[j,k]\nP[i,j,k] = M[i,j] * Y[j,k]\n"
         "OUT[i,j] = X[i,k] * P[i,j,k]\noutput OUT\n")


def _data() -> dict:
    rng = np.random.default_rng(5)
    sparse = lambda m, n, seed: sp.random(m, n, density=0.3, random_state=seed, format="csr")
    return {"A": sparse(6, 4, 1), "B": rng.normal(size=(4, 5)), "x": rng.normal(size=5),
            "b": rng.normal(size=4), "X": rng.normal(size=(6, 3)), "M": sparse(6, 5, 2),
            "Y": rng.normal(size=(5, 3))}


# case -> (program, plan: statement -> its decomposition, UCLC style (upper case promoted,
# X/b tiled, lower case demoted), with ~N for each operand N it reads sparse); the
# statements as written (paths="opt_einsum"), not ordered by the cost model
CASES = {
    "matmul_relational": (MATMUL, {"C": "IJK"}),
    "matmul_dense": (MATMUL, {"C": "ijk"}),
    "matmul_tiled": (MATMUL, {"C": "I/2jK"}),
    "matmul_rows": (MATMUL, {"C": "Ijk"}),                   # rows against one matrix
    "matmul_weighted_sum": (MATMUL, {"C": "IJk"}),           # sum of scalar * vector
    "matmul_kernel_sum": (MATMUL, {"C": "iJk"}),             # sum of outer products
    "matmul_sparse": (MATMUL, {"C": "~0 Ijk"}),              # A's rows loaded sparse
    "chain_stack": (CHAIN, {"T": "IJK", "S": "Ij"}),         # T's j stacked into arrays
    "chain_explode": (CHAIN, {"T": "ijk", "S": "IJ"}),       # T's arrays exploded
    "chain_split": (CHAIN, {"T": "ijk", "S": "Ij"}),         # T's arrays split into rows
    "chain_packed": (CHAIN, {"T": "IJK", "S": "~0 Ij"}),     # T's j stacked sparse
    "chain_sparsify": (CHAIN, {"T": "Ijk", "S": "~0 Ij"}),   # T's rows made sparse
    "non_annihilating": (NON_ANNIHILATING, {"S": "Ij", "M": "Ij", "T": "i", "P": "i"}),
    "sddmm_factored": (SDDMM, {"P": "IJk", "OUT": "IJk"}),
}


def _plan(session: Session, decompositions: dict[str, str]) -> Plan:
    choices = {}
    for v in session.dag.vertices:
        spec = decompositions[v.name.split("~")[0]]        # P~1: a vertex computing for P
        sparse = [int(k) for k in re.findall(r"~(\d+)", spec)]
        tiles = {ch.lower(): 1 if ch.isupper() and not tile else
                 int(tile) if tile else session.dag.label_sizes(v)[ch]
                 for ch, tile in re.findall(r"([A-Za-z])(?:/(\d+))?", spec.split()[-1])
                 if ch.lower() in v.all_labels}
        choices[v.name] = Choice.of(tiles, sparse)
    return Plan(choices, name=" ".join(f"{v}:{d}" for v, d in decompositions.items()))


def golden_sql(case: str, dialect_name: str) -> str | None:
    """The golden text of `case` in the dialect; None where the dialect cannot compile it."""
    text, decompositions = CASES[case]
    dialect = DIALECTS[dialect_name]
    if "~" in str(decompositions) and not dialect.capabilities.sparse_payloads:
        return None
    program = load_program(text)
    data = {name: value for name, value in _data().items() if name in program.inputs}
    with Session(program, data, backend=None, dialect=dialect, prefix="g",
                 paths="opt_einsum") as session:
        plan = _plan(session, decompositions)
        compiled = session.compile(plan)
        lines = [f"-- {line}" for line in text.splitlines()]
        lines += [f"-- plan {plan.name}", ""]
        for step in compiled.steps:
            if step.kind == "sql":
                lines += [f"-- {s.label}" for s in (*step.pipelined, step)]
                lines += [pretty(step.sql, dialect) + ";", ""]
    return "\n".join(lines)


PAIRS = [(c, d) for d in DIALECTS for c in CASES]


@pytest.mark.parametrize("case,dialect", PAIRS, ids=[f"{d}/{c}" for c, d in PAIRS])
def test_generated_sql_matches_its_golden_file(case, dialect):
    path = GOLDEN / dialect / f"{case}.sql"
    got = golden_sql(case, dialect)
    if got is None:
        assert not path.exists(), f"{path}: {dialect} no longer compiles {case}: delete it"
        return
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(got)
    assert path.exists(), f"{path} is missing: run SE_UPDATE_GOLDEN=1 python -m pytest {__file__}"
    assert got == path.read_text(), (f"{path} differs from the SQL generated now: review, then "
                                     f"SE_UPDATE_GOLDEN=1 python -m pytest {__file__}")


def test_every_golden_file_has_a_case():
    known = {f"{d}/{c}.sql" for c, d in PAIRS}
    stale = [str(p.relative_to(GOLDEN)) for p in GOLDEN.rglob("*.sql")
             if str(p.relative_to(GOLDEN)) not in known]
    assert not stale, f"golden files of no case: {stale}"
