"""Pipelined intermediates (sql.pipeline): one read by a single statement is a common table
expression of it, not a table; values and dtypes against NumPy on every engine."""
from __future__ import annotations

import re
from dataclasses import replace

import numpy as np
import pytest
import scipy.sparse as sp

import sparse_einsum as se
from sparse_einsum import Session, explain
from sparse_einsum.api import einsum_session
from sparse_einsum.explanation import format_explanation
from sparse_einsum.program.parser import load_program
from sparse_einsum.reference import evaluate

PLANS = ["optimal", "relational", "dense", "random:1", "random:2", "random:5"]
rng = np.random.default_rng(3)

# P, Q and R are read once each: one statement computes the chain; S is the output
CHAIN = """
    input A[i,j]
    input X[j,f]
    input B[i,f]
    P[i,f] = A[i,j] * X[j,f]
    Q[i,f] = relu(P[i,f])
    R[i,f] = Q[i,f] * B[i,f]
    S[i] = R[i,f]
    output S
    """
# T is read by U and by V: it stays a table; U streams into V
SHARED = """
    input A[i,j]
    input X[j,f]
    T[i,f] = A[i,j] * X[j,f]
    U[i,f] = exp(T[i,f])
    V[i,f] = T[i,f] * U[i,f]
    output V
    """

# H (one operand) and D (one tuple under the dense plan) are element-wise and read twice:
# computed again in each reader instead of stored (`plan.recomputed`); Q and F, which
# read them, stream into K, which reads H too
RECOMPUTED = """
    input A[i,j]
    input X[j,f]
    input W[f,c]
    input m[i]
    T[i,f] = A[i,j] * X[j,f]
    H[i,f] = relu(T[i,f])
    G[i,f] = step(T[i,f])
    P[i,c] = H[i,f] * W[f,c]
    Q[i,f] = H[i,f] * G[i,f]
    D[i,f] = T[i,f] - m[i]
    E[i] = exp(D[i,f])
    F[i,f] = D[i,f] * Q[i,f]
    K[i,f] = F[i,f] * H[i,f]
    output P
    output E
    output K
    """


def _data():
    mask = rng.random((12, 9)) < 0.3
    return dict(A=sp.csr_matrix(np.where(mask, rng.normal(size=(12, 9)), 0.0)),
                X=rng.normal(size=(9, 5)), B=rng.normal(size=(12, 5)))


def _streamed(session: Session, plan: str) -> tuple[set[str], set[str]]:
    """(vertices computed inside a later statement: pipelined into it or chained into one
    of its kernel calls, vertices with a table of their own)."""
    steps = session.compile(plan).steps
    return ({p.vertex for s in steps for p in s.pipelined if p.vertex}
            | {c for s in steps for p in (*s.pipelined, s) for c in p.chained},
            {s.vertex for s in steps if s.vertex})


def _check(text: str, data: dict, backend, output: str) -> list[set[str]]:
    program = load_program(text)
    expected = evaluate(program, data)[output]
    found = []
    with Session(program, data, backend=backend, paths="opt_einsum") as session:
        for plan in PLANS:
            got = session.run(plan).outputs[output]
            assert got.dtype == expected.dtype == np.float64
            np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-12, err_msg=plan)
            found.append(_streamed(session, plan))
    return found


def test_a_chain_of_single_use_intermediates_is_one_statement(backend):
    for pipelined, stored in _check(CHAIN, _data(), backend, "S"):
        assert pipelined == {"P", "Q", "R"} and stored == {"S"}


def test_an_intermediate_read_twice_stays_a_table(backend):
    """T is read by U and V: a table, unless U is chained into V's kernel call (plans
    with T and U one tuple each, `sql.chains`), which then is T's one reader."""
    data = _data()
    data["X"] = data["X"] * 0.3          # exp stays small
    program = load_program(SHARED)
    with Session(program, {k: data[k] for k in ("A", "X")}, backend=backend,
                 paths="opt_einsum") as session:
        chained = [any("U" in s.chained for s in session.compile(plan).steps) for plan in PLANS]
    assert any(chained) == backend.dialect.capabilities.fused_chains
    for (pipelined, stored), in_chain in zip(
            _check(SHARED, {k: data[k] for k in ("A", "X")}, backend, "V"), chained):
        assert "U" in pipelined and ("T" in pipelined if in_chain else "T" in stored)


