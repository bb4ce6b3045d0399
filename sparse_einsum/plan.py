"""Plans: how every vertex splits its labels between keys and payloads, and what follows.

A plan gives each vertex a `Choice`: a tile size per label (1: promoted, the label's
size: demoted, between: tiled; see `sparse_einsum.tiling`). A label has one tile size
throughout its vertex, so the tiling of each operand and of the output follows. Where
the producer of a tensor tiles it differently from a consumer, a repartition runs
between them.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Mapping

from .program.dag import Dag, Operand, Vertex
from .program.ops import render_uclc
from .tiling import Tiling, key_range, keyed_axes, payload_axes, render


@dataclass(frozen=True)
class Choice:
    """A vertex's decomposition: the tile size of each of its labels, and which operands
    it reads with sparse payloads (the others, and its output, are dense)."""
    tiles: tuple[tuple[str, int], ...]         # (label, tile size), sorted by label
    sparse: frozenset[int] = frozenset()       # positions of operands read sparse

    @classmethod
    def of(cls, tiles: Mapping[str, int], sparse=()) -> "Choice":
        return cls(tuple(sorted(tiles.items())), frozenset(sparse))

    @classmethod
    def promoting(cls, v: Vertex, sizes: Mapping[str, int], promoted) -> "Choice":
        """Labels in `promoted` promoted, the others demoted (the paper's space)."""
        return cls.of({l: 1 if l in promoted else sizes[l] for l in v.all_labels})

    def __post_init__(self) -> None:
        # set here, not as cached properties, which take a lock on first use (the optimizer
        # makes a thousand choices per program and looks them up many times)
        object.__setattr__(self, "_sizes", dict(self.tiles))
        object.__setattr__(self, "_tilings", {})     # tiling(), per labels asked
        object.__setattr__(self, "_hash", hash((self.tiles, self.sparse)))

    def __hash__(self) -> int:
        return self._hash

    def reading(self, sparse: frozenset[int]) -> "Choice":
        """The same tile sizes with the operands at positions `sparse` read sparse."""
        if sparse == self.sparse:
            return self
        other = Choice(self.tiles, sparse)
        object.__setattr__(other, "_tilings", self._tilings)     # the same tilings
        return other

    @property
    def sizes(self) -> dict[str, int]:
        """Label -> tile size (do not change it)."""
        return self._sizes

    def tile(self, label: str) -> int:
        return self._sizes[label]

    def tiling(self, labels: tuple[str, ...]) -> Tiling:
        found = self._tilings.get(labels)
        if found is None:
            tiles = self._sizes
            found = self._tilings[labels] = tuple(tiles[l] for l in labels)
        return found


def factor_reader(dag: Dag, v: Vertex) -> Vertex | None:
    """The one statement reading `v`, when it sums a product with `v` (a linear kernel a
    scalar factor of `v` can move out of, see `sql.factor`); None otherwise."""
    readers = dag.consumers(v.name)
    if len(readers) != 1 or v.name in dag.outputs:
        return None
    (reader,) = readers
    uses = sum(o.tensor == v.name for o in reader.operands)
    if reader.is_binary and reader.op == "mul" and reader.agg == "sum" and uses == 1:
        return reader
    return None


def recomputed(dag: Dag, v: Vertex, one_tuple: bool) -> int:
    """The readers that compute `v` again each, in their own statements, instead of
    reading a table of it (`sql.pipeline`): those of an element-wise vertex (nothing
    aggregated) that two or more vertices read, is not an output, and joins nothing
    keyed (one operand, or every relation `one_tuple`), and into which no intermediate
    streams (each operand an input, an output or read by another vertex too); 0 for any
    other vertex."""
    if v.agg_labels or v.name in dag.outputs or not (len(v.operands) == 1 or one_tuple):
        return 0
    readers = dag.graph.out_degree       # the vertices reading a tensor
    if any(o.tensor not in dag.inputs and o.tensor not in dag.outputs
           and readers(o.tensor) == 1 for o in v.operands):
        return 0
    return readers(v.name) if readers(v.name) > 1 else 0


def scalar_factor(dag: Dag, v: Vertex, choice: Choice) -> int | None:
    """The position of F when vertex `v` = F * Z, under `choice`, only scales Z's payloads
    by scalars: a product without a sum, F's tuples scalars, Z's keyed payloads laid out
    as the output's (such a product can pass Z's payload through with F's value beside
    it, see `sql.factor`); None otherwise."""
    if not (v.is_binary and v.op == "mul" and not v.agg_labels):
        return None
    tilings = [choice.tiling(o.labels) for o in v.operands]
    scalar = [k for k, t in enumerate(tilings) if not payload_axes(t)]
    if len(scalar) != 1:
        return None
    f, z = v.operands[scalar[0]], v.operands[1 - scalar[0]]
    carried = [z.labels[a] for a in payload_axes(tilings[1 - scalar[0]])]
    out = [v.labels[a] for a in payload_axes(choice.tiling(v.labels))]
    if (carried != out or len(set(z.labels)) != len(z.labels)
            or not keyed_axes(tilings[1 - scalar[0]], dag.shapes[z.tensor])
            or set(v.labels) != set(f.labels) | set(z.labels)):
        return None
    return scalar[0]


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
    statement: float = 0.0       # scheduling the statement (engines with a fixed cost each)

    @property
    def total(self) -> float:
        return self.load + self.join + self.aggregate + self.kernel + self.repartition + \
            self.shuffle + self.statement

    def as_dict(self) -> dict[str, float]:
        return {**asdict(self), "total": self.total}


@dataclass
class Plan:
    choices: dict[str, Choice]                 # vertex name -> its decomposition
    name: str = ""
    cost: float | None = None                  # estimated total, None when not priced
    statement_costs: dict[str, StatementCost] = field(default_factory=dict)
    fits: bool = True                          # every tuple and kernel call within the cap
    aliases: tuple[str, ...] = ()              # other strategies that chose this plan

    @classmethod
    def promoting(cls, dag: Dag, promoted: Mapping[str, object], name: str = "") -> "Plan":
        """The plan promoting, per vertex, the labels given and demoting the others."""
        return cls({v.name: Choice.promoting(v, dag.label_sizes(v), promoted[v.name])
                    for v in dag.vertices}, name=name)

    def keyed(self, dag: Dag, vertex: Vertex) -> frozenset[str]:
        """Labels of a vertex with a key column (promoted or tiled)."""
        sizes = dag.label_sizes(vertex)
        return frozenset(l for l, b in self.choices[vertex.name].tiles if b < sizes[l])

    def operand_tiling(self, vertex: Vertex, operand: Operand) -> Tiling:
        return self.choices[vertex.name].tiling(operand.labels)

    def operand_sparse(self, vertex: Vertex, k: int) -> bool:
        """Whether the vertex reads its k-th operand with sparse payloads."""
        return k in self.choices[vertex.name].sparse

    def output_tiling(self, vertex: Vertex) -> Tiling:
        return self.choices[vertex.name].tiling(vertex.labels)

    def produced_tiling(self, dag: Dag, tensor: str) -> Tiling | None:
        """The tiling a tensor is produced in; None for inputs (loaded as needed)."""
        if tensor in dag.inputs:
            return None
        return self.output_tiling(dag.vertex(tensor))

    def repartitions(self, dag: Dag) -> list[tuple[str, Tiling, Tiling]]:
        """(tensor, from tiling, to tiling) for each producer/consumer mismatch."""
        moves = []
        for v in dag.vertices:
            for operand in v.operands:
                have = self.produced_tiling(dag, operand.tensor)
                need = self.operand_tiling(v, operand)
                if have is not None and have != need and (operand.tensor, have, need) not in moves:
                    moves.append((operand.tensor, have, need))
        return moves

    # -- rendering ----------------------------------------------------------
    def uclc(self, dag: Dag, vertex: Vertex) -> str:
        """The vertex in UCLC notation, e.g. ``Z[I/1024,g] = AH[I/1024,f] * W[f,g]``."""
        choice, sizes = self.choices[vertex.name], dag.label_sizes(vertex)

        def ref(name: str, labels: tuple[str, ...], sparse: bool = False) -> str:
            return (f"{'~' if sparse else ''}{name}"
                    f"[{','.join(render(l, choice.tile(l), sizes[l]) for l in labels)}]")

        body = render_uclc(vertex.op, *(ref(o.tensor, o.labels, k in choice.sparse)
                                        for k, o in enumerate(vertex.operands)))
        if vertex.agg != "sum" and vertex.agg_labels:
            body = f"{vertex.agg}({body})"
        return f"{ref(vertex.name, vertex.labels)} = {body}"

    def schema(self, dag: Dag, vertex: Vertex, operand: Operand | None = None) -> str:
        """Relational schema of an operand (or of the output), e.g.
        ``H(INT j_tile, DOUBLE[1024][64] val)`` or ``A(INT i_tile, SPARSE[1024][2708] val)``."""
        tensor, labels = (vertex.name, vertex.labels) if operand is None else (
            operand.tensor, operand.labels)
        choice = self.choices[vertex.name]
        sparse = operand is not None and vertex.operands.index(operand) in choice.sparse
        keys, dims = [], []
        for label, n in zip(labels, dag.shapes[tensor]):
            b = choice.tile(label)
            if b < n:
                keys.append(f"INT {label}_tile" if b > 1 else f"INT {label}")
            if b > 1:
                dims.append(b)
        value = ("SPARSE" if sparse else "DOUBLE") + "".join(f"[{d}]" for d in dims) + " val"
        return f"{tensor}({', '.join(keys + [value])})"

    def describe(self, dag: Dag) -> str:
        lines = []
        for v in dag.vertices:
            schemas = [self.schema(dag, v, o) for o in v.operands] + [self.schema(dag, v)]
            lines.append(f"{self.uclc(dag, v):<48} {'; '.join(schemas)}")
        return "\n".join(lines)


def tiles_in(choice: Choice, sizes: Mapping[str, int]) -> dict[str, tuple[int, int]]:
    """Per label: (key range, payload length) under a choice."""
    return {l: (key_range(b, sizes[l]) if b < sizes[l] else 1, b if b > 1 else 1)
            for l, b in choice.tiles}
