"""Plans: which labels every vertex promotes, and what that implies.

A plan maps each vertex to its set of promoted labels. A label has one status
throughout its vertex, so the decomposition of each operand and of the output
follows: an axis is promoted when its label is. Where the producer of a tensor
decomposes it differently from a consumer, a repartition runs between them.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

from .program.dag import Dag, Operand, Vertex
from .program.ops import render_uclc


def promoted_axes(labels: tuple[str, ...], promoted: frozenset[str]) -> tuple[int, ...]:
    """Axes of a tensor indexed by `labels` whose label is promoted."""
    return tuple(a for a, l in enumerate(labels) if l in promoted)


@dataclass(frozen=True)
class StatementCost:
    """Estimated cost of one vertex under a plan, split by where it comes from."""
    load: float = 0.0            # array inputs this vertex is the first to read this way
    join: float = 0.0
    aggregate: float = 0.0
    kernel: float = 0.0
    repartition: float = 0.0     # repartitions of its operands
    est_tuples: float = 0.0      # estimated tuples of its output relation
    est_join_tuples: float = 0.0
    shuffle: float = 0.0         # data moved between tasks (distributed engines)
    exchanges: tuple[str, ...] = ()   # what is shuffled or broadcast, by which key

    @property
    def total(self) -> float:
        return self.load + self.join + self.aggregate + self.kernel + self.repartition + \
            self.shuffle

    def as_dict(self) -> dict[str, float]:
        return {**asdict(self), "total": self.total}


@dataclass
class Plan:
    promoted: dict[str, frozenset[str]]        # vertex name -> promoted labels
    name: str = ""
    cost: float | None = None                  # estimated total, None when not priced
    statement_costs: dict[str, StatementCost] = field(default_factory=dict)
    fits: bool = True                          # every tuple and kernel call within the cap
    aliases: tuple[str, ...] = ()              # other strategies that chose this plan

    def promoted_labels(self, vertex: Vertex) -> frozenset[str]:
        return self.promoted[vertex.name]

    def operand_axes(self, vertex: Vertex, operand: Operand) -> tuple[int, ...]:
        """Promoted axes of an operand tensor at this use."""
        return promoted_axes(operand.labels, self.promoted[vertex.name])

    def output_axes(self, vertex: Vertex) -> tuple[int, ...]:
        return promoted_axes(vertex.labels, self.promoted[vertex.name])

    def produced_axes(self, dag: Dag, tensor: str) -> tuple[int, ...] | None:
        """Decomposition a tensor is produced in; None for inputs (loaded as needed)."""
        if tensor in dag.inputs:
            return None
        return self.output_axes(dag.vertex(tensor))

    def repartitions(self, dag: Dag) -> list[tuple[str, tuple[int, ...], tuple[int, ...]]]:
        """(tensor, from axes, to axes) for each producer/consumer mismatch."""
        moves = []
        for v in dag.vertices:
            for operand in v.operands:
                have = self.produced_axes(dag, operand.tensor)
                need = self.operand_axes(v, operand)
                if have is not None and have != need and (operand.tensor, have, need) not in moves:
                    moves.append((operand.tensor, have, need))
        return moves

    # -- rendering ----------------------------------------------------------
    def uclc(self, vertex: Vertex) -> str:
        """The vertex in upper-case-lower-case notation, e.g. ``Z[I,g] = AH[I,f] * W[f,g]``."""
        up = self.promoted[vertex.name]

        def ref(name: str, labels: tuple[str, ...]) -> str:
            return f"{name}[{','.join(l.upper() if l in up else l for l in labels)}]"

        body = render_uclc(vertex.op, *(ref(o.tensor, o.labels) for o in vertex.operands))
        if vertex.agg != "sum" and vertex.agg_labels:
            body = f"{vertex.agg}({body})"
        return f"{ref(vertex.name, vertex.labels)} = {body}"

    def schema(self, dag: Dag, vertex: Vertex, operand: Operand | None = None) -> str:
        """Relational schema of an operand (or of the output), e.g. ``H(INT j, DOUBLE[64] val)``."""
        tensor, labels = (vertex.name, vertex.labels) if operand is None else (
            operand.tensor, operand.labels)
        up = self.promoted[vertex.name]
        shape = dag.shapes[tensor]
        keys = [f"INT {l}" for l in labels if l in up]
        dims = [shape[a] for a, l in enumerate(labels) if l not in up]
        value = "DOUBLE" + "".join(f"[{d}]" for d in dims) + " val"
        return f"{tensor}({', '.join(keys + [value])})"

    def describe(self, dag: Dag) -> str:
        lines = []
        for v in dag.vertices:
            schemas = [self.schema(dag, v, o) for o in v.operands] + [self.schema(dag, v)]
            lines.append(f"{self.uclc(v):<48} {'; '.join(schemas)}")
        return "\n".join(lines)
