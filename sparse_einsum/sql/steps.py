"""What the SQL layer knows of a tensor relation stored in a table, and of one compiled step."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..kernels.spec import GatherSpec, KernelSpec
from ..tiling import Tiling, keyed_axes, payload_axes, payload_size
from .nested import Formula


def key_column(label: str, axis: int) -> str:
    """The key column of a promoted axis: unique within its table on every engine, even
    where labels differ only in case (DuckDB compares quoted names case-insensitively)."""
    return f"{label}_{axis}"


@dataclass(frozen=True)
class TableRelation:
    """A tensor relation in a database table: its tiling says which axes are key columns
    and what the payload holds (see `sparse_einsum.tiling`)."""
    table: str
    tensor: str
    shape: tuple[int, ...]
    tiling: Tiling                 # tile size per axis
    labels: tuple[str, ...]        # the tensor's labels, one per axis
    sparse: bool = False           # payloads packed sparse (see `sparse_einsum.blocks`)
    # a one-tuple array the engine holds once per machine and kernels read by name, not
    # from a table (`Dialect.broadcasts`)
    broadcast: bool = False
    value: str = "val"             # the column of its values (others: `sql.shared`)

    @property
    def keyed(self) -> tuple[int, ...]:
        """Axes with a key column, ascending."""
        return keyed_axes(self.tiling, self.shape)

    @property
    def columns(self) -> tuple[str, ...]:
        """Key column per keyed axis."""
        return tuple(key_column(self.labels[a], a) for a in self.keyed)

    @property
    def sub_size(self) -> int:
        """Elements of a payload."""
        return payload_size(self.tiling)

    @property
    def is_scalar(self) -> bool:
        """True when the value column is a plain DOUBLE (no payload axis)."""
        return self.sub_size == 1 and not payload_axes(self.tiling)

    def column(self, axis: int) -> str:
        return key_column(self.labels[axis], axis)


@dataclass(frozen=True)
class KernelUse:
    """A kernel function a step calls; backends with Python UDFs register it.

    kind: ``kernel`` (KernelSpec over 1-2 values), ``split``/``stack`` (GatherSpec),
    ``aggregate`` (element-wise AGG over a list of values; a group with fewer than
    `expected_count` tuples also sees the zeros of the missing ones).
    """
    name: str
    kind: str
    spec: KernelSpec | GatherSpec | None
    args_are_lists: tuple[bool, ...]
    returns_list: bool
    agg: str = "sum"
    expected_count: int = 0
    constant: tuple[int, TableRelation] | None = None   # (input position, relation) bound once
    sparse: tuple[bool, ...] = ()                 # per argument: a packed sparse payload


@dataclass
class Step:
    """One unit of execution: load an input relation, or run one SQL statement. It writes
    its `target`'s table and reads the tables in `reads`, set where it is built."""
    kind: str                      # load | sql
    target: TableRelation
    sql: str = ""
    kernels: list[KernelUse] = field(default_factory=list)
    label: str = ""                # UCLC statement or "repartition ..."
    vertex: str | None = None      # the vertex this step computes, if any
    query: str = ""                # the SELECT whose rows `sql` stores in the target
    # single-use intermediates computed inside this statement (common table expressions,
    # in order) instead of in tables of their own; see `sql.pipeline`
    pipelined: tuple["Step", ...] = ()
    # element-wise vertices computed inside this step's kernel call (`sql.chains`)
    chained: tuple[str, ...] = ()
    # the tables it reads: in its statement (also those that what is pipelined into it
    # reads) or as its kernels' constants
    reads: frozenset[str] = frozenset()
    # its statement makes rows that no table holds (ranges of keys, explodes), so a
    # relation it reads may be joined to many rows
    generates_rows: bool = False
    # every relation it reads and the one it writes is one tuple, and it makes no rows:
    # nothing in it runs in parallel but its kernels, which have threads of their own
    one_tuple: bool = False
    # its vertex is computed again in each statement reading it (`plan.recomputed`)
    recomputed: bool = False
    # a stack into one tuple: its gather spec and the query of its pieces (pos, val),
    # which an engine may scatter itself instead of aggregating them
    gather: tuple[str, str] | None = None
    # its columns over relations holding one tuple each, nested into the statement it
    # streams into (`sql.nested`)
    formula: Formula | None = None
    # its columns are the values of statements merged into it (`sql.shared`)
    shared: bool = False


def invariant(steps: list[Step], read_in_place: frozenset[str], kept: set[str]) -> set[str]:
    """The tables of the loads, and of the statements (but those making `kept`) that read
    only those: the same in every run on the same inputs, whatever the tables read in
    place hold."""
    found: set[str] = set()
    tables = read_in_place | {step.target.table for step in steps}
    for step in steps:
        if step.kind == "load" or (step.target.table not in kept
                                   and step.reads & tables <= found):
            found.add(step.target.table)
    return found


class StepBuilder:
    """Collects the kernels one step needs and names them uniquely."""

    def __init__(self, prefix: str, counter: list[int]):
        self.prefix, self.counter, self.kernels = prefix, counter, []
        self.generates_rows = False      # see `Step.generates_rows`

    def use(self, kind: str, spec, lists: tuple[bool, ...], returns_list: bool, **kw) -> str:
        self.counter[0] += 1
        name = f"{self.prefix}_f{self.counter[0]}"
        self.kernels.append(KernelUse(name, kind, spec, lists, returns_list, **kw))
        return name
