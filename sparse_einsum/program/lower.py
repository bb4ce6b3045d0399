"""Lower a Program into a DAG of binary and unary vertices.

A statement whose right side is a product of tensor references (and constants)
summed over its free labels is split along an opt_einsum contraction path, so
that sums are pushed down. Any other expression becomes one vertex per operator,
with the statement's aggregate applied at the root.
"""
from __future__ import annotations


import opt_einsum

from ..errors import ProgramError
from .dag import Dag, Operand, Vertex
from .model import Binary, Const, Expr, Program, Ref, Statement, Unary, expr_refs, fold, nodes
from .ops import BY_SYMBOL, with_constant


def lower(program: Program, shapes: dict[str, tuple[int, ...]]) -> Dag:
    """Build the DAG. `shapes` holds the shape of every input tensor."""
    dag = Dag({n: d.labels for n, d in program.inputs.items()},
              {n: shapes[n] for n in program.inputs}, program.outputs)
    for st in program.statements:
        _Lowerer(dag, st).run()
    return dag


class _Lowerer:
    def __init__(self, dag: Dag, st: Statement):
        self.dag, self.st, self.count = dag, st, 0
        self.sizes: dict[str, int] = {}
        for ref in expr_refs(st.expr):
            self.sizes.update(zip(ref.labels, dag.shapes[ref.name]))

    def run(self) -> None:
        st = self.st
        factors = _product_factors(st.expr)
        if factors is not None and st.agg == "sum":
            refs, const = factors
            if len(refs) >= 3 or (len(refs) == 2 and const == 1.0):
                self._contract(refs, const)
                return
        operand = self._lower(st.expr, root=True)
        if operand is not None:   # the root was a plain reference or folded away
            self._emit(st.out_labels, "id", st.agg, (operand,), final=True)

    # -- general expressions ------------------------------------------------
    def _lower(self, expr: Expr, root: bool) -> Operand | None:
        """Lower `expr` bottom-up (no recursion); at the root the last vertex is the
        statement's own (returns None)."""
        return fold(expr, lambda node, args: self._lower_node(node, args, node is expr and root))

    def _lower_node(self, expr: Expr, args: list, root: bool) -> Operand | None:
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

    def _node(self, operands: tuple[Operand, ...], op: str, root: bool) -> Operand | None:
        if root:
            self._emit(self.st.out_labels, op, self.st.agg, operands, final=True)
            return None
        labels = tuple(dict.fromkeys(l for o in operands for l in o.labels))
        return self._emit(labels, op, "sum", operands, final=False)

    def _emit(self, labels: tuple[str, ...], op: str, agg: str,
              operands: tuple[Operand, ...], final: bool) -> Operand:
        if final:
            name = self.st.out
        else:
            self.count += 1
            name = f"{self.st.out}~{self.count}"
        return self.dag.add(Vertex(name, labels, op, agg, operands, self.st.line),
                            tuple(self.sizes[l] for l in labels))

    # -- products: contraction path ----------------------------------------
    def _contract(self, refs: list[Ref], const: float) -> None:
        st = self.st
        operands = [Operand(r.name, r.labels) for r in refs]
        shapes = [self.dag.shapes[r.name] for r in refs]
        letters = _letters(self.sizes)
        terms = ["".join(letters[l] for l in o.labels) for o in operands]
        out_term = "".join(letters[l] for l in st.out_labels)
        path, _ = opt_einsum.contract_path(f"{','.join(terms)}->{out_term}", *shapes,
                                           shapes=True, optimize="auto")
        for step, (i, j) in enumerate(sorted(pair) for pair in path):
            right, left = operands.pop(j), operands.pop(i)
            last = step == len(path) - 1
            if last and const == 1.0:
                self._emit(st.out_labels, "mul", "sum", (left, right), final=True)
                return
            needed = set(st.out_labels).union(*(o.labels for o in operands))
            labels = tuple(l for l in dict.fromkeys(left.labels + right.labels) if l in needed)
            if last:
                labels = st.out_labels
            operands.append(self._emit(labels, "mul", "sum", (left, right), final=False))
        self._emit(st.out_labels, with_constant("mulc", const), "sum", (operands[0],), final=True)


def _letters(sizes: dict[str, int]) -> dict[str, str]:
    return {l: opt_einsum.get_symbol(k) for k, l in enumerate(sizes)}


def _product_factors(expr: Expr) -> tuple[list[Ref], float] | None:
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
