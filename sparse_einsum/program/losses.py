"""Losses as EinSum statements appended to a program.

A loss is named by a call, ``softmax_cross_entropy(Z, y, mask)`` or ``mse(P, T)``: its
first argument is a tensor of the program, the others name data (integer class labels,
a training mask, a target). `add_loss` appends the loss's statements and returns the
data its new inputs need; a plain tensor name is a loss the program defines itself.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Callable

import numpy as np
import scipy.sparse as sp

from ..errors import DataError, ProgramError
from .model import Program
from .parser import parse_program

_CALL = re.compile(r"^\s*([A-Za-z_]\w*)\s*\((.*)\)\s*$")


@dataclass
class LossProgram:
    program: Program                # with the loss's statements
    loss: str                       # the scalar tensor
    data: dict[str, object]         # the loss's own inputs
    constants: list[str] = field(default_factory=list)   # no gradient through these
    metrics: list[str] = field(default_factory=list)     # scalar tensors reported per epoch


def _vector(data: dict, name: str, what: str) -> np.ndarray:
    if name not in data:
        raise DataError(f"loss: no data named {name!r} for the {what}")
    return np.asarray(data[name]).reshape(-1)


def _softmax_cross_entropy(program: Program, shapes: dict, data: dict, args: list[str]
                           ) -> LossProgram:
    """Mean over the rows in the mask of -log softmax(Z[i,:])[y_i]; also the training
    accuracy (a row counts when its label's logit is the row's maximum)."""
    if len(args) != 3:
        raise ProgramError("softmax_cross_entropy takes (logits, labels, mask)")
    logits, labels_name, mask_name = args
    rows, classes = _matrix_shape(shapes, logits, "softmax_cross_entropy")
    labels = _vector(data, labels_name, "class labels")
    mask = _vector(data, mask_name, "training mask").astype(bool)
    if len(labels) != rows or len(mask) != rows:
        raise DataError(f"loss: {labels_name} and {mask_name} need one entry per row of "
                        f"{logits} ({rows})")
    if not mask.any():
        raise DataError(f"loss: the training mask {mask_name} selects no row")
    picked = labels[mask].astype(np.int64)
    if picked.min() < 0 or picked.max() >= classes or not np.array_equal(picked, labels[mask]):
        raise DataError(f"loss: the labels of the training rows must be integers in "
                        f"0..{classes - 1}")
    onehot = sp.csr_matrix((np.ones(len(picked)), (np.flatnonzero(mask), picked)),
                           shape=(rows, classes))
    text = f"""
        input ce_Y[i:{rows}, c:{classes}]
        input ce_w[i:{rows}]
        ce_M[i] = max({logits}[i,c])
        ce_S[i] = exp({logits}[i,c] - ce_M[i])
        ce_P[i] = {logits}[i,c] * ce_Y[i,c]
        loss[] = (log(ce_S[i]) + ce_M[i] - ce_P[i]) * ce_w[i]
        accuracy[] = ce_Y[i,c] * (1 - step(ce_M[i] - {logits}[i,c])) * ce_w[i]
        """
    weights = mask / mask.sum()
    # exp(Z - max Z) <= 1, so ce_S >= 1 and log(ce_S), 1/ce_S are finite where Z is
    return _append(program, text, {"ce_Y": onehot, "ce_w": weights}, constants=["ce_M"],
                   metrics=["accuracy"], bounded=["ce_S", "loss"])


def _mse(program: Program, shapes: dict, data: dict, args: list[str]) -> LossProgram:
    """Mean over all entries of (P - T)**2."""
    if len(args) != 2:
        raise ProgramError("mse takes (prediction, target)")
    prediction, target_name = args
    shape = shapes.get(prediction)
    if shape is None:
        raise ProgramError(f"mse: no tensor named {prediction!r} in the program")
    if target_name not in data:
        raise DataError(f"loss: no data named {target_name!r} for the target")
    target = data[target_name]
    if tuple(np.shape(target)) != tuple(shape):
        raise DataError(f"loss: target {target_name} has shape {np.shape(target)}, "
                        f"{prediction} has {tuple(shape)}")
    labels = [f"a{k}" for k in range(len(shape))]
    ref = f"[{','.join(labels)}]"
    decl = ",".join(f"{l}:{n}" for l, n in zip(labels, shape))
    count = float(np.prod(shape))
    text = f"""
        input mse_T[{decl}]
        loss[] = ({prediction}{ref} - mse_T{ref}) * ({prediction}{ref} - mse_T{ref}) / {count!r}
        """
    return _append(program, text, {"mse_T": target})


LOSSES: dict[str, Callable[[Program, dict, dict, list[str]], LossProgram]] = {
    "softmax_cross_entropy": _softmax_cross_entropy,
    "mse": _mse,
}


def _matrix_shape(shapes: dict, name: str, loss: str) -> tuple[int, int]:
    if name not in shapes:
        raise ProgramError(f"{loss}: no tensor named {name!r} in the program")
    if len(shapes[name]) != 2:
        raise ProgramError(f"{loss}: {name} must be a matrix (rows, classes), not shape "
                           f"{tuple(shapes[name])}")
    return tuple(shapes[name])


def _append(program: Program, text: str, data: dict, constants: list[str] = (),
            metrics: list[str] = (), bounded: list[str] = ()) -> LossProgram:
    """`program` followed by the statements of `text` (names made unique); those in
    `bounded` stay finite where their inputs are (`Statement.bounded`)."""
    taken = set(program.inputs) | {st.out for st in program.statements}
    renames = {}
    for name in re.findall(r"^\s*(?:input\s+)?([A-Za-z_]\w*)\s*\[", text, re.M):
        fresh, n = name, 1
        while fresh in taken:
            n += 1
            fresh = f"{name}{n}"
        renames[name] = fresh
        taken.add(fresh)
    text = re.sub(r"\b(" + "|".join(map(re.escape, renames)) + r")\b(?=\s*\[)",
                  lambda m: renames[m.group(1)], text)
    extra = parse_program(text, validate=False)
    marked = {renames[b] for b in bounded}
    statements = [replace(st, bounded=st.out in marked) for st in extra.statements]
    combined = Program({**program.inputs, **extra.inputs},
                       program.statements + statements, [renames["loss"]], program.source)
    return LossProgram(combined, renames["loss"], {renames[k]: v for k, v in data.items()},
                       [renames[c] for c in constants], [renames[m] for m in metrics])


def parse_loss(loss: str) -> tuple[str, list[str]] | None:
    """(registered loss, its arguments) of a loss call, None for a tensor name."""
    call = _CALL.match(loss)
    if call is None:
        return None
    name, args = call.group(1), [a.strip() for a in call.group(2).split(",") if a.strip()]
    if name not in LOSSES:
        raise ProgramError(f"unknown loss {name!r}: use a scalar tensor of the program or "
                           f"one of {', '.join(f'{n}(...)' for n in LOSSES)}")
    return name, args


def add_loss(program: Program, loss: str, shapes: dict, data: dict) -> LossProgram:
    """The program with the loss `loss` (a call of a registered loss, or a scalar tensor
    the program defines)."""
    call = parse_loss(loss)
    if call is None:
        return LossProgram(program, loss.strip(), {})
    return LOSSES[call[0]](program, shapes, data, call[1])
