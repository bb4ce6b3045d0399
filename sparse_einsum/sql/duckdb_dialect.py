"""DuckDB SQL: NumPy kernels registered as arrow UDFs, wide SUM for small vectors."""
from __future__ import annotations

from ..kernels.build import row_major_strides
from ..kernels.spec import GatherSpec, KernelSpec
from .compiler import Dialect, StepBuilder
from .relations import RelInfo

# up to this many elements, list aggregates use one SQL aggregate per element
WIDE_AGGREGATE_LIMIT = 256


def _scaled_vector(spec: KernelSpec, lists: list[bool]) -> int | None:
    """Position of the vector when the kernel is vector * scalar in the vector's order."""
    if spec.op != "mul" or spec.arity != 2 or spec.n_out != len(spec.dims) or sum(lists) != 1:
        return None
    k = lists.index(True)
    identity = tuple(row_major_strides(list(spec.dims)))
    return k if spec.strides[k] == identity and not any(spec.strides[1 - k]) else None


def with_missing_zeros(result: str, agg: str, count: str | None, expected: int) -> str:
    """max/min of a group that has fewer tuples than expected also sees the missing zeros."""
    if count is None:
        return result
    fn = "greatest" if agg == "max" else "least"
    return (f"CASE WHEN {count} < {expected} THEN "
            f"list_transform({result}, lambda x: {fn}(x, 0.0)) ELSE {result} END")


class DuckDBDialect(Dialect):
    name = "duckdb"

    def range_from(self, n: int, column: str) -> str:
        return f"range({int(n)}) AS r_{column}({column})"

    def zero(self, size: int | None) -> str:
        if size is None:
            return "CAST(0.0 AS DOUBLE)"
        return f"list_resize(CAST([] AS DOUBLE[]), {int(size)}, CAST(0.0 AS DOUBLE))"

    def broadcast_constants(self) -> bool:
        return True

    def kernel(self, step: StepBuilder, spec: KernelSpec, args: list[str], lists: list[bool],
               constant: tuple[int, RelInfo] | None = None) -> str:
        scaled = _scaled_vector(spec, lists) if constant is None else None
        if scaled is not None:   # a built-in beats the UDF for vector * scalar (measured)
            vector, scalar = args[scaled], args[1 - scaled]
            return f"list_transform({vector}, lambda x: x * {scalar})"
        name = step.use("kernel", spec, tuple(lists), spec.n_out > 0, constant=constant)
        return f"{name}({', '.join(args)})"

    def aggregate(self, step: StepBuilder, agg: str, value: str, size: int,
                  count: str | None, expected: int) -> str:
        if size > WIDE_AGGREGATE_LIMIT:
            name = step.use("aggregate", None, (True,), True, agg=agg, size=expected)
            return f"{name}(list({value}), {count or '0'})"
        wide = "list_value(" + ", ".join(f"{agg}({value}[{k + 1}])" for k in range(size)) + ")"
        return with_missing_zeros(wide, agg, count, expected)

    def explode(self, step: StepBuilder, spec: GatherSpec, table: str, kept: list[str]) -> str:
        pieces = "r.val"
        if spec.sub_dims:   # a UDF returns every piece at once (NULL when all zero)
            pieces = f"{step.use('split', spec, (True,), True)}(r.val)"
        cols = ", ".join(kept + [f"unnest(range({spec.positions})) AS p", f"unnest({pieces}) AS val"])
        return f"SELECT {cols} FROM {table} AS r"

    def stack(self, step: StepBuilder, spec: GatherSpec, value: str, position: str,
              value_is_list: bool) -> str:
        name = step.use("stack", spec, (value_is_list,), True)
        return f"{name}(list({{'p': {position}, 'v': {value}}}))"
