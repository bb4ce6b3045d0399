"""Chains of element-wise operations over one-tuple arrays in one kernel call (sql.chains):
NumPy's values and dtypes under every plan and engine, absent (all-zero) and non-finite
inputs included; where the dialect chains, how many kernel calls a statement makes."""
from __future__ import annotations

import numpy as np
import pytest

from sparse_einsum import Session, explain
from sparse_einsum.program.parser import load_program
from sparse_einsum.reference import evaluate
from sparse_einsum.sql.chains import presence

PLANS = ["dense", "optimal", "relational", "random:1", "random:3"]

# an optimizer's update: M2 and P2 are outputs, V2 is read by P2 only
ADAM = """
    input P[i,j]
    input G[i,j]
    input M[i,j]
    input s[]
    input t[]
    M2[i,j] = M[i,j] * 0.9 + G[i,j] * 0.1
    V2[i,j] = G[i,j] * G[i,j] * 0.001
    P2[i,j] = P[i,j] - M2[i,j] / (sqrt(V2[i,j]) / t[] + 1e-8) * s[]
    output P2, M2
    """
# products and a unary function whose result exists only where both operands do
MASKED = """
    input X[i,j]
    input Y[i,j]
    R[i,j] = relu(X[i,j]) * Y[i,j] * 2
    output R
    """


def _adam_data(case: str) -> dict:
    rng = np.random.default_rng(7)
    data = {"P": rng.normal(size=(5, 4)), "G": rng.normal(size=(5, 4)),
            "M": rng.normal(size=(5, 4)), "s": np.float64(0.01), "t": np.float64(0.5)}
    if case == "zero moment":
        data["M"] = np.zeros((5, 4))        # stored as no tuple
    elif case == "zero gradient":
        data["G"] = np.zeros((5, 4))
    elif case == "non-finite":
        data["G"][1, 2], data["P"][0, 0] = np.inf, np.nan
    return data


def _run(text: str, data: dict, backend) -> list[tuple[str, dict, list]]:
    """(plan, outputs, steps) of every plan, each output checked against NumPy."""
    program = load_program(text)
    expected = evaluate(program, data)
    found = []
    with Session(program, data, backend=backend, paths="opt_einsum") as session:
        for plan in PLANS:
            outputs = session.run(plan).outputs
            for name in program.outputs:
                want = expected[name]
                assert outputs[name].dtype == np.float64, (plan, name)
                np.testing.assert_allclose(outputs[name], want, rtol=1e-12, atol=1e-15,
                                           err_msg=f"{plan} {name}")
            found.append((plan, outputs, session.compile(plan).statements()))
    return found


@pytest.mark.parametrize("case", ["values", "zero moment", "zero gradient", "non-finite"])
def test_an_optimizer_update_matches_numpy(backend, case):
    for plan, _, steps in _run(ADAM, _adam_data(case), backend):
        sql = " ".join(s.sql for s in steps if not s.shared)   # each vertex's own statement
        chained = {c for s in steps for c in s.chained}
        if plan == "dense" and backend.dialect.capabilities.fused_chains:
            # M2 and P2 are one kernel call each; V2 is chained into P2's
            assert sql.count("se_fused(") == 2 and "se_kernel" not in sql
            assert "V2" in chained and not any(c in chained for c in ("M2", "P2"))
        elif not backend.dialect.capabilities.fused_chains:
            assert not chained and "se_fused(" not in sql


@pytest.mark.parametrize("absent", ["neither", "X", "Y", "Y, X finite"])
def test_a_chain_with_absent_operands(backend, absent):
    """relu(X) * Y * 2 with X or Y all zero (no tuple): zeros (no tuple at all where X is
    finite), except that X's inf against an absent Y is NaN, as in NumPy (X may hold inf,
    so its zeros are seen)."""
    x = np.array([[1.0, -2.0, np.inf], [0.5, 3.0, -1.0]])
    if absent == "Y, X finite":
        x[0, 2], absent = 4.0, "X finite"
    y = np.arange(6.0).reshape(2, 3) + 1
    data = {"X": np.zeros_like(x) if absent == "X" else x,
            "Y": np.zeros_like(x) if absent in ("Y", "X finite") else y}
    for plan, outputs, steps in _run(MASKED, data, backend):
        if absent in ("X", "X finite"):
            assert not np.any(outputs["R"]), plan
        if absent == "Y":
            assert np.isnan(outputs["R"][0, 2]) and np.count_nonzero(outputs["R"]) == 1, plan
        if plan == "dense" and backend.dialect.capabilities.fused_chains:
            (step,) = [s for s in steps if s.vertex == "R"]
            assert step.chained and "WHERE" not in step.sql


def test_presence_of_a_chain():
    """relu(x) * (y + z): where x has a tuple and y or z has one."""
    x, y, z = (frozenset({frozenset({k})}) for k in range(3))
    either = presence("union", [y, z])
    assert presence("join", [presence("full", [x]), either]) == either
    assert presence("join", [x, either]) == {frozenset({0, 1}), frozenset({0, 2})}
    assert presence("union", [x, None]) is None


def test_explain_names_the_chained_vertices(duck):
    result = explain(ADAM, _adam_data("values"), top=3, backend=duck)
    with Session(ADAM, _adam_data("values"), backend=duck) as session:
        ranked = session.plans("rank:1", 3)
        chained = [{c for s in session.compile(p).steps for c in s.chained} for p in ranked]
    assert any(chained)
    for entry, inside in zip(result["plans"], chained):
        into = {s["name"]: s.get("pipelined_into") for s in entry["statements"]}
        assert all(into[name] for name in inside)


@pytest.mark.parametrize("case", ["zero moment", "non-finite"])
def test_an_optimizer_update_on_spark(spark, case):
    """The dense plan on Spark: NumPy's values, with the JVM kernels two se_fused calls
    (the Python fallback keeps a kernel call per operation)."""
    program, data = load_program(ADAM), _adam_data(case)
    expected = evaluate(program, data)
    with Session(program, data, backend=spark) as session:
        sql = " ".join(s.sql for s in session.compile("dense").statements())
        outputs = session.run("dense").outputs
    assert sql.count("se_fused(") == (2 if spark.dialect.capabilities.fused_chains else 0)
    for name in program.outputs:
        assert outputs[name].dtype == np.float64
        np.testing.assert_allclose(outputs[name], expected[name], rtol=1e-12, atol=1e-15)
