"""Compile a program into one SQL job script, for psql (PostgreSQL), the duckdb shell or
spark-sql (Spark).

The job reads its inputs from the tables named in ``from`` clauses (or from data embedded
in the job), computes every intermediate as a TEMP table (in Spark a cached temporary
view), and writes each output as a table named after it: one column per label plus
``val``, one row per non-zero. It runs in one transaction, so a failure leaves earlier
results untouched (Spark, without transactions, writes staged tables and renames them at
the end).

Kernels: a PostgreSQL job calls the sparse_einsum_kernels extension; a DuckDB job
(dialect ``duckdb``) LOADs the sparse_einsum DuckDB extension from the path built here
(or the one given as `extension`), so the shell must run with ``-unsigned``; dialect
``duckdb-builtin`` needs no extension but holds at most LIST_LIMIT values per tuple; a
Spark job calls the kernel jar's function catalog, which spark-sql is given with
``--jars`` and ``--conf`` (the header says how).
"""
from __future__ import annotations

import math
from importlib import metadata
from pathlib import Path
from typing import Sequence

import numpy as np

from .backends.jobs import JOB_OPTIONS, JOBS, JobDialect
from .blocks import decompose
from .errors import DataError, PlanError, ProgramError, SparseEinsumError
from .inputs import FILE_FORMATS
from .plan import Plan
from .program.model import InputDecl, Program
from .program.parser import load_program
from .session import ASSUMED_PER_INDEX, Session, SessionOptions
from .sql.compiler import Combined
from .sql.dialect import Dialect
from .sql.duckdb import file_scan
from .sql.pretty import pretty
from .sql.sources import checked_import_sql, checked_table_sql, checked_view_sql
from .sql.steps import TableRelation, key_column
from .sql.templates import SQL, render
from .tiling import Tiling

PREFIX = "se_job"               # intermediates: se_job_in<N> (inputs), se_job_t<N>
EMBED_LIMIT = 100_000           # most non-zeros of one input embedded as INSERTs
ROWS_PER_INSERT = 1000


