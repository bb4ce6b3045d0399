"""The one pipeline from program to result: program + data + backend, walked stage by stage.

``Session(program, data, backend=...)`` parses the program, binds its inputs (arrays,
scipy.sparse, data frames, tables, files), imports the relational ones into the
backend and lowers the program to its DAG. Then:

* `stats()`: the statistics of the inputs (exact for arrays, by SQL for imported data);
* `plans(strategy, top)`: costed plans from the strategy registry;
* `compile(plan)`: the SQL steps of a plan in the session's dialect;
* `run(plan)`: compile, execute, fetch the outputs;
* `explain(top, analyze)`: ranked plans with schemas and costs (and measured runs);
* `prepare(plan)`: a plan compiled once, to run on new data of the same shapes and dtypes.

With `reuse`, a session whose inputs are all in memory takes the lowered program, cost
model, plans and compiled SQL of an earlier session on the same program, shapes and
dtypes whose inputs had close statistics (`reuse.PLANS`), and plans afresh otherwise.

`einsum`, `run`, `explain`, `compile`, `calibrate` and the benchmarks are thin callers.
A Session is a context manager: closing it drops what it imported and closes a backend
it opened itself.
"""
from __future__ import annotations

import time
import uuid
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from functools import cached_property
from math import prod
from pathlib import Path
from typing import Callable, ContextManager, Iterator

import numpy as np

from .backends import open_backend
from .backends.base import Backend
from .cost import CostParams, arrays_hold, load_params
from .errors import DataError, PlanError, ProgramError
from .executor import Execution, execute
from .explanation import explanation
from .inputs import ArrayInput, SourceInput, bind_inputs
from .memory import available_memory, format_size, gc_paused
from .optimizer.context import TILES_ABOVE, OptimizerContext, default_memory_cap
from .optimizer.order import SparsePaths
from .optimizer.strategies import PlanSpec, plans
from .plan import Plan
from .program.dag import Dag, Operand
from .program.fuse import fuse_products
from .program.lower import ContractionPath, lower
from .program.model import Program
from .program.parser import load_program
from .program.validate import infer_bounds
from .reuse import PLANS, STATS, Planned, Summary, summary
from .sql.compiler import Combined, CompiledPlan, compile_plan
from .sql.dialect import Dialect
from .sql.pretty import pretty
from .sql.steps import TableRelation
from .stats.propagate import propagate
from .stats.tensor_stats import TensorStats
from .tiling import Tiling
from .values import MAX_EXACT, input_dtype, plan_values

PATHS = ("cost", "opt_einsum")           # contraction orders of n-ary products (see lower)
FORMATS = ("dense", "sparse", "auto")     # how run() returns outputs
AUTO_SPARSE = 0.1          # format "auto": outputs estimated under this fraction full are sparse
LONG_PROGRAM = 2000        # statements from which the stages report their progress
ASSUMED_PER_INDEX = 16     # without a database: non-zeros per index of a table's longest axis


@dataclass(frozen=True)
class SessionOptions:
    """What one caller each sets, apart from the keywords every caller may use."""
    label_names: dict[str, str] = field(default_factory=dict)   # einsum: its labels' names
    output_dtypes: dict[str, np.dtype] | None = None            # einsum: its result's dtype
    # inputs whose tables hold their relations already, tiled as given, read in place (a
    # relation tiled into one tuple holds it)
    in_place: dict[str, Tiling] = field(default_factory=dict)
    job: bool = False           # compile_job: every input is read from the job's tables
    scoped: bool = True         # False: the caller runs the transactions (training)