def test_element_wise_intermediates_read_twice_are_computed_in_each_reader(backend):
    """H = relu(T) is read by P, Q and K, D = T - m by E and F: where they join nothing
    keyed (H always, D under the dense plan) and nothing streams into them, each reader's
    statement computes them again, once, and they get no table. Where statements over
    one-tuple relations nest (DuckDB), the dense plan's readers share one statement
    instead (`sql.shared`), which computes each once. NumPy's values and dtypes either
    way."""
    data = {**_data(), "W": rng.normal(size=(5, 3)), "m": rng.normal(size=12)}
    del data["B"]
    program = load_program(RECOMPUTED)
    expected = evaluate(program, data)
    with Session(program, data, backend=backend, paths="opt_einsum") as session:
        for plan in PLANS:
            outputs = session.run(plan).outputs
            for name in ("P", "E", "K"):
                assert outputs[name].dtype == np.float64
                np.testing.assert_allclose(outputs[name], expected[name], rtol=1e-9,
                                           atol=1e-12, err_msg=f"{plan}: {name}")
        for plan, again in (("dense", {"H", "D"}), ("relational", {"H"})):
            steps = session.compile(plan).steps
            readers = {name: sum(name in [p.vertex for p in s.pipelined] for s in steps)
                       for name in ("H", "D")}
            if plan == "dense" and backend.dialect.capabilities.nested_calls:
                assert [s.kind for s in steps].count("sql") == 1
                assert readers == {"H": 1, "D": 1}
                continue
            stored = {s.vertex for s in steps if s.vertex}
            assert all(readers[name] >= 2 for name in again), plan
            assert all(len({p.target.table for p in s.pipelined}) == len(s.pipelined)
                       for s in steps), plan
            assert {"H", "D"} & stored == {"H", "D"} - again, plan
    text = format_explanation(explain(program, data, top=1, backend=backend))
    readers = "" if backend.dialect.capabilities.nested_calls else r" and [\w~]+"
    assert re.search(r"\bH into [\w~]+" + readers, text)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_operands_through_pipelined_statements(bad, backend):
    """0 * NaN and 0 * inf are NaN inside streamed statements as in NumPy."""
    data = _data()
    data["X"][2, 1] = bad
    data["B"][0, 3] = bad
    _check(CHAIN, data, backend, "S")


def test_sddmm_streams_its_product_with_the_mask(backend):
    """X[i,k] M[i,j] Y[j,k] summed over k: the first product is computed inside the second
    statement; NumPy's values and dtype, dense and sparse results."""
    n, k = 40, 6
    m = sp.random(n, n, density=0.08, random_state=2, format="csr")
    x, y = rng.normal(size=(n, k)), rng.normal(size=(n, k))
    expected = m.toarray() * (x @ y.T)
    got = se.einsum("ik,ij,jk->ij", x, m, y, backend=backend, format="dense")
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-12)
    got = se.einsum("ik,ij,jk->ij", x, m, y, backend=backend)     # sparse in, sparse out
    assert sp.issparse(got)
    np.testing.assert_allclose(got.toarray(), expected, rtol=1e-9, atol=1e-12)
    with einsum_session("ik,ij,jk->ij", x, m, y, backend=backend) as session:
        pipelined, stored = _streamed(session, "optimal")
        assert pipelined and stored == {"OUT"}
        assert session.optimizer().model.streamed == frozenset(pipelined)


def test_explain_says_what_is_pipelined(duck):
    result = explain(CHAIN, _data(), top=1, analyze=True, backend=duck)
    streamed = {s["name"]: s.get("pipelined_into") for s in result["plans"][0]["statements"]}
    assert streamed.pop("S") is None and {"P", "Q"} <= set(streamed)   # R may be fused into S
    assert set(streamed.values()) == {"S"}
    text = format_explanation(result)
    assert ("pipelined (computed inside a later statement, streamed into it or sharing it; "
            "no table of their own): P into S, Q into S") in text


