"""Scalar factors (sql.factor): a product that only scales payloads by a scalar passes them
through with the scalar beside them, and its reader scales its kernel's result. Values
and dtypes against NumPy on every engine, under every kind of plan."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from sparse_einsum import Session
from sparse_einsum.program.parser import load_program
from sparse_einsum.reference import evaluate
from sparse_einsum.sql.factor import FACTOR

PLANS = ["optimal", "rank:2", "rank:3", "relational", "dense", "random:1", "random:2",
         "random:3", "random:4"]

# SDDMM as two statements, and a reader that also sums over the factor's label j
SDDMM = """
    input X[i,k]
    input M[i,j]
    input Y[j,k]
    P[i,j,k] = M[i,j] * Y[j,k]
    OUT[i,j] = X[i,k] * P[i,j,k]
    output OUT
    """
ROW_SUMS = SDDMM.replace("OUT[i,j] = X[i,k] * P[i,j,k]", "OUT[i] = X[i,k] * P[i,j,k]")


def _data(bad: float | None = None) -> dict:
    rng = np.random.default_rng(11)
    m = sp.random(30, 25, density=0.1, random_state=4, format="csr")
    data = dict(X=rng.normal(size=(30, 6)), M=m, Y=rng.normal(size=(25, 6)))
    if bad is not None:
        data["Y"][3, 2] = bad
    return data


def _factored(session: Session, plan: str) -> bool:
    """Whether the compiled plan passes P through with its factor."""
    return any(f'"{FACTOR}"' in s.sql or f" AS {FACTOR}" in s.sql
               for s in session.compile(plan).statements())


@pytest.mark.parametrize("text", [SDDMM, ROW_SUMS], ids=["sddmm", "row-sums"])
def test_factored_products_equal_numpy_under_every_plan(text, backend):
    program, data = load_program(text), _data()
    expected = evaluate(program, data)["OUT"]
    factored = []
    with Session(program, data, backend=backend, paths="opt_einsum") as session:
        for plan in PLANS:
            got = session.run(plan).outputs["OUT"]
            assert got.dtype == expected.dtype == np.float64
            np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-12, err_msg=plan)
            factored.append(_factored(session, plan))
        pinned = "IJk"            # every vertex: i and j promoted, k demoted
        got = session.run(pinned).outputs["OUT"]
        np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-12)
        assert _factored(session, pinned)
    assert not all(factored)        # the relational plan, at least, has no payloads


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_no_factor_where_values_are_not_finite(bad, backend):
    """s * (a . b) is not a . (s b) with inf or NaN: such products are computed as written."""
    program, data = load_program(SDDMM), _data(bad)
    expected = evaluate(program, data)["OUT"]
    with Session(program, data, backend=backend, paths="opt_einsum") as session:
        for plan in ("IJk", "optimal"):
            assert not _factored(session, plan)
            got = session.run(plan).outputs["OUT"]
            np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-12, equal_nan=True)


def test_factored_sddmm_on_spark(spark):
    program, data = load_program(SDDMM), _data()
    expected = evaluate(program, data)["OUT"]
    with Session(program, data, backend=spark, paths="opt_einsum") as session:
        assert _factored(session, "IJk")
        got = session.run("IJk").outputs["OUT"]
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-12)


def test_explain_names_the_factored_products(duck):
    from sparse_einsum.explanation import format_explanation
    with Session(SDDMM, _data(), backend=duck, paths="opt_einsum") as session:
        result = session.explain(top=3)
        factored = [_factored(session, p["name"]) for p in result["plans"]]
    marked = [any(s.get("scalar_factor") for s in p["statements"]) for p in result["plans"]]
    assert marked == factored and any(marked)
    assert ("scalar factors (payload passed through with the scalar beside it, the reader "
            "scales its kernel's result): P" in format_explanation(result)) == any(marked)
