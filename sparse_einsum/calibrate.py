"""`sparse-einsum calibrate`: fit the cost constants to the engine at hand.

C_kernel comes from timing the kernels' own dense products (seconds per flop), C_sparse
from their sparse x dense products, the two load constants from timing array inputs loaded into the engine. The cost of a
plan is linear in the remaining constants (C_xfer, C_fixed, C_add, C_group), so they
come from a non-negative least-squares fit, on relative errors, to the measured times
of the plans the optimizer chooses between on three small programs (its top plans
plus the relational and the dense plan), with loads and the kernel part subtracted.
"""
from __future__ import annotations

import statistics
import time
from dataclasses import replace
from math import prod
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from scipy.optimize import nnls

from .backends import open_backend
from .blocks import decompose
from .cost import DEFAULT_PARAMS, CostModel, CostParams, load_params, save_params
from .optimizer.context import OptimizerContext
from .optimizer.search import SearchSpace
from .optimizer.strategies import candidate_plans
from .plan import Plan
from .session import Session
from .sql.steps import TableRelation
from .tiling import promotion

_UNIT = CostParams(0.0, 0.0, 0.0, 0.0)
FITTED = ("c_xfer", "c_fixed", "c_add", "c_group")


_PROGRAMS = {
    "spmm": "input A[i,j]\ninput H[j,f]\nY[i,f] = A[i,j] * H[j,f]\noutput Y\n",
    "gcn": "input A[i,j]\ninput H[j,f]\ninput W[f,g]\nAH[i,f] = A[i,j] * H[j,f]\n"
           "Y[i,g] = AH[i,f] * W[f,g]\noutput Y\n",
    "sddmm": "input A[i,j]\ninput Q[i,f]\ninput K[j,f]\nT[i,j,f] = Q[i,f] * A[i,j]\n"
             "S[i,j] = T[i,j,f] * K[j,f]\noutput S\n",
}


def _workloads(scale: float, rng: np.random.Generator) -> list[tuple[str, dict]]:
    """(program name, data): a graph (5 edges per node) with 128 features and 64-wide
    weights, in the shapes of the GCN and attention programs."""
    n = max(int(3000 * scale), 50)
    graph = sp.csr_matrix((rng.random(5 * n), (rng.integers(0, n, 5 * n),
                                               rng.integers(0, n, 5 * n))), shape=(n, n))
    h, q, k = (rng.normal(size=(n, 128)) for _ in range(3))
    return [("spmm", {"A": graph, "H": h}),
            ("gcn", {"A": graph, "H": h, "W": rng.normal(size=(128, 64))}),
            ("sddmm", {"A": graph, "Q": q, "K": k})]


def _plan_cost(ctx: OptimizerContext, params: CostParams, plan: Plan) -> float:
    """The cost of `plan` under other constants."""
    model = CostModel(ctx.dag, ctx.stats, params)
    return SearchSpace(ctx.dag, model, ctx.stored).cost(plan.choices).total


def kernel_seconds_per_flop(db, repeats: int = 3) -> float:
    """Seconds per flop of the kernels' dense products on this backend."""
    if db.name == "postgres":
        return _postgres_kernel_seconds_per_flop(db, repeats)
    return _numpy_seconds_per_flop(repeats)


def sparse_seconds_per_flop(db, repeats: int = 3) -> float:
    """Seconds per flop of a sparse x dense product (CSR times 64 dense columns), the
    kernel DuckDB's UDFs run on sparse payloads; 0 where the engine densifies them."""
    if db.name == "postgres":
        return 0.0
    rng = np.random.default_rng(2)
    n = 20_000
    a = sp.random(n, n, density=25 / n, format="csr", random_state=rng)
    b = rng.normal(size=(n, 64))
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        a @ b
        times.append(time.perf_counter() - start)
    return statistics.median(times) / (2 * a.nnz * 64)


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


