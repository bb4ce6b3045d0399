"""The benchmark workloads (the `experiments` package) against NumPy and qiskit at small scale.

Every graph workload runs on Zachary's karate club under the optimizer's plan and
under the pure-relational plan; the quantum circuits run at 4-6 qubits and are
compared with qiskit's Statevector.
"""
from __future__ import annotations

import importlib.util

import numpy as np
import pytest
import scipy.sparse as sp

from experiments.quantum import (circuit_program, numpy_simulate, output_name,
                                 quantum_reference, quantum_workload)
from experiments.workloads import dense, workload
from sparse_einsum import Session

PLANS = ("optimal", "relational")
HAS_POSTGRES = importlib.util.find_spec("sparse_einsum.backends.postgres") is not None


def run(program, data: dict[str, object], *, backend,
        plan: str = "optimal") -> dict[str, np.ndarray]:
    """The outputs of a workload run as a user runs it: a Session, its plan, its run."""
    with Session(program, data, backend=backend) as session:
        return session.run(plan).outputs


def _relu(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, 0.0)


def reference(name: str, data: dict[str, object]) -> np.ndarray:
    """The workload computed directly with NumPy (dense arrays)."""
    d = {k: dense(v) for k, v in data.items()}
    if name == "gcn_layer":
        return _relu(d["A"] @ d["H"] @ d["W"])
    if name == "gcn2":
        n = d["d"][:, None] * d["A"] * d["d"][None, :]
        h = _relu(n @ d["X"] @ d["W1"])
        return n @ h @ d["W2"]
    if name == "sparse_attention":
        return (d["X"] @ d["WQ"]) @ (d["X"] @ d["WK"]).T * d["A"] * d["s"]
    if name == "dense_attention":
        return (d["X"] @ d["WQ"]) @ (d["X"] @ d["WK"]).T * d["s"]
    if name == "chain3":
        return d["A"] @ d["B"] @ d["C"]
    raise ValueError(name)


GRAPH_WORKLOADS = {"gcn_layer": "Y", "gcn2": "Y", "sparse_attention": "Attn",
                   "dense_attention": "Attn", "chain3": "Y"}


@pytest.fixture(scope="module")
def karate_data():
    return {name: workload(name, "karate", hidden=32, d_k=16) for name in GRAPH_WORKLOADS}


@pytest.mark.parametrize("plan", PLANS)
@pytest.mark.parametrize("name", list(GRAPH_WORKLOADS))
def test_graph_workload_duckdb(name, plan, karate_data, duck):
    path, data = karate_data[name]
    out = run(path, data, plan=plan, backend=duck)[GRAPH_WORKLOADS[name]]
    np.testing.assert_allclose(out, reference(name, data), rtol=1e-9, atol=1e-9)


def test_sparse_attention_is_masked(karate_data, duck):
    path, data = karate_data["sparse_attention"]
    out = run(path, data, backend=duck)["Attn"]
    mask = dense(data["A"]) != 0
    assert np.all(out[~mask] == 0) and np.count_nonzero(out[mask]) == mask.sum()


def test_workload_data_shapes():
    path, data = workload("gcn2", "karate", hidden=8)
    assert path.exists() and data["X"].shape == (34, 16) and data["W1"].shape == (16, 8)
    assert sp.issparse(data["A"]) and data["W2"].shape == (8, 2)


# -- quantum circuits -----------------------------------------------------------
CIRCUIT_CASES = [("qft", 5), ("multiplier", 6), ("quantum_volume", 4)]


@pytest.fixture(scope="module")
def circuits_data():
    return {case: quantum_workload(*case) for case in CIRCUIT_CASES}


def test_circuit_program_text():
    text = circuit_program(2)
    assert "input S0[d,j]" in text and "input G2[c,i,d,j]" in text
    assert "S2[c,i] = G2[c,i,d,j] * S1[d,j]" in text and text.rstrip().endswith("output S2")
    with pytest.raises(ValueError):
        circuit_program(0)


@pytest.mark.parametrize("case", CIRCUIT_CASES, ids=lambda c: f"{c[0]}-{c[1]}")
def test_circuit_numpy_matches_qiskit(case, circuits_data):
    _, data = circuits_data[case]
    np.testing.assert_allclose(numpy_simulate(data), quantum_reference(*case), atol=1e-9)


@pytest.mark.parametrize("plan", PLANS)
@pytest.mark.parametrize("case", CIRCUIT_CASES, ids=lambda c: f"{c[0]}-{c[1]}")
def test_circuit_duckdb_matches_qiskit(case, plan, circuits_data, duck):
    text, data = circuits_data[case]
    out = run(text, data, plan=plan, backend=duck)[output_name(data)]
    expected = quantum_reference(*case)
    assert np.abs(out - expected).max() < 1e-9
    assert abs(np.sum(out ** 2) - 1.0) < 1e-9      # still a unit vector


# -- PostgreSQL -------------------------------------------------------------------
needs_postgres = pytest.mark.skipif(not HAS_POSTGRES,
                                    reason="sparse_einsum.backends.postgres is not written yet")


@pytest.fixture(scope="module")
def pg_workloads(pg_kernels):
    """A PostgreSQL backend on the test server, with the kernels."""
    from sparse_einsum.backends import open_backend
    backend, _ = open_backend("postgres", dsn=pg_kernels)
    with backend:
        yield backend


@needs_postgres
@pytest.mark.parametrize("plan", PLANS)
def test_gcn2_postgres(plan, karate_data, pg_workloads):
    path, data = karate_data["gcn2"]
    out = run(path, data, plan=plan, backend=pg_workloads)["Y"]
    np.testing.assert_allclose(out, reference("gcn2", data), rtol=1e-9, atol=1e-9)


@needs_postgres
@pytest.mark.parametrize("plan", PLANS)
def test_sparse_attention_postgres(plan, karate_data, pg_workloads):
    path, data = karate_data["sparse_attention"]
    out = run(path, data, plan=plan, backend=pg_workloads)["Attn"]
    np.testing.assert_allclose(out, reference("sparse_attention", data), rtol=1e-9, atol=1e-9)


def test_bench_optimizer_counts_plans_the_same_time_within_noise_as_agreeing():
    """Two plans whose medians differ by less than the run-to-run noise rank in the
    estimate's order; a plan clearly apart keeps its measured rank."""
    from experiments.bench_optimizer import same_time, tied_ranks
    from experiments.harness import Timings
    runs = Timings({"a": [0.020, 0.022, 0.019, 0.025, 0.021],
                    "b": [0.019, 0.021, 0.020, 0.024, 0.018], "c": [0.50, 0.52, 0.49, 0.51, 0.50]})
    rows = [(name, 0.0, runs.median(name), 0.0, runs.noise(name)) for name in runs.samples]
    same = [[same_time(x, y, 5) for y in rows] for x in rows]
    assert same[0][1] and not same[0][2] and not same[1][2]
    medians = [r[2] for r in rows]
    assert tied_ranks(medians, same, [1.0, 2.0, 3.0]) == [1, 2, 3]
    assert tied_ranks(medians, same, [2.0, 1.0, 3.0]) == [2, 1, 3]
    apart = [[x is y for y in rows] for x in rows]
    assert tied_ranks(medians, apart, [1.0, 2.0, 3.0]) == [2, 1, 3]
