"""Gradients and training of EinSum programs in the database.

`grad` runs a program extended by its backward pass (`program.autodiff`) and returns the
gradients; `train` adds a loss (`program.losses`) and optimizer updates
(`program.updates`) and runs one iteration after another: the parameters and the
optimizer's state live in database tables, and each iteration is one transaction.
"""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

import numpy as np
import scipy.sparse as sp

from .backends import open_backend
from .blocks import Blocks, compose
from .errors import DataError, ProgramError
from .inputs import ArrayInput, bind_inputs
from .plan import Plan
from .program import updates
from .program.autodiff import Gradients, differentiate
from .program.losses import add_loss
from .program.model import InputDecl, Program, TableSource
from .program.parser import load_program
from .program.validate import infer_bounds
from .session import Session
from .sql.steps import TableRelation, key_column


def input_shapes(program: Program, data: dict[str, object]) -> dict[str, tuple[int, ...]]:
    """The shape of every tensor of `program` bound to `data` (tables: declared bounds)."""
    bound = bind_inputs(program, data)
    return infer_bounds(program, {n: i.shape for n, i in bound.items()
                                  if isinstance(i, ArrayInput)})


def backward_program(program: Program | str | Path, data: dict[str, object], loss: str,
                     wrt: Iterable[str], constants: Iterable[str] = ()) -> Gradients:
    """`program` with the gradients of `loss` with respect to `wrt` appended."""
    program = load_program(program)
    return differentiate(program, loss, wrt, input_shapes(program, data), constants)


def grad(program: Program | str | Path, data: dict[str, object] | None = None, *, loss: str,
         wrt: Iterable[str], plan: str | Plan = "optimal", backend: object = "duckdb",
         constants: Iterable[str] = (), **backend_options) -> dict[str, np.ndarray]:
    """The gradient of the scalar tensor `loss` with respect to each tensor in `wrt`
    (inputs or intermediates), as NumPy arrays, computed in SQL with the forward pass;
    no gradient flows through the tensors in `constants`."""
    data = dict(data or {})
    grads = backward_program(program, data, loss, wrt, constants)
    with Session(grads.program, {**data, **grads.helpers}, backend=backend,
                 **backend_options) as session:
        outputs = session.run(plan).outputs
        shapes = session.dag.shapes
    result = {name: np.asarray(outputs[tensor], dtype=np.float64)
              for name, tensor in grads.grads.items()}
    for name in grads.zero:
        result[name] = np.zeros(shapes[name])
    return {name: result[name] for name in dict.fromkeys(wrt)}


@dataclass
class TrainResult:
    params: dict[str, np.ndarray]         # the trained parameters
    losses: list[float]                   # the loss of each epoch (before its update)
    metrics: dict[str, list[float]]       # e.g. the training accuracy of each epoch
    seconds: list[float]                  # wall time of each iteration


