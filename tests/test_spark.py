"""The Spark backend against NumPy: a differential subset of the einsum corpus and the
programs (every kind of plan the strategy registry names, every operation, repartitions),
GCN and sparse attention on a Cora-sized graph, and what explain says about shuffles.
Each test runs on local[2] and on local-cluster[2,1,2048] (the `spark` fixture)."""
from __future__ import annotations

import numpy as np
import pytest

from einsum_cases import operands, reference
from sparse_einsum import Session, explain
from sparse_einsum.api import einsum_session
from sparse_einsum.program.parser import load_program
from sparse_einsum.reference import evaluate
from test_einsum import distinct_plans
from test_programs import PROGRAMS

# one or two of each kind: element-wise, transpose, collapse, outer, inner, GEMM-like,
# diagonal, 3+ operands
EXPRESSIONS = [",i->i", "ij,ij->ij", "ijk->kji", "ij->j", "i,j->ij", "ij,ij->",
               "ij,jk->ik", "bij,bjk->bik", "iij->j", "ij,jk,kl->il"]


@pytest.mark.parametrize("expression", EXPRESSIONS)
def test_einsum_matches_numpy_on_spark(expression, spark):
    ops = operands(expression, 0.5, seed=3, sparse_matrices=True)
    expected = reference(expression, ops)
    with einsum_session(expression, *ops, backend=spark) as session:
        for specs in distinct_plans(session).values():
            got = session.run(specs[0]).outputs["OUT"]
            np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-12,
                                       err_msg=f"{expression} plan={specs}")


# every operation of the programs, as scalar SQL (relational plan) and in kernels (dense)
PLANS = ("relational", "dense")


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_program_matches_reference_on_spark(name, spark):
    text, make_data = PROGRAMS[name]
    program = load_program(text)
    data = make_data()
    expected = evaluate(program, data)
    with Session(program, data, backend=spark) as session:
        for spec in PLANS:
            run = session.run(spec)
            for out in program.outputs:
                np.testing.assert_allclose(run.outputs[out], expected[out], rtol=1e-9,
                                           atol=1e-12, err_msg=f"{name}: {out} under {spec}")


def test_repartitions_and_ieee_semantics(spark):
    """A plan that decomposes and stacks (explode and GROUP BY), and division, log and min
    where Spark SQL would give NULL, an error or skip NaN."""
    program = load_program("""
        input A[i,j]
        input B[j,k]
        T[i,k] = A[i,j] * B[j,k]
        U[i,k] = T[i,k] / A[i,i] + log(T[i,k]) * 0
        M[i] = min(U[i,k])
        output U, M
        """)
    rng = np.random.default_rng(5)
    data = {"A": np.where(rng.random((4, 4)) < 0.6, rng.uniform(0.5, 2, (4, 4)), 0.0),
            "B": rng.uniform(-1, 1, (4, 3))}
    expected = evaluate(program, data)
    repartitioned = 0
    with Session(program, data, backend=spark) as session:
        for spec in ("relational", "random:4", "random:6", "random:7"):
            run = session.run(spec)
            repartitioned += bool(run.plan.repartitions(session.dag))
            for out in ("U", "M"):
                np.testing.assert_allclose(run.outputs[out], expected[out], rtol=1e-9,
                                           atol=1e-12, err_msg=f"{out} under {spec}")
    assert repartitioned


def test_gcn_and_sparse_attention_on_cora_size(spark):
    from experiments.workloads import workload
    from test_workloads import GRAPH_WORKLOADS, reference as workload_reference
    for name in ("gcn2", "sparse_attention"):
        path, data = workload(name, "cora", hidden=16, d_k=16)
        with Session(path, data, backend=spark) as session:
            out = session.run("optimal").outputs[GRAPH_WORKLOADS[name]]
        np.testing.assert_allclose(out, workload_reference(name, data), rtol=1e-9, atol=1e-9,
                                   err_msg=name)


def test_explain_says_where_shuffles_happen(spark):
    rng = np.random.default_rng(0)
    a = np.where(rng.random((300, 300)) < 0.05, 1.0, 0.0)
    result = explain("input A[i,j]\ninput H[j,f]\nY[i,f] = A[i,j] * H[j,f]\noutput Y",
                     {"A": a, "H": rng.normal(size=(300, 8))}, backend=spark, top=5)
    assert result["backend"] == "spark" and result["cost_constants"]["c_shuffle"] > 0
    relational = [p for p in result["plans"]
                  if p["statements"][0]["uclc"] == "Y[I,F] = A[I,J] * H[J,F]"]
    shuffles = [s for p in result["plans"] for st in p["statements"] for s in st["shuffles"]]
    assert shuffles and all("MiB" in s for s in shuffles)
    if relational:   # a join on J, then partial sums shuffled by the output keys
        moved = relational[0]["statements"][0]["shuffles"]
        assert any("by i,f" in s for s in moved), moved
