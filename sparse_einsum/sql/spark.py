"""Spark SQL: every intermediate a temporary view, in two sibling dialects over one shared
syntax.

`SparkNativeDialect` (a session with the kernel jar, udf_kernels/spark) calls the JVM
kernels of the jar's function catalog, the contract the C extensions share
(`sql.native`), by their catalog-qualified names: scalar functions that Spark's generated
code calls directly, and aggregates that Spark runs as partial aggregates (summed in
each task before the shuffle).

`SparkDialect` (the fallback, a session without the jar) runs the NumPy kernels DuckDB
calls (`kernels.arrow_kernels`, called by the SQL of `sql.udf`), registered per
statement as Arrow UDFs that run on whole batches in the executors' Python workers.
Element-wise aggregates of DOUBLE arrays are ``collect_list`` with one Arrow UDF per
batch of groups (``np.add.reduceat``). Operations whose Spark SQL differs from NumPy
(division by zero raises an error under ANSI or gives NULL, ``ln`` of non-positive
numbers gives NULL) are marked in the operation table and call the backend's scalar UDFs
``se_<op>``.

Repartitions are Spark's own ``posexplode`` and ``GROUP BY`` (a shuffle on the target keys).
"""
from __future__ import annotations

from ..capabilities import Capabilities
from ..kernels.build import row_major_strides
from ..kernels.spec import GatherSpec, KernelSpec
from ..program.ops import CONSTANT, render_sql, split_code
from .dialect import Dialect
from .native import NativeDialect, spec_literal
from .steps import StepBuilder, TableRelation
from .udf import UDFDialect

SCALAR_UDF_PREFIX = "se_"     # se_div(a, b), se_log(x), se_divc(x, c): see scalar_kernel
KERNEL_CATALOG = "sparse_einsum"     # the name the kernel jar's function catalog is given
BROADCAST_PREFIX = "se_broadcast__"   # se_broadcast__<table>(): a broadcast relation's array
# one-tuple arrays of at least this many bytes are broadcasts (with `broadcast_arrays`)
BROADCAST_BYTES = 2 << 20


class _SparkSQL(Dialect):
    """Spark SQL syntax shared by the two dialects."""
    engine = sqlglot = "spark"
    quote = "`"
    param = "?"
    int_division = "({a} DIV {b})"
    range_sql = "range({n}) AS r_{col}({col})"
    double_sql = "DOUBLE"
    zero_sql = "CAST(0.0 AS DOUBLE)"
    array_sql = "array_repeat({value}, {size})"
    finite_sql = "(NOT isnan({x}) AND abs({x}) <> CAST('inf' AS DOUBLE))"
    nonzero_sql = "({x} <> 0 OR CAST({x} AS STRING) = '-0.0')"

    constraints = False

    def create(self, table: str, select: str, temporary: bool = False) -> str:
        """A temporary view, which the backend materializes when it is created; in a job
        (`temporary`), a cached one (CACHE TABLE computes it at once)."""
        if temporary:
            return f"CACHE TABLE {self.q(table)} AS {select}"
        return f"CREATE OR REPLACE TEMPORARY VIEW {self.q(table)} AS {select}"

    def explode_list(self, pieces: str, positions: int, table: str, kept: list[str]) -> str:
        cols = ", ".join(kept + ["e.p AS p", "e.v AS val"])
        return f"SELECT {cols} FROM {table} AS r LATERAL VIEW posexplode({pieces}) e AS p, v"


