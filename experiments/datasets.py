"""Synthetic stand-ins for the paper's graph data sets (§9), seeded and deterministic.

Nothing is downloaded: every graph except Zachary's karate club (which ships with
networkx) is a Chung-Lu random graph with power-law expected degrees, sized like
the real data set (nodes, directed edge entries, feature width, classes).

Usage::

    python -m experiments.datasets --list
    python -m experiments.datasets --time
    python -m experiments.datasets --write DIR NAME [--seed S]
"""
from __future__ import annotations

import argparse
import json
import sys
import time
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
import scipy.sparse as sp


@dataclass(frozen=True)
class GraphSize:
    """Published size of a data set; ``edges`` counts each undirected edge twice (= nnz of A)."""
    nodes: int
    edges: int
    features: int
    classes: int


GRAPH_SIZES: dict[str, GraphSize] = {
    "karate": GraphSize(34, 156, 16, 2),
    "cora": GraphSize(2_708, 10_556, 1_433, 7),
    "citeseer": GraphSize(3_327, 9_104, 3_703, 6),
    "amazon-photo": GraphSize(7_650, 238_162, 745, 8),
    "amazon-computers": GraphSize(13_752, 491_722, 767, 10),
    "ogbn-arxiv": GraphSize(169_343, 1_166_243, 128, 40),
    "ogbn-products": GraphSize(2_449_029, 61_859_140, 100, 47),
}

# Non-zeros of the original binary bag-of-words matrices (Cora 1.27 %, CiteSeer 0.85 %).
SPARSE_FEATURE_NNZ: dict[str, int] = {"cora": 49_216, "citeseer": 105_165}

POWER_LAW_GAMMA = 2.5    # exponent of the expected-degree distribution P(w) ~ w^-gamma
HUB_CAP_FACTOR = 2.0     # largest expected degree = HUB_CAP_FACTOR * sqrt(sum of degrees)


@dataclass
class Graph:
    """A node-classification graph: adjacency (CSR, symmetric, 0/1), features, labels."""
    name: str
    adjacency: sp.csr_matrix
    features: sp.csr_matrix | np.ndarray
    labels: np.ndarray
    num_classes: int

    @property
    def num_nodes(self) -> int:
        return int(self.adjacency.shape[0])

    @property
    def num_edges(self) -> int:
        """Directed entries (each undirected edge counted twice)."""
        return int(self.adjacency.nnz)


def _rng(name: str, seed: int) -> np.random.Generator:
    """Generator keyed by (seed, data-set name), stable across runs and platforms."""
    return np.random.default_rng([seed, zlib.crc32(name.encode())])


def powerlaw_weights(n: int, total: float, gamma: float = POWER_LAW_GAMMA,
                     cap: float | None = None) -> np.ndarray:
    """Expected degrees ``w_i = c (i + i0)^(-1/(gamma-1))``, descending, summing to ``total``.

    The offset ``i0`` is found by bisection so that the largest weight equals ``cap``
    (default ``HUB_CAP_FACTOR * sqrt(total)``, clipped to ``n - 1``).
    """
    a = 1.0 / (gamma - 1.0)
    cap = min(HUB_CAP_FACTOR * np.sqrt(total) if cap is None else cap, n - 1.0)
    cap = max(cap, total / n)
    idx = np.arange(n, dtype=np.float64)

    def weights(i0: float) -> np.ndarray:
        w = (idx + i0) ** -a
        return w * (total / w.sum())

    lo, hi = 1e-9, 1e12  # weights(lo)[0] is huge, weights(hi) is nearly flat
    for _ in range(200):
        mid = np.sqrt(lo * hi)
        if weights(mid)[0] > cap:
            lo = mid
        else:
            hi = mid
        if hi / lo < 1 + 1e-9:
            break
    return weights(hi)


def _sample_index(rng: np.random.Generator, cdf: np.ndarray, size: int) -> np.ndarray:
    """``size`` draws from the discrete distribution with cumulative sums ``cdf``."""
    out = np.searchsorted(cdf, rng.random(size) * cdf[-1], side="right")
    return np.minimum(out, len(cdf) - 1).astype(np.int64)


