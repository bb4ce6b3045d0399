"""SQL importing an input held in COO form (a table, a file, a data frame) into a tensor
relation with every axis promoted: duplicate keys summed, zeros and NULL keys dropped.

Names are always quoted identifiers; nothing is executed from a name.
"""
from __future__ import annotations

from ..program.model import InputDecl
from .dialect import Dialect
from .steps import key_column


def import_select(labels: tuple[str, ...], keys: tuple[str, ...], value: str | None,
                  from_sql: str, dialect: Dialect) -> str:
    """SELECT of the all-promoted relation: one key column per label, then ``val``."""
    q = dialect.q
    value_sql = f"CAST({q(value)} AS {dialect.double_sql})" if value else "1.0"
    selected = ", ".join(f"CAST({q(k)} AS BIGINT) AS {q(key_column(l, a))}"
                         for a, (k, l) in enumerate(zip(keys, labels)))
    not_null = " AND ".join(f"{q(k)} IS NOT NULL" for k in keys) or "TRUE"
    group = ", ".join(str(n + 1) for n in range(len(keys)))
    return (f"SELECT {selected}{', ' if selected else ''}sum({value_sql}) AS val FROM {from_sql} "
            f"WHERE {not_null}" + (f" GROUP BY {group}" if group else "")
            + f" HAVING sum({value_sql}) <> 0")


def bounds_select(keys: tuple[str, ...], from_sql: str, dialect: Dialect) -> str:
    """min and max of every key column."""
    return "SELECT " + ", ".join(f"min({dialect.q(k)}), max({dialect.q(k)})" for k in keys) \
        + f" FROM {from_sql}"


def checked_table_sql(table_name: str, decl: InputDecl, shape: tuple[int, ...],
                      dialect: Dialect) -> str:
    """CREATE TEMP TABLE of an all-promoted relation of `decl` whose keys must lie in `shape`:
    a CHECK constraint per key, so rows outside the bounds make the INSERT fail."""
    q = dialect.q
    cols = [f"{q(key_column(l, a))} BIGINT NOT NULL CONSTRAINT "
            f"{q(f'input {decl.name}: key {l} outside 0..{n - 1}')} "
            f"CHECK ({q(key_column(l, a))} >= 0 AND {q(key_column(l, a))} < {int(n)})"
            for a, (l, n) in enumerate(zip(decl.labels, shape))]
    return f"CREATE TEMP TABLE {q(table_name)} ({', '.join(cols + ['val DOUBLE PRECISION NOT NULL'])})"


def checked_import_sql(decl: InputDecl, table_name: str, shape: tuple[int, ...], from_sql: str,
                       dialect: Dialect) -> str:
    """Two statements: the table of `checked_table_sql` and the INSERT filling it, which
    fails on keys outside `shape`."""
    src = decl.source
    select = import_select(decl.labels, src.keys, src.value, from_sql, dialect)
    return (f"{checked_table_sql(table_name, decl, shape, dialect)};\n"
            f"INSERT INTO {dialect.q(table_name)} {select}")
