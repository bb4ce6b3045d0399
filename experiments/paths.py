"""Graph workloads over semirings: shortest paths (min-plus), reachability levels
(or-and) and Viterbi decoding (max-times), each step an einsum or a program in SQL, and
what a user of scipy or NumPy would write instead.

Shortest distances from a source are repeated min-plus steps ``D'[j] = min_i D[i] + W[i,j]``
until nothing changes (Bellman-Ford), on the graph with a 0-weight loop at every node so
that a step keeps the distances it had; an absent edge, like an unreached node, is inf.
"""
from __future__ import annotations

import time
from typing import Callable

import numpy as np
import scipy.sparse as sp

import sparse_einsum as se

STEP = """input D[i] default inf
input W[i,j] default inf
N[j] = min(D[i] + W[i,j])
"""


def with_loops(graph: sp.sparray) -> sp.csr_array:
    """The graph (weights >= 0, explicit zeros are edges) with a 0-weight loop at every
    node: a min-plus step with it keeps every distance it improves on."""
    coo = sp.coo_array(graph)
    n = coo.shape[0]
    off = coo.row != coo.col
    rows = np.concatenate([coo.row[off], np.arange(n)])
    cols = np.concatenate([coo.col[off], np.arange(n)])
    data = np.concatenate([coo.data[off].astype(np.float64), np.zeros(n)])
    return sp.csr_array((data, (rows, cols)), shape=coo.shape)


def shortest_paths(graph: sp.sparray, source: int, *, backend: object = "duckdb",
                   on_step: Callable[[np.ndarray, np.ndarray, float], None] | None = None,
                   **options) -> tuple[np.ndarray, int]:
    """Distances from `source` (inf where unreachable) by min-plus steps in SQL until
    nothing changes, and the number of steps; `on_step(before, after, seconds)` after
    each step."""
    looped = with_loops(graph)
    distances = np.full(graph.shape[0], np.inf)
    distances[source] = 0.0
    # planned for distances finite everywhere, as the steps make them (planned for the
    # source alone, a plan that suits one finite distance would serve every step)
    reached = np.zeros(graph.shape[0])
    with se.prepare(STEP, {"D": reached, "W": looped}, backend=backend, **options) as step:
        for count in range(1, graph.shape[0] + 1):
            start = time.perf_counter()
            new = step({"D": distances, "W": looped})["N"]
            if on_step:
                on_step(distances, new, time.perf_counter() - start)
            if np.array_equal(new, distances):
                return distances, count
            distances = new
    raise AssertionError("a min-plus step still changed distances after n steps")


def scipy_step(distances: np.ndarray, looped_csc: sp.csc_array) -> np.ndarray:
    """The same min-plus step in scipy/NumPy: over the columns of the looped graph (CSC),
    the smallest distance of a row plus its edge weight."""
    candidates = distances[looped_csc.indices] + looped_csc.data
    starts = looped_csc.indptr[:-1]
    return np.minimum.reduceat(candidates, starts)     # every column holds its loop


def reachability_levels(graph: sp.sparray, source: int, *, backend: object = "duckdb"
                        ) -> np.ndarray:
    """The number of edges on a shortest path from `source` to each node (-1 where
    unreachable): or-and steps ``F'[j] = or_i F[i] and A[i,j]`` from the frontier."""
    adjacency = sp.csr_array(graph, dtype=bool)
    levels = np.full(graph.shape[0], -1)
    frontier = np.zeros(graph.shape[0], dtype=bool)
    frontier[source] = True
    level = 0
    while frontier.any():
        levels[frontier] = level
        reached = se.einsum("i,ij->j", frontier, adjacency, semiring="or_and",
                            backend=backend, format="dense")
        frontier = reached & (levels < 0)
        level += 1
    return levels


def viterbi(transitions: np.ndarray, emissions: np.ndarray, start: np.ndarray,
            observations: list[int], *, backend: object = "duckdb") -> tuple[np.ndarray, float]:
    """The most likely state sequence of a hidden Markov model and its probability:
    max-times steps ``P'[j] = max_i P[i] T[i,j] E[j,o]`` in SQL, then the backtrack."""
    best = start * emissions[:, observations[0]]
    back = []
    for o in observations[1:]:
        scores = se.einsum("i,ij,j->ij", best, transitions, emissions[:, o],
                           semiring="max_times", backend=backend)
        back.append(np.argmax(scores, axis=0))
        best = se.einsum("ij->j", scores, semiring="max_times", backend=backend)
    path = [int(np.argmax(best))]
    for pointers in reversed(back):
        path.append(int(pointers[path[-1]]))
    return np.array(path[::-1]), float(best.max())


def numpy_viterbi(transitions: np.ndarray, emissions: np.ndarray, start: np.ndarray,
                  observations: list[int]) -> tuple[np.ndarray, float]:
    """Viterbi decoding in NumPy (the reference)."""
    best = start * emissions[:, observations[0]]
    back = []
    for o in observations[1:]:
        scores = best[:, None] * transitions * emissions[None, :, o]
        back.append(np.argmax(scores, axis=0))
        best = scores.max(axis=0)
    path = [int(np.argmax(best))]
    for pointers in reversed(back):
        path.append(int(pointers[path[-1]]))
    return np.array(path[::-1]), float(best.max())


def random_graph(nodes: int, edges: int, seed: int = 0) -> sp.csr_array:
    """A directed graph with `edges` random edges (duplicates kept once) of weights in
    [1, 10)."""
    rng = np.random.default_rng(seed)
    rows, cols = rng.integers(0, nodes, edges), rng.integers(0, nodes, edges)
    weights = rng.uniform(1.0, 10.0, edges)
    graph = sp.coo_array((weights, (rows, cols)), shape=(nodes, nodes)).tocsr()
    graph.sum_duplicates()
    return graph
