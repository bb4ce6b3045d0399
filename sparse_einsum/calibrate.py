"""`sparse-einsum calibrate`: fit the cost constants to the engine at hand.

C_kernel comes from timing the kernels' own dense products (seconds per flop).
The cost of a plan is linear in the other three constants, so timed runs of small
programs under decompositions that stress tuples, bytes and element-wise adds give
them by a non-negative least-squares fit on relative errors, with the kernel part
of each run subtracted.
"""
from __future__ import annotations

import statistics
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from scipy.optimize import nnls

from .api import einsum_program, make_backend, build_dag
from .cost import CostModel, CostParams, config_path, load_params, save_params
from .executor import execute
from .optimizer.forced import pinned_plan
from .optimizer.search import plan_cost
from .stats.propagate import propagate
from .stats.tensor_stats import exact_stats

_UNIT = CostParams(0.0, 0.0, 0.0, 0.0)


def _workloads(scale: float, rng: np.random.Generator):
    """(subscripts, pinned plan, operands), each dominated by one constant."""
    n = int(100_000 * scale)
    sparse = sp.csr_matrix((rng.random(10 * n), (rng.integers(0, n, 10 * n),
                                                  rng.integers(0, n, 10 * n))), shape=(n, n))
    m = n // 5
    return [
        ("ij->ij", "Ij->Ij", [rng.normal(size=(int(2000 * scale), 4096))]),   # bytes
        ("ij,j->i", "IJ,J->I", [sparse, rng.normal(size=n)]),               # tuples
        ("ij,jk->ik", "IJ,JK->IK", [sparse[:m, :m], rng.normal(size=(m, 16))]),  # many groups
        ("ij,jk->ik", "IJ,Jk->Ik", [sparse, rng.normal(size=(n, 32))]),     # element adds
    ]


def kernel_seconds_per_flop(db, repeats: int = 3) -> float:
    """Seconds per flop of the kernels' dense products on this backend."""
    if db.name == "postgres":
        return _postgres_kernel_seconds_per_flop(db, repeats)
    return _numpy_seconds_per_flop(repeats)


def _postgres_kernel_seconds_per_flop(db, repeats: int) -> float:
    """Time the C kernel on 64 matrix-vector products of 512 x 512 in one query."""
    spec = "mul;sum;1;512,512;0,1;1,512"
    db.execute("CREATE TEMP TABLE se_cal_m AS SELECT array_agg(random()) AS m "
               "FROM generate_series(1, 512 * 512)")
    db.execute("CREATE TEMP TABLE se_cal_v AS SELECT g, (SELECT array_agg(random()) FROM "
               "generate_series(1, 512 + g * 0)) AS v FROM generate_series(1, 64) AS g")
    times = []
    try:
        for _ in range(repeats):
            start = time.perf_counter()
            db.query(f"SELECT sum((se_kernel2('{spec}', v, m))[1]) FROM se_cal_v, se_cal_m", [])
            times.append(time.perf_counter() - start)
    finally:
        db.execute("DROP TABLE IF EXISTS se_cal_m, se_cal_v")
    return statistics.median(times) / (2 * 64 * 512 * 512)


def _numpy_seconds_per_flop(repeats: int) -> float:
    """Seconds per flop of the batched products NumPy/BLAS run for the DuckDB kernels."""
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=(4096, 512)), rng.normal(size=(512, 512))
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        np.einsum("bi,ij->bj", a, b, optimize=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times) / (2 * 4096 * 512 * 512)


def calibrate(backend: str = "duckdb", dsn: str | None = None, path: str | None = None,
              scale: float = 1.0, repeats: int = 3) -> dict:
    """Measure, fit, store in the user's config file; returns the constants and the fit."""
    rng = np.random.default_rng(0)
    fitted = ("c_xfer", "c_fixed", "c_add")
    db = make_backend(backend, **({"dsn": dsn} if dsn else {}))
    c_kernel = kernel_seconds_per_flop(db)
    features, seconds, kernel_part = [], [], []
    try:
        for subscripts, pinned, operands in _workloads(scale, rng):
            terms, out = subscripts.split("->")[0].split(","), subscripts.split("->")[1]
            program = einsum_program(terms, out)
            data = {f"T{k}": x for k, x in enumerate(operands)}
            dag = build_dag(program, data)
            plan = pinned_plan(dag, pinned)
            stats = propagate(dag, {n: exact_stats(x) for n, x in data.items()})
            row = []
            for field in fitted:
                model = CostModel(dag, stats, replace(_UNIT, **{field: 1.0}))
                row.append(plan_cost(dag, model, plan.promoted).total)
            model = CostModel(dag, stats, replace(_UNIT, c_kernel=c_kernel))
            kernel_part.append(plan_cost(dag, model, plan.promoted).total)
            times = []
            for _ in range(repeats):
                run = execute(dag, plan, data, db)
                times.append(sum(s.seconds for s in run.steps if not s.label.startswith("load")))
            features.append(row)
            seconds.append(statistics.median(times))
    finally:
        db.close()
    measured = np.array(seconds)
    rest = np.maximum(measured - np.array(kernel_part), 0.05 * measured)
    solution, _ = nnls(np.array(features) / rest[:, None], np.ones(len(seconds)))
    fit = dict(zip(fitted, (max(float(x), 1e-12) for x in solution)))
    params = CostParams(c_kernel=c_kernel, c_group=load_params(db.name).c_group, **fit)
    predicted = np.array(features) @ np.array([fit[f] for f in fitted]) + np.array(kernel_part)
    if path:
        import os
        os.environ["SPARSE_EINSUM_CONFIG"] = str(Path(path))
    stored = save_params(db.name if hasattr(db, "name") else backend, params)
    return {"backend": backend, "constants": params.to_dict(), "stored_in": str(stored or config_path()),
            "fit": [{"measured_s": s, "predicted_s": float(p)} for s, p in zip(seconds, predicted)]}
