"""Tests for experiments.datasets and experiments.circuits (synthetic workloads)."""
from __future__ import annotations

import os
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
import scipy.sparse as sp

from experiments import datasets as ds

SMALL = ["cora", "citeseer", "amazon-photo"]


@pytest.fixture(scope="module")
def graphs() -> dict[str, object]:
    return {name: ds.make_graph(name) for name in SMALL + ["karate"]}


# ------------------------------------------------------------------ graphs

@pytest.mark.parametrize("name", SMALL)
def test_sizes_match_targets(graphs: dict, name: str) -> None:
    g, size = graphs[name], ds.GRAPH_SIZES[name]
    assert g.adjacency.shape == (size.nodes, size.nodes)
    assert abs(g.adjacency.nnz - size.edges) <= 0.02 * size.edges
    assert g.features.shape == (size.nodes, size.features)
    assert g.num_classes == size.classes
    assert g.labels.shape == (size.nodes,) and g.labels.dtype.kind == "i"
    assert set(np.unique(g.labels)) == set(range(size.classes))
    assert g.adjacency.dtype == np.float64 and sp.isspmatrix_csr(g.adjacency)


@pytest.mark.parametrize("name", SMALL + ["karate"])
def test_adjacency_is_simple_and_symmetric(graphs: dict, name: str) -> None:
    a = graphs[name].adjacency
    assert (a != a.T).nnz == 0
    assert a.diagonal().sum() == 0  # no self loops before normalisation
    assert np.all(a.data == 1.0)  # 0/1: no merged duplicates
    b = a.copy()
    b.sum_duplicates()
    assert b.nnz == a.nnz  # no duplicate stored entries


@pytest.mark.parametrize("name", ["cora", "amazon-photo"])
def test_power_law_degrees(graphs: dict, name: str) -> None:
    st = ds.degree_stats(graphs[name].adjacency)
    assert st["min"] >= 1  # anchor edges: no isolated nodes
    assert st["max"] > 10 * st["mean"]  # heavy tail
    assert 2.0 < st["alpha"] < 3.5  # tail exponent of a typical real-world graph


def test_features(graphs: dict) -> None:
    for name in ("cora", "citeseer"):
        x = graphs[name].features
        assert sp.isspmatrix_csr(x) and x.dtype == np.float64
        assert np.all(x.data == 1.0)
        density = x.nnz / (x.shape[0] * x.shape[1])
        assert 0.005 < density < 0.02
        assert x.nnz == ds.SPARSE_FEATURE_NNZ[name]
    x = graphs["amazon-photo"].features
    assert isinstance(x, np.ndarray) and x.dtype == np.float64


def test_determinism() -> None:
    g1, g2, g3 = ds.make_graph("cora", seed=3), ds.make_graph("cora", seed=3), ds.make_graph("cora", seed=4)
    for attr in ("indptr", "indices", "data"):
        assert np.array_equal(getattr(g1.adjacency, attr), getattr(g2.adjacency, attr))
        assert np.array_equal(getattr(g1.features, attr), getattr(g2.features, attr))
    assert np.array_equal(g1.labels, g2.labels)
    assert (g1.adjacency != g3.adjacency).nnz > 0
    k1, k2 = ds.make_graph("karate", seed=1), ds.make_graph("karate", seed=1)
    assert np.array_equal(k1.features, k2.features)


def test_karate_is_the_real_graph(graphs: dict) -> None:
    g = graphs["karate"]
    assert g.adjacency.shape == (34, 34) and g.adjacency.nnz == 156
    assert g.adjacency[0, 1] == 1.0 and g.adjacency[0, 33] == 0.0  # 0-1 edge, no 0-33 edge
    assert np.bincount(g.labels).tolist() == [17, 17]
    assert g.labels[0] == 0 and g.labels[33] == 1
    assert g.features.shape == (34, 16)


def test_normalized_adjacency_matches_dense(graphs: dict) -> None:
    a = graphs["karate"].adjacency.toarray()
    a_hat = a + np.eye(len(a))
    d = np.diag(1.0 / np.sqrt(a_hat.sum(axis=1)))
    got = ds.normalized_adjacency(graphs["karate"].adjacency)
    assert sp.isspmatrix_csr(got)
    np.testing.assert_allclose(got.toarray(), d @ a_hat @ d, rtol=0, atol=1e-14)


def test_ogbn_arxiv_size() -> None:
    g = ds.make_graph("ogbn-arxiv")
    size = ds.GRAPH_SIZES["ogbn-arxiv"]
    assert g.adjacency.shape == (size.nodes, size.nodes)
    assert abs(g.adjacency.nnz - size.edges) <= 0.02 * size.edges
    assert g.features.shape == (size.nodes, size.features)


# ------------------------------------------------------------------ database export

def _read_coo(rows: list[tuple], shape: tuple[int, int]) -> np.ndarray:
    arr = np.array(rows, dtype=np.float64).reshape(-1, 3)
    out = np.zeros(shape)
    out[arr[:, 0].astype(int), arr[:, 1].astype(int)] = arr[:, 2]
    return out


def _check_round_trip(fetch, graph, prefix: str, normalize: bool) -> None:
    """fetch(table, columns) -> list of rows; compares the tables with the matrices."""
    n = graph.num_nodes
    adj = ds.normalized_adjacency(graph.adjacency) if normalize else graph.adjacency
    edges = fetch(f"{prefix}_edges", ("src", "dst", "weight"))
    assert len(edges) == adj.nnz
    np.testing.assert_array_equal(_read_coo(edges, (n, n)), adj.toarray())
    feats = fetch(f"{prefix}_features", ("node", "feature", "value"))
    dense = graph.features.toarray() if sp.issparse(graph.features) else graph.features
    assert len(feats) == np.count_nonzero(dense)
    np.testing.assert_array_equal(_read_coo(feats, dense.shape), dense)


