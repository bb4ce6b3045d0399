"""What the SQL layer knows of a stored tensor relation, and of one compiled step."""
from __future__ import annotations

from dataclasses import dataclass, field
from math import prod

from ..kernels.spec import GatherSpec, KernelSpec


@dataclass(frozen=True)
class RelInfo:
    """A tensor relation in the database: table, key columns, shape of the values."""
    table: str
    tensor: str
    shape: tuple[int, ...]
    axes: tuple[int, ...]          # promoted axes, ascending
    columns: tuple[str, ...]       # key column per promoted axis

    @property
    def demoted(self) -> tuple[int, ...]:
        return tuple(a for a in range(len(self.shape)) if a not in self.axes)

    @property
    def sub_size(self) -> int:
        return prod(self.shape[a] for a in self.demoted)

    @property
    def is_scalar(self) -> bool:
        """True when the value column is a plain DOUBLE (nothing demoted)."""
        return not self.demoted

    def column(self, axis: int) -> str:
        return self.columns[self.axes.index(axis)]


@dataclass(frozen=True)
class KernelUse:
    """A kernel function a step calls; backends with Python UDFs register it.

    kind: ``kernel`` (KernelSpec over 1-2 values), ``take``/``stack`` (GatherSpec),
    ``aggregate`` (element-wise AGG over a list of values, then `post` unary code
    applied where the group had fewer than `expected` tuples).
    """
    name: str
    kind: str
    spec: KernelSpec | GatherSpec | None
    args_are_lists: tuple[bool, ...]
    returns_list: bool
    agg: str = "sum"
    size: int = 0
    constant: tuple[int, RelInfo] | None = None   # (input position, relation) bound once


@dataclass
class Step:
    """One unit of execution: load an input relation, or run one SQL statement."""
    kind: str                      # load | sql
    target: RelInfo
    sql: str = ""
    kernels: list[KernelUse] = field(default_factory=list)
    label: str = ""                # UCLC statement or "repartition ..."
    vertex: str | None = None      # the vertex this step computes, if any
