"""Statistics of intermediate tensors, estimated along the DAG (section 7.1).

For each vertex the fully relational join size follows the textbook estimator
(T_U T_V / prod max V over shared labels); grouping uses the expected number of
distinct groups hit by T_join uniformly placed tuples, n (1 - exp(-T_join / n)),
the same uniformity assumption as formula 7.

Skew (beyond the paper): on one shared label x the join holds sum_x d_U(x) d_V(x)
tuples, d the degrees (non-zeros per index). Where the inputs' degrees are known
(`Degrees`), a tensor meeting itself (A[i,j] A[j,k] of a graph) gets that sum exactly,
and any other pair the uniform estimate capped by a bound in the style of Galley's
chain bound, min(|d_U|_2 |d_V|_2, T_U max d_V, T_V max d_U). The ratio to the uniform
estimate (`join_skew`) scales the estimates where both operands keep other keys.

Intermediates carry degrees too (`Lineage`): along each output axis of a product, the
degrees of the operand axis it comes from, scaled by output over operand non-zeros, so
the join of (A A) with A meets A's degrees again (their dot product, scaled) instead of
the uniform estimate.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, replace
from math import prod
from typing import Mapping

from ..program.dag import Dag, Operand, Vertex
from ..program.ops import keeps_finite, value_bound
from ..tiling import tile_distinct
from .tensor_stats import (Degrees, Lineage, TensorStats, dense_stats, distinct_after,
                           occupied)


@dataclass(frozen=True)
class OperandStats:
    """Statistics of a tensor seen through the labels of one use."""
    nnz: float
    distinct: dict[str, float]     # V(l, U) per distinct label
    bounds: dict[str, int]
    tensor: TensorStats | None = None      # set when the labels do not repeat
    labels: tuple[str, ...] = ()

    def tuples(self, tiles: Mapping[str, int]) -> float:
        """Non-empty payloads under a tile size per label: the tensor's own estimate, or
        formula 7 at the label level over the keyed labels' occupied tile indices."""
        if self.nnz <= 0:
            return 0.0
        if self.tensor is not None:
            return self.tensor.tuples(tuple(tiles[l] for l in self.labels))
        keyed = [l for l in self.distinct if tiles[l] < self.bounds[l]]
        slots = [tile_distinct(self.distinct[l], self.bounds[l], tiles[l]) for l in keyed]
        return occupied(self.nnz, slots, list(self.distinct.values()))

    def promoting(self, labels) -> float:
        """Non-empty payloads when `labels` are promoted and the others demoted."""
        return self.tuples({l: 1 if l in labels else b for l, b in self.bounds.items()})


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
    plain = len(set(operand.labels)) == len(operand.labels)
    return OperandStats(nnz, distinct, bounds, stats if plain else None, operand.labels)


def join_skew(vertex: Vertex, ops: list[OperandStats]) -> float:
    """The degree-aware relational join size of a product of two operands over the
    uniform one (1 when the degrees are unknown or several labels are shared)."""
    if not (vertex.annihilates and len(ops) == 2):
        return 1.0
    u, v = ops
    shared = [l for l in u.distinct if l in v.distinct]
    du, dv = _degrees(u, shared), _degrees(v, shared)
    if du is None or dv is None or u.nnz <= 0 or v.nnz <= 0:
        return 1.0
    (label,) = shared
    uniform = u.nnz * v.nnz / max(u.distinct[label], v.distinct[label], 1.0)
    lu, lv = _lineage(u, label), _lineage(v, label)
    if lu is not None and lv is not None and lu.base is lv.base:
        degrees = lu.base.degrees
        a, b = sorted((lu.axis, lv.axis))
        exact = degrees.l2[a] ** 2 if a == b else degrees.dots.get((a, b))
        if not lu.steps and not lv.steps and exact is not None:
            return exact / uniform        # the input meeting itself: A[i,j] A[j,k]
        hist = degrees.histograms.get((lu.axis, lv.axis))
        if hist is not None:              # degrees following one input's: (A A)[i,k] A[k,l]
            return float(hist.count @ (lu(hist.mean_a) * lv(hist.mean_b))) / uniform
    return min(uniform, du[0] * dv[0], u.nnz * dv[1], v.nnz * du[1]) / uniform


def _lineage(o: OperandStats, label: str) -> Lineage | None:
    """The input axis whose degrees an operand's follow on `label`, when known."""
    if o.tensor is None:
        return None
    axis = o.labels.index(label)
    if o.tensor.lineage is not None:
        return o.tensor.lineage[axis]
    return Lineage(o.tensor, axis) if o.tensor.degrees is not None else None


