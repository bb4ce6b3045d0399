"""Inputs of the PostgreSQL backend bound to the statements that read them instead of
stored: a load of one tuple (a whole matrix as one payload) makes no table; a step that
reads nothing but such inputs gets their rows as common table expressions over the
kernels' se_rows, whose raw bytes are parameters of its statement. A payload past a
page is then not written to TOAST and read back (chunk inserts of 2 kB, an index entry
each), and no statements create and fill a table.

What a step reads and whether it generates rows (ranges, explodes) are recorded where
it is compiled (`Step.reads`, `Step.generates_rows`); only a step that reads held inputs
alone and generates no rows takes them: its join is a row or a few. Joined to more rows,
a sort, hash or materialisation above the join would copy the payload itself into every
row, where a stored one copies its TOAST pointer (sparse attention's 11.7 MB weights
joined to 2,708 feature rows filled the disk). Any other step finds the held inputs it
reads stored first, as a load would have, and SQL the backend does not compose finds
every held input stored; so does a step reading an input after BOUND_READS did (a resend
costs more than the TOAST read of a stored payload; writing it costs about as much as
3-4 sends).
"""
from __future__ import annotations

import numpy as np

from ..blocks import Blocks
from ..sql.dialect import Dialect
from ..sql.steps import Step, TableRelation
from .pg_copy import rows_query

BOUND_READS = 3


class BoundInputs:
    """The relations loaded but not stored, by table name, while their tables would live."""

    def __init__(self, dialect: Dialect, max_bytes: int):
        self.dialect, self.max_bytes = dialect, max_bytes
        self.relations: dict[str, tuple[TableRelation, Blocks]] = {}
        self.sent: dict[str, int] = {}      # statements each relation went with

    def keep(self, rel: TableRelation, blocks: Blocks) -> bool:
        """Hold `blocks` of a payload relation of one tuple of at most `max_bytes` (one
        statement's parameter, in memory on the server) instead of storing them."""
        if rel.is_scalar or len(blocks) != 1 or blocks.values.nbytes > self.max_bytes:
            return False
        self.relations[rel.table] = (rel, blocks)
        self.sent[rel.table] = 0
        return True

    def pop(self, table: str) -> tuple[TableRelation, Blocks] | None:
        self.sent.pop(table, None)
        return self.relations.pop(table, None)

    def takes(self, step: Step) -> list[str]:
        """The held relations `step` takes as parameters: all it reads, when it reads only
        held ones that went with fewer than BOUND_READS statements and generates no rows;
        none otherwise."""
        if step.generates_rows or not step.reads or not all(
                self.sent.get(table, BOUND_READS) < BOUND_READS for table in step.reads):
            return []
        return sorted(step.reads)

    def bind(self, tables: list[str]) -> tuple[list[tuple[str, str]], list[np.ndarray]]:
        """The relations `tables` as (name, query) common table expressions reading the
        parameters $1, ...; those parameters (see pg_copy.execute_raw)."""
        ctes, params = [], []
        for table in tables:
            rel, blocks = self.relations[table]
            bounds = blocks.bounds if rel.sparse else \
                np.arange(len(blocks) + 1, dtype=np.int64) * rel.sub_size
            rows, raw = rows_query(table, len(params) + 1, dict(zip(rel.columns, blocks.keys)),
                                   blocks.values, bounds)
            ctes.append((table, rows))
            params += raw
            self.sent[table] += 1
        return ctes, params
