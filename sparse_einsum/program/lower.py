"""Lower a Program into a DAG of binary and unary vertices.

A statement whose right side is a product of tensor references (and constants)
summed over its free labels is split along a contraction path, so that sums are
pushed down: the path a `PathChooser` gives (the optimizer's, chosen with sparsity
and decompositions; see `sparse_einsum.optimizer.order`), else opt_einsum's dense
one; a summed sum or difference of terms is split into one such sum per term. Any other expression becomes one vertex per operator, with the
statement's aggregate applied at the root.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from math import prod
from typing import Callable, Iterator, Protocol

import opt_einsum

from ..errors import ProgramError
from .dag import Dag, Operand, Vertex
from .model import (Binary, Const, Expr, Program, Ref, Statement, Unary, added_refs,
                    expr_labels, expr_refs, fold, nodes, product_factors)
from .ops import BY_SYMBOL, with_constant


# opt_einsum's format: pairs of positions in the list of operands left, each result appended
ContractionPath = list[tuple[int, int]]


class PathChooser(Protocol):
    def __call__(self, dag: Dag, operands: list[Operand], target: tuple[str, ...],
                 const: float, op: str = "mul", agg: str = "sum") -> ContractionPath:
        """The contraction path of a product of `operands` (tensors of `dag`) onto the
        labels `target`, times `const` (with `op` "add" and `agg` min or max, of a min-plus
        or max-plus product)."""


def lower(program: Program, shapes: dict[str, tuple[int, ...]],
          choose_path: PathChooser | None = None) -> Dag:
    """Build the DAG. `shapes` holds the shape of every input tensor; products of three
    or more tensors follow `choose_path` (default: opt_einsum's path)."""
    dag = Dag({n: d.labels for n, d in program.inputs.items()},
              {n: shapes[n] for n in program.inputs}, program.outputs,
              frozenset(st.out for st in program.statements if st.bounded),
              {n: d.default for n, d in program.inputs.items()})
    for st in program.statements:
        _Lowerer(dag, st, choose_path or dense_path).run()
    return dag


def dense_path(dag: Dag, operands: list[Operand], target: tuple[str, ...],
               const: float = 1.0, op: str = "mul", agg: str = "sum") -> ContractionPath:
    """opt_einsum's contraction path, from the shapes alone (the same for any semiring)."""
    sizes = {l: n for o in operands for l, n in zip(o.labels, dag.shapes[o.tensor])}
    letters = _letters(sizes)
    terms = ["".join(letters[l] for l in o.labels) for o in operands]
    out_term = "".join(letters[l] for l in target)
    path, _ = opt_einsum.contract_path(f"{','.join(terms)}->{out_term}",
                                       *(dag.shapes[o.tensor] for o in operands),
                                       shapes=True, optimize="auto")
    return [tuple(sorted(pair)) for pair in path]


def contraction(operands: list[Operand], path: ContractionPath, target: tuple[str, ...],
                const: float, name: str | None, fresh: Callable[[], str], line: int = 0,
                op: str = "mul", agg: str = "sum") -> Iterator[Vertex]:
    """The vertices of a product of `operands` along `path`, summed onto `target` and
    times `const`: each step keeps the labels later operands or the target need (sums
    pushed down); the last vertex is `name` (None: named like the others, by `fresh()`).
    With `op` "add" and `agg` min or max, a min-plus or max-plus product (const 1).
    A step's result lays out the labels of the pair's first operand first (where it is
    sparse, the other's labels are then the kernel's contiguous inner loop)."""
    operands = list(operands)
    for step, (first, second) in enumerate(path):
        i, j = sorted((first, second))
        order = operands[first].labels + operands[second].labels
        right, left = operands.pop(j), operands.pop(i)
        last = step == len(path) - 1
        if last and const == 1.0:
            yield Vertex(name or fresh(), target, op, agg, (left, right), line)
            return
        needed = set(target).union(*(o.labels for o in operands))
        labels = target if last else tuple(l for l in dict.fromkeys(order) if l in needed)
        vertex = Vertex(fresh(), labels, op, agg, (left, right), line)
        operands.append(Operand(vertex.name, vertex.labels))
        yield vertex
    yield Vertex(name or fresh(), target, with_constant("mulc", const), "sum", (operands[0],),
                 line)


@dataclass(frozen=True)
class _Target:
    """Where a lowered expression goes: its labels, its aggregate, and whether it is the
    statement's own tensor."""
    labels: tuple[str, ...]
    agg: str
    final: bool


class _Lowerer:
    def __init__(self, dag: Dag, st: Statement, choose_path: PathChooser):
        self.dag, self.st, self.count = dag, st, 0
        self.choose_path = choose_path
        self.sizes: dict[str, int] = {}
        for ref in expr_refs(st.expr):
            self.sizes.update(zip(ref.labels, dag.shapes[ref.name]))

    def run(self) -> None:
        st = self.st
        terms = _signed_terms(st.expr)
        summed = [l for l in expr_labels(st.expr) if l not in st.out_labels]
        if st.agg == "sum" and summed and len(terms) > 1:
            self._sum_of_terms(terms, summed)
        else:
            self._value(st.expr, _Target(st.out_labels, st.agg, final=True))

    def _value(self, expr: Expr, target: _Target) -> Operand:
        """Lower `expr`, aggregated onto the target's labels."""
        factors = product_factors(expr)
        if factors is not None and target.agg == "sum":
            refs, const = factors
            if len(refs) >= 3 or (len(refs) == 2 and const == 1.0):
                return self._contract(refs, const, target)
        refs = added_refs(expr) if target.agg in ("min", "max") else None
        if refs is not None and len(refs) >= 3:     # min and max distribute over +
            return self._contract(refs, 1.0, target, "add")
        operand = self._lower(expr, target)
        if isinstance(operand, _Root):
            return operand.operand
        return self._emit(target.labels, "id", target.agg, (operand,), target.final)

    def _sum_of_terms(self, terms: list[tuple[int, Expr]], summed: list[str]) -> None:
        """sum(t1 + t2 - t3) as sum(t1) + sum(t2) - sum(t3): each term contracts on its
        own (a term without a summed label counts once per index of that label)."""
        st = self.st
        const, parts = 0.0, []
        for sign, term in terms:
            if isinstance(term, Const):
                const += sign * term.value * prod(self.sizes[l] for l in summed)
                continue
            own = expr_labels(term)
            value = self._value(term, _Target(tuple(l for l in st.out_labels if l in own),
                                              "sum", final=False))
            repeats = prod(self.sizes[l] for l in summed if l not in own)
            if repeats != 1:
                value = self._emit(value.labels, with_constant("mulc", repeats), "sum",
                                   (value,), final=False)
            parts.append((sign, value))
        total = parts[0][1] if parts[0][0] > 0 else self._emit(
            parts[0][1].labels, "neg", "sum", (parts[0][1],), final=False)
        for k, (sign, value) in enumerate(parts[1:], 2):
            last = k == len(parts) and const == 0.0
            labels = st.out_labels if last else tuple(
                l for l in st.out_labels if l in total.labels or l in value.labels)
            total = self._emit(labels, "add" if sign > 0 else "sub", "sum", (total, value), last)
        if const != 0.0:
            self._emit(st.out_labels, with_constant("addc", const), "sum", (total,), final=True)
        elif len(parts) == 1:
            self._emit(st.out_labels, "id", "sum", (total,), final=True)

    # -- general expressions ------------------------------------------------
    def _lower(self, expr: Expr, root: _Target | None) -> "Operand | _Root":
        """Lower `expr` bottom-up (no recursion); at the root (a target given) the last
        vertex is the target's."""
        return fold(expr, lambda node, args: self._lower_node(node, args,
                                                              root if node is expr else None))

    def _lower_node(self, expr: Expr, args: list, root: _Target | None) -> "Operand | _Root":
        """One node, its children already lowered (`args`; a constant child lowers to None)."""
        if isinstance(expr, Ref):
            return Operand(expr.name, expr.labels)
        if isinstance(expr, Const):
            if root:
                raise ProgramError("a statement needs at least one tensor reference",
                                   source=None, line=self.st.line)
            return None
        if isinstance(expr, Unary):
            if isinstance(expr.arg, Const):
                raise ProgramError(f"{expr.fn}() of a constant: write the number instead",
                                   line=self.st.line)
            return self._node((args[0],), expr.fn, root)
        assert isinstance(expr, Binary)
        if isinstance(expr.left, Const) and isinstance(expr.right, Const):
            raise ProgramError("an operation between two constants: write the number instead",
                               line=self.st.line)
        op = BY_SYMBOL[expr.op]
        if isinstance(expr.right, Const):      # x OP c
            return self._node((args[0],), with_constant(op.with_constant[0], expr.right.value), root)
        if isinstance(expr.left, Const):       # c OP x
            return self._node((args[1],), with_constant(op.with_constant[1], expr.left.value), root)
        return self._node((args[0], args[1]), op.name, root)

    def _node(self, operands: tuple[Operand, ...], op: str, root: _Target | None
              ) -> "Operand | _Root":
        if root is not None:
            return _Root(self._emit(root.labels, op, root.agg, operands, root.final))
        labels = tuple(dict.fromkeys(l for o in operands for l in o.labels))
        return self._emit(labels, op, "sum", operands, final=False)

    def _emit(self, labels: tuple[str, ...], op: str, agg: str,
              operands: tuple[Operand, ...], final: bool) -> Operand:
        name = self.st.out if final else self._fresh()
        return self._add(Vertex(name, labels, op, agg, operands, self.st.line))

    def _fresh(self) -> str:
        self.count += 1
        return f"{self.st.out}~{self.count}"

    def _add(self, vertex: Vertex) -> Operand:
        """Add `vertex`; an intermediate the DAG computes already is read from there."""
        if vertex.name != self.st.out and (same := self.dag.computed(vertex)) is not None:
            return same
        return self.dag.add(vertex, tuple(self.sizes[l] for l in vertex.labels))

    # -- products: contraction path ----------------------------------------
    def _contract(self, refs: list[Ref], const: float, target: _Target, op: str = "mul"
                  ) -> Operand:
        operands = [Operand(r.name, r.labels) for r in refs]
        path = self.choose_path(self.dag, operands, target.labels, const, op, target.agg) \
            if len(operands) > 2 else [(0, 1)]
        name = self.st.out if target.final else None
        added: dict[str, Operand] = {}     # a step's name -> its tensor (or the DAG's same one)
        for vertex in contraction(operands, path, target.labels, const, name, self._fresh,
                                  self.st.line, op, target.agg):
            vertex = replace(vertex, operands=tuple(added.get(o.tensor, o)
                                                    for o in vertex.operands))
            result = added[vertex.name] = self._add(vertex)
        return result


@dataclass(frozen=True)
class _Root:
    """The target's vertex, emitted by the lowering of an expression's root."""
    operand: Operand


def _signed_terms(expr: Expr) -> list[tuple[int, Expr]]:
    """The terms of a sum/difference at the top of an expression, with their signs, left
    to right (no recursion: sums may be long)."""
    terms, stack = [], [(1, expr)]
    while stack:
        sign, node = stack.pop()
        if isinstance(node, Binary) and node.op in "+-":
            stack.append((-sign if node.op == "-" else sign, node.right))
            stack.append((sign, node.left))
        else:
            terms.append((sign, node))
    return terms


def _letters(sizes: dict[str, int]) -> dict[str, str]:
    return {l: opt_einsum.get_symbol(k) for k, l in enumerate(sizes)}
