"""PostgreSQL SQL: kernels from the sparse_einsum_kernels C extension.

PostgreSQL raises errors where IEEE arithmetic gives inf or nan (division by zero,
log of zero, exp overflow); those operations go through the C kernels, which
follow IEEE like NumPy.
"""
from __future__ import annotations

from ..kernels.spec import GatherSpec, KernelSpec
from .compiler import Dialect, StepBuilder
from .relations import RelInfo

# unary functions PostgreSQL evaluates exactly as NumPy does on every input
_SAFE_SCALAR = {"id", "neg", "relu", "abs", "mulc", "addc", "subc", "rsubc", "maxc", "minc"}


def _text(spec) -> str:
    return "'" + spec.text.replace("'", "''") + "'"


class PostgresDialect(Dialect):
    name = "postgres"
    param = "%s"

    def __init__(self, unlogged: bool = True):
        self.unlogged = unlogged

    def create(self, table: str, select: str) -> str:
        kind = "TEMP TABLE" if self.temporary else ("UNLOGGED TABLE" if self.unlogged else "TABLE")
        return f"CREATE {kind} {self.q(table)} AS {select}"

    def idiv(self, a: str, b: int) -> str:
        return f"({a} / {int(b)})"

    def range_from(self, n: int, column: str) -> str:
        return f"generate_series(0, {int(n) - 1}) AS r_{column}({column})"

    def zero(self, size: int | None) -> str:
        if size is None:
            return "CAST(0 AS float8)"
        return f"array_fill(CAST(0 AS float8), ARRAY[{int(size)}])"

    def scalar_unary(self, code: str, x: str) -> str:
        if code.split(":", 1)[0] in _SAFE_SCALAR:
            return super().scalar_unary(code, x)
        return f"(se_kernel1('{code};sum;0;;', ARRAY[{x}]))[1]"

    def scalar_binary(self, op: str, a: str, b: str) -> str:
        if op == "div":
            return f"(se_kernel2('div;sum;0;;;', ARRAY[{a}], ARRAY[{b}]))[1]"
        return super().scalar_binary(op, a, b)

    def kernel(self, step: StepBuilder, spec: KernelSpec, args: list[str], lists: list[bool],
               constant: tuple[int, RelInfo] | None = None) -> str:
        arrays = [a if is_list else f"ARRAY[{a}]" for a, is_list in zip(args, lists)]
        call = f"se_kernel{len(arrays)}({_text(spec)}, {', '.join(arrays)})"
        return call if spec.n_out else f"({call})[1]"

    def aggregate(self, step: StepBuilder, agg: str, value: str, size: int,
                  count: str | None, expected: int) -> str:
        result = f"se_v{agg}({value})"
        if count is None:
            return result
        clip = KernelSpec(("maxc" if agg == "max" else "minc") + ":0.0", agg, (size,), 1,
                          ((1,),), (size,))
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
