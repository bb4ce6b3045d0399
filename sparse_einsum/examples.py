"""Example programs and their data, written by ``sparse-einsum example NAME DIR``.

Each example is a ``.se`` program text plus a builder of its input tensors. `write_example`
puts ``DIR/NAME.se`` and ``DIR/NAME_data/`` (one ``.npy`` or scipy ``.npz`` file per input)
on disk, so ``sparse-einsum run DIR/NAME.se --data DIR/NAME_data`` runs it. The data is
seeded: writing an example twice gives byte-identical files.
"""
from __future__ import annotations

import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import scipy.sparse as sp

from .errors import SparseEinsumError

GCN_PROGRAM = """\
# A two-layer graph convolutional network (Kipf & Welling) on Zachary's karate club.
#   A   normalised adjacency D^-1/2 (A + I) D^-1/2 of the 34 members (sparse)
#   X   16 node features, W1 and W2 the weights of the two layers
# Run: sparse-einsum run gcn.se --data gcn_data
input A[i:34, j:34]
input X[j, f:16]
input W1[f, h:8]
input W2[h, c:2]

XW1[j,h] = X[j,f] * W1[f,h]           # labels not on the left (f) are summed out
AX[i,h]  = A[i,j] * XW1[j,h]
H[i,h]   = relu(AX[i,h])              # hidden layer
HW2[j,c] = H[j,h] * W2[h,c]
Z[i,c]   = A[i,j] * HW2[j,c]          # logits, one row per node
M[i]     = max(Z[i,c])                # per-node maximum logit

output Z, M
"""

SOFTMAX_PROGRAM = """\
# Softmax of a vector of scores.
# Run: sparse-einsum run softmax.se --data softmax_data
input C[i]

S[]  = sum(exp(C[i]))                 # a scalar: i is summed out
E[i] = exp(C[i]) / S[]

output E
"""

GCN_NODES, GCN_FEATURES, GCN_HIDDEN, GCN_CLASSES = 34, 16, 8, 2
SOFTMAX_SIZE = 10


def normalized_adjacency(graph) -> sp.csr_matrix:
    """D^-1/2 (A + I) D^-1/2 of an undirected networkx graph, nodes in sorted order."""
    import networkx as nx
    nodes = sorted(graph.nodes)
    adj = sp.csr_matrix(nx.to_scipy_sparse_array(graph, nodelist=nodes, weight=None,
                                                 dtype=np.float64))
    adj = adj + sp.identity(len(nodes), dtype=np.float64, format="csr")
    scale = sp.diags(1.0 / np.sqrt(np.asarray(adj.sum(axis=1)).ravel()))
    out = sp.csr_matrix(scale @ adj @ scale)
    out.sort_indices()
    return out


def gcn_data(seed: int = 0) -> dict[str, object]:
    """Inputs of gcn.se: A (scipy.sparse csr), X, W1, W2 (dense, Glorot-scaled weights)."""
    import networkx as nx
    rng = np.random.default_rng(seed)
    a = normalized_adjacency(nx.karate_club_graph())
    x = rng.standard_normal((GCN_NODES, GCN_FEATURES))
    w1 = rng.uniform(-1, 1, (GCN_FEATURES, GCN_HIDDEN)) * np.sqrt(6 / (GCN_FEATURES + GCN_HIDDEN))
    w2 = rng.uniform(-1, 1, (GCN_HIDDEN, GCN_CLASSES)) * np.sqrt(6 / (GCN_HIDDEN + GCN_CLASSES))
    return {"A": a, "X": x, "W1": w1, "W2": w2}


def gcn_reference(data: dict[str, object]) -> dict[str, np.ndarray]:
    """The outputs of gcn.se computed with NumPy."""
    a = data["A"].toarray() if sp.issparse(data["A"]) else np.asarray(data["A"])
    h = np.maximum(a @ (data["X"] @ data["W1"]), 0.0)
    z = a @ (h @ data["W2"])
    return {"Z": z, "M": z.max(axis=1)}


def softmax_data(seed: int = 0) -> dict[str, object]:
    """Inputs of softmax.se: C, a vector of scores."""
    return {"C": np.random.default_rng(seed).standard_normal(SOFTMAX_SIZE)}


def softmax_reference(data: dict[str, object]) -> dict[str, np.ndarray]:
    e = np.exp(np.asarray(data["C"]))
    return {"E": e / e.sum()}


@dataclass(frozen=True)
class Example:
    name: str
    description: str
    program: str
    data: Callable[[], dict[str, object]]
    reference: Callable[[dict[str, object]], dict[str, np.ndarray]]


EXAMPLES: dict[str, Example] = {
    "gcn": Example("gcn", "two-layer GCN on the karate club graph (sparse adjacency)",
                   GCN_PROGRAM, gcn_data, gcn_reference),
    "softmax": Example("softmax", "softmax of a vector, through a scalar sum",
                       SOFTMAX_PROGRAM, softmax_data, softmax_reference),
}


def _fixed_timestamps(path: Path) -> None:
    """Rewrite a zip (.npz) with fixed entry timestamps so its bytes depend only on its data."""
    with zipfile.ZipFile(path) as zin:
        entries = [(info, zin.read(info)) for info in zin.infolist()]
    with zipfile.ZipFile(path, "w") as zout:
        for info, payload in entries:
            fixed = zipfile.ZipInfo(info.filename, date_time=(1980, 1, 1, 0, 0, 0))
            fixed.compress_type, fixed.external_attr = info.compress_type, 0o644 << 16
            zout.writestr(fixed, payload)


def write_data(data: dict[str, object], directory: str | Path) -> list[Path]:
    """One file per tensor: NAME.npz (scipy.sparse.save_npz) or NAME.npy (np.save)."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, value in data.items():
        if sp.issparse(value):
            path = directory / f"{name}.npz"
            sp.save_npz(path, value)
            _fixed_timestamps(path)
        else:
            path = directory / f"{name}.npy"
            np.save(path, np.asarray(value))
        written.append(path)
    return written


def write_example(name: str, directory: str | Path) -> tuple[Path, Path]:
    """Write DIR/NAME.se and DIR/NAME_data/; returns (program path, data directory)."""
    if name not in EXAMPLES:
        raise SparseEinsumError(f"unknown example {name!r}: choose from {', '.join(EXAMPLES)}")
    example = EXAMPLES[name]
    directory = Path(directory)
    program, data_dir = directory / f"{name}.se", directory / f"{name}_data"
    for path, kind in ((directory, "directory"), (data_dir, "directory"), (program, "file")):
        if path.exists() and path.is_dir() != (kind == "directory"):
            raise SparseEinsumError(f"cannot write the example: {path} exists and is not a {kind}")
    try:
        directory.mkdir(parents=True, exist_ok=True)
        program.write_text(example.program)
        write_data(example.data(), data_dir)
    except OSError as exc:
        raise SparseEinsumError(f"cannot write the example to {exc.filename or directory}: "
                                f"{exc.strerror or exc}") from None
    return program, data_dir
