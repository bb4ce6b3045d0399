"""Pipelining: an intermediate that one later statement reads (and no kernel binds as a
constant, and that is not an output) gets no table of its own. Its query becomes a
common table expression of its reader, which every supported engine inlines into the
reader's plan (DuckDB and PostgreSQL >= 12 inline a CTE referenced once; Spark inlines
CTEs): its tuples stream from the producing operators into the consuming ones instead
of being written and read back. Chains of single-use intermediates (a product feeding a
product, a repartition feeding its reader) collapse into one statement. A statement that
gathers outputs (`sql.compiler.Combined`) also takes in an intermediate whose readers all
collapsed into it (a common table expression read twice, which DuckDB and PostgreSQL
compute once): a parameter's update with its optimizer state's is one statement.
An element-wise intermediate that joins nothing keyed (`plan.recomputed`) streams into
each of its readers, computed again in each rather than written and read back.

A statement computes at most `Capabilities.pipeline_depth` intermediates (a longer chain
keeps a table every so often); engines that should not pipeline set it to 0.
"""
from __future__ import annotations

from dataclasses import replace

from .dialect import Dialect
from .nested import NESTED_CHARS, nested_query
from .steps import KernelUse, Step


def pipeline(steps: list[Step], kept: set[str], dialect: Dialect, temporary: bool = False,
             gathering: frozenset[str] = frozenset()) -> list[Step]:
    """`steps` with each single-use intermediate streamed into its reader; `kept`: the
    tables that must stay (outputs, stored inputs); `gathering`: the tables of the
    statements that gather outputs."""
    depth = dialect.capabilities.pipeline_depth
    if not depth:
        return steps
    kept = set(kept) | kernel_constants(steps)
    steps = _pass(steps, kept, dialect, temporary, depth)
    while gathering:    # again: readers streamed into one statement make it the one reader
        streamed = _pass(steps, kept, dialect, temporary, depth, gathering)
        if len(streamed) == len(steps):
            break
        steps = streamed
    return steps


def kernel_constants(steps: list[Step]) -> set[str]:
    """The tables that kernels of `steps` bind as constants: they stay tables."""
    return {use.constant[1].table for step in steps for use in step.kernels if use.constant}


def _pass(steps: list[Step], kept: set[str], dialect: Dialect, temporary: bool, depth: int,
          into: frozenset[str] | None = None) -> list[Step]:
    """Each intermediate read by one statement (of those in `into`, if given) streamed
    into it; without `into`, each recomputed one into every statement reading it."""
    readers: dict[str, set[int]] = {}
    for k, step in enumerate(steps):
        for table in step.reads:
            readers.setdefault(table, set()).add(k)
    merged: dict[int, Step] = dict(enumerate(steps))
    for k, step in enumerate(steps):
        users = readers.get(step.target.table, set()) - {k}
        if step.kind != "sql" or step.target.table in kept or step.target.broadcast:
            continue
        if (step.recomputed and into is None and len(users) > 1 and not merged[k].pipelined
                and all(len(merged[r].pipelined) < depth for r in users)):
            producer = merged.pop(k)
            for reader in sorted(users):
                merged[reader] = _streamed(producer, merged[reader], dialect, temporary)
            continue
        if len(users) != 1:
            continue
        (reader,) = users
        if into is not None and merged[reader].target.table not in into:
            continue
        if len(merged[k].pipelined) + 1 + len(merged[reader].pipelined) <= depth:
            merged[reader] = _streamed(merged.pop(k), merged[reader], dialect, temporary)
    return list(merged.values())


def _streamed(producer: Step, reader: Step, dialect: Dialect, temporary: bool) -> Step:
    """`reader` computing `producer` (and what was streamed into it) in its statement;
    a recomputed intermediate that both compute is computed once in it."""
    pipelined: dict[str, Step] = {}          # each table's first common table expression
    for step in producer.pipelined + (replace(producer, pipelined=()),) + reader.pipelined:
        pipelined.setdefault(step.target.table, step)
    kernels: dict[str, KernelUse] = {}
    for use in producer.kernels + reader.kernels:
        kernels.setdefault(use.name, use)
    reader = replace(reader, kernels=list(kernels.values()),
                     pipelined=tuple(pipelined.values()),
                     reads=(producer.reads | reader.reads) - {producer.target.table},
                     generates_rows=producer.generates_rows or reader.generates_rows,
                     one_tuple=producer.one_tuple and reader.one_tuple)
    return replace(reader, sql=dialect.create(reader.target.table,
                                              statement_query(reader, dialect), temporary))


def statement_query(step: Step, dialect: Dialect, inputs: list[tuple[str, str]] = ()) -> str:
    """The SELECT whose rows a step's statement stores: its query, with what is streamed
    into it (after the (table, query) pairs of `inputs`, relations the engine gets with
    the statement) as common table expressions, or its formula with theirs nested
    (`sql.nested`)."""
    if step.formula and not inputs and all(p.formula for p in step.pipelined):
        nested = nested_query(step.formula, {p.target.table: p.formula for p in step.pipelined},
                              dialect)
        if len(nested) <= NESTED_CHARS:
            return nested
    return dialect.with_tables(list(inputs), step.query,
                               [(p.target.table, p.query) for p in step.pipelined])


def pieces_query(step: Step, dialect: Dialect) -> str:
    """The SELECT of the pieces (pos, val) a stack into one tuple gathers (`Step.gather`),
    with what is streamed into it."""
    return dialect.with_tables([], step.gather[1],
                               [(p.target.table, p.query) for p in step.pipelined])
