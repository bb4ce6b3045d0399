"""Contraction order of n-ary products, chosen with sparsity and decompositions jointly.

The paper leaves the order to opt_einsum, which sees only shapes: for SDDMM,
``OUT[i,j] = sum_k X[i,k] M[i,j] Y[j,k]``, its path multiplies X and Y first (a dense
i x j product, masked afterwards). Here a product of three or more tensors is lowered
along the path whose best plan the cost model prices lowest: every contraction tree for
up to ENUMERATE operands; beyond, opt_einsum's path and a sparse greedy one (at each
step the pair whose relational join and output are estimated smallest). Each path is
priced by the DP over decompositions of the product's own vertices, its operands taken
as inputs with their statistics (exact, or propagated from earlier statements), so the
order and the decompositions are chosen together (min over paths of min over plans).
A product of dense tensors (DENSE) keeps opt_einsum's path, which minimises the flops.
"""
from __future__ import annotations

import itertools
import math
from math import prod
from dataclasses import dataclass, field
from typing import Iterator

from ..cost import CostParams
from ..program.dag import Dag, Operand, Vertex
from ..program.lower import ContractionPath, contraction, dense_path
from ..stats.propagate import operand_stats, relational_join, vertex_stats
from ..stats.tensor_stats import TensorStats
from ..tiling import Tiling
from .context import OptimizerContext
from .search import dynamic_programming

# products of up to this many tensors try every contraction tree (3 for three, 15 for four)
ENUMERATE = 4
# tensors at least this full count as dense: a product of dense tensors keeps opt_einsum's path
DENSE = 0.5


@dataclass
class SparsePaths:
    """A `PathChooser` for `lower`: the cheapest path under the cost model.

    `options` are OptimizerContext.build's keyword arguments (memory cap, payload limits);
    `stored` the tiling of each input read from a table."""
    input_stats: dict[str, TensorStats]
    params: CostParams
    options: dict = field(default_factory=dict)
    stored: dict[str, Tiling] = field(default_factory=dict)
    stats: dict[str, TensorStats] = field(init=False)
    _known: int = field(init=False, default=0)     # vertices of the DAG with statistics

    def __post_init__(self) -> None:
        self.stats = dict(self.input_stats)

    def __call__(self, dag: Dag, operands: list[Operand], target: tuple[str, ...],
                 const: float = 1.0) -> ContractionPath:
        self._catch_up(dag)
        if all(self.stats[o.tensor].nnz >= DENSE * prod(dag.shapes[o.tensor]) for o in operands):
            return dense_path(dag, operands, target)     # nothing sparse: opt_einsum's path
        if len(operands) <= ENUMERATE:
            candidates = list(all_paths(len(operands)))
        else:
            candidates = [dense_path(dag, operands, target), self.greedy_path(dag, operands, target)]
        if len(candidates) == 1:
            return candidates[0]
        return min(candidates, key=lambda path: self.price(dag, operands, path, target, const))

    def _catch_up(self, dag: Dag) -> None:
        """Statistics of the vertices lowered since the last call."""
        for v in dag.vertices[self._known:]:
            self.stats[v.name] = vertex_stats(dag, v, self.stats)
        self._known = len(dag.vertices)

    def product_dag(self, dag: Dag, operands: list[Operand], path: ContractionPath,
                    target: tuple[str, ...], const: float) -> Dag:
        """The product's vertices along `path`, its operands as inputs (output ``~out``)."""
        tensors = dict.fromkeys(o.tensor for o in operands)
        product = Dag({t: dag.labels_of(t) for t in tensors},
                      {t: dag.shapes[t] for t in tensors}, ["~out"])
        sizes = {l: n for o in operands for l, n in zip(o.labels, dag.shapes[o.tensor])}
        count = itertools.count(1)
        for v in contraction(operands, path, target, const, "~out", lambda: f"~{next(count)}"):
            product.add(v, tuple(sizes[l] for l in v.labels))
        return product

    def price(self, dag: Dag, operands: list[Operand], path: ContractionPath, target: tuple[str, ...],
              const: float = 1.0) -> float:
        """Cost of the best plan of the product along `path` (inf when none fits)."""
        product = self.product_dag(dag, operands, path, target, const)
        ctx = OptimizerContext.build(
            product, {t: self.stats[t] for t in product.inputs}, self.params,
            stored={t: self.stored[t] for t in product.inputs if t in self.stored},
            **self.options)
        found = dynamic_programming(ctx.space, 1)
        return found[0].total if found else math.inf

    def greedy_path(self, dag: Dag, operands: list[Operand], target: tuple[str, ...]) -> ContractionPath:
        """At each step, contract the pair whose relational join plus output is estimated
        smallest (opt_einsum's greedy, with estimated non-zeros instead of dense sizes)."""
        tensors = dict.fromkeys(o.tensor for o in operands)
        scratch = Dag({t: dag.labels_of(t) for t in tensors},
                      {t: dag.shapes[t] for t in tensors}, [])
        sizes = {l: n for o in operands for l, n in zip(o.labels, dag.shapes[o.tensor])}
        stats = {t: self.stats[t] for t in tensors}
        current, path = list(operands), []
        for step in range(len(operands) - 1):
            best = None
            for i, j in itertools.combinations(range(len(current)), 2):
                rest = [o for k, o in enumerate(current) if k not in (i, j)]
                left, right = current[i], current[j]
                if len(current) == 2:
                    labels = target
                else:
                    needed = set(target).union(*(o.labels for o in rest))
                    labels = tuple(l for l in dict.fromkeys(left.labels + right.labels)
                                   if l in needed)
                pair = Operand(f"~{step}.{i}.{j}", labels)
                v = _pair_vertex(pair, left, right)
                scratch.add(v, tuple(sizes[l] for l in labels))
                out = vertex_stats(scratch, v, stats)
                join = relational_join(v, [operand_stats(stats[o.tensor], o)
                                           for o in v.operands]).tuples
                if best is None or join + out.nnz < best[0]:
                    best = (join + out.nnz, (i, j), pair, out)
            _, (i, j), pair, out = best
            stats[pair.tensor] = out
            current = [o for k, o in enumerate(current) if k not in (i, j)] + [pair]
            path.append((i, j))
        return path


def _pair_vertex(out: Operand, left: Operand, right: Operand) -> Vertex:
    return Vertex(out.tensor, out.labels, "mul", "sum", (left, right))


def all_paths(n: int) -> Iterator[ContractionPath]:
    """Every contraction tree of n operands once, as a path (pairs of positions in the
    list of operands left, each result appended)."""
    seen = set()

    def walk(items: list, path: ContractionPath) -> Iterator[ContractionPath]:
        if len(items) == 1:
            if items[0] not in seen:
                seen.add(items[0])
                yield list(path)
            return
        for i, j in itertools.combinations(range(len(items)), 2):
            rest = [x for k, x in enumerate(items) if k not in (i, j)]
            yield from walk(rest + [frozenset((items[i], items[j]))], path + [(i, j)])

    yield from walk(list(range(n)), [])
