"""Compile a program into one SQL job script, for psql (PostgreSQL) or the duckdb shell.

The job reads its inputs from the tables named in ``from`` clauses (or from data embedded
as INSERTs), computes every intermediate as a TEMP table, and writes each output as a
table named after it: one column per label plus ``val``, one row per non-zero. It runs
in one transaction, so a failure leaves earlier results untouched.
"""
from __future__ import annotations

import math
from importlib import metadata
from pathlib import Path

import numpy as np

from .api import build_dag, choose_plan, load_program, make_backend, prepare
from .backends.tables import checked_table_sql, import_sql
from .errors import DataError, PlanError, ProgramError
from .optimizer.choose import Optimizer
from .optimizer.forced import forced_plan
from .plan import Plan
from .program.dag import Dag, Vertex
from .program.model import InputDecl, Program
from .relation import decompose
from .sql.compiler import Compiler, Dialect
from .sql.relations import RelInfo
from .stats.tensor_stats import TensorStats, exact_stats

PREFIX = "se_job"               # intermediates: se_job_in<N> (inputs), se_job_t<N>
EMBED_LIMIT = 100_000           # most non-zeros of one input embedded as INSERTs
ROWS_PER_INSERT = 1000
ASSUMED_PER_INDEX = 16          # assumed non-zeros per index of a table's longest axis
KERNELS_VERSION = "1.0"


def compile_job(program: Program | str | Path, *, dialect: str, data: dict | None = None,
                plan: str | Plan = "optimal", dsn: str | None = None,
                database: str | None = None) -> str:
    """The SQL job of `program` for `dialect` (postgres or duckdb) under `plan`.

    Shapes and statistics come from the live database when `dsn` (postgres) or
    `database` (a DuckDB file) is given; otherwise from declared bounds and assumptions.
    Inputs without a table binding are embedded from `data`.
    """
    program = load_program(program)
    data = dict(data or {})
    d = _dialect(dialect, dsn, database)
    _check_names(program, dialect)
    for name, decl in program.inputs.items():
        if decl.source is None and name not in data:
            raise ProgramError(f"input {name} is not bound to a table: a compiled job reads its "
                               f"inputs from tables, so bind it with `input {name}[...] from "
                               f"TABLE(key columns, value column)` (or give its data to embed it)")
    if dsn or database:
        dag, stats, where = _live_statistics(program, data, dsn, database)
    else:
        dag, stats, where = _assumed_statistics(program, data)

    stored = {name: RelInfo(f"{PREFIX}_in{n}", name, dag.shapes[name],
                            tuple(range(len(dag.shapes[name]))), decl.labels)
              for n, (name, decl) in enumerate(program.inputs.items())}
    chosen = _choose(dag, plan, dialect, stats, {n: r.axes for n, r in stored.items()},
                     getattr(d, "list_limit", None))
    compiler = Compiler(dag, chosen, d, prefix=PREFIX, stored_inputs=stored)
    try:
        compiler.compile()
        finals = {name: compiler.relation(name, tuple(range(len(dag.shapes[name]))))
                  for name in program.outputs}
    except PlanError as exc:
        raise PlanError(f"plan {chosen.name or plan!r} cannot be compiled for {dialect}: {exc} "
                        "(the optimizer's plans always fit: use --plan optimal)") from None
    assert not any(step.kernels for step in compiler.steps), "job SQL must not use UDFs"

    q = d.q
    out = _header(program, chosen, dag, dialect, where, stored)
    out += ["\\set ON_ERROR_STOP on" if dialect == "postgres" else ".bail on", ""]
    if dialect == "postgres":
        out += [_kernels_check(), ""]
    out += ["BEGIN;", "", "-- inputs (keys outside the compiled shape fail a CHECK)"]
    for name, rel in stored.items():
        decl = program.inputs[name]
        if name in data:
            out += [s + ";" for s in _embed_sql(decl, rel, data[name], d)]
        else:
            out.append(import_sql(decl, rel.table, d, rel.shape) + ";")
    for step in compiler.steps:
        out += ["", f"-- {_comment(step.label)}", step.sql + ";"]
    out += ["", "-- outputs: one row per non-zero"]
    for name, rel in finals.items():
        cols = ", ".join([q(c) for c in rel.columns] + ["val"])
        out += [f"DROP TABLE IF EXISTS {q(name)};",
                f"CREATE TABLE {q(name)} AS SELECT {cols} FROM {q(rel.table)} WHERE val <> 0;"]
    out += ["", "-- intermediates"]
    out += [f"DROP TABLE {q(t)};" for t in
            dict.fromkeys([r.table for r in stored.values()] +
                          [s.target.table for s in compiler.steps])]
    out += ["", "COMMIT;"]
    return "\n".join(out) + "\n"


