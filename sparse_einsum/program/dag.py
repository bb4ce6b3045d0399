"""The EinSum DAG: binary and unary vertices, each producing one tensor.

A vertex computes ``W[labels] = AGG_{agg labels} OP(U[..], V[..])`` (binary) or
``W[labels] = AGG_{agg labels} FN(U[..])`` (unary). Statements of a program are
lowered into vertices by `sparse_einsum.program.lower`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from math import prod

import networkx as nx

from ..kernels.numpy_kernels import annihilates_zero


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
    op: str                          # binary: mul add sub div; unary: kernel function code
    agg: str                         # sum | max | min
    operands: tuple[Operand, ...]    # one or two
    line: int = 0                    # statement line in the program, 0 if unknown

    @property
    def is_binary(self) -> bool:
        return len(self.operands) == 2

    @property
    def all_labels(self) -> tuple[str, ...]:
        """Output labels, then aggregated labels, in order of first appearance."""
        seen = dict.fromkeys(self.labels)
        for operand in self.operands:
            seen.update(dict.fromkeys(operand.labels))
        return tuple(seen)

    @property
    def agg_labels(self) -> tuple[str, ...]:
        return tuple(l for l in self.all_labels if l not in self.labels)

    @property
    def annihilates(self) -> bool:
        """True when a zero input gives a zero output (missing tuples stay missing)."""
        if self.is_binary:
            return self.op == "mul"
        return annihilates_zero(self.op)


@dataclass
class Dag:
    """Vertices in topological order, input tensors with their labels, and shapes."""
    inputs: dict[str, tuple[str, ...]]
    vertices: list[Vertex]
    outputs: list[str]
    shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)

    def vertex(self, name: str) -> Vertex:
        for v in self.vertices:
            if v.name == name:
                return v
        raise KeyError(name)

    def labels_of(self, tensor: str) -> tuple[str, ...]:
        if tensor in self.inputs:
            return self.inputs[tensor]
        return self.vertex(tensor).labels

    def label_sizes(self, vertex: Vertex) -> dict[str, int]:
        """Size of every label of a vertex, read from its operands' shapes."""
        sizes: dict[str, int] = {}
        for operand in vertex.operands:
            sizes.update(zip(operand.labels, self.shapes[operand.tensor]))
        return sizes

    def size(self, tensor: str) -> int:
        return prod(self.shapes[tensor])

    def consumers(self, tensor: str) -> list[Vertex]:
        return [v for v in self.vertices if any(o.tensor == tensor for o in v.operands)]

    def graph(self) -> nx.DiGraph:
        """Tensors as nodes; an edge from each operand tensor to the vertex using it."""
        g = nx.DiGraph()
        g.add_nodes_from(self.inputs)
        for v in self.vertices:
            g.add_node(v.name)
            for position, operand in enumerate(v.operands):
                g.add_edge(operand.tensor, v.name, position=position)
        return g
