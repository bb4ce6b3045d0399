"""Gradients and training of EinSum programs in the database.

`grad` runs a program extended by its backward pass (`program.autodiff`) and returns the
gradients; `train` adds a loss (`program.losses`) and optimizer updates
(`program.updates`) and runs one iteration after another: the parameters and the
optimizer's state live in database tables, which each iteration replaces inside the
engine in one transaction (`replacement_sql`); only the loss and the metrics come back.
"""
from __future__ import annotations

import inspect
import re
import sys
import time
from dataclasses import dataclass
from math import prod
from pathlib import Path
from typing import Callable, Iterable

import numpy as np
import scipy.sparse as sp

from .backends import backend_class, open_backend
from .backends.jobs import JOBS
from .blocks import Blocks, compose
from .compile_job import compile_job
from .errors import DataError, PlanError, ProgramError
from .executor import Execution, execute
from .inputs import ArrayInput, bind_inputs
from .plan import Plan
from .program import updates
from .program.autodiff import Gradients, differentiate
from .program.losses import add_loss, parse_loss
from .program.model import InputDecl, Program, Statement, TableSource
from .program.parser import load_program
from .program.validate import infer_bounds
from .session import Session, SessionOptions
from .sql.compiler import Combined, combined_query
from .sql.dialect import Dialect
from .sql.steps import TableRelation, key_column
from .sql.templates import SQL, render
from .training_store import replacement_sql, training_store


def input_shapes(program: Program, data: dict[str, object]) -> dict[str, tuple[int, ...]]:
    """The shape of every tensor of `program` bound to `data` (tables: declared bounds)."""
    bound = bind_inputs(program, data)
    return infer_bounds(program, {n: i.shape for n, i in bound.items()
                                  if isinstance(i, ArrayInput)})


def backward_program(program: Program | str | Path, data: dict[str, object], loss: str,
                     wrt: Iterable[str], constants: Iterable[str] = ()
                     ) -> tuple[Gradients, dict[str, object]]:
    """`program` with `loss` (a scalar tensor, or a call of a registered loss) and the
    gradients of the loss with respect to `wrt` appended, and the data of its inputs."""
    program = load_program(program)
    _check_data(program, data, loss)
    lossed = add_loss(program, loss, input_shapes(program, _program_data(program, data)), data)
    data = {**_program_data(program, data), **lossed.data}
    grads = differentiate(lossed.program, lossed.loss, wrt,
                          input_shapes(lossed.program, data), [*constants, *lossed.constants])
    return grads, {**data, **grads.helpers}


def grad(program: Program | str | Path, data: dict[str, object] | None = None, *, loss: str,
         wrt: Iterable[str], plan: str | Plan = "optimal", backend: object = "duckdb",
         constants: Iterable[str] = (), **backend_options) -> dict[str, np.ndarray]:
    """The gradient of `loss` (a scalar tensor of the program, or a loss call such as
    ``softmax_cross_entropy(Z, labels, mask)`` naming data) with respect to each tensor in
    `wrt` (inputs or intermediates), as NumPy arrays, computed in SQL with the forward pass;
    no gradient flows through the tensors in `constants`."""
    grads, inputs = backward_program(program, dict(data or {}), loss, wrt, constants)
    with Session(grads.program, inputs, backend=backend, **backend_options) as session:
        outputs = session.run(plan).outputs
        shapes = session.dag.shapes
    result = {name: np.asarray(outputs[tensor], dtype=np.float64)
              for name, tensor in grads.grads.items()}
    for name in grads.zero:
        result[name] = np.zeros(shapes[name])
    return {name: result[name] for name in dict.fromkeys(wrt)}