def compile_job(program: Program | str | Path, *, dialect: str, data: dict | None = None,
                plan: str | Plan = "optimal", dsn: str | None = None,
                database: str | None = None, extension: str | None = None,
                before: Sequence[str] = (), after: Sequence[str] = (),
                in_place: dict[str, Tiling] | None = None,
                combined: dict[str, Combined] | None = None) -> str:
    """The SQL job of `program` for `dialect` (one of JOBS) under `plan`.

    Shapes and statistics come from the live database when `dsn` (postgres) or
    `database` (a DuckDB file) is given; otherwise from declared bounds and assumptions.
    Inputs without a table binding are embedded from `data`. A duckdb job LOADs the
    DuckDB extension from `extension` (default: the one built on this machine). The
    statements `before` run first in the job's transaction, those `after` last. A training
    iteration reads the inputs in `in_place` from their tables as they are (tiled as
    given) and leaves the outputs in `combined` in those TEMP tables for `after`.
    """
    program = load_program(program)
    data = dict(data or {})
    job = _job(dialect, dsn=dsn, database=database, extension=extension)
    job_dialect = job.dialect()
    _check_names(program, dialect, job.fold_case)
    for name, decl in program.inputs.items():
        if decl.source is None and name not in data:
            raise ProgramError(f"input {name} is not bound to a table: a compiled job reads its "
                               f"inputs from tables, so bind it with `input {name}[...] from "
                               f"TABLE(key columns, value column)` (or give its data to embed it)")
    with Session(program, data, dialect=job_dialect, prefix=PREFIX,
                 options=SessionOptions(in_place=dict(in_place or {}), job=True),
                 **_statistics_backend(dsn, database)) as session:
        chosen = session.plan(plan)
        try:
            compiled = session.compile(chosen, temporary=True, relational_outputs=True,
                                       combined=combined)
        except PlanError as exc:
            raise PlanError(f"plan {chosen.name or plan!r} cannot be compiled for {dialect}: {exc} "
                            "(the optimizer's plans always fit: use --plan optimal)") from None
        stored = {name: rel for name, rel in session.tables.items()
                  if name not in session.options.in_place}
        where = ("measured at compile time in the PostgreSQL database" if dsn else
                 f"measured at compile time in {database}" if database else
                 f"assumed (no database given): each table holds min(size, "
                 f"{ASSUMED_PER_INDEX} x longest axis) non-zeros spread uniformly, every index used")
        q = job_dialect.q
        kernels = _kernels_file(job, dialect, extension) if job.kernels else None
        out = [f"{sql};" for sql in before] + ([""] if before else [])
        out += ["-- inputs (keys outside the compiled shape fail the job)"]
        for name, rel in stored.items():
            decl = program.inputs[name]
            if name in data:
                out += [s + ";" for s in _embed_sql(decl, rel, data[name], job_dialect)]
            else:
                out.append(checked_import_sql(decl, rel.table, rel.shape,
                                              _source_sql(decl, job_dialect), job_dialect) + ";")
        for step in compiled.steps:
            out += ["", f"-- {_comment(step.label)}", pretty(step.sql, job_dialect) + ";"]
        out += ["", "-- outputs: one row per non-zero"]
        for name, rel in compiled.outputs.items():
            cols = ", ".join([f"{q(c)} AS {q(rel.labels[a])}" for c, a in zip(rel.columns, rel.keyed)]
                             + ["val"])
            out.append(render(job.output, job_dialect.quote, output=job.written(name, PREFIX),
                              columns=SQL(cols), table=rel.table))
        out += ["", "-- intermediates"]
        out += [render(job.drop, job_dialect.quote, table=t) + ";" for t in reversed(
                dict.fromkeys([r.table for r in stored.values()] +
                              [s.target.table for s in compiled.steps
                               if s.target.table not in compiled.combined]))]
        if job.publish:
            out += ["", "-- outputs replace the old ones"] + [
                render(job.publish, job_dialect.quote, output=name,
                       staged=job.written(name, PREFIX)) for name in compiled.outputs]
        out += ([""] if after else []) + [f"{sql};" for sql in after]
        header = _header(program, chosen, session.dag, job, where, session.tables, kernels)
    return "\n".join(header) + "\n" + job.wrap("\n".join(out), kernels) + "\n"


def _job(name: str, **options: str | None) -> JobDialect:
    """The row of dialect `name`, after checking that each option given applies to it."""
    if name not in JOBS:
        raise PlanError(f"unknown dialect {name!r}: use {', '.join(JOBS)}")
    if options.get("dsn") and options.get("database"):
        raise DataError("give statistics from one database: --dsn or --database, not both")
    job = JOBS[name]
    for option, hint in JOB_OPTIONS.items():
        if options.get(option) and option not in job.options:
            raise DataError(f"--{option} does not apply to --dialect {name} ({hint})")
    return job


def _kernels_file(job: JobDialect, name: str, given: str | None) -> str:
    """Where the job loads its kernels from (the DuckDB extension, the Spark jar): `given`,
    or the build on this machine."""
    if given:
        return given
    try:
        return str(job.kernels())
    except SparseEinsumError as exc:
        raise PlanError(f"a {name} job needs the sparse_einsum kernels, which are not available "
                        f"here ({exc}): give their path with --extension{job.without_kernels}"
                        ) from None


def _statistics_backend(dsn: str | None, database: str | None) -> dict:
    """Session options reading shapes and statistics from the live database, if any."""
    if dsn:
        return {"backend": "postgres", "dsn": dsn}
    if database:
        if not Path(database).is_file():
            raise DataError(f"DuckDB database {database} does not exist")
        return {"backend": "duckdb", "database": database, "read_only": True}
    return {"backend": None}


