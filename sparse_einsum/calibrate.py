"""`sparse-einsum calibrate`: fit the cost constants to the engine at hand.

Each way an engine runs kernels has its own constants, stored under its dialect's name:
DuckDB is measured with its extension (duckdb-native) and with the UDF kernels it falls
back to (duckdb); PostgreSQL with its C extension.

C_gemm comes from timing the kernels' own dense matrix products (seconds per flop; BLAS
where the engine's kernels have it), C_kernel from a kernel of the same shape that is no
product (the strided loop every other kernel runs), C_sparse from their sparse x dense
products (the C kernel over packed payloads on the native
paths, scipy's on the UDF path), the two load constants from timing array inputs
loaded into the engine. The cost of a plan is linear in the remaining constants
(C_xfer, C_fixed, C_add, C_group; on Spark also C_shuffle and C_statement, the cost of
scheduling a statement), so they come from a non-negative least-squares fit, on
relative errors, to the measured times of the plans the optimizer chooses between on
three small programs (its top plans plus the relational and the dense plan, where they
fit the engine's memory), with loads and the kernel part subtracted.
"""
from __future__ import annotations

import math
import statistics
import time
from dataclasses import replace
from math import prod
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from scipy.optimize import nnls

from .backends import open_backend
from .blocks import Blocks, decompose
from .cost import DEFAULT_PARAMS, CostModel, CostParams, load_params, save_params
from .errors import SparseEinsumError
from .kernels.spec import KernelSpec
from .optimizer.context import OptimizerContext
from .optimizer.search import LoadItem, SearchSpace
from .optimizer.strategies import candidate_plans
from .plan import Plan
from .session import Session
from .sql.native import NativeDialect
from .sql.steps import StepBuilder, TableRelation
from .tiling import promotion

_UNIT = CostParams(0.0, 0.0, 0.0, 0.0)
FITTED = ("c_xfer", "c_fixed", "c_add", "c_group")
# the ways each backend runs kernels, as backend options
PATHS = {"duckdb": [{"native": True}, {"native": False}]}


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
    """The cost of `plan` under other constants, without its loads (timed apart)."""
    model = CostModel(ctx.dag, ctx.stats, params)
    items = SearchSpace(ctx.dag, model, ctx.stored).items(plan.choices)
    return sum(cost for item, cost in items.items() if not isinstance(item, LoadItem))


def kernel_seconds_per_flop(db, repeats: int = 3, product: bool = True) -> float:
    """Seconds per flop of a dense kernel on this backend's kernel path: a matrix product,
    or (not `product`) a kernel of the same size that is none (the native strided loop)."""
    if isinstance(db.dialect, NativeDialect):
        return _native_seconds_per_flop(db, repeats, product)
    return _numpy_seconds_per_flop(repeats)


def sparse_seconds_per_flop(db, repeats: int = 3) -> float:
    """Seconds per flop of a sparse x dense product (25 non-zeros a row times 64 dense
    columns): the C kernel over packed payloads on a native path, scipy's CSR x dense
    (what the UDF path runs) otherwise."""
    rng = np.random.default_rng(2)
    if isinstance(db.dialect, NativeDialect):
        return _native_sparse_seconds_per_flop(db, repeats, rng)
    n = 20_000
    a = sp.random(n, n, density=25 / n, format="csr", random_state=rng)
    b = rng.normal(size=(n, 64))
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        a @ b
        times.append(time.perf_counter() - start)
    return statistics.median(times) / (2 * a.nnz * 64)


