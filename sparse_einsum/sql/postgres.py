"""PostgreSQL SQL: kernels from the sparse_einsum_kernels C extension.

PostgreSQL raises errors where IEEE arithmetic gives inf or nan (division by zero,
log of zero, exp overflow); the operation table marks those operations, which go
through the C kernels, which follow IEEE like NumPy.
"""
from __future__ import annotations

from ..kernels.spec import GatherSpec, KernelSpec
from ..program.ops import AGGREGATES
from .dialect import Dialect
from .steps import StepBuilder, TableRelation


def _text(spec: KernelSpec | GatherSpec) -> str:
    return "'" + spec.text.replace("'", "''") + "'"


class PostgresDialect(Dialect):
    name = engine = sqlglot = "postgres"
    param = "%s"
    table_kind = "UNLOGGED TABLE"
    int_division = "({a} / {b})"
    range_sql = "generate_series(0, {last}) AS r_{col}({col})"
    zero_sql = "CAST(0 AS float8)"
    zero_array_sql = "array_fill(CAST(0 AS float8), ARRAY[{size}])"
    finite_sql = "({x} NOT IN ('NaN'::float8, 'Infinity'::float8, '-Infinity'::float8))"
    isnan_sql = "({x} = 'NaN'::float8)"

    def scalar_kernel(self, code: str, args: tuple[str, ...]) -> str:
        arrays = ", ".join(f"ARRAY[{a}]" for a in args)
        spec = f"{code};sum;0;" + ";" * len(args)
        return f"(se_kernel{len(args)}('{spec}', {arrays}))[1]"

    def kernel(self, step: StepBuilder, spec: KernelSpec, args: list[str], lists: list[bool],
               constant: tuple[int, TableRelation] | None = None,
               sparse: tuple[bool, ...] = ()) -> str:
        arrays = [(f"se_densify({a}, {size})" if packed else a) if is_list else f"ARRAY[{a}]"
                  for a, is_list, packed, size in zip(args, lists, sparse or (False,) * len(args),
                                                      spec.in_sizes)]
        call = f"se_kernel{len(arrays)}({_text(spec)}, {', '.join(arrays)})"
        return call if spec.n_out else f"({call})[1]"

    def sparsify(self, step: StepBuilder, value: str) -> str:
        return f"se_sparsify({value})"

    def aggregate(self, step: StepBuilder, agg: str, value: str, size: int,
                  count: str | None, expected: int) -> str:
        result = f"se_v{agg}({value})"
        if count is None:
            return result
        clip = KernelSpec(AGGREGATES[agg].clip_zero, agg, (size,), 1, ((1,),), (size,))
        return (f"CASE WHEN {count} < {expected} THEN se_kernel1({_text(clip)}, {result}) "
                f"ELSE {result} END")

    def explode(self, step: StepBuilder, spec: GatherSpec, table: str, kept: list[str]) -> str:
        cols = ", ".join(kept)
        if not spec.sub_dims:
            return (f"SELECT {cols + ', ' if cols else ''}e.p - 1 AS p, e.v AS val FROM {table} AS r "
                    "CROSS JOIN LATERAL unnest(r.val) WITH ORDINALITY AS e(v, p)")
        return (f"SELECT {cols + ', ' if cols else ''}g.p AS p, se_take({_text(spec)}, r.val, g.p) "
                f"AS val FROM {table} AS r CROSS JOIN generate_series(0, {spec.positions - 1}) AS g(p)")

    def stack(self, step: StepBuilder, spec: GatherSpec, value: str, position: str,
              value_is_list: bool) -> str:
        array = value if value_is_list else f"ARRAY[{value}]"
        return f"se_stack({_text(spec)}, {array}, {position})"
