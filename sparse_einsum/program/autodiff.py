"""Reverse-mode gradients of an EinSum program, as more EinSum statements.

`differentiate(program, loss, wrt, shapes)` appends the backward pass to a program: for
each statement on a path from a parameter to the scalar loss, in reverse order, one
statement per tensor reference giving that reference's share of the gradient, and one
statement summing the shares of a tensor used more than once. The result is an ordinary
program, so the optimizer chooses the decompositions of both passes together, and a
tensor both passes read (the paper's "used more than once") is computed once.

A statement ``OUT[o] = sum(e)`` over labels L sends the upstream gradient ``dOUT[o]``
down the expression tree of `e` (chain rule per node, subexpressions recomputed where a
derivative needs them); a reference ``R[r]`` receives ``dR[r] = sum_{L - r} adj``:
labels of r missing from ``adj`` are broadcast by a vector of ones, a repeated label
(a diagonal) is put back on the diagonal by an identity matrix, and a summed label
missing from ``adj`` counts once per index. ``max``/``min`` send the gradient to the
entries equal to the result, split evenly between ties (as PyTorch's ``amax``);
``relu``'s derivative is 0 at 0 and ``abs``'s is ``sign`` (0 at 0), as in PyTorch.
The shares a bounded statement (`Statement.bounded`) sends are bounded too: the loss that
marks it vouches for its derivatives (1/S for S >= 1, exp(Z - max Z)).
"""
from __future__ import annotations

from dataclasses import dataclass
from math import prod
from typing import Callable, Iterable, Mapping

import numpy as np
import scipy.sparse as sp

from ..errors import ProgramError
from .ops import BY_SYMBOL
from .model import (Binary, Const, Expr, InputDecl, Program, Ref, Statement, Unary, expr_labels,
                    expr_refs)

ONE = Const(1.0)


@dataclass
class Gradients:
    """A program extended by its backward pass."""
    program: Program                 # forward, then backward statements
    grads: dict[str, str]            # parameter -> the tensor holding its gradient
    helpers: dict[str, object]       # data of the ones and identity inputs the gradients use
    backward: list[Statement]        # the statements added
    zero: list[str]                  # parameters the loss does not depend on


def _binary(op: str, a: Expr, b: Expr) -> Expr:
    """`a op b`, constants folded."""
    if isinstance(a, Const) and isinstance(b, Const):
        return Const(float(BY_SYMBOL[op].numpy(a.value, b.value)))
    if op == "*" and a == ONE:
        return b
    if op in "*/" and b == ONE:
        return a
    return Binary(op, a, b)


def _mul(a: Expr, b: Expr) -> Expr:
    return _binary("*", a, b)


def _neg(a: Expr) -> Expr:
    return _binary("*", a, Const(-1.0))


def _sub(a: Expr, b: Expr) -> Expr:
    return _binary("-", a, b)


def _div(a: Expr, b: Expr) -> Expr:
    return _binary("/", a, b)


# the adjoint of x in f(x) given the adjoint of f(x) (None: the derivative is zero)
_UNARY_RULES: dict[str, Callable[[Expr, Expr], Expr | None]] = {
    "neg": lambda adj, x: _neg(adj),
    "relu": lambda adj, x: _mul(adj, Unary("step", x)),
    "exp": lambda adj, x: _mul(adj, Unary("exp", x)),
    "log": lambda adj, x: _div(adj, x),
    "sqrt": lambda adj, x: _div(adj, _mul(Unary("sqrt", x), Const(2.0))),
    "sigmoid": lambda adj, x: _mul(adj, _mul(Unary("sigmoid", x), _sub(ONE, Unary("sigmoid", x)))),
    "tanh": lambda adj, x: _mul(adj, _sub(ONE, _mul(Unary("tanh", x), Unary("tanh", x)))),
    "abs": lambda adj, x: _mul(adj, _sub(Unary("step", x), Unary("step", Unary("neg", x)))),
    "step": lambda adj, x: None,
}


