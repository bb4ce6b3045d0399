"""The Spark backend against NumPy: a differential subset of the einsum corpus (every kind
of plan the strategy registry names, tiles included), every operation of the language,
repartitions, NaN and inf, exact integers, GCN and sparse attention on a Cora-sized
graph, what explain says about shuffles, and how the backend starts (the driver's
Python in the workers), loads inputs (Parquet files) and survives a lost executor process.
The tests run on local[2] and on local-cluster[2,1,2048] (the `spark` fixture: one session
per master), some on one of them only, to keep the module within a few minutes."""
from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
from collections import Counter

import numpy as np
import pytest
import scipy.sparse as sp

from einsum_cases import operands, reference
from sparse_einsum import Session, einsum
from sparse_einsum.api import einsum_session
from sparse_einsum.errors import BackendError
from sparse_einsum.explanation import format_explanation
from sparse_einsum.program.parser import load_program
from sparse_einsum.reference import evaluate
from sparse_einsum.sql.pipeline import statement_query
from sparse_einsum.optimizer.strategies import PlanSpec
from test_einsum import distinct_plans

# one of each kind: element-wise, transpose, collapse, outer, inner, GEMM, batched GEMM,
# diagonal, three operands
EXPRESSIONS = ["ij,ij->ij", "ijk->kji", "ij->j", "i,j->ij", "ij,ij->", "ij,jk->ik",
               "bij,bjk->bik", "iij->j", "ij,jk,kl->il"]


def master(spark) -> str:
    return spark.spark.sparkContext.master


def check(got, want, what) -> None:
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12, equal_nan=True,
                               err_msg=str(what))


def test_einsum_matches_numpy_on_spark(spark):
    """Each expression under its optimal plan, and every other kind of plan the strategy
    registry names (random and pinned ones tile) under two expressions each."""
    runs: Counter = Counter()
    tiled = 0
    for expression in EXPRESSIONS:
        ops = operands(expression, 0.5, seed=3, sparse_matrices=True)
        expected = reference(expression, ops)
        with einsum_session(expression, *ops, backend=spark) as session:
            for specs in distinct_plans(session).values():
                kinds = {PlanSpec.parse(spec).strategy for spec in specs}
                if "optimal" not in kinds and all(runs[k] >= 2 for k in kinds):
                    continue
                run = session.run(specs[0])
                check(run.outputs["OUT"], expected, (expression, specs))
                runs.update(kinds)
                tiled += any(1 < b < session.dag.label_sizes(v)[label] for v in session.dag.vertices
                             for label, b in run.plan.choices[v.name].tiles)
    assert {"optimal", "rank", "relational", "dense", "random", "pinned"} <= set(runs), runs
    assert tiled, "no plan tiled"


# every operation of the language, on values where Spark SQL differs from NumPy unless
# told otherwise: x / 0, log of zero and of negatives, sqrt of negatives, NaN in min/max
EVERY_OPERATION = """
    input A[i,j]
    input B[i,j]
    input c[j]
    S[i,j] = A[i,j] * B[i,j] + A[i,j] - B[i,j]
    Q[i,j] = 2 / (A[i,j] / c[j]) - 3
    U[i,j] = log(sqrt(1 - A[i,j] + relu(B[i,j])))
    V[i,j] = -tanh(sigmoid(abs(exp(A[i,j]) * 2 + 1)) / 4)
    M[i] = max(A[i,j] * B[i,j])
    N[j] = min(B[i,j] * 3)
    T[i,j] = step(B[i,j]) - step(A[i,j])
    output S, Q, U, V, M, N, T
    """


def test_every_operation_matches_numpy_on_spark(spark):
    """As scalar SQL (relational, on local[2]) and as array kernels (dense, on the
    cluster); the kernels are DuckDB's (test_programs runs them under every plan, tiles
    and repartitions included). A / inf is -0.0 for negative A, and 2 / -0.0 is -inf."""
    spec = "relational" if master(spark) == "local[2]" else "dense"
    rng = np.random.default_rng(11)
    a = np.where(rng.random((4, 6)) < 0.5, rng.uniform(-2, 2, (4, 6)), 0.0)
    b = np.where(rng.random((4, 6)) < 0.5, rng.uniform(-2, 2, (4, 6)), 0.0)
    b[1, 2] = np.nan
    data = {"A": a, "B": sp.csr_matrix(b), "c": np.array([0.0, 1.5, -2.0, np.inf, 3.0, 1.0])}
    program = load_program(EVERY_OPERATION)
    with np.errstate(all="ignore"):
        expected = evaluate(program, {**data, "B": b})
    assert np.isneginf(expected["Q"]).any()
    with Session(program, data, backend=spark) as session:
        outputs = session.run(spec).outputs
    for name in program.outputs:
        check(outputs[name], expected[name], (name, spec))