def _dialect(name: str, dsn: str | None, database: str | None) -> Dialect:
    if name == "postgres":
        from .sql.postgres_dialect import PostgresDialect
        d: Dialect = PostgresDialect()
    elif name == "duckdb":
        from .sql.duckdb_builtin_dialect import DuckDBBuiltinDialect
        d = DuckDBBuiltinDialect()
    else:
        raise PlanError(f"unknown dialect {name!r}: use postgres or duckdb")
    if dsn and database:
        raise DataError("give statistics from one database: --dsn or --database, not both")
    if dsn and name != "postgres" or database and name != "duckdb":
        option = "--dsn" if dsn else "--database"
        raise DataError(f"{option} does not apply to --dialect {name} "
                        "(--dsn is for postgres, --database for duckdb)")
    d.temporary = True
    return d


def _choose(dag: Dag, plan: str | Plan, backend: str, stats: dict[str, TensorStats],
            stored: dict[str, tuple[int, ...]], limit: int | None) -> Plan:
    """The plan `plan` names; the optimizer's choices keep every tuple's array within
    `limit` values (the optimizer's own cap bounds memory, not list lengths)."""
    if limit is None or isinstance(plan, Plan) or forced_plan(dag, plan) is not None:
        return choose_plan(dag, plan, {}, backend=backend, input_stats=stats, stored=stored)
    opt = Optimizer.build(dag, stats, backend=backend, stored=stored)
    fits = opt.model.fits

    def within(v: Vertex, promoted: frozenset[str]) -> bool:
        tensors = [(o.tensor, o.labels) for o in v.operands] + [(v.name, v.labels)]
        return fits(v, promoted) and all(
            math.prod(n for n, l in zip(dag.shapes[t], labels) if l not in promoted) <= limit
            for t, labels in tensors)

    opt.model.fits = within
    if plan == "greedy":
        return opt.greedy()
    rank = 1 if plan == "optimal" else _rank(plan)
    plans = opt.top(rank)
    if len(plans) < rank:
        raise PlanError(f"plan {plan!r}: the program has only {len(plans)} distinct plans "
                        f"with arrays of at most {limit} values")
    chosen = plans[rank - 1]
    chosen.name = plan
    return chosen


def _rank(spec: str) -> int:
    try:
        rank = int(spec.split(":", 1)[1]) if spec.startswith("rank:") else 0
    except ValueError:
        rank = 0
    if rank < 1:
        raise PlanError(f"unknown plan {spec!r}: use optimal, greedy, rank:N, relational, dense, "
                        "random:SEED or UCLC subscripts")
    return rank


def _check_names(program: Program, dialect: str) -> None:
    """Outputs become tables: they must not replace a source table or clash with each other
    (DuckDB identifiers are case-insensitive even when quoted)."""
    fold = str.lower if dialect == "duckdb" else str
    sources = {fold(decl.source.table) for decl in program.inputs.values() if decl.source}
    seen: set[str] = set()
    for name in program.outputs:
        key = fold(name)
        if key in sources:
            raise ProgramError(f"output {name} would replace the input table {name!r}: "
                               "rename the output")
        if key in seen:
            raise ProgramError(f"output {name} clashes with another output in {dialect}")
        if key.lower().startswith(PREFIX):
            raise ProgramError(f"output {name}: names starting with {PREFIX} are reserved "
                               "for the job's intermediates")
        seen.add(key)


def _live_statistics(program: Program, data: dict, dsn: str | None, database: str | None):
    """DAG and statistics from the tables themselves (imported as TEMP tables, dropped)."""
    if dsn:
        db = make_backend("postgres", dsn=dsn)
        where = "measured at compile time in the PostgreSQL database"
    else:
        import duckdb
        if not Path(database).is_file():
            raise DataError(f"DuckDB database {database} does not exist")
        db = make_backend(duckdb.connect(database, read_only=True))
        where = f"measured at compile time in {database}"
    try:
        db.dialect.temporary = True
        prepared = prepare(program, data, db)
        prepared.release(db)
    finally:
        db.close()
        if database:
            db.con.close()
    return prepared.dag, prepared.input_stats, where


def _assumed_statistics(program: Program, data: dict):
    """Shapes from declared bounds; statistics exact for embedded data, assumed for tables."""
    shapes = {}
    for name, decl in program.inputs.items():
        if name in data:
            continue
        for label, bound in zip(decl.labels, decl.bounds):
            if bound is None:
                raise ProgramError(f"input {name}: label {label} has no declared bound; without "
                                   f"a database (--dsn/--database) the job's shapes come from the "
                                   f"declarations: write {label}:N in `input {name}[...]`")
        shapes[name] = tuple(int(b) for b in decl.bounds)
    dag = build_dag(program, data, shapes)
    stats = {name: exact_stats(data[name]) if name in data else _assumed(dag.shapes[name])
             for name in program.inputs}
    where = (f"assumed (no database given): each table holds min(size, {ASSUMED_PER_INDEX} x "
             "longest axis) non-zeros spread uniformly, every index used")
    return dag, stats, where


