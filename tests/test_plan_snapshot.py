"""The plans of the benchmark programs stay the ones recorded: contraction order (the
lowered DAG), the chosen decompositions and their estimated costs, per dialect, for
the optimal plan, the three best and greedy's, and the optimal plan with tiles searched
whatever the plan costs (`tiles_above=0`). Work on the optimizer's speed must not
change what it chooses; a change of the cost model that should change plans rewrites
the snapshot on purpose:

    python tests/test_plan_snapshot.py --write
"""
from __future__ import annotations

import json
import sys
from functools import lru_cache
from pathlib import Path

import pytest

from sparse_einsum import Session
from sparse_einsum.cost import DEFAULT_PARAMS
from sparse_einsum.optimizer.context import TILES_ABOVE
from sparse_einsum.sql.duckdb import DuckDBNativeDialect
from sparse_einsum.sql.postgres import PostgresDialect
from sparse_einsum.sql.spark import SparkDialect

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from experiments.workloads import WORKLOADS, workload  # noqa: E402

SNAPSHOT = Path(__file__).parent / "data" / "plan_snapshot.json"
DATASETS = ("karate", "cora")
DIALECTS = {d.name: d for d in (DuckDBNativeDialect, PostgresDialect, SparkDialect)}
STRATEGIES = (("optimal", 1), ("rank:1", 3), ("greedy", 1))
TILED = "optimal, tiles always searched"
MEMORY_CAP = float(256 << 20)        # fixed: the default depends on the machine


@lru_cache(maxsize=None)
def _data(name: str, dataset: str):
    return workload(name, dataset)


def plans_of(name: str, dataset: str, dialect: str) -> dict:
    """The lowered DAG and the plans of one benchmark program, as text and costs."""
    path, data = _data(name, dataset)
    found = {}
    for tiles_above, asked in ((TILES_ABOVE, STRATEGIES), (0.0, (("optimal", 1),))):
        with Session(path.read_text(), data, backend=None, dialect=DIALECTS[dialect](),
                     params=DEFAULT_PARAMS[dialect], memory_cap=MEMORY_CAP,
                     tiles_above=tiles_above) as session:
            found["dag"] = [_vertex(v) for v in session.dag.vertices]
            for strategy, top in asked:
                found[f"{strategy} top {top}" if tiles_above else TILED] = [
                    {"choices": [p.uclc(session.dag, v) for v in session.dag.vertices],
                     "cost": p.cost}
                    for p in session.plans(strategy, top)]
    return found


def _vertex(v) -> str:
    """A lowered statement as text, e.g. ``Z[i,h] = mul/sum(Z~1[i,f], W1[f,h])``."""
    operands = ", ".join(f"{o.tensor}[{','.join(o.labels)}]" for o in v.operands)
    return f"{v.name}[{','.join(v.labels)}] = {v.op}/{v.agg}({operands})"


CASES = [(n, d, k) for n in sorted(WORKLOADS) for d in DATASETS for k in DIALECTS]


@pytest.fixture(scope="module")
def snapshot() -> dict:
    return json.loads(SNAPSHOT.read_text())


@pytest.mark.parametrize("name,dataset,dialect", CASES)
def test_plans_as_recorded(snapshot, name, dataset, dialect):
    want = snapshot[f"{name}/{dataset}/{dialect}"]
    got = plans_of(name, dataset, dialect)
    assert got["dag"] == want["dag"]
    for key, plans in want.items():
        if key == "dag":
            continue
        assert [p["choices"] for p in got[key]] == [p["choices"] for p in plans], key
        assert [p["cost"] for p in got[key]] == pytest.approx([p["cost"] for p in plans],
                                                             rel=1e-9), key


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    SNAPSHOT.write_text(json.dumps({f"{n}/{d}/{k}": plans_of(n, d, k) for n, d, k in CASES},
                                   indent=1) + "\n")
    print(f"wrote {SNAPSHOT}")
