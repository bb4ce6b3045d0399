"""SQL importing an input held in COO form (a table, a file, a data frame) into a tensor
relation with every axis promoted: duplicate keys summed, zeros and NULL keys dropped
(templates ``common/import``, ``common/key_bounds``, ``common/checked_table``).

Names are always quoted identifiers; nothing is executed from a name.
"""
from __future__ import annotations

from ..program.model import InputDecl
from .dialect import Dialect
from .steps import key_column
from .templates import SQL, literal, render


def import_select(labels: tuple[str, ...], keys: tuple[str, ...], value: str | None,
                  from_sql: str, dialect: Dialect) -> str:
    """SELECT of the all-promoted relation: one key column per label, then ``val``."""
    q = dialect.q
    value_sql = f"CAST({q(value)} AS {dialect.double_sql})" if value else "1.0"
    selected = "".join(f"CAST({q(k)} AS BIGINT) AS {q(key_column(l, a))}, "
                       for a, (k, l) in enumerate(zip(keys, labels)))
    not_null = " AND ".join(f"{q(k)} IS NOT NULL" for k in keys) or "TRUE"
    group = ", ".join(str(n + 1) for n in range(len(keys)))
    return render("common/import", dialect.quote, keys=SQL(selected), value=SQL(value_sql),
                  source=SQL(from_sql), not_null=SQL(not_null),
                  group_by=SQL(f" GROUP BY {group}" if group else ""))


def bounds_select(keys: tuple[str, ...], from_sql: str, dialect: Dialect) -> str:
    """min and max of every key column."""
    return render("common/key_bounds", dialect.quote, source=SQL(from_sql), bounds=SQL(
        ", ".join(f"min({dialect.q(k)}), max({dialect.q(k)})" for k in keys)))


def checked_table_sql(table_name: str, decl: InputDecl, shape: tuple[int, ...],
                      dialect: Dialect) -> str:
    """CREATE TEMP TABLE of an all-promoted relation of `decl` whose keys must lie in `shape`:
    a CHECK constraint per key, so rows outside the bounds make the INSERT fail."""
    q = dialect.q
    cols = [f"{q(key_column(l, a))} BIGINT NOT NULL CONSTRAINT "
            f"{q(f'input {decl.name}: key {l} outside 0..{n - 1}')} "
            f"CHECK ({q(key_column(l, a))} >= 0 AND {q(key_column(l, a))} < {int(n)})"
            for a, (l, n) in enumerate(zip(decl.labels, shape))]
    return render("common/checked_table", dialect.quote, table=table_name,
                  keys=SQL("".join(f"{c}, " for c in cols)))


def checked_view_sql(decl: InputDecl, table_name: str, shape: tuple[int, ...], select: str,
                     dialect: Dialect) -> str:
    """A cached view of `select` (an all-promoted relation of `decl`) whose keys outside
    `shape` raise an error naming the input and label, for engines whose tables take no
    CHECK constraints (`Dialect.constraints`)."""
    q = dialect.q
    keys = "".join(
        f"CASE WHEN {q(c)} >= 0 AND {q(c)} < {int(n)} THEN {q(c)} ELSE raise_error("
        f"{literal(f'input {decl.name}: key {l} outside 0..{n - 1}')}) END AS {q(c)}, "
        for c, l, n in ((key_column(l, a), l, n) for a, (l, n) in enumerate(zip(decl.labels, shape))))
    return render(f"{dialect.engine}/checked_view", dialect.quote, table=table_name,
                  keys=SQL(keys), query=SQL(select))


def checked_import_sql(decl: InputDecl, table_name: str, shape: tuple[int, ...], from_sql: str,
                       dialect: Dialect) -> str:
    """Two statements: the table of `checked_table_sql` and the INSERT filling it, which
    fails on keys outside `shape` (without constraints: `checked_view_sql`)."""
    src = decl.source
    select = import_select(decl.labels, src.keys, src.value, from_sql, dialect)
    if not dialect.constraints:
        return checked_view_sql(decl, table_name, shape, select, dialect)
    return (f"{checked_table_sql(table_name, decl, shape, dialect)};\n"
            + render("common/insert_select", dialect.quote, table=table_name, query=SQL(select)))
