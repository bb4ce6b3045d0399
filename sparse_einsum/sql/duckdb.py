"""DuckDB SQL, in three sibling dialects over one shared syntax.

`DuckDBNativeDialect` (the embedded backend and compiled jobs, wherever the
sparse_einsum extension loads) calls the extension's C kernels, as PostgreSQL does its
own (`sql.native`). `DuckDBDialect` (the embedded backend on a connection that cannot
load the extension) calls NumPy kernels registered as arrow UDFs (`sql.udf`, as Spark
does) and sums small vectors in the wide form (one aggregate per element).
`DuckDBBuiltinDialect` (compiled jobs for a DuckDB client without the extension) uses
built-in functions only: kernels are ``list_transform(range(n), lambda ...)`` over flat
row-major indices, with the index arithmetic of the KernelSpec/GatherSpec strides
spelled out, and every list is limited to LIST_LIMIT elements.

Portability of the built-in form (checked against duckdb 2.0 and the duckdb 1.5 shell):
``ln``/``sqrt`` of non-positive numbers raise errors in 1.5 but give IEEE values in 2.0,
so they are guarded with CASE (the operation table's "duckdb-builtin" SQL); an aggregate
may be captured by a lambda, but a lambda nested inside that aggregate crashes the 2.0
optimizer and is avoided.
"""
from __future__ import annotations

from math import prod

from ..capabilities import Capabilities
from ..kernels.build import row_major_strides
from ..kernels.spec import GatherSpec, KernelSpec
from ..program.ops import AGGREGATES
from .dialect import Computed, Dialect, OrZero, scaled_vector
from .native import NativeDialect, spec_literal
from .steps import StepBuilder, TableRelation
from .udf import UDFDialect

WIDE_AGGREGATE_LIMIT = 256   # up to this many elements, one SQL aggregate per element
LIST_LIMIT = 4096        # longest dense array a job may hold in one tuple
_ZERO = "CAST(0.0 AS DOUBLE)"


def _digits(var: str, dims: tuple[int, ...], steps: list[int] | tuple[int, ...],
            scales: list[int] | tuple[int, ...], total: int) -> str:
    """SQL for sum(((var // step) % d) * scale) of an integer 0 <= var < total."""
    terms = []
    for d, step, scale in zip(dims, steps, scales):
        if scale == 0 or d == 1:
            continue
        t = var if step == 1 else f"({var} // {step})"
        if step * d < total:
            t = f"({t} % {d})"
        terms.append(t if scale == 1 else f"{t} * {scale}")
    return " + ".join(terms) if terms else "0"


def _rm(dims: tuple[int, ...]) -> list[int]:
    return row_major_strides(list(dims))


def file_scan(path: str, file_format: str) -> str:
    """A FROM item reading a Parquet or CSV file in place."""
    reader = "read_parquet" if file_format == "parquet" else "read_csv"
    return f"{reader}('{path.replace(chr(39), chr(39) * 2)}')"


class _DuckDBSQL(Dialect):
    """DuckDB syntax shared by the three dialects."""
    engine = sqlglot = "duckdb"
    # connection-scoped: a killed process leaves nothing in the database file (they spill
    # to the temp_directory under memory_limit like any table)
    table_kind = "TEMP TABLE"
    full_join_on_true = True
    range_sql = "range({n}) AS r_{col}({col})"
    zero_sql = _ZERO
    array_sql = "list_resize(CAST([] AS DOUBLE[]), {size}, {value})"
    packed_stack_sql = ("list_concat(list(CAST({pos} AS DOUBLE) ORDER BY {pos}), "
                        "list(CAST({val} AS DOUBLE) ORDER BY {pos}))")
    nonzero_sql = "({x} <> 0 OR signbit({x}))"

    def with_missing_zeros(self, result: str, agg: str, count: str | None, expected: int
                           ) -> str:
        """max/min of a group that has fewer tuples than expected also sees the missing zeros."""
        if count is None:
            return result
        clip = self.scalar_unary(AGGREGATES[agg].clip_zero, "x")
        return (f"CASE WHEN {count} < {expected} THEN "
                f"list_transform({result}, lambda x: {clip}) ELSE {result} END")

    def wide_aggregate(self, agg: str, value: str, size: int, count: str | None,
                       expected: int) -> str:
        wide = "list_value(" + ", ".join(self.scalar_aggregate(agg, f"{value}[{k + 1}]")
                                         for k in range(size)) + ")"
        return self.with_missing_zeros(wide, agg, count, expected)

    def explode_list(self, pieces: str, positions: int, table: str, kept: list[str]) -> str:
        """Explode by unnesting the list `pieces` of each value with its subscripts
        (unnesting range(positions) alongside took 10x longer on one 6.8M-element list);
        `Computed` pieces are made once, in a subquery."""
        if isinstance(pieces, Computed):
            table, pieces = f"(SELECT *, {pieces} AS se_pieces FROM {table} AS r)", "r.se_pieces"
        cols = kept + [f"generate_subscripts({pieces}, 1) - 1 AS p", f"unnest({pieces}) AS val"]
        return f"SELECT {', '.join(cols)} FROM {table} AS r"


