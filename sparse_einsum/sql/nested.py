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
passes on (measured: `experiments/bench_update_statement.py`). A formula read in several
places is a column of a projection of its own, below the statement's, which passes the
arrays on without copying them:

    SELECT f("v0", "p1_val") AS "val", g("v0") AS "m"
    FROM (SELECT *, (se_kernel2('...', "p0_val", "p2_val")) AS "v0"
          FROM (SELECT p0."val" AS "p0_val", ... FROM "W1" AS p0 ...) AS l0) AS l1

so the engine binds and optimizes it once, not once in each place it is read (and then
again to find the repeats as common subexpressions). A statement whose text would grow
past NESTED_CHARS keeps the common table expressions.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from .dialect import Dialect

NESTED_CHARS = 200_000     # longest nested statement


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
    formulas of `streamed` (by table) nested where read; one read in several places is a
    column of a projection of its own below, computed once and bound once."""
    uses: Counter[Read] = Counter()

    def resolved(read: Read) -> Read:       # through formulas that are another's value
        while read.table in streamed:
            expr = streamed[read.table].expr(read.column)
            if len(expr) != 1 or not isinstance(expr[0], Read):
                break
            read = expr[0]
        return read

    def count(expr: Expr) -> None:
        for p in expr:
            if isinstance(p, Read):
                p = resolved(p)
                uses[p] += 1
                if uses[p] == 1 and p.table in streamed:
                    count(streamed[p.table].expr(p.column))

    for _, expr in top.columns:
        count(expr)
    layered = any(n > 1 for r, n in uses.items() if r.table in streamed)
    tables: list[str] = []
    sql: dict[Read, str] = {}
    layers: list[str] = []          # `value AS name`, each over the ones before

    def render(expr: Expr) -> str:
        return "".join(p if isinstance(p, str) else value(p) for p in expr)

    def value(read: Read) -> str:
        read = resolved(read)
        if read not in sql:
            if read.table in streamed:
                text = f"({render(streamed[read.table].expr(read.column))})"
                if uses[read] > 1:
                    name = d.q(f"v{len(layers)}")
                    layers.append(f"{text} AS {name}")
                    text = name
                sql[read] = text
            else:
                if read.table not in tables:
                    tables.append(read.table)
                k = tables.index(read.table)
                sql[read] = d.q(f"p{k}_{read.column}") if layered else f"p{k}.{d.q(read.column)}"
        return sql[read]

    columns = ", ".join(f"{render(expr)} AS {d.q(column)}" for column, expr in top.columns)
    scan = " POSITIONAL JOIN ".join(f"{d.q(t)} AS p{k}" for k, t in enumerate(tables))
    if not layered:
        return f"SELECT {columns} FROM {scan}"
    query = "SELECT " + ", ".join(f"p{tables.index(r.table)}.{d.q(r.column)} AS {text}"
                                  for r, text in sql.items() if r.table not in streamed)
    query += f" FROM {scan}"
    for k, layer in enumerate(layers):
        query = f"SELECT *, {layer} FROM ({query}) AS l{k}"
    return f"SELECT {columns} FROM ({query}) AS l{len(layers)}"