def test_repartitions_between_tilings(spark):
    """Plans whose producers and consumers split a tensor differently (explode and stack,
    tiles of any size, padded edge tiles)."""
    program = load_program("""
        input A[i,j]
        input B[j,k]
        T[i,k] = A[i,j] * B[j,k]
        U[i,k] = T[i,k] * A[i,i]
        M[i] = max(U[i,k])
        output U, M
        """)
    rng = np.random.default_rng(5)
    data = {"A": np.where(rng.random((6, 6)) < 0.6, rng.uniform(0.5, 2, (6, 6)), 0.0),
            "B": rng.uniform(-1, 1, (6, 5))}
    expected = evaluate(program, data)
    repartitioned = tiled = 0
    with Session(program, data, backend=spark) as session:
        for spec in ("random:4", "random:6", "I/4j,jK,->I/4K"):
            run = session.run(spec)
            repartitioned += bool(run.plan.repartitions(session.dag))
            tiled += any(1 < b < 5 for c in run.plan.choices.values() for _, b in c.tiles)
            for out in ("U", "M"):
                check(run.outputs[out], expected[out], (out, spec))
    assert repartitioned >= 2 and tiled >= 2, (repartitioned, tiled)


def test_nan_inf_and_exact_integers(spark):
    """0 * NaN is NaN under every plan (products over the union of keys); int64 results
    above 2**53 come out exact (BIGINT values)."""
    rng = np.random.default_rng(5)
    a = sp.random(30, 30, density=0.05, format="csr", random_state=5)
    a.data[3] = np.nan
    h = rng.normal(size=(30, 4))
    h[11, 2] = np.inf
    want = np.einsum("ij,jf->if", a.toarray(), h)
    for plan in ("relational", "random:1"):
        check(einsum("ij,jf->if", a, h, plan=plan, backend=spark), want, plan)
    m = (np.arange(12, dtype=np.int64).reshape(3, 4) + 1) * (2 ** 27 + 1)
    got = einsum("ij,kj->ik", m, m, plan="optimal", backend=spark)
    assert got.dtype == np.int64 and np.array_equal(got, np.einsum("ij,kj->ik", m, m))


def test_gcn_and_sparse_attention_on_cora_size(spark, monkeypatch):
    """On local[2] only (the other tests cover data crossing processes). With the JVM
    kernels no statement's executed plan runs Python or collects lists; the fallback's
    do, and explain names it. No stage runs more tasks than the task slots. Each program's
    output, which no statement reads, is fetched from its query and never cached."""
    if master(spark) != "local[2]":
        pytest.skip("Cora runs on local[2] only")
    from experiments.workloads import workload
    from sparse_einsum.backends import spark_inputs
    # every input from a Parquet file that is gone once loaded: a statement read after its
    # inputs are dropped must come from its own cached data, not its lineage
    monkeypatch.setattr(spark_inputs, "INLINE_BYTES", 0)
    from test_workloads import reference as workload_reference
    plans: list[str] = []
    materialized, fetched = set(), set()
    materialize, fetch = spark.materialize, spark.fetch

    def recording(view, frame, *reads):
        plans.append(frame._jdf.queryExecution().executedPlan().toString())
        materialized.add(view)
        return materialize(view, frame, *reads)

    def reading(rel, source=None):      # an output no statement reads: from its query
        if source is not None:
            plans.append(spark.spark.sql(source)._jdf.queryExecution().executedPlan().toString())
            fetched.add(rel.table)
        return fetch(rel, source)

    monkeypatch.setattr(spark, "materialize", recording)
    monkeypatch.setattr(spark, "fetch", reading)
    tracker = spark.spark.sparkContext.statusTracker()
    for name in ("gcn2", "sparse_attention"):
        path, data = workload(name, "cora", hidden=16, d_k=16)
        with Session(path, data, backend=spark) as session:
            before = set(tracker.getJobIdsForGroup(None))
            outputs = session.run("optimal").outputs
            jobs = set(tracker.getJobIdsForGroup(None)) - before
            kernels = session.explain(top=1)["kernels"]
        got, = outputs.values()
        np.testing.assert_allclose(got, workload_reference(name, data), rtol=1e-9, atol=1e-9,
                                   err_msg=name)
        # shuffle partitions from the data size: no stage runs more tasks than the slots
        tasks = [tracker.getStageInfo(stage).numTasks for job in jobs
                 for stage in tracker.getJobInfo(job).stageIds]
        assert max(tasks) <= spark.parallelism, (name, tasks)
    assert len(fetched) == 2 and not fetched & materialized, (fetched, materialized)
    python = [p for p in plans if any(w in p for w in PYTHON_OR_LISTS)]
    if jvm(spark):
        assert not python, python[0]
        assert kernels.startswith("JVM") and "fallback" not in kernels, kernels
    else:
        assert python and "fallback: the JVM kernels were not requested" in kernels, kernels


PYTHON_OR_LISTS = ("ArrowEvalPython", "BatchEvalPython", "collect_list")


def jvm(spark) -> bool:
    return spark.dialect.name == "spark-native"


