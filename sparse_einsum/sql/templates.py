"""The SQL whose shape is fixed, kept as files in ``sql_templates/`` (package data of a
wheel, see `resources`), and the renderer that fills their holes.

A template ``sql_templates/<engine>/<name>.sql`` (engine ``common``: every engine, with
identifiers quoted in its style) holds SQL with named holes ``{name:kind}``, each filled
with a value of its kind: ``ident`` a name (quoted here), ``number`` an int or float,
``sql`` SQL rendered by code (an `SQL` value: `literal`, another template, or what the
compiler made). A missing or extra value, or a value of another kind, is an error naming
the template and the hole. Literal braces are written ``{{`` and ``}}``.
"""
from __future__ import annotations

from functools import cache
from string import Formatter

from ..resources import shipped

SQL_TEMPLATES = shipped("sql_templates")
KINDS = ("ident", "number", "sql")


class SQL(str):
    """Text that is SQL already (rendered by code, never taken from a name or a user)."""


def literal(text: str) -> SQL:
    """A SQL string literal of `text`."""
    return SQL("'" + text.replace("'", "''") + "'")


@cache
def template(name: str) -> tuple[str, dict[str, str]]:
    """The text of template `name` (``engine/name``) and its holes: name -> kind."""
    path = SQL_TEMPLATES / f"{name}.sql"
    if not path.is_file():
        raise ValueError(f"sql template {name}: no file {path}")
    text = path.read_text()
    holes: dict[str, str] = {}
    for _, hole, kind, _ in Formatter().parse(text):
        if hole is None:
            continue
        if kind not in KINDS or holes.get(hole, kind) != kind:
            raise ValueError(f"sql template {name}: hole {hole!r} has kind {kind!r}, not one "
                             f"of {', '.join(KINDS)} (the same at every use)")
        holes[hole] = kind
    return text, holes


def render(name: str, quote: str = '"', **values: str | int | float) -> SQL:
    """Template `name` with its holes filled by `values`; identifiers are quoted with
    `quote` (doubled inside)."""
    text, holes = template(name)
    if missing := sorted(holes.keys() - values.keys()):
        raise ValueError(f"sql template {name}: no value for hole {missing[0]!r}")
    if extra := sorted(values.keys() - holes.keys()):
        raise ValueError(f"sql template {name}: no hole {extra[0]!r}")
    return SQL(text.format_map({hole: _filled(name, hole, holes[hole], value, quote)
                                for hole, value in values.items()}).strip())


def _filled(name: str, hole: str, kind: str, value, quote: str) -> "_Hole":
    if kind == "ident" and type(value) is str:
        return _Hole(quote + value.replace(quote, quote * 2) + quote)
    if kind == "number" and isinstance(value, (int, float)) and not isinstance(value, bool):
        return _Hole(repr(value))
    if kind == "sql" and isinstance(value, SQL):
        return _Hole(str(value))
    raise ValueError(f"sql template {name}: hole {hole!r} takes {kind}, not "
                     f"{type(value).__name__} {str(value)[:40]!r}")


class _Hole(str):
    """A filled hole: formats as itself whatever its kind spec says."""

    def __format__(self, spec: str) -> str:
        return str(self)
