"""The one pipeline from program to result: program + data + backend, walked stage by stage.

``Session(program, data, backend=...)`` parses the program, binds its inputs (arrays,
scipy.sparse, data frames, tables, files), imports the relational ones into the
backend and lowers the program to its DAG. Then:

* `stats()`: the statistics of the inputs (exact for arrays, by SQL for imported data);
* `plans(strategy, top)`: costed plans from the strategy registry;
* `compile(plan)`: the SQL steps of a plan in the session's dialect;
* `run(plan)`: compile, execute, fetch the outputs;
* `explain(top, analyze)`: ranked plans with schemas and costs (and measured runs).

`einsum`, `run`, `explain`, `compile`, `calibrate` and the benchmarks are thin callers.
A Session is a context manager: closing it drops what it imported and closes a backend
it opened itself.
"""
from __future__ import annotations

import time
import uuid
from functools import cached_property
from math import prod
from pathlib import Path
from typing import Callable

import numpy as np

from .backends import open_backend
from .backends.base import Backend
from .cost import CostParams, load_params
from .errors import PlanError, ProgramError
from .executor import Execution, execute
from .explanation import explanation
from .inputs import ArrayInput, SourceInput, bind_inputs
from .optimizer.context import OptimizerContext
from .optimizer.strategies import PlanSpec, plans
from .plan import Plan
from .program.lower import lower
from .program.model import Program
from .program.parser import load_program
from .program.validate import infer_bounds
from .sql.compiler import CompiledPlan, compile_plan
from .sql.dialect import Dialect
from .sql.pretty import pretty
from .sql.steps import TableRelation
from .stats.propagate import propagate
from .stats.tensor_stats import TensorStats, exact_stats
from .values import MAX_EXACT, plan_values

ASSUMED_PER_INDEX = 16     # without a database: non-zeros per index of a table's longest axis


