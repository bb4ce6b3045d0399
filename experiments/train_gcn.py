"""Training a 2-layer GCN in the database against PyTorch (CPU).

The paper's setup (Table 2): two layers, hidden 256, Adam, learning rate 0.1; dropout off
so that both sides compute the same function. Two modes:

* ``--epochs N`` (Cora size): train N epochs with `sparse_einsum.train` and with PyTorch
  from the same initial weights; report the largest difference of the loss per epoch and
  of the training accuracy, and the time per epoch of both.
* ``--iterations K`` (ogbn-arxiv size): time K single iterations (forward, backward, Adam)
  of both, alternately, after a warm-up; report medians, the parts of ours (input
  loads, SQL statements) and the statements one iteration sends. Where PyTorch Geometric
  is installed (``pip install torch_geometric``), its GCNConv model is timed in the same
  rounds and its loss checked against PyTorch's.

    python -m experiments.train_gcn --graph cora --epochs 50
    python -m experiments.train_gcn --graph ogbn-arxiv --iterations 3

Results: ``train_gcn_<graph>_<backend>_<epochs|iterations>.csv`` in --out.
"""
from __future__ import annotations

import argparse
import importlib.util
import sys
import time

import numpy as np
import scipy.sparse as sp

from experiments import harness
from experiments.common import add_output_arguments, output_dirs
from experiments.datasets import make_graph, normalized_adjacency
from sparse_einsum.training import Trainer

GCN = """
input A[i,j]
input X[j,f]
input W1[f,h]
input W2[h,c]
XW[j,h]  = X[j,f] * W1[f,h]
AXW[i,h] = A[i,j] * XW[j,h]
H[i,h]   = relu(AXW[i,h])
HW[j,c]  = H[j,h] * W2[h,c]
Z[i,c]   = A[i,j] * HW[j,c]
"""
LOSS = "softmax_cross_entropy(Z, y, train_mask)"


def setup(graph_name: str, hidden: int, seed: int = 0) -> dict[str, object]:
    graph = make_graph(graph_name, seed)
    rng = np.random.default_rng(seed)
    n, f = graph.features.shape

    def glorot(rows: int, cols: int) -> np.ndarray:
        bound = np.sqrt(6.0 / (rows + cols))
        return rng.uniform(-bound, bound, (rows, cols))

    return dict(A=normalized_adjacency(graph.adjacency), X=graph.features,
                W1=glorot(f, hidden), W2=glorot(hidden, graph.num_classes), y=graph.labels,
                train_mask=rng.random(n) < 0.5)


class TorchGCN:
    """The same model in PyTorch: sparse A (CSR), float64, Adam."""

    def __init__(self, data: dict, lr: float):
        import torch
        self.torch = torch
        torch.set_num_threads(2)
        a = sp.csr_matrix(data["A"])
        self.a = torch.sparse_csr_tensor(torch.tensor(a.indptr), torch.tensor(a.indices),
                                         torch.tensor(a.data), size=a.shape)
        x = data["X"]
        self.x = (torch.sparse_csr_tensor(torch.tensor(x.indptr), torch.tensor(x.indices),
                                          torch.tensor(x.data), size=x.shape)
                  if sp.issparse(x) else torch.tensor(np.asarray(x)))
        self.w = [torch.tensor(data[k], requires_grad=True) for k in ("W1", "W2")]
        self.mask = torch.tensor(data["train_mask"])
        self.y = torch.tensor(data["y"])
        self.opt = torch.optim.Adam(self.w, lr=lr)

    def logits(self):
        h = self.torch.relu(self.a @ (self.x @ self.w[0]))
        return self.a @ (h @ self.w[1])

    def iterate(self) -> tuple[float, float]:
        torch = self.torch
        self.opt.zero_grad()
        z = self.logits()
        loss = torch.nn.functional.cross_entropy(z[self.mask], self.y[self.mask])
        loss.backward()
        self.opt.step()
        accuracy = (z[self.mask].argmax(1) == self.y[self.mask]).double().mean()
        return loss.item(), accuracy.item()


