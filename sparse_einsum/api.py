"""The Python entry points: run a program, or evaluate a NumPy einsum string, in SQL."""
from __future__ import annotations

import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import scipy.sparse as sp

from .errors import DataError, PlanError, SparseEinsumError
from .executor import Execution, execute
from .plan import Plan
from .program.dag import Dag
from .program.lower import lower
from .program.model import Binary, InputDecl, Program, Ref, Statement
from .program.parser import parse_program
from .program.validate import infer_bounds
from .optimizer.forced import forced_plan
from .backends.tables import ImportedTable, import_table
from .sql.relations import RelInfo
from .stats.tensor_stats import TensorStats, exact_stats

DEFAULT_PLAN = "optimal"


def load_program(program: Program | str | Path) -> Program:
    """A Program from a Program, a path to a .se file, or program text."""
    if isinstance(program, Program):
        return program
    text, source = str(program), None
    if isinstance(program, Path) or (("\n" not in text) and text.endswith(".se")):
        path = Path(program)
        try:
            text, source = path.read_text(), str(path)
        except OSError as exc:
            raise SparseEinsumError(f"{path}: cannot read program: {exc.strerror}") from None
    return parse_program(text, source=source)     # parses and validates


def input_shapes(program: Program, data: dict[str, object],
                 table_shapes: dict[str, tuple[int, ...]] | None = None
                 ) -> dict[str, tuple[int, ...]]:
    """Shapes of the bound inputs, checked against the declarations."""
    shapes = dict(table_shapes or {})
    for name in program.inputs:
        if name in shapes:
            continue
        if name not in data:
            raise DataError(f"no data for input tensor {name}")
        value = data[name]
        shapes[name] = tuple(value.shape) if hasattr(value, "shape") else np.shape(value)
    infer_bounds(program, shapes)
    return shapes


def build_dag(program: Program, data: dict[str, object],
              table_shapes: dict[str, tuple[int, ...]] | None = None) -> Dag:
    return lower(program, input_shapes(program, data, table_shapes))


@dataclass
class Prepared:
    """A program bound to its data on one backend: the DAG, input statistics, and the
    relations imported from database tables (dropped by `release`)."""
    program: Program
    dag: Dag
    input_stats: dict[str, TensorStats]
    stored: dict[str, RelInfo]

    def release(self, db) -> None:
        for rel in self.stored.values():
            db.drop(rel)


def prepare(program: Program | str | Path, data: dict[str, object], db) -> Prepared:
    """Parse, import table inputs, build the DAG and compute input statistics."""
    program = load_program(program)
    prefix = f"se_{uuid.uuid4().hex[:10]}"
    imported: dict[str, ImportedTable] = {}
    try:
        for n, (name, decl) in enumerate(program.inputs.items()):
            if decl.source is not None and name not in data:
                imported[name] = import_table(db, decl, f"{prefix}_in{n}")
        dag = build_dag(program, data, {k: t.rel.shape for k, t in imported.items()})
    except BaseException:
        for t in imported.values():
            db.drop(t.rel)
        raise
    stats = {name: exact_stats(data[name]) for name in dag.inputs if name not in imported}
    stats.update({name: t.stats for name, t in imported.items()})
    return Prepared(program, dag, stats, {name: t.rel for name, t in imported.items()})


def choose_plan(dag: Dag, plan: str | Plan, data: dict[str, object],
                statement_labels: dict[str, str] | None = None, backend: str = "duckdb",
                **options) -> Plan:
    """Resolve a plan spec: a Plan, a forced name, or the optimizer's choice."""
    if isinstance(plan, Plan):
        return plan
    forced = forced_plan(dag, plan, statement_labels)
    if forced is not None:
        return forced
    from .optimizer.choose import optimizer_plan
    return optimizer_plan(dag, plan, data, backend=backend, **options)


def make_backend(backend: object = "duckdb", **options):
    """A backend object from a name (duckdb, postgres) or an existing backend/connection."""
    if backend == "duckdb":
        from .backends.duckdb import DuckDBBackend
        return DuckDBBackend(**{k: v for k, v in options.items() if v is not None})
    if backend == "postgres":
        from .backends.postgres import PostgresBackend
        return PostgresBackend(**{k: v for k, v in options.items() if v is not None})
    if hasattr(backend, "dialect"):
        return backend
    try:
        import duckdb
        if isinstance(backend, duckdb.DuckDBPyConnection):
            from .backends.duckdb import DuckDBBackend
            return DuckDBBackend(backend)
    except ImportError:  # pragma: no cover
        pass
    raise SparseEinsumError(f"unknown backend {backend!r}: use 'duckdb' or 'postgres'")


