"""Where training keeps its parameters, optimizer state and step count between
iterations, per engine: tables whose rows are replaced in one transaction (PostgreSQL,
DuckDB files), TEMP tables renamed in one transaction (DuckDB in memory), or views of data
persisted in the Spark session, re-pointed once an iteration's statements are done (Spark
has no transactions and no DELETE on them)."""
from __future__ import annotations

from contextlib import nullcontext
from typing import TYPE_CHECKING, ContextManager

from .sql.dialect import Dialect
from .sql.templates import SQL, render

if TYPE_CHECKING:
    from .sql.compiler import CompiledPlan
    from .training import TrainingProgram


def replacement_sql(job: TrainingProgram, d: Dialect) -> list[str]:
    """The statements that end an iteration, in its transaction: each parameter's table
    replaced by its next table, and the step counted."""
    out = []
    for param in job.params:
        table, new = job.table(param), job.next_table(param)
        out += [render("common/delete_rows", d.quote, table=table),
                render("common/copy_rows", d.quote, table=table, rows=new),
                render("common/train_drop_next", d.quote, table=new)]
    return out + [render("common/train_step", d.quote, table=job.table("step"))]


class TableStore:
    """SQL tables and views, changed inside the backend's transactions."""
    templates = "common"             # the folder of its views' templates (`view_sql`)
    # whether an iteration's updates may end in columns of a shared statement's table
    # (`compile_plan`'s `combined_shared`), which `finish` then puts in place
    shares_updates = False

    def __init__(self, backend) -> None:
        self.backend = backend
        self.quote = backend.dialect.quote

    def _sql(self, template: str, **values) -> None:
        self.backend.execute(render(f"common/{template}", self.quote, **values))

    def transaction(self) -> ContextManager:
        return self.backend.transaction()

    def kind(self, table: str) -> str | None:
        """TABLE or VIEW: what `table` is, None when there is none."""
        d = self.backend.dialect
        rows = self.backend.query(render("common/table_type", d.quote, param=SQL(d.param)),
                                  [table])
        return ("VIEW" if rows[0][0] == "VIEW" else "TABLE") if rows else None

    def drop(self, table: str, kind: str) -> None:
        self._sql("drop_view" if kind == "VIEW" else "drop_table", table=table)

    def create(self, table: str, query: str) -> None:
        """A table of `query`'s rows."""
        self._sql("create_table_as", table=table, query=SQL(query))

    def write(self, table: str, rows: str, create: bool) -> None:
        """`table` holding the rows of table `rows` (made now when `create`)."""
        if create:
            self._sql("create_copy", table=table, rows=rows)
        else:
            self._sql("delete_rows", table=table)
            self._sql("copy_rows", table=table, rows=rows)

    def create_step(self, table: str) -> None:
        self._sql("train_step_table", table=table)

    def lasting(self, tables: list[str]) -> None:
        """`tables` outlive the iterations that write them."""

    def adopt(self, job: TrainingProgram, compiled: CompiledPlan) -> None:
        """Before the first iteration of `compiled`: the tables as its `finish` leaves them."""

    def finish(self, job: TrainingProgram, compiled: CompiledPlan) -> None:
        """End an iteration (`compiled`'s): each parameter's table replaced by its next, the
        step counted."""
        for sql in self.finish_sql(job, compiled):
            self.backend.execute(sql)

    def finish_sql(self, job: TrainingProgram, compiled: CompiledPlan) -> list[str]:
        return replacement_sql(job, self.backend.dialect)


