"""Well-formedness checks of a Program and shape inference from the input data."""
from __future__ import annotations

from typing import Callable, Mapping, NoReturn, Sequence

from sparse_einsum.errors import DataError, ProgramError
from sparse_einsum.program.model import (
    AGGREGATES, BINARY_OPS, UNARY_FUNCTIONS, Binary, Const, Expr, Program, Ref, Statement, Unary,
    expr_labels, expr_refs, nodes,
)

# label, first ref, its size, conflicting ref, its size
_Conflict = Callable[[str, Ref, int, Ref, int], NoReturn]


def _statement_sizes(st: Statement, sizes: Mapping[str, Sequence[int | None]],
                     conflict: _Conflict) -> tuple[int | None, ...]:
    """Sizes of the output axes of `st` from its references; `conflict` on a disagreement."""
    seen: dict[str, tuple[int, Ref]] = {}
    for ref in expr_refs(st.expr):
        for label, n in zip(ref.labels, sizes[ref.name]):
            if n is None:
                continue
            if label in seen and seen[label][0] != n:
                conflict(label, seen[label][1], seen[label][0], ref, n)
            seen.setdefault(label, (n, ref))
    return tuple(seen[label][0] if label in seen else None for label in st.out_labels)


def _where(line: int, index: int) -> str:
    return f"line {line}" if line else f"statement {index + 1}"


def _check_expr(expr: Expr, fail: Callable[[str], NoReturn]) -> None:
    for node in nodes(expr):
        if isinstance(node, Unary) and node.fn not in UNARY_FUNCTIONS:
            fail(f"unknown function '{node.fn}'")
        elif isinstance(node, Binary) and node.op not in BINARY_OPS:
            fail(f"unknown operator '{node.op}'")
        elif not isinstance(node, (Ref, Const, Unary, Binary)):
            fail(f"expected an expression but found {node!r}")


def validate_program(program: Program) -> None:
    """Raise ProgramError at the first problem: undefined or later-defined tensors, cycles,
    rank mismatches, free output labels, disagreeing bounds, constant-only statements,
    malformed declarations and unknown outputs."""
    src = program.source

    def fail(message: str, line: int = 0, column: int = 0) -> NoReturn:
        raise ProgramError(message, source=src, line=line or None, column=column or None)

    labels_of: dict[str, tuple[str, ...]] = {}
    line_of: dict[str, int] = {}
    index_of: dict[str, int] = {}        # statement index of the defining statement
    sizes: dict[str, tuple[int | None, ...]] = {}
    for name, decl in program.inputs.items():
        if name != decl.name:
            fail(f"input declared under key '{name}' is named '{decl.name}'", decl.line)
        if len(set(decl.labels)) != len(decl.labels):
            fail(f"labels of input {name}[{','.join(decl.labels)}] repeat", decl.line)
        if len(decl.bounds) != len(decl.labels) or any(
                b is not None and (not isinstance(b, int) or b <= 0) for b in decl.bounds):
            fail(f"input {name} has bounds {decl.bounds}: expected one positive integer or None "
                 f"per label {decl.labels}", decl.line)
        if decl.source is not None and len(decl.source.keys) != len(decl.labels):
            fail(f"input {name} has {len(decl.labels)} labels but its table source "
                 f"{decl.source.table} lists {len(decl.source.keys)} key columns", decl.line)
        if not isinstance(decl.default, (int, float)) or decl.default != decl.default:
            fail(f"input {name} has default {decl.default!r}: expected a number, inf or -inf",
                 decl.line)
        labels_of[name], line_of[name], sizes[name] = decl.labels, decl.line, decl.bounds
    for k, st in enumerate(program.statements):
        if st.out in line_of:
            kind = "declared as an input" if st.out in program.inputs else "defined"
            at = f" on {_where(line_of[st.out], index_of[st.out])}" if st.out in index_of else (
                f" on line {line_of[st.out]}" if line_of[st.out] else "")
            fail(f"tensor '{st.out}' is already {kind}{at}", st.line)
        labels_of[st.out], line_of[st.out], index_of[st.out] = st.out_labels, st.line, k

    for k, st in enumerate(program.statements):
        if st.agg not in AGGREGATES:
            fail(f"expected an aggregate ({', '.join(AGGREGATES)}) but found '{st.agg}'", st.line)
        _check_expr(st.expr, lambda message: fail(message, st.line))
        if len(set(st.out_labels)) != len(st.out_labels):
            fail(f"labels of the left-hand side {st.out}[{','.join(st.out_labels)}] repeat", st.line)
        refs = expr_refs(st.expr)
        if not refs:
            fail(f"the right-hand side of {st.out} has no tensor reference (a constant-only "
                 f"statement)", st.line)
        for ref in refs:
            if ref.name not in line_of:
                fail(f"undefined tensor '{ref.name}'", ref.line, ref.column)
            if index_of.get(ref.name, -1) >= k:
                message = (f"tensor '{ref.name}' is used before it is defined on "
                           f"{_where(line_of[ref.name], index_of[ref.name])}")
                cycle = _cycle(program, st.out, ref.name)
                if cycle:
                    message += f" (dependency cycle {' -> '.join(cycle)})"
                fail(message, ref.line or st.line, ref.column)
            want = labels_of[ref.name]
            if len(ref.labels) != len(want):
                fail(f"{ref.name} has {len(want)} labels [{','.join(want)}] but is used with "
                     f"{len(ref.labels)}: {ref}", ref.line or st.line, ref.column)
        present = expr_labels(st.expr)
        for label in st.out_labels:
            if label not in present:
                fail(f"label '{label}' of {st.out}[{','.join(st.out_labels)}] appears in no tensor "
                     f"reference of the right-hand side", st.line)

        def conflict(label: str, r1: Ref, n1: int, r2: Ref, n2: int) -> NoReturn:
            fail(f"label '{label}' has bound {n1} in {r1} but bound {n2} in {r2}",
                 r2.line or st.line, r2.column)
        sizes[st.out] = _statement_sizes(st, sizes, conflict)

    if not program.outputs:
        fail("the program has no output")
    for name in program.outputs:
        if name not in line_of:
            fail(f"output '{name}' is not a declared input or a defined tensor")