def _source_sql(decl: InputDecl, d: Dialect) -> str:
    """The FROM item a job reads an input's table (or, in DuckDB, its file; in Spark, its
    Parquet file) from."""
    src = decl.source
    if not src.file:
        return d.q(src.table)
    file_format = FILE_FORMATS.get(Path(src.table).suffix.lower(), "csv")
    if d.engine == "duckdb":
        return file_scan(src.table, file_format)
    if d.engine == "spark" and file_format == "parquet":
        return f"parquet.{d.q(src.table)}"
    raise ProgramError(f"input {decl.name} is read from the file {src.table!r}: a {d.engine} "
                       "job reads its inputs from tables (Spark: also Parquet files); load "
                       "the file into a table")


def _check_names(program: Program, dialect: str, fold_case: bool) -> None:
    """Outputs become tables: they must not replace a source table or clash with each other
    (`fold_case`: identifiers are case-insensitive even when quoted, as in DuckDB)."""
    fold = str.lower if fold_case else str
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
        labels = [fold(l) for l in program.labels_of(name)]
        if len(set(labels)) < len(labels):
            raise ProgramError(f"output {name}[{','.join(program.labels_of(name))}]: its labels "
                               f"name its table's columns, and {dialect} cannot tell apart "
                               "names that differ only in case: rename a label")
        seen.add(key)


def _number(x: float, d: Dialect) -> str:
    """An exact double literal: exponent notation (DuckDB reads plain decimals as DECIMAL
    and rounds them twice on the way to DOUBLE)."""
    if not math.isfinite(x):
        return f"CAST('{'nan' if math.isnan(x) else ('inf' if x > 0 else '-inf')}' AS {d.double_sql})"
    text = repr(float(x))
    return text if "e" in text else text + "e0"


def _embed_sql(decl: InputDecl, rel: TableRelation, value, d: Dialect) -> list[str]:
    blocks = decompose(value, rel.tiling, default=decl.default)
    if len(blocks) > EMBED_LIMIT:
        raise DataError(f"input {decl.name} has {len(blocks)} non-zeros, more than the "
                        f"{EMBED_LIMIT} a job embeds: load it into a table and bind it with "
                        f"`input {decl.name}[...] from TABLE(...)`")
    keys = np.stack(blocks.keys, axis=1) if blocks.keys else np.zeros((len(blocks), 0), int)
    rows = [f"({''.join(f'{int(k)}, ' for k in ks)}{_number(v, d)})"
            for ks, v in zip(keys.tolist(), np.asarray(blocks.values, dtype=float).tolist())]
    if not d.constraints:        # one cached view of the values, keys checked as it is read
        columns = [key_column(l, a) for a, l in enumerate(decl.labels)] + ["val"]
        values = ", ".join(rows) or f"({', '.join(['0'] * len(decl.labels) + ['0.0'])})"
        select = (f"SELECT * FROM VALUES {values} AS v({', '.join(map(d.q, columns))})"
                  + ("" if rows else " WHERE FALSE"))
        return [checked_view_sql(decl, rel.table, rel.shape, select, d)]
    sql = [checked_table_sql(rel.table, decl, rel.shape, d)]
    for start in range(0, len(rows), ROWS_PER_INSERT):
        sql.append(render("common/insert_values", d.quote, table=rel.table,
                          rows=SQL(",\n  ".join(rows[start:start + ROWS_PER_INSERT]))))
    return sql


def _comment(text: object) -> str:
    """Text safe inside a `--` comment: one line."""
    return str(text).replace("\r", " ").replace("\n", " ")


def _header(program: Program, plan: Plan, dag, job: JobDialect, where: str,
            stored: dict[str, TableRelation], extension: str | None) -> list[str]:
    try:
        version = metadata.version("sparse-einsum")
    except metadata.PackageNotFoundError:  # pragma: no cover
        version = "?"
    lines = [f"SQL job generated by sparse-einsum {version} for {job.shell}.",
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
    lines += [line.format(extension=extension) for line in job.run]
    lines.append(job.atomic)
    return [f"-- {_comment(line)}" if line.strip() else "--" for line in lines] + [""]