class DuckDBNativeDialect(NativeDialect, _DuckDBSQL):
    """DuckDB SQL calling the sparse_einsum extension: no UDFs and no limit on lists."""
    name = "duckdb-native"
    operation_sql = "duckdb-builtin"       # scalar SQL that the 1.5 shell evaluates as 2.0 does
    # the extension's aggregate states live in malloc; se_ksum sums products unformed
    capabilities = Capabilities(packed_stacks=True, kernel_sums=True, unspillable_states=True,
                                constants_once=False, fused_chains=True, nested_calls=True)
    null_arrays_are_zeros = True           # (COALESCE copies a big list slowly)
    kernels = "native C: the sparse_einsum DuckDB extension"
    # one sort in C (two list(... ORDER BY) aggregates sorted 505k scalars twice: 7x slower)
    packed_stack_sql = "se_stack_packed(CAST({pos} AS BIGINT), CAST({val} AS DOUBLE))"

    def explode(self, step: StepBuilder, spec: GatherSpec, table: str, kept: list[str]) -> str:
        """Unnest the pieces se_split makes of each array (one piece a row of a cross join
        with range() copied the array into every chunk of 2048 pieces: 2.2 s for one array
        of 169,343 x 40)."""
        pieces = Computed(f"se_split({spec_literal(spec)}, r.val)") if spec.sub_dims else "r.val"
        return self.explode_list(pieces, spec.positions, table, kept)


class DuckDBDialect(_DuckDBSQL, UDFDialect):
    """The embedded backend's SQL without the extension: NumPy kernels as arrow UDFs."""
    name = "duckdb"
    capabilities = Capabilities(packed_stacks=True, constants_once=True)
    kernels = "NumPy through arrow UDFs (Python)"

    def kernel(self, step: StepBuilder, spec: KernelSpec, args: list[str], lists: list[bool],
               constant: tuple[int, TableRelation] | None = None,
               sparse: tuple[bool, ...] = ()) -> str:
        scaled = scaled_vector(spec, lists) if constant is None and not any(sparse) else None
        if scaled is not None:   # a built-in beats the UDF for vector * scalar (measured)
            vector, scalar = args[scaled], args[1 - scaled]
            return f"list_transform({vector}, lambda x: x * {scalar})"
        return super().kernel(step, spec, args, lists, constant, sparse)

    def aggregate(self, step: StepBuilder, agg: str, value: str, size: int,
                  count: str | None, expected: int) -> str:
        if size > WIDE_AGGREGATE_LIMIT:
            return super().aggregate(step, agg, value, size, count, expected)
        return self.wide_aggregate(agg, value, size, count, expected)


