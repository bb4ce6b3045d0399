"""Contraction order of n-ary products, chosen with sparsity and decompositions jointly.

The paper leaves the order to opt_einsum, which sees only shapes: for SDDMM,
``OUT[i,j] = sum_k X[i,k] M[i,j] Y[j,k]``, its path multiplies X and Y first (a dense
i x j product, masked afterwards). Here a product of three or more tensors is lowered
along the path whose best plan the cost model prices lowest. The candidates are
opt_einsum's path and, for up to ENUMERATE operands, the PRICED contraction trees of
least estimated work (relational join plus output tuples over the tree's vertices, all
trees ranked), beyond that a sparse greedy path (at each step the pair of least
estimated work). Each candidate is priced by the DP over decompositions of the
product's own vertices (each label promoted or demoted: the paper's space; tiles are
chosen afterwards, for the whole program), its operands taken as inputs with their
statistics (exact, or propagated from earlier statements), so order and decompositions
are chosen together: min over paths of min over plans.

A product of dense tensors (DENSE) keeps opt_einsum's path, which minimises the flops.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from math import prod
from typing import Iterator

from ..cost import CostParams
from ..program.dag import Dag, Operand, Vertex
from ..program.lower import ContractionPath, contraction, dense_path
from ..stats.propagate import operand_stats, relational_join, vertex_stats
from ..stats.tensor_stats import TensorStats
from ..tiling import Tiling
from .context import OptimizerContext
from .search import SearchSpace, dynamic_programming

# products of up to this many tensors rank every contraction tree (3 for three, 15 for
# four) by estimated work; the PRICED least and opt_einsum's path are priced by the DP
ENUMERATE = 4
PRICED = 4
# tensors at least this full count as dense: a product of dense tensors keeps opt_einsum's path
DENSE = 0.5


@dataclass(frozen=True)
class ProductKind:
    """The product's operation and aggregate: a sum of products, or with "add" and min or
    max a min-plus or max-plus product."""
    op: str = "mul"
    agg: str = "sum"


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
    # the DAG and statistics of a product along a path, for the product being ordered
    _products: dict[tuple, tuple[Dag, dict[str, TensorStats]]] = field(init=False)

    def __post_init__(self) -> None:
        self.stats = dict(self.input_stats)
        self._products = {}

    def __call__(self, dag: Dag, operands: list[Operand], target: tuple[str, ...],
                 const: float = 1.0, op: str = "mul", agg: str = "sum") -> ContractionPath:
        self._catch_up(dag)
        kind = ProductKind(op, agg)
        self._products = {}
        dense = dense_path(dag, operands, target)
        if all(self.stats[o.tensor].nnz >= DENSE * prod(dag.shapes[o.tensor]) for o in operands):
            return dense                        # nothing sparse: opt_einsum's path
        if len(operands) <= ENUMERATE:
            trees = sorted(all_paths(len(operands)),
                           key=lambda path: self.work(dag, operands, path, target, kind))
            candidates = [dense] + trees[:PRICED]
        else:
            candidates = [dense, self.greedy_path(dag, operands, target, kind)]
        unique = list({tree_of(path): path for path in reversed(candidates)}.values())[::-1]
        best, cheapest = unique[0], math.inf
        for path in unique if len(unique) > 1 else ():     # the first of the cheapest
            price = self.price(dag, operands, path, target, const, kind, below=cheapest)
            if price < cheapest:
                best, cheapest = path, price
        return self.sparser_first(dag, operands, best, target, const, kind)

    def sparser_first(self, dag: Dag, operands: list[Operand], path: ContractionPath,
                      target: tuple[str, ...], const: float, kind: ProductKind
                      ) -> ContractionPath:
        """`path` with the sparser operand of each step first where it is sparse (under
        DENSE full), so that the step's result lays out the other operand's labels last
        (`contraction`): those a kernel driven by the sparse operand's entries loops over
        for each of them."""
        product, stats = self._product(dag, operands, path, target, const, kind)
        full = {t: stats[t].nnz / max(prod(product.shapes[t]), 1) for t in stats}
        tensors, oriented = [o.tensor for o in operands], []
        for (i, j), v in zip(path, product.vertices):
            swap = full[tensors[j]] < min(full[tensors[i]], DENSE)
            oriented.append((j, i) if swap else (i, j))
            tensors = [t for k, t in enumerate(tensors) if k not in (i, j)] + [v.name]
        return oriented

    def _catch_up(self, dag: Dag) -> None:
        """Statistics of the vertices lowered since the last call."""
        for v in dag.vertices[self._known:]:
            self.stats[v.name] = vertex_stats(dag, v, self.stats)
        self._known = len(dag.vertices)

    def product_dag(self, dag: Dag, operands: list[Operand], path: ContractionPath,
                    target: tuple[str, ...], const: float,
                    kind: ProductKind = ProductKind()) -> Dag:
        """The product's vertices along `path`, its operands as inputs (output ``~out``)."""
        product = _scratch(dag, operands, ["~out"])
        sizes = {l: n for o in operands for l, n in zip(o.labels, dag.shapes[o.tensor])}
        count = itertools.count(1)
        for v in contraction(operands, path, target, const, "~out", lambda: f"~{next(count)}",
                             op=kind.op, agg=kind.agg):
            product.add(v, tuple(sizes[l] for l in v.labels))
        return product

    def price(self, dag: Dag, operands: list[Operand], path: ContractionPath,
              target: tuple[str, ...], const: float = 1.0,
              kind: ProductKind = ProductKind(), below: float = math.inf) -> float:
        """Cost of the best plan of the product along `path` (inf when none fits, or none
        can cost less than `below`), over promotions and demotions (tiles are left to the
        plan of the whole program)."""
        product, stats = self._product(dag, operands, path, target, const, kind)
        ctx = OptimizerContext.build(
            product, stats, self.params,
            stored={t: self.stored[t] for t in product.inputs if t in self.stored},
            **self.options)
        found = dynamic_programming(SearchSpace(product, ctx.model, ctx.stored, tiled=False), 1,
                                    below)
        return found[0].total if found else math.inf

    def work(self, dag: Dag, operands: list[Operand], path: ContractionPath,
             target: tuple[str, ...], kind: ProductKind = ProductKind()) -> float:
        """Estimated relational join plus output tuples, summed over the path's vertices."""
        product, stats = self._product(dag, operands, path, target, 1.0, kind)
        return sum(_work(v, stats) for v in product.vertices)

    def _product(self, dag: Dag, operands: list[Operand], path: ContractionPath,
                 target: tuple[str, ...], const: float, kind: ProductKind
                 ) -> tuple[Dag, dict[str, TensorStats]]:
        """`product_dag` and the statistics of its tensors, made once per path."""
        key = (tuple(operands), tuple(target), tuple(map(tuple, path)), const, kind)
        found = self._products.get(key)
        if found is None:
            product = self.product_dag(dag, operands, path, target, const, kind)
            stats = {t: self.stats[t] for t in product.inputs}
            for v in product.vertices:
                stats[v.name] = vertex_stats(product, v, stats)
            found = self._products[key] = (product, stats)
        return found

    def greedy_path(self, dag: Dag, operands: list[Operand], target: tuple[str, ...],
                    kind: ProductKind = ProductKind()) -> ContractionPath:
        """At each step, contract the pair of least estimated work (opt_einsum's greedy,
        with estimated non-zeros instead of dense sizes)."""
        scratch = _scratch(dag, operands, [])
        sizes = {l: n for o in operands for l, n in zip(o.labels, dag.shapes[o.tensor])}
        stats = {t: self.stats[t] for t in scratch.inputs}
        current, path = list(operands), []
        for step in range(len(operands) - 1):
            best = None
            for i, j in itertools.combinations(range(len(current)), 2):
                rest = [o for k, o in enumerate(current) if k not in (i, j)]
                needed = set(target).union(*(o.labels for o in rest))
                labels = target if not rest else tuple(
                    l for l in dict.fromkeys(current[i].labels + current[j].labels)
                    if l in needed)
                v = Vertex(f"~{step}.{i}.{j}", labels, kind.op, kind.agg,
                           (current[i], current[j]))
                scratch.add(v, tuple(sizes[l] for l in labels))
                stats[v.name] = vertex_stats(scratch, v, stats)
                if best is None or _work(v, stats) < best[0]:
                    best = (_work(v, stats), (i, j), v)
            _, (i, j), v = best
            current = [o for k, o in enumerate(current) if k not in (i, j)] + [
                Operand(v.name, v.labels)]
            path.append((i, j))
        return path


def _scratch(dag: Dag, operands: list[Operand], outputs: list[str]) -> Dag:
    """A DAG with the operands' tensors as inputs, their defaults kept."""
    tensors = dict.fromkeys(o.tensor for o in operands)
    return Dag({t: dag.labels_of(t) for t in tensors}, {t: dag.shapes[t] for t in tensors},
               outputs, defaults={t: dag.default(t) for t in tensors})


def _work(v: Vertex, stats: dict[str, TensorStats]) -> float:
    """A product vertex's relational join plus output tuples, estimated."""
    ops = [operand_stats(stats[o.tensor], o) for o in v.operands]
    return relational_join(v, ops).tuples + stats[v.name].nnz


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
            yield from walk(_merge(items, i, j), path + [(i, j)])

    yield from walk(list(range(n)), [])


def tree_of(path: ContractionPath) -> frozenset:
    """The contraction tree a path builds (nested frozensets of operand positions)."""
    items: list = list(range(len(path) + 1))
    for i, j in path:
        items = _merge(items, i, j)
    return items[0]


def _merge(items: list, i: int, j: int) -> list:
    return [x for k, x in enumerate(items) if k not in (i, j)] + [frozenset((items[i], items[j]))]