class Session:
    """A program bound to its inputs on one backend (or, to compile jobs, on none).

    Products of three or more tensors are contracted along the path the cost model
    prices lowest with the inputs' statistics (`paths="cost"`, `optimizer.order`; a
    product read once by another is fused into it first, `program.fuse`) or along
    opt_einsum's dense path with every statement as written (`paths="opt_einsum"`).
    With `reuse`, plans come from earlier sessions where they fit (module docstring).
    Tiles are searched when the best plan without them is estimated above `tiles_above`
    seconds (0: always; `optimizer.context.TILES_ABOVE`).
    What only einsum, training or compile_job sets is in `options` (`SessionOptions`)."""

    @gc_paused()
    def __init__(self, program: Program | str | Path, data: dict[str, object] | None = None, *,
                 backend: object = "duckdb", dialect: Dialect | None = None,
                 params: CostParams | None = None, memory_cap: float | None = None,
                 tiles_above: float = TILES_ABOVE, prefix: str | None = None,
                 progress: Callable[[str], None] | None = None,
                 paths: str = "cost", reuse: bool = False,
                 options: SessionOptions | None = None, **backend_options):
        start = time.perf_counter()
        self.progress = progress       # stage lines for long programs (run() adds step lines)
        self.program = load_program(program)
        base_dir = Path(self.program.source).parent if self.program.source else None
        self.bound = bind_inputs(self.program, data, base_dir)     # as given (complex joined)
        self.options = options = options or SessionOptions()
        self.values = plan_values(self.program, self.bound, options.output_dtypes)
        self.inputs = self.values.inputs
        self.backend: Backend | None = None
        self._owns_backend = False
        self._scope: ContextManager | None = None
        if backend is not None:
            self.backend, self._owns_backend = open_backend(backend, shared=True,
                                                            **backend_options)
            if options.scoped:
                self._scope = self.backend.scope()     # every table the session makes lives in it
                self._scope.__enter__()
        if dialect is None and self.backend is None:
            raise PlanError("a session without a backend needs a dialect to compile for")
        self.dialect = dialect or self.backend.dialect
        self.params, self.memory_cap, self.tiles_above = params, memory_cap, tiles_above
        self.prefix = prefix or f"se_{uuid.uuid4().hex[:10]}"   # of every table it makes
        # the inputs read from tables: those it imported, then those read in place (for a
        # job: every input, from the job's tables)
        self.tables: dict[str, TableRelation] = {}
        self._imported: list[TableRelation] = []      # dropped when it closes
        self._input_stats: dict[str, TensorStats] = {}
        self._summaries: dict[str, Summary] = {}     # of the inputs, where reuse asked
        self._context: OptimizerContext | None = None
        self._paths: SparsePaths | None = None
        self._compiled = 0
        self.fused: list[tuple[str, str]] = []   # (statement, statement it was fused into)
        self.timings = {"statistics_seconds": 0.0, "optimize_seconds": 0.0,
                        "order_seconds": 0.0}
        self._planned: Planned | None = None       # what is reused from earlier sessions
        try:
            if paths not in PATHS:
                raise PlanError(f"paths {paths!r}: use one of {', '.join(PATHS)}")
            if isinstance(tiles_above, bool) or not isinstance(tiles_above, (int, float)) \
                    or not tiles_above >= 0:
                raise PlanError(f"tiles_above is a number of seconds, at least 0, not "
                                f"{tiles_above!r}")
            shapes = self._import_inputs()
            reusable = reuse and self.backend is not None and all(
                isinstance(inp, ArrayInput) for inp in self.inputs.values())
            if reusable:
                key = self._reuse_key(paths)
                decls = self.values.program.inputs
                summaries = self._summaries = {
                    name: summary(inp.value, decls[name].default if name in decls else 0)
                    for name, inp in self.inputs.items()}
                self._planned = PLANS.find(key, summaries)
            if self._planned is not None:
                self.dag, self.fused = self._planned.dag, self._planned.fused
            else:
                self._lower(paths, shapes)
                if reusable:
                    self._planned = Planned(self.dag, self.fused, summaries,
                                            self.values.integral)
                    PLANS.put(key, self._planned)
            if options.job:
                self.tables = self._job_tables()
        except BaseException as exc:
            self.close(exc)
            raise
        # everything so far but ordering (the statistics read while fusing products included)
        self.timings["statistics_seconds"] = (time.perf_counter() - start
                                              - self.timings["order_seconds"])

    def _lower(self, paths: str, shapes: dict[str, tuple[int, ...]]) -> None:
        with self._stage(f"lowering {len(self.program.statements)} statements"):
            program = self.values.program
            if paths == "cost":         # chains of products ordered as one
                program, self.fused = fuse_products(
                    program, lambda name: self.stats()[name].finite)
            self.dag = lower(program, infer_bounds(program, shapes),
                             self._choose_path if paths == "cost" else None)

    def _reuse_key(self, paths: str) -> tuple:
        """Everything the plans depend on but the inputs' values."""
        return (repr(self.program), paths, type(self.dialect).__qualname__, self.dialect.name,
                tuple((name, inp.shape, input_dtype(inp)) for name, inp in self.inputs.items()),
                tuple(self.values.dtypes.items()), self._params(),
                tuple(sorted(self._model_options().items())),
                tuple(sorted(self.options.label_names.items())),
                tuple(sorted(self.options.in_place.items())), self.options.scoped)

    def _choose_path(self, dag: Dag, operands: list[Operand], target: tuple[str, ...],
                     const: float, op: str = "mul", agg: str = "sum") -> ContractionPath:
        """The contraction path of a product of three or more tensors, chosen by the cost
        model with the inputs' statistics (its time is `timings["order_seconds"]`)."""
        if self._paths is None:
            stored = {name: rel.tiling for name, rel in self.tables.items()
                      if name not in self.options.in_place}
            if self.options.job:
                stored = {name: (1,) * len(labels) for name, labels in dag.inputs.items()}
            self._paths = SparsePaths(self.stats(), self._params(), self._model_options(),
                                      stored)
        start = time.perf_counter()
        path = self._paths(dag, operands, target, const, op, agg)
        self.timings["order_seconds"] += time.perf_counter() - start
        return path

    # -- inputs and statistics -------------------------------------------------
    def _import_inputs(self) -> dict[str, tuple[int, ...]]:
        """Shapes of the inputs; relational ones are imported (or assumed without a backend)."""
        shapes, imported, in_place = {}, {}, {}
        for n, (name, inp) in enumerate(self.inputs.items()):
            if isinstance(inp, ArrayInput):
                shapes[name] = inp.shape
            elif name in self.options.in_place:
                shapes[name] = _declared_shape(inp)
                rel = TableRelation(inp.location, name, shapes[name],
                                    self.options.in_place[name], inp.decl.labels)
                self._input_stats[name] = self._table_stats(rel)
                in_place[name] = rel
            elif self.backend is not None:
                rel, stats = self.backend.import_source(
                    inp, f"{self.prefix}_in{n}",
                    temporary=self.options.job or not self.options.scoped)
                imported[name], self._input_stats[name] = rel, stats
                self._imported.append(rel)
                shapes[name] = rel.shape
            else:
                shapes[name] = _declared_shape(inp)
                self._input_stats[name] = _assumed_stats(shapes[name])
        self.tables = {**imported, **in_place}
        return shapes

    def _table_stats(self, rel: TableRelation) -> TensorStats:
        """Statistics of a table read in place: by SQL for an all-promoted relation in a
        database; tiled ones hold dense payloads; without a database, assumed."""
        if self.backend is None:
            return _assumed_stats(rel.shape)
        if any(t > 1 for t in rel.tiling):
            return TensorStats(rel.shape, float(prod(rel.shape)), tuple(map(float, rel.shape)))
        return self.backend.table_stats(rel)

    def stats(self) -> dict[str, TensorStats]:
        """Statistics of every input: exact for arrays (kept per array object while its
        summary is unchanged, `reuse.STATS`), by SQL for imported data, assumed (uniform,
        ASSUMED_PER_INDEX per index) for tables when there is no database."""
        start = time.perf_counter()
        defaults = {n: d.default for n, d in self.values.program.inputs.items()}
        counted = {(id(inp.value), defaults.get(name, 0.0)): self._input_stats[name]
                   for name, inp in self.inputs.items()
                   if name in self._input_stats and isinstance(inp, ArrayInput)}
        for name, inp in self.inputs.items():
            if name not in self._input_stats:       # one data object given twice: counted once
                key = (id(inp.value), defaults.get(name, 0.0))
                if key not in counted:
                    counted[key] = STATS.get(inp.value, key[1], self._summaries.get(name))
                self._input_stats[name] = counted[key]
        self.timings["statistics_seconds"] += time.perf_counter() - start
        return {name: self._input_stats[name] for name in self.values.program.inputs}

    @cached_property
    def exact_integers(self) -> bool:
        """Whether integers must be computed as BIGINT: the inputs and outputs are integers
        and some value may exceed 2**53 (where doubles lose integers). BIGINT arithmetic in
        the engines fails where a value overflows int64 (NumPy's wraps around)."""
        planned = self._planned
        if planned is not None and planned.exact_integers is not None:
            return planned.exact_integers
        exact = self.values.integral and max(
            s.max_abs for s in propagate(self.dag, self.stats()).values()) >= MAX_EXACT
        if planned is not None:
            planned.exact_integers = exact
        return exact

    # -- plans -------------------------------------------------------------------
    @gc_paused()
    def optimizer(self) -> OptimizerContext:
        """Propagated statistics and the cost model (built once, or reused)."""
        if self._context is None and self._planned is not None:
            self._context = self._planned.context
        if self._context is None:
            with self._stage(f"statistics and costs of {len(self.dag.vertices)} vertices"):
                self._context = OptimizerContext.build(
                    self.dag, self.stats(), self._params(), **self._model_options(),
                    scalars_only=self.exact_integers,
                    stored={name: rel.tiling for name, rel in self.tables.items()},
                    label_names=self.options.label_names)
            if self._planned is not None:
                self._planned.context = self._context
        return self._context

    def _params(self) -> CostParams:
        """The given constants, else the calibrated ones as the backend sees them (e.g. with
        the cluster's parallelism)."""
        if self.params is not None:
            return self.params
        params = load_params(self.dialect.name)
        return self.backend.cost_params(params) if self.backend is not None else params

    def _model_options(self) -> dict:
        """The cost model's limits: memory cap (and where it comes from), the engine's
        capabilities, the bound on unspillable states; the cost above which tiles are
        searched."""
        cap, source = self._memory_cap()
        return {"memory_cap": cap, "cap_source": source,
                "caps": self.dialect.capabilities,
                "state_cap": self._state_cap(), "tiles_above": self.tiles_above}

    def _memory_cap(self) -> tuple[float | None, str | None]:
        """The optimizer's cap per tuple and kernel call: the one given, or the default
        lowered to the engine's share of its memory limit (so that plans fit the engine)."""
        if self.memory_cap:
            return self.memory_cap, None
        engine = self._engine_memory
        if engine is None or engine[0] >= default_memory_cap():
            return None, None
        return engine

    def _state_cap(self) -> float | None:
        """The bound on all groups' unspillable aggregate states together: the memory cap
        given, else the engine's share of its memory limit (the cap per tuple is a
        fraction of that because many tuples are in flight; the states are the whole)."""
        if self.memory_cap:
            return self.memory_cap
        return self._engine_memory[0] if self._engine_memory else None

    @cached_property
    def _engine_memory(self) -> tuple[float, str] | None:
        """The engine's share of its memory limit (bytes, where it comes from), asked once."""
        limit = self.backend.memory_limit() if self.backend is not None else None
        if limit is None:
            return None
        share = self.backend.memory_share
        fraction = f"1/{round(1 / share)}" if share < 1 else "all"
        return limit[0] * share, f"{fraction} of {limit[1]}"

    @gc_paused()
    def plans(self, strategy: str | PlanSpec = "optimal", top: int = 1) -> list[Plan]:
        """Up to `top` costed plans of a registered strategy, best first (the time it took,
        with building the cost model the first time, is `timings["optimize_seconds"]`). A
        plan reused from an earlier session takes no time."""
        planned = self._planned
        name = str(strategy) if top == 1 else None
        if planned is not None and name in planned.plans:
            return [planned.plans[name]]
        if planned is None or planned.context is None:
            self.stats()          # first, so that its time counts as statistics
        start = time.perf_counter()
        context = self.optimizer()
        with self._stage(f"planning ({strategy})"), planned.lock if planned else nullcontext():
            found = plans(context, strategy, top)
        if planned is not None and name is not None:
            planned.plans[name] = found[0]
        self.timings["optimize_seconds"] = time.perf_counter() - start
        return found

    def plan(self, plan: str | PlanSpec | Plan = "optimal") -> Plan:
        return plan if isinstance(plan, Plan) else self.plans(plan, 1)[0]

    # -- SQL and execution --------------------------------------------------------
    def _job_tables(self) -> dict[str, TableRelation]:
        """Every input of a compiled job, in the job's tables (all labels promoted) or read
        in place."""
        in_place = {name: rel for name, rel in self.tables.items() if name in self.options.in_place}
        return {name: in_place.get(name) or TableRelation(
                    f"{self.prefix}_in{n}", name, self.dag.shapes[name], (1,) * len(labels),
                    labels)
                for n, (name, labels) in enumerate(self.dag.inputs.items())}

    @gc_paused()
    def compile(self, plan: str | PlanSpec | Plan = "optimal", *, temporary: bool = False,
                relational_outputs: bool = False,
                combined: dict[str, Combined] | None = None,
                combined_shared: bool = False, resident: bool = False) -> CompiledPlan:
        chosen = self.plan(plan)
        exact = self.exact_integers
        if exact and not all(self.optimizer().model.fits(v, chosen.choices[v.name])
                             for v in self.dag.vertices):
            raise PlanError(f"plan {chosen.name!r} keeps integer values in arrays, which hold "
                            "doubles, and this program's integers may exceed 2**53 (where "
                            "doubles lose them): use a plan that promotes every label "
                            "(optimal, relational)")
        arrays = [v for v in self.dag.vertices if not arrays_hold(v)
                  and any(b > 1 for b in chosen.choices[v.name].sizes.values())]
        if arrays:
            raise PlanError(f"plan {chosen.name!r} keeps values of {arrays[0].name} in arrays, "
                            f"whose {arrays[0].agg} over absent tuples would miss their default "
                            f"{arrays[0].default}: use a plan that promotes every label "
                            "(optimal, relational)")
        ctx = self.optimizer()
        self._compiled += 1                 # tables of every compilation named apart
        with self._stage(f"compiling {len(self.dag.vertices)} vertices"):
            return compile_plan(self.dag, chosen, self.dialect.variant(integers=exact),
                                prefix=f"{self.prefix}_{self._compiled}",
                                stored=self.tables, temporary=temporary,
                                relational_outputs=relational_outputs, combined=combined,
                                combined_shared=combined_shared, resident=resident,
                                nonfinite=frozenset(t for t, s in ctx.stats.items()
                                                    if not s.finite),
                                whole=frozenset(rel.table for name, rel in self.tables.items()
                                                if name in self.options.in_place
                                                and not rel.keyed))

    @contextmanager
    def _stage(self, what: str) -> Iterator[None]:
        """Say when a stage of a long program starts and how long it took."""
        start = time.perf_counter()
        report = self.progress if len(self.program.statements) >= LONG_PROGRAM else None
        if report:
            report(f"{what} ...")
        yield
        if report:
            report(f"{what}: {time.perf_counter() - start:.1f} s")

    def run(self, plan: str | PlanSpec | Plan = "optimal", *,
            progress: Callable[[str], None] | None = None, count_tuples: bool = False,
            format: str = "dense") -> Execution:
        """Run a plan; the outputs have NumPy's dtypes (complex parts joined). `format`:
        "dense" (NumPy arrays), "sparse" (scipy.sparse arrays: CSR for matrices, COO for
        other ranks; scalars stay scalars) or "auto" (sparse for the outputs estimated
        under AUTO_SPARSE full)."""
        progress = progress or self.progress
        if self.backend is None:
            raise PlanError("this session has no backend to run on")
        sparse = self.sparse_parts(format)
        self.check_output_memory(sparse)
        chosen = self.plan(plan)
        with self._compiled_once(chosen) as compiled:
            result = execute(compiled, self.values.arrays(self.exact_integers),
                             self.backend, count_tuples=count_tuples, progress=progress,
                             sparse=sparse)
        result.outputs = self.values.finish(result.outputs, self.dag.defaults())
        result.plan = chosen
        return result

    @contextmanager
    def _compiled_once(self, plan: Plan) -> Iterator[CompiledPlan]:
        """The compiled plan: for a plan reused from earlier sessions, their compiled SQL
        while no other run holds it (its table names are the same), else compiled anew."""
        planned = self._planned
        if (planned is None or not any(p is plan for p in planned.plans.values())
                or not planned.running.acquire(blocking=False)):
            yield self.compile(plan)
            return
        try:
            if id(plan) not in planned.compiled:
                planned.compiled[id(plan)] = self.compile(plan)
            yield planned.compiled[id(plan)]
        finally:
            planned.running.release()

    def prepare(self, plan: str | PlanSpec | Plan = "optimal", format: str = "dense"
                ) -> "Prepared":
        """`plan` compiled once for this session's inputs; calling the result with new data
        (name -> array, the same shapes and dtypes) runs it without statistics, planning or
        compiling (see `prepared.Prepared`)."""
        from .prepared import Prepared
        return Prepared(self, plan, format)

    def sparse_parts(self, format: str = "dense") -> frozenset[str]:
        """The tensors the engines compute (complex parts apart) that come back as
        scipy.sparse arrays under `format`."""
        return frozenset(part for name in self.sparse_outputs(format)
                         for part in self.values.parts[name] if part)

    def sparse_outputs(self, format: str = "dense") -> frozenset[str]:
        """The outputs that come back as scipy.sparse arrays under `format`."""
        if format not in FORMATS:
            raise PlanError(f"format {format!r}: use one of {', '.join(FORMATS)}")
        shapes = {name: self.dag.shapes[self.values.parts[name][0]]
                  for name in self.program.outputs}
        outputs = [name for name, shape in shapes.items() if shape]
        if format == "auto":
            stats = self.optimizer().stats
            return frozenset(name for name in outputs if max(
                stats[part].nnz for part in self.values.parts[name] if part)
                < AUTO_SPARSE * prod(shapes[name]))
        return frozenset(outputs if format == "sparse" else ())

    def check_output_memory(self, sparse: frozenset[str] = frozenset()) -> None:
        """Outputs come back as NumPy arrays or scipy.sparse arrays: refuse, before any
        work, when the dense ones, or the row pointers of the sparse matrices (CSR: one
        int64 per row), would not fit in the memory available now (the non-zeros of the
        sparse ones are not counted: their number is an estimate)."""
        need = {}
        for name in self.dag.outputs:
            shape = self.dag.shapes[name]
            if name not in sparse:
                need[name] = 8 * prod(shape)
            elif len(shape) == 2:
                need[name] = 8 * (shape[0] + 1)
        available = available_memory()
        if sum(need.values()) > available:
            name = max(need, key=need.get)
            what = ("as a dense float64 array" if name not in sparse
                    else "for the row pointer of a CSR matrix")
            raise DataError(f"output {name} has shape {self.dag.shapes[name]}: "
                            f"{format_size(need[name])} {what}"
                            + (f" ({format_size(sum(need.values()))} for all outputs)"
                               if len(need) > 1 else "")
                            + f", more than the {format_size(available)} of memory available; "
                            "check the declared bounds and the keys of the inputs"
                            + (", or ask for format='sparse'" if name not in sparse else ""))

    def explain(self, top: int = 3, analyze: bool = False, sql: bool = False) -> dict:
        """The `top` best plans with UCLC, schemas and estimated costs; with `analyze`, each
        is also run and its measured tuples and seconds reported; with `sql`, its SQL."""
        ranked = self.plans("rank:1", top)
        runs = [self.run(p, count_tuples=True) for p in ranked] if analyze else None
        compiled = [self.compile(p) for p in ranked]
        statements = [[pretty(s.sql, self.dialect) for s in c.steps if s.sql]
                      for c in compiled] if sql else None
        # computed inside later statements: streamed into them, or chained into a kernel
        pipelined = []
        for c in compiled:
            into: dict[str, list[str]] = {}
            for step in c.steps:
                for name in [p.vertex for p in step.pipelined
                             if p.vertex and p.vertex != step.vertex] + [
                        n for p in (*step.pipelined, step) for n in p.chained]:
                    into.setdefault(name, []).append(step.vertex or step.label)
            pipelined.append({name: " and ".join(readers) for name, readers in into.items()})
        kernels = self.dialect.kernels
        if self.backend is not None and self.backend.kernel_detail:
            kernels += f" ({self.backend.kernel_detail})"
        if self.backend is not None and self.backend.fallback:
            kernels += f" (fallback: {self.backend.fallback})"
        ctx = self.optimizer()
        return explanation(self.dag, ranked, backend=self.dialect.engine, kernels=kernels,
                           timings=self.timings, fused=self.fused,
                           constants=ctx.model.p.to_dict(),
                           input_stats=self.stats(), runs=runs, sql=statements,
                           pipelined=pipelined, factored=[c.factored for c in compiled],
                           memory_cap=(ctx.model.cap, ctx.cap_source),
                           tiles={"searched": ctx.space.tiled, "untiled_cost": ctx.untiled_cost,
                                  "above": ctx.tiles_above})

    def close(self, error: BaseException | None = None) -> None:
        if self.backend is None:
            return
        try:
            for rel in self._imported:
                self.backend.drop(rel)
            self._imported = []
        finally:
            scope, self._scope = self._scope, None
            try:
                if scope is not None:
                    scope.__exit__(type(error) if error else None, error,
                                   error.__traceback__ if error else None)
            finally:
                if self._owns_backend:
                    self.backend.close()
                    self._owns_backend = False

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, kind, error, traceback) -> None:
        self.close(error)


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
