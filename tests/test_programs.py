"""Multi-statement programs against the NumPy reference evaluator, every forced plan, both backends."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from sparse_einsum import Session
from sparse_einsum.optimizer.strategies import STRATEGIES
from sparse_einsum.plan import Choice, Plan
from sparse_einsum.program.parser import load_program
from sparse_einsum.reference import evaluate

RANDOM_PLANS = [f"random:{s}" for s in range(4, 9)]
rng = np.random.default_rng(42)


def sparse(shape, density, low=-1.0, high=1.0):
    mask = rng.random(shape) < density
    return np.where(mask, rng.uniform(low, high, shape), 0.0)


PROGRAMS = {
    "gcn2": ("""
        input A[i,j]
        input X[j,f]
        input W1[f,h]
        input W2[h,c]
        AX[i,f] = A[i,j] * X[j,f]
        Z[i,h]  = AX[i,f] * W1[f,h]
        H[i,h]  = relu(Z[i,h])
        AH[i,h] = A[i,j] * H[j,h]
        Y[i,c]  = AH[i,h] * W2[h,c]
        output Y
        """, lambda: dict(A=sp.csr_matrix(sparse((9, 9), 0.25, 0, 1)), X=rng.normal(size=(9, 5)),
                          W1=rng.normal(size=(5, 4)), W2=rng.normal(size=(4, 3)))),
    "softmax": ("""
        input C[i]
        S[]  = sum(exp(C[i]))
        E[i] = exp(C[i]) / S[]
        output E, S
        """, lambda: dict(C=sparse((7,), 0.4))),
    "max_of_negatives": ("""
        input N[i,j]
        M[i] = max(N[i,j])
        L[j] = min(-N[i,j])
        output M, L
        """, lambda: dict(N=sparse((6, 5), 0.5, -3.0, -0.5))),
    "max_of_sums": ("""
        input A[i,j]
        input B[i,j]
        M[i] = max(A[i,j] + B[i,j])
        N[j] = min(A[i,j] - B[i,j])
        output M, N
        """, lambda: dict(A=sparse((6, 5), 0.3, -2.0, -0.5), B=sparse((6, 5), 0.3, -2.0, -0.5))),
    "residual": ("""
        input A[i,j]
        input B[i,j]
        input b[j]
        R[i,j] = A[i,j] + B[i,j]
        D[i,j] = A[i,j] - B[i,j] + b[j]
        S[i]   = sum(A[i,j] + b[j])
        output R, D, S
        """, lambda: dict(A=sparse((6, 5), 0.3), B=sparse((6, 5), 0.3), b=sparse((5,), 0.5))),
    "non_annihilating_unary": ("""
        input A[i,j]
        P[i,j] = sigmoid(A[i,j])
        Q[i]   = sum(exp(A[i,j]) - 1)
        T[j,i] = 2 - A[i,j] * 3
        U[i,j] = abs(A[i,j]) / 2 + tanh(A[i,j])
        output P, Q, T, U
        """, lambda: dict(A=sparse((5, 4), 0.3))),
    "division": ("""
        input A[i,j]
        input d[i]
        R[i,j] = A[i,j] / d[i]
        output R
        """, lambda: dict(A=sparse((5, 4), 0.4), d=rng.uniform(1, 2, 5))),
    "attention_scores": ("""
        input X[i,m]
        input WQ[m,k]
        input WK[m,k]
        input A[i,j]
        T0[i,k] = X[i,m] * WQ[m,k]
        T1[j,k] = X[j,m] * WK[m,k]
        T2[i,j,k] = T0[i,k] * A[i,j]
        T3[i,j] = T2[i,j,k] * T1[j,k]
        Attn[i,j] = T3[i,j] * 0.5
        output Attn
        """, lambda: dict(X=sparse((8, 6), 0.3), WQ=rng.normal(size=(6, 4)),
                          WK=rng.normal(size=(6, 4)), A=sparse((8, 8), 0.3, 0, 1))),
    "diagonal_and_chain": ("""
        input T[a,b,c]
        input M[c,d]
        D[a,c] = T[a,a,c]
        E[a,d] = max(D[a,c] * M[c,d] * D[a,c])
        output E
        """, lambda: dict(T=sparse((4, 4, 3), 0.5), M=sparse((3, 5), 0.6))),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_program_matches_reference_under_every_plan(name, backend):
    """Every registered strategy's plans, and more random ones."""
    text, make_data = PROGRAMS[name]
    program = load_program(text)
    data = make_data()
    expected = evaluate(program, data)
    repartitioned = 0
    with Session(program, data, backend=backend) as session:
        dag = session.dag
        specs = [spec for s in STRATEGIES.values() for spec in s.examples(session.optimizer())]
        for spec in specs + RANDOM_PLANS:
            run = session.run(spec)
            repartitioned += bool(run.plan.repartitions(dag))
            for out in program.outputs:
                np.testing.assert_allclose(run.outputs[out], expected[out], rtol=1e-9,
                                           atol=1e-12, err_msg=f"{name}: {out} under {spec}")
    if any(o.tensor not in dag.inputs for v in dag.vertices for o in v.operands):
        assert repartitioned, f"{name}: no forced plan exercised a repartition"


