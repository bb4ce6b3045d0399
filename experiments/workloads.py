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
WORKLOADS = ("gcn_layer", "gcn2", "sparse_attention", "dense_attention", "chain3")


def _features(graph: Graph):
    return graph.features


def workload(name: str, dataset: str, *, hidden: int = 256, d_k: int = 1024, seed: int = 0
             ) -> tuple[Path, dict[str, object]]:
    """The program file of a workload and its input data on a generated data set."""
    graph = make_graph(dataset, seed=seed)
    rng = np.random.default_rng(seed)
    x = _features(graph)
    width = x.shape[1]
    if name == "gcn_layer":
        data = {"A": normalized_adjacency(graph.adjacency), "H": x,
                "W": rng.normal(scale=width ** -0.5, size=(width, hidden))}
    elif name == "gcn2":
        a = (graph.adjacency + sp.identity(graph.adjacency.shape[0], format="csr")).tocsr()
        degree = np.asarray(a.sum(axis=1)).ravel()
        data = {"A": a, "d": 1.0 / np.sqrt(degree), "X": x,
                "W1": rng.normal(scale=width ** -0.5, size=(width, hidden)),
                "W2": rng.normal(scale=hidden ** -0.5, size=(hidden, graph.num_classes))}
    elif name in ("sparse_attention", "dense_attention"):
        data = {"X": x, "WQ": rng.normal(scale=width ** -0.5, size=(width, d_k)),
                "WK": rng.normal(scale=width ** -0.5, size=(width, d_k)),
                "s": np.array(1.0 / np.sqrt(d_k))}
        if name == "sparse_attention":
            data["A"] = graph.adjacency
    elif name == "chain3":
        data = {"A": normalized_adjacency(graph.adjacency), "B": x,
                "C": rng.normal(scale=width ** -0.5, size=(width, hidden))}
    else:
        raise ValueError(f"unknown workload {name!r}; choose from {', '.join(WORKLOADS)}")
    return PROGRAMS / f"{name}.se", data


def dense(x) -> np.ndarray:
    return x.toarray() if sp.issparse(x) else np.asarray(x)