class Session:
    """A program bound to its inputs on one backend (or, to compile jobs, on none)."""

    def __init__(self, program: Program | str | Path, data: dict[str, object] | None = None, *,
                 backend: object = "duckdb", dialect: Dialect | None = None,
                 params: CostParams | None = None, memory_cap: float | None = None,
                 label_names: dict[str, str] | None = None, inputs_in_tables: bool = False,
                 prefix: str | None = None, output_dtypes: dict[str, np.dtype] | None = None,
                 **backend_options):
        start = time.perf_counter()
        self.program = load_program(program)
        base_dir = Path(self.program.source).parent if self.program.source else None
        self.values = plan_values(self.program, bind_inputs(self.program, data, base_dir),
                                  output_dtypes)
        self.inputs = self.values.inputs
        self.backend: Backend | None = None
        self._owns_backend = False
        if backend is not None:
            self.backend, self._owns_backend = open_backend(backend, **backend_options)
        if dialect is None and self.backend is None:
            raise PlanError("a session without a backend needs a dialect to compile for")
        self.dialect = dialect or self.backend.dialect
        self.params, self.memory_cap = params, memory_cap
        self.label_names = dict(label_names or {})
        self.inputs_in_tables = inputs_in_tables
        self.prefix = prefix or f"se_{uuid.uuid4().hex[:10]}"   # of every table it makes
        self.stored: dict[str, TableRelation] = {}     # relational inputs imported
        self._input_stats: dict[str, TensorStats] = {}
        self._context: OptimizerContext | None = None
        self._compiled = 0
        try:
            shapes = self._import_inputs()
            self.dag = lower(self.values.program, infer_bounds(self.values.program, shapes))
        except BaseException:
            self.close()
            raise
        self.timings = {"statistics_seconds": time.perf_counter() - start,
                        "optimize_seconds": 0.0}

    # -- inputs and statistics -------------------------------------------------
    def _import_inputs(self) -> dict[str, tuple[int, ...]]:
        """Shapes of the inputs; relational ones are imported (or assumed without a backend)."""
        shapes = {}
        for n, (name, inp) in enumerate(self.inputs.items()):
            if isinstance(inp, ArrayInput):
                shapes[name] = inp.shape
            elif self.backend is not None:
                rel, stats = self.backend.import_source(inp, f"{self.prefix}_in{n}",
                                                        temporary=self.inputs_in_tables)
                self.stored[name], self._input_stats[name] = rel, stats
                shapes[name] = rel.shape
            else:
                shapes[name] = _declared_shape(inp)
                self._input_stats[name] = _assumed_stats(shapes[name])
        return shapes

    def stats(self) -> dict[str, TensorStats]:
        """Statistics of every input: exact for arrays, by SQL for imported data, assumed
        (uniform, ASSUMED_PER_INDEX per index) for tables when there is no database."""
        start = time.perf_counter()
        for name, inp in self.inputs.items():
            if name not in self._input_stats:
                self._input_stats[name] = exact_stats(inp.value)
        self.timings["statistics_seconds"] += time.perf_counter() - start
        return {name: self._input_stats[name] for name in self.dag.inputs}

    @cached_property
    def exact_integers(self) -> bool:
        """Whether integers must be computed as BIGINT: the inputs and outputs are integers
        and some value may exceed 2**53 (where doubles lose integers). BIGINT arithmetic in
        the engines fails where a value overflows int64 (NumPy's wraps around)."""
        return self.values.integral and max(
            s.max_abs for s in propagate(self.dag, self.stats()).values()) >= MAX_EXACT

    # -- plans -------------------------------------------------------------------
    def optimizer(self) -> OptimizerContext:
        """Propagated statistics and the cost model (built once)."""
        if self._context is None:
            params = self.params or load_params(self.dialect.engine)
            if self.params is None and self.backend is not None:
                params = self.backend.cost_params(params)     # e.g. the cluster's parallelism
            self._context = OptimizerContext.build(
                self.dag, self.stats(), params,
                memory_cap=self.memory_cap, max_payload_values=self.dialect.max_payload_values,
                scalars_only=self.exact_integers,
                sparse_payloads=self.dialect.sparse_payloads,
                stored={name: rel.tiling for name, rel in self.table_inputs().items()},
                label_names=self.label_names)
        return self._context

    def plans(self, strategy: str | PlanSpec = "optimal", top: int = 1) -> list[Plan]:
        """Up to `top` costed plans of a registered strategy, best first (the time it took,
        with building the cost model the first time, is `timings["optimize_seconds"]`)."""
        self.stats()              # first, so that its time counts as statistics
        start = time.perf_counter()
        found = plans(self.optimizer(), strategy, top)
        self.timings["optimize_seconds"] = time.perf_counter() - start
        return found

    def plan(self, plan: str | PlanSpec | Plan = "optimal") -> Plan:
        return plan if isinstance(plan, Plan) else self.plans(plan, 1)[0]

    # -- SQL and execution --------------------------------------------------------
    def table_inputs(self) -> dict[str, TableRelation]:
        """Inputs read from tables: the imported ones, or every input for a compiled job."""
        if not self.inputs_in_tables:
            return self.stored
        return {name: TableRelation(f"{self.prefix}_in{n}", name, self.dag.shapes[name],
                                    (1,) * len(labels), labels)
                for n, (name, labels) in enumerate(self.dag.inputs.items())}

    def compile(self, plan: str | PlanSpec | Plan = "optimal", *, temporary: bool = False,
                relational_outputs: bool = False) -> CompiledPlan:
        chosen = self.plan(plan)
        exact = self.exact_integers
        if exact and not all(self.optimizer().model.fits(v, chosen.choices[v.name])
                             for v in self.dag.vertices):
            raise PlanError(f"plan {chosen.name!r} keeps integer values in arrays, which hold "
                            "doubles, and this program's integers may exceed 2**53 (where "
                            "doubles lose them): use a plan that promotes every label "
                            "(optimal, relational)")
        ctx = self.optimizer()
        self._compiled += 1                 # tables of every compilation named apart
        return compile_plan(self.dag, chosen, self.dialect.variant(integers=exact),
                            prefix=f"{self.prefix}_{self._compiled}",
                            stored=self.table_inputs(), temporary=temporary,
                            relational_outputs=relational_outputs,
                            nonfinite=frozenset(t for t, s in ctx.stats.items() if not s.finite))

    def run(self, plan: str | PlanSpec | Plan = "optimal", *,
            progress: Callable[[str], None] | None = None, count_tuples: bool = False) -> Execution:
        """Run a plan; the outputs have NumPy's dtypes (complex parts joined)."""
        if self.backend is None:
            raise PlanError("this session has no backend to run on")
        chosen = self.plan(plan)
        result = execute(self.compile(chosen), self.values.arrays(self.exact_integers),
                         self.backend, count_tuples=count_tuples, progress=progress)
        result.outputs = self.values.finish(result.outputs)
        result.plan = chosen
        return result

    def explain(self, top: int = 3, analyze: bool = False, sql: bool = False) -> dict:
        """The `top` best plans with UCLC, schemas and estimated costs; with `analyze`, each
        is also run and its measured tuples and seconds reported; with `sql`, its SQL."""
        ranked = self.plans("rank:1", top)
        runs = [self.run(p, count_tuples=True) for p in ranked] if analyze else None
        statements = [[pretty(s.sql, self.dialect) for s in self.compile(p).steps if s.sql]
                      for p in ranked] if sql else None
        return explanation(self.dag, ranked, backend=self.dialect.engine, timings=self.timings,
                           constants=self.optimizer().model.p.to_dict(),
                           input_stats=self.stats(), runs=runs, sql=statements)

    def close(self) -> None:
        if self.backend is not None:
            for rel in self.stored.values():
                self.backend.drop(rel)
            self.stored = {}
            if self._owns_backend:
                self.backend.close()
                self._owns_backend = False

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _declared_shape(inp: SourceInput) -> tuple[int, ...]:
    decl = inp.decl
    for label, bound in zip(decl.labels, decl.bounds):
        if bound is None:
            raise ProgramError(f"input {decl.name}: label {label} has no declared bound; without "
                               f"a database the shapes come from the declarations: write "
                               f"{label}:N in `input {decl.name}[...]`")
    return tuple(int(b) for b in decl.bounds)


def _assumed_stats(shape: tuple[int, ...]) -> TensorStats:
    nnz = float(min(prod(shape), ASSUMED_PER_INDEX * max(shape, default=1)))
    return TensorStats(shape, nnz, tuple(float(min(n, nnz)) for n in shape))
