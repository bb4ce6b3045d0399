"""The shape of the code: stages import only earlier stages, the C kernels' operation list
is generated from the operation table, and every generated SQL statement parses in its
dialect (sqlglot)."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest
import sqlglot

from sparse_einsum import Session
from sparse_einsum.optimizer.strategies import STRATEGIES
from sparse_einsum.program.ops import c_header, java_ops
from sparse_einsum.sql.duckdb import DuckDBBuiltinDialect, DuckDBDialect, DuckDBNativeDialect
from sparse_einsum.sql.postgres import PostgresDialect
from sparse_einsum.sql.spark import SparkDialect, SparkNativeDialect

from test_programs import PROGRAMS

PACKAGE = Path(__file__).resolve().parents[1] / "sparse_einsum"
# The pipeline's stages in order; a module may import its own stage and earlier ones.
STAGES = [
    ["errors", "memory", "extras", "resources", "capabilities"],
    ["program"],
    ["tiling", "reference", "inputs", "blocks", "values"],
    ["stats"],
    ["plan", "shuffles"],
    ["cost"],
    ["optimizer"],
    ["kernels"],
    ["sql"],
    ["backends"],
    ["executor", "explanation", "reuse"],
    ["session", "prepared"],
    ["api", "training", "training_store", "compile_job", "calibrate", "examples", "cli", "__init__", "__main__"],
]


def _stage(module: str) -> int:
    first = module.split(".")[0]
    for n, names in enumerate(STAGES):
        if first in names:
            return n
    raise AssertionError(f"module {module} is in no stage: add it to STAGES")


def import_graph() -> dict[str, set[str]]:
    """Module (dotted, within the package) -> the package modules it imports."""
    graph = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" and len(parts) > 1 else parts)
        package = parts[:-1]
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level:
                base = list(package[:len(package) - node.level + 1])
                target = ".".join(base + ([node.module] if node.module else []))
                found.add(target or "__init__")
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("sparse_einsum"):
                found.add(node.module.removeprefix("sparse_einsum").lstrip(".") or "__init__")
        graph[module] = {t for t in found if t}
    return graph


def test_no_stage_imports_a_later_one():
    late = [(m, t) for m, targets in import_graph().items() for t in targets
            if _stage(t) > _stage(m)]
    assert not late, late


def test_the_sql_made_is_never_read_back():
    """Steps carry what they read and dialects build each form directly: the SQL layer,
    the executor and the PostgreSQL backend's bound inputs match no patterns."""
    readers = [PACKAGE / "executor.py", PACKAGE / "backends" / "pg_bind.py",
               *sorted((PACKAGE / "sql").glob("*.py"))]
    found = [p.name for p in readers
             if any(isinstance(node, (ast.Import, ast.ImportFrom)) and "re" in
                    [a.name for a in node.names] + [getattr(node, "module", None)]
                    for node in ast.walk(ast.parse(p.read_text())))]
    assert not found, found


def test_c_and_jvm_kernels_read_the_generated_operation_list():
    kernels = PACKAGE.parent / "udf_kernels"
    for path, text in ((kernels / "common" / "se_ops.h", c_header()),
                       (kernels / "spark" / "src" / "sparseeinsum" / "spark" / "Ops.java",
                        java_ops())):
        assert path.read_text() == text, \
            f"{path.relative_to(kernels.parent)} is stale: run python -m sparse_einsum.program.ops"


DIALECTS = [DuckDBNativeDialect(), DuckDBDialect(), DuckDBBuiltinDialect(), PostgresDialect(),
            SparkDialect(), SparkNativeDialect()]


@pytest.mark.parametrize("dialect", DIALECTS, ids=lambda d: d.name)
def test_a_dialect_packs_stacks_exactly_when_it_has_the_sql(dialect):
    assert dialect.capabilities.packed_stacks == bool(dialect.packed_stack_sql)


@pytest.mark.parametrize("dialect", DIALECTS, ids=lambda d: d.name)
def test_every_generated_statement_parses_in_its_dialect(dialect):
    statements = 0
    for name, (text, make_data) in PROGRAMS.items():
        with Session(text, make_data(), backend=None, dialect=dialect) as session:
            specs = {spec for s in STRATEGIES.values() for spec in s.examples(session.optimizer())}
            for spec in sorted(specs):
                for step in session.compile(spec).steps:
                    if step.kind != "sql":
                        continue
                    parsed = sqlglot.parse(step.sql, read=dialect.sqlglot)
                    assert len(parsed) == 1 and parsed[0] is not None, step.sql
                    statements += 1 + len(step.pipelined)    # with those streamed into it
    assert statements > 300