@pytest.mark.parametrize("name,normalize", [("karate", False), ("karate", True), ("cora", False)])
def test_duckdb_round_trip(graphs: dict, name: str, normalize: bool) -> None:
    duckdb = pytest.importorskip("duckdb")
    con = duckdb.connect()
    prefix = 'we"ird prefix'
    counts = ds.write_graph_duckdb(graphs[name], con, prefix, normalize=normalize, with_labels=True)
    assert counts["edges"] == graphs[name].adjacency.nnz + (graphs[name].num_nodes if normalize else 0)

    def fetch(table: str, cols: tuple[str, ...]) -> list[tuple]:
        return con.execute(f"SELECT {', '.join(cols)} FROM {ds.duckdb_ident(table)}").fetchall()

    _check_round_trip(fetch, graphs[name], prefix, normalize)
    types = con.execute("SELECT column_name, data_type FROM information_schema.columns "
                        "WHERE table_name = ? ORDER BY ordinal_position", [f"{prefix}_edges"]).fetchall()
    assert types == [("src", "BIGINT"), ("dst", "BIGINT"), ("weight", "DOUBLE")]
    labels = con.execute(f"SELECT label FROM {ds.duckdb_ident(prefix + '_labels')} ORDER BY node").fetchall()
    assert [r[0] for r in labels] == graphs[name].labels.tolist()
    ds.write_graph_duckdb(graphs[name], con, prefix)  # replaces existing tables
    con.close()


@pytest.mark.skipif(not os.environ.get("SE_TEST_PG_DSN"), reason="SE_TEST_PG_DSN not set")
@pytest.mark.parametrize("name", ["karate", "cora"])
def test_postgres_round_trip(graphs: dict, name: str) -> None:
    psycopg = pytest.importorskip("psycopg")
    from psycopg import sql

    prefix = f'se test "{name}"'
    with psycopg.connect(os.environ["SE_TEST_PG_DSN"]) as conn:
        ds.write_graph_postgres(graphs[name], conn, prefix, chunk_rows=1000)

        def fetch(table: str, cols: tuple[str, ...]) -> list[tuple]:
            q = sql.SQL("SELECT {} FROM {}").format(
                sql.SQL(", ").join(sql.Identifier(c) for c in cols), sql.Identifier(table))
            return conn.execute(q).fetchall()

        try:
            _check_round_trip(fetch, graphs[name], prefix, False)
        finally:
            for kind in ("edges", "features"):
                conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(f"{prefix}_{kind}")))
            conn.commit()


def test_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert ds._main(["--list"]) == 0
    assert "ogbn-arxiv" in capsys.readouterr().out
    assert ds._main(["--write", str(tmp_path), "karate"]) == 0
    duckdb = pytest.importorskip("duckdb")
    con = duckdb.connect()
    n = con.execute("SELECT count(*) FROM read_parquet(?)", [str(tmp_path / "karate_edges.parquet")]).fetchone()
    con.close()
    assert n == (156,)
    assert (tmp_path / "karate_meta.json").exists()


# ------------------------------------------------------------------ quantum circuits

@pytest.fixture(scope="module")
def qc() -> ModuleType:
    pytest.importorskip("qiskit")
    from experiments import circuits
    return circuits


@pytest.mark.parametrize("kind,n", [(k, n) for k in ("qft", "multiplier", "quantum_volume")
                                    for n in (4, 6)] + [("qft", 5), ("quantum_volume", 5)])
def test_real_pair_simulation_matches_statevector(qc: ModuleType, kind: str, n: int) -> None:
    circ = qc.circuit(kind, n, seed=1)
    assert circ.num_qubits == n
    gates = [qc.real_gate(u) for u in qc.layer_unitaries(circ)]
    assert len(gates) > 1 and all(g.shape == (2, 2 ** n, 2, 2 ** n) for g in gates)
    state = qc.initial_state(n)
    for g in gates:
        state = np.einsum("cidj,dj->ci", g, state)
    np.testing.assert_allclose(qc.complex_state(state), qc.reference_statevector(circ), rtol=0, atol=1e-9)
    # from a random initial state as well
    rng = np.random.default_rng(n)
    psi = rng.standard_normal(2 ** n) + 1j * rng.standard_normal(2 ** n)
    psi /= np.linalg.norm(psi)
    got = qc.complex_state(qc.simulate_real(gates, qc.real_state(psi)))
    np.testing.assert_allclose(got, qc.reference_statevector(circ, psi), rtol=0, atol=1e-9)


def test_real_representation(qc: ModuleType) -> None:
    rng = np.random.default_rng(0)
    u = rng.standard_normal((8, 8)) + 1j * rng.standard_normal((8, 8))
    x = rng.standard_normal(8) + 1j * rng.standard_normal(8)
    np.testing.assert_allclose(qc.complex_state(qc.real_state(x)), x)
    s = np.einsum("cidj,dj->ci", qc.real_gate(u), qc.real_state(x))
    np.testing.assert_allclose(qc.complex_state(s), u @ x, atol=1e-12)
    block = qc.real_block(u) @ np.concatenate([x.real, x.imag])
    np.testing.assert_allclose(block[:8] + 1j * block[8:], u @ x, atol=1e-12)


def test_circuit_errors(qc: ModuleType) -> None:
    with pytest.raises(ValueError):
        qc.circuit("nope", 4)
    with pytest.raises(ValueError):
        qc.circuit("qft", 11)
    with pytest.raises(ValueError):
        qc.circuit("multiplier", 5)