def load_constants(db, scale: float, rng: np.random.Generator, repeats: int
                   ) -> tuple[float, float]:
    """c_load_tuple and c_load_byte: time decomposing and loading array inputs heavy in
    tuples (a sparse matrix, fully promoted) and in bytes (dense rows), fitted by NNLS."""
    n = int(100_000 * scale)
    sparse = sp.csr_matrix((rng.random(5 * n), (rng.integers(0, n, 5 * n),
                                                rng.integers(0, n, 5 * n))), shape=(n, n))
    cases = [(sparse, (0, 1)), (rng.normal(size=n), (0,)),
             (rng.normal(size=(int(1000 * scale) + 1, 4096)), (0,)),
             (rng.normal(size=(512, 2048)), ())]
    features, seconds = [], []
    for k, (array, axes) in enumerate(cases):
        rel = TableRelation(table=f"se_calibrate_load{k}", tensor="T", shape=array.shape,
                            tiling=promotion(array.shape, axes),
                            labels=tuple(f"k{a}" for a in range(array.ndim)))
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            blocks = decompose(array, rel.tiling)
            db.load(rel, blocks)
            times.append(time.perf_counter() - start)
            db.drop(rel)
        width = prod(s for a, s in enumerate(array.shape) if a not in axes)
        payload = 8.0 * width if len(axes) < array.ndim else 0.0
        features.append([len(blocks), len(blocks) * payload])
        seconds.append(statistics.median(times))
    measured = np.array(seconds)
    solution, _ = nnls(np.array(features) / measured[:, None], np.ones(len(seconds)))
    return max(float(solution[0]), 1e-12), max(float(solution[1]), 1e-15)


def calibrate(backend: str = "duckdb", dsn: str | None = None, path: str | None = None,
              scale: float = 1.0, repeats: int = 3, master: str | None = None) -> dict:
    """Measure, fit, store in the user's config file (or `path`); returns the constants,
    where they were stored and, per timed plan, measured against predicted seconds.
    `master`: the Spark master or Spark Connect URL (--backend spark)."""
    rng = np.random.default_rng(0)
    db, _ = open_backend(backend, dsn=dsn, master=master)
    features, seconds, kernel_part, names = [], [], [], []
    fitted = FITTED + (("c_shuffle",) if DEFAULT_PARAMS.get(backend, _UNIT).c_shuffle else ())
    unit = db.cost_params(replace(_UNIT, parallelism=DEFAULT_PARAMS.get(
        backend, _UNIT).parallelism))
    with db:
        c_kernel = kernel_seconds_per_flop(db)
        c_sparse = sparse_seconds_per_flop(db)
        c_load_tuple, c_load_byte = load_constants(db, scale, rng, repeats)
        for program, data in _workloads(scale, rng):
            with Session(_PROGRAMS[program], data, backend=db,
                         params=load_params(db.name)) as session:
                ctx = session.optimizer()
                for plan in candidate_plans(ctx, top=4):
                    features.append([_plan_cost(ctx, replace(unit, **{f: 1.0}), plan)
                                     for f in fitted])
                    kernel_part.append(_plan_cost(ctx, replace(unit, c_kernel=c_kernel,
                                                               c_sparse=c_sparse), plan))
                    # the first run warms up
                    times = [session.run(plan).seconds(loads=False) for _ in range(repeats + 1)]
                    seconds.append(statistics.median(times[1:]))
                    names.append(f"{program} {plan.name}")
    measured = np.array(seconds)
    rest = np.maximum(measured - np.array(kernel_part), 0.05 * measured)
    solution, _ = nnls(np.array(features) / rest[:, None], np.ones(len(seconds)))
    fit = dict(zip(fitted, (max(float(x), 1e-12) for x in solution)))
    params = CostParams(c_kernel=c_kernel, c_load_tuple=c_load_tuple, c_load_byte=c_load_byte,
                        c_sparse=c_sparse, parallelism=unit.parallelism, **fit)
    predicted = np.array(features) @ np.array([fit[f] for f in fitted]) + np.array(kernel_part)
    stored = save_params(db.name, params, Path(path) if path else None)
    return {"backend": backend, "constants": params.to_dict(), "stored_in": str(stored),
            "fit": [{"plan": n, "measured_s": s, "predicted_s": float(p)}
                    for n, s, p in zip(names, seconds, predicted)]}
