"""Readable SQL: sqlglot parses a statement in its dialect and prints it indented.

Only the layout is sqlglot's: the statement is printed back in the same dialect, and the
tests run the printed jobs on the real engines.
"""
from __future__ import annotations

import sqlglot

from .dialect import Dialect


def pretty(sql: str, dialect: Dialect) -> str:
    return "\n".join(sqlglot.transpile(sql, read=dialect.sqlglot, write=dialect.sqlglot,
                                       pretty=True))
