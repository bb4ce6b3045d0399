"""Build a Program from Python instead of ``.se`` text::

    p = ProgramBuilder()
    A = p.input("A", "i,j")
    H = p.input("H", "j:2708,f")
    AH = p.let("AH[i,f]", A["i,j"] * H["j,f"])      # or p.let("AH[i,f]", "A[i,j] * H[j,f]")
    Y = p.let("Y[i,f]", p.relu(AH["i,f"]))
    M = p.let("M[i]", p.max(AH["i,f"]))             # aggregate wrapper
    p.output(Y, M)
    program = p.build()                              # validated
"""
from __future__ import annotations

import re
from numbers import Real
from typing import Sequence, Union

from sparse_einsum.errors import ProgramError
from sparse_einsum.program.model import (
    Binary, Const, Expr, InputDecl, Program, Ref, Statement, TableSource, Unary,
)
from sparse_einsum.program.parser import parse_labels, parse_rhs, parse_target
from sparse_einsum.program.validate import validate_program

Operand = Union["Term", Ref, Const, Unary, Binary, float, int]
Labels = Union[str, Sequence[str]]
TableSpec = Union[TableSource, tuple[str, Sequence[str]], tuple[str, Sequence[str], Union[str, None]]]


class Term:
    """An expression under construction; ``+ - * /`` and unary minus build Binary/Unary."""
    __slots__ = ("expr",)

    def __init__(self, expr: Expr):
        self.expr = expr

    def _bin(self, op: str, other: Operand, flip: bool = False) -> Term:
        left, right = self.expr, _as_expr(other)
        return Term(Binary(op, right, left) if flip else Binary(op, left, right))

    def __add__(self, other: Operand) -> Term: return self._bin("+", other)
    def __radd__(self, other: Operand) -> Term: return self._bin("+", other, True)
    def __sub__(self, other: Operand) -> Term: return self._bin("-", other)
    def __rsub__(self, other: Operand) -> Term: return self._bin("-", other, True)
    def __mul__(self, other: Operand) -> Term: return self._bin("*", other)
    def __rmul__(self, other: Operand) -> Term: return self._bin("*", other, True)
    def __truediv__(self, other: Operand) -> Term: return self._bin("/", other)
    def __rtruediv__(self, other: Operand) -> Term: return self._bin("/", other, True)

    def __neg__(self) -> Term:
        e = self.expr
        return Term(Const(-e.value) if isinstance(e, Const) else Unary("neg", e))

    def __repr__(self) -> str:
        return f"Term({self.expr})"


class Aggregated:
    """``max(expr)`` etc.: only valid as the whole right-hand side of `ProgramBuilder.let`."""
    __slots__ = ("agg", "expr")

    def __init__(self, agg: str, expr: Expr):
        self.agg, self.expr = agg, expr

    def _misplaced(self, *_: object) -> Term:
        raise ProgramError(f"aggregate '{self.agg}' must be the outermost call of the right-hand side")

    __add__ = __radd__ = __sub__ = __rsub__ = _misplaced
    __mul__ = __rmul__ = __truediv__ = __rtruediv__ = __neg__ = _misplaced


def _as_expr(value: object) -> Expr:
    if isinstance(value, Term):
        return value.expr
    if isinstance(value, (Ref, Const, Unary, Binary)):
        return value
    if isinstance(value, Aggregated):
        value._misplaced()
    if isinstance(value, Real) and not isinstance(value, bool):
        return Const(float(value))
    raise TypeError(f"expected a tensor reference, an expression or a number but found {value!r}")


def _label_text(labels: Labels) -> str:
    return labels if isinstance(labels, str) else ",".join(labels)


class Tensor:
    """A declared or defined tensor; index it with labels to reference it: ``A["i,j"]``."""
    __slots__ = ("name", "labels")

    def __init__(self, name: str, labels: tuple[str, ...]):
        self.name, self.labels = name, labels

    def __getitem__(self, labels: Labels) -> Term:
        found, _ = parse_labels(_label_text(labels), self.name)
        return Term(Ref(self.name, found))

    def __repr__(self) -> str:
        return f"Tensor({self.name}[{','.join(self.labels)}])"


class ProgramBuilder:
    """Collects inputs, statements and outputs; `build` returns the validated Program."""

    def __init__(self, source: str | None = None):
        self._program = Program(source=source)

    def _new(self, name: str) -> None:
        if name in self._program.inputs or any(st.out == name for st in self._program.statements):
            raise ProgramError(f"tensor '{name}' is already defined", source=self._program.source)

    def input(self, name: str, labels: Labels = "", table: TableSpec | None = None,
              default: float = 0.0) -> Tensor:
        """Declare ``input name[labels]``; labels like ``"i:2708,j"`` or ``["i:2708", "j"]``;
        `table` is a TableSource or ``(table, key_columns[, value_column])``; `default`
        is the value of its absent entries."""
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise ProgramError(f"expected a tensor name but found {name!r}")
        found, bounds = parse_labels(_label_text(labels), name, bounds=True,
                                     distinct=f"the declaration of input {name}")
        source = table if table is None or isinstance(table, TableSource) else TableSource(
            table[0], tuple(table[1]), table[2] if len(table) > 2 else None)
        self._new(name)
        self._program.inputs[name] = InputDecl(name, found, bounds, source, default=default)
        return Tensor(name, found)

    def let(self, target: str, value: Term | Aggregated | Operand | str) -> Tensor:
        """Add the statement ``target = value``; `value` may be ``.se`` text."""
        name, labels = parse_target(target)
        if isinstance(value, str):
            agg, expr = parse_rhs(value)
        elif isinstance(value, Aggregated):
            agg, expr = value.agg, value.expr
        else:
            agg, expr = "sum", _as_expr(value)
        self._new(name)
        st = Statement(name, labels, expr, agg)
        self._program.statements.append(Statement(name, labels, expr, agg, text=str(st)))
        return Tensor(name, labels)

    def output(self, *tensors: Tensor | str) -> None:
        for t in tensors:
            name = t.name if isinstance(t, Tensor) else t
            if name not in self._program.outputs:
                self._program.outputs.append(name)

    def build(self, validate: bool = True) -> Program:
        p = self._program
        outputs = list(p.outputs)
        if not outputs and p.statements:
            outputs = [p.statements[-1].out]
        program = Program(dict(p.inputs), list(p.statements), outputs, p.source)
        if validate:
            validate_program(program)
        return program

    # aggregate wrappers and unary functions
    def sum(self, x: Operand) -> Aggregated: return Aggregated("sum", _as_expr(x))
    def max(self, x: Operand) -> Aggregated: return Aggregated("max", _as_expr(x))
    def min(self, x: Operand) -> Aggregated: return Aggregated("min", _as_expr(x))
    def call(self, fn: str, x: Operand) -> Term: return Term(Unary(fn, _as_expr(x)))
    def relu(self, x: Operand) -> Term: return self.call("relu", x)
    def exp(self, x: Operand) -> Term: return self.call("exp", x)
    def log(self, x: Operand) -> Term: return self.call("log", x)
    def sqrt(self, x: Operand) -> Term: return self.call("sqrt", x)
    def sigmoid(self, x: Operand) -> Term: return self.call("sigmoid", x)
    def tanh(self, x: Operand) -> Term: return self.call("tanh", x)
    def abs(self, x: Operand) -> Term: return self.call("abs", x)
    def neg(self, x: Operand) -> Term: return self.call("neg", x)
