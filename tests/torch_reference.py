"""A PyTorch evaluator of Programs, the oracle of the gradient tests: it follows the
statement text (not the lowered DAG) and differentiates with autograd."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from sparse_einsum.program.model import Const, Program, Ref, Unary, fold

torch = None


def _torch():
    global torch
    if torch is None:
        import torch as module
        torch = module
    return torch


UNARY = {
    "neg": lambda x: -x,
    "relu": lambda x: _torch().relu(x),
    "exp": lambda x: _torch().exp(x),
    "log": lambda x: _torch().log(x),
    "sqrt": lambda x: _torch().sqrt(x),
    "sigmoid": lambda x: _torch().sigmoid(x),
    "tanh": lambda x: _torch().tanh(x),
    "abs": lambda x: _torch().abs(x),
    "step": lambda x: (x > 0).to(x.dtype),
}
BINARY = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
          "/": lambda a, b: a / b}


def torch_gradients(program: Program, data: dict, loss: str, wrt: list[str]
                    ) -> tuple[float, dict[str, np.ndarray]]:
    """The loss and its gradients by PyTorch autograd (float64, dense)."""
    t = _torch()
    env = {name: t.tensor(np.asarray(v.toarray() if sp.issparse(v) else v, dtype=np.float64),
                          requires_grad=name in wrt)
           for name, v in data.items() if name in program.inputs}
    for name in wrt:
        if name not in env:
            env[name] = None
    for st in program.statements:
        value, labels = fold(st.expr, lambda node, args: _node(node, args, env))
        axes = [k for k, l in enumerate(labels) if l not in st.out_labels]
        if axes:
            value = {"sum": t.sum, "max": t.amax, "min": t.amin}[st.agg](value, dim=axes)
        kept = [l for l in labels if l in st.out_labels]
        env[st.out] = value.permute([kept.index(l) for l in st.out_labels]) if kept else value
        if st.out in wrt:
            env[st.out].retain_grad()
    env[loss].backward()
    return float(env[loss].detach()), {n: (env[n].grad.numpy() if env[n].grad is not None
                                  else np.zeros(tuple(env[n].shape))) for n in wrt}


def _node(node, args, env):
    t = _torch()
    if isinstance(node, Const):
        return t.tensor(node.value, dtype=t.float64), []
    if isinstance(node, Ref):
        labels = list(dict.fromkeys(node.labels))
        letters = "abcdefghijklmnopqrstuvwxyz"
        spec = "".join(letters[labels.index(l)] for l in node.labels)
        return t.einsum(f"{spec}->{letters[:len(labels)]}", env[node.name]), labels
    if isinstance(node, Unary):
        value, labels = args[0]
        return UNARY[node.fn](value), labels
    (a, la), (b, lb) = args
    labels = list(dict.fromkeys(la + lb))
    return BINARY[node.op](_align(a, la, labels), _align(b, lb, labels)), labels


def _align(value, labels, target):
    if not labels:
        return value
    order = sorted(range(len(labels)), key=lambda k: target.index(labels[k]))
    value = value.permute(order)
    present = [labels[k] for k in order]
    return value.reshape([value.shape[present.index(l)] if l in present else 1 for l in target])