def _frame(spark, rows: list[tuple], schema: str, view: str) -> None:
    spark.spark.createDataFrame(rows, schema).createOrReplaceTempView(view)


def _spark_value(v) -> str:
    """A fused chain's input as a Spark SQL literal."""
    def number(x: float) -> str:
        text = repr(float(x))
        return text if np.isfinite(x) else {"inf": "'Infinity'", "-inf": "'-Infinity'",
                                            "nan": "'NaN'"}[text]
    if v is None:
        return "CAST(NULL AS ARRAY<DOUBLE>)"
    if np.isscalar(v):
        return f"CAST({number(v)} AS DOUBLE)"
    return f"CAST(array({', '.join(f'CAST({number(x)} AS DOUBLE)' for x in v)}) AS ARRAY<DOUBLE>)"


def test_jvm_fused_chains_match_numpy(spark):
    """se_fused of the kernel jar on the C kernels' cases (tests/kernel_cases.py FUSED),
    absent inputs and results included, and its errors."""
    if not jvm(spark) or master(spark) != "local[2]":
        pytest.skip("the JVM kernels, on local[2]")
    from kernel_cases import FUSED, fused_reference
    fn = spark.dialect.fn("se_fused")
    for text, leaves in FUSED:
        args = ", ".join(_spark_value(v) for v in leaves)
        (got,), = spark.query(f"SELECT {fn}('{text}', {args})")
        expected = fused_reference(text, leaves)
        if expected is None:
            assert got is None, text
        else:
            np.testing.assert_allclose(np.array(got, dtype=np.float64), expected, rtol=1e-12,
                                       atol=1e-12, err_msg=text)
    for text, args, error in [
            ("fused;3;3,3;$0,$2,add@j", [np.ones(3), np.ones(3)], 'bad leaf "\\$2"'),
            ("fused;3;3,3;$0,add@j", [np.ones(3), np.ones(3)], '"add" needs 2 operand'),
            ("fused;3;3,3;$0,$1,add@j", [np.ones(2), np.ones(3)], "input 0 has 2 elements"),
            ("fused;3;3;$0,sqrt@f", [np.ones(3), np.ones(1)], "reads 1 inputs, given 2")]:
        with pytest.raises(Exception, match=error):
            spark.query(f"SELECT {fn}('{text}', {', '.join(_spark_value(v) for v in args)})")