def test_missing_tuples_are_zeros_for_max(backend):
    """max over a row that is partly missing includes the implicit zeros."""
    program = load_program("input N[i,j]\nM[i] = max(N[i,j])\noutput M")
    data = {"N": np.array([[-1.0, 0.0, -2.0], [-1.0, -3.0, -2.0], [0.0, 0.0, 0.0]])}
    with Session(program, data, backend=backend) as session:
        for spec in ["relational", "dense", "Ij->I", "iJ->i"]:
            got = session.run(spec).outputs["M"]
            np.testing.assert_array_equal(got, [0.0, -1.0, 0.0])


def test_a_max_over_every_tuple_folds_in_no_missing_zero(backend):
    """max of A - 1 is taken over every tuple (a full domain: A - 1 is not 0 where A is
    absent), so no tuple is missing and no 0 is folded in: the negative maxima stay, also
    where the engine aggregates 300-element arrays in a UDF."""
    A = -np.random.default_rng(0).random((5, 300))
    with Session("input A[i,j]\ny[j] = max(A[i,j] - 1)\n", {"A": A}, backend=backend) as s:
        np.testing.assert_array_equal(s.run("Ij->j").outputs["y"], (A - 1).max(axis=0))


@pytest.mark.parametrize("tile", [1, 4])
def test_scalars_stacked_straight_into_packed_payloads(tile, backend):
    """A relational intermediate read with packed sparse payloads (rows whole, or tiles of
    4 rows with an edge tile) is packed by one aggregate, without a dense stack; NumPy's
    values under a plan that forces it."""
    program = load_program("""
        input d[i]
        input A[i,j]
        input X[j,f]
        N[i,j] = d[i] * A[i,j]
        Y[i,f] = N[i,j] * X[j,f]
        output Y
        """)
    data = dict(d=rng.normal(size=10), A=sp.csr_matrix(sparse((10, 7), 0.2)),
                X=rng.normal(size=(7, 3)))
    expected = evaluate(program, data)["Y"]
    with Session(program, data, backend=backend, paths="opt_einsum") as session:  # N stays
        if not session.dialect.packed_stack_sql:
            pytest.skip(f"{session.dialect.name} has no packed stacks")
        plan = Plan({"N": Choice.of({"i": 1, "j": 1}),
                     "Y": Choice.of({"i": tile, "j": 7, "f": 3}, sparse=[0])}, name="forced")
        labels = [step.label for step in session.compile(plan).statements()]
        assert f"stack ~N[{'I' if tile == 1 else 'I/4'},j]" in labels, labels
        got = session.run(plan).outputs["Y"]
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-12)


GCN_CHAIN = """
    input A[i,j]
    input X[j,f]
    input W[f,h]
    AX[i,f] = A[i,j] * X[j,f]
    Z[i,h] = AX[i,f] * W[f,h]
    output Z
    """


