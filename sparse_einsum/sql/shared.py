"""Shared statements: an intermediate that several one-tuple statements (`sql.nested`)
read is computed with them in one statement.

On DuckDB a statement over one-tuple relations costs about a millisecond whatever it
computes (parsing, binding, a table written and later dropped), more than the kernels
of small ones. An intermediate read by several such statements (a softmax's row maxima,
read by the loss, the accuracy and the gradient) would be a table of its own, and each
of its readers a statement. Here the intermediate, its readers and what lies between
them (every statement that depends on one of them and feeds another) become one
statement. It writes one table, with a column per value that a later statement reads or
that is an output (``<table>_<column>``, `TableRelation.value`); the others are nested
where read (`nested_query`: each once).

Only statements whose readers are formulas too take part: their reads of the values
moved are rewritten to the shared table's columns.
"""
from __future__ import annotations

from dataclasses import replace

from .dialect import Dialect
from .nested import Expr, Formula, Read, nested_query
from .pipeline import statement_query
from .steps import KernelUse, Step

Location = tuple[str, str]          # (table, column)


def share(steps: list[Step], blocked: set[str], outputs: set[str], dialect: Dialect,
          temporary: bool = False) -> tuple[list[Step], dict[Location, Location]]:
    """`steps` with each intermediate read by several one-tuple statements computed in one
    statement with them; `blocked`: tables that must stay as they are (stored inputs,
    tables gathering outputs, kernel constants); `outputs`: the tables of outputs, which
    may move into a shared table. Returns the steps and where each value moved (its
    table and column before and after)."""
    moved: dict[Location, Location] = {}
    outputs = set(outputs)
    while (group := _group(steps, blocked, outputs)) is not None:
        steps, renamed = _merged(steps, group, outputs, dialect, temporary)
        moved = {old: renamed.get(new, new) for old, new in moved.items()} | renamed
        outputs |= {new[0] for old, new in renamed.items() if old[0] in outputs}
    return steps, moved


def _nests(step: Step) -> bool:
    return (step.kind == "sql" and step.formula is not None and not step.target.broadcast
            and all(p.formula is not None for p in step.pipelined))


def _group(steps: list[Step], blocked: set[str], outputs: set[str]) -> list[int] | None:
    """The positions of the first intermediate read by several statements (or output
    read by any) and of its readers and what lies between them, when all of them and
    every later statement reading them nest; None when there is none."""
    producer = {s.target.table: k for k, s in enumerate(steps)}
    below: list[set[int]] = []             # per step, the steps it depends on
    for s in steps:
        direct = {producer[t] for t in s.reads if t in producer}
        below.append(direct.union(*(below[j] for j in direct)))
    for k, s in enumerate(steps):
        users = [j for j, r in enumerate(steps) if s.target.table in r.reads]
        if len(users) < (1 if s.target.table in outputs else 2) or not _nests(s) \
                or s.target.table in blocked:
            continue
        group = [k] + [j for j in range(k + 1, len(steps))
                       if any(u == j or u in below[j] for u in users)
                       and any(u == j or j in below[u] for u in users)]
        tables = {steps[j].target.table for j in group}
        outside = [r for j, r in enumerate(steps) if j not in group and r.reads & tables]
        if all(_nests(steps[j]) and steps[j].target.table not in blocked for j in group) \
                and all(_nests(r) for r in outside):
            return group
    return None


def _merged(steps: list[Step], group: list[int], outputs: set[str], d: Dialect,
            temporary: bool) -> tuple[list[Step], dict[Location, Location]]:
    """`steps` with those of `group` one statement, in order, and where their values read
    later (or outputs) moved."""
    members = [steps[j] for j in group]
    tables = {m.target.table for m in members}
    rest = [s for j, s in enumerate(steps) if j not in group]
    read_later = set().union(*(s.reads for s in rest)) & tables
    last = members[-1]
    table = f"{last.target.table}_shared"
    renamed = {(m.target.table, column): (table, f"{m.target.table}_{column}")
               for m in members if m.target.table in read_later | outputs
               for column, _ in m.formula.columns}
    top = Formula(tuple((new[1], (Read(*old),)) for old, new in renamed.items()))
    pipelined: dict[str, Step] = {}
    kernels: dict[str, KernelUse] = {}
    for m in members:
        for p in (*m.pipelined, replace(m, pipelined=(), vertex=None if m.shared else m.vertex)):
            pipelined.setdefault(p.target.table, p)
        for use in m.kernels:
            kernels.setdefault(use.name, use)
    step = Step("sql", replace(last.target, table=table, tensor=table), "",
                list(kernels.values()), "; ".join(m.label for m in members), last.vertex,
                nested_query(top, {}, d), tuple(pipelined.values()),
                reads=frozenset().union(*(m.reads for m in members)) - tables,
                one_tuple=True, formula=top, shared=True)
    step = replace(step, sql=d.create(table, statement_query(step, d), temporary))
    out = [_reread(s, renamed, d, temporary) if s.reads & tables else s for s in rest]
    out.insert(sum(j not in group for j in range(group[-1])), step)   # where its last was
    return _ordered(out), renamed


def _reread(step: Step, renamed: dict[Location, Location], d: Dialect, temporary: bool,
            top: bool = True) -> Step:
    """`step` (and what is streamed into it) reading the values of `renamed` where they
    moved."""
    def expr(e: Expr) -> Expr:
        return tuple(Read(*renamed.get((p.table, p.column), (p.table, p.column)))
                     if isinstance(p, Read) else p for p in e)
    moved = {old[0]: new[0] for old, new in renamed.items()}
    formula = Formula(tuple((c, expr(e)) for c, e in step.formula.columns))
    step = replace(step, formula=formula, query=nested_query(formula, {}, d),
                   reads=frozenset(moved.get(t, t) for t in step.reads),
                   pipelined=tuple(_reread(p, renamed, d, temporary, False)
                                   for p in step.pipelined))
    return replace(step, sql=d.create(step.target.table, statement_query(step, d) if top
                                      else step.query, temporary))


def _ordered(steps: list[Step]) -> list[Step]:
    """`steps` in their order, but each after the steps whose tables it reads."""
    producer = {s.target.table: k for k, s in enumerate(steps)}
    placed: set[int] = set()
    out: list[Step] = []

    def place(k: int) -> None:
        if k not in placed:
            placed.add(k)
            for t in sorted(steps[k].reads):
                if t in producer:
                    place(producer[t])
            out.append(steps[k])
    for k in range(len(steps)):
        place(k)
    return out
