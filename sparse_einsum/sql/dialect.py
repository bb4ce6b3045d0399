"""What differs between SQL engines: syntax as class-level data, kernels as methods.

A dialect names itself (`name`, also the key of its cost constants and of per-dialect
SQL in the operation table), says how to write ranges, zero arrays and tables, and how
kernels, array aggregates, explodes and stacks are called. The compiler only arranges
joins, domains and groupings around these.
"""
from __future__ import annotations

from typing import ClassVar, NamedTuple

from ..capabilities import Capabilities
from ..errors import PlanError
from ..kernels.build import row_major_strides
from ..kernels.spec import FusedSpec, GatherSpec, KernelSpec
from ..program.ops import render_sql
from .steps import StepBuilder, TableRelation


def scaled_vector(spec: KernelSpec, lists: list[bool]) -> int | None:
    """Position of the vector when the kernel is vector * scalar in the vector's order."""
    if spec.op != "mul" or spec.arity != 2 or spec.n_out != len(spec.dims) or sum(lists) != 1:
        return None
    k = lists.index(True)
    identity = tuple(row_major_strides(list(spec.dims)))
    return k if spec.strides[k] == identity and not any(spec.strides[1 - k]) else None


class OrZero(str):
    """SQL of an operand's value where tuples may be absent: ``coalesce(value, zero)``,
    keeping `value` and the scalar of each element of `zero` (`element`) for a dialect
    that indexes into it."""
    value: str
    element: str | None

    def __new__(cls, value: str, zero: str, element: str | None = None) -> "OrZero":
        sql = super().__new__(cls, f"coalesce({value}, {zero})")
        sql.value, sql.element = value, element
        return sql


class Computed(str):
    """SQL computing a value from a row's columns (a function of them, not a column), which
    a dialect may compute once in a subquery."""


class WeightedSum(NamedTuple):
    """A sum of kernel results that the engine computes without forming them: the
    columns to select per tuple, and the aggregate over them. `scales_val`: the form
    selects the vector as ``val`` (scalar * vector), which a scalar factor may scale."""
    columns: dict[str, str]
    aggregate: str
    scales_val: bool


