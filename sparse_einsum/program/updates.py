"""Optimizer updates as element-wise EinSum statements (PyTorch's SGD and Adam).

An optimizer reads a parameter, its gradient and its state tensors and defines the new
parameter and new state. Values that change from one iteration to the next (Adam's bias
corrections) are scalar inputs, so one compiled iteration serves every epoch.
"""
from __future__ import annotations

from dataclasses import dataclass
from math import sqrt
from typing import Callable

from ..errors import ProgramError
from .model import Binary, Const, Expr, InputDecl, Ref, Statement, Unary


@dataclass(frozen=True)
class Update:
    """The statements updating one parameter."""
    statements: list[Statement]
    new: dict[str, str]               # tensor read (parameter or state) -> tensor replacing it
    state: list[str]                  # state tensors (inputs, zero at the start)
    scalars: list[str]                # scalar inputs set per step by `Optimizer.scalars`


@dataclass(frozen=True)
class Optimizer:
    name: str
    state: tuple[str, ...]            # suffixes of the state tensors per parameter
    update: Callable[["Optimizer", str, tuple[str, ...], str, dict], Update]
    scalars: Callable[[dict, int], dict[str, float]]   # (options, step) -> scalar inputs
    scalars_sql: Callable[[dict, str], dict[str, str]]   # the same in SQL of a step column
    defaults: dict


def _mul(a: Expr, b: Expr) -> Expr:
    return Binary("*", a, b)


def _sgd(opt: Optimizer, param: str, labels: tuple[str, ...], grad: str, options: dict
         ) -> Update:
    """p - lr * g"""
    p, g = Ref(param, labels), Ref(grad, labels)
    new = f"{param}_new"
    st = Statement(new, labels, Binary("-", p, _mul(g, Const(float(options["lr"])))))
    return Update([st], {param: new}, [], [])


def _adam(opt: Optimizer, param: str, labels: tuple[str, ...], grad: str, options: dict
          ) -> Update:
    """PyTorch's Adam: m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
    p -= (lr / (1 - b1^t)) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)."""
    b1, b2, eps = (float(options[k]) for k in ("beta1", "beta2", "eps"))
    p, g = Ref(param, labels), Ref(grad, labels)
    m, v = Ref(f"{param}_m", labels), Ref(f"{param}_v", labels)
    m_new, v_new, p_new = f"{param}_m_new", f"{param}_v_new", f"{param}_new"
    step_size, root = Ref("adam_step_size", ()), Ref("adam_sqrt_bias2", ())
    statements = [
        Statement(m_new, labels, Binary("+", _mul(m, Const(b1)), _mul(g, Const(1 - b1)))),
        Statement(v_new, labels, Binary("+", _mul(v, Const(b2)),
                                        _mul(_mul(g, g), Const(1 - b2)))),
        Statement(p_new, labels, Binary("-", p, _mul(Binary("/", Ref(m_new, labels), Binary(
            "+", Binary("/", Unary("sqrt", Ref(v_new, labels)), root), Const(eps))), step_size))),
    ]
    return Update(statements, {param: p_new, m.name: m_new, v.name: v_new}, [m.name, v.name],
                  ["adam_step_size", "adam_sqrt_bias2"])


def _adam_scalars(options: dict, step: int) -> dict[str, float]:
    b1, b2 = float(options["beta1"]), float(options["beta2"])
    return {"adam_step_size": float(options["lr"]) / (1 - b1 ** step),
            "adam_sqrt_bias2": sqrt(1 - b2 ** step)}


def _adam_scalars_sql(options: dict, step: str) -> dict[str, str]:
    b1, b2 = float(options["beta1"]), float(options["beta2"])
    return {"adam_step_size": f"{float(options['lr'])!r} / (1 - power({b1!r}, {step}))",
            "adam_sqrt_bias2": f"sqrt(1 - power({b2!r}, {step}))"}


OPTIMIZERS: dict[str, Optimizer] = {
    "sgd": Optimizer("sgd", (), _sgd, lambda options, step: {}, lambda options, step: {},
                     {"lr": 0.01}),
    "adam": Optimizer("adam", ("m", "v"), _adam, _adam_scalars, _adam_scalars_sql,
                      {"lr": 0.001, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8}),
}


def optimizer(name: str) -> Optimizer:
    if name not in OPTIMIZERS:
        raise ProgramError(f"unknown optimizer {name!r}: use {' or '.join(OPTIMIZERS)}")
    return OPTIMIZERS[name]


def scalar_decls(names: list[str]) -> dict[str, InputDecl]:
    return {n: InputDecl(n, (), ()) for n in names}