def explain_gradients(program: Program | str | Path, data: dict[str, object] | None = None, *,
                      loss: str, wrt: Iterable[str], top: int = 3, analyze: bool = False,
                      sql: bool = False, backend: object = "duckdb", constants: Iterable[str] = (),
                      **backend_options) -> dict:
    """`explain` of the program with its loss and backward pass: the backward statements,
    and in each plan the decompositions of both passes (backward ones marked)."""
    grads, inputs = backward_program(program, dict(data or {}), loss, wrt, constants)
    with Session(grads.program, inputs, backend=backend, **backend_options) as session:
        result = session.explain(top=top, analyze=analyze, sql=sql)
    backward = {st.out for st in grads.backward}
    result["backward"] = [str(st) for st in grads.backward]
    for plan in result["plans"]:
        for statement in plan["statements"]:
            if statement["name"].split("~")[0] in backward:
                statement["pass"] = "backward"
    return result


def _check_data(program: Program, data: dict[str, object], loss: str) -> None:
    """Every data name is an input of the program or an argument of the loss."""
    call = parse_loss(loss)
    named = set(call[1]) if call else set()
    extra = sorted(set(data) - set(program.inputs) - named)
    if extra:
        raise DataError(f"data given for {extra[0]!r}, which is neither an input of the "
                        f"program nor data the loss {loss!r} names")


def _program_data(program: Program, data: dict[str, object]) -> dict[str, object]:
    return {n: v for n, v in data.items() if n in program.inputs}


@dataclass
class TrainResult:
    params: dict[str, np.ndarray]         # the trained parameters
    losses: list[float]                   # the loss of each epoch (before its update)
    metrics: dict[str, list[float]]       # e.g. the training accuracy of each epoch
    seconds: list[float]                  # wall time of each iteration


STORE_TILE_BYTES = 1 << 26    # parameters up to this size are stored as one tile


@dataclass
class TrainingProgram:
    """One training iteration as a program: forward, loss, backward, optimizer updates.
    Each parameter and its optimizer state live in one table ``<tables>_<param>`` (its
    `tiling`'s key columns, named as in `key_column`; the parameter in column ``val``, each
    state tensor in a column named by its suffix, read through a view
    ``<tables>_<param>_<suffix>``); the optimizer's per-step scalars are views of
    ``<tables>_step``; dropout masks are tables (one key column per label, ``val``). The
    outputs are the loss and the metrics; the updates end in ``<tables>_<param>_next`` (or
    in columns of a shared statement's table, where the store takes them there:
    `RenameStore`)."""
    program: Program
    params: list[str]
    state: list[str]                      # optimizer state tensors (zero at the start)
    scalars: list[str]                    # per-step scalars of the optimizer
    dropout: dict[str, float]             # mask input -> drop rate
    columns: dict[str, dict[str, str]]    # parameter -> column of its table -> tensor read
    new: dict[str, str]                   # tensor read (parameter or state) -> its update
    tilings: dict[str, tuple[int, ...]]   # parameter -> the tiling of its table
    loss: str
    metrics: list[str]
    backward: list[Statement]             # the gradient statements
    shapes: dict[str, tuple[int, ...]]
    data: dict[str, object]               # the inputs not in tables
    initial: dict[str, object]            # initial values of the parameters
    optimizer: updates.Optimizer
    options: dict[str, float]
    tables: str

    @property
    def stored(self) -> list[str]:
        """The inputs living in tables (or views of them)."""
        return self.params + self.state + self.scalars + list(self.dropout)

    def table(self, name: str) -> str:
        return f"{self.tables}_{name}"

    def next_table(self, param: str) -> str:
        """Where an iteration leaves the update of `param` and its state."""
        return self.table(f"{param}_next")

    def in_place(self) -> dict[str, tuple[int, ...]]:
        """The tiling of each stored input's table (or view)."""
        tilings = {name: self.tilings[p] for p, cols in self.columns.items()
                   for name in cols.values()}
        return {name: tilings.get(name, (1,) * len(self.shapes[name])) for name in self.stored}

    def combined(self) -> dict[str, Combined]:
        """The next table of each parameter: its update and its state's, side by side."""
        return {self.next_table(p): Combined(self.tilings[p], {
                    column: self.new[tensor] for column, tensor in cols.items()})
                for p, cols in self.columns.items()}


