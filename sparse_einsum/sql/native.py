"""SQL calling the sparse_einsum C kernels, which both engines' extensions provide with
the same names and arguments (udf_kernels/postgres, udf_kernels/duckdb):

    se_kernel1/2(kernel spec, a[, b])   the kernel's result array (an input marked ~ in
                                        the spec is a packed sparse payload)
    se_value1/2(kernel spec, a[, b])    its one element, for a scalar result
    se_vsum/se_vmax/se_vmin(v)          element-wise aggregates
    se_wsum(w, v)                       sum of w * v, never forming w * v
    se_ksum(kernel spec, a, b)          sum of a product kernel's results, never forming
                                        them (DuckDB: one matrix product per run of rows)
    se_take(gather spec, a, pos)        one piece of an array (NULL when all +0.0)
                                        (PostgreSQL; DuckDB: se_split(gather spec, a),
                                        every piece at once)
    se_stack(gather spec, v, pos)       aggregate scattering pieces into an array
    se_densify(packed, size)            a packed sparse payload as a dense array
    se_sparsify(v)                      a dense array packed sparse
    se_fused(fused spec, a, b, ...)     a chain of element-wise operations in one pass
                                        (DuckDB and Spark: `Capabilities.fused_chains`)

The specs are the texts of `sparse_einsum.kernels.spec`. Engines differ in how a scalar
is passed where an array is expected (`array_of_scalar`) and in how they explode.
"""
from __future__ import annotations

from dataclasses import replace
from typing import ClassVar

from ..kernels.spec import FusedSpec, GatherSpec, KernelSpec
from ..program.ops import AGGREGATES
from .dialect import Dialect, WeightedSum, scaled_vector
from .steps import StepBuilder, TableRelation


def spec_literal(spec: KernelSpec | GatherSpec | str) -> str:
    text = spec if isinstance(spec, str) else spec.text
    return "'" + text.replace("'", "''") + "'"


class NativeDialect(Dialect):
    """Kernels, aggregates and stacks as calls of the C kernels."""
    array_of_scalar: ClassVar[str] = "{}"      # a scalar passed where an array may be
    functions: ClassVar[str] = ""              # before each kernel's name (Spark: its catalog)

    def fn(self, name: str) -> str:
        """The SQL name of the kernel function `name` (se_kernel2, se_vsum, ...)."""
        return self.functions + name

    def _arg(self, value: str, is_list: bool) -> str:
        return value if is_list else self.array_of_scalar.format(value)

    def scalar_kernel(self, code: str, args: tuple[str, ...]) -> str:
        spec = f"{code};sum;0;" + ";" * len(args)
        return f"{self.fn('se_value')}{len(args)}({spec_literal(spec)}, " \
               f"{', '.join(self._arg(a, False) for a in args)})"

    def kernel(self, step: StepBuilder, spec: KernelSpec, args: list[str], lists: list[bool],
               constant: tuple[int, TableRelation] | None = None,
               sparse: tuple[bool, ...] = ()) -> str:
        assert constant is None, "the C kernels take a one-tuple operand joined to every row"
        name = self.fn("se_kernel" if spec.n_out else "se_value")
        if any(sparse):     # a product-sum runs over the non-zeros, other kernels densify
            spec = replace(spec, packed=tuple(sparse))
        arrays = [self._arg(a, is_list) for a, is_list in zip(args, lists)]
        return f"{name}{spec.arity}({spec_literal(spec)}, {', '.join(arrays)})"

    def fused(self, spec: FusedSpec, args: list[str]) -> str:
        return f"{self.fn('se_fused')}({spec_literal(spec)}, {', '.join(args)})"

    def sparsify(self, step: StepBuilder, value: str) -> str:
        return f"{self.fn('se_sparsify')}({value})"

    def aggregate(self, step: StepBuilder, agg: str, value: str, size: int,
                  count: str | None, expected: int) -> str:
        result = f"{self.fn('se_v' + agg)}({value})"
        if count is None:
            return result
        clip = KernelSpec(AGGREGATES[agg].clip_zero, agg, (size,), 1, ((1,),), (size,))
        return (f"CASE WHEN {count} < {expected} THEN "
                f"{self.fn('se_kernel1')}({spec_literal(clip)}, {result}) "
                f"ELSE {result} END")

    def weighted_sum(self, spec: KernelSpec, args: list[str], lists: list[bool]
                     ) -> WeightedSum | None:
        k = scaled_vector(spec, lists)
        if k is not None:
            return WeightedSum({"se_w": args[1 - k], "val": args[k]},
                               f"{self.fn('se_wsum')}(se_w, val)", True)
        if self.capabilities.kernel_sums and spec.op == "mul" and spec.arity == 2 and all(lists):
            return WeightedSum({"se_a": args[0], "se_b": args[1]},
                               f"{self.fn('se_ksum')}({spec_literal(spec)}, se_a, se_b)", False)
        return None

    def stack(self, step: StepBuilder, spec: GatherSpec, value: str, position: str,
              value_is_list: bool) -> str:
        return (f"{self.fn('se_stack')}({spec_literal(spec)}, {self._arg(value, value_is_list)}, "
                f"{position})")
