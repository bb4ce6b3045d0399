"""How far the optimizer's join and output estimates are from the truth on the Chung-Lu
graphs (the data sets of `experiments.datasets`), per vertex of a chain of products.

    python -m experiments.estimates [--graphs cora,citeseer,amazon-photo]
                                    [--subscripts ij,jk,kl->il]

For each binary vertex: the relational join's estimated and true tuples (the join on the
one shared label: the dot product of the operands' degrees there) and the output's
estimated and true non-zeros, as ratios (1 is exact).
"""
from __future__ import annotations

import argparse
from typing import Iterator

import numpy as np
import scipy.sparse as sp

from sparse_einsum.api import einsum_session
from sparse_einsum.sql.duckdb import DuckDBDialect
from sparse_einsum.stats.propagate import operand_stats, relational_join

from .datasets import make_graph


def _pattern(x) -> sp.csr_matrix:
    m = sp.csr_matrix(x, dtype=np.float64)
    m.data[:] = 1.0
    return m


def estimates(subscripts: str, *operands) -> Iterator[tuple[str, float, float, float, float]]:
    """Per binary vertex of the einsum's DAG (one shared label each): its name, estimated
    and true join tuples, estimated and true output non-zeros."""
    with einsum_session(subscripts, *operands, backend=None, dialect=DuckDBDialect()) as session:
        stats = session.optimizer().stats
        patterns = {t: _pattern(operands[int(t[1:])]) for t in session.dag.inputs}
        for v in session.dag.vertices:
            u, w = v.operands
            (shared,) = [l for l in u.labels if l in w.labels]
            left = patterns[u.tensor] if u.labels[1] == shared else patterns[u.tensor].T
            right = patterns[w.tensor] if w.labels[0] == shared else patterns[w.tensor].T
            join = float(np.asarray(left.sum(axis=0)).ravel()
                         @ np.asarray(right.sum(axis=1)).ravel())
            out = _pattern(left @ right)
            patterns[v.name] = out if v.labels[0] in u.labels else out.T
            estimate = relational_join(v, [operand_stats(stats[o.tensor], o)
                                           for o in v.operands]).tuples
            yield v.name, estimate, join, stats[v.name].nnz, float(out.nnz)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m experiments.estimates",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--graphs", default="cora,citeseer,amazon-photo")
    ap.add_argument("--subscripts", default="ij,jk,kl->il")
    args = ap.parse_args(argv)
    n = args.subscripts.split("->")[0].count(",") + 1
    print(f"{args.subscripts}: estimate / truth per vertex")
    print(f"  {'graph':<18} {'vertex':<10} {'join':>8} {'output':>8} {'true join':>14} "
          f"{'true output':>12}")
    for name in args.graphs.split(","):
        a = make_graph(name).adjacency
        for vertex, est_join, join, est_out, out in estimates(args.subscripts, *[a] * n):
            print(f"  {name:<18} {vertex:<10} {est_join / join:>8.2f} {est_out / out:>8.2f} "
                  f"{join:>14.0f} {out:>12.0f}")


if __name__ == "__main__":
    main()