def view_sql(job: TrainingProgram, d: Dialect, templates: str = "common") -> list[str]:
    """The views of the optimizer's state (columns of the parameters' tables) and of its
    per-step scalars (of the step about to run: the count in ``<tables>_step`` plus one),
    from the templates in folder `templates`."""
    out = []
    for param, cols in job.columns.items():
        keys = SQL("".join(f"{d.q(c)}, " for c in
                           _relation(job, param, job.table(param)).columns))
        out += [render(f"{templates}/column_view", d.quote, view=job.table(tensor), keys=keys,
                       column=column, table=job.table(param))
                for column, tensor in cols.items() if tensor != param]
    for name, sql in job.optimizer.scalars_sql(job.options, "(step + 1)").items():
        out.append(render(f"{templates}/value_view", d.quote, view=job.table(name),
                          value=SQL(sql), table=job.table("step")))
    return out


def _relation(job: TrainingProgram, name: str, table: str) -> TableRelation:
    """The relation of stored input `name` in `table`."""
    shape = job.shapes[name]
    return TableRelation(table, name, shape, job.in_place()[name],
                         job.program.inputs[name].labels)


def _store_tiling(shape: tuple[int, ...]) -> tuple[int, ...]:
    """One tile for a parameter up to STORE_TILE_BYTES, else one row per entry."""
    return tuple(shape) if 8 * prod(shape) <= STORE_TILE_BYTES else (1,) * len(shape)


def training_program(program: Program | str | Path, data: dict[str, object], *, loss: str,
                     params: Iterable[str], optimizer: str = "adam", tables: str = "se_train",
                     dropout: dict[str, float] | None = None, **options) -> TrainingProgram:
    """The iteration program of training `params` of `program` on `data` (see `train`)."""
    program = load_program(program)
    params = list(dict.fromkeys(params))
    opt = updates.optimizer(optimizer)
    unknown = set(options) - set(opt.defaults)
    if unknown:
        raise ProgramError(f"unknown option {sorted(unknown)[0]!r} of optimizer {opt.name} "
                           f"(it has {', '.join(opt.defaults)})")
    options = {**opt.defaults, **options}
    dropout = dict(dropout or {})
    for name in params + list(dropout):
        if name not in program.inputs:
            raise ProgramError(f"{name} is not an input of the program: parameters and "
                               "dropout masks are inputs")
        if re.fullmatch(r"step|state\d*", name):
            raise ProgramError(f"a parameter or dropout mask cannot be named {name}: training "
                               f"keeps its step count and state in table {tables}_{name}; "
                               "rename it")
    _check_data(program, data, loss)
    given = _program_data(program, data)
    for name in dropout:
        given.setdefault(name, np.zeros(_declared(program, name, "dropout mask")))
    for name in params:
        if name not in given:
            given[name] = np.zeros(_declared(program, name, "parameter"))
    shapes = input_shapes(program, given)
    lossed = add_loss(program, loss, shapes, data)
    shapes = infer_bounds(lossed.program, {**{n: shapes[n] for n in program.inputs},
                                           **{n: np.shape(v) for n, v in lossed.data.items()}})
    grads = differentiate(lossed.program, lossed.loss, params, shapes, lossed.constants)
    if grads.zero:
        raise ProgramError(f"the loss does not depend on {', '.join(grads.zero)}")
    statements, new, scalars, state, columns = [], {}, [], [], {}
    labels = {name: lossed.program.labels_of(name) for name in params}
    for name in params:
        up = opt.update(opt, name, labels[name], grads.grads[name], options)
        statements += up.statements
        new.update(up.new)
        scalars = list(dict.fromkeys(scalars + up.scalars))
        columns[name] = {"val": name}
        for s, suffix in zip(up.state, opt.state):
            shapes[s], labels[s] = shapes[name], labels[name]
            state.append(s)
            columns[name][suffix] = s
    for name in scalars:
        shapes[name], labels[name] = (), ()
    for name in dropout:
        labels[name] = program.inputs[name].labels
    clash = [n for n in list(new.values()) + state + scalars
             if n in grads.program.inputs or n in shapes and n not in state + scalars]
    if clash:
        raise ProgramError(f"the program already has a tensor named {clash[0]}, which "
                           f"training uses for the optimizer: rename it")
    result = TrainingProgram(Program(), params, state, scalars, dropout, columns, new,
                             {p: _store_tiling(shapes[p]) for p in params},
                             lossed.loss, lossed.metrics, grads.backward, shapes,
                             {}, {n: given[n] for n in params if n in data}, opt, options, tables)
    inputs = dict(grads.program.inputs)
    for name in result.stored:
        columns = tuple(key_column(l, a) for a, l in enumerate(labels[name]))
        inputs[name] = InputDecl(name, labels[name], tuple(shapes[name]),
                                 TableSource(result.table(name), columns, "val"))
    result.program = Program(inputs, grads.program.statements + statements,
                             [lossed.loss] + lossed.metrics + list(new.values()),
                             program.source)
    result.data = {n: v for n, v in {**given, **lossed.data, **grads.helpers}.items()
                   if n not in result.stored}
    return result


