"""The EinSum program as plain data: input declarations, statements, expressions.

A statement is ``OUT[labels] = AGG( EXPR )``; AGG (sum, max or min) runs over the
labels of EXPR that are not in OUT. EXPR is a tree of tensor references, numeric
constants, binary operators and unary functions.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterator, TypeVar, Union

from . import ops

AGGREGATES = tuple(ops.AGGREGATES)
BINARY_OPS = tuple(ops.BY_SYMBOL)
UNARY_FUNCTIONS = ops.FUNCTIONS


class _Node:
    """Equality, hashing and text of expression trees without recursion, so that a
    1000-term sum or 400 nested parentheses work like a short expression."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Node) and _flat(self) == _flat(other)  # type: ignore[arg-type]

    def __hash__(self) -> int:
        return hash(_flat(self))  # type: ignore[arg-type]

    def __str__(self) -> str:
        return fold(self, _text)  # type: ignore[arg-type]

    __repr__ = __str__


@dataclass(frozen=True, eq=False, repr=False)
class Ref(_Node):
    """A tensor reference ``T[a,b]``; labels may repeat (a diagonal)."""
    name: str
    labels: tuple[str, ...]
    line: int = 0
    column: int = 0


@dataclass(frozen=True, eq=False, repr=False)
class Const(_Node):
    value: float


@dataclass(frozen=True, eq=False, repr=False)
class Unary(_Node):
    fn: str            # one of UNARY_FUNCTIONS
    arg: "Expr"


@dataclass(frozen=True, eq=False, repr=False)
class Binary(_Node):
    op: str            # one of BINARY_OPS
    left: "Expr"
    right: "Expr"


Expr = Union[Ref, Const, Unary, Binary]
R = TypeVar("R")


def children(expr: Expr) -> tuple[Expr, ...]:
    if isinstance(expr, Binary):
        return expr.left, expr.right
    if isinstance(expr, Unary):
        return (expr.arg,)
    return ()


def fold(expr: Expr, visit: Callable[[Expr, list[R]], R]) -> R:
    """`visit(node, results of its children)` bottom-up, children left to right, with an
    explicit stack: every pass over an expression uses this (or `nodes`), never recursion."""
    results: list[R] = []
    stack: list[tuple[Expr, bool]] = [(expr, False)]
    while stack:
        node, expanded = stack.pop()
        kids = children(node)
        if kids and not expanded:
            stack.append((node, True))
            stack.extend((kid, False) for kid in reversed(kids))
            continue
        args = results[len(results) - len(kids):]
        del results[len(results) - len(kids):]
        results.append(visit(node, args))
    return results[0]


def nodes(expr: Expr) -> Iterator[Expr]:
    """Every node of an expression, parents before children, left to right."""
    stack = [expr]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(children(node)))


def _flat(expr: Expr) -> tuple:
    """The tree as one flat tuple (node type and own fields, in preorder)."""
    return tuple((type(n).__name__,) + (
        (n.name, n.labels, n.line, n.column) if isinstance(n, Ref) else
        (n.value,) if isinstance(n, Const) else (n.fn,) if isinstance(n, Unary) else (n.op,))
        for n in nodes(expr))


def _text(node: Expr, args: list[str]) -> str:
    if isinstance(node, Ref):
        return f"{node.name}[{','.join(node.labels)}]"
    if isinstance(node, Const):
        return repr(node.value)
    if isinstance(node, Unary):
        return f"{node.fn}({args[0]})"
    return f"({args[0]} {node.op} {args[1]})"


def expr_refs(expr: Expr) -> list[Ref]:
    """All tensor references in an expression, left to right."""
    return [node for node in nodes(expr) if isinstance(node, Ref)]


def product_factors(expr: Expr) -> tuple[list[Ref], float] | None:
    """(refs, constant) when `expr` is a product of references and constants."""
    refs: list[Ref] = []
    const = 1.0
    for node in nodes(expr):
        if isinstance(node, Ref):
            refs.append(node)
        elif isinstance(node, Const):
            const *= node.value
        elif not (isinstance(node, Binary) and node.op == "*"):
            return None
    return refs, const


def added_refs(expr: Expr) -> list[Ref] | None:
    """The references when `expr` is a sum of references (a min-plus product), else None."""
    refs = []
    for node in nodes(expr):
        if isinstance(node, Ref):
            refs.append(node)
        elif not (isinstance(node, Binary) and node.op == "+"):
            return None
    return refs


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
    """``input A[i:2708, j]``: a named input tensor, its labels and declared bounds;
    ``default inf`` gives the value of its absent entries (0 when omitted)."""
    name: str
    labels: tuple[str, ...]
    bounds: tuple[int | None, ...]
    source: TableSource | None = None
    line: int = 0
    default: float = 0.0


@dataclass(frozen=True)
class Statement:
    """``out[out_labels] = agg(expr)``."""
    out: str
    out_labels: tuple[str, ...]
    expr: Expr
    agg: str = "sum"
    line: int = 0
    text: str = ""
    # every subexpression is finite wherever the tensors it reads are, by construction
    # (a softmax's exp(Z - max Z) <= 1 and its sum >= 1, as losses write them): the
    # statistics need not assume that exp, log or a division overflows
    bounded: bool = False

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


def _strip(node: Expr, args: list[Expr]) -> Expr:
    if isinstance(node, Ref):
        return Ref(node.name, node.labels)
    if isinstance(node, Unary):
        return Unary(node.fn, args[0])
    if isinstance(node, Binary):
        return Binary(node.op, args[0], args[1])
    return node


def strip_locations(program: Program) -> Program:
    """A copy without lines, columns, statement texts and source name: for comparing
    programs that were written differently (text vs. the builder API)."""
    return Program(
        {n: InputDecl(d.name, d.labels, d.bounds, d.source, default=d.default)
         for n, d in program.inputs.items()},
        [Statement(s.out, s.out_labels, fold(s.expr, _strip), s.agg) for s in program.statements],
        list(program.outputs))