def _sample_unique_keys(rng: np.random.Generator, target: int,
                        draw: Callable[[int], np.ndarray],
                        fixed: np.ndarray | None = None) -> np.ndarray:
    """Sorted int64 array of exactly ``target`` distinct keys: all of ``fixed`` plus keys
    from ``draw(k)`` (batches of valid keys) until enough exist, of which a uniformly
    random subset is kept."""
    fixed = np.unique(np.empty(0, dtype=np.int64) if fixed is None else fixed)
    if len(fixed) > target:
        raise ValueError(f"{len(fixed)} fixed keys exceed the target {target}")
    extra = np.empty(0, dtype=np.int64)
    for _ in range(1000):
        missing = target - len(fixed) - len(extra)
        if missing <= 0:
            break
        batch = np.setdiff1d(draw(int(missing * 1.1) + 64), fixed, assume_unique=False)
        extra = np.union1d(extra, batch)
    else:
        raise RuntimeError(f"could not draw {target} distinct keys")
    want = target - len(fixed)
    if len(extra) > want:
        extra = extra[np.sort(rng.choice(len(extra), size=want, replace=False))]
    return np.union1d(fixed, extra)


def chung_lu(n: int, num_undirected: int, rng: np.random.Generator,
             gamma: float = POWER_LAW_GAMMA) -> sp.csr_matrix:
    """Symmetric 0/1 CSR adjacency with exactly ``num_undirected`` edges (2x that many
    non-zeros), no self loops, no duplicates, power-law expected degrees.

    Chung-Lu by edge sampling: both endpoints are drawn with probability proportional to
    the weights ``w``; duplicates and self pairs are discarded and sampling continues
    until the edge count is exact. When there are more edges than nodes, every node
    first gets one "anchor" edge to a ``w``-distributed partner (no isolated nodes), so
    the expected degree is ``1 + w_i``. Node ids are randomly permuted at the end.
    """
    anchored = num_undirected > n
    total = 2.0 * num_undirected - (n if anchored else 0)
    cap = HUB_CAP_FACTOR * np.sqrt(2.0 * num_undirected) - (1 if anchored else 0)
    w = powerlaw_weights(n, total, gamma, cap)
    cdf = np.cumsum(w)

    def pair_keys(u: np.ndarray, v: np.ndarray) -> np.ndarray:
        keep = u != v
        return np.minimum(u[keep], v[keep]) * n + np.maximum(u[keep], v[keep])

    fixed = None
    if anchored:
        src = np.arange(n, dtype=np.int64)
        dst = _sample_index(rng, cdf, n)
        for _ in range(100):
            clash = np.flatnonzero(dst == src)
            if len(clash) == 0:
                break
            dst[clash] = _sample_index(rng, cdf, len(clash))
        fixed = pair_keys(src, dst)

    keys = _sample_unique_keys(
        rng, num_undirected,
        lambda k: pair_keys(_sample_index(rng, cdf, k), _sample_index(rng, cdf, k)), fixed)
    perm = rng.permutation(n)
    u, v = perm[keys // n], perm[keys % n]
    rows, cols = np.concatenate([u, v]), np.concatenate([v, u])
    a = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(n, n), dtype=np.float64)
    a.sort_indices()
    return a