def _declared(program: Program, name: str, what: str) -> tuple[int, ...]:
    decl = program.inputs[name]
    if None in decl.bounds:
        raise DataError(f"no data for {what} {name}: give it or declare its bounds, e.g. "
                        f"input {name}[{','.join(f'{l}:N' for l in decl.labels)}]")
    return tuple(decl.bounds)


class Trainer:
    """Runs a `TrainingProgram` on a backend: the parameters and the optimizer state live
    in their tables, which each iteration reads in place and replaces inside the engine in
    one transaction; ``<tables>_step`` counts the iterations done. The plan and its SQL
    are chosen and compiled once; the data is loaded, and the statements reading only the
    data run, by the first iteration (`executor.execute`'s `resident`). With `resume`,
    training continues from the tables a previous run left (on PostgreSQL or a DuckDB
    file)."""

    def __init__(self, program: Program | str | Path, data: dict[str, object], *, loss: str,
                 params: Iterable[str], optimizer: str = "adam", plan: str | Plan = "optimal",
                 backend: object = "duckdb", tables: str = "se_train", resume: bool = False,
                 dropout: dict[str, float] | None = None, seed: int = 0,
                 progress: Callable[[str], None] | None = None,
                 backend_options: dict | None = None, memory_cap: float | None = None,
                 **options):
        self.job = training_program(program, data, loss=loss, params=params,
                                    optimizer=optimizer, tables=tables, dropout=dropout, **options)
        self.rng = np.random.default_rng(seed)
        self.backend, self._owns_backend = open_backend(backend, **(backend_options or {}))
        self.store = training_store(self.backend)
        self.store.lasting([self.table(n) for n in self.job.stored]
                           + [self.job.next_table(p) for p in self.job.params])
        self.session: Session | None = None
        self.last_run: Execution | None = None       # of the last iteration: its steps
        self._loaded: dict[str, TableRelation] = {}  # tables of the data, kept across iterations
        try:
            self._create_tables(resume)
            self.session = Session(self.job.program, self.job.data, backend=self.backend,
                                   options=SessionOptions(in_place=self.job.in_place(),
                                                          scoped=False),
                                   memory_cap=memory_cap, progress=progress)
            self.plan = self.session.plan(plan)
            self.compiled = self.session.compile(self.plan, combined=self.job.combined(),
                                                 combined_shared=self.store.shares_updates,
                                                 resident=True)
            self.store.adopt(self.job, self.compiled)
            self._arrays = self.session.values.arrays(self.session.exact_integers)
        except BaseException:
            self.close()
            raise

    def table(self, name: str) -> str:
        return self.job.table(name)

    # -- tables ------------------------------------------------------------------
    def _create_tables(self, resume: bool) -> None:
        job, store = self.job, self.store
        tables = job.params + list(job.dropout) + ["step"]
        with store.transaction():
            if resume and store.kind(self.table("step")):
                for name in tables:
                    self._check_layout(name)
            else:
                for name in job.state + job.scalars + tables:   # views before their tables
                    kind = store.kind(self.table(name))
                    if kind:
                        store.drop(self.table(name), kind)
                for name in job.params:
                    if name not in job.initial:
                        raise DataError(f"no initial value for parameter {name} (and no "
                                        f"table {self.table(name)} to resume from)")
                    self._create_store(name)
                for name in job.dropout:
                    self._write(name, np.zeros(job.shapes[name]), create=True)
                store.create_step(self.table("step"))
            for sql in view_sql(job, self.backend.dialect, store.templates):
                self.backend.execute(sql)

    def _check_layout(self, name: str) -> None:
        """Resuming: the table of `name` is there with the columns this version writes."""
        table = self.table(name)
        have = self.backend.table_columns(table)
        if have is None:
            raise DataError(f"cannot resume: there is no table {table}")
        if name in self.job.columns:
            want = [*_relation(self.job, name, table).columns, *self.job.columns[name]]
            if list(have) != want:
                raise DataError(f"cannot resume from table {table}: its columns are "
                                f"{', '.join(have)}, not {', '.join(want)} (tables of another "
                                "optimizer, tiling or version: train afresh)")

    def _create_store(self, param: str) -> None:
        """The table of `param`: its initial value, and zeros for its optimizer state."""
        job, d = self.job, self.backend.dialect
        staged = {}
        for column, tensor in job.columns[param].items():
            value = job.initial[param] if tensor == param else np.zeros(job.shapes[param])
            rel = _relation(job, param, f"{self.table(param)}_staging_{column}")
            self.backend.load(rel, _tiles(value, rel.tiling))
            staged[column] = rel
        self.store.create(self.table(param), combined_query(staged, d))
        for rel in staged.values():
            self.backend.drop(rel)

    def _write(self, name: str, value: object, create: bool = False) -> None:
        """Replace the table of dropout mask `name` by `value`, every entry a row."""
        staging = _relation(self.job, name, f"{self.table(name)}_staging")
        self.backend.load(staging, _tiles(value, staging.tiling))
        self.store.write(self.table(name), staging.table, create)
        self.backend.drop(staging)

    def step_count(self) -> int:
        """Iterations done (by this or an earlier run on the same tables)."""
        return int(self.backend.query(render("common/train_step_count",
                                             self.backend.dialect.quote,
                                             table=self.table("step")))[0][0])

    # -- iterations -----------------------------------------------------------------
    def iterate(self) -> dict[str, float]:
        """One iteration: forward, backward and updates computed from the tables by the
        statements compiled once (outside a transaction, so that DuckDB frees each
        intermediate after its last read; the updates end in the next tables), then one
        transaction replaces the parameters and the optimizer state by their next tables
        and counts the step: a failure anywhere leaves the previous ones. Returns the loss
        and the metrics (the parameters stay in the engine: `parameters`)."""
        job = self.job
        if job.dropout:
            with self.store.transaction():
                for name, rate in job.dropout.items():
                    self._write(name, (self.rng.random(job.shapes[name]) >= rate) / (1.0 - rate))
        try:
            self.last_run = execute(self.compiled, self._arrays, self.backend,
                                    resident=self._loaded)
            with self.store.transaction():
                self.store.finish(job, self.compiled)
        except BaseException:
            for rel in self.compiled.combined.values():
                self.backend.drop(rel)
            raise
        outputs = self.last_run.outputs
        return {"loss": float(outputs[job.loss]), **{m: float(outputs[m]) for m in job.metrics}}

    def parameters(self) -> dict[str, np.ndarray]:
        """The parameters in their tables now."""
        out = {}
        for name in self.job.params:
            rel = _relation(self.job, name, self.table(name))
            rows = self.backend.fetch(rel, render("common/stored_values",
                                                  self.backend.dialect.quote, table=rel.table))
            out[name] = compose(rows, rel.shape, rel.tiling)
        return out

    def close(self) -> None:
        try:
            for rel in self._loaded.values():
                self.backend.drop(rel)
            self._loaded = {}
        finally:
            session = getattr(self, "session", None)
            if session is not None:
                session.close()
            if self._owns_backend:
                self.backend.close()
                self._owns_backend = False

    def __enter__(self) -> "Trainer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _tiles(value: object, tiling: tuple[int, ...]) -> Blocks:
    """`value` (dense or scipy.sparse) by `tiling` (one tile, or one entry per row),
    zeros too."""
    array = np.asarray(value.toarray() if sp.issparse(value) else value, dtype=np.float64)
    if any(t > 1 for t in tiling):
        return Blocks([], array.reshape(1, -1))
    return Blocks([k.ravel() for k in np.indices(array.shape)], array.reshape(-1))


