"""One-tuple statements as nested calls over one positional scan (sql.nested, DuckDB):
which statements take that form, and NumPy's values and dtypes whatever the inputs hold."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from sparse_einsum import Session
from sparse_einsum.program.parser import load_program
from sparse_einsum.reference import evaluate
from sparse_einsum.sql import pipeline

# a product, an element-wise chain with exp (not 0 at 0), a difference, a reduction to a
# scalar and a scalar input: every statement of the dense plan reads one-tuple relations
PROGRAM = """
    input A[i,j]
    input X[j,f]
    input b[f]
    input s[]
    P[i,f] = A[i,j] * X[j,f]
    E[i,f] = exp(P[i,f])
    D[i,f] = E[i,f] - b[f]
    T[] = D[i,f] * s[]
    output D
    output T
    """


def _data(zero: str | None) -> dict[str, object]:
    rng = np.random.default_rng(11)
    data = {"A": sp.random(6, 5, density=0.4, random_state=2, format="csr"),
            "X": rng.normal(size=(5, 4)), "b": rng.normal(size=4), "s": np.float64(1.5)}
    if zero:
        value = data[zero]
        data[zero] = (sp.csr_matrix(value.shape) if sp.issparse(value)
                      else np.zeros_like(value))
    return data


@pytest.mark.parametrize("zero", [None, "A", "X", "b", "s"])
def test_one_tuple_statements_are_nested_calls(duck, zero):
    """Under the dense plan every statement is one SELECT of nested calls FROM a
    POSITIONAL JOIN of the tables it reads (no common table expression, no join ON), an
    all-zero input (stored as its one tuple) included; NumPy's values and dtypes."""
    data = _data(zero)
    expected = evaluate(load_program(PROGRAM), data)
    with Session(PROGRAM, data, backend=duck) as session:
        steps = [s for s in session.compile("dense").steps if s.kind == "sql"]
        assert steps and all(s.formula for s in steps)
        for step in steps:
            assert " WITH " not in step.sql and " ON " not in step.sql, step.sql
            assert step.sql.count(" AS p") == len(step.reads)
        got = session.run("dense").outputs
    for name in ("D", "T"):
        assert got[name].dtype == np.float64
        np.testing.assert_allclose(got[name], expected[name], rtol=1e-12, err_msg=name)


def test_a_long_nested_statement_keeps_its_common_table_expressions(duck, monkeypatch):
    """A statement whose nested text would pass NESTED_CHARS (formulas read twice repeat
    theirs) is compiled with common table expressions instead: the same values."""
    data = _data(None)
    expected = evaluate(load_program(PROGRAM), data)
    monkeypatch.setattr(pipeline, "NESTED_CHARS", 200)
    with Session(PROGRAM, data, backend=duck) as session:
        compiled = session.compile("dense")
        long = [s for s in compiled.steps if s.kind == "sql" and s.pipelined]
        assert long and all(" WITH " in s.sql for s in long)
        got = session.run("dense").outputs
    for name in ("D", "T"):
        assert got[name].dtype == np.float64
        np.testing.assert_allclose(got[name], expected[name], rtol=1e-12, err_msg=name)


# a softmax's pieces: Z read by M and D, M by D, L and G, D by S and G; outputs of every kind
SHARED = """
    input A[i,j]
    input X[j,c]
    input w[i]
    Z[i,c] = A[i,j] * X[j,c]
    M[i] = max(Z[i,c])
    D[i,c] = Z[i,c] - M[i]
    S[i] = exp(D[i,c])
    L[] = M[i] * w[i]
    C[] = S[i] * w[i]
    G[i,c] = D[i,c] * M[i]
    Y[j,c] = A[i,j] * G[i,c]
    output L
    output C
    output Y
    """


def _shared_data() -> dict[str, object]:
    rng = np.random.default_rng(5)
    return {"A": sp.random(7, 6, density=0.4, random_state=3, format="csr"),
            "X": rng.normal(size=(6, 3)), "w": rng.normal(size=7)}


