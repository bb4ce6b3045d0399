"""Statistics of intermediate tensors, estimated along the DAG (section 7.1).

For each vertex the fully relational join size follows the textbook estimator
(T_U T_V / prod max V over shared labels); grouping uses the expected number of
distinct groups hit by T_join uniformly placed tuples, n (1 - exp(-T_join / n)),
the same uniformity assumption as formula 7.
"""
from __future__ import annotations

from dataclasses import dataclass
from math import prod

from ..program.dag import Dag, Operand, Vertex
from .tensor_stats import TensorStats, dense_stats, distinct_after


@dataclass(frozen=True)
class OperandStats:
    """Statistics of a tensor seen through the labels of one use."""
    nnz: float
    distinct: dict[str, float]     # V(l, U) per distinct label
    bounds: dict[str, int]

    def tuples(self, promoted) -> float:
        """Formula 7 at the label level."""
        labels = [l for l in self.distinct if l in promoted]
        if self.nnz <= 0:
            return 0.0
        n = prod(max(self.distinct[l], 1.0) for l in labels)
        return distinct_after(n, self.nnz) if labels else 1.0


def operand_stats(stats: TensorStats, operand: Operand) -> OperandStats:
    """Label-level view; a repeated label (diagonal) keeps 1/bound of the entries per repeat."""
    distinct: dict[str, float] = {}
    bounds: dict[str, int] = {}
    nnz = stats.nnz
    for axis, label in enumerate(operand.labels):
        if label in distinct:
            nnz /= max(stats.shape[axis], 1)
            distinct[label] = min(distinct[label], stats.distinct[axis])
        else:
            distinct[label] = stats.distinct[axis]
            bounds[label] = stats.shape[axis]
    distinct = {l: min(v, nnz) if nnz > 0 else 0.0 for l, v in distinct.items()}
    return OperandStats(nnz, distinct, bounds)


@dataclass(frozen=True)
class JoinEstimate:
    tuples: float                   # fully relational join (or domain) size
    distinct: dict[str, float]      # distinct values per label in it


def relational_join(vertex: Vertex, ops: list[OperandStats]) -> JoinEstimate:
    """Size of the all-promoted join (annihilating ops) or domain (the others)."""
    bounds: dict[str, int] = {}
    for o in ops:
        bounds.update(o.bounds)
    if vertex.annihilates:
        if len(ops) == 1:
            return JoinEstimate(ops[0].nnz, dict(ops[0].distinct))
        u, v = ops
        shared = [l for l in u.distinct if l in v.distinct]
        denominator = prod(max(u.distinct[l], v.distinct[l], 1.0) for l in shared)
        distinct = {**u.distinct, **v.distinct}
        for l in shared:
            distinct[l] = min(u.distinct[l], v.distinct[l])
        tuples = min(u.nnz * v.nnz / denominator, prod(max(d, 1.0) for d in distinct.values()))
        return JoinEstimate(tuples, {l: distinct_after(d, tuples) for l, d in distinct.items()})
    if len(ops) == 1 or vertex.op == "div":
        return JoinEstimate(float(prod(bounds.values())), {l: float(b) for l, b in bounds.items()})
    total = float(prod(bounds.values()))
    expanded = [o.nnz * prod(b for l, b in bounds.items() if l not in o.distinct) for o in ops]
    tuples = distinct_after(total, sum(expanded))
    distinct = {}
    for l, b in bounds.items():
        seen = sum(o.distinct[l] if l in o.distinct else (b if o.nnz > 0 else 0.0) for o in ops)
        distinct[l] = min(float(b), seen)
    return JoinEstimate(tuples, distinct)


def output_stats(vertex: Vertex, join: JoinEstimate, bounds: dict[str, int]) -> TensorStats:
    """Non-zeros of the vertex output after aggregating the join."""
    shape = tuple(bounds[l] for l in vertex.labels)
    if vertex.agg_labels:
        groups = prod(max(join.distinct[l], 1.0) for l in vertex.labels)
        tuples = distinct_after(groups, join.tuples) if vertex.labels else min(join.tuples, 1.0)
    else:
        tuples = join.tuples
    tuples = min(tuples, float(prod(shape)))
    distinct = tuple(min(distinct_after(join.distinct[l], tuples), float(bounds[l]))
                     for l in vertex.labels)
    return TensorStats(shape, tuples, distinct)


def propagate(dag: Dag, input_stats: dict[str, TensorStats]) -> dict[str, TensorStats]:
    """Statistics of every tensor of the DAG: exact for inputs, estimated after."""
    stats = dict(input_stats)
    for v in dag.vertices:
        ops = [operand_stats(stats[o.tensor], o) for o in v.operands]
        bounds = dag.label_sizes(v)
        if not v.annihilates and not v.is_binary and not v.agg_labels:
            stats[v.name] = dense_stats(dag.shapes[v.name])
            continue
        stats[v.name] = output_stats(v, relational_join(v, ops), bounds)
    return stats