def _native_sparse_seconds_per_flop(db, repeats: int, rng: np.random.Generator,
                                    rows: int = 16, n: int = 1024, width: int = 64) -> float:
    """Time the C kernel on `rows` packed sparse n x n tiles (25 non-zeros a row) each
    times its own dense n x width tile, in one statement (the shape of ~A[I/n,J/n] * H[J/n,f])."""
    shape = (rows * n, n)
    tiles = TableRelation("se_cal_s", "S", shape, (n, n), ("i", "j"), sparse=True)
    dense = TableRelation("se_cal_d", "D", (rows * n, width), (n, width), ("j", "f"))
    spec = KernelSpec("mul", "sum", (n, width, n), 2, ((n, 0, 1), (0, 1, width)),
                      (n * n, n * width))
    value = db.dialect.kernel(StepBuilder("se_cal", [0]), spec, ["s.val", "d.val"], [True, True],
                              sparse=(True, False))
    key, other = db.dialect.q(tiles.column(0)), db.dialect.q(dense.column(0))
    create = db.dialect.create("se_cal_out", f"SELECT s.{key}, {value} AS val FROM se_cal_s AS s "
                                             f"JOIN se_cal_d AS d ON s.{key} = d.{other}",
                               temporary=True)
    matrix = sp.random(*shape, density=25 / n, format="csr", random_state=rng)
    inputs = {tiles: decompose(matrix, tiles.tiling, sparse=True),
              dense: decompose(rng.normal(size=(rows * n, width)), dense.tiling)}
    return _statement_seconds(db, create, inputs, repeats) / (2 * matrix.nnz * width)


def _native_seconds_per_flop(db, repeats: int, product: bool, n: int = 512, rows: int = 256
                             ) -> float:
    """Time the C kernel on `rows` vector x matrix products against one n x n matrix
    tuple, in one statement (the shape of a projection by a weight matrix); not `product`:
    out[m] = sum_k v[m] M[m,k] instead, the strided loop over contiguous rows."""
    rng = np.random.default_rng(1)
    matrix = TableRelation("se_cal_m", "M", (n, n), promotion((n, n), ()), ("m", "k"))
    vectors = TableRelation("se_cal_v", "V", (rows, n), promotion((rows, n), (0,)), ("r", "m"))
    strides = ((0, 1), (1, n)) if product else ((1, 0), (n, 1))
    spec = KernelSpec("mul", "sum", (n, n), 1, strides, (n, n * n))
    value = db.dialect.kernel(StepBuilder("se_cal", [0]), spec, ["v.val", "m.val"], [True, True])
    key = db.dialect.q(vectors.column(0))
    create = db.dialect.create("se_cal_out", f"SELECT v.{key}, {value} AS val FROM se_cal_v AS v "
                                             "CROSS JOIN se_cal_m AS m", temporary=True)
    inputs = {matrix: Blocks([], rng.normal(size=(1, n * n))),
              vectors: Blocks([np.arange(rows)], rng.normal(size=(rows, n)))}
    return _statement_seconds(db, create, inputs, repeats) / (2 * rows * n * n)


def _statement_seconds(db, create: str, inputs: dict[TableRelation, Blocks], repeats: int
                       ) -> float:
    """Median seconds of `create` (making se_cal_out) on the loaded `inputs`, after a
    warm-up run; the tables are dropped after."""
    times = []
    try:
        for rel, blocks in inputs.items():
            db.load(rel, blocks)
        for _ in range(repeats + 1):
            start = time.perf_counter()
            db.execute(create)
            times.append(time.perf_counter() - start)
            db.execute("DROP TABLE se_cal_out")
    finally:
        for rel in inputs:
            db.drop(rel)
    return statistics.median(times[1:])


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


def load_constants(db, scale: float, rng: np.random.Generator, repeats: int,
                   fixed: bool = False) -> tuple[float, float]:
    """c_load_tuple and c_load_byte: time decomposing and loading array inputs heavy in
    tuples (a sparse matrix, fully promoted) and in bytes (dense rows), fitted by NNLS
    (`fixed`: with a fixed cost per load, the job an engine schedules for it, fitted
    alongside and left out)."""
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
        for _ in range(repeats + 1):        # the first run warms up
            start = time.perf_counter()
            blocks = decompose(array, rel.tiling)
            db.load(rel, blocks)
            times.append(time.perf_counter() - start)
            db.drop(rel)
        width = prod(s for a, s in enumerate(array.shape) if a not in axes)
        payload = 8.0 * width if len(axes) < array.ndim else 0.0
        features.append([len(blocks), len(blocks) * payload] + [1.0] * fixed)
        seconds.append(statistics.median(times[1:]))
    measured = np.array(seconds)
    solution, _ = nnls(np.array(features) / measured[:, None], np.ones(len(seconds)))
    return max(float(solution[0]), 1e-12), max(float(solution[1]), 1e-15)


