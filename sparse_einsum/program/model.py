"""The EinSum program as plain data: input declarations, statements, expressions.

A statement is ``OUT[labels] = AGG( EXPR )``; AGG (sum, max or min) runs over the
labels of EXPR that are not in OUT. EXPR is a tree of tensor references, numeric
constants, binary operators and unary functions.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union

from . import ops

AGGREGATES = tuple(ops.AGGREGATES)
BINARY_OPS = tuple(ops.BY_SYMBOL)
UNARY_FUNCTIONS = ops.FUNCTIONS


@dataclass(frozen=True)
class Ref:
    """A tensor reference ``T[a,b]``; labels may repeat (a diagonal)."""
    name: str
    labels: tuple[str, ...]
    line: int = 0
    column: int = 0

    def __str__(self) -> str:
        return f"{self.name}[{','.join(self.labels)}]"


@dataclass(frozen=True)
class Const:
    value: float

    def __str__(self) -> str:
        return repr(self.value)


@dataclass(frozen=True)
class Unary:
    fn: str            # one of UNARY_FUNCTIONS
    arg: "Expr"

    def __str__(self) -> str:
        return f"{self.fn}({self.arg})"


@dataclass(frozen=True)
class Binary:
    op: str            # one of BINARY_OPS
    left: "Expr"
    right: "Expr"

    def __str__(self) -> str:
        return f"({self.left} {self.op} {self.right})"


Expr = Union[Ref, Const, Unary, Binary]


def expr_refs(expr: Expr) -> list[Ref]:
    """All tensor references in an expression, left to right."""
    if isinstance(expr, Ref):
        return [expr]
    if isinstance(expr, Unary):
        return expr_refs(expr.arg)
    if isinstance(expr, Binary):
        return expr_refs(expr.left) + expr_refs(expr.right)
    return []


def expr_labels(expr: Expr) -> list[str]:
    """Distinct labels of an expression in order of first appearance."""
    seen: dict[str, None] = {}
    for ref in expr_refs(expr):
        for label in ref.labels:
            seen.setdefault(label, None)
    return list(seen)


@dataclass(frozen=True)
class TableSource:
    """An input read from a database table, ``from edges(src, dst, weight)``, or from a
    Parquet/CSV file, ``from 'edges.parquet'(src, dst, weight)`` (`file` set).

    `keys` name one column per label (in label order); `value` is the value column,
    or None when every listed row counts as 1.0.
    """
    table: str
    keys: tuple[str, ...]
    value: str | None = None
    file: bool = False


@dataclass(frozen=True)
class InputDecl:
    """``input A[i:2708, j]``: a named input tensor, its labels and declared bounds."""
    name: str
    labels: tuple[str, ...]
    bounds: tuple[int | None, ...]
    source: TableSource | None = None
    line: int = 0


@dataclass(frozen=True)
class Statement:
    """``out[out_labels] = agg(expr)``."""
    out: str
    out_labels: tuple[str, ...]
    expr: Expr
    agg: str = "sum"
    line: int = 0
    text: str = ""

    def __str__(self) -> str:
        body = str(self.expr)
        if self.agg != "sum":
            body = f"{self.agg}({body})"
        return f"{self.out}[{','.join(self.out_labels)}] = {body}"


@dataclass
class Program:
    """Inputs, statements in order, and the names of the output tensors."""
    inputs: dict[str, InputDecl] = field(default_factory=dict)
    statements: list[Statement] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    source: str | None = None   # file name, for error messages

    def labels_of(self, name: str) -> tuple[str, ...]:
        """The canonical labels of a tensor: its declaration or its defining statement."""
        if name in self.inputs:
            return self.inputs[name].labels
        for st in self.statements:
            if st.out == name:
                return st.out_labels
        raise KeyError(name)


def _strip_expr(expr: Expr) -> Expr:
    if isinstance(expr, Ref):
        return Ref(expr.name, expr.labels)
    if isinstance(expr, Unary):
        return Unary(expr.fn, _strip_expr(expr.arg))
    if isinstance(expr, Binary):
        return Binary(expr.op, _strip_expr(expr.left), _strip_expr(expr.right))
    return expr


def strip_locations(program: Program) -> Program:
    """A copy without lines, columns, statement texts and source name: for comparing
    programs that were written differently (text vs. the builder API)."""
    return Program(
        {n: InputDecl(d.name, d.labels, d.bounds, d.source) for n, d in program.inputs.items()},
        [Statement(s.out, s.out_labels, _strip_expr(s.expr), s.agg) for s in program.statements],
        list(program.outputs))
