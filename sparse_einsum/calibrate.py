"""`sparse-einsum calibrate`: fit the cost constants to the engine at hand.

Each way an engine runs kernels has its own constants, stored under its dialect's name:
DuckDB is measured with its extension (duckdb-native) and with the UDF kernels it falls
back to (duckdb); PostgreSQL with its C extension.

C_gemm comes from timing the kernels' own dense matrix products of row blocks against
one matrix, C_gemm_rows of single rows against it (seconds per flop; BLAS where the
engine's kernels have it), C_kernel from a kernel of the same shape that is no
product (the strided loop every other kernel runs), C_sparse and C_nnz from their sparse
x dense products at three widths (per flop, and per non-zero visited: the C kernel over
packed payloads on the native paths, scipy's on the UDF path), the two load constants
from timing array inputs loaded into the engine. The cost of a plan is linear in the
remaining constants (C_xfer, C_fixed, C_add, C_group; on Spark also C_shuffle and
C_statement, the cost of scheduling a statement), so they are fitted, on the logarithm
of predicted over measured time, to the times of the plans the optimizer chooses between
on four small programs (its top plans plus the relational and the dense plan, where
they fit the engine's memory), with loads and the kernel part subtracted: first the
plans the constants in use choose between, then those the fitted constants choose
between. A constant the timings cannot tell from its shipped value keeps it.

Every time is the best of `repeats` runs after a warm-up (see `best`), plans timed
round-robin, so that a calibration on a machine shared with other jobs repeats.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace
from math import prod
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from scipy.optimize import least_squares, nnls

from .backends import open_backend
from .blocks import Blocks, decompose
from .capabilities import Capabilities
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
from .sql.templates import render
from .tiling import promotion

_UNIT = CostParams(0.0, 0.0, 0.0, 0.0)
FITTED = ("c_xfer", "c_fixed", "c_add", "c_group")
# rows a tuple holds where c_gemm is timed (c_gemm_rows: one)
BLOCK_ROWS = 64
# widths of the dense operand the sparse kernel is timed at (c_sparse and c_nnz apart)
SPARSE_WIDTHS = (16, 64, 256)
SPARSE_ROUNDS = 3
# the kernels and loads, quick to time, are timed this many times more than the plans
MICRO_REPEATS = 3
# a fitted constant keeps its shipped value when fixing it there raises the fit's root
# mean square log error by less than this, the run-to-run noise of a plan's time here
# (about 10%): the timings cannot tell the two apart
NOISE = 0.1
# how far (natural log) a fitted constant may move from its shipped value: a factor 1000
FIT_RANGE = np.log(1000.0)
# the ways each backend runs kernels, as backend options
PATHS = {"duckdb": [{"native": True}, {"native": False}]}


_PROGRAMS = {
    "spmm": "input A[i,j]\ninput H[j,f]\nY[i,f] = A[i,j] * H[j,f]\noutput Y\n",
    "gcn": "input A[i,j]\ninput H[j,f]\ninput W[f,g]\nAH[i,f] = A[i,j] * H[j,f]\n"
           "Y[i,g] = AH[i,f] * W[f,g]\noutput Y\n",
    "sddmm": "input A[i,j]\ninput Q[i,f]\ninput K[j,f]\nT[i,j,f] = Q[i,f] * A[i,j]\n"
             "S[i,j] = T[i,j,f] * K[j,f]\noutput S\n",
}


def _workloads(scale: float, rng: np.random.Generator) -> list[tuple[str, str, dict]]:
    """(name, program, data): a graph (5 edges per node) with 128 dense features and
    64-wide weights, in the shapes of the GCN and attention programs, and a GCN over 1024
    sparse features (2% non-zero) with 256-wide weights, the shape of Cora's."""
    n = max(int(3000 * scale), 50)
    graph = sp.csr_matrix((rng.random(5 * n), (rng.integers(0, n, 5 * n),
                                               rng.integers(0, n, 5 * n))), shape=(n, n))
    h, q, k = (rng.normal(size=(n, 128)) for _ in range(3))
    features = sp.random(n, 1024, density=0.02, format="csr", random_state=rng)
    return [("spmm", "spmm", {"A": graph, "H": h}),
            ("gcn", "gcn", {"A": graph, "H": h, "W": rng.normal(size=(128, 64))}),
            ("gcn-sparse-h", "gcn", {"A": graph, "H": features,
                                     "W": rng.normal(size=(1024, 256))}),
            ("sddmm", "sddmm", {"A": graph, "Q": q, "K": k})]