def test_each_jvm_kernel_matches_numpy(spark):
    """Every function of the kernel jar on rows of a DataFrame (the generated code's
    calls), against NumPy: the strided loop (map, reductions, a diagonal), matrix products
    (BLAS, batched), packed sparse inputs (over the non-zeros, and densified where the
    dense input holds inf), scalars (x / 0), NULL arrays as zeros, -0.0 kept, the
    aggregates (NaN in max/min), stacks, splits and packing."""
    if not jvm(spark) or master(spark) != "local[2]":
        pytest.skip("the JVM kernels, on local[2]")
    from dataclasses import replace
    from sparse_einsum.kernels.numpy_kernels import run_kernel
    from sparse_einsum.kernels.spec import GatherSpec, KernelSpec
    from sparse_einsum.sql.native import spec_literal
    rng = np.random.default_rng(7)
    fn = spark.dialect.fn
    specs = [
        KernelSpec("relu", "sum", (3, 4), 2, ((4, 1),), (12,)),                  # map
        KernelSpec("powc:2", "max", (3, 4), 1, ((4, 1),), (12,)),                # reduction
        KernelSpec("id", "sum", (3, 2), 1, ((1, 9),), (18,)),                    # diagonal
        KernelSpec("sub", "min", (3, 4), 1, ((4, 1), (1, 3)), (12, 12)),         # two inputs
        KernelSpec("mul", "sum", (3, 5, 4), 2, ((4, 0, 1), (0, 1, 5)), (12, 20)),  # ij,jk->ik
        KernelSpec("mul", "sum", (5, 3, 4), 2, ((0, 4, 1), (1, 0, 5)), (12, 20)),  # c^T
        KernelSpec("mul", "sum", (2, 3, 2, 4), 3, ((12, 4, 0, 1), (8, 0, 1, 2)), (24, 16)),
        # matrix-vector products (dgemv): a row times a matrix stored either way, a matrix
        # stored either way times a column, rows of a batch
        KernelSpec("mul", "sum", (5, 4), 1, ((0, 1), (1, 5)), (4, 20)),           # k,kn->n
        KernelSpec("mul", "sum", (5, 4), 1, ((0, 1), (4, 1)), (4, 20)),           # k,nk->n
        KernelSpec("mul", "sum", (3, 4), 1, ((4, 1), (0, 1)), (12, 4)),           # mk,k->m
        KernelSpec("mul", "sum", (3, 4), 1, ((1, 3), (0, 1)), (12, 4)),           # km,k->m
        KernelSpec("mul", "sum", (2, 5, 4), 2, ((4, 0, 1), (20, 1, 5)), (8, 40)),  # bk,bkn->bn
        # rows of 32 or more: row by row (dgemv), b stored either way
        KernelSpec("mul", "sum", (3, 33, 4), 2, ((4, 0, 1), (0, 1, 33)), (12, 132)),
        KernelSpec("mul", "sum", (3, 33, 4), 2, ((4, 0, 1), (0, 4, 1)), (12, 132)),
    ]
    for spec in specs:
        n = 5
        a = rng.normal(size=(n, spec.in_sizes[0]))
        b = rng.normal(size=(n, spec.in_sizes[-1])) if spec.arity == 2 else a
        a[0, 0] = -0.0
        rows = [(k, a[k].tolist(), b[k].tolist()) for k in range(n)] + [(n, None, b[0].tolist())]
        _frame(spark, rows, "k int, a array<double>, b array<double>", "se_t")
        args = "a, b" if spec.arity == 2 else "a"
        got = spark.query(f"SELECT {fn('se_kernel')}{spec.arity}({spec_literal(spec)}, {args}) "
                          "FROM se_t ORDER BY k")
        want = run_kernel(spec, *([np.vstack([a, np.zeros_like(a[:1])]),
                                   np.vstack([b, b[:1]])][:spec.arity]))
        check(np.array([r[0] for r in got]), want, spec.text)
    # packed sparse a: over the non-zeros (rows of 0 to 9 entries: four at a time, then
    # one by one); a dense b with inf: densified (0 * inf is NaN)
    spec = KernelSpec("mul", "sum", (4, 5, 9), 2, ((9, 0, 1), (0, 1, 5)), (36, 45))
    a = np.where(rng.random((3, 36)) < 0.6, rng.normal(size=(3, 36)), 0.0)
    a[0, 9:18], a[1, 18:27] = 0.0, rng.normal(size=9)
    b = rng.normal(size=(3, 45))
    b[2, 3] = np.inf
    packed = replace(spec, packed=(True, False))
    rows = [(k, _packed(a[k]), b[k].tolist()) for k in range(3)]
    _frame(spark, rows, "k int, a array<double>, b array<double>", "se_t")
    got = spark.query(f"SELECT {fn('se_kernel2')}({spec_literal(packed)}, a, b) FROM se_t ORDER BY k")
    with np.errstate(invalid="ignore"):
        check(np.array([r[0] for r in got]), run_kernel(spec, a, b), packed.text)
    spec = specs[4]
    # a packed a whose dense extent (2^32) no Java array holds: run over its entries
    n = 1 << 16
    huge = KernelSpec("mul", "sum", (n, 2, n), 2, ((n, 0, 1), (0, 1, 2)), (n * n, 2 * n),
                      packed=(True, False))
    rows, cols = np.array([5, 5, n - 1]), np.array([7, n - 1, 3])
    entries = (rows * n + cols).astype(float).tolist() + [2.0, -1.0, 0.5]
    b = rng.normal(size=(n, 2))
    _frame(spark, [(0, entries, b.ravel().tolist())], "k int, a array<double>, b array<double>",
           "se_t")
    got = spark.query(f"SELECT {fn('se_kernel2')}({spec_literal(huge)}, a, b) FROM se_t")
    want = (sp.csr_matrix(([2.0, -1.0, 0.5], (rows, cols)), shape=(n, n)) @ b).ravel()
    check(np.array(got[0][0]), want, huge.text)
    # min and max of sums over a packed a whose absent entries are inf (-inf): over the
    # stored entries; a dense b holding the opposite infinity: densified with the fill
    for agg, fill in (("min", np.inf), ("max", -np.inf)):
        ring = replace(spec, op="add", agg=agg)
        a = np.where(rng.random((3, 12)) < 0.4, np.round(rng.normal(size=(3, 12)) * 4), fill)
        b = rng.normal(size=(3, 20))
        b[1, 2], b[2, 3] = fill, -fill
        packed = replace(ring, packed=(True, False), fills=(fill, 0.0))
        rows = [(k, _packed(a[k], fill), b[k].tolist()) for k in range(3)]
        _frame(spark, rows, "k int, a array<double>, b array<double>", "se_t")
        got = spark.query(f"SELECT {fn('se_kernel2')}({spec_literal(packed)}, a, b) "
                          "FROM se_t ORDER BY k")
        with np.errstate(invalid="ignore"):
            check(np.array([r[0] for r in got]), run_kernel(ring, a, b), packed.text)
    # the dense input read, or the result written, with a stride along the free dim: the
    # product runs on a row-major copy of it
    m, k, n = 6, 8, 5
    a = np.where(rng.random((2, m * k)) < 0.9, rng.normal(size=(2, m * k)), 0.0)
    for dims, strides in (((m, n, k), ((k, 0, 1), (0, k, 1))),       # b^T
                          ((n, m, k), ((0, k, 1), (1, 0, n))),       # result^T
                          ((n, m, k), ((0, k, 1), (k, 0, 1)))):      # both
        spec = KernelSpec("mul", "sum", dims, 2, strides, (m * k, n * k), (True, False))
        b = rng.normal(size=(2, n * k))
        _frame(spark, [(r, _packed(a[r]), b[r].tolist()) for r in range(2)],
               "k int, a array<double>, b array<double>", "se_t")
        got = spark.query(f"SELECT {fn('se_kernel2')}({spec_literal(spec)}, a, b) FROM se_t "
                          "ORDER BY k")
        check(np.array([r[0] for r in got]), run_kernel(replace(spec, packed=()), a, b),
              spec.text)
    # scalars: IEEE division, NULL scalars give NULL
    got = spark.query(f"SELECT {fn('se_value2')}('div;sum;0;;;', 1.0D, 0.0D), "
                      f"{fn('se_value2')}('div;sum;0;;;', -1.0D, CAST(NULL AS DOUBLE))")
    assert got == [(np.inf, None)]
    # sparsify / densify keep -0.0; split gives NULL for +0.0 pieces only
    x = [0.0, -0.0, 2.5, 0.0, 0.0, 0.0]
    _frame(spark, [(x,)], "v array<double>", "se_t")
    (sparse, dense, pieces), = spark.query(
        f"SELECT {fn('se_sparsify')}(v), {fn('se_densify')}({fn('se_sparsify')}(v), 6), "
        f"{fn('se_split')}('6;3;2;2;1', v) FROM se_t")
    assert sparse == [1.0, 2.0, -0.0, 2.5] and np.signbit(sparse[2])
    assert np.array_equal(dense, x) and np.signbit(dense[1])
    assert pieces[0] == [0.0, -0.0] and pieces[1] == [2.5, 0.0] and pieces[2] is None
    # of a tensor whose default is inf: pieces all inf are left out, stacks fill with inf
    _frame(spark, [([np.inf, 0.0, np.inf, np.inf],)], "v array<double>", "se_t")
    (pieces, stacked), = spark.query(
        f"SELECT {fn('se_split')}('4;2;2;2;1;inf', v), "
        f"{fn('se_stack')}('6;3;2;2;1;inf', slice(v, 1, 2), 1) FROM se_t GROUP BY v")
    assert pieces == [[np.inf, 0.0], None]
    assert stacked == [np.inf, np.inf, np.inf, 0.0, np.inf, np.inf]
    # aggregates over groups: sums, NaN-propagating max/min, weights, kernel sums, stacks
    v = rng.normal(size=(9, 4))
    v[4, 1] = np.nan
    w = rng.normal(size=9)
    m = rng.normal(size=(9, 12))
    g = np.array([0, 1, 0, 1, 0, 1, 0, 1, 2])
    rows = [(int(g[k]), k // 2, v[k].tolist(), float(w[k]), m[k].tolist()) for k in range(9)]
    rows.append((2, 5, None, 1.0, None))      # NULL arrays add nothing
    _frame(spark, rows, "g int, p bigint, v array<double>, w double, m array<double>", "se_t")
    ksum = KernelSpec("mul", "sum", (3, 3, 4), 2, ((4, 0, 1), (0, 4, 1)), (12, 12))
    stack = GatherSpec(16, (4,), (4,), (4,), (1,))
    got = spark.query(
        f"SELECT g, {fn('se_vsum')}(v), {fn('se_vmax')}(v), {fn('se_vmin')}(v), "
        f"{fn('se_wsum')}(w, v), {fn('se_ksum')}({spec_literal(ksum)}, m, m), "
        f"{fn('se_stack_packed')}(CAST(p AS BIGINT), w) FROM se_t GROUP BY g ORDER BY g")
    for (group, vsum, vmax, vmin, wsum, ks, packed_w) in got:
        rows_of = g == group
        check(vsum, v[rows_of].sum(axis=0), "se_vsum")
        check(vmax, np.maximum.reduce(v[rows_of]), "se_vmax")
        check(vmin, np.minimum.reduce(v[rows_of]), "se_vmin")
        check(wsum, (w[rows_of, None] * v[rows_of]).sum(axis=0), "se_wsum")
        at = [k // 2 for k in np.flatnonzero(rows_of)] + [5] * (group == 2)
        weights = list(w[rows_of]) + [1.0] * (group == 2)
        check(packed_w, sorted(at) + [x for _, x in sorted(zip(at, weights))], "se_stack_packed")
        check(ks, sum(run_kernel(ksum, m[k:k + 1], m[k:k + 1])[0] for k in np.flatnonzero(rows_of)),
              "se_ksum")
    got = spark.query(f"SELECT {fn('se_stack')}({spec_literal(stack)}, v, p) FROM se_t "
                      "WHERE g = 1 GROUP BY g")
    want = np.zeros(16)
    for k in np.flatnonzero(g == 1):
        want[(k // 2) * 4:(k // 2) * 4 + 4] = v[k]
    check(got[0][0], want, "se_stack")


def test_one_tuple_operands_are_converted_once_per_task(spark):
    """Two one-tuple operands (scalar subqueries) in one projection over an aggregate's
    rows, as in a GCN's fused statement: each is converted to a Java array once per task,
    not once per row, and the kernels' own results (each row's sum, its product with W1)
    are read as they are (the kernel jar counts its conversions)."""
    if not jvm(spark) or master(spark) != "local[2]":
        pytest.skip("the JVM kernels, on local[2]")
    from sparse_einsum.kernels.numpy_kernels import run_kernel
    from sparse_einsum.kernels.spec import KernelSpec
    from sparse_einsum.sql.native import spec_literal
    rng = np.random.default_rng(3)
    rows, fn = 300, spark.dialect.fn
    a, w1, w2 = rng.normal(size=(rows, 4)), rng.normal(size=(4, 3)), rng.normal(size=(3, 2))
    _frame(spark, [(k, a[k].tolist()) for k in range(rows)], "k int, a array<double>", "se_t")
    _frame(spark, [(w1.ravel().tolist(),)], "val array<double>", "se_w1")
    _frame(spark, [(w2.ravel().tolist(),)], "val array<double>", "se_w2")
    first = KernelSpec("mul", "sum", (3, 4), 1, ((0, 1), (1, 3)), (4, 12))    # a W1
    second = KernelSpec("mul", "sum", (2, 3), 1, ((0, 1), (1, 2)), (3, 6))    # (a W1) W2
    conversions = spark.spark._jvm.sparseeinsum.spark.Operands.conversions
    partitions = spark.spark.conf.get("spark.sql.shuffle.partitions")
    spark.spark.conf.set("spark.sql.shuffle.partitions", "2")
    try:
        before = conversions()
        got = spark.query(
            f"SELECT k, {fn('se_kernel2')}({spec_literal(second)}, {fn('se_kernel2')}("
            f"{spec_literal(first)}, a, (SELECT val FROM se_w1)), (SELECT val FROM se_w2)) "
            f"FROM (SELECT k, {fn('se_vsum')}(a) AS a FROM se_t GROUP BY k)")
        converted = conversions() - before     # (ORDER BY would run the kernels twice)
    finally:
        spark.spark.conf.set("spark.sql.shuffle.partitions", partitions)
    want = run_kernel(second, run_kernel(first, a, np.tile(w1.ravel(), (rows, 1))),
                      np.tile(w2.ravel(), (rows, 1)))
    check(np.array([r[1] for r in sorted(got)]), want, "a W1 W2")
    # the two operands once in each of at most 2 tasks
    assert 2 <= converted <= 4, converted


def test_large_one_tuple_inputs_are_broadcasts(spark, monkeypatch):
    """With the JVM kernels, a one-tuple input over the broadcast size, and a statement's one
    tuple that a kernel reads as its constant, are broadcasts that kernels call by name,
    never scalar subqueries copied into each task: products with a keyed operand, a fused
    chain, and an input with no tuple (all zeros) match NumPy; the broadcasts are gone
    once the session drops their tables."""
    if not jvm(spark):
        pytest.skip("the JVM kernels")
    from sparse_einsum.backends import spark_inputs
    from sparse_einsum.sql import spark as spark_sql
    monkeypatch.setattr(spark_sql, "BROADCAST_BYTES", 0)
    # A from a file: Spark would compute a projection of rows inside the plan when planning
    monkeypatch.setattr(spark_inputs, "INLINE_BYTES", 0)
    rng = np.random.default_rng(4)
    a, w, v = (sp.random(50, 6, density=0.3, format="csr", random_state=4),
               rng.normal(size=(6, 5)), rng.normal(size=(6, 5)))
    program = ("input A[i,j]\ninput W[j,k]\ninput V[j,k]\nY[i,k] = A[i,j] * W[j,k]\n"
               "Z[j,k] = relu(W[j,k]) * V[j,k]\nT[i,k] = A[i,j] * Z[j,k]\n"
               "output Y\noutput T")
    optimized, run_and_fetch = {}, spark.run_and_fetch

    def planned(step):       # Y, an output no statement reads: fetched from its query
        if step.vertex == "Y":
            optimized["Y"] = spark.spark.sql(statement_query(step, spark.dialect)) \
                ._jdf.queryExecution().optimizedPlan().toString()
        return run_and_fetch(step)

    monkeypatch.setattr(spark, "run_and_fetch", planned)
    for w_in in (w, np.zeros_like(w)):
        with Session(program, {"A": a, "W": w_in, "V": v}, backend=spark) as session:
            plan = session.plan("I,j,k,")
            compiled = session.compile(plan)
            loads = {s.label: s.target for s in compiled.steps if s.kind == "load"}
            shared = [s.target.table for s in compiled.steps if s.target.broadcast]
            assert sorted(label for label, rel in loads.items() if rel.broadcast) == \
                ["load V", "load W"], loads
            # Z, a statement's one tuple that T reads as its constant, is one too
            assert [s.target.tensor for s in compiled.steps
                    if s.kind == "sql" and s.target.broadcast] == ["Z"]
            statements = " ".join(s.sql for s in compiled.steps if s.kind == "sql")
            assert "se_broadcast__" in statements and "(SELECT val FROM" not in statements
            got = session.run(plan).outputs
        # Spark keeps the call (a literal would be folded in and copied into tasks)
        assert "se_broadcast__" in optimized["Y"] and "subquery" not in optimized["Y"].lower(), \
            optimized
        check(got["Y"], a @ w_in, "A W, W a broadcast")
        check(got["T"], a @ (np.maximum(w_in, 0) * v), "A (relu(W) V), Z a broadcast")
        assert got["Y"].dtype == got["T"].dtype == np.float64
        for table in shared:
            with pytest.raises(Exception, match="se_broadcast__"):
                spark.spark.sql(f"SELECT sparse_einsum.se_broadcast__{table}()").collect()


def test_a_stack_into_a_broadcast_is_scattered_by_the_driver(spark, monkeypatch):
    """With the JVM kernels, rows stacked into one tuple that a kernel reads as its
    constant (a broadcast) are collected as pieces and scattered in the driver, with no
    aggregate: the values match NumPy, also where no piece is left (all zeros)."""
    if not jvm(spark):
        pytest.skip("the JVM kernels")
    from sparse_einsum.plan import Choice, Plan
    from sparse_einsum.sql import spark as spark_sql
    monkeypatch.setattr(spark_sql, "BROADCAST_BYTES", 0)
    rng = np.random.default_rng(5)
    a, w = sp.random(40, 7, density=0.3, format="csr", random_state=5), rng.normal(size=(7, 3))
    program = ("input A[i,j]\ninput W[j,k]\nH[m,k] = relu(W[m,k])\n"
               "T[i,k] = A[i,j] * H[j,k]\noutput T")
    gathered, run = [], spark.run

    def recording(step):
        if step.target.broadcast and step.gather:
            gathered.append(step.target.tensor)
        run(step)

    monkeypatch.setattr(spark, "run", recording)
    # H in rows of k, or in scalars; T reads it as one tuple
    for k, w_in in itertools.product((3, 1), (w, np.abs(w) + 0.1, -np.abs(w))):
        with Session(program, {"A": a, "W": w_in}, backend=spark) as session:
            plan = Plan({"H": Choice.of({"m": 1, "k": k}),
                         "T": Choice.of({"i": 1, "j": 7, "k": 3})}, name="gathered")
            got = session.run(plan).outputs["T"]
        check(got, a @ np.maximum(w_in, 0), f"A relu(W), relu(W) gathered from k={k}")
        assert got.dtype == np.float64
    assert gathered == ["H"] * 6, gathered


def _packed(x: np.ndarray, fill: float = 0.0) -> list[float]:
    at = np.flatnonzero(x != fill)
    return at.astype(float).tolist() + x[at].tolist()


def test_explain_says_where_shuffles_happen(spark):
    rng = np.random.default_rng(0)
    data = {"A": sp.random(3000, 3000, density=0.04, format="csr", random_state=1),
            "H": rng.normal(size=(3000, 128))}
    with Session("input A[i,j]\ninput H[j,f]\nY[i,f] = A[i,j] * H[j,f]\noutput Y", data,
                 backend=spark) as session:
        moves = session.plans("relational")[0].statement_costs["Y"].exchanges
        result = session.explain(top=2)
    # a join on j (each side shuffled by it), then partial sums shuffled by the output's keys
    assert any(s.startswith("A by j (") for s in moves), moves
    assert any(s.startswith("partial sums of Y by i,f (") for s in moves), moves
    assert result["backend"] == "spark" and result["cost_constants"]["c_shuffle"] > 0
    assert "shuffles (the key a statement joins on partitions it):" in \
        format_explanation(result)


def test_workers_run_the_driver_python(spark):
    """Python workers (threads of local[2]'s JVM, or other processes on the cluster) run
    the interpreter of the driver, not `python3` from PATH."""
    from pyspark.sql.functions import udf

    @udf("string")
    def interpreter(_):
        return sys.executable

    got, = spark.spark.range(1).select(interpreter("id")).first()
    assert got == os.environ.get("PYSPARK_PYTHON", sys.executable)


def test_large_inputs_come_from_parquet_files(spark, monkeypatch):
    """With every input over the inline size, the inputs are read from Parquet files, which
    are gone once loaded (and their directory on close); a Python worker's exception is
    one line."""
    from sparse_einsum.backends import spark_inputs
    monkeypatch.setattr(spark_inputs, "INLINE_BYTES", 0)
    files = spark._inputs
    made = files._made
    rng = np.random.default_rng(2)
    a, h = sp.random(40, 30, density=0.2, format="csr", random_state=2), rng.normal(size=(30, 3))
    check(einsum("ij,jf->if", a, h, plan="optimal", backend=spark), a @ h, "parquet inputs")
    assert files._made > made and not list(files.directory.iterdir())
    directory = files.directory
    files.close()
    assert not directory.exists()

    spark.spark.udf.register("se_test_fails", lambda x: 1 / 0)
    with pytest.raises(BackendError) as failed:
        spark.query("SELECT se_test_fails(1)")
    assert str(failed.value) == "a Spark Python worker failed: ZeroDivisionError: division by zero"


def test_a_worker_traceback_reads_as_its_exception_line():
    """The line naming the exception a Python worker raised last (no Spark needed)."""
    from sparse_einsum.backends.spark_session import _raised_line
    text = ("An exception was thrown from the Python worker:\nTraceback (most recent call "
            "last):\n  File \"k.py\", line 1, in f\n    g()\nKeyError: 'x'\n\nDuring handling "
            "of the above exception, another exception occurred:\n\nTraceback (most recent "
            "call last):\n  File \"k.py\", line 3, in f\n    raise ValueError('a\\nb')\n"
            "ValueError: a\nb\n")
    assert _raised_line(text) == "ValueError: a"


def _executors(spark) -> list[int]:
    """Process ids of the executors of a local-cluster session (children of its JVM)."""
    from pyspark import SparkContext
    jvm = SparkContext._gateway.proc.pid
    rows = subprocess.run(["ps", "-ww", "-eo", "pid=,ppid=,args="], capture_output=True,
                          text=True).stdout.splitlines()
    return [int(pid) for pid, ppid, args in (row.split(None, 2) for row in rows)
            if int(ppid) == jvm and "CoarseGrainedExecutorBackend" in args]


def test_a_lost_executor_loses_no_data(spark, monkeypatch):
    """local-cluster: one executor process killed in the middle of a run, when the views so
    far are persisted in the executors and the deepest written to reliable checkpoints: what
    it held is computed again from lineage or checkpoint, and the run gives NumPy's answer."""
    if not master(spark).startswith("local-cluster"):
        pytest.skip("executors are processes on local-cluster only")
    from sparse_einsum.backends import spark as spark_backend
    monkeypatch.setattr(spark_backend, "CHECKPOINT_DEPTH", 3)
    program = "input A[i,j]\ninput Y0[j,f]\n" + "".join(
        f"Y{k + 1}[i,f] = relu(A[i,j] * Y{k}[j,f]) * 0.5\n" for k in range(6)) + \
        "output Y1, Y2, Y3, Y4, Y5, Y6"       # a statement each
    rng = np.random.default_rng(8)
    data = {"A": sp.random(300, 300, density=0.02, format="csr", random_state=8),
            "Y0": rng.normal(size=(300, 3))}
    want = evaluate(load_program(program), {**data, "A": data["A"].toarray()})
    killed, checkpoints = [], spark._scratch.path / "checkpoints"

    def kill_one_executor(line: str) -> None:
        if line.startswith("[6/") and not killed:
            assert list(checkpoints.rglob("rdd-*")), "no view was checkpointed"
            killed.append(_executors(spark)[0])
            os.kill(killed[0], signal.SIGKILL)

    with Session(program, data, backend=spark) as session:
        got = session.run("relational", progress=kill_one_executor).outputs
    assert killed and killed[0] not in _executors(spark)
    for name in got:
        check(got[name], want[name], f"{name} after a lost executor")
    assert not list(checkpoints.rglob("rdd-*")), "dropped views left checkpoints"


def test_training_matches_torch_on_spark(spark, monkeypatch):
    """Two Adam iterations of the GCN on Spark: parameters and optimizer state stay in the
    session as views over persisted data (checkpointed, so that the intermediates they
    were computed from, checkpointed every 3 statements here and dropped after each
    iteration, take nothing with them); losses, accuracy and weights equal PyTorch's."""
    if spark.dialect.name != "spark-native":
        pytest.skip("the training store is the same with either kind of kernels")
    from sparse_einsum import train
    from sparse_einsum.backends import spark as spark_backend
    from test_training import GCN, gcn_data, torch_gcn
    monkeypatch.setattr(spark_backend, "CHECKPOINT_DEPTH", 3)
    data = gcn_data()
    losses, accuracy, weights = torch_gcn(data, epochs=2, lr=0.1)
    result = train(GCN, data, loss="softmax_cross_entropy(Z, y, mask)", params=["W1", "W2"],
                   optimizer="adam", lr=0.1, epochs=2, backend=spark, tables="t_spark")
    np.testing.assert_allclose(result.losses, losses, rtol=1e-9)
    np.testing.assert_allclose(result.metrics["accuracy"], accuracy, rtol=1e-12)
    for got, want in zip((result.params["W1"], result.params["W2"]), weights):
        assert got.dtype == np.float64
        np.testing.assert_allclose(got, want, rtol=1e-8, atol=1e-12)
    views = {t.name for t in spark.spark.catalog.listTables() if t.name.startswith("t_spark_")}
    assert views == {f"t_spark_{n}" for n in ("w1", "w1_m", "w1_v", "w2", "w2_m", "w2_v", "step",
                                               "adam_step_size", "adam_sqrt_bias2")}, views
    for view in views:
        spark.drop_view(view)