def with_degrees(v: Vertex, ops: list[OperandStats], join: "JoinEstimate",
                 out: TensorStats) -> TensorStats:
    """`out` with the degrees of a product's (or element-wise operation's) output along
    each label: those of the operand it comes from (of two, the one with more labels),
    each index's join tuples m d(x) (m: join tuples per operand tuple) falling on the
    groups of the other output labels (`Lineage`)."""
    if not v.annihilates or (len(ops) == 1 and v.agg_labels) or out.nnz <= 0:
        return out
    lineage: list[Lineage | None] = []
    for label in v.labels:
        holders = sorted((o for o in ops if label in o.distinct), key=lambda o: -len(o.distinct))
        found = None
        if len(holders) == 1 or len(holders[0].distinct) > len(holders[1].distinct):
            found = _lineage(holders[0], label)
        if found is not None and holders[0].nnz > 0:
            cap = prod(max(join.distinct[l], 1.0) for l in v.labels if l != label) \
                if v.agg_labels else math.inf
            found = found.then(join.tuples / holders[0].nnz, cap)
        lineage.append(found)
    if not any(lineage):
        return out
    l2, top = [], []
    for axis, (x, n) in enumerate(zip(lineage, out.shape)):
        if x is None:                                       # bounds only
            l2.append(out.nnz)
            top.append(min(out.nnz, prod(out.shape) / max(n, 1)))
            continue
        hist = x.base.degrees.histograms.get((x.axis, x.axis))
        l2.append(math.sqrt(float(hist.count @ x(hist.mean_a) ** 2)) if hist is not None
                  else prod(m for m, _ in x.steps) * x.base.degrees.l2[x.axis])
        top.append(min(x(x.base.degrees.max[x.axis]), prod(out.shape) / max(n, 1)))
    return replace(out, degrees=Degrees(tuple(l2), tuple(top), {}), lineage=tuple(lineage))


def _degrees(o: OperandStats, shared: list[str]) -> tuple[float, float] | None:
    """(l2 norm, max) of an operand's degrees on the one shared label, when known."""
    if len(shared) != 1 or o.tensor is None or o.tensor.degrees is None:
        return None
    axis = o.labels.index(shared[0])
    return o.tensor.degrees.l2[axis], o.tensor.degrees.max[axis]


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
        tuples = min(u.nnz * v.nnz / denominator * join_skew(vertex, ops),
                     prod(max(d, 1.0) for d in distinct.values()))
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


def support(vertex: Vertex, ops: list[OperandStats], join: JoinEstimate,
            bounds: dict[str, int]) -> dict[frozenset[int], float]:
    """Non-empty sub-tensors of the output for every set of promoted axes.

    For a product, the projection on labels S of U join V is estimated as the join of
    the operands' projections on S plus the shared labels, then the shared labels not
    in S are projected out. This keeps the structure formula 7 forgets: T2[i,j,k] =
    T0[i,k] * A[i,j] has as many (i,j) sub-tensors as A has non-zeros."""
    result = {}
    shared = [l for l in ops[0].distinct if len(ops) == 2 and l in ops[1].distinct]
    skew = join_skew(vertex, ops)
    for r in range(len(vertex.labels) + 1):
        for axes in itertools.combinations(range(len(vertex.labels)), r):
            s = {vertex.labels[a] for a in axes}
            cap = float(prod(bounds[l] for l in s))
            if not vertex.annihilates:
                est = cap
            elif len(ops) == 1:
                est = ops[0].promoting(s)
            else:
                keep = s | set(shared)
                est = ops[0].promoting(keep) * ops[1].promoting(keep) / prod(
                    max(ops[0].distinct[l], ops[1].distinct[l], 1.0) for l in shared)
                if all(set(o.distinct) & s - set(shared) for o in ops):
                    est *= skew          # both keep other keys: the degrees' skew shows
                if not set(shared) <= s:
                    # project the other shared labels out; also bounded by the join
                    # of the operands' own projections on S
                    within = [l for l in shared if l in s]
                    bound = ops[0].promoting(s) * ops[1].promoting(s) / prod(
                        max(ops[0].distinct[l], ops[1].distinct[l], 1.0) for l in within)
                    est = min(distinct_after(prod(max(join.distinct[l], 1.0) for l in s), est),
                              bound) if s else min(est, 1.0)
            result[frozenset(axes)] = min(est, cap)
    return result


def value_stats(v: Vertex, operands: list[TensorStats], sizes: dict[str, int],
                bounded: bool = False) -> dict:
    """max_abs and finite of a vertex's output from its operands' (`bounded`: the vertex
    is part of a statement known to stay finite, `Statement.bounded`)."""
    bound = value_bound(v.op, *(s.max_abs for s in operands))
    if v.agg == "sum":
        bound *= prod(sizes[l] for l in v.agg_labels)
    return {"max_abs": bound,
            "finite": all(s.finite for s in operands) and (bounded or keeps_finite(v.op))}


def propagate(dag: Dag, input_stats: dict[str, TensorStats]) -> dict[str, TensorStats]:
    """Statistics of every tensor of the DAG: exact for inputs, estimated after (those of
    vertices given in `input_stats` are kept)."""
    stats = dict(input_stats)
    for v in dag.vertices:
        if v.name not in stats:
            stats[v.name] = vertex_stats(dag, v, stats)
    return stats


def vertex_stats(dag: Dag, v: Vertex, stats: Mapping[str, TensorStats]) -> TensorStats:
    """Estimated statistics of a vertex's output from its operands' (in `stats`)."""
    ops = [operand_stats(stats[o.tensor], o) for o in v.operands]
    bounds = dag.label_sizes(v)
    values = value_stats(v, [stats[o.tensor] for o in v.operands], bounds, dag.is_bounded(v))
    if not v.annihilates and not v.is_binary and not v.agg_labels:
        return dense_stats(dag.shapes[v.name], **values)
    join = relational_join(v, ops)
    out = replace(output_stats(v, join, bounds), **values)
    if len(v.labels) <= 6:
        sup = support(v, ops, join, bounds)
        full = sup[frozenset(range(len(v.labels)))]
        out = replace(out, nnz=min(out.nnz, full), support=sup)
    return with_degrees(v, ops, join, out)
