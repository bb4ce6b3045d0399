"""Inputs that live in database tables (``input A[i,j] from edges(src, dst, weight)``).

Each is imported once per run into a tensor relation with every axis promoted
(duplicate keys summed, zeros dropped); bounds and statistics (GETSTATS) come
from SQL on that relation. Names are always quoted identifiers; the catalogue is
queried with bound parameters, so nothing is executed from a name.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import DataError
from ..program.model import InputDecl
from ..sql.relations import RelInfo
from ..stats.tensor_stats import TensorStats


@dataclass
class ImportedTable:
    rel: RelInfo
    stats: TensorStats


def _columns(backend, table: str) -> list[str] | None:
    rows = backend.query("SELECT column_name FROM information_schema.columns "
                         f"WHERE table_name = {backend.dialect.param}", [table])
    return [r[0] for r in rows] or None


def import_table(backend, decl: InputDecl, table_name: str) -> ImportedTable:
    """Create the all-promoted relation of `decl` from its source table; check its keys."""
    q, src = backend.dialect.q, decl.source
    columns = _columns(backend, src.table)
    if columns is None:
        raise DataError(f"input {decl.name}: table {src.table!r} does not exist")
    for col in list(src.keys) + ([src.value] if src.value else []):
        if col not in columns:
            raise DataError(f"input {decl.name}: table {src.table!r} has no column {col!r} "
                            f"(it has {', '.join(map(repr, columns))})")
    keys = [q(c) for c in src.keys]
    checks = ", ".join(f"min({k}), max({k})" for k in keys)
    row = backend.query(f"SELECT {checks} FROM {q(src.table)}", [])[0]
    shape = []
    for n, (label, bound, col) in enumerate(zip(decl.labels, decl.bounds, src.keys)):
        low, high = row[2 * n], row[2 * n + 1]
        if low is not None and low < 0:
            raise DataError(f"input {decl.name}: column {col!r} of table {src.table!r} holds "
                            f"the negative key {low} (keys index from 0)")
        size = 0 if high is None else int(high) + 1
        if bound is not None and size > bound:
            raise DataError(f"input {decl.name}: column {col!r} of table {src.table!r} holds "
                            f"key {high}, outside the declared bound {label}:{bound}")
        shape.append(bound if bound is not None else size)
    backend.execute(import_sql(decl, table_name, backend.dialect))
    rel = RelInfo(table_name, decl.name, tuple(shape), tuple(range(len(shape))), decl.labels)
    return ImportedTable(rel, table_stats(backend, rel))


def checked_table_sql(table_name: str, decl: InputDecl, shape: tuple[int, ...], dialect) -> str:
    """CREATE TABLE of an all-promoted relation of `decl` whose keys must lie in `shape`:
    a CHECK constraint per key, so rows outside the bounds make the INSERT fail."""
    q = dialect.q
    kind = "TEMP TABLE" if dialect.temporary else "TABLE"
    cols = [f"{q(l)} BIGINT NOT NULL CONSTRAINT {q(f'input {decl.name}: key {l} outside 0..{n - 1}')}"
            f" CHECK ({q(l)} >= 0 AND {q(l)} < {int(n)})" for l, n in zip(decl.labels, shape)]
    return f"CREATE {kind} {q(table_name)} ({', '.join(cols + ['val DOUBLE PRECISION NOT NULL'])})"


def import_sql(decl: InputDecl, table_name: str, dialect, shape: tuple[int, ...] | None = None) -> str:
    """SQL creating the all-promoted relation of `decl` from its source table (duplicate keys
    summed, zeros and NULL keys dropped). With `shape`, two statements: a table with
    `checked_table_sql` and an INSERT, which fails on keys outside `shape`."""
    q, src = dialect.q, decl.source
    keys = [q(c) for c in src.keys]
    value = f"CAST({q(src.value)} AS DOUBLE PRECISION)" if src.value else "1.0"
    selected = ", ".join(f"CAST({k} AS BIGINT) AS {q(l)}" for k, l in zip(keys, decl.labels))
    not_null = " AND ".join(f"{k} IS NOT NULL" for k in keys) or "TRUE"
    group = ", ".join(str(n + 1) for n in range(len(keys)))
    sql = (f"SELECT {selected}, sum({value}) AS val FROM {q(src.table)} WHERE {not_null}"
           + (f" GROUP BY {group}" if group else "") + f" HAVING sum({value}) <> 0")
    if shape is None:
        return dialect.create(table_name, sql)
    return f"{checked_table_sql(table_name, decl, shape, dialect)};\nINSERT INTO {q(table_name)} {sql}"


def table_stats(backend, rel: RelInfo) -> TensorStats:
    """GETSTATS by SQL: T(U) and V(l, U) of an all-promoted relation."""
    q = backend.dialect.q
    distinct = "".join(f", count(DISTINCT {q(c)})" for c in rel.columns)
    row = backend.query(f"SELECT count(*){distinct} FROM {q(rel.table)}", [])[0]
    return TensorStats(rel.shape, float(row[0]), tuple(float(x) for x in row[1:]))
