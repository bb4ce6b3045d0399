"""How values travel through the pipeline: NumPy's dtypes in and out, complex tensors as
real and imaginary parts, integers exact.

* Outputs have NumPy's dtype: the dtype the reference evaluator (NumPy) gives for the
  inputs' dtypes, or the one a caller fixes (einsum follows `np.einsum`'s rules).
* Complex inputs are split into real and imaginary parts and the program rewritten
  (`program.complex`), so that every plan computes complex results with real arithmetic.
* Engines compute in float64, which holds every integer up to 2**53 exactly. When the
  inputs and outputs are integers (or bools) and the values may exceed that, they are
  computed as BIGINT, which only a plan with scalar values (every label promoted) allows.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .errors import DataError
from .inputs import ArrayInput, Input, SourceInput
from .program.complex import split_complex
from .program.model import Program
from .reference import evaluate

MAX_EXACT = 2.0 ** 53          # doubles hold every integer up to here
MAX_INT64 = 2.0 ** 63


@dataclass(frozen=True)
class Values:
    program: Program                       # the program the engines run (real values)
    inputs: dict[str, Input]               # its inputs
    parts: dict[str, tuple[str, str | None]]   # each output: its real part, its imaginary part
    dtypes: dict[str, np.dtype]            # each output's NumPy dtype
    integral: bool                         # inputs and outputs are all integers or bools

    def arrays(self, exact_integers: bool) -> dict[str, object]:
        """The in-memory inputs as the engines take them: float64, or int64 when exact."""
        dtype = np.int64 if exact_integers else np.float64
        return {n: _cast(n, i.value, dtype) for n, i in self.inputs.items()
                if isinstance(i, ArrayInput)}

    def finish(self, outputs: dict[str, object], defaults: dict[str, float] | None = None
               ) -> dict[str, object]:
        """The outputs in NumPy's dtypes, complex parts joined (dense or scipy.sparse; a
        stored 0 is an entry where `defaults` gives an output another default)."""
        result = {}
        for name, (re, im) in self.parts.items():
            value = outputs[re] if im is None else outputs[re] + 1j * outputs[im]
            dtype = self.dtypes[name]
            if sp.issparse(value):
                # composed for this call: cast in place (a copy would double the row
                # pointer of a CSR matrix, one int64 per row)
                value.data = _finish(value.data, dtype)
                if not (defaults or {}).get(re):
                    value.eliminate_zeros()
            else:
                value = _finish(value, dtype)
            result[name] = value
        return result


def input_dtype(inp: Input) -> np.dtype:
    if isinstance(inp, SourceInput):
        return np.dtype(np.float64)          # tables, files and frames are imported as DOUBLE
    return np.asarray(inp.value.data if sp.issparse(inp.value) else inp.value).dtype


def output_dtypes(program: Program, dtypes: dict[str, np.dtype]) -> dict[str, np.dtype]:
    """NumPy's dtype of every output: the reference evaluator on one element per input."""
    # an input whose absent entries are not 0 (inf, say) holds floats
    probe = {n: np.zeros((1,) * len(d.labels), dtype=dtypes[n] if d.default == 0 else
                         np.result_type(dtypes[n], np.float64))
             for n, d in program.inputs.items()}
    try:
        env = evaluate(program, probe)
    except TypeError as exc:
        raise DataError(f"the inputs' dtypes do not fit the program: NumPy says {exc}") from None
    return {name: env[name].dtype for name in program.outputs}


def plan_values(program: Program, inputs: dict[str, Input],
                dtypes: dict[str, np.dtype] | None = None) -> Values:
    """The real program and inputs that compute `program` on `inputs`, and the outputs'
    dtypes (NumPy's, unless `dtypes` fixes them)."""
    in_dtypes = {n: input_dtype(i) for n, i in inputs.items()}
    for name, dtype in in_dtypes.items():
        if not (np.issubdtype(dtype, np.number) or dtype == np.bool_):
            raise DataError(f"input {name}: expected numbers but the data has dtype {dtype}")
    out_dtypes = dict(dtypes) if dtypes else output_dtypes(program, in_dtypes)
    integral = all(d.kind in "biu" for d in [*in_dtypes.values(), *out_dtypes.values()]) and \
        all(decl.default == 0 for decl in program.inputs.values())   # no inf in BIGINT
    complex_inputs = {n for n, d in in_dtypes.items() if d.kind == "c"}
    if not complex_inputs:
        return Values(program, inputs, {n: (n, None) for n in program.outputs}, out_dtypes,
                      integral)
    split = split_complex(program, complex_inputs)
    parts_in = {}
    for name, inp in inputs.items():
        re, im = split.parts[name]
        if im is None:
            parts_in[name] = inp
        else:
            parts_in[re] = ArrayInput(re, inp.value.real)
            parts_in[im] = ArrayInput(im, inp.value.imag)
    return Values(split.program, parts_in, {n: split.parts[n] for n in program.outputs},
                  out_dtypes, False)


def _cast(name: str, value: object, dtype: type) -> object:
    if sp.issparse(value):
        return value if value.dtype == dtype else value.astype(dtype)
    array = np.asarray(value)
    if dtype is np.int64 and array.dtype == np.uint64 and array.size and array.max() >= MAX_INT64:
        raise DataError(f"input {name}: uint64 values from 2**63 on do not fit the engines' "
                        "BIGINT")
    return array.astype(dtype, copy=False)


def _finish(value: np.ndarray, dtype: np.dtype) -> np.ndarray:
    return (value != 0) if dtype == np.bool_ else _to_dtype(value, dtype)


def _to_dtype(value: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Cast as NumPy would have computed (integers wrap around, as in NumPy)."""
    if dtype.kind in "iu" and value.dtype.kind == "f":
        value = np.rint(value).astype(np.int64)
    with np.errstate(all="ignore"):
        return value.astype(dtype, copy=False)