class PygGCN(TorchGCN):
    """The same model with PyTorch Geometric's GCNConv: A's non-zeros as edge weights (A is
    normalised already, so no renormalisation, no self-loops added), no bias."""

    def __init__(self, data: dict, lr: float):
        super().__init__(data, lr)
        torch = self.torch
        from torch_geometric.nn import GCNConv
        a = sp.coo_matrix(data["A"])
        # messages run from the source (row 0) to the target (row 1): out[i] += A[i,j] x[j]
        self.edges = torch.tensor(np.vstack([a.col, a.row]), dtype=torch.long)
        self.weights = torch.tensor(a.data)
        self.convs = []
        for w in self.w:
            conv = GCNConv(w.shape[0], w.shape[1], bias=False, normalize=False,
                           add_self_loops=False).double()
            conv.lin.weight = torch.nn.Parameter(w.detach().T.clone())
            self.convs.append(conv)
        self.opt = torch.optim.Adam([c.lin.weight for c in self.convs], lr=lr)

    def logits(self):
        h = self.torch.relu(self.convs[0](self.x, self.edges, self.weights))
        return self.convs[1](h, self.edges, self.weights)


def pyg_model(data: dict, lr: float) -> PygGCN | None:
    """PyG's model, where PyTorch Geometric is installed (it is optional)."""
    return PygGCN(data, lr) if importlib.util.find_spec("torch_geometric") else None


SLOWEST = 8     # steps listed after the timing


def parts(trainer: Trainer) -> dict[str, float]:
    steps = trainer.last_run.steps
    loads = sum(s.seconds for s in steps if s.label.startswith("load "))
    return {"loads_s": loads, "statements_s": sum(s.seconds for s in steps) - loads}


