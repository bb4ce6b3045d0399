"""Spark SQL: every intermediate a temporary view, kernels as Arrow UDFs.

The kernels are the NumPy ones DuckDB calls (`kernels.arrow_kernels`, called by the SQL
of `sql.udf`), registered per statement as Arrow UDFs that run on whole batches in the
executors' Python workers.
Element-wise aggregates of DOUBLE arrays are ``collect_list`` with one Arrow UDF per
batch of groups (``np.add.reduceat``): measured against the alternatives (one ``sum``
per element, ``aggregate`` with ``zip_with``, a grouped pandas UDF) it is as fast as the
fastest of them, for any array length (see the README). Repartitions are Spark's own
``posexplode`` and ``GROUP BY`` (a shuffle on the target keys).

Operations whose Spark SQL differs from NumPy (division by zero raises an error under
ANSI or gives NULL, ``ln`` of non-positive numbers gives NULL) are marked in the
operation table and call the backend's scalar UDFs ``se_<op>``.
"""
from __future__ import annotations

from ..program.ops import CONSTANT, split_code
from .udf import UDFDialect

SCALAR_UDF_PREFIX = "se_"     # se_div(a, b), se_log(x), se_divc(x, c): see scalar_kernel


class SparkDialect(UDFDialect):
    name = engine = sqlglot = "spark"
    quote = "`"
    param = "?"
    int_division = "({a} DIV {b})"
    range_sql = "range({n}) AS r_{col}({col})"
    double_sql = "DOUBLE"
    zero_sql = "CAST(0.0 AS DOUBLE)"
    zero_array_sql = "array_repeat(CAST(0.0 AS DOUBLE), {size})"
    finite_sql = "(NOT isnan({x}) AND abs({x}) <> CAST('inf' AS DOUBLE))"
    nonzero_sql = "({x} <> 0 OR CAST({x} AS STRING) = '-0.0')"
    collect_sql = "collect_list({v})"
    pair_sql = "named_struct('p', {p}, 'v', {v})"
    kernels = "NumPy through Arrow UDFs (the executors' Python workers)"

    def create(self, table: str, select: str, temporary: bool = False) -> str:
        """A temporary view; the backend materializes it when it is created."""
        return f"CREATE OR REPLACE TEMPORARY VIEW {self.q(table)} AS {select}"

    def scalar_kernel(self, code: str, args: tuple[str, ...]) -> str:
        op, c = split_code(code)
        if op.kind == CONSTANT:
            args = (*args, self.num(c))
        return f"{SCALAR_UDF_PREFIX}{op.name}({', '.join(args)})"

    def explode_list(self, pieces: str, positions: int, table: str, kept: list[str]) -> str:
        cols = ", ".join(kept + ["e.p AS p", "e.v AS val"])
        return f"SELECT {cols} FROM {table} AS r LATERAL VIEW posexplode({pieces}) e AS p, v"
