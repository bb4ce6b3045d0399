"""The Python entry points: evaluate a NumPy einsum string, or run a program, in SQL."""
from __future__ import annotations

from pathlib import Path
from typing import Callable, NamedTuple

import numpy as np
import scipy.sparse as sp

from .errors import DataError
from .inputs import is_frame, numeric_array
from .plan import Plan
from .prepared import Prepared
from .program.model import Program
from .program.semirings import Semiring, semiring
from .program.subscripts import Subscripts, parse_subscripts, sublist_subscripts
from .session import Session, SessionOptions

DEFAULT_PLAN = "optimal"


def run(program: Program | str | Path, data: dict[str, object] | None = None, *,
        plan: str | Plan = DEFAULT_PLAN, backend: object = "duckdb",
        progress: Callable[[str], None] | None = None, format: str = "dense",
        **backend_options) -> dict[str, object]:
    """Run a program on `data` (name -> NumPy array, scipy.sparse matrix or data frame);
    returns its outputs: NumPy arrays, or with `format` "sparse" scipy.sparse arrays
    (CSR for matrices, COO otherwise), or with "auto" sparse where the cost model
    estimates an output under 10% full. Calls on the same program, shapes and dtypes
    with close statistics reuse the plan and SQL of an earlier call (see `reuse`)."""
    with Session(program, data, backend=backend, reuse=True, **backend_options) as session:
        return session.run(plan, progress=progress, format=format).outputs


def einsum(*operands, plan: str | Plan = DEFAULT_PLAN, backend: object = "duckdb",
           out: np.ndarray | None = None, dtype: object = None, order: str = "K",
           casting: str = "safe", optimize: object = False, format: str | None = None,
           semiring: str = "plus_times", **backend_options):
    """NumPy's einsum, computed in SQL: ``einsum("ij,jk->ik", A, B)`` or the sublist form
    ``einsum(A, [0, 1], B, [1, 2], [0, 2])``. Operands are arrays, scipy.sparse matrices,
    scalars or data frames in COO form; ellipsis and size-1 broadcasting follow NumPy.
    `out`, `dtype`, `order` and `casting` have NumPy's meaning; `optimize` is accepted
    and ignored (the plan decides the contraction order). The result is a NumPy array
    (`format` "dense"), a scipy.sparse array ("sparse": CSR for a matrix, COO for other
    ranks) or whichever the cost model's estimate suggests ("auto": sparse when the
    result is estimated under 10% full). By default, as scipy does, a scipy.sparse
    operand gives "auto" (sparse in, sparse out where the result is sparse) and dense
    operands or `out` give "dense". `semiring` ("plus_times", "min_plus", "max_plus",
    "max_times" or "or_and") makes its product and sum the einsum's, and its zero (inf,
    -inf, 0, False) the value of a scipy.sparse operand's unstored entries and of the
    result's entries a sparse result leaves out; dense operands are read as they are
    (an inf in min-plus is an absent edge). Calls with the same subscripts, shapes and
    dtypes and close statistics reuse the plan and SQL of an earlier call (see `reuse`)."""
    call = _parse_einsum(operands, dtype, casting, semiring)
    with _einsum_session(call, backend, dict(backend_options, reuse=True)) as session:
        result = session.run(plan, format=_einsum_format(format, call, out)).outputs["OUT"]
    return _einsum_result(result, out, casting, order)


def _einsum_result(result: object, out: np.ndarray | None, casting: str, order: str) -> object:
    """The result as `np.einsum` gives it: in `out`, in `order`, a scalar for rank 0."""
    if sp.issparse(result):
        if out is not None:
            raise DataError("einsum: out= takes a dense result; use format='dense'")
        return result
    if out is not None:
        if not isinstance(out, np.ndarray) or out.shape != result.shape:
            raise DataError(f"einsum: out must be an array of shape {result.shape}")
        try:
            np.copyto(out, result, casting=casting)
        except TypeError as exc:
            raise DataError(f"einsum: {exc}") from None
        return out
    result = np.asarray(result, order="C" if order.upper() == "K" else order)
    return result[()] if result.ndim == 0 else result


def einsum_session(*operands, backend: object = "duckdb", semiring: str = "plus_times",
                   **backend_options) -> Session:
    """The Session of an einsum call (inputs T0, T1, ..., output OUT), to look at its plans."""
    return _einsum_session(_parse_einsum(operands, None, "safe", semiring), backend,
                           backend_options)


class _EinsumCall(NamedTuple):
    text: str                       # the subscripts as a string
    subscripts: Subscripts
    data: dict[str, object]
    dtype: np.dtype
    sparse_operands: bool           # some operand is scipy.sparse
    semiring: Semiring


def _einsum_format(format: str | None, call: _EinsumCall, out: object) -> str:
    """The format asked for, else "auto" for sparse operands (unless `out` is given)."""
    if format is not None:
        return format
    return "auto" if call.sparse_operands and out is None else "dense"


