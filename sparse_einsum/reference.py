"""The NumPy reference evaluator: runs a Program directly on dense arrays.

It is the oracle of every differential test: it follows the statement text, not
the lowered DAG, so it also checks the lowering.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .program.model import Binary, Const, Expr, Program, Ref, Unary, fold
from .program.ops import AGGREGATES, BY_SYMBOL, numpy_function
from .program.semirings import Semiring


def evaluate(program: Program, data: dict[str, object]) -> dict[str, np.ndarray]:
    """Every tensor of the program (inputs and statement results) as a dense array."""
    env = {name: _dense(data[name], decl.default) for name, decl in program.inputs.items()}
    with np.errstate(all="ignore"):
        for st in program.statements:
            value, labels = _eval(st.expr, env)
            agg_axes = tuple(k for k, l in enumerate(labels) if l not in st.out_labels)
            if agg_axes:
                value = AGGREGATES[st.agg].numpy(value, axis=agg_axes)
            kept = [l for l in labels if l in st.out_labels]
            env[st.out] = np.array(np.transpose(value, [kept.index(l) for l in st.out_labels]))
    return env


def _dense(x: object, default: float = 0.0) -> np.ndarray:
    """The array in its own dtype (NumPy's arithmetic on it is the oracle's); a
    scipy.sparse matrix's unstored entries hold `default`."""
    if not sp.issparse(x):
        return np.asarray(x)
    if default == 0:
        return x.toarray()
    coo = sp.coo_array(x)
    coo.sum_duplicates()
    dense = np.full(coo.shape, default, dtype=np.result_type(coo.dtype, np.float64))
    dense[coo.coords] = coo.data
    return dense


def _eval(expr: Expr, env: dict[str, np.ndarray]) -> tuple[np.ndarray | float, list[str]]:
    """Value of an expression and its labels (one axis per label, broadcastable)."""
    return fold(expr, lambda node, args: _eval_node(node, args, env))


def _eval_node(expr: Expr, args: list, env: dict[str, np.ndarray]
               ) -> tuple[np.ndarray | float, list[str]]:
    if isinstance(expr, Const):
        return expr.value, []
    if isinstance(expr, Ref):
        labels = list(dict.fromkeys(expr.labels))
        value = np.einsum(env[expr.name], [labels.index(l) for l in expr.labels],
                          list(range(len(labels))))
        return value, labels
    if isinstance(expr, Unary):
        value, labels = args[0]
        return numpy_function(expr.fn)(value), labels
    assert isinstance(expr, Binary)
    (a, la), (b, lb) = args
    labels = list(dict.fromkeys(la + lb))
    return BY_SYMBOL[expr.op].numpy(_align(a, la, labels), _align(b, lb, labels)), labels


def _align(value, labels: list[str], target: list[str]):
    """Transpose and expand `value` so that its axes follow `target`."""
    if not labels:
        return value
    order = sorted(range(len(labels)), key=lambda k: target.index(labels[k]))
    value = np.transpose(value, order)
    present = [labels[k] for k in order]
    shape = [value.shape[present.index(l)] if l in present else 1 for l in target]
    return value.reshape(shape)


def semiring_einsum(subscripts: str, operands: list[object], semiring: Semiring) -> np.ndarray:
    """An einsum with explicit output (``"ij,jk->ik"``) over `semiring`, densely: every
    operand (a scipy.sparse one's unstored entries the semiring's zero) spread over all
    labels, combined by the semiring's product and reduced by its sum."""
    terms, output = subscripts.replace(" ", "").split("->")
    labels = list(dict.fromkeys(terms.replace(",", "")))
    value = None
    for term, x in zip(terms.split(","), operands):
        dense = _dense(x, semiring.zero)
        if semiring.boolean:
            dense = dense.astype(bool)
        own = list(dict.fromkeys(term))
        dense = np.einsum(dense, [own.index(l) for l in term], list(range(len(own))))
        aligned = _align(dense, own, labels)
        with np.errstate(invalid="ignore"):              # inf + -inf is NaN, as NumPy's
            value = aligned if value is None else semiring.numpy_product(value, aligned)
    summed = tuple(k for k, l in enumerate(labels) if l not in output)
    if summed:
        value = semiring.numpy_sum.reduce(value, axis=summed)
    kept = [l for l in labels if l in output]
    return np.transpose(value, [kept.index(l) for l in output])
