"""Complex tensors as pairs of real tensors: a rewrite of a Program.

Each complex input X becomes the real inputs X_re and X_im, and every statement whose
value is complex becomes two statements, for its real and imaginary parts, with complex
arithmetic spelled out: (a + ib)(c + id) = (ac - bd) + i(ad + bc). Sums, products,
``+ -``, negation and real constants have complex meaning; functions, ``/`` by a
complex tensor and max/min aggregates do not, and are refused. Every plan of the
rewritten program computes both parts exactly as it computes real tensors.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from ..errors import ProgramError
from .model import Binary, Const, Expr, Program, Ref, Statement, Unary

Parts = tuple["Expr | None", "Expr | None"]      # real part, imaginary part (None: zero)


@dataclass(frozen=True)
class ComplexSplit:
    program: Program                            # the real program
    parts: dict[str, tuple[str, str | None]]    # tensor -> its real part, its imaginary part


def split_complex(program: Program, complex_inputs: set[str]) -> ComplexSplit:
    """The real program computing `program` when `complex_inputs` hold complex values."""
    names = set(program.inputs) | {st.out for st in program.statements}

    def fresh(base: str) -> str:
        name = base
        while name in names:
            name += "_"
        names.add(name)
        return name

    parts: dict[str, tuple[str, str | None]] = {}
    out = Program(source=program.source)
    for name, decl in program.inputs.items():
        if name in complex_inputs:
            re, im = fresh(f"{name}_re"), fresh(f"{name}_im")
            out.inputs[re] = replace(decl, name=re, source=None)
            out.inputs[im] = replace(decl, name=im, source=None)
            parts[name] = (re, im)
        else:
            out.inputs[name] = decl
            parts[name] = (name, None)
    for st in program.statements:
        re, im = _parts(st.expr, parts, st)
        if im is None:
            out.statements.append(replace(st, expr=re))
            parts[st.out] = (st.out, None)
            continue
        if st.agg != "sum":
            raise ProgramError(f"{st.agg} of complex values is not defined ({st.out} on line "
                               f"{st.line or '?'})", source=program.source, line=st.line or None)
        names_ = (fresh(f"{st.out}_re"), fresh(f"{st.out}_im"))
        for name, expr in zip(names_, (re, im)):
            out.statements.append(Statement(name, st.out_labels, expr, st.agg, st.line, st.text))
        parts[st.out] = names_
    for name in program.outputs:
        out.outputs += [p for p in parts[name] if p is not None]
    return ComplexSplit(out, parts)


def _parts(expr: Expr, parts: dict[str, tuple[str, str | None]], st: Statement) -> Parts:
    """Real and imaginary parts of an expression (None where a part is zero; the real part
    of a reference or a constant never is)."""
    if isinstance(expr, Const):
        return expr, None
    if isinstance(expr, Ref):
        re, im = parts[expr.name]
        return Ref(re, expr.labels, expr.line, expr.column), (
            Ref(im, expr.labels, expr.line, expr.column) if im else None)
    if isinstance(expr, Unary):
        re, im = _parts(expr.arg, parts, st)
        if im is None:
            return Unary(expr.fn, re), None
        if expr.fn != "neg":
            raise ProgramError(f"{expr.fn}() of complex values is not supported ({st.out} on line "
                               f"{st.line or '?'})", line=st.line or None)
        return _neg(re), _neg(im)
    a, b = _parts(expr.left, parts, st), _parts(expr.right, parts, st)
    if expr.op in "+-":
        return _add(a[0], b[0], expr.op), _add(a[1], b[1], expr.op)
    if expr.op == "*":
        return (_add(_mul(a[0], b[0]), _mul(a[1], b[1]), "-"),
                _add(_mul(a[0], b[1]), _mul(a[1], b[0]), "+"))
    if b[1] is not None:
        raise ProgramError(f"division by complex values is not supported ({st.out} on line "
                           f"{st.line or '?'})", line=st.line or None)
    return _div(a[0], b[0]), _div(a[1], b[0])


def _neg(x: Expr | None) -> Expr | None:
    return None if x is None else Unary("neg", x)


def _mul(x: Expr | None, y: Expr | None) -> Expr | None:
    return None if x is None or y is None else Binary("*", x, y)


def _div(x: Expr | None, y: Expr) -> Expr | None:
    return None if x is None else Binary("/", x, y)


def _add(x: Expr | None, y: Expr | None, op: str) -> Expr | None:
    if y is None:
        return x
    if x is None:
        return y if op == "+" else _neg(y)
    return Binary(op, x, y)
