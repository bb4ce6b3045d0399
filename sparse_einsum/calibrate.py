"""`sparse-einsum calibrate`: fit the cost constants to the engine at hand.

The cost of a plan is linear in the four constants, so a handful of timed runs of
small programs under different decompositions (per-tuple, per-byte, per-flop and
per-add heavy) gives a non-negative least-squares fit on relative errors.
"""
from __future__ import annotations

import statistics
from dataclasses import replace
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from scipy.optimize import nnls

from .api import einsum_program, make_backend, build_dag
from .cost import CostModel, CostParams, save_params, config_path
from .executor import execute
from .optimizer.forced import pinned_plan
from .optimizer.search import plan_cost
from .stats.propagate import propagate
from .stats.tensor_stats import exact_stats

_UNIT = CostParams(0.0, 0.0, 0.0, 0.0)
_FIELDS = ("c_xfer", "c_kernel", "c_fixed", "c_add")


def _workloads(scale: float, rng: np.random.Generator):
    """(subscripts, pinned plan, operands): each stresses one part of the cost model."""
    n = int(20000 * scale)
    sparse = sp.random(n, n, density=10 / n, format="csr", random_state=1)
    rows = rng.normal(size=(n, 64))
    small = rng.normal(size=(64, 64))
    dense_rows = rng.normal(size=(int(2000 * scale), 256))
    weights = rng.normal(size=(256, 256))
    return [
        ("ij,jk->ik", "IJ,JK->IK", [sparse, sp.csr_matrix(rows[:, :4])]),   # tuples
        ("ij,jk->ik", "IJ,Jk->Ik", [sparse, rows]),                          # bytes + adds
        ("ij,jk->ik", "Ij,jk->Ik", [dense_rows, weights]),                   # flops
        ("ij,jk->ik", "iJ,Jk->ik", [rows[: int(4000 * scale)].T.copy(), rows[: int(4000 * scale)]]),
        ("ij,jk->ik", "Ij,jK->IK", [rows[: int(2000 * scale)], small]),      # per-tuple kernels
        ("ij,j->i", "IJ,J->I", [sparse, rows[:, 0]]),
    ]


def calibrate(backend: str = "duckdb", dsn: str | None = None, path: str | None = None,
              scale: float = 1.0, repeats: int = 3) -> dict:
    """Measure, fit, store in the user's config file; returns the constants and the fit."""
    rng = np.random.default_rng(0)
    db = make_backend(backend, **({"dsn": dsn} if dsn else {}))
    features, seconds = [], []
    try:
        for subscripts, pinned, operands in _workloads(scale, rng):
            terms, out = subscripts.split("->")[0].split(","), subscripts.split("->")[1]
            program = einsum_program(terms, out)
            data = {f"T{k}": x for k, x in enumerate(operands)}
            dag = build_dag(program, data)
            plan = pinned_plan(dag, pinned)
            stats = propagate(dag, {n: exact_stats(x) for n, x in data.items()})
            row = []
            for field in _FIELDS:
                model = CostModel(dag, stats, replace(_UNIT, **{field: 1.0}))
                row.append(plan_cost(dag, model, plan.promoted).total)
            times = []
            for _ in range(repeats):
                run = execute(dag, plan, data, db)
                times.append(sum(s.seconds for s in run.steps if not s.label.startswith("load")))
            features.append(row)
            seconds.append(statistics.median(times))
    finally:
        if db is not backend:
            db.close()
    a = np.array(features) / np.array(seconds)[:, None]
    solution, _ = nnls(a, np.ones(len(seconds)))
    floor = 1e-12
    params = CostParams(*(max(float(x), floor) for x in solution))
    predicted = np.array(features) @ np.array(list(params.to_dict().values()))
    if path:
        import os
        os.environ["SPARSE_EINSUM_CONFIG"] = str(Path(path))
    stored = save_params(db.name if hasattr(db, "name") else backend, params)
    return {"backend": backend, "constants": params.to_dict(), "stored_in": str(stored or config_path()),
            "fit": [{"measured_s": s, "predicted_s": float(p)} for s, p in zip(seconds, predicted)]}
