"""The Python entry points: evaluate a NumPy einsum string, or run a program, in SQL."""
from __future__ import annotations

from pathlib import Path
from typing import Callable

import numpy as np
import scipy.sparse as sp

from .errors import DataError
from .inputs import is_frame, numeric_array
from .plan import Plan
from .program.model import Program
from .program.subscripts import parse_subscripts
from .session import Session

DEFAULT_PLAN = "optimal"


def run(program: Program | str | Path, data: dict[str, object] | None = None, *,
        plan: str | Plan = DEFAULT_PLAN, backend: object = "duckdb",
        progress: Callable[[str], None] | None = None, **backend_options) -> dict[str, np.ndarray]:
    """Run a program on `data` (name -> NumPy array, scipy.sparse matrix or data frame);
    returns its outputs."""
    with Session(program, data, backend=backend, **backend_options) as session:
        return session.run(plan, progress=progress).outputs


def einsum(subscripts: str, *operands, plan: str | Plan = DEFAULT_PLAN,
           backend: object = "duckdb", **backend_options) -> np.ndarray:
    """Evaluate a NumPy einsum string in SQL; operands are arrays, scipy.sparse or scalars."""
    with einsum_session(subscripts, *operands, backend=backend, **backend_options) as session:
        return session.run(plan).outputs["OUT"]


def einsum_session(subscripts: str, *operands, backend: object = "duckdb",
                   **backend_options) -> Session:
    """The Session of a NumPy einsum call: inputs T0, T1, ... and the output OUT."""
    parsed = parse_subscripts(subscripts, len(operands))
    data = {}
    for k, (term, x) in enumerate(zip(parsed.terms, operands)):
        if is_frame(x):                  # COO rows: one key column per label (checked on binding)
            data[f"T{k}"] = x
            continue
        value = numeric_array(f"einsum {subscripts!r}: operand {k}", x)
        value = value if sp.issparse(value) else np.asarray(value, dtype=np.float64)
        if value.ndim != len(term):
            raise DataError(f"einsum {subscripts!r}: operand {k} has {value.ndim} dimensions "
                            f"but its term {term!r} has {len(term)} labels")
        data[f"T{k}"] = value
    return Session(parsed.program(), data, backend=backend, label_names=parsed.label_names(),
                   **backend_options)


def explain(program: Program | str | Path, data: dict[str, object] | None = None, *,
            top: int = 3, analyze: bool = False, sql: bool = False, backend: object = "duckdb",
            **backend_options) -> dict:
    """The `top` best plans of a program with schemas and estimated costs (a JSON-ready
    dict); with `analyze`, each plan is also run and measured; with `sql`, its SQL."""
    with Session(program, data, backend=backend, **backend_options) as session:
        return session.explain(top=top, analyze=analyze, sql=sql)