class DuckDBBuiltinDialect(_DuckDBSQL):
    """DuckDB SQL whose statements run in any DuckDB client (no UDFs, no extension)."""
    name = "duckdb-builtin"
    capabilities = Capabilities(max_payload_values=LIST_LIMIT, sparse_payloads=False,
                                packed_stacks=True, constants_once=False)
    kernels = f"DuckDB built-in list functions (arrays up to {LIST_LIMIT} values)"

    def _at(self, value: str, index: str) -> str:
        """Element `index` (0-based SQL) of a list. A lambda evaluates captured expressions
        per element, so coalesce(x, zeros) becomes coalesce(x[i], 0)."""
        if isinstance(value, OrZero):
            return f"coalesce({value.value}[1 + {index}], {value.element or _ZERO})"
        return f"{value}[1 + {index}]"

    # -- kernels ----------------------------------------------------------------
    def kernel(self, step: StepBuilder, spec: KernelSpec, args: list[str], lists: list[bool],
               constant: tuple[int, TableRelation] | None = None,
               sparse: tuple[bool, ...] = ()) -> str:
        assert constant is None and not any(sparse)
        out_dims, red_dims = spec.dims[: spec.n_out], spec.dims[spec.n_out:]
        self.check_size(max([spec.out_size, *spec.in_sizes]), "dense array")
        elements = []
        for arg, is_list, strides in zip(args, lists, spec.strides):
            if not is_list:
                elements.append(arg)
                continue
            index = _digits("se_o", out_dims, _rm(out_dims), strides[:spec.n_out], spec.out_size)
            if red_dims:
                index += " + " + _digits("se_r", red_dims, _rm(red_dims), strides[spec.n_out:],
                                         prod(red_dims))
            elements.append(self._at(arg, index))
        body = (self.scalar_binary(spec.op, *elements) if spec.arity == 2
                else self.scalar_unary(spec.op, elements[0]))
        if red_dims:
            body = self._list_aggregate(spec.agg, f"list_transform(range({prod(red_dims)}), "
                                                  f"lambda se_r: {body})")
        if out_dims:
            body = f"list_transform(range({spec.out_size}), lambda se_o: {body})"
        return body

    def aggregate(self, step: StepBuilder, agg: str, value: str, size: int,
                  count: str | None, expected: int) -> str:
        self.check_size(size, "list aggregate")
        if size <= WIDE_AGGREGATE_LIMIT:
            return self.wide_aggregate(agg, value, size, count, expected)
        # transposed: one list of the group's values, reduced element by element
        column = f"list_transform(list({value}), lambda se_v: se_v[1 + se_i])"
        result = (f"list_transform(range({size}), lambda se_i: "
                  f"{self._list_aggregate(agg, column)})")
        return self.with_missing_zeros(result, agg, count, expected)

    def _list_aggregate(self, agg: str, values: str) -> str:
        if agg == "min":
            return self.nan_min(f"list_min({values})", f"list_max({values})")
        return f"list_{agg}({values})"

    # -- repartitioning ---------------------------------------------------------
    def explode(self, step: StepBuilder, spec: GatherSpec, table: str, kept: list[str]) -> str:
        """Every piece of each value along the new axes (NULL when all zero, or all the
        tensor's default), unnested together with its position."""
        self.check_size(spec.size, "dense array")
        pieces = "r.val"
        if spec.sub_dims:
            base = _digits("se_p", spec.new_dims, _rm(spec.new_dims), spec.new_strides,
                           spec.positions)
            offset = _digits("se_e", spec.sub_dims, _rm(spec.sub_dims), spec.sub_strides,
                             spec.sub_size)
            cut = (f"list_transform(range({spec.sub_size}), "
                   f"lambda se_e: r.val[1 + {base} + {offset}])")
            pieces = Computed(f"list_transform(range({spec.positions}), "
                              f"lambda se_p: nullif({cut}, "
                              f"{self.zero(spec.sub_size, default=spec.fill)}))")
        return self.explode_list(pieces, spec.positions, table, kept)

    def stack(self, step: StepBuilder, spec: GatherSpec, value: str, position: str,
              value_is_list: bool) -> str:
        """Scatter the group's sub-tensors by position, zeros (the tensor's default) where
        missing, then permute into the big tensor's layout.

        Merge-rank instead of a search per position (list_position is quadratic and slow in
        duckdb 1.5): keys 2p (present) and 2q+1 (every q) are ranked by grade_up twice; the
        rank of 2q+1 is q + 1 + c(q), where c(q) counts present positions <= q, so q is
        present exactly when c(q) > c(q - 1), as the c(q)-th value in position order.
        """
        self.check_size(spec.size, "dense array")
        n = spec.positions
        zero = (self.zero(spec.sub_size, default=spec.fill) if value_is_list
                else self.num(spec.fill) if spec.fill else _ZERO)
        keys = (f"list_concat(list_transform(list({position} ORDER BY {position}), "
                f"lambda se_p: 2 * se_p), list_transform(range({n}), lambda se_q: 2 * se_q + 1))")
        count = f"(se_r[len(se_r) - {n} + se_q + 1] - se_q - 1)"
        before = f"(CASE WHEN se_q = 0 THEN 0 ELSE se_r[len(se_r) - {n} + se_q] - se_q END)"
        pick = (f"CASE WHEN {count} > {before} THEN list({value} ORDER BY {position})[{count}] "
                f"ELSE {zero} END")
        # a one-element list binds the ranks to se_r once (captured expressions are
        # evaluated for every element)
        dense = (f"list_transform([list_grade_up(list_grade_up({keys}))], lambda se_r: "
                 f"list_transform(range({n}), lambda se_q: {pick}))[1]")
        if value_is_list:
            dense = f"flatten({dense})"
        # `dense` is row-major over new_dims + sub_dims; the big tensor has their strides
        dims, strides = spec.new_dims + spec.sub_dims, spec.new_strides + spec.sub_strides
        if list(strides) == _rm(dims):
            return dense
        index = _digits("se_k", dims, strides, _rm(dims), spec.size)
        return (f"list_select({dense}, list_transform(range({spec.size}), "
                f"lambda se_k: 1 + {index}))")