@pytest.mark.parametrize("plan", ["dense", "optimal", "greedy", "relational"])
def test_statements_reading_one_intermediate_share_one_statement(backend, plan):
    """On DuckDB an intermediate read by several one-tuple statements is computed with
    them in one statement (`sql.shared`), repeatedly: under the dense plan the whole
    program is one statement, and its table holds the outputs, fetched from their
    columns; each value read twice is computed once, in a projection below. NumPy's
    values and dtypes under every plan and engine."""
    data = _shared_data()
    expected = evaluate(load_program(SHARED), data)
    with Session(SHARED, data, backend=backend) as session:
        compiled = session.compile(plan)
        got = session.run(plan).outputs
    if plan == "dense" and backend.dialect.capabilities.nested_calls:
        (step,) = [s for s in compiled.steps if s.kind == "sql"]
        assert {"Z", "M", "D", "S", "L", "C", "Y"} <= {p.vertex for p in step.pipelined}
        assert {rel.table for rel in compiled.outputs.values()} == {step.target.table}
        assert len({rel.value for rel in compiled.outputs.values()}) == 3
        # Z, M and D, each read twice or more, are columns of projections of their own
        # below: each call written (and bound) once, each column defined once
        calls = re.findall(r"se_\w+\('[^']*'", step.sql)
        assert calls.count("se_kernel1('id;max;1;7,3;3,1'") == 1 and len(calls) == 8
        layered = re.findall(r'AS "(v\d+)"', step.sql)
        assert len(layered) == 3 and all(step.sql.count(f'"{v}"') >= 3 for v in layered)
    for name in ("L", "C", "Y"):
        assert got[name].dtype == np.float64
        np.testing.assert_allclose(got[name], expected[name], rtol=1e-12, err_msg=name)


def test_a_long_shared_statement_keeps_its_common_table_expressions(duck, monkeypatch):
    """A shared statement whose nested text would pass NESTED_CHARS reads its members
    from common table expressions: the same values."""
    data = _shared_data()
    expected = evaluate(load_program(SHARED), data)
    monkeypatch.setattr(pipeline, "NESTED_CHARS", 200)
    with Session(SHARED, data, backend=duck) as session:
        (step,) = [s for s in session.compile("dense").steps if s.kind == "sql"]
        assert step.sql.count(" WITH ") == 1
        got = session.run("dense").outputs
    for name in ("L", "C", "Y"):
        np.testing.assert_allclose(got[name], expected[name], rtol=1e-12, err_msg=name)


@pytest.mark.parametrize("engine", ["duck_udf", "pg"])
def test_engines_without_nested_calls_join_their_one_tuple_relations(request, engine):
    """PostgreSQL, and DuckDB without its extension, keep joins: no formula, no
    POSITIONAL JOIN; NumPy's values."""
    backend = request.getfixturevalue(engine)
    assert not backend.dialect.capabilities.nested_calls
    data = _data(None)
    expected = evaluate(load_program(PROGRAM), data)
    with Session(PROGRAM, data, backend=backend) as session:
        steps = [s for s in session.compile("dense").steps if s.kind == "sql"]
        assert not any(s.formula for s in steps)
        assert not any("POSITIONAL" in s.sql for s in steps)
        got = session.run("dense").outputs
    np.testing.assert_allclose(got["D"], expected["D"], rtol=1e-12)


GCN = Path(__file__).resolve().parents[1] / "experiments" / "programs" / "gcn2.se"


def test_a_stack_into_one_tuple_has_its_tuple(duck):
    """A normalised adjacency computed relationally and packed into one tuple (the GCN's
    `stack ~N`) keeps its tuple where it has no pieces (an empty payload: all zero), so the
    statement reading it is nested too; NumPy's values, with edges and, under the same
    plan, without."""
    n = 200
    rng = np.random.default_rng(4)
    data = {"A": sp.random(n, n, density=5 / n, random_state=1, format="csr"),
            "d": rng.uniform(0.5, 1.0, n), "X": rng.normal(size=(n, 32)),
            "W1": rng.normal(size=(32, 16)), "W2": rng.normal(size=(16, 4))}
    program = GCN.read_text()
    plan = None
    for a in (data["A"], sp.csr_matrix((n, n))):
        data["A"] = a
        expected = evaluate(load_program(program), data)["Y"]
        with Session(program, data, backend=duck, paths="opt_einsum") as session:
            plan = plan or session.plan()
            steps = [s for s in session.compile(plan).steps if s.kind == "sql"]
            stack = next(s for s in steps if s.label.startswith("stack ~N"))
            assert not stack.target.keyed and "HAVING" not in stack.sql
            reader = next(s for s in steps if stack.target.table in s.reads)
            assert reader.formula and " POSITIONAL JOIN " in reader.sql
            got = session.run(plan).outputs["Y"]
        assert got.dtype == np.float64
        np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)
