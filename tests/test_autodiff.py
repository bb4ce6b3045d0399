"""Gradients of programs (sparse_einsum.grad) against PyTorch autograd: every operation of
the language, diagonals, broadcasts, max/min, the losses, under the plans of every
registered strategy on DuckDB and PostgreSQL."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from sparse_einsum import Session, grad
from sparse_einsum.errors import ProgramError
from sparse_einsum.optimizer.strategies import STRATEGIES
from sparse_einsum.program.model import Unary, nodes
from sparse_einsum.program.parser import load_program
from sparse_einsum.sql.duckdb import DuckDBDialect
from sparse_einsum.training import backward_program

pytest.importorskip("torch")
from torch_reference import torch_gradients  # noqa: E402

rng = np.random.default_rng(13)


def dense(*shape, low=-1.0, high=1.0):
    return rng.uniform(low, high, shape)


def sparse(shape, density, low=-1.0, high=1.0):
    return np.where(rng.random(shape) < density, rng.uniform(low, high, shape), 0.0)


# name -> (program, data, loss, wrt)
CASES = {
    "gcn_softmax": ("""
        input A[i,j]
        input X[j,f]
        input W1[f,h]
        input W2[h,c]
        input T[i,c]
        AX[i,f] = A[i,j] * X[j,f]
        Z[i,h]  = AX[i,f] * W1[f,h]
        H[i,h]  = relu(Z[i,h])
        Y[i,c]  = A[i,j] * H[j,h] * W2[h,c]
        M[i]    = max(Y[i,c])
        S[i]    = sum(exp(Y[i,c] - M[i]))
        L[]     = (log(S[i]) + M[i]) * T[i,c] - Y[i,c] * T[i,c]
        """, lambda: dict(A=sp.csr_matrix(sparse((7, 7), 0.3, 0, 1)), X=dense(7, 4),
                          W1=dense(4, 3), W2=dense(3, 2), T=np.eye(7, 2)),
        "L", ["W1", "W2", "X"]),
    "unary": ("""
        input P[i,j]
        input Q[i,j]
        U[i,j] = exp(P[i,j]) * sigmoid(Q[i,j]) + tanh(P[i,j] * Q[i,j]) - abs(Q[i,j])
        V[i]   = sqrt(P[i,j] * P[i,j] + 1) + log(Q[i,j] * Q[i,j] + 0.5) - relu(-P[i,j])
        L[]    = U[i,j] * V[i] + 2 * neg(P[i,j])
        """, lambda: dict(P=dense(4, 3), Q=dense(4, 3)), "L", ["P", "Q"]),
    "division": ("""
        input P[i,j]
        input Q[j]
        D[i,j] = P[i,j] / Q[j] - 3 / Q[j]
        L[]    = D[i,j] * D[i,j] / 2
        """, lambda: dict(P=dense(3, 4), Q=dense(4, low=1.0, high=2.0)), "L", ["P", "Q"]),
    "max_min_ties": ("""
        input N[i,j]
        M[i] = max(N[i,j])
        K[j] = min(N[i,j] * 2)
        L[]  = M[i] * M[i] + K[j] * 3
        """, lambda: dict(N=np.array([[1.0, 3.0, 3.0], [-2.0, -1.0, 0.0], [0.0, 0.0, 0.0],
                                      [1.0, -4.0, 2.0]])), "L", ["N"]),
    "max_of_sparse": ("""
        input N[i,j]
        M[i] = max(N[i,j])
        L[]  = M[i] * M[i]
        """, lambda: dict(N=sp.csr_matrix(sparse((5, 4), 0.4, -2.0, -0.5))), "L", ["N"]),
    "diagonal_and_broadcast": ("""
        input S[i,j]
        input b[k]
        T[]    = S[i,i]
        B[i,k] = S[i,j] * b[k]
        L[]    = T[] * T[] + B[i,k] + b[k]
        """, lambda: dict(S=dense(4, 4), b=dense(3)), "L", ["S", "b"]),
    "repeated_use": ("""
        input W[i,j]
        input x[j]
        y[i]  = W[i,j] * x[j]
        z[j]  = W[i,j] * y[i]
        L[]   = z[j] * x[j] + y[i] * y[i]
        """, lambda: dict(W=dense(3, 4), x=dense(4)), "L", ["W", "x", "y"]),
}


def strategy_plans(session) -> list:
    """The first plan each registered strategy names, each decomposition once (the best two
    from one search stand for optimal and rank:N)."""
    found = {tuple(sorted(p.choices.items())): p for p in session.plans("optimal", 2)}
    for name, strategy in STRATEGIES.items():
        for spec in strategy.examples(session.optimizer())[:1]:
            if name not in ("optimal", "rank"):
                plan = session.plan(spec)
                found.setdefault(tuple(sorted(plan.choices.items())), plan)
    return list(found.values())


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradients_match_torch_under_every_plan(name, backend):
    text, make_data, loss, wrt = CASES[name]
    data = make_data()
    expected_loss, expected = torch_gradients(load_program(text), data, loss, wrt)
    grads, inputs = backward_program(text, data, loss, wrt)
    with Session(grads.program, inputs, backend=backend) as session:
        for spec in strategy_plans(session):
            outputs = session.run(spec).outputs
            np.testing.assert_allclose(outputs[loss], expected_loss, rtol=1e-9)
            for param in wrt:
                np.testing.assert_allclose(outputs[grads.grads[param]], expected[param],
                                           rtol=1e-8, atol=1e-12,
                                           err_msg=f"{name}: d{loss}/d{param} under {spec.name}")


def test_every_operation_has_a_derivative_rule():
    from sparse_einsum.program import autodiff
    from sparse_einsum.program.model import BINARY_OPS, UNARY_FUNCTIONS
    assert set(autodiff._UNARY_RULES) == set(UNARY_FUNCTIONS)
    assert set(autodiff._BINARY_RULES) == set(BINARY_OPS)
    used = {node.fn for text, *_ in CASES.values() for st in load_program(text).statements
            for node in nodes(st.expr) if isinstance(node, Unary)}
    assert used >= set(UNARY_FUNCTIONS) - {"step"}, "a function no gradient case exercises"


def test_grad_api_returns_arrays_and_zeros():
    text = "input A[i,j]\ninput B[j]\ninput C[j]\nL[] = A[i,j] * B[j]\nU[] = C[j]"
    data = dict(A=dense(2, 3), B=dense(3), C=dense(3))
    got = grad(text, data, loss="L", wrt=["B", "A", "C"])
    assert list(got) == ["B", "A", "C"]
    np.testing.assert_allclose(got["A"], np.tile(data["B"], (2, 1)), rtol=1e-12)
    np.testing.assert_allclose(got["B"], data["A"].sum(0), rtol=1e-12)
    assert got["C"].shape == (3,) and not got["C"].any()


def test_stop_gradient():
    text = "input X[i]\nM[] = max(X[i])\nL[] = X[i] - M[]"
    data = dict(X=np.array([1.0, 4.0, 2.0]))
    np.testing.assert_allclose(grad(text, data, loss="L", wrt=["X"])["X"], [1.0, -2.0, 1.0])
    np.testing.assert_allclose(grad(text, data, loss="L", wrt=["X"], constants=["M"])["X"],
                               [1.0, 1.0, 1.0])


@pytest.mark.parametrize("loss,wrt,message", [
    ("Y", ["X"], "must be a scalar"),
    ("L", ["nope"], "no tensor named 'nope'"),
])
def test_bad_gradient_requests(loss, wrt, message):
    text = "input X[i]\nY[i] = X[i] * X[i]\nL[] = Y[i]"
    with pytest.raises(ProgramError, match=message):
        grad(text, {"X": np.ones(3)}, loss=loss, wrt=wrt)


def test_the_softmax_loss_keeps_its_gradients_finite_in_the_statistics():
    """The loss vouches that exp(Z - max Z) <= 1 and its row sums >= 1, so the backward
    pass of finite logits is finite and products with a sparse operand stay sparse (a
    may-be-infinite gradient would meet every missing entry: 0 * inf is NaN)."""
    text = "input A[i,j]\ninput W[j,c]\nZ[i,c] = A[i,j] * W[j,c]"
    data = dict(A=sp.csr_matrix(sparse((6, 5), 0.3)), W=dense(5, 3),
                y=np.array([0, 1, 2, 0, 1, 2]), mask=np.ones(6, dtype=bool))
    grads, inputs = backward_program(text, data, "softmax_cross_entropy(Z, y, mask)", ["W"])
    with Session(grads.program, inputs, backend=None, dialect=DuckDBDialect(),
                 paths="opt_einsum") as session:         # every statement as written
        stats = session.optimizer().stats
    assert stats["ce_S"].finite and all(stats[st.out].finite for st in grads.backward)
    inputs["W"] = np.full((5, 3), np.inf)
    with Session(grads.program, inputs, backend=None, dialect=DuckDBDialect()) as session:
        assert not session.optimizer().stats[grads.grads["W"]].finite
    own = "input X[i]\nE[i] = exp(X[i])\nL[] = E[i] / E[i]"
    with Session(own, dict(X=dense(3)), backend=None, dialect=DuckDBDialect()) as session:
        assert not session.optimizer().stats["L"].finite       # no loss vouches for these
