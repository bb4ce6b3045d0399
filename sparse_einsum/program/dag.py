"""The EinSum DAG: binary and unary vertices, each producing one tensor.

A vertex computes ``W[labels] = AGG_{agg labels} OP(U[..], V[..])`` (binary) or
``W[labels] = AGG_{agg labels} FN(U[..])`` (unary). Statements of a program are
lowered into vertices by `sparse_einsum.program.lower`. The graph is a networkx
DiGraph over tensors: an edge runs from each operand tensor to the tensor computed
from it.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property

import networkx as nx

from ..errors import ProgramError
from .ops import absorbs, element_default, preserves_zero


COMMUTATIVE = frozenset({"mul", "add"})


@dataclass(frozen=True)
class Operand:
    """One input of a vertex: a tensor and the labels it is indexed with here."""
    tensor: str
    labels: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.tensor}[{','.join(self.labels)}]"


@dataclass(frozen=True)
class Vertex:
    name: str                        # the tensor this vertex produces
    labels: tuple[str, ...]          # output labels, distinct
    op: str                          # an operation code of program.ops
    agg: str                         # sum | max | min
    operands: tuple[Operand, ...]    # one or two
    line: int = 0                    # statement line in the program, 0 if unknown
    defaults: tuple[float, ...] = ()  # the operands' defaults (`Dag.add`), () when all 0

    @property
    def is_binary(self) -> bool:
        return len(self.operands) == 2

    @cached_property          # the cost model asks for these many times per vertex
    def all_labels(self) -> tuple[str, ...]:
        """Output labels, then aggregated labels, in order of first appearance."""
        seen = dict.fromkeys(self.labels)
        for operand in self.operands:
            seen.update(dict.fromkeys(operand.labels))
        return tuple(seen)

    @cached_property
    def agg_labels(self) -> tuple[str, ...]:
        return tuple(l for l in self.all_labels if l not in self.labels)

    @cached_property
    def annihilates(self) -> bool:
        """True when an absent operand gives an absent result (missing tuples stay
        missing): a zero input gives zero, or every operand's default decides the result."""
        if not self.defaults:
            return preserves_zero(self.op)
        return all(absorbs(self.op, self.defaults, k) for k in range(len(self.operands)))

    @cached_property
    def default(self) -> float:
        """The value of the vertex's absent entries: its operation's value where every
        operand is absent, which min and max keep (and a sum, for 0 and inf). Among
        operands of default 0 it is 0: the compiler adds the missing terms where the
        operation makes 0 into something else."""
        return element_default(self.op, self.defaults) if self.defaults else 0.0