class RenameStore(TableStore):
    """DuckDB in memory (nothing to resume from after the process): the parameters' tables
    are TEMP tables like the next tables an iteration writes, and an iteration ends by
    dropping each and renaming its next table in its place, in one transaction, instead
    of copying its rows (views are bound by name when read, so those of the optimizer's
    state follow). Updates that end in a shared statement's table (the whole Cora
    iteration is one statement) stay there: that table is renamed ``<tables>_state`` (the
    one before dropped), and their parameters' tables are views of its columns (`adopt`)."""
    shares_updates = True

    def create(self, table: str, query: str) -> None:
        self.backend.execute(self.backend.dialect.create(table, query, temporary=True))

    def adopt(self, job: TrainingProgram, compiled: CompiledPlan) -> None:
        """Before the first iteration: the parameters whose updates end in a shared
        statement's table move into ``<tables>_state``, in the columns that table holds
        them in, and their tables become views of those."""
        q = self.backend.dialect.q
        for state, params in _states(job, compiled).values():
            held = [(k, p, column, name) for k, p in enumerate(params)
                    for column, name in compiled.combined_columns[job.next_table(p)].items()]
            scan = " POSITIONAL JOIN ".join(f"{q(job.table(p))} AS p{k}"
                                            for k, p in enumerate(params))
            with self.transaction():
                self._sql("drop_table", table=state)
                self.create(state, "SELECT " + ", ".join(
                    f"p{k}.{q(column)} AS {q(name)}" for k, _, column, name in held)
                    + f" FROM {scan}")
                for param in params:
                    self._sql("drop_table", table=job.table(param))
                    self.backend.execute(render(
                        "duckdb/state_view", self.quote, view=job.table(param), table=state,
                        columns=SQL(", ".join(f"{q(name)} AS {q(column)}" for _, p, column, name
                                              in held if p == param))))

    def finish_sql(self, job: TrainingProgram, compiled: CompiledPlan) -> list[str]:
        renames = [(job.next_table(p), job.table(p)) for p in job.params
                   if compiled.combined[job.next_table(p)].table == job.next_table(p)]
        renames += [(table, state) for table, (state, _) in _states(job, compiled).items()]
        out = [sql for table, new in renames for sql in (
            render("common/drop_table", self.quote, table=new),
            render("duckdb/rename_table", self.quote, table=table, new=new))]
        return out + [render("common/train_step", self.quote, table=job.table("step"))]


def _states(job: TrainingProgram, compiled: CompiledPlan) -> dict[str, tuple[str, list[str]]]:
    """Each shared statement's table holding updates: the table it becomes (``<tables>_state``,
    then ``..._state1``, ...) and the parameters whose updates it holds."""
    found: dict[str, tuple[str, list[str]]] = {}
    for param in job.params:
        table = compiled.combined[job.next_table(param)].table
        if table != job.next_table(param):
            found.setdefault(table, (job.table(f"state{len(found) or ''}"), []))[1].append(param)
    return found


class SparkStore(TableStore):
    """Temporary views of the Spark session: a table is a view over persisted data
    (`SparkBackend.materialize`), replaced by dropping it and renaming its successor; the
    step count is a view of one literal. They last as long as the session."""
    templates = "spark"

    def transaction(self) -> ContextManager:
        return nullcontext()

    def kind(self, table: str) -> str | None:
        return "VIEW" if self.backend.table_columns(table) is not None else None

    def drop(self, table: str, kind: str) -> None:
        self.backend.drop_view(table)

    def create(self, table: str, query: str) -> None:
        self.backend.create(table, query)

    def write(self, table: str, rows: str, create: bool) -> None:
        if not create:
            self.backend.drop_view(table)
        self.backend.create(table, render("common/all_rows", self.quote, table=rows))

    def create_step(self, table: str) -> None:
        self._step(table, 0)

    def lasting(self, tables: list[str]) -> None:
        self.backend.rooted.update(tables)

    def finish(self, job: TrainingProgram, compiled: CompiledPlan) -> None:
        for param in job.params:
            self.backend.drop_view(job.table(param))
            self.backend.rename_view(job.next_table(param), job.table(param))
        step = self.backend.query(render("common/train_step_count", self.quote,
                                         table=job.table("step")))
        self._step(job.table("step"), int(step[0][0]) + 1)

    def _step(self, table: str, step: int) -> None:
        self.backend.execute(render("spark/train_step", self.quote, table=table, step=step))


def training_store(backend) -> TableStore:
    """The store of `backend`'s engine (and, for DuckDB, whether its database is a file)."""
    engine = backend.dialect.engine
    if engine == "spark":
        return SparkStore(backend)
    if engine == "duckdb" and backend.query(render("duckdb/database_path"))[0][0] is None:
        return RenameStore(backend)
    return TableStore(backend)
