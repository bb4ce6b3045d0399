"""The Python (arrow) UDF of each kernel-use kind, one row per kind: the function a
backend that registers Python UDFs (DuckDB, Spark) calls, and its signature in SQL types
(DuckDB's spelling; each backend maps them to its own). A new kind is one more row."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from ..kernels.arrow_kernels import (aggregate_function, kernel_function, sparsify_function,
                                     split_function, stack_function)
from ..sql.steps import KernelUse

if TYPE_CHECKING:
    from .base import Backend

DOUBLE, LIST, LISTS, BIGINT = "DOUBLE", "DOUBLE[]", "DOUBLE[][]", "BIGINT"


def value_type(is_list: bool) -> str:
    return LIST if is_list else DOUBLE


@dataclass(frozen=True)
class UdfKind:
    """function(use, backend): the arrow function over batches (the backend fetches
    constant operands); params(use) and returns(use): its SQL types."""
    function: Callable[[KernelUse, "Backend"], Callable]
    params: Callable[[KernelUse], tuple[str, ...]]
    returns: Callable[[KernelUse], str]


def _kernel(use: KernelUse, backend: "Backend") -> Callable:
    apply = kernel_function(use.spec, use.args_are_lists, use.returns_list,
                            backend.kernel_constants(use), use.sparse)
    # the engines read the UDF's arity from its signature
    return (lambda a: apply(a)) if len(use.args_are_lists) == 1 else (lambda a, b: apply(a, b))


UDF_KINDS: dict[str, UdfKind] = {
    "kernel": UdfKind(_kernel, lambda u: tuple(map(value_type, u.args_are_lists)),
                      lambda u: value_type(u.returns_list)),
    "aggregate": UdfKind(lambda u, _: aggregate_function(u.agg, u.expected_count),
                         lambda u: (LISTS, BIGINT), lambda u: LIST),
    "sparsify": UdfKind(lambda u, _: sparsify_function, lambda u: (LIST,), lambda u: LIST),
    "split": UdfKind(lambda u, _: split_function(u.spec), lambda u: (LIST,), lambda u: LISTS),
    "stack": UdfKind(
        lambda u, _: stack_function(u.spec, u.args_are_lists[0]),
        lambda u: (f"STRUCT(p BIGINT, v {value_type(u.args_are_lists[0])})[]",),
        lambda u: LIST),
}


def udf(use: KernelUse, backend: "Backend") -> tuple[Callable, tuple[str, ...], str]:
    """The function `use` names, its parameter types and its return type."""
    row = UDF_KINDS.get(use.kind)
    if row is None:
        raise ValueError(f"kernel {use.name}: no UDF for kind {use.kind!r}")
    return row.function(use, backend), row.params(use), row.returns(use)