def _assumed(shape: tuple[int, ...]) -> TensorStats:
    nnz = float(min(math.prod(shape), ASSUMED_PER_INDEX * max(shape, default=1)))
    return TensorStats(shape, nnz, tuple(float(min(n, nnz)) for n in shape))


def _number(x: float) -> str:
    """An exact double literal: exponent notation (DuckDB reads plain decimals as DECIMAL
    and rounds them twice on the way to DOUBLE)."""
    if not math.isfinite(x):
        return f"CAST('{'nan' if math.isnan(x) else ('inf' if x > 0 else '-inf')}' AS DOUBLE PRECISION)"
    text = repr(float(x))
    return text if "e" in text else text + "e0"


def _embed_sql(decl: InputDecl, rel: RelInfo, value, d: Dialect) -> list[str]:
    relation = decompose(value, rel.axes)
    if len(relation) > EMBED_LIMIT:
        raise DataError(f"input {decl.name} has {len(relation)} non-zeros, more than the "
                        f"{EMBED_LIMIT} a job embeds: load it into a table and bind it with "
                        f"`input {decl.name}[...] from TABLE(...)`")
    keys = np.stack(relation.keys, axis=1) if relation.keys else np.zeros((len(relation), 0), int)
    rows = [f"({''.join(f'{int(k)}, ' for k in ks)}{_number(v)})"
            for ks, v in zip(keys.tolist(), np.asarray(relation.values, dtype=float).tolist())]
    sql = [checked_table_sql(rel.table, decl, rel.shape, d)]
    for start in range(0, len(rows), ROWS_PER_INSERT):
        sql.append(f"INSERT INTO {d.q(rel.table)} VALUES\n  "
                   + ",\n  ".join(rows[start:start + ROWS_PER_INSERT]))
    return sql


def _kernels_check() -> str:
    hint = "install them with: sparse-einsum install-kernels --dsn DSN"
    return (
        "DO $se_check$\nBEGIN\n"
        "  IF to_regprocedure('se_kernels_version()') IS NULL THEN\n"
        "    RAISE EXCEPTION 'this job needs the sparse_einsum_kernels extension %, which is "
        f"not installed in this database', '{KERNELS_VERSION}' USING HINT = '{hint}';\n"
        "  END IF;\n"
        f"  IF se_kernels_version() <> '{KERNELS_VERSION}' THEN\n"
        "    RAISE EXCEPTION 'this job needs sparse_einsum_kernels %, found %', "
        f"'{KERNELS_VERSION}', se_kernels_version() USING HINT = '{hint}';\n"
        "  END IF;\nEND\n$se_check$;")


def _comment(text: object) -> str:
    """Text safe inside a `--` comment: one line."""
    return str(text).replace("\r", " ").replace("\n", " ")


def _header(program: Program, plan: Plan, dag, dialect: str, where: str,
            stored: dict[str, RelInfo]) -> list[str]:
    try:
        version = metadata.version("sparse-einsum")
    except metadata.PackageNotFoundError:  # pragma: no cover
        version = "?"
    engine = "PostgreSQL (psql)" if dialect == "postgres" else "DuckDB (duckdb command-line shell)"
    lines = [f"SQL job generated by sparse-einsum {version} for {engine}.",
             f"program: {program.source or '(text)'}"]
    for name, decl in program.inputs.items():
        dims = ",".join(f"{l}:{n}" for l, n in zip(decl.labels, stored[name].shape))
        src = decl.source
        origin = (f"table {src.table!r}({', '.join(src.keys + ((src.value,) if src.value else ()))})"
                  if src else "data embedded in this job")
        lines.append(f"  input {name}[{dims}] from {origin}")
    lines += [f"  {st.text or st}" for st in program.statements]
    lines += [f"  output {', '.join(program.outputs)}", f"plan: {plan.name or '(unnamed)'}"
              + (f" (estimated cost {plan.cost:.4g})" if plan.cost is not None else "")]
    lines += [f"  {line}" for line in plan.describe(dag).splitlines()]
    lines += [f"statistics: {where}",
              "outputs: tables " + ", ".join(f"{o}({', '.join(dag.labels_of(o) + ('val',))})"
                                             for o in program.outputs)
              + ", one row per non-zero; replaced on every run"]
    if dialect == "postgres":
        lines += ["run:  psql \"DSN\" -f job.sql",
                  f"      (needs the sparse_einsum_kernels extension {KERNELS_VERSION}: "
                  "sparse-einsum install-kernels --dsn DSN)"]
    else:
        lines += ["run:  duckdb FILE.duckdb -f job.sql   (or: duckdb FILE.duckdb < job.sql)"]
    lines.append("One transaction: on any error nothing is changed; intermediates are TEMP "
                 "tables, dropped at the end.")
    return [f"-- {_comment(line)}" if line.strip() else "--" for line in lines] + [""]
