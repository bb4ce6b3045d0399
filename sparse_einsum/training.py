"""Gradients and training of EinSum programs in the database.

`grad` runs a program extended by its backward pass (`program.autodiff`) and returns the
gradients; `train` adds a loss (`program.losses`) and optimizer updates
(`program.updates`) and runs one iteration after another: the parameters and the
optimizer's state live in database tables, and each iteration is one transaction.
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterable

import numpy as np

from .inputs import ArrayInput, bind_inputs
from .plan import Plan
from .program.autodiff import Gradients, differentiate
from .program.model import Program
from .program.parser import load_program
from .program.validate import infer_bounds
from .session import Session


def input_shapes(program: Program, data: dict[str, object]) -> dict[str, tuple[int, ...]]:
    """The shape of every tensor of `program` bound to `data` (tables: declared bounds)."""
    bound = bind_inputs(program, data)
    return infer_bounds(program, {n: i.shape for n, i in bound.items()
                                  if isinstance(i, ArrayInput)})


def backward_program(program: Program | str | Path, data: dict[str, object], loss: str,
                     wrt: Iterable[str], constants: Iterable[str] = ()) -> Gradients:
    """`program` with the gradients of `loss` with respect to `wrt` appended."""
    program = load_program(program)
    return differentiate(program, loss, wrt, input_shapes(program, data), constants)


def grad(program: Program | str | Path, data: dict[str, object] | None = None, *, loss: str,
         wrt: Iterable[str], plan: str | Plan = "optimal", backend: object = "duckdb",
         constants: Iterable[str] = (), **backend_options) -> dict[str, np.ndarray]:
    """The gradient of the scalar tensor `loss` with respect to each tensor in `wrt`
    (inputs or intermediates), as NumPy arrays, computed in SQL with the forward pass;
    no gradient flows through the tensors in `constants`."""
    data = dict(data or {})
    grads = backward_program(program, data, loss, wrt, constants)
    with Session(grads.program, {**data, **grads.helpers}, backend=backend,
                 **backend_options) as session:
        outputs = session.run(plan).outputs
        shapes = session.dag.shapes
    result = {name: np.asarray(outputs[tensor], dtype=np.float64)
              for name, tensor in grads.grads.items()}
    for name in grads.zero:
        result[name] = np.zeros(shapes[name])
    return {name: result[name] for name in dict.fromkeys(wrt)}