def run(program: Program | str | Path, data: dict[str, object], *, plan: str | Plan = DEFAULT_PLAN,
        backend: object = "duckdb", progress: Callable[[str], None] | None = None,
        **backend_options) -> dict[str, np.ndarray]:
    """Run a program on `data` (name -> NumPy array or scipy.sparse matrix); returns outputs."""
    return run_detailed(program, data, plan=plan, backend=backend, progress=progress,
                        **backend_options)[0].outputs


def run_detailed(program, data, *, plan=DEFAULT_PLAN, backend="duckdb", progress=None,
                 count_tuples=False, **backend_options) -> tuple[Execution, Plan, Dag]:
    db = make_backend(backend, **backend_options)
    try:
        prepared = prepare(program, data, db)
        try:
            chosen = choose_plan(prepared.dag, plan, data, backend=db.name,
                                 input_stats=prepared.input_stats,
                                 stored={n: r.axes for n, r in prepared.stored.items()})
            result = execute(prepared.dag, chosen, data, db, progress=progress,
                             count_tuples=count_tuples, stored_inputs=prepared.stored)
        finally:
            prepared.release(db)
    finally:
        if db is not backend:
            db.close()
    return result, chosen, prepared.dag


# -- numpy-style einsum ------------------------------------------------------
def parse_subscripts(subscripts: str, n_operands: int) -> tuple[list[str], str]:
    """Input terms and the output term of a NumPy einsum string (implicit output allowed)."""
    text = subscripts.replace(" ", "")
    if "." in text:
        raise PlanError(f"einsum {subscripts!r}: ellipsis ('...') is not supported")
    if "->" in text:
        lhs, out = text.split("->", 1)
    else:
        lhs, out = text, None
    terms = lhs.split(",")
    if len(terms) != n_operands:
        raise DataError(f"einsum {subscripts!r} has {len(terms)} operand terms but "
                        f"{n_operands} operands were given")
    for term in terms + ([out] if out else []):
        bad = [c for c in term if not c.isalpha()]
        if bad:
            raise PlanError(f"einsum {subscripts!r}: {bad[0]!r} is not a label letter")
    if out is None:
        counts: dict[str, int] = {}
        for c in "".join(terms):
            counts[c] = counts.get(c, 0) + 1
        out = "".join(sorted(c for c, n in counts.items() if n == 1))
    if len(set(out)) != len(out):
        raise PlanError(f"einsum {subscripts!r}: output label repeats")
    missing = set(out) - set("".join(terms))
    if missing:
        raise PlanError(f"einsum {subscripts!r}: output label {sorted(missing)[0]} "
                        "appears in no operand")
    return terms, out


def einsum_program(terms: list[str], out: str) -> Program:
    program = Program()
    refs = []
    for k, term in enumerate(terms):
        name = f"T{k}"
        axes = tuple(f"{name}_{n}" for n in range(len(term)))   # distinct declared labels
        program.inputs[name] = InputDecl(name, axes, (None,) * len(term))
        refs.append(Ref(name, tuple(term)))
    expr = refs[0]
    for ref in refs[1:]:
        expr = Binary("*", expr, ref)
    program.statements.append(Statement("OUT", tuple(out), expr))
    program.outputs.append("OUT")
    return program


def einsum(subscripts: str, *operands, plan: str | Plan = DEFAULT_PLAN,
           backend: object = "duckdb", **backend_options) -> np.ndarray:
    """Evaluate a NumPy einsum string in SQL; operands are arrays, scipy.sparse or scalars."""
    terms, out = parse_subscripts(subscripts, len(operands))
    data = {}
    for k, (term, x) in enumerate(zip(terms, operands)):
        value = x if sp.issparse(x) else np.asarray(x, dtype=np.float64)
        if value.ndim != len(term):
            raise DataError(f"einsum {subscripts!r}: operand {k} has {value.ndim} dimensions "
                            f"but its term {term!r} has {len(term)} labels")
        data[f"T{k}"] = value
    program = einsum_program(terms, out)
    dag = build_dag(program, data)
    db = make_backend(backend, **backend_options)
    try:
        chosen = choose_plan(dag, plan, data, statement_labels=_case_map(terms, subscripts),
                             backend=db.name)
        return execute(dag, chosen, data, db).outputs["OUT"]
    finally:
        if db is not backend:
            db.close()


def _case_map(terms: list[str], subscripts: str) -> dict[str, str]:
    """Lower-case letter -> the label it stands for, for pinned UCLC plans."""
    mapping: dict[str, str] = {}
    for c in "".join(terms):
        if mapping.setdefault(c.lower(), c) != c:
            mapping[c.lower()] = ""   # both cases used: a pinned plan would be ambiguous
    return mapping