def statements(trainer: Trainer) -> int:
    """The SQL statements (and loads) one more iteration sends to the engine."""
    backend, count, depth = trainer.backend, [0], [0]

    def counted(call):
        def wrapper(*args, **kwargs):
            count[0] += not depth[0]          # not a call made inside a counted one
            depth[0] += 1
            try:
                return call(*args, **kwargs)
            finally:
                depth[0] -= 1
        return wrapper

    methods = ("execute", "query", "run", "run_and_fetch", "fetch", "load")
    for name in methods:
        setattr(backend, name, counted(getattr(backend, name)))
    try:
        trainer.iterate()
    finally:
        for name in methods:
            delattr(backend, name)
    return count[0]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--graph", default="cora")
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--lr", type=float, default=0.1)
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--epochs", type=int, help="train and compare the loss per epoch")
    mode.add_argument("--iterations", type=int, help="time single iterations")
    ap.add_argument("--backend", default="duckdb", choices=("duckdb", "postgres", "spark"))
    ap.add_argument("--dsn")
    ap.add_argument("--master", help="Spark: the master (default local[*]; a cluster's URL)")
    ap.add_argument("--memory-limit", dest="memory_limit")
    ap.add_argument("--plan", default="optimal")
    ap.add_argument("--udf-kernels", action="store_true",
                    help="DuckDB: NumPy UDF kernels instead of the native extension")
    add_output_arguments(ap)
    args = ap.parse_args(argv)
    if args.master and args.backend != "spark":
        ap.error("--master applies to --backend spark")
    tables, _ = output_dirs(args.out, args.publish)
    provenance = harness.Provenance("train_gcn", argv)
    print(provenance.header())
    start = time.perf_counter()
    data = setup(args.graph, args.hidden)
    print(f"graph {args.graph}: {data['A'].shape[0]} nodes, {data['A'].nnz} non-zeros of A, "
          f"{data['X'].shape[1]} features, hidden {args.hidden}; data made in "
          f"{time.perf_counter() - start:.1f} s", flush=True)
    options = {k: v for k, v in (("dsn", args.dsn), ("memory_limit", args.memory_limit),
                                 ("master", args.master)) if v}
    if args.udf_kernels:
        options["native"] = False
    start = time.perf_counter()
    with Trainer(GCN, data, loss=LOSS, params=["W1", "W2"], lr=args.lr, plan=args.plan,
                 backend=args.backend, backend_options=options,
                 tables=f"bench_{args.graph.replace('-', '_')}") as trainer:
        print(f"ours: setup (tables, statistics, plan) {time.perf_counter() - start:.1f} s; "
              f"{len(trainer.session.dag.vertices)} vertices", flush=True)
        reference = TorchGCN(data, args.lr)
        methods = {"ours": trainer.iterate, "PyTorch": reference.iterate}
        pyg = None if args.epochs else pyg_model(data, args.lr)
        if pyg is not None:
            methods["PyG"] = pyg.iterate
        rows: list[dict] = []

        def check(name: str, result) -> None:
            """Each round's losses and accuracies, and the parts of ours."""
            if name == "ours":
                rows.append(dict(epoch=len(rows) + 1, loss=result["loss"],
                                 accuracy=result["accuracy"], **parts(trainer)))
            else:
                prefix = "torch" if name == "PyTorch" else "pyg"
                rows[-1].update({f"{prefix}_loss": result[0], f"{prefix}_accuracy": result[1]})

        # epochs: every round is an epoch, from the same initial weights, so no warm-up;
        # iterations: one warm-up round for first-run costs (UDF registration, caches)
        timings = harness.side_by_side(methods, args.epochs or args.iterations,
                                       warmup=0 if args.epochs else 1, check=check)
        for name, column in (("ours", "seconds"), ("PyTorch", "torch_seconds"),
                             ("PyG", "pyg_seconds")):
            for row, seconds in zip(rows, timings.samples.get(name, [])):
                row[column] = seconds
        if args.epochs:
            diff = max(abs(r["loss"] - r["torch_loss"]) for r in rows)
            acc = max(abs(r["accuracy"] - r["torch_accuracy"]) for r in rows)
            print(f"{args.epochs} epochs: loss {rows[0]['loss']:.6f} -> {rows[-1]['loss']:.6f}; "
                  f"largest |loss - torch loss| {diff:.3g}, |accuracy - torch accuracy| "
                  f"{acc:.3g}; final accuracy {rows[-1]['accuracy']:.4f} (torch "
                  f"{rows[-1]['torch_accuracy']:.4f})")
        else:
            for r in rows:
                line = (f"iteration {r['epoch']}: ours {r['seconds']:.2f} s (loads "
                        f"{r['loads_s']:.2f} s, statements {r['statements_s']:.2f} s), "
                        f"torch {r['torch_seconds']:.2f} s")
                if pyg is not None:
                    line += f", PyG {r['pyg_seconds']:.2f} s"
                print(line)
            diff = max(abs(r[k] - r["torch_loss"]) for r in rows for k in ("loss", "pyg_loss")
                       if k in r)
            print(f"largest |loss - torch loss| over the iterations (ours and PyG): {diff:.3g}")
        ours_s, torch_s = timings.median("ours"), timings.median("PyTorch")
        print(f"median iteration: ours {ours_s:.3f} s, PyTorch {torch_s:.3f} s, ratio "
              f"{timings.ratio('ours', 'PyTorch'):.2f}")
        if pyg is not None:
            print(f"PyTorch Geometric (GCNConv) {timings.median('PyG'):.3f} s: ours / PyG "
                  f"{timings.ratio('ours', 'PyG'):.2f}")
        print("\n".join(timings.lines("PyTorch")))
        print(f"statements per iteration (SQL, loads and fetches): {statements(trainer)}")
        slowest = sorted(trainer.last_run.steps, key=lambda s: -s.seconds)[:SLOWEST]
        print("slowest steps of the last iteration: " + "; ".join(
            f"{s.label} {s.seconds:.2f} s" for s in slowest))
    mode = "epochs" if args.epochs else "iterations"
    path = tables / f"train_gcn_{args.graph}_{args.backend}_{mode}.csv"
    harness.write_csv(path, rows, provenance)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
