"""One-tuple statements as nested calls over one scan of their tables
(`Capabilities.nested_calls`: DuckDB).

A step over relations that each hold exactly one tuple (`Compiler.whole`: loads and
tables read in place that are tiled into one tuple, and the steps computed from such) is
a `Formula`: its columns as SQL over its inputs' value columns, the reads left open. Its
statement selects them from a POSITIONAL JOIN of the tables it reads, which zips their
scans, and the formulas streamed into it (`sql.pipeline`) are nested where read:

    SELECT se_fused('...', p0."val", (se_kernel2('...', p1."val", p2."val"))) AS "val"
    FROM "W1" AS p0 POSITIONAL JOIN "X" AS p1 POSITIONAL JOIN "G" AS p2

instead of common table expressions joined ON TRUE, each join copying the arrays it
passes on (measured: `experiments/bench_update_statement.py`). The engine computes a call
nested in several places once (its common subexpressions), so a formula read twice is
nested twice at no cost; a statement whose text would grow past NESTED_CHARS keeps the
common table expressions.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from .dialect import Dialect

NESTED_CHARS = 200_000     # longest nested statement (formulas read twice repeat their text)


@dataclass(frozen=True)
class Read:
    """The value of column `column` of the tuple of `table`."""
    table: str
    column: str = "val"


Expr = tuple[str | Read, ...]       # SQL text with reads left open


@dataclass(frozen=True)
class Formula:
    """A step's columns over the columns of whole one-tuple relations."""
    columns: tuple[tuple[str, Expr], ...]      # (column, its expression), in order

    def expr(self, column: str) -> Expr:
        return dict(self.columns)[column]


def formula(columns_of: Callable[[list[str]], dict[str, str]], reads: list[Read]) -> Formula:
    """The columns that `columns_of` makes of the values of `reads` (SQL per read, in
    order), with the reads left open: it is given a placeholder for each."""
    marks = [f"\0{k}\0" for k in range(len(reads))]

    def parts(sql: str) -> Expr:        # the text between placeholders, and their reads
        pieces = sql.split("\0")
        return tuple(reads[int(p)] if k % 2 else p for k, p in enumerate(pieces) if k % 2 or p)
    return Formula(tuple((column, parts(sql)) for column, sql in columns_of(marks).items()))


def nested_query(top: Formula, streamed: dict[str, Formula], d: Dialect) -> str:
    """The SELECT of `top`'s columns over one positional scan of the tables it reads, the
    formulas of `streamed` (by table) nested where read."""
    tables: list[str] = []
    sql: dict[Read, str] = {}

    def render(expr: Expr) -> str:
        return "".join(p if isinstance(p, str) else value(p) for p in expr)

    def value(read: Read) -> str:
        if read not in sql:
            if read.table in streamed:
                sql[read] = f"({render(streamed[read.table].expr(read.column))})"
            else:
                if read.table not in tables:
                    tables.append(read.table)
                sql[read] = f"p{tables.index(read.table)}.{d.q(read.column)}"
        return sql[read]

    columns = ", ".join(f"{render(expr)} AS {d.q(column)}" for column, expr in top.columns)
    return (f"SELECT {columns} FROM "
            + " POSITIONAL JOIN ".join(f"{d.q(t)} AS p{k}" for k, t in enumerate(tables)))