class SparkNativeDialect(NativeDialect, _SparkSQL):
    """Spark SQL calling the JVM kernels of the kernel jar's function catalog."""
    name = "spark-native"
    operation_sql = "spark"
    functions = KERNEL_CATALOG + "."
    # aggregate states stay in the hash aggregate's memory (the backend raises its
    # sort-based fallback threshold); se_ksum sums products unformed
    # a one-tuple operand is a scalar subquery, computed once (`kernel`); each row is its
    # own kernel call
    capabilities = Capabilities(packed_stacks=True, kernel_sums=True, unspillable_states=True,
                                constants_once=True, kernel_rows=1, fused_chains=True)
    null_arrays_are_zeros = True
    kernels = "JVM: the sparse_einsum kernel jar's Spark function catalog"

    def __init__(self, integers: bool = False, broadcast_arrays: bool = False):
        super().__init__(integers)
        # large one-tuple arrays are Spark broadcasts that kernels read by name
        # (`BroadcastArray` in the jar; set by a backend whose driver registers them)
        self.broadcast_arrays = broadcast_arrays

    def variant(self, integers: bool) -> "SparkNativeDialect":
        return self if integers == self.integers else type(self)(integers, self.broadcast_arrays)

    def broadcasts(self, rel: TableRelation) -> bool:
        return (self.broadcast_arrays and not rel.keyed and not rel.is_scalar
                and 8 * rel.sub_size >= BROADCAST_BYTES)

    def constant(self, rel: TableRelation) -> str:
        """A broadcast relation as the call of its function: the broadcast's handle
        travels with each task (a scalar subquery's value is copied into every task)."""
        return f"{self.functions}{BROADCAST_PREFIX}{rel.table}()" if rel.broadcast \
            else super().constant(rel)

    def kernel(self, step: StepBuilder, spec: KernelSpec, args: list[str], lists: list[bool],
               constant: tuple[int, TableRelation] | None = None,
               sparse: tuple[bool, ...] = ()) -> str:
        """The one-tuple operand, if any, as a scalar subquery (Spark computes it once and
        passes the same literal with every row, which the kernels convert once; joined,
        each row copied the whole array), or a broadcast relation's function."""
        if constant is not None:
            k, relation = constant
            args, lists = list(args), list(lists)
            args.insert(k, self.constant(relation))
            lists.insert(k, not relation.is_scalar)
        return super().kernel(step, spec, args, lists, None, sparse)

    packed_stack_sql = f"{functions}se_stack_packed(CAST({{pos}} AS BIGINT), CAST({{val}} AS DOUBLE))"

    def explode(self, step: StepBuilder, spec: GatherSpec, table: str, kept: list[str]) -> str:
        """posexplode of the pieces se_split makes of each array."""
        pieces = f"{self.fn('se_split')}({spec_literal(spec)}, r.val)" if spec.sub_dims \
            else "r.val"
        return self.explode_list(pieces, spec.positions, table, kept)


class SparkDialect(_SparkSQL, UDFDialect):
    """The fallback: kernels as Arrow UDFs in the executors' Python workers."""
    name = "spark"
    collect_sql = "collect_list({v})"
    pair_sql = "named_struct('p', {p}, 'v', {v})"
    kernels = "NumPy through Arrow UDFs (the executors' Python workers)"

    def kernel(self, step: StepBuilder, spec: KernelSpec, args: list[str], lists: list[bool],
               constant: tuple[int, TableRelation] | None = None,
               sparse: tuple[bool, ...] = ()) -> str:
        """Element-wise kernels with Spark SQL for their operation are ``transform`` or
        ``zip_with`` lambdas, run in the JVM (an Arrow UDF's round trip through Python
        took twice as long for a scalar times an array); others are Arrow UDFs."""
        if constant is None and not any(sparse):
            lambda_sql = self.elementwise(spec, args, lists)
            if lambda_sql:
                return lambda_sql
        return super().kernel(step, spec, args, lists, constant, sparse)

    def elementwise(self, spec: KernelSpec, args: list[str], lists: list[bool]) -> str | None:
        """SQL of a kernel that reduces nothing and reads each array element by element in
        the output's order (and every scalar as it is); None for other kernels."""
        if spec.n_out != len(spec.dims) or not 1 <= sum(lists) <= 2:
            return None
        order = [s for s, d in zip(row_major_strides(list(spec.dims)), spec.dims) if d > 1]
        for is_list, strides, size in zip(lists, spec.strides, spec.in_sizes):
            used = [s for s, d in zip(strides, spec.dims) if d > 1]
            if (used != order or size != spec.out_size) if is_list else any(used):
                return None
        names = iter(("se_x", "se_y"))
        elements = [next(names) if is_list else arg for arg, is_list in zip(args, lists)]
        body = render_sql(spec.op, self.name, self.num, *elements)
        if body is None:
            return None
        arrays = [arg for arg, is_list in zip(args, lists) if is_list]
        if len(arrays) == 1:
            return f"transform({arrays[0]}, se_x -> {body})"
        return f"zip_with({arrays[0]}, {arrays[1]}, (se_x, se_y) -> {body})"

    def scalar_kernel(self, code: str, args: tuple[str, ...]) -> str:
        op, c = split_code(code)
        if op.kind == CONSTANT:
            args = (*args, self.num(c))
        return f"{SCALAR_UDF_PREFIX}{op.name}({', '.join(args)})"