def train(program: Program | str | Path, data: dict[str, object], *, loss: str,
          params: Iterable[str], optimizer: str = "adam", epochs: int = 1,
          plan: str | Plan = "optimal", backend: object = "duckdb", tables: str = "se_train",
          resume: bool = False, dropout: dict[str, float] | None = None, seed: int = 0,
          progress: bool | Callable[[str], None] = False, **options) -> TrainResult:
    """Train `params` (inputs of `program`, initial values in `data`) to minimise `loss` (a
    scalar tensor of the program, or ``softmax_cross_entropy(Z, labels, mask)`` or
    ``mse(P, target)`` naming data) for `epochs` iterations of `optimizer` (sgd, adam;
    options lr, beta1, beta2, eps). `dropout` maps mask inputs to drop rates: each epoch
    draws a new mask (seeded by `seed`). Returns the parameters and the loss per epoch."""
    report = _progress_printer() if progress is True else (progress or None)
    losses, metrics, seconds = [], {}, []
    optimizer_options = {k: options.pop(k) for k in list(options)
                         if k in updates.optimizer(optimizer).defaults}
    if isinstance(backend, str):
        accepted = inspect.signature(backend_class(backend).__init__).parameters
        unknown = [k for k in options if k not in accepted]
        if unknown:
            raise DataError(f"unknown option {unknown[0]!r}: options are those of optimizer "
                            f"{optimizer} ({', '.join(updates.optimizer(optimizer).defaults)}) "
                            f"or of the {backend} backend")
    with Trainer(program, data, loss=loss, params=params, optimizer=optimizer, plan=plan,
                 backend=backend, tables=tables, resume=resume, dropout=dropout, seed=seed,
                 backend_options=options, **optimizer_options) as trainer:
        for epoch in range(1, epochs + 1):
            start = time.perf_counter()
            result = trainer.iterate()
            seconds.append(time.perf_counter() - start)
            losses.append(result["loss"])
            for m in trainer.job.metrics:
                metrics.setdefault(m, []).append(result[m])
            if report:
                extra = "".join(f" {m} {result[m]:.4f}" for m in trainer.job.metrics)
                report(f"epoch {epoch}/{epochs} loss {result['loss']:.6f}{extra} "
                       f"({seconds[-1]:.2f} s)")
        params_now = trainer.parameters()
    return TrainResult(params_now, losses, metrics, seconds)