def _pipeline_depth(backend, monkeypatch, depth: int, **capabilities) -> None:
    """The backend's dialect streams at most `depth` intermediates into one statement."""
    dialect = type(backend.dialect)
    monkeypatch.setattr(dialect, "capabilities",
                        replace(dialect.capabilities, pipeline_depth=depth, **capabilities))


def test_a_long_chain_keeps_a_table_every_pipeline_depth(duck, monkeypatch):
    """At most `pipeline_depth` intermediates stream into one statement."""
    _pipeline_depth(duck, monkeypatch, 2)
    _check(CHAIN, _data(), duck, "S")
    with Session(CHAIN, _data(), backend=duck, paths="opt_einsum") as session:
        for plan in PLANS:
            steps = session.compile(plan).steps
            assert max(len(s.pipelined) for s in steps) == 2
            assert len(steps) > len(session.compile(plan).statements()) / 3


def test_engines_without_pipelining_keep_every_table(duck, monkeypatch):
    """A dialect with `pipeline_depth = 0` stores every intermediate, and its cost model
    charges every write."""
    _pipeline_depth(duck, monkeypatch, 0, fused_chains=False)
    for pipelined, stored in _check(CHAIN, _data(), duck, "S"):
        assert not pipelined and stored == {"P", "Q", "R", "S"}
    with Session(CHAIN, _data(), backend=duck) as session:
        assert session.optimizer().model.streamed == frozenset()


def test_outputs_read_by_no_later_statement_come_straight_from_their_query(backend):
    """An output that a later statement reads is stored for it; one that nothing reads
    is fetched from its statement's query (DuckDB: never stored), unless the two share
    one statement (one-tuple statements on DuckDB, `sql.shared`), whose table holds both.
    Values as NumPy."""
    from sparse_einsum.executor import _read_by_none, _reads
    program = """
    input A[i,j]
    input X[j,f]
    T[i,f] = A[i,j] * X[j,f]
    M[i] = max(T[i,f])
    output T, M
    """
    data = {"A": np.where(rng.random((9, 7)) < 0.4, rng.normal(size=(9, 7)), 0.0),
            "X": rng.normal(size=(7, 3))}
    expected = evaluate(load_program(program), data)
    with Session(program, data, backend=backend) as session:
        for spec in PLANS:
            plan = session.plan(spec)
            compiled = session.compile(plan)
            direct = _read_by_none(compiled, _reads(compiled))
            if compiled.outputs["M"].table == compiled.outputs["T"].table:
                assert backend.dialect.capabilities.nested_calls and not direct, spec
            else:
                assert direct == {compiled.outputs["M"].table}, spec
            got = session.run(plan).outputs
            for name in ("T", "M"):
                np.testing.assert_allclose(got[name], expected[name], rtol=1e-12, atol=1e-12)
                assert got[name].dtype == np.float64


def test_steps_say_whether_they_generate_rows():
    """`Step.generates_rows` holds where a statement (with what is streamed into it) makes
    rows no table holds: PostgreSQL's ranges and explodes, in every plan."""
    from sparse_einsum.sql.postgres import PostgresDialect

    data = _data()
    found = set()
    for text, inputs in ((CHAIN, data), (SHARED, {k: data[k] for k in ("A", "X")})):
        with Session(text, inputs, backend=None, dialect=PostgresDialect(),
                     paths="opt_einsum") as session:
            for plan in PLANS:
                for step in session.compile(plan).steps:
                    ranges = "generate_series(" in step.sql or "unnest(" in step.sql
                    assert step.generates_rows == ranges, (plan, step.label)
                    found.add(ranges)
    assert found == {True, False}


