"""What an engine can do, as the SQL dialect declares it and the cost model reads it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Capabilities:
    """One engine's capabilities, one name each. The defaults are an engine without
    limits (what a cost model built apart from a dialect assumes)."""

    max_payload_values: int | None = None   # longest array a tuple may hold (None: no limit)
    sparse_payloads: bool = True            # payloads may be packed sparse
    # an aggregate packs scalars straight into one sparse payload per group
    # (False: a dense stack, then sparsified)
    packed_stacks: bool = False
    # an aggregate sums a product kernel's results over the joined tuples without forming
    # them (a contraction over a promoted label: one matrix product over the tuples)
    kernel_sums: bool = False
    # array aggregates keep states the engine cannot spill: all groups' states together
    # must fit the engine's memory
    unspillable_states: bool = False
    # an intermediate read by one statement only is a common table expression of that
    # statement, which the engine streams instead of writing and re-reading a table; at
    # most this many in one statement (0: none), so that statements stay small
    pipeline_depth: int = 16
    # a one-tuple operand joined to keyed tuples is bound into the kernel once per
    # statement (False: read again with every batch of joined tuples)
    constants_once: bool = True
    # joined tuples one kernel call receives at most, held in memory together: DuckDB hands
    # its functions vectors of 2048 rows; Spark calls a JVM function once per row
    kernel_rows: int = 2048
    # element-wise operations over one-tuple arrays chained in one kernel call, one pass
    # over the arrays (`sql.chains`) instead of a kernel call and an array each
    fused_chains: bool = False
    # a statement over relations holding one tuple each is one projection of nested calls
    # over a positional scan of the tables it reads (`sql.nested`), instead of joins of
    # common table expressions, which copy the arrays they pass on
    nested_calls: bool = False