class Dialect:
    name: ClassVar[str] = "generic"
    engine: ClassVar[str] = "generic"              # the backend whose cost constants apply
    sqlglot: ClassVar[str] = ""                   # sqlglot's name of the dialect
    param: ClassVar[str] = "?"                    # bound-parameter marker of the driver
    quote: ClassVar[str] = '"'                    # around identifiers (doubled inside)
    table_kind: ClassVar[str] = "TABLE"           # how intermediates and loads are created
    table_options: ClassVar[str] = ""             # after the table name, as " WITH (...)"
    constraints: ClassVar[bool] = True            # tables take CHECK constraints
    int_division: ClassVar[str] = "({a} // {b})"
    range_sql: ClassVar[str] = ""                 # a one-column table {col} of 0..{n}-1
    double_sql: ClassVar[str] = "DOUBLE PRECISION"   # the SQL type of values
    zero_sql: ClassVar[str] = "CAST(0.0 AS DOUBLE PRECISION)"
    array_sql: ClassVar[str] = ""                 # an array of {size} elements {value}
    finite_sql: ClassVar[str] = "isfinite({x})"   # neither NaN nor inf
    isnan_sql: ClassVar[str] = "isnan({x})"
    # an exploded value that needs a tuple: anything but +0.0 (1 / -0.0 is -inf)
    nonzero_sql: ClassVar[str] = "{x} <> 0"
    # an intermediate streamed into its reader's statement, computed once
    streamed_sql: ClassVar[str] = "{name} AS ({query})"

    def __init__(self, integers: bool = False):
        self.integers = integers      # values are BIGINT (exact integers) instead of doubles

    def variant(self, integers: bool) -> "Dialect":
        """This dialect with BIGINT or double values."""
        return self if integers == self.integers else type(self)(integers=integers)
    # what the engine can do, read as it is by the cost model and the compiler
    capabilities: ClassVar[Capabilities] = Capabilities(constants_once=False)
    # aggregate packing scalars at flat offsets {pos} with values {val} into one packed
    # sparse payload per group, offsets ascending (with `capabilities.packed_stacks`)
    packed_stack_sql: ClassVar[str] = ""
    null_arrays_are_zeros: ClassVar[bool] = False  # kernels read a NULL array as all zeros
    full_join_on_true: ClassVar[bool] = False      # FULL JOIN ... ON TRUE is allowed
    operation_sql: ClassVar[str] = ""             # the operation table's SQL to use (default: name)
    kernels: ClassVar[str] = ""                   # how kernels run, for explain

    def nonzero(self, x: str) -> str:
        return f"{x} <> 0" if self.integers else self.nonzero_sql.format(x=x)

    def broadcasts(self, rel: TableRelation) -> bool:
        """Whether one-tuple relation `rel` (an input, or a statement's result that a kernel
        reads as its constant) is a broadcast (`TableRelation.broadcast`)."""
        return False

    def constant(self, rel: TableRelation) -> str:
        """The value of one-tuple relation `rel` as an expression (a scalar subquery)."""
        return f"(SELECT val FROM {self.q(rel.table)})"

    def q(self, ident: str) -> str:
        return self.quote + ident.replace(self.quote, self.quote * 2) + self.quote

    def num(self, c: float) -> str:
        if self.integers:
            if c != int(c):
                raise PlanError(f"the constant {c} makes integer values fractional")
            return f"CAST({int(c)} AS BIGINT)"
        return f"CAST('{float(c)!r}' AS {self.double_sql})"

    def create(self, table: str, select: str, temporary: bool = False) -> str:
        kind = "TEMP TABLE" if temporary else self.table_kind
        return f"CREATE {kind} {self.q(table)}{self.table_options} AS {select}"

    def with_tables(self, tables: list[tuple[str, str]], select: str,
                    streamed: list[tuple[str, str]] = ()) -> str:
        """`select` reading the (name, query) pairs of `tables` (relations that come with
        the statement) and then of `streamed` (intermediates: `streamed_sql`) as common
        table expressions, in order."""
        ctes = [f"{self.q(name)} AS ({query})" for name, query in tables]
        ctes += [self.streamed_sql.format(name=self.q(name), query=query)
                 for name, query in streamed]
        return "WITH " + ", ".join(ctes) + " " + select if ctes else select

    def range_from(self, n: int, column: str) -> str:
        return self.range_sql.format(n=int(n), last=int(n) - 1, col=column)

    def zero(self, size: int | None, sparse: bool = False, default: float = 0.0) -> str:
        """A zero scalar (size None) or payload of `size` elements, dense or sparse (empty);
        of a tensor with another `default`, that value."""
        if size is None:
            return self.num(default) if default else (
                "CAST(0 AS BIGINT)" if self.integers else self.zero_sql)
        return self.array_sql.format(size=0 if sparse else int(size),
                                     value=self.num(default) if default else self.zero_sql)

    def scalar_aggregate(self, agg: str, x: str) -> str:
        """AGG over scalar values: sums of BIGINT stay BIGINT; min sees NaN as NumPy does
        (the engines order NaN above every number, so max finds it)."""
        if agg == "sum":
            return f"CAST(sum({x}) AS BIGINT)" if self.integers else f"sum({x})"
        if agg == "min" and not self.integers:
            return self.nan_min(f"min({x})", f"max({x})")
        return f"{agg}({x})"

    def nan_min(self, low: str, high: str) -> str:
        """The minimum `low`, or NaN when the maximum `high` of the same values is NaN."""
        return f"(CASE WHEN {self.isnan_sql.format(x=high)} THEN {high} ELSE {low} END)"

    def idiv(self, a: str, b: int) -> str:
        return self.int_division.format(a=a, b=int(b))

    def scalar_unary(self, code: str, x: str) -> str:
        return (render_sql(code, self.operation_sql or self.name, self.num, x)
                or self.scalar_kernel(code, (x,)))

    def scalar_binary(self, op: str, a: str, b: str) -> str:
        return (render_sql(op, self.operation_sql or self.name, self.num, a, b)
                or self.scalar_kernel(op, (a, b)))

    def check_size(self, size: int, what: str) -> None:
        limit = self.capabilities.max_payload_values
        if limit is not None and size > limit:
            raise PlanError(f"the plan needs a {what} of {size} elements; {self.name} SQL "
                            f"holds at most {limit} per tuple")

    # -- engine-specific: kernels on array values -------------------------------------
    def scalar_kernel(self, code: str, args: tuple[str, ...]) -> str:
        """An operation the engine's SQL cannot evaluate as NumPy does, on scalars."""
        raise NotImplementedError(f"{self.name}: no SQL for {code}")

    def kernel(self, step: StepBuilder, spec: KernelSpec, args: list[str], lists: list[bool],
               constant: tuple[int, TableRelation] | None = None,
               sparse: tuple[bool, ...] = ()) -> str:
        """The kernel's SQL on `args` (`lists`: which are arrays) and on the `constant`
        operand bound once, if any; `sparse`: which operands (every position of the spec)
        hold packed sparse payloads."""
        raise NotImplementedError

    def fused(self, spec: FusedSpec, args: list[str]) -> str:
        """A chain of element-wise operations in one kernel call (dialects whose
        capabilities have `fused_chains`); `args`: the chain's inputs, arrays or scalars,
        NULL where absent."""
        raise NotImplementedError

    def sparsify(self, step: StepBuilder, value: str) -> str:
        """A dense payload packed sparse."""
        raise PlanError(f"{self.name} SQL has no sparse payloads")

    def stack_packed(self, position: str, value: str) -> str:
        """Aggregate expression packing scalar values at flat `position`s sparse."""
        return self.packed_stack_sql.format(pos=position, val=value)

    def aggregate(self, step: StepBuilder, agg: str, value: str, size: int,
                  count: str | None, expected: int) -> str:
        """Aggregate list values element-wise; where count < expected, combine with 0."""
        raise NotImplementedError

    def weighted_sum(self, spec: KernelSpec, args: list[str], lists: list[bool]
                     ) -> WeightedSum | None:
        """For a sum of the kernel's results that the engine computes without forming them
        (sum of scalar * vector; with `kernel_sums`, of any product of two arrays): its
        form; None when the kernel is not such a product or the engine has no such sum."""
        return None

    def shared_matrix_kernel(self, spec: KernelSpec, args: list[str]) -> str | None:
        """For a matrix product of each row's array `args[0]` with one array `args[1]`
        joined to every row: SQL that runs the rows as one product (a window function);
        None where the engine has no such form."""
        return None

    def explode(self, step: StepBuilder, spec: GatherSpec, table: str, kept: list[str]) -> str:
        """SELECT of one row per piece of each value of `table` (alias r): the `kept`
        columns, ``p`` (the piece's position, row-major over spec.new_dims) and ``val``
        (the piece: a scalar, or a sub-tensor that is NULL when all zero)."""
        raise NotImplementedError

    def stack(self, step: StepBuilder, spec: GatherSpec, value: str, position: str,
              value_is_list: bool) -> str:
        """Aggregate expression scattering sub-tensors into a zero tensor."""
        raise NotImplementedError
