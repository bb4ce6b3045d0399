"""The semirings an einsum computes over, as rows of one table.

A semiring's product joins the operands' entries (`product`, an operator of the
language), its sum aggregates them over the summed labels (`sum`, an aggregate), and its
zero is the value of an absent entry (an unstored entry of a scipy.sparse operand): the
product's annihilator and the sum's identity, so that absent tuples are never formed.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..errors import DataError

INF = float("inf")


@dataclass(frozen=True)
class Semiring:
    name: str
    product: str                 # the language's binary operator: "*" or "+"
    sum: str                     # the aggregate: sum | min | max
    zero: float                  # absent entries; the sum's identity, the product's annihilator
    one: float                   # the product's identity
    numpy_product: Callable      # NumPy's product and sum (a ufunc: its reduce aggregates)
    numpy_sum: np.ufunc
    boolean: bool = False        # operands are read as booleans, the result is bool


SEMIRINGS: dict[str, Semiring] = {s.name: s for s in (
    Semiring("plus_times", "*", "sum", 0.0, 1.0, np.multiply, np.add),
    Semiring("min_plus", "+", "min", INF, 0.0, np.add, np.minimum),
    Semiring("max_plus", "+", "max", -INF, 0.0, np.add, np.maximum),
    Semiring("max_times", "*", "max", 0.0, 1.0, np.multiply, np.maximum),
    Semiring("or_and", "*", "max", 0.0, 1.0, np.logical_and, np.logical_or, boolean=True),
)}


def semiring(name: str) -> Semiring:
    """The registered semiring `name`; a one-line DataError listing them otherwise."""
    if name not in SEMIRINGS:
        raise DataError(f"einsum: unknown semiring {name!r}: use one of {', '.join(SEMIRINGS)}")
    return SEMIRINGS[name]