class Trainer:
    """A program, its loss, gradients and optimizer updates as one iteration program on a
    backend. Parameters and optimizer state live in tables ``<tables>_<name>`` (one key
    column per label, ``val``), read in place by each iteration and replaced in the same
    transaction; ``<tables>_step`` counts the iterations done. With `resume`, training
    continues from the tables a previous run left (on PostgreSQL or a DuckDB file)."""

    def __init__(self, program: Program | str | Path, data: dict[str, object], *, loss: str,
                 params: Iterable[str], optimizer: str = "adam", plan: str | Plan = "optimal",
                 backend: object = "duckdb", tables: str = "se_train", resume: bool = False,
                 dropout: dict[str, float] | None = None, seed: int = 0,
                 progress: Callable[[str], None] | None = None, **options):
        program = load_program(program)
        self.params = list(dict.fromkeys(params))
        self.optimizer = updates.optimizer(optimizer)
        unknown = set(options) - set(self.optimizer.defaults)
        backend_options = {k: options.pop(k) for k in list(unknown)}
        self.options = {**self.optimizer.defaults, **options}
        self.dropout = dict(dropout or {})
        self.rng = np.random.default_rng(seed)
        self.tables = tables
        for name in self.params + list(self.dropout):
            if name not in program.inputs:
                raise ProgramError(f"{name} is not an input of the program: parameters and "
                                   "dropout masks are inputs")
        data = dict(data)
        given = {n: v for n, v in data.items() if n in program.inputs}
        shapes = input_shapes(program, {**given, **{n: np.zeros(self._mask_shape(program, n, given))
                                                     for n in self.dropout if n not in given}})
        self.shapes = shapes
        lossed = add_loss(program, loss, shapes, data)
        loss_shapes = infer_bounds(lossed.program, {**{n: shapes[n] for n in program.inputs},
                                                    **{n: np.shape(v) for n, v in lossed.data.items()}})
        grads = differentiate(lossed.program, lossed.loss, self.params, loss_shapes,
                              lossed.constants)
        if grads.zero:
            raise ProgramError(f"the loss does not depend on {', '.join(grads.zero)}")
        self.backward = grads.backward
        self.loss, self.metrics = lossed.loss, lossed.metrics
        statements, self.replaced, scalars, state = [], {}, [], []
        for name in self.params:
            up = self.optimizer.update(self.optimizer, name, lossed.program.labels_of(name),
                                       grads.grads[name], self.options)
            statements += up.statements
            self.replaced.update(up.new)
            scalars = list(dict.fromkeys(scalars + up.scalars))
            for s in up.state:
                shapes[s] = shapes[name]
                state.append(s)
        self.scalars = scalars
        stored = self.params + state + scalars + list(self.dropout)
        for name in scalars:
            shapes[name] = ()
        inputs = dict(grads.program.inputs)
        for name in stored:
            labels = inputs[name].labels if name in inputs else (
                lossed.program.labels_of(self._param_of(name)) if name not in scalars else ())
            columns = tuple(key_column(l, a) for a, l in enumerate(labels))
            inputs[name] = InputDecl(name, labels, tuple(shapes[name]),
                                     TableSource(self.table(name), columns, "val"))
        outputs = [self.loss] + self.metrics + list(self.replaced.values())
        self.program = Program(inputs, grads.program.statements + statements, outputs,
                               program.source)
        self.backend, self._owns_backend = open_backend(backend, **backend_options)
        try:
            self._create_tables(stored, state, given, resume)
            session_data = {n: v for n, v in {**given, **lossed.data, **grads.helpers}.items()
                            if n not in stored}
            self.session = Session(self.program, session_data, backend=self.backend,
                                   in_place=frozenset(stored), scoped=False, progress=progress)
            self.plan = self.session.plan(plan)
        except BaseException:
            self.close()
            raise

    def table(self, name: str) -> str:
        return f"{self.tables}_{name}"

    def _param_of(self, state: str) -> str:
        return next(p for p in self.params if state.startswith(f"{p}_"))

    @staticmethod
    def _mask_shape(program: Program, name: str, given: dict) -> tuple[int, ...]:
        decl = program.inputs[name]
        if None in decl.bounds:
            raise ProgramError(f"dropout mask {name}: declare its bounds, e.g. "
                               f"input {name}[{','.join(f'{l}:N' for l in decl.labels)}]")
        return tuple(decl.bounds)

    # -- tables ------------------------------------------------------------------
    def _create_tables(self, stored: list[str], state: list[str], given: dict,
                       resume: bool) -> None:
        existing = [n for n in stored + ["step"]
                    if self.backend.table_columns(self.table(n)) is not None]
        with self.backend.transaction():
            if resume and existing:
                missing = [n for n in stored + ["step"] if n not in existing]
                if missing:
                    raise DataError(f"cannot resume: no table {self.table(missing[0])}")
                return
            for name in existing:
                self.backend.execute(f"DROP TABLE {self.backend.dialect.q(self.table(name))}")
            for name in stored:
                if name in self.params:
                    if name not in given:
                        raise DataError(f"no initial value for parameter {name}")
                    value = given[name]
                else:
                    value = np.zeros(self.shapes[name])
                self._write(name, value, create=True)
            self._write_step(0, create=True)

    def _write(self, name: str, value: object, create: bool = False) -> None:
        """Replace the table of `name` by `value`, every entry (zeros too) a row."""
        array = np.asarray(value.toarray() if sp.issparse(value) else value, dtype=np.float64)
        shape = self.shapes[name]
        labels = self.program.inputs[name].labels
        staging = TableRelation(f"{self.table(name)}_staging", name, shape, (1,) * len(shape),
                                labels)
        keys = [k.ravel() for k in np.indices(shape)] if shape else []
        self.backend.load(staging, Blocks(keys, array.reshape(-1)))
        q = self.backend.dialect.q
        if create:
            self.backend.execute(f"CREATE TABLE {q(self.table(name))} AS SELECT * FROM "
                                 f"{q(staging.table)}")
        else:
            self.backend.execute(f"DELETE FROM {q(self.table(name))}")
            self.backend.execute(f"INSERT INTO {q(self.table(name))} SELECT * FROM "
                                 f"{q(staging.table)}")
        self.backend.drop(staging)

    def _write_step(self, step: int, create: bool = False) -> None:
        q = self.backend.dialect.q(self.table("step"))
        if create:
            self.backend.execute(f"CREATE TABLE {q} (step BIGINT)")
        else:
            self.backend.execute(f"DELETE FROM {q}")
        self.backend.execute(f"INSERT INTO {q} VALUES ({int(step)})")

    def step_count(self) -> int:
        return int(self.backend.query(
            f"SELECT step FROM {self.backend.dialect.q(self.table('step'))}")[0][0])

    # -- iterations -----------------------------------------------------------------
    def iterate(self) -> dict[str, object]:
        """One iteration (forward, backward, update) in one transaction; returns the loss,
        the metrics and the new parameters."""
        with self.backend.transaction():
            step = self.step_count() + 1
            for name, value in self.optimizer.scalars(self.options, step).items():
                self._write(name, np.asarray(value))
            for name, p in self.dropout.items():
                keep = self.rng.random(self.shapes[name]) >= p
                self._write(name, keep / (1.0 - p))
            outputs = self.session.run(self.plan).outputs
            for old, new in self.replaced.items():
                self._write(old, outputs[new])
            self._write_step(step)
        return {"loss": float(outputs[self.loss]),
                **{m: float(outputs[m]) for m in self.metrics},
                "params": {p: outputs[self.replaced[p]] for p in self.params}}

    def parameters(self) -> dict[str, np.ndarray]:
        """The parameters in the tables now."""
        out = {}
        for name in self.params:
            rel = TableRelation(self.table(name), name, self.shapes[name],
                                (1,) * len(self.shapes[name]), self.program.inputs[name].labels)
            out[name] = compose(self.backend.fetch(rel), rel.shape, rel.tiling)
        return out

    def close(self) -> None:
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
    with Trainer(program, data, loss=loss, params=params, optimizer=optimizer, plan=plan,
                 backend=backend, tables=tables, resume=resume, dropout=dropout, seed=seed,
                 **options) as trainer:
        for epoch in range(1, epochs + 1):
            start = time.perf_counter()
            result = trainer.iterate()
            seconds.append(time.perf_counter() - start)
            losses.append(result["loss"])
            for m in trainer.metrics:
                metrics.setdefault(m, []).append(result[m])
            if report:
                extra = "".join(f" {m} {result[m]:.4f}" for m in trainer.metrics)
                report(f"epoch {epoch}/{epochs} loss {result['loss']:.6f}{extra} "
                       f"({seconds[-1]:.2f} s)")
        params_now = result["params"] if epochs else trainer.parameters()
    return TrainResult(params_now, losses, metrics, seconds)


def _progress_printer() -> Callable[[str], None]:
    def report(line: str) -> None:
        print(line, file=sys.stderr, flush=True)
    return report
