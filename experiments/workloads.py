"""The benchmark workloads: program files in experiments/programs and the data each needs.

    from experiments.workloads import workload
    program_path, data = workload("gcn_layer", "cora")
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import scipy.sparse as sp

from .datasets import Graph, make_graph, normalized_adjacency

PROGRAMS = Path(__file__).parent / "programs"


def _gcn_layer(graph: Graph, weights, hidden: int, d_k: int) -> dict[str, object]:
    return {"A": normalized_adjacency(graph.adjacency), "H": graph.features,
            "W": weights(graph.features.shape[1], hidden)}


def _gcn2(graph: Graph, weights, hidden: int, d_k: int) -> dict[str, object]:
    a = (graph.adjacency + sp.identity(graph.adjacency.shape[0], format="csr")).tocsr()
    degree = np.asarray(a.sum(axis=1)).ravel()
    return {"A": a, "d": 1.0 / np.sqrt(degree), "X": graph.features,
            "W1": weights(graph.features.shape[1], hidden),
            "W2": weights(hidden, graph.num_classes)}


def _dense_attention(graph: Graph, weights, hidden: int, d_k: int) -> dict[str, object]:
    width = graph.features.shape[1]
    return {"X": graph.features, "WQ": weights(width, d_k), "WK": weights(width, d_k),
            "s": np.array(1.0 / np.sqrt(d_k))}


def _sparse_attention(graph: Graph, weights, hidden: int, d_k: int) -> dict[str, object]:
    return {**_dense_attention(graph, weights, hidden, d_k), "A": graph.adjacency}


def _chain3(graph: Graph, weights, hidden: int, d_k: int) -> dict[str, object]:
    return {"A": normalized_adjacency(graph.adjacency), "B": graph.features,
            "C": weights(graph.features.shape[1], hidden)}


# workload -> its data on a graph; the program is PROGRAMS/<workload>.se
WORKLOADS = {"gcn_layer": _gcn_layer, "gcn2": _gcn2, "sparse_attention": _sparse_attention,
             "dense_attention": _dense_attention, "chain3": _chain3}


def workload(name: str, dataset: str, *, hidden: int = 256, d_k: int = 1024, seed: int = 0
             ) -> tuple[Path, dict[str, object]]:
    """The program file of a workload and its input data on a generated data set; weights
    are normal with variance 1 / (their rows)."""
    if name not in WORKLOADS:
        raise ValueError(f"unknown workload {name!r}; choose from {', '.join(WORKLOADS)}")
    graph = make_graph(dataset, seed=seed)
    rng = np.random.default_rng(seed)

    def weights(rows: int, cols: int) -> np.ndarray:
        return rng.normal(scale=rows ** -0.5, size=(rows, cols))
    return PROGRAMS / f"{name}.se", WORKLOADS[name](graph, weights, hidden, d_k)


def dense(x) -> np.ndarray:
    return x.toarray() if sp.issparse(x) else np.asarray(x)
