"""PostgreSQL SQL: kernels from the sparse_einsum_kernels C extension.

PostgreSQL raises errors where IEEE arithmetic gives inf or nan (division by zero,
log of zero, exp overflow); the operation table marks those operations, which go
through the C kernels, which follow IEEE like NumPy.
"""
from __future__ import annotations

from ..capabilities import Capabilities
from ..kernels.spec import GatherSpec, KernelSpec, is_matrix_product
from .native import NativeDialect, spec_literal
from .steps import StepBuilder


class PostgresDialect(NativeDialect):
    name = engine = sqlglot = "postgres"
    param = "%s"
    table_kind = "UNLOGGED TABLE"     # inside the session's transaction (Backend.scope)
    # payload rows up to a page (1,000 doubles) stay in the row, uncompressed: kernels read
    # them without a TOAST fetch, and writing them tries no compression (measured: the
    # per-row vector x matrix 20% faster)
    table_options = " WITH (toast_tuple_target = 8160)"
    int_division = "({a} / {b})"
    range_sql = "generate_series(0, {last}) AS r_{col}({col})"
    zero_sql = "CAST(0 AS float8)"
    array_sql = "array_fill({value}, ARRAY[{size}])"
    finite_sql = "({x} NOT IN ('NaN'::float8, 'Infinity'::float8, '-Infinity'::float8))"
    isnan_sql = "({x} = 'NaN'::float8)"
    nonzero_sql = "({x} <> 0 OR CAST({x} AS text) = '-0')"
    array_of_scalar = "ARRAY[{}]"
    # computed once: inlined, the planner may run a streamed aggregate again for every row
    # of a nested loop's outer side, once more at each level of a chain
    streamed_sql = "{name} AS MATERIALIZED ({query})"
    capabilities = Capabilities(packed_stacks=True, constants_once=False)
    packed_stack_sql = ("array_agg(CAST({pos} AS float8) ORDER BY {pos}) "
                        "|| array_agg({val} ORDER BY {pos})")
    kernels = "native C: the sparse_einsum_kernels extension"

    def shared_matrix_kernel(self, spec: KernelSpec, args: list[str]) -> str | None:
        """se_kernel2_rows: the rows against the one matrix in chunks of one BLAS product each
        (OVER (): no partitioning, so no sort; the rows stream through in their order)."""
        if not is_matrix_product(spec):
            return None
        return f"se_kernel2_rows({spec_literal(spec)}, {args[0]}, {args[1]}) OVER ()"

    def explode(self, step: StepBuilder, spec: GatherSpec, table: str, kept: list[str]) -> str:
        cols = ", ".join(kept)
        if not spec.sub_dims:
            return (f"SELECT {cols + ', ' if cols else ''}e.p - 1 AS p, e.v AS val FROM {table} AS r "
                    "CROSS JOIN LATERAL unnest(r.val) WITH ORDINALITY AS e(v, p)")
        return (f"SELECT {cols + ', ' if cols else ''}g.p AS p, se_take({spec_literal(spec)}, r.val, "
                f"g.p) AS val FROM {table} AS r CROSS JOIN generate_series(0, {spec.positions - 1}) "
                "AS g(p)")
