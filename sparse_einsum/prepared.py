"""A plan compiled once and run on new data, as opt_einsum's `contract_expression` is
a contraction path found once: for loops that call one program many times.

    with Session(program, example_data) as session:
        step = session.prepare()           # statistics, planning and SQL: once
        for data in batches:
            outputs = step(data)           # the compiled statements on `data`

A call checks each input against the data the plan was prepared with, with a couple of
vectorised passes over it: the same shape and dtype; no NaN or inf where the example had none (the SQL
propagates them only where the example had them); for integer programs computed in
doubles, no larger values (exact BIGINT arithmetic would be needed). Each mismatch is
a one-line DataError. Calls on one object run one at a time (their tables share names).
"""
from __future__ import annotations

import threading
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from .errors import DataError, PlanError
from .executor import execute
from .inputs import ArrayInput, bind_inputs
from .reuse import all_finite, max_abs
from .values import input_dtype, plan_values

if TYPE_CHECKING:
    from .session import Session


class Prepared:
    """A session's plan compiled for its inputs' shapes and dtypes; ``prepared(data)``
    runs it on `data` (input name -> array or scipy.sparse matrix) and returns the
    outputs as `Session.run` does (`format` as there)."""

    def __init__(self, session: "Session", plan: object = "optimal", format: str = "dense"):
        for name, inp in session.bound.items():
            if not isinstance(inp, ArrayInput):
                raise PlanError(f"prepare: input {name} is read from {inp.describe()}; a "
                                "prepared plan takes its inputs as arrays")
        self.session = session
        self.plan = session.plan(plan)
        self.sparse = session.sparse_parts(format)
        session.check_output_memory(self.sparse)
        self.compiled = session.compile(self.plan)
        self.exact = session.exact_integers
        limited = session.values.integral and not self.exact
        self.defaults = session.dag.defaults()
        self.expected = {name: (inp.shape, input_dtype(inp),
                                all_finite(_values(inp.value, self.defaults.get(name, 0.0))),
                                max_abs(_values(inp.value)) if limited else None)
                         for name, inp in session.bound.items()}
        self._lock = threading.Lock()

    def __call__(self, data: dict[str, object]) -> dict[str, object]:
        bound = bind_inputs(self.session.program, data)
        for name, (shape, dtype, finite, largest) in self.expected.items():
            inp = bound.get(name)
            if not isinstance(inp, ArrayInput):
                raise DataError(f"input {name}: no array given (the prepared plan takes "
                                f"{', '.join(self.expected)})")
            if inp.shape != shape or input_dtype(inp) != dtype:
                raise DataError(f"input {name}: shape {inp.shape} and dtype {input_dtype(inp)}, "
                                f"but the plan was prepared for shape {shape} and dtype {dtype}")
            values = _values(inp.value, self.defaults.get(name, 0.0))
            if finite and not all_finite(values):
                raise DataError(f"input {name} holds NaN or inf, but the plan was prepared "
                                "for finite values: prepare it with data holding them")
            if largest is not None and max_abs(values) > largest:
                raise DataError(f"input {name} holds integers up to {max_abs(values):g}, "
                                f"beyond the {largest:g} the plan was prepared for: prepare it "
                                "with data this large")
        values = plan_values(self.session.program, bound, self.session.values.dtypes)
        with self._lock:
            result = execute(self.compiled, values.arrays(self.exact), self.session.backend,
                             sparse=self.sparse)
        return values.finish(result.outputs, self.defaults)

    def close(self) -> None:
        """Close the session it runs in."""
        self.session.close()

    def __enter__(self) -> "Prepared":
        return self

    def __exit__(self, kind, error, traceback) -> None:
        self.session.close(error)


def _values(x: object, default: float = 0.0) -> np.ndarray:
    """The values of `x` (those other than its default: inf absent, say)."""
    values = x.data if sp.issparse(x) else np.asarray(x)
    return values if default == 0 else values[values != default]