def test_a_product_read_once_by_a_product_is_ordered_with_it(duck):
    """AX is fused into Z, whose order multiplies X by W first (the sparse A last); NumPy's
    values and dtype."""
    data = dict(A=sp.random(60, 60, density=0.05, random_state=1, format="csr"),
                X=rng.normal(size=(60, 30)), W=rng.normal(size=(30, 4)))
    with Session(GCN_CHAIN, data, backend=duck) as session:
        assert "AX" not in {v.name for v in session.dag.vertices}
        assert session.explain(top=1)["fused"] == [{"statement": "AX", "into": "Z"}]
        first = session.dag.vertices[0]
        assert {o.tensor for o in first.operands} == {"X", "W"}, session.dag.vertices
        got = session.run().outputs["Z"]
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, data["A"] @ data["X"] @ data["W"], rtol=1e-9, atol=1e-12)


MIN_PLUS_CHAIN = """
    input A[i,j] default {zero}
    input B[j,k] default {zero}
    input c[k]
    T[i,k] = {agg}(A[i,j] + B[j,k])
    Y[i] = {agg}(T[i,k] + c[k])
    output Y
    """


@pytest.mark.parametrize("agg", ["min", "max"])
def test_a_min_plus_product_read_once_is_ordered_with_its_reader(agg, duck):
    """The aggregate pushed past the product (FAQ): T is fused into Y, which contracts B
    with the vector c first, not the two matrices; the NumPy min-plus (max-plus) values."""
    zero = np.inf if agg == "min" else -np.inf
    A, B = (sp.random(50, 50, density=0.1, random_state=s, format="csr") for s in (4, 5))
    c = rng.normal(size=50)
    full = [np.where(m.toarray() != 0, m.toarray(), zero) for m in (A, B)]
    reduce = np.min if agg == "min" else np.max
    expected = reduce(reduce(full[0][:, :, None] + full[1][None], axis=1) + c, axis=1)
    program = MIN_PLUS_CHAIN.format(agg=agg, zero="inf" if agg == "min" else "-inf")
    with Session(program, dict(A=A, B=B, c=c), backend=duck) as session:
        assert session.explain(top=1)["fused"] == [{"statement": "T", "into": "Y"}]
        first = session.dag.vertices[0]
        assert {o.tensor for o in first.operands} == {"B", "c"}, session.dag.vertices
        got = session.run().outputs["Y"]
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_a_min_plus_product_is_not_fused_into_a_max():
    """min and max do not distribute over each other: the statements stay apart."""
    program = MIN_PLUS_CHAIN.format(agg="min", zero="inf").replace("Y[i] = min", "Y[i] = max")
    A = sp.random(20, 20, density=0.2, random_state=6, format="csr")
    with Session(program, dict(A=A, B=A, c=rng.normal(size=20))) as session:
        assert session.explain(top=1)["fused"] == []


SHARED_PRODUCT = """
    input A[i,j]
    input X[j,f]
    input W[f,h]
    input V[g,f]
    P[i,h] = A[i,j] * X[j,f] * W[f,h]
    Q[k,g] = V[g,e] * X[l,e] * A[k,l]
    output P, Q
    """


def test_a_product_two_statements_lower_to_is_computed_once(backend):
    """P and Q both contract A with X first (few features), labels named apart and the
    factors in another order: one vertex computes it, both read it; NumPy's values under
    every strategy's plans."""
    data = dict(A=sp.random(30, 30, density=0.1, random_state=3, format="csr"),
                X=rng.normal(size=(30, 2)), W=rng.normal(size=(2, 9)), V=rng.normal(size=(8, 2)))
    program = load_program(SHARED_PRODUCT)
    expected = evaluate(program, data)
    with Session(program, data, backend=backend) as session:
        (ax,) = [v for v in session.dag.vertices if {o.tensor for o in v.operands} == {"A", "X"}]
        assert [v.name for v in session.dag.consumers(ax.name)] == ["P", "Q"]
        specs = [spec for s in STRATEGIES.values() for spec in s.examples(session.optimizer())]
        for spec in specs + RANDOM_PLANS[:2]:
            outputs = session.run(spec).outputs
            for out in ("P", "Q"):
                assert outputs[out].dtype == np.float64
                np.testing.assert_allclose(outputs[out], expected[out], rtol=1e-9, atol=1e-12,
                                           err_msg=f"{out} under {spec}")