def _plan_cost(ctx: OptimizerContext, params: CostParams, plan: Plan) -> float:
    """The cost of `plan` under other constants, without its loads (timed apart)."""
    model = CostModel(ctx.dag, ctx.stats, params,
                      caps=Capabilities(kernel_sums=ctx.model.caps.kernel_sums))
    items = SearchSpace(ctx.dag, model, ctx.stored).items(plan.choices)
    return sum(cost for item, cost in items.items() if not isinstance(item, LoadItem))


def kernel_seconds_per_flop(db, repeats: int = 5, product: bool = True, block: int = 1
                            ) -> float:
    """Seconds per flop of a dense kernel on this backend's kernel path: a matrix product
    of tuples holding `block` rows each against one matrix (c_gemm_rows: one; c_gemm:
    BLOCK_ROWS), or (not `product`) a kernel of the same size that is none (the native
    strided loop)."""
    if isinstance(db.dialect, NativeDialect):
        return _native_seconds_per_flop(db, repeats, product, block)
    return _numpy_seconds_per_flop(repeats)


def sparse_constants(db, repeats: int = 5) -> tuple[float, float]:
    """c_sparse and c_nnz: a sparse x dense product (25 non-zeros a row) timed at several
    widths of the dense operand; a non-zero costs c_nnz + 2 x width x c_sparse (a line
    fitted through the widths). The C kernel over packed payloads on a native path,
    scipy's CSR x dense (what the UDF path runs) otherwise."""
    seconds: dict[int, list[float]] = {width: [] for width in SPARSE_WIDTHS}
    nnz, each = 0, max(repeats // SPARSE_ROUNDS, 1)
    for _ in range(SPARSE_ROUNDS):     # widths in turn, so that a burst of load hits one
        for width in SPARSE_WIDTHS:
            rng = np.random.default_rng(2)
            if isinstance(db.dialect, NativeDialect):
                best_seconds, nnz = _native_sparse_seconds(db, each, rng, width)
            else:
                best_seconds, nnz = _scipy_sparse_seconds(each, rng, width)
            seconds[width].append(best_seconds)
    per_nnz = [min(seconds[width]) / nnz for width in SPARSE_WIDTHS]
    flops = 2.0 * np.array(SPARSE_WIDTHS)
    c_sparse, c_nnz = np.polyfit(flops, per_nnz, 1)
    if c_nnz <= 0:              # no cost per non-zero to see: all of it per flop
        c_sparse, c_nnz = float(np.dot(flops, per_nnz) / np.dot(flops, flops)), 1e-12
    return float(c_sparse), float(c_nnz)


def _scipy_sparse_seconds(repeats: int, rng: np.random.Generator, width: int,
                          n: int = 20_000) -> tuple[float, int]:
    """Best seconds (see `best`) of scipy's CSR x dense product, and the non-zeros it
    visits."""
    a = sp.random(n, n, density=25 / n, format="csr", random_state=rng)
    b = rng.normal(size=(n, width))
    times = []
    for _ in range(repeats + 1):
        start = time.perf_counter()
        a @ b
        times.append(time.perf_counter() - start)
    return best(times), a.nnz


def _native_sparse_seconds(db, repeats: int, rng: np.random.Generator, width: int,
                           rows: int = 16, n: int = 1024) -> tuple[float, int]:
    """Time the C kernel on `rows` packed sparse n x n tiles (25 non-zeros a row) each
    times its own dense n x width tile, in one statement (the shape of ~A[I/n,J/n] *
    H[J/n,f]); its best seconds (see `best`) and the non-zeros visited."""
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
    return _statement_seconds(db, create, inputs, repeats), matrix.nnz


def _native_seconds_per_flop(db, repeats: int, product: bool, block: int = 1, n: int = 512,
                             rows: int = 1024) -> float:
    """Time the kernel on `rows` rows times one n x n matrix tuple, `block` rows a tuple,
    in one statement (the shape of a projection by a weight matrix); not `product`:
    out[m] = sum_k v[m] M[m,k] instead, the strided loop over contiguous rows."""
    rng = np.random.default_rng(1)
    matrix = TableRelation("se_cal_m", "M", (n, n), promotion((n, n), ()), ("m", "k"))
    vectors = TableRelation("se_cal_v", "V", (rows, n), (block, n), ("r", "m"))
    strides = ((n, 0, 1), (0, 1, n)) if product else ((n, 1, 0), (0, n, 1))
    spec = KernelSpec("mul", "sum", (block, n, n), 2, strides, (block * n, n * n))
    # the matrix reaches the kernel as compiled plans pass a one-tuple operand: bound once
    # where the engine does (Spark: a scalar subquery), else joined to every row, the rows
    # run as one product where the engine has such a form (PostgreSQL's se_kernel2_rows)
    once = db.dialect.capabilities.constants_once
    shared = db.dialect.shared_matrix_kernel(spec, ["v.val", "m.val"]) \
        if product and not once else None
    value = shared or db.dialect.kernel(StepBuilder("se_cal", [0]), spec,
                                        ["v.val"] if once else ["v.val", "m.val"],
                                        [True, True], constant=(1, matrix) if once else None)
    key = db.dialect.q(vectors.column(0))
    joined = "" if once else " CROSS JOIN se_cal_m AS m"
    create = db.dialect.create("se_cal_out", f"SELECT v.{key}, {value} AS val "
                                             f"FROM se_cal_v AS v{joined}", temporary=True)
    inputs = {matrix: Blocks([], rng.normal(size=(1, n * n))),
              vectors: Blocks([np.arange(rows // block)],
                              rng.normal(size=(rows // block, block * n)))}
    return _statement_seconds(db, create, inputs, repeats) / (2 * rows * n * n)


def best(times: list[float]) -> float:
    """The fastest of repeated timings, the first (a warm-up) left out: on a machine shared
    with other jobs, the run least disturbed by them, which repeats from run to run far
    better than the median does (the constants' ratios, which rank plans, come from such
    runs alike)."""
    return min(times[1:])


def _statement_seconds(db, create: str, inputs: dict[TableRelation, Blocks], repeats: int
                       ) -> float:
    """Best seconds (see `best`) of `create` (making se_cal_out) on the loaded `inputs`,
    after a warm-up run, beyond those of a statement making one row (the engine's fixed
    cost of a statement, c_statement's part: about 0.1 s on Spark), but at least a tenth
    of them (where the difference is within the noise); the tables are dropped after."""
    empty = db.dialect.create("se_cal_out", "SELECT 1 AS val", temporary=True)
    times: dict[str, list[float]] = {create: [], empty: []}
    try:
        for rel, blocks in inputs.items():
            db.load(rel, blocks)
        for _ in range(repeats + 1):
            for sql, seconds in times.items():
                start = time.perf_counter()
                db.execute(sql)
                seconds.append(time.perf_counter() - start)
                db.execute(render("common/drop_table", db.dialect.quote, table="se_cal_out"))
    finally:
        for rel in inputs:
            db.drop(rel)
    return max(best(times[create]) - best(times[empty]), 0.1 * best(times[create]))


def _numpy_seconds_per_flop(repeats: int) -> float:
    """Seconds per flop of the batched products NumPy/BLAS run for the DuckDB kernels."""
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=(4096, 512)), rng.normal(size=(512, 512))
    times = []
    for _ in range(repeats + 1):
        start = time.perf_counter()
        np.einsum("bi,ij->bj", a, b, optimize=True)
        times.append(time.perf_counter() - start)
    return best(times) / (2 * 4096 * 512 * 512)


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
    rels = [TableRelation(table=f"se_calibrate_load{k}", tensor="T", shape=array.shape,
                          tiling=promotion(array.shape, axes),
                          labels=tuple(f"k{a}" for a in range(array.ndim)))
            for k, (array, axes) in enumerate(cases)]
    times: list[list[float]] = [[] for _ in cases]
    tuples = [0] * len(cases)
    for _ in range(repeats + 1):        # the cases in turn; the first round warms up
        for k, ((array, _axes), rel) in enumerate(zip(cases, rels)):
            start = time.perf_counter()
            blocks = decompose(array, rel.tiling)
            db.load(rel, blocks)
            times[k].append(time.perf_counter() - start)
            db.drop(rel)
            tuples[k] = len(blocks)
    features, seconds = [], []
    for (array, axes), count, case_times in zip(cases, tuples, times):
        width = prod(s for a, s in enumerate(array.shape) if a not in axes)
        payload = 8.0 * width if len(axes) < array.ndim else 0.0
        features.append([count, count * payload] + [1.0] * fixed)
        seconds.append(best(case_times))
    measured = np.array(seconds)
    solution, _ = nnls(np.array(features) / measured[:, None], np.ones(len(seconds)))
    return max(float(solution[0]), 1e-12), max(float(solution[1]), 1e-15)


def calibrate(backend: str = "duckdb", dsn: str | None = None, path: str | None = None,
              scale: float = 1.0, repeats: int = 5, master: str | None = None) -> dict:
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
    # engines that shuffle also fit the shuffle term, engines that schedule jobs the
    # statement term; the cluster's parallelism is known
    default = DEFAULT_PARAMS.get(db.dialect.name, _UNIT)
    fitted = FITTED + tuple(f for f in ("c_shuffle", "c_statement") if getattr(default, f))
    unit = db.cost_params(replace(_UNIT, parallelism=default.parallelism))
    micro = MICRO_REPEATS * repeats
    c_sparse, c_nnz = sparse_constants(db, micro)
    measured = replace(unit, c_gemm=kernel_seconds_per_flop(db, micro, block=BLOCK_ROWS),
                       c_gemm_rows=kernel_seconds_per_flop(db, micro),
                       c_kernel=kernel_seconds_per_flop(db, micro, product=False),
                       c_sparse=c_sparse, c_nnz=c_nnz)
    c_load_tuple, c_load_byte = load_constants(db, scale, rng, micro,
                                               fixed="c_statement" in fitted)
    measured = replace(measured, c_load_tuple=c_load_tuple, c_load_byte=c_load_byte)
    workloads = _workloads(scale, rng)
    timed: list[_Timed] = []
    params = load_params(db.dialect.name)
    # round 1 times the plans the constants in use choose between, round 2 those the
    # constants fitted to them choose between, where they differ
    for _ in range(2):
        for name, program, data in workloads:
            timed += _time_plans(db, name, program, data, params, unit, measured, fitted,
                                 [t.choices for t in timed if t.workload == name], repeats)
        fit, kept = _fit(timed, fitted, default)
        params = replace(measured, **fit)
    predicted = [t.kernel + sum(fit[f] * x for f, x in zip(fitted, t.features)) for t in timed]
    stored = save_params(db.dialect.name, params, Path(path) if path else None)
    return {"dialect": db.dialect.name, "kernels": db.dialect.kernels,
            "constants": params.to_dict(), "stored_in": str(stored), "kept": kept,
            "fit": [{"plan": f"{t.workload} {t.plan}", "measured_s": t.seconds,
                     "predicted_s": float(p)} for t, p in zip(timed, predicted)]}


@dataclass
class _Timed:
    """A timed plan: its workload, name and decomposition, the features of the fitted
    constants (the plan's cost with that constant 1 and the others 0), the cost of its
    kernels under the measured kernel constants, and its best seconds without loads."""
    workload: str
    plan: str
    choices: dict
    features: list[float]
    kernel: float
    seconds: float


def _time_plans(db, name: str, program: str, data: dict, params: CostParams,
                unit: CostParams, measured: CostParams, fitted: tuple[str, ...],
                done: list[dict], repeats: int) -> list[_Timed]:
    """Time the candidate plans of `program` under `params` not in `done`, round-robin
    (so that other jobs' load falls on each plan alike), after a warm-up round."""
    kernels = replace(unit, **{f: getattr(measured, f)
                               for f in ("c_kernel", "c_gemm", "c_gemm_rows", "c_sparse",
                                         "c_nnz")})
    with Session(_PROGRAMS[program], data, backend=db, params=params) as session:
        ctx = session.optimizer()
        plans = [p for p in candidate_plans(ctx, top=4)
                 if p.fits and p.choices not in done]   # fits: Spark's dense plans do not
        times: list[list[float]] = [[] for _ in plans]
        for _ in range(repeats + 1):
            for plan, seconds in zip(plans, times):
                seconds.append(session.run(plan).seconds(loads=False))
        return [_Timed(name, plan.name, plan.choices,
                       [_plan_cost(ctx, replace(unit, **{f: 1.0}), plan) for f in fitted],
                       _plan_cost(ctx, kernels, plan), best(seconds))
                for plan, seconds in zip(plans, times)]


def _fit(timed: list[_Timed], fitted: tuple[str, ...], default: CostParams
         ) -> tuple[dict[str, float], list[str]]:
    """The fitted constants: least squares on the logarithm of predicted over measured
    time (an estimate k times too low weighs as much as one k times too high; relative
    errors let a fit price whole plans at nearly nothing), with the kernels' part of each
    time measured apart. A constant the timings cannot tell from its shipped value
    (`default`: fixing it there leaves the fit's error within NOISE of the free fit's)
    keeps that value, the most unsettled first, and the others are fitted again. Returns
    the constants and the names of those kept."""
    kept: dict[str, float] = {}
    found, error = _log_fit(timed, fitted, default, kept)
    while True:
        trials = {f: _log_fit(timed, fitted, default, {**kept, f: getattr(default, f)})
                  for f in fitted if f not in kept and getattr(default, f)}
        settled = {f: trial for f, trial in trials.items() if trial[1] <= error + NOISE}
        if not settled:
            return found, sorted(kept)
        name = min(settled, key=lambda f: settled[f][1])
        kept[name] = getattr(default, name)
        found, error = settled[name]


def _log_fit(timed: list[_Timed], fitted: tuple[str, ...], default: CostParams,
             kept: dict[str, float]) -> tuple[dict[str, float], float]:
    """Fit the constants not in `kept` (from their shipped values, each within FIT_RANGE);
    the constants and the root mean square of log(predicted / measured)."""
    features = np.array([t.features for t in timed])
    seconds = np.array([t.seconds for t in timed])
    free = [k for k, f in enumerate(fitted) if f not in kept]
    known = np.array([t.kernel for t in timed]) + sum(
        (features[:, fitted.index(f)] * v for f, v in kept.items()), np.zeros(len(timed)))

    def errors(logs: np.ndarray) -> np.ndarray:
        predicted = known + features[:, free] @ np.exp(logs)
        return np.log(np.maximum(predicted, 1e-12) / seconds)

    start = np.log([getattr(default, fitted[k]) or 1e-9 for k in free])
    logs = least_squares(errors, start, bounds=(start - FIT_RANGE, start + FIT_RANGE)).x \
        if free else start
    found = {**{fitted[k]: float(np.exp(x)) for k, x in zip(free, logs)}, **kept}
    return found, float(np.sqrt(np.mean(errors(logs) ** 2)))