def _parse_einsum(args: tuple, dtype: object, casting: str,
                  semiring_name: str = "plus_times") -> _EinsumCall:
    """Subscripts (string or sublists), operands as arrays, and NumPy's result dtype (a
    float for a semiring whose zero is infinite, bool for or-and)."""
    ring = semiring(semiring_name)
    if not args:
        raise DataError("einsum: expected subscripts and operands")
    if isinstance(args[0], str):
        text, operands = args[0], list(args[1:])
    elif len(args) > 1 and isinstance(args[1], (list, tuple)):
        text, operands = sublist_subscripts(args)
    else:
        raise DataError(f"einsum: the subscripts must be a string such as 'ij,jk->ik', not "
                        f"{type(args[0]).__name__}")
    values = [x if is_frame(x) else numeric_array(f"einsum {text!r}: operand {k}", x)
              for k, x in enumerate(operands)]
    if ring.boolean:
        values = [v if is_frame(v) else v.astype(bool) for v in values]
    parsed = parse_subscripts(text, [None if is_frame(v) else v.shape for v in values])
    # NumPy's result dtype depends on the operands' dtypes only: probe with scalars
    probes = [np.zeros((), np.float64 if is_frame(v) else v.dtype) for v in values]
    try:
        result_dtype = np.einsum("," * (len(probes) - 1) + "->", *probes, dtype=dtype,
                                 casting=casting).dtype
    except (TypeError, ValueError) as exc:
        raise DataError(f"einsum {text!r}: {exc}") from None
    if dtype is None and not np.isfinite(ring.zero):
        result_dtype = np.result_type(result_dtype, np.float64)
    data = {f"T{k}": _squeeze(v, axes, ring.zero)
            for k, (v, axes) in enumerate(zip(values, parsed.squeeze))}
    return _EinsumCall(text, parsed, data, result_dtype, any(sp.issparse(v) for v in values),
                       ring)


def _einsum_session(call: _EinsumCall, backend: object, options: dict) -> Session:
    return Session(call.subscripts.program(call.semiring), call.data, backend=backend,
                   options=SessionOptions(label_names=call.subscripts.label_names(),
                                          output_dtypes={"OUT": call.dtype}), **options)


def _squeeze(value: object, axes: tuple[int, ...], zero: float = 0.0) -> object:
    """The operand indexed at 0 along size-1 axes that broadcast (a scipy.sparse one's
    unstored entries `zero`)."""
    if not axes:
        return value
    if sp.issparse(value):
        dense = value.toarray() if zero == 0 else np.where(_stored(value), value.toarray(), zero)
        return np.asarray(dense).squeeze(axis=axes)
    return np.asarray(value).squeeze(axis=axes)


def _stored(matrix) -> np.ndarray:
    """Where a scipy.sparse matrix stores an entry (explicit zeros too), densely."""
    pattern = sp.csr_array(matrix, copy=True)
    pattern.data[:] = 1
    return pattern.toarray().astype(bool)


def prepare(*args, plan: str | Plan = DEFAULT_PLAN, backend: object = "duckdb",
            format: str | None = None, dtype: object = None, casting: str = "safe",
            semiring: str = "plus_times", **backend_options) -> "Prepared | PreparedEinsum":
    """Statistics, planning and SQL once, for a loop of calls on new data of the same
    shapes and dtypes (in the spirit of opt_einsum's `contract_expression`):

        step = se.prepare(program, example_data)    # then step(data) -> outputs
        product = se.prepare("ij,jk->ik", A, B)     # then product(A2, B2) -> array

    The example data's statistics choose the plan. A call does no statistics and no
    planning; it checks each input's shape and dtype (see `prepared.Prepared`). `format`
    as for `run` (default "dense") or `einsum`; `close()` the result (or use it in a
    `with` block) when done."""
    if args and not isinstance(args[0], np.ndarray) and (
            len(args) == 1 or (len(args) == 2 and isinstance(args[1], dict))):
        session = Session(args[0], args[1] if len(args) == 2 else None, backend=backend,
                          **backend_options)
        return _prepared(session, plan, format or "dense")
    call = _parse_einsum(args, dtype, casting, semiring)
    session = _einsum_session(call, backend, backend_options)
    prepared = _prepared(session, plan, _einsum_format(format, call, None))
    return PreparedEinsum(prepared, call.text, dtype, casting, semiring)


def _prepared(session: Session, plan: str | Plan, format: str) -> Prepared:
    try:
        return session.prepare(plan, format)
    except BaseException as exc:
        session.close(exc)
        raise


class PreparedEinsum:
    """An einsum planned and compiled once: ``product(*operands, out=None, order="K")``
    computes it on new operands of the same shapes and dtypes."""

    def __init__(self, prepared: Prepared, subscripts: str, dtype: object, casting: str,
                 semiring: str = "plus_times"):
        self.prepared, self.subscripts = prepared, subscripts
        self.dtype, self.casting, self.semiring = dtype, casting, semiring

    def __call__(self, *operands, out: np.ndarray | None = None, order: str = "K"):
        call = _parse_einsum((self.subscripts, *operands), self.dtype, self.casting,
                             self.semiring)
        return _einsum_result(self.prepared(call.data)["OUT"], out, self.casting, order)

    def close(self) -> None:
        self.prepared.close()

    def __enter__(self) -> "PreparedEinsum":
        return self

    def __exit__(self, kind, error, traceback) -> None:
        self.prepared.__exit__(kind, error, traceback)


def explain(program: Program | str | Path, data: dict[str, object] | None = None, *,
            top: int = 3, analyze: bool = False, sql: bool = False, backend: object = "duckdb",
            **backend_options) -> dict:
    """The `top` best plans of a program with schemas and estimated costs (a JSON-ready
    dict); with `analyze`, each plan is also run and measured; with `sql`, its SQL."""
    with Session(program, data, backend=backend, **backend_options) as session:
        return session.explain(top=top, analyze=analyze, sql=sql)
