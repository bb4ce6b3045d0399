"""SQL calling kernels that the backend registers per statement as Arrow UDFs (the bodies
are `kernels.arrow_kernels`, the same on DuckDB without its extension and on Spark):
`StepBuilder.use` names each UDF and records what the backend must register. Engines
differ in how a group's values become a list (`collect_sql`), how a position and a
value pair up for a stack (`pair_sql`), and how a list explodes: each engine's
``explode_list(pieces, positions, table, kept)`` gives the rows of `kept`, p and val, one
per element p of the list `pieces` of each row."""
from __future__ import annotations

from typing import ClassVar

from ..capabilities import Capabilities
from ..kernels.spec import GatherSpec, KernelSpec
from .dialect import Computed, Dialect
from .steps import StepBuilder, TableRelation


class UDFDialect(Dialect):
    """Kernels, sparsify, element-wise aggregates, splits and stacks as Arrow UDFs."""
    capabilities = Capabilities(constants_once=True)
    collect_sql: ClassVar[str] = "list({v})"                # a group's values as one list
    pair_sql: ClassVar[str] = "{{'p': {p}, 'v': {v}}}"      # a struct {p: position, v: value}

    def kernel(self, step: StepBuilder, spec: KernelSpec, args: list[str], lists: list[bool],
               constant: tuple[int, TableRelation] | None = None,
               sparse: tuple[bool, ...] = ()) -> str:
        name = step.use("kernel", spec, tuple(lists), spec.n_out > 0, constant=constant,
                        sparse=tuple(sparse) or (False,) * len(args))
        return f"{name}({', '.join(args)})"

    def sparsify(self, step: StepBuilder, value: str) -> str:
        return f"{step.use('sparsify', None, (True,), True)}({value})"

    def aggregate(self, step: StepBuilder, agg: str, value: str, size: int,
                  count: str | None, expected: int) -> str:
        # without a count every group is complete: none is short of `expected` tuples
        name = step.use("aggregate", None, (True,), True, agg=agg,
                        expected_count=expected if count else 0)
        return f"{name}({self.collect_sql.format(v=value)}, {count or '0'})"

    def explode(self, step: StepBuilder, spec: GatherSpec, table: str, kept: list[str]) -> str:
        pieces = "r.val"
        if spec.sub_dims:   # a UDF returns every piece at once (NULL when all +0.0)
            pieces = Computed(f"{step.use('split', spec, (True,), True)}(r.val)")
        return self.explode_list(pieces, spec.positions, table, kept)

    def stack(self, step: StepBuilder, spec: GatherSpec, value: str, position: str,
              value_is_list: bool) -> str:
        name = step.use("stack", spec, (value_is_list,), True)
        return f"{name}({self.collect_sql.format(v=self.pair_sql.format(p=position, v=value))})"
