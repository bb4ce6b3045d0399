"""The SQL templates (``sql_templates/``): every one renders and parses in each dialect
that uses it (sqlglot), and the renderer fails on a missing, extra or mistyped hole."""
from __future__ import annotations

import pytest
import sqlglot

from sparse_einsum.sql.templates import SQL, SQL_TEMPLATES, literal, render, template

# the sqlglot dialects of each engine directory (common: every engine)
ENGINES = {"common": ("duckdb", "postgres", "spark"), "duckdb": ("duckdb",),
           "postgres": ("postgres",), "spark": ("spark",)}
QUOTES = {"duckdb": '"', "postgres": '"', "spark": "`"}
# a value for each hole of kind sql, by the hole's name
SQL_SAMPLES = {
    "body": SQL("CREATE TEMP TABLE t AS SELECT 1 AS val;\nDROP TABLE t;"),
    "extension": literal("/path/to/it's.duckdb_extension"),
    "kernels_version": literal("1.4"), "version": literal("1.4"),
    "param": SQL("NULL"),
    "finite": SQL("val = val"), "distinct": SQL(", count(DISTINCT k)"),
    "keys": SQL("k, "), "value": SQL("v"), "source": SQL("src"), "not_null": SQL("k IS NOT NULL"),
    "group_by": SQL(" GROUP BY 1"), "bounds": SQL("min(k), max(k)"),
    "query": SQL("SELECT 1 AS val"), "rows": SQL("(0, 1.0e0),\n  (1, 2.0e0)"),
    "columns": SQL("k AS i, val"), "setting": literal("memory_limit"),
}
NAMES = sorted(str(p.relative_to(SQL_TEMPLATES).with_suffix(""))
               for p in SQL_TEMPLATES.rglob("*.sql"))
SHELL_COMMANDS = ("\\", ".")     # psql's and the duckdb shell's, not SQL


def _filled(name: str) -> dict:
    holes = template(name)[1]
    missing = [h for h, kind in holes.items() if kind == "sql" and h not in SQL_SAMPLES]
    assert not missing, f"{name}: add a sample for the holes {missing} to SQL_SAMPLES"
    return {h: SQL_SAMPLES[h] if kind == "sql" else ("a col" if kind == "ident" else 3)
            for h, kind in holes.items()}


@pytest.mark.parametrize("name", NAMES)
def test_every_template_renders_and_parses_in_its_dialects(name):
    engine = name.split("/")[0]
    assert engine in ENGINES, f"{name}: templates live in {', '.join(ENGINES)}"
    for dialect in ENGINES[engine]:
        text = render(name, QUOTES[dialect], **_filled(name))
        assert "{" not in text and "}" not in text, text
        sql = "\n".join(line for line in text.splitlines()
                        if not line.startswith(SHELL_COMMANDS))
        parsed = [p for p in sqlglot.parse(sql.replace("%s", "NULL"), read=dialect) if p]
        assert parsed, (name, dialect)


def test_there_are_templates_of_every_engine():
    assert {n.split("/")[0] for n in NAMES} == set(ENGINES) and len(NAMES) > 15


def test_holes_take_quoted_identifiers_numbers_or_rendered_sql():
    text = render("common/degree_dot", table='t"x', a="k", b="l")
    assert 'FROM "t""x" GROUP BY "k"' in text
    assert render("common/row_count", "`", table="a`b") == "SELECT count(*) FROM `a``b`"
    with pytest.raises(ValueError, match=r"^sql template common/row_count: no value for hole 'table'$"):
        render("common/row_count")
    with pytest.raises(ValueError, match=r"^sql template common/row_count: no hole 'extra'$"):
        render("common/row_count", table="t", extra="x")
    with pytest.raises(ValueError, match="sql template common/import: hole 'source' takes sql, not str"):
        render("common/import", **{**_filled("common/import"), "source": "t; DROP TABLE t"})
    with pytest.raises(ValueError, match="hole 'table' takes ident, not SQL"):
        render("common/row_count", table=SQL("t"))
    with pytest.raises(ValueError, match="hole 'check_seconds' takes number, not bool"):
        render("postgres/job", **{**_filled("postgres/job"), "check_seconds": True})
    assert literal("it's") == "'it''s'"