def calibrate(backend: str = "duckdb", dsn: str | None = None, path: str | None = None,
              scale: float = 1.0, repeats: int = 3, master: str | None = None) -> dict:
    """Measure and fit every kernel path of `backend`, store each path's constants in the
    user's config file (or `path`); returns, per path, the constants, where they were
    stored and, per timed plan, measured against predicted seconds.
    `master`: the Spark master or Spark Connect URL (--backend spark)."""
    if not (isinstance(scale, (int, float)) and math.isfinite(scale) and scale > 0):
        raise SparseEinsumError(f"scale must be a positive finite number, not {scale!r}")
    results = []
    for options in PATHS.get(backend, [{}]):
        db, _ = open_backend(backend, dsn=dsn, master=master, **options)
        with db:
            results.append(_calibrate_path(db, path, scale, repeats))
    return {"backend": backend, "paths": results}


def _calibrate_path(db, path: str | None, scale: float, repeats: int) -> dict:
    rng = np.random.default_rng(0)
    features, seconds, kernel_part, names = [], [], [], []
    # engines that shuffle also fit the shuffle term, engines that schedule jobs the
    # statement term; the cluster's parallelism is known
    default = DEFAULT_PARAMS.get(db.dialect.name, _UNIT)
    fitted = FITTED + tuple(f for f in ("c_shuffle", "c_statement") if getattr(default, f))
    unit = db.cost_params(replace(_UNIT, parallelism=default.parallelism))
    c_gemm = kernel_seconds_per_flop(db)
    c_kernel = kernel_seconds_per_flop(db, product=False)
    c_sparse = sparse_seconds_per_flop(db)
    c_load_tuple, c_load_byte = load_constants(db, scale, rng, repeats,
                                               fixed="c_statement" in fitted)
    for program, data in _workloads(scale, rng):
        with Session(_PROGRAMS[program], data, backend=db,
                     params=load_params(db.dialect.name)) as session:
            ctx = session.optimizer()
            for plan in candidate_plans(ctx, top=4):
                if not plan.fits:     # beyond the engine's memory (Spark's dense plans)
                    continue
                features.append([_plan_cost(ctx, replace(unit, **{f: 1.0}), plan)
                                 for f in fitted])
                kernel_part.append(_plan_cost(ctx, replace(unit, c_kernel=c_kernel,
                                                           c_sparse=c_sparse, c_gemm=c_gemm), plan))
                # the first run warms up
                times = [session.run(plan).seconds(loads=False) for _ in range(repeats + 1)]
                seconds.append(statistics.median(times[1:]))
                names.append(f"{program} {plan.name}")
    measured = np.array(seconds)
    rest = np.maximum(measured - np.array(kernel_part), 0.05 * measured)
    solution, _ = nnls(np.array(features) / rest[:, None], np.ones(len(seconds)))
    fit = dict(zip(fitted, (max(float(x), 1e-12) for x in solution)))
    params = CostParams(c_kernel=c_kernel, c_load_tuple=c_load_tuple, c_load_byte=c_load_byte,
                        c_sparse=c_sparse, c_gemm=c_gemm, parallelism=unit.parallelism, **fit)
    predicted = np.array(features) @ np.array([fit[f] for f in fitted]) + np.array(kernel_part)
    stored = save_params(db.dialect.name, params, Path(path) if path else None)
    return {"dialect": db.dialect.name, "kernels": db.dialect.kernels,
            "constants": params.to_dict(), "stored_in": str(stored),
            "fit": [{"plan": n, "measured_s": s, "predicted_s": float(p)}
                    for n, s, p in zip(names, seconds, predicted)]}