def bag_of_words(n: int, vocab: int, nnz: int, rng: np.random.Generator) -> sp.csr_matrix:
    """Binary ``n x vocab`` CSR with exactly ``nnz`` ones: log-normal document lengths and
    Zipf-distributed word popularity (shuffled over the vocabulary)."""
    doc_cdf = np.cumsum(rng.lognormal(mean=0.0, sigma=0.35, size=n))
    word_w = 1.0 / (np.arange(vocab) + 10.0)
    word_cdf = np.cumsum(word_w[rng.permutation(vocab)])

    def draw(k: int) -> np.ndarray:
        return _sample_index(rng, doc_cdf, k) * vocab + _sample_index(rng, word_cdf, k)

    keys = _sample_unique_keys(rng, nnz, draw)
    x = sp.csr_matrix((np.ones(len(keys)), (keys // vocab, keys % vocab)),
                      shape=(n, vocab), dtype=np.float64)
    x.sort_indices()
    return x


def karate(seed: int = 0) -> Graph:
    """Zachary's karate club (real, from networkx): 34 nodes, 78 edges, labels from 'club'."""
    import networkx as nx

    g = nx.karate_club_graph()
    nodes = sorted(g.nodes)
    a = sp.csr_matrix(nx.to_scipy_sparse_array(g, nodelist=nodes, weight=None, dtype=np.float64))
    a.sort_indices()
    labels = np.array([0 if g.nodes[v]["club"] == "Mr. Hi" else 1 for v in nodes], dtype=np.int64)
    size = GRAPH_SIZES["karate"]
    feats = _rng("karate", seed).standard_normal((size.nodes, size.features))
    return Graph("karate", a, feats, labels, size.classes)


def make_graph(name: str, seed: int = 0) -> Graph:
    """Deterministic synthetic graph sized like data set ``name`` (a key of GRAPH_SIZES)."""
    if name not in GRAPH_SIZES:
        raise ValueError(f"unknown data set {name!r}; choose from {sorted(GRAPH_SIZES)}")
    if name == "karate":
        return karate(seed)
    size = GRAPH_SIZES[name]
    rng = _rng(name, seed)
    adjacency = chung_lu(size.nodes, size.edges // 2, rng)
    features: sp.csr_matrix | np.ndarray
    if name in SPARSE_FEATURE_NNZ:
        features = bag_of_words(size.nodes, size.features, SPARSE_FEATURE_NNZ[name], rng)
    else:
        features = rng.standard_normal((size.nodes, size.features))
    labels = rng.integers(0, size.classes, size=size.nodes, dtype=np.int64)
    return Graph(name, adjacency, features, labels, size.classes)


def normalized_adjacency(a: sp.spmatrix | sp.sparray) -> sp.csr_matrix:
    """GCN propagation matrix ``D^-1/2 (A + I) D^-1/2`` with ``D`` the degrees of ``A + I``."""
    a = sp.csr_matrix(a, dtype=np.float64)
    a_hat = (a + sp.identity(a.shape[0], dtype=np.float64, format="csr")).tocsr()
    deg = np.asarray(a_hat.sum(axis=1)).ravel()
    inv_sqrt = np.zeros_like(deg)
    np.divide(1.0, np.sqrt(deg), out=inv_sqrt, where=deg > 0)
    d = sp.diags(inv_sqrt, format="csr")
    out = (d @ a_hat @ d).tocsr()
    out.sort_indices()
    return out


def degree_stats(a: sp.spmatrix | sp.sparray, dmin: int | None = None) -> dict[str, float]:
    """Degree summary plus the discrete power-law MLE exponent of the tail ``deg >= dmin``
    (Clauset et al. approximation; default ``dmin`` = 2 x mean degree)."""
    deg = np.diff(sp.csr_matrix(a).indptr).astype(np.float64)
    mean = float(deg.mean())
    dmin = max(1, int(round(2 * mean))) if dmin is None else dmin
    tail = deg[deg >= dmin]
    alpha = 1.0 + len(tail) / np.log(tail / (dmin - 0.5)).sum() if len(tail) else float("nan")
    return {"min": float(deg.min()), "median": float(np.median(deg)), "mean": mean,
            "max": float(deg.max()), "isolated": float((deg == 0).sum()),
            "tail_dmin": float(dmin), "tail_nodes": float(len(tail)), "alpha": float(alpha)}


# ---------------------------------------------------------------- COO export

def _coo(m: sp.spmatrix | np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(row, col, value) int64/int64/float64 arrays of the non-zeros, row-major order."""
    if sp.issparse(m):
        c = sp.csr_matrix(m)
        c.sort_indices()
        c = c.tocoo()
        keep = c.data != 0
        return c.row.astype(np.int64)[keep], c.col.astype(np.int64)[keep], c.data.astype(np.float64)[keep]
    m = np.asarray(m, dtype=np.float64)
    r, c = np.nonzero(m)
    return r.astype(np.int64), c.astype(np.int64), m[r, c]


def graph_tables(graph: Graph, normalize: bool = False,
                 with_labels: bool = False) -> dict[str, dict[str, np.ndarray]]:
    """Column arrays of the relational tables: ``edges(src, dst, weight)``,
    ``features(node, feature, value)`` and optionally ``labels(node, label)``."""
    adj = normalized_adjacency(graph.adjacency) if normalize else graph.adjacency
    s, d, w = _coo(adj)
    n, f, v = _coo(graph.features)
    tables = {"edges": {"src": s, "dst": d, "weight": w},
              "features": {"node": n, "feature": f, "value": v}}
    if with_labels:
        tables["labels"] = {"node": np.arange(len(graph.labels), dtype=np.int64),
                            "label": graph.labels.astype(np.int64)}
    return tables


_SQL_TYPES = {"weight": "DOUBLE", "value": "DOUBLE"}  # every other column is BIGINT


def duckdb_ident(name: str) -> str:
    """DuckDB-quoted identifier (double quotes, embedded quotes doubled)."""
    return '"' + name.replace('"', '""') + '"'


def write_graph_duckdb(graph: Graph, con: Any, prefix: str, *, normalize: bool = False,
                       with_labels: bool = False) -> dict[str, int]:
    """(Re)create ``{prefix}_edges`` / ``{prefix}_features`` (and ``{prefix}_labels``) in
    DuckDB from Arrow tables (no per-row Python); returns row counts per table."""
    import pyarrow as pa

    counts: dict[str, int] = {}
    for kind, cols in graph_tables(graph, normalize, with_labels).items():
        view = f"__se_import_{kind}"
        con.register(view, pa.table({k: pa.array(v) for k, v in cols.items()}))
        try:
            select = ", ".join(f"CAST({duckdb_ident(c)} AS {_SQL_TYPES.get(c, 'BIGINT')}) "
                               f"AS {duckdb_ident(c)}" for c in cols)
            con.execute(f"CREATE OR REPLACE TABLE {duckdb_ident(f'{prefix}_{kind}')} AS "
                        f"SELECT {select} FROM {duckdb_ident(view)}")
        finally:
            con.unregister(view)
        counts[kind] = len(next(iter(cols.values())))
    return counts


_PGCOPY_HEADER = b"PGCOPY\n\xff\r\n\x00" + (0).to_bytes(4, "big") + (0).to_bytes(4, "big")
_PGCOPY_TRAILER = (-1).to_bytes(2, "big", signed=True)


def pg_binary_copy_rows(cols: dict[str, np.ndarray], start: int = 0, stop: int | None = None) -> bytes:
    """Rows ``start:stop`` in PostgreSQL binary COPY tuple format (no header/trailer),
    built with a packed big-endian NumPy record array; columns are int8 or float8."""
    names = list(cols)
    stop = len(cols[names[0]]) if stop is None else stop
    dtype = [("nfields", ">i2")]
    for c in names:
        dtype += [(f"len_{c}", ">i4"), (c, ">f8" if _SQL_TYPES.get(c) == "DOUBLE" else ">i8")]
    rec = np.empty(stop - start, dtype=np.dtype(dtype))
    rec["nfields"] = len(names)
    for c in names:
        rec[f"len_{c}"] = 8
        rec[c] = cols[c][start:stop]
    return rec.tobytes()


def write_graph_postgres(graph: Graph, conn: Any, prefix: str, *, normalize: bool = False,
                         with_labels: bool = False, chunk_rows: int = 1 << 20) -> dict[str, int]:
    """(Re)create ``{prefix}_edges`` / ``{prefix}_features`` (and ``{prefix}_labels``) in
    PostgreSQL with binary ``COPY ... FROM STDIN`` built by NumPy; commits unless called
    inside an open transaction (then it nests as a savepoint)."""
    from psycopg import sql

    counts: dict[str, int] = {}
    with conn.transaction(), conn.cursor() as cur:
        for kind, cols in graph_tables(graph, normalize, with_labels).items():
            table = sql.Identifier(f"{prefix}_{kind}")
            coldefs = sql.SQL(", ").join(
                sql.SQL("{} {}").format(sql.Identifier(c), sql.SQL(
                    "DOUBLE PRECISION" if _SQL_TYPES.get(c) == "DOUBLE" else "BIGINT"))
                for c in cols)
            cur.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(table))
            cur.execute(sql.SQL("CREATE TABLE {} ({})").format(table, coldefs))
            names = sql.SQL(", ").join(sql.Identifier(c) for c in cols)
            n = len(next(iter(cols.values())))
            with cur.copy(sql.SQL("COPY {} ({}) FROM STDIN WITH (FORMAT BINARY)")
                          .format(table, names)) as copy:
                copy.write(_PGCOPY_HEADER)
                for start in range(0, n, chunk_rows):
                    copy.write(pg_binary_copy_rows(cols, start, min(n, start + chunk_rows)))
                copy.write(_PGCOPY_TRAILER)
            counts[kind] = n
    return counts


def write_graph_files(graph: Graph, out_dir: str | Path, *, normalize: bool = False) -> list[Path]:
    """Write ``{name}_edges/_features/_labels.parquet`` and ``{name}_meta.json`` to ``out_dir``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    for kind, cols in graph_tables(graph, normalize, with_labels=True).items():
        path = out / f"{graph.name}_{kind}.parquet"
        pq.write_table(pa.table({k: pa.array(v) for k, v in cols.items()}), path)
        paths.append(path)
    meta = {"name": graph.name, "nodes": graph.num_nodes, "edges": graph.num_edges,
            "features": int(graph.features.shape[1]), "classes": graph.num_classes,
            "sparse_features": bool(sp.issparse(graph.features)), "normalized": normalize}
    path = out / f"{graph.name}_meta.json"
    path.write_text(json.dumps(meta, indent=2) + "\n")
    return paths + [path]


# ---------------------------------------------------------------- CLI

def _main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--list", action="store_true", help="list data sets and target sizes")
    g.add_argument("--time", nargs="*", metavar="NAME", help="time make_graph (default: all)")
    g.add_argument("--write", nargs=2, metavar=("DIR", "NAME"), help="write parquet tables")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--normalize", action="store_true", help="--write the normalised adjacency")
    args = p.parse_args(argv)
    if args.list:
        print(f"{'name':<18}{'nodes':>9}{'edges':>11}{'features':>10}{'classes':>9}")
        for name, s in GRAPH_SIZES.items():
            print(f"{name:<18}{s.nodes:>9,}{s.edges:>11,}{s.features:>10,}{s.classes:>9}")
    elif args.time is not None:
        print(f"{'name':<18}{'nodes':>9}{'nnz(A)':>11}{'target':>11}{'err%':>7}"
              f"{'max deg':>9}{'alpha':>7}{'gen s':>8}{'norm s':>8}")
        for name in args.time or list(GRAPH_SIZES):
            t0 = time.perf_counter()
            graph = make_graph(name, args.seed)
            t1 = time.perf_counter()
            normalized_adjacency(graph.adjacency)
            t2 = time.perf_counter()
            target = GRAPH_SIZES[name].edges
            st = degree_stats(graph.adjacency)
            print(f"{name:<18}{graph.num_nodes:>9,}{graph.num_edges:>11,}{target:>11,}"
                  f"{100 * (graph.num_edges - target) / target:>7.2f}{st['max']:>9.0f}"
                  f"{st['alpha']:>7.2f}{t1 - t0:>8.2f}{t2 - t1:>8.2f}", flush=True)
    else:
        out_dir, name = args.write
        for path in write_graph_files(make_graph(name, args.seed), out_dir, normalize=args.normalize):
            print(path)
    return 0


if __name__ == "__main__":
    sys.exit(_main())