class Dag:
    """Input tensors, vertices in topological order, outputs and every tensor's shape."""

    def __init__(self, inputs: dict[str, tuple[str, ...]], shapes: dict[str, tuple[int, ...]],
                 outputs: list[str], bounded: frozenset[str] = frozenset(),
                 defaults: dict[str, float] | None = None):
        self.graph = nx.DiGraph()
        self.inputs = dict(inputs)
        self.input_defaults = {n: d for n, d in (defaults or {}).items() if d != 0}
        self.shapes = dict(shapes)
        self.outputs = list(outputs)
        self.bounded = bounded     # statements whose vertices are finite where their operands are
        self._vertices: dict[str, Vertex] = {}
        # what a vertex computes -> its tensor and the numbering of its labels
        self._computed: dict[tuple, tuple[str, dict[str, int]]] = {}
        self.graph.add_nodes_from(self.inputs)

    def add(self, vertex: Vertex, shape: tuple[int, ...]) -> Operand:
        """Append a vertex whose operands exist already; returns its output as an operand."""
        if vertex.name in self.graph:
            raise ValueError(f"tensor {vertex.name} is defined twice")
        missing = [o.tensor for o in vertex.operands if o.tensor not in self.graph]
        if missing:
            raise ValueError(f"vertex {vertex.name} uses unknown tensor {missing[0]}")
        defaults = tuple(self.default(o.tensor) for o in vertex.operands)
        vertex = replace(vertex, defaults=defaults if any(defaults) else ())
        e = vertex.default
        if vertex.agg == "sum" and vertex.agg_labels and e != 0 and abs(e) != float("inf"):
            raise ProgramError(f"{vertex.name}: a sum over absent entries of value {e!r} "
                               "(give the inputs defaults whose operation gives 0 or inf, or "
                               "use min or max)", line=vertex.line)
        self.graph.add_node(vertex.name)
        self.graph.add_edges_from((o.tensor, vertex.name) for o in vertex.operands)
        self._vertices[vertex.name] = vertex
        key, number = _computation(vertex)
        self._computed.setdefault(key, (vertex.name, number))
        self.shapes[vertex.name] = tuple(shape)
        return Operand(vertex.name, vertex.labels)

    def computed(self, vertex: Vertex) -> Operand | None:
        """The tensor of a vertex already added that computes what `vertex` does (its
        labels named `vertex`'s way, in the order it holds them), if any: an intermediate
        a statement lowers to that another statement has (the forward pass's `A X` that a
        weight gradient reads again), computed once."""
        orders = [vertex.operands]
        if vertex.is_binary and vertex.op in COMMUTATIVE:
            orders.append(vertex.operands[::-1])
        for operands in orders:
            key, number = _computation(replace(vertex, operands=operands))
            if key in self._computed:
                found, their_number = self._computed[key]
                label = {n: l for l, n in number.items()}
                return Operand(found, tuple(label[their_number[l]]
                                            for l in self._vertices[found].labels))
        return None

    @property
    def vertices(self) -> list[Vertex]:
        """In topological order (the order they were added, which respects every edge)."""
        return list(self._vertices.values())

    def is_bounded(self, v: Vertex) -> bool:
        """Whether `v` belongs to a bounded statement (its own vertex or one named
        ``<statement>~<n>`` lowering a part of it)."""
        return v.name.split("~")[0] in self.bounded

    def vertex(self, name: str) -> Vertex:
        return self._vertices[name]

    def default(self, tensor: str) -> float:
        """The value of a tensor's absent entries (0 unless an input declares another)."""
        if tensor in self._vertices:
            return self._vertices[tensor].default
        return self.input_defaults.get(tensor, 0.0)

    def defaults(self) -> dict[str, float]:
        """Every tensor whose absent entries are not 0, and their value."""
        found = {v.name: v.default for v in self._vertices.values()}
        return {**self.input_defaults, **{n: d for n, d in found.items() if d != 0}}

    def labels_of(self, tensor: str) -> tuple[str, ...]:
        if tensor in self.inputs:
            return self.inputs[tensor]
        return self._vertices[tensor].labels

    def label_sizes(self, vertex: Vertex) -> dict[str, int]:
        """Size of every label of a vertex, read from its operands' shapes."""
        sizes: dict[str, int] = {}
        for operand in vertex.operands:
            sizes.update(zip(operand.labels, self.shapes[operand.tensor]))
        return sizes

    def consumers(self, tensor: str) -> list[Vertex]:
        """The vertices reading `tensor`, in topological order."""
        users = set(self.graph.successors(tensor))
        return [v for v in self._vertices.values() if v.name in users]

    def sinks(self) -> list[Vertex]:
        return [v for v in self._vertices.values() if self.graph.out_degree(v.name) == 0]


def _computation(v: Vertex) -> tuple[tuple, dict[str, int]]:
    """What `v` computes, whatever its labels are named and whatever order its output
    holds them in: its operation, aggregate, operand tensors and output labels, the labels
    numbered in order of first appearance in the operands; and that numbering."""
    number: dict[str, int] = {}
    for label in (l for o in v.operands for l in o.labels):
        number.setdefault(label, len(number))
    operands = tuple((o.tensor, tuple(number[l] for l in o.labels)) for o in v.operands)
    return (v.op, v.agg, operands, frozenset(number[l] for l in v.labels)), number