def _progress_printer() -> Callable[[str], None]:
    def report(line: str) -> None:
        print(line, file=sys.stderr, flush=True)
    return report


def compile_training_job(program: Program | str | Path, data: dict[str, object], *,
                         dialect: str, loss: str, params: Iterable[str], optimizer: str = "adam",
                         tables: str = "se_train", plan: str | Plan = "optimal",
                         dsn: str | None = None, database: str | None = None,
                         **options) -> str:
    """One training iteration as an SQL job (see `compile_job`): it computes the loss,
    gradients and updates from the tables, then replaces the parameters and their state and
    counts the step with the statements `Trainer` runs (`replacement_sql`), all in one
    transaction. The tables must exist: a `train` run with ``epochs=0`` (on the same
    database) creates them."""
    target = JOBS.get(dialect)        # an unknown one: compile_job says which there are
    if target is not None and not target.trains:
        raise PlanError(f"training jobs replace the parameter tables in one transaction, which "
                        f"{dialect} jobs cannot: compile --train for "
                        f"{', '.join(n for n, j in JOBS.items() if j.trains)}")
    job = training_program(program, data, loss=loss, params=params, optimizer=optimizer,
                           tables=tables, **options)
    after = replacement_sql(job, target.dialect()) if target else []
    return compile_job(job.program, dialect=dialect, data=job.data, plan=plan, dsn=dsn,
                       database=database, after=after, in_place=job.in_place(),
                       combined=job.combined())