@pytest.mark.parametrize("bad", [np.inf, np.nan])
def test_products_of_non_finite_tensors_keep_the_program_order(bad, duck):
    """inf and NaN may come out differently in another order: such chains stay as written,
    and their values are NumPy's."""
    data = dict(A=sp.random(20, 20, density=0.1, random_state=2, format="csr"),
                X=rng.normal(size=(20, 5)), W=rng.normal(size=(5, 3)))
    data["W"][1, 2] = bad
    with Session(GCN_CHAIN, data, backend=duck) as session:
        assert "AX" in {v.name for v in session.dag.vertices}
        got = session.run().outputs["Z"]
    expected = evaluate(load_program(GCN_CHAIN), data)["Z"]
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-12)


def test_the_written_order_is_kept_with_opt_einsum_paths(duck):
    data = dict(A=sp.random(20, 20, density=0.1, random_state=3, format="csr"),
                X=rng.normal(size=(20, 5)), W=rng.normal(size=(5, 3)))
    with Session(GCN_CHAIN, data, backend=duck, paths="opt_einsum") as session:
        assert "AX" in {v.name for v in session.dag.vertices}
NEGATIVE_ZEROS = """
    input A[i,j,k]
    input c[k]
    X[i,j,k] = A[i,j,k] / c[k]
    Y[i,j,k] = 2 / X[i,j,k]
    output Y
    """


def test_negative_zeros_survive_every_repartition(backend):
    """A / inf is -0.0 for negative A and 2 / -0.0 is -inf, as in NumPy, whichever way X is
    stored: split into pieces (se_split, se_take, the explode UDF), packed sparse
    (se_sparsify, the Arrow packer) or read from an input holding -0.0."""
    a = np.where(rng.random((3, 4, 5)) < 0.5, rng.uniform(-2, -0.5, (3, 4, 5)), 0.0)
    a[0, 0, 1] = -0.0
    data = {"A": a, "c": np.array([np.inf, 2.0, -np.inf, 1.0, np.inf])}
    program = load_program(NEGATIVE_ZEROS)
    with np.errstate(divide="ignore"):
        want = evaluate(program, data)["Y"]
    assert np.isneginf(want).any() and np.isposinf(want).any()
    pieces = packed = 0
    with Session(program, data, backend=backend) as session:
        for spec in [f"random:{s}" for s in range(12)] + ["relational"]:
            run = session.run(spec)
            steps = session.compile(run.plan).statements()
            pieces += any(s.label.startswith("explode") and s.target.sub_size > 1 for s in steps)
            packed += bool(run.plan.choices["X"].sparse)
            np.testing.assert_array_equal(run.outputs["Y"], want, err_msg=spec)
    assert pieces and packed, (pieces, packed)


TILE_CUTS = """
input X[i,j]
input W[j,k]
Y[i,k] = X[i,j] * W[j,k]
Z[i,k] = Y[i,k] * Y[i,k]
output Z
"""


@pytest.mark.parametrize("have,need", [
    ({"i": 20, "k": 12}, {"i": 4, "k": 4}),      # demoted axes cut into tiles
    ({"i": 8, "k": 12}, {"i": 4, "k": 3}),       # padded tiles (20 = 8 + 8 + 4) cut smaller
    ({"i": 8, "k": 6}, {"i": 1, "k": 2}),        # one axis promoted, one cut
    ({"i": 4, "k": 12}, {"i": 8, "k": 4}),       # one axis stacked, one cut
])
def test_tiles_cut_into_smaller_tiles(backend, have, need):
    """A repartition to tiles that divide the tiles a tensor has cuts each payload into
    pieces of those tiles (no scalars in between), padding dropped, zeros as before."""
    x = sparse((20, 5), 0.5)
    x[4:8] = 0.0                                  # all-zero pieces
    data = {"X": x, "W": rng.normal(size=(5, 12))}
    program = load_program(TILE_CUTS)
    want = evaluate(program, data)["Z"]
    with Session(program, data, backend=backend) as session:
        plan = Plan({"Y": Choice.of({**have, "j": 5}), "Z": Choice.of(need)}, name="cut")
        steps = session.compile(plan).statements()
        explode = [s for s in steps if s.label.startswith("explode")]
        assert [s.target.tiling for s in explode] == [tuple(
            h if h == n else n if h % n == 0 else 1 for h, n in zip(have.values(), need.values()))]
        np.testing.assert_allclose(session.run(plan).outputs["Z"], want, rtol=1e-12, atol=1e-15)
