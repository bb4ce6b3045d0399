"""Chains of products fused into one product, so that one contraction order spans them.

    NX[i,f] = N[i,j] * X[j,f]            Z[i,h] = N[i,j] * X[j,f] * W1[f,h]
    Z[i,h]  = NX[i,f] * W1[f,h]    ->

A statement that is a sum of a product, read by exactly one other such statement and not
an output, is substituted into it (the same for a min or max of a sum, a min-plus or
max-plus product, into another of the same aggregate: min and max distribute over `+`,
the FAQ rewrite) (its summed labels renamed apart; at most MAX_FACTORS
tensors in all), so that the lowering chooses the order of all the factors together:
above, X * W1 first and the sparse N last (what a GCN written in PyTorch does by hand),
where the program's order would multiply N by X's 767 columns. The sum is the same; only
its rounding may differ, and inf or NaN could turn up differently, so only tensors that
are finite are fused.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import Callable

from .model import (Binary, Expr, Program, Ref, Statement, Unary, added_refs, expr_refs,
                    fold, nodes, product_factors)
from .ops import BY_SYMBOL, keeps_finite


# fused products stay within this many tensors, the products whose contraction trees the
# optimizer ranks exhaustively (optimizer.order.ENUMERATE); beyond, its greedy path could
# do worse than the order written
MAX_FACTORS = 4


def fuse_products(program: Program, finite_input: Callable[[str], bool]
                  ) -> tuple[Program, list[tuple[str, str]]]:
    """`program` with every product read once by another product substituted into it, and
    the (statement, statement fused into) pairs; `finite_input(name)` says whether an
    input holds no inf or NaN."""
    uses = Counter(ref.name for st in program.statements for ref in expr_refs(st.expr))
    if not any(uses[st.out] == 1 and st.out not in program.outputs
               and _kind(st) is not None for st in program.statements):
        return program, []          # nothing to fuse: no statistics needed
    finite = _finite_tensors(program, finite_input)
    statements: list[Statement | None] = list(program.statements)
    fused: list[tuple[str, str]] = []
    for k, producer in enumerate(statements):
        if (producer.out in program.outputs or uses[producer.out] != 1
                or len(set(producer.out_labels)) < len(producer.out_labels)
                or not _fusable(producer, finite)):
            continue
        for n in range(k + 1, len(statements)):
            consumer = statements[n]
            if any(ref.name == producer.out for ref in expr_refs(consumer.expr)):
                if _fusable(consumer, finite) and _kind(consumer) == _kind(producer) \
                        and _factors(producer) + _factors(consumer) <= MAX_FACTORS + 1:
                    statements[n] = _substitute(consumer, producer)
                    statements[k] = None
                    fused.append((producer.out, consumer.out))
                break
    if not fused:
        return program, fused
    return replace(program, statements=[st for st in statements if st is not None]), fused


def _kind(st: Statement) -> tuple[str, str] | None:
    """("sum", "*") for a sum of a product, (min or max, "+") for a min or max of a sum of
    references; None for any other statement."""
    if st.agg == "sum":
        return ("sum", "*") if product_factors(st.expr) is not None else None
    if st.agg in ("min", "max") and added_refs(st.expr) is not None:
        return st.agg, "+"
    return None


def _fusable(st: Statement, finite: set[str]) -> bool:
    """A sum of a product, or a min or max of a sum, of finite tensors."""
    return _kind(st) is not None and all(r.name in finite for r in expr_refs(st.expr))


def _factors(st: Statement) -> int:
    return len(expr_refs(st.expr))


def _substitute(consumer: Statement, producer: Statement) -> Statement:
    """The consumer with its reference to the producer's tensor replaced by the producer's
    product, labels renamed: the producer's output labels to the reference's, its summed
    labels to ones the consumer does not use."""
    (ref,) = [r for r in expr_refs(consumer.expr) if r.name == producer.out]
    rename = dict(zip(producer.out_labels, ref.labels))
    taken = {l for r in expr_refs(consumer.expr) for l in r.labels} | set(consumer.out_labels)
    for r in expr_refs(producer.expr):
        for label in r.labels:
            if label not in rename:
                rename[label] = _fresh(label, taken)
                taken.add(rename[label])
    inlined = _map_refs(producer.expr, lambda r: Ref(r.name, tuple(rename[l] for l in r.labels),
                                                      r.line, r.column))
    return replace(consumer, expr=_map_refs(consumer.expr,
                                            lambda r: inlined if r is ref else r))


def _fresh(label: str, taken: set[str]) -> str:
    """`label`, or `label` numbered, whichever is not taken."""
    n = 1
    found = label
    while found in taken:
        n += 1
        found = f"{label}{n}"
    return found


def _map_refs(expr: Expr, f: Callable[[Ref], Expr]) -> Expr:
    """`expr` (a product) with every reference r replaced by f(r)."""
    return fold(expr, lambda node, args: f(node) if isinstance(node, Ref) else
                Binary(node.op, *args) if isinstance(node, Binary) else node)


def _finite_tensors(program: Program, finite_input: Callable[[str], bool]) -> set[str]:
    """Inputs without inf or NaN, and the statements computing from them with operations
    that keep finite values finite, or bounded ones (`Statement.bounded`: the softmax
    loss and the gradients it sends, finite by construction)."""
    finite = {name for name in program.inputs if finite_input(name)}
    for st in program.statements:
        if all(_keeps_finite(node, finite, st.bounded) for node in nodes(st.expr)):
            finite.add(st.out)
    return finite


def _keeps_finite(node: Expr, finite: set[str], bounded: bool) -> bool:
    if isinstance(node, Ref):
        return node.name in finite
    if isinstance(node, Unary):
        return bounded or keeps_finite(node.fn)
    if isinstance(node, Binary):
        return bounded or keeps_finite(BY_SYMBOL[node.op].name)
    return True