def test_postgres_computes_each_streamed_intermediate_once(pg):
    """A chain of products streamed into one statement: PostgreSQL runs every aggregate
    once (inlined, its planner ran the inner aggregates again for each outer row of a
    nested loop, at every level: 8^depth kernel calls in a quantum circuit)."""
    from experiments.quantum import output_name, quantum_reference, quantum_workload
    from sparse_einsum.sql.pipeline import statement_query
    text, data = quantum_workload("qft", 7)
    loops: list[int] = []
    run_step = pg.run

    def explained(step):
        run_step(step)                     # stores the inputs it reads first
        if len(step.pipelined) >= 4:
            plan = pg.conn.execute("EXPLAIN (ANALYZE, FORMAT JSON) "
                                   + statement_query(step, pg.dialect)).fetchone()[0]
            nodes = [plan[0]["Plan"]]
            while nodes:
                node = nodes.pop()
                nodes += node.get("Plans", [])
                if node["Node Type"] == "Aggregate":
                    loops.append(node["Actual Loops"])

    pg.run = explained
    try:
        got = se.run(text, data, backend=pg)[output_name(data)]
    finally:
        del pg.run
    np.testing.assert_allclose(got, quantum_reference("qft", 7), atol=1e-12)
    assert loops and max(loops) == 1, loops


def _threads(backend) -> int:
    return int(backend.query("SELECT current_setting('threads')")[0][0])


def test_runs_of_one_tuple_statements_take_one_duckdb_thread():
    """A run whose every statement is of one-tuple relations (`Step.one_tuple`: the dense
    plan) takes one DuckDB thread, and a run with keyed relations the database's count
    again, with NumPy's values in both; a caller's connection keeps its own count, and
    the process's shared engine remembers its count across backends."""
    from sparse_einsum.backends.duckdb import DuckDBBackend, connect

    data = _data()
    program = load_program(CHAIN)
    expected = evaluate(program, data)["S"]

    def run(backend, plan: str) -> None:
        with Session(program, data, backend=backend, paths="opt_einsum") as session:
            sql = [s for s in session.compile(plan).steps if s.kind == "sql"]
            assert all(s.one_tuple for s in sql) == (plan == "dense"), plan
            np.testing.assert_allclose(session.run(plan).outputs["S"], expected,
                                       rtol=1e-9, atol=1e-12, err_msg=plan)

    with DuckDBBackend(native=True, threads=2) as own:
        for plan, threads in (("dense", 1), ("dense", 1), ("relational", 2), ("dense", 1)):
            run(own, plan)
            assert _threads(own) == threads, plan
    caller = connect(":memory:")
    caller.execute("SET threads = 3")
    with DuckDBBackend(caller, native=True) as borrowed:
        run(borrowed, "dense")
        assert _threads(borrowed) == 3
    caller.close()
    first = DuckDBBackend.shared()
    run(first, "relational")        # the database's count, whatever earlier tests' runs left
    count = _threads(first)
    run(first, "dense")
    assert _threads(first) == 1
    second = DuckDBBackend.shared()
    run(second, "relational")
    assert _threads(second) == count
    first.close()
    second.close()


@pytest.mark.parametrize("absent", ["X", "Y", "both", "neither"])
def test_one_tuple_operands_that_may_be_absent(backend, absent):
    """A sum and a difference of one-tuple operands (the dense plan), an all-zero input
    stored as no tuple: where the engine has it, the tuple of either operand is a FULL
    JOIN of the two instead of a domain of keys; NumPy's values either way."""
    program = """
        input X[i,j]
        input Y[i,j]
        S[i,j] = X[i,j] + Y[i,j]
        D[i,j] = exp(S[i,j]) - Y[i,j]
        output D
        """
    dense = {"X": np.arange(12.0).reshape(4, 3) / 4, "Y": np.ones((4, 3))}
    data = {name: sp.csr_matrix(np.zeros((4, 3)) if absent in (name, "both") else value)
            for name, value in dense.items()}
    expected = evaluate(load_program(program), data)["D"]
    capabilities = backend.dialect.capabilities
    with Session(program, data, backend=backend) as session:
        sql = " ".join(s.sql for s in session.compile("dense").steps)
        if capabilities.fused_chains:        # one kernel call (tests/test_chains.py)
            assert sql.count("se_fused(") == 1
        else:
            assert ("FULL JOIN" in sql) == backend.dialect.full_join_on_true
        got = session.run("dense").outputs["D"]
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, expected, rtol=1e-12)