# the adjoints of (left, right) in `left op right` given the adjoint of the result
_BINARY_RULES: dict[str, Callable[[Expr, Expr, Expr], tuple[Expr, Expr]]] = {
    "+": lambda adj, l, r: (adj, adj),
    "-": lambda adj, l, r: (adj, _neg(adj)),
    "*": lambda adj, l, r: (_mul(adj, r), _mul(adj, l)),
    "/": lambda adj, l, r: (_div(adj, r), _neg(_div(_div(_mul(adj, l), r), r))),
}


def _child_adjoints(node: Expr, adj: Expr) -> list[tuple[Expr, Expr]]:
    """(child, its adjoint) of one expression node given the node's adjoint."""
    if isinstance(node, Unary):
        child = _UNARY_RULES[node.fn](adj, node.arg)
        return [] if child is None else [(node.arg, child)]
    if isinstance(node, Binary):
        return list(zip((node.left, node.right),
                        _BINARY_RULES[node.op](adj, node.left, node.right)))
    return []


class _Names:
    """Fresh tensor names that clash with nothing in the program."""

    def __init__(self, program: Program):
        self.taken = set(program.inputs) | {st.out for st in program.statements}

    def __call__(self, base: str) -> str:
        name, n = base, 1
        while name in self.taken:
            n += 1
            name = f"{base}_{n}"
        self.taken.add(name)
        return name


def differentiate(program: Program, loss: str, wrt: Iterable[str],
                  shapes: Mapping[str, tuple[int, ...]], constants: Iterable[str] = ()
                  ) -> Gradients:
    """The program with the gradient of the scalar `loss` with respect to each tensor of
    `wrt` appended; `shapes` holds every tensor's shape; no gradient flows through the
    tensors in `constants` (stop-gradient)."""
    wrt = list(dict.fromkeys(wrt))
    defined = {st.out: st for st in program.statements}
    for name in [loss, *wrt]:
        if name not in defined and name not in program.inputs:
            raise ProgramError(f"no tensor named {name!r} in the program")
    if program.labels_of(loss):
        raise ProgramError(f"the loss {loss}[{','.join(program.labels_of(loss))}] must be a "
                           f"scalar: sum it, e.g. {loss}_total[] = sum({loss}[...])")
    defaulted = [d for d in program.inputs.values() if d.default != 0]
    if defaulted:
        raise ProgramError(f"input {defaulted[0].name} has default {defaulted[0].default!r}: "
                           "gradients take inputs whose absent entries are 0")
    stopped = set(constants)
    active = set(wrt) - stopped         # tensors that depend on a parameter
    for st in program.statements:
        if st.out not in stopped and any(r.name in active for r in expr_refs(st.expr)):
            active.add(st.out)
    names = _Names(program)
    builder = _Backward(program, shapes, active, names)
    builder.adjoints[loss] = [ONE]
    for st in reversed(program.statements):
        if st.out in builder.adjoints and st.out in active:
            builder.statement(st)
    grads, zero = {}, []
    for name in wrt:
        if builder.adjoints.get(name):
            grads[name] = builder.total(name)
        else:
            zero.append(name)
    inputs = dict(program.inputs)
    inputs.update(builder.helper_decls)
    out = Program(inputs, list(program.statements) + builder.added,
                  [loss] + [g for g in grads.values()], program.source)
    return Gradients(out, grads, builder.helper_data, builder.added, zero)


