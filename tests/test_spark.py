"""The Spark backend against NumPy: a differential subset of the einsum corpus (every kind
of plan the strategy registry names, tiles included), every operation of the language,
repartitions, NaN and inf, exact integers, GCN and sparse attention on a Cora-sized
graph, what explain says about shuffles, and how the backend starts (the driver's
Python in the workers), loads inputs (Parquet files) and survives a lost executor process.
The tests run on local[2] and on local-cluster[2,1,2048] (the `spark` fixture: one session
per master), some on one of them only, to keep the module within a few minutes."""
from __future__ import annotations

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
    output S, Q, U, V, M, N
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


def test_gcn_and_sparse_attention_on_cora_size(spark):
    """On local[2] only (the other tests cover data crossing processes)."""
    if master(spark) != "local[2]":
        pytest.skip("Cora runs on local[2] only")
    from experiments.workloads import workload
    from test_workloads import reference as workload_reference
    for name in ("gcn2", "sparse_attention"):
        path, data = workload(name, "cora", hidden=16, d_k=16)
        with Session(path, data, backend=spark) as session:
            outputs = session.run("optimal").outputs
        got, = outputs.values()
        np.testing.assert_allclose(got, workload_reference(name, data), rtol=1e-9, atol=1e-9,
                                   err_msg=name)


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