def _cycle(program: Program, out: str, used: str) -> list[str]:
    """The dependency cycle closed by `out` using `used` (each tensor depends on the next)."""
    import networkx as nx

    graph = nx.DiGraph()         # edge a -> b: a is used to compute b
    graph.add_edges_from((ref.name, st.out) for st in program.statements
                         for ref in expr_refs(st.expr))
    if not nx.has_path(graph, out, used):
        return []
    return [out] + list(reversed(nx.shortest_path(graph, out, used)))


def infer_bounds(program: Program, shapes: Mapping[str, Sequence[int]]) -> dict[str, tuple[int, ...]]:
    """Every tensor's shape from the shapes of the input data.

    Inputs bound to a table may be left out of `shapes` when every label has a declared
    bound. Raises DataError when the data disagrees with the program.
    """
    validate_program(program)
    prefix = f"{program.source}: " if program.source else ""
    for name in shapes:
        if name not in program.inputs:
            raise DataError(f"{prefix}data given for '{name}', which is not an input of the program")
    sizes: dict[str, tuple[int, ...]] = {}
    for name, decl in program.inputs.items():
        if name not in shapes:
            if None in decl.bounds:
                raise DataError(f"{prefix}no data for input '{name}' and its declaration does not "
                                f"bound every label")
            sizes[name] = tuple(b for b in decl.bounds if b is not None)
            continue
        shape = tuple(int(n) for n in shapes[name])
        if len(shape) != len(decl.labels):
            raise DataError(f"{prefix}input '{name}' is declared with rank {len(decl.labels)} "
                            f"[{','.join(decl.labels)}] but its data has rank {len(shape)} "
                            f"(shape {shape})")
        for label, bound, n in zip(decl.labels, decl.bounds, shape):
            if bound is not None and bound != n:
                raise DataError(f"{prefix}input '{name}': label '{label}' is declared with bound "
                                f"{bound} but the data has size {n}")
        sizes[name] = shape
    for k, st in enumerate(program.statements):
        def conflict(label: str, r1: Ref, n1: int, r2: Ref, n2: int) -> NoReturn:
            raise DataError(f"{prefix}{_where(st.line, k)}: label '{label}' has size {n1} in "
                            f"{r1.name} but size {n2} in {r2.name} ({st.text or st})")
        sizes[st.out] = tuple(n or 0 for n in _statement_sizes(st, sizes, conflict))
        if st.agg != "sum":
            empty = sorted(label for ref in expr_refs(st.expr)
                           for label, n in zip(ref.labels, sizes[ref.name])
                           if n == 0 and label not in st.out_labels)
            if empty:
                raise DataError(f"{prefix}{_where(st.line, k)}: {st.agg} over label "
                                f"'{empty[0]}' of size 0 has no identity, as in NumPy "
                                f"({st.text or st})")
    return sizes