class _Backward:
    def __init__(self, program: Program, shapes: Mapping[str, tuple[int, ...]],
                 active: set[str], names: _Names):
        self.program, self.shapes, self.active, self.names = program, shapes, active, names
        self.adjoints: dict[str, list[Expr | str]] = {}   # tensor -> shares (tensor names)
        self.added: list[Statement] = []
        self.helper_decls: dict[str, InputDecl] = {}
        self.helper_data: dict[str, object] = {}

    def emit(self, base: str, labels: tuple[str, ...], expr: Expr, agg: str = "sum",
             bounded: bool = False) -> str:
        name = self.names(base)
        self.added.append(Statement(name, labels, expr, agg, bounded=bounded))
        return name

    def total(self, tensor: str) -> str | Expr:
        """The gradient of `tensor`: its one share, or a statement summing its shares."""
        shares = self.adjoints[tensor]
        if len(shares) == 1:
            return shares[0]
        labels = self.program.labels_of(tensor)
        expr: Expr = Ref(shares[0], labels)
        for share in shares[1:]:
            expr = Binary("+", expr, Ref(share, labels))
        name = self.emit(f"d{tensor}", labels, expr)
        self.adjoints[tensor] = [name]
        return name

    def helper(self, kind: str, size: int) -> str:
        """A vector of ones or an identity matrix of `size`."""
        name = f"{kind}{size}"
        if name not in self.helper_decls:
            name = self.names(name)
            rank = 1 if kind == "ones" else 2
            self.helper_decls[name] = InputDecl(name, ("a", "b")[:rank], (size,) * rank)
            self.helper_data[name] = (np.ones(size) if kind == "ones"
                                      else sp.identity(size, format="csr"))
        return name

    def statement(self, st: Statement) -> None:
        total = self.total(st.out)
        upstream: Expr = total if isinstance(total, Const) else Ref(total, st.out_labels)
        sizes = {l: n for ref in expr_refs(st.expr)
                 for l, n in zip(ref.labels, self.shapes[ref.name])}
        if st.agg == "sum":
            seed = upstream
        else:   # max / min: to the entries equal to the result, ties split evenly
            diff = (_sub(Ref(st.out, st.out_labels), st.expr) if st.agg == "max"
                    else _sub(st.expr, Ref(st.out, st.out_labels)))
            hit = _sub(ONE, Unary("step", diff))
            count = self.emit(f"{st.out}_ties", st.out_labels, hit)
            seed = _div(_mul(upstream, hit), Ref(count, st.out_labels))
        stack = [(st.expr, seed)]
        while stack:
            node, adj = stack.pop()
            if isinstance(node, Ref):
                if node.name in self.active:
                    self.share(node, adj, st, sizes)
                continue
            for child, child_adj in _child_adjoints(node, adj):
                if any(r.name in self.active for r in expr_refs(child)):
                    stack.append((child, child_adj))

    def share(self, ref: Ref, adj: Expr, st: Statement, sizes: dict[str, int]) -> None:
        """dREF[labels] = sum over the statement's other labels of `adj`."""
        all_labels = set(sizes)
        out: list[str] = []
        factors: list[Expr] = []
        for label in ref.labels:
            if label in out:                  # a diagonal: put the gradient back on it
                fresh, n = label, 1
                while fresh in all_labels or fresh in out:
                    n += 1
                    fresh = f"{label}{n}"
                factors.append(Ref(self.helper("eye", sizes[label]), (label, fresh)))
                out.append(fresh)
            else:
                out.append(label)
        covered = set(expr_labels(adj)) | {l for f in factors for l in f.labels}
        for label in out:
            if label not in covered:          # broadcast over a label adj does not have
                factors.append(Ref(self.helper("ones", sizes[label]), (label,)))
                covered.add(label)
        repeats = prod(sizes[l] for l in all_labels - covered)
        expr = adj
        for factor in factors:
            expr = _mul(expr, factor)
        if repeats != 1:
            expr = _mul(expr, Const(float(repeats)))
        if not expr_refs(expr):               # a constant gradient of a scalar
            expr = _mul(expr, Ref(self.helper("ones", 1), ("_",)))
        name = self.emit(f"d{ref.name}_{st.out}", tuple(out), expr, bounded=st.bounded)
        self.adjoints.setdefault(ref.name, []).append(name)
