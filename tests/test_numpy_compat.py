"""NumPy's einsum semantics in full, on DuckDB and PostgreSQL: NumPy's and opt_einsum's own
test expressions under several plans, dtypes (bool, integers, floats, complex), ellipsis,
size-1 broadcasting, the sublist form, NumPy's keywords, NaN and inf, labels that differ
only in case. Same values and same dtype as NumPy."""
from __future__ import annotations

import string

import numpy as np
import pytest
import scipy.sparse as sp

from numpy_cases import DTYPE_FORMS, DTYPES, NUMPY, OPT_EINSUM
from sparse_einsum import DataError, PlanError, ProgramError, einsum, run
from sparse_einsum.api import einsum_session
from sparse_einsum.reference import evaluate
from sparse_einsum.program.parser import load_program
from sparse_einsum.sql.duckdb import DuckDBDialect

PLANS = ["optimal", "relational", "dense", "greedy"]
SIZES = dict(zip(string.ascii_letters, [2, 3] * 26))


def _values(shape, dtype, rng):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) < 0.6
    if dtype.kind in "iu":
        low = 0 if dtype.kind == "u" else -3
        return rng.integers(low, 4, size=shape).astype(dtype)
    values = np.where(rng.random(shape) < 0.7, rng.uniform(-2, 2, shape), 0.0)
    if dtype.kind == "c":
        values = values + 1j * np.where(rng.random(shape) < 0.5, rng.uniform(-2, 2, shape), 0.0)
    return np.asarray(values).astype(dtype)


def _check(got, want, what, rtol=1e-9):
    assert np.asarray(got).dtype == np.asarray(want).dtype, (what, got, want)
    assert np.shape(got) == np.shape(want), what
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol, equal_nan=True, err_msg=str(what))


@pytest.mark.parametrize("expression", OPT_EINSUM)
def test_opt_einsum_expressions(expression, backend):
    rng = np.random.default_rng(len(expression))
    terms = expression.split("->")[0].split(",")
    ops = [_values(tuple(SIZES[c] for c in t), "float64", rng) for t in terms]
    want = np.einsum(expression, *ops)
    with einsum_session(expression, *ops, backend=backend) as session:
        seen = set()
        for spec in PLANS:
            plan = session.plan(spec)
            key = tuple(sorted(plan.choices.items()))
            if key not in seen:
                seen.add(key)
                _check(session.run(plan).outputs["OUT"], want, (expression, spec))


@pytest.mark.parametrize("subscripts,shapes", NUMPY, ids=[s for s, _ in NUMPY])
def test_numpy_expressions(subscripts, shapes, backend):
    rng = np.random.default_rng(7)
    ops = [_values(s, "float64", rng) for s in shapes]
    want = np.einsum(subscripts, *ops)
    for plan in PLANS:
        _check(einsum(subscripts, *ops, plan=plan, backend=backend), want, (subscripts, plan))


@pytest.mark.parametrize("form", DTYPE_FORMS)
def test_dtypes_as_numpy(form, backend):
    shapes = next(s for f, s in NUMPY if f.replace(" ", "") == form)
    rng = np.random.default_rng(3)
    for k, dtype in enumerate(DTYPES):
        ops = [_values(s, dtype, rng) for s in shapes]
        want = np.einsum(form, *ops)
        rtol = {"float16": 2e-3, "float32": 1e-6, "complex64": 1e-6}.get(dtype, 1e-9)
        for plan in ("optimal", PLANS[1 + k % 3]):
            _check(einsum(form, *ops, plan=plan, backend=backend), want, (form, dtype, plan), rtol)


def test_sublist_form_and_keywords(backend):
    a, b = np.arange(12.0).reshape(4, 3), np.arange(3.0)
    _check(einsum(a, [0, 1], b, [1], [0], backend=backend), np.einsum(a, [0, 1], b, [1], [0]), "")
    x = np.arange(24.0).reshape(2, 3, 4)
    _check(einsum(x, [Ellipsis, 0], [Ellipsis], backend=backend),
           np.einsum(x, [Ellipsis, 0], [Ellipsis]), "ellipsis sublist")
    ai, bi = np.arange(12).reshape(4, 3), np.arange(3)
    out = np.zeros(4, dtype=np.int64)
    got = einsum("ij,j", ai, bi, out=out, dtype="f8", casting="unsafe", optimize=True,
                 backend=backend)
    assert got is out
    np.testing.assert_array_equal(out, np.dot(ai.astype("f8"), bi.astype("f8")).astype(np.int64))
    _check(einsum("ij,j", ai, bi, dtype="f8", casting="unsafe", backend=backend),
           np.einsum("ij,j", ai, bi, dtype="f8", casting="unsafe"), "dtype")
    with pytest.raises(DataError, match="according to the rule 'safe'"):
        einsum("ij,j", np.ones((2, 3)), np.ones(3), dtype="i8", backend=backend)
    assert isinstance(einsum("i,i", [1.0, 2.0], [3.0, 4.0], backend=backend), np.float64)
    assert einsum("i,i->", np.array([True, False]), np.array([True, True]), backend=backend) is np.True_


def test_numpy_errors_are_one_line(duck):
    cases = [("ij,jk", [np.ones((2, 3)), np.ones((4, 5))], "label 'j' has size 3 in one"),
             ("...i->i", [np.ones((2, 3))], "no '...'"),
             ("ij->", [np.ones((2, 3, 4))], "3 dimensions but its term 'ij' has 2 labels"),
             ("i,j", [np.ones(3)], "2 operand terms but 1 operands"),
             ("i1", [np.ones((2, 2))], "'1' is not a label letter"),
             ("ii->i", [np.ones((1, 3))], "label 'i' repeats in operand 0 with sizes 1 and 3"),
             ("iij,j", [np.ones((2, 3, 1)), np.ones(3)], "label 'i' repeats in operand 0 with "
                                                          "sizes 2 and 3")]
    for subscripts, ops, message in cases:
        with pytest.raises(DataError, match=message):
            einsum(subscripts, *ops, backend=duck)
    with pytest.raises(DataError, match="subscripts must be a string"):
        einsum(None, np.ones(2), backend=duck)


REPEATED_BROADCAST = [("cacc,bcb->", [(1, 1, 1, 1), (1, 4, 1)]), ("ii,i->i", [(1, 1), (3,)]),
                      ("i,ii->", [(3,), (1, 1)]), ("ii,i", [(1, 1), (3,)]),
                      ("iij,j->ij", [(1, 1, 3), (1,)]), ("ii,ij->ij", [(1, 1), (3, 2)]),
                      ("...ii,i->...i", [(2, 1, 1), (3,)]), ("abab,ab->ab", [(1, 3, 1, 3), (2, 3)]),
                      ("ii,i->i", [(1, 1), (0,)])]


@pytest.mark.parametrize("subscripts,shapes", REPEATED_BROADCAST,
                         ids=[f"{s}{p}" for s, p in REPEATED_BROADCAST])
def test_size_1_broadcasting_of_repeated_labels(subscripts, shapes, backend):
    """A label repeated in an operand whose axes there all have size 1 broadcasts against
    its size in other operands (its diagonal is element 0), as in NumPy."""
    rng = np.random.default_rng(11)
    for dtype in ("float64", "int32", "bool"):
        ops = [_values(shape, dtype, rng) for shape in shapes]
        want = np.einsum(subscripts, *ops)
        for plan in ("optimal", "relational", "dense"):
            _check(einsum(subscripts, *ops, plan=plan, backend=backend), want,
                   (subscripts, dtype, plan))


ZERO_SIZE = [("ij->ij", [(0, 5)]), ("ij->j", [(0, 5)]), ("ij->", [(0, 5)]), ("ii->i", [(0, 0)]),
             ("ij,jk->ik", [(4, 0), (0, 3)]), ("ij,jk->ik", [(0, 5), (5, 3)]),
             ("i,i->", [(0,), (0,)]), ("ij,ij->ij", [(1, 5), (0, 5)])]


@pytest.mark.parametrize("subscripts,shapes", ZERO_SIZE, ids=[f"{s}{p}" for s, p in ZERO_SIZE])
def test_zero_size_operands_as_numpy(subscripts, shapes, backend):
    """Axes of size 0 (which size-1 axes broadcast to) give NumPy's shapes, zeros and
    dtypes under every plan, for dense, scipy.sparse and integer operands."""
    for dtype in ("float64", "int64"):
        ops = [np.ones(shape, dtype=dtype) for shape in shapes]
        want = np.einsum(subscripts, *ops)
        for plan in ("optimal", "relational", "dense"):
            _check(einsum(subscripts, *ops, plan=plan, backend=backend), want,
                   (subscripts, dtype, plan))
    ops = [sp.csr_array(shape) if len(shape) == 2 else np.ones(shape) for shape in shapes]
    got = einsum(subscripts, *ops, backend=backend)      # sparse in, sparse out (all zeros)
    _check(got.toarray() if sp.issparse(got) else got,
           np.einsum(subscripts, *[o.toarray() if sp.issparse(o) else o for o in ops]),
           (subscripts, "sparse"))
    with pytest.raises(DataError, match="label 'i' has size 2 in one operand and 0"):
        einsum("ij,ij->ij", np.ones((2, 5)), np.ones((0, 5)), backend=backend)


def test_max_over_a_zero_size_label_is_an_error_as_in_numpy(duck):
    program = "input A[i,j]\nM[i] = max(A[i,j])\noutput M"
    with pytest.raises(DataError, match="line 2: max over label 'j' of size 0 has no identity"):
        run(program, {"A": np.ones((3, 0))}, backend=duck)
    _check(run(program, {"A": np.ones((0, 3))}, backend=duck)["M"], np.ones((0, 3)).max(axis=1),
           "max keeping the empty axis")


def test_integers_beyond_2_53_are_exact(backend):
    """int64 products and sums above 2**53 come out exact: computed as BIGINT under plans
    with scalar values; plans with arrays say why they cannot."""
    m = (np.arange(12, dtype=np.int64).reshape(3, 4) + 1) * (2 ** 27 + 1)
    want = np.einsum("ij,kj->ik", m, m)
    assert want.max() > 2 ** 53
    for plan in ("optimal", "relational"):
        got = einsum("ij,kj->ik", m, m, plan=plan, backend=backend)
        assert got.dtype == np.int64 and np.array_equal(got, want), plan
    with pytest.raises(PlanError, match="keeps integer values in arrays"):
        einsum("ij,kj->ik", m, m, plan="dense", backend=backend)
    small = np.arange(6, dtype=np.int64).reshape(2, 3)     # below 2**53: every plan
    _check(einsum("ij,kj->ik", small, small, plan="dense", backend=backend),
           np.einsum("ij,kj->ik", small, small), "small ints")


def test_nan_and_inf_follow_numpy(backend):
    """0 * NaN is NaN: a NaN in a sparse SpMM spreads along its row, an inf in the dense
    operand along its column; NaN against an all-zero operand stays NaN; min and max see
    NaN. Sparse inputs follow NumPy's semantics too (scipy.sparse skips unstored zeros)."""
    rng = np.random.default_rng(5)
    a = sp.random(300, 300, density=0.01, format="csr", random_state=5)
    a.data[3] = np.nan
    h = rng.normal(size=(300, 6))
    h[11, 2] = np.inf
    want = np.einsum("ij,jf->if", a.toarray(), h)
    assert np.isnan(want).sum() > 300
    for plan in PLANS + ["random:1", "random:2"]:
        _check(einsum("ij,jf->if", a, h, plan=plan, backend=backend), want, plan)
    x, zero = np.array([[np.nan, 1.0], [2.0, 0.0]]), np.zeros((2, 2))
    for plan in ("relational", "dense", "optimal"):
        _check(einsum("ij,ij->ij", x, zero, plan=plan, backend=backend),
               np.einsum("ij,ij->ij", x, zero), plan)
    program = "input N[i,j]\nM[i] = min(N[i,j])\nX[i] = max(N[i,j])\noutput M, X"
    n = np.array([[1.0, np.nan, 3.0], [2.0, 0.0, -1.0], [0.0, 0.0, 0.0], [-np.inf, 1.0, 0.0]])
    want = evaluate(load_program(program), {"N": n})
    for plan in ("relational", "dense", "random:1", "random:3"):
        got = run(program, {"N": n}, plan=plan, backend=backend)
        for name in ("M", "X"):
            _check(got[name], want[name], (name, plan))


def test_complex_values(backend):
    rng = np.random.default_rng(2)
    a = _values((4, 3), "complex128", rng)
    b = _values((3, 5), "float64", rng)
    c = _values((5, 2), "complex128", rng)
    for plan in PLANS + ["random:4"]:
        _check(einsum("ij,jk,kl->il", a, b, c, plan=plan, backend=backend),
               np.einsum("ij,jk,kl->il", a, b, c), plan)
    program = ("input A[i,j]\ninput B[j,k]\nC[i,k] = A[i,j] * B[j,k]\n"
               "D[i,k] = C[i,k] - 2 * C[i,k] * C[i,k] + -C[i,k]\noutput C, D")
    data = {"A": a, "B": sp.csr_matrix(_values((3, 5), "complex128", rng))}
    want = evaluate(load_program(program), data)
    for plan in ("optimal", "relational", "dense", "random:2"):
        got = run(program, data, plan=plan, backend=backend)
        for name in ("C", "D"):
            _check(got[name], want[name], (name, plan))
    for bad, message in (("Y[i,j] = relu(A[i,j])", "relu"), ("Y[i] = max(A[i,j])", "max"),
                         ("Y[i,j] = A[i,j] / A[i,j]", "division")):
        with pytest.raises(ProgramError, match=message):
            run(f"input A[i,j]\n{bad}", {"A": a}, backend=backend)


def test_labels_that_differ_only_in_case(backend):
    rng = np.random.default_rng(4)
    a = rng.normal(size=(2, 3))
    ops = [rng.normal(size=s) for s in ((2, 2, 3), (3, 2, 3), (3, 2, 2), (2, 2, 2))]
    for plan in ("relational", "dense", "random:1", "optimal"):
        _check(einsum("aA->aA", a, plan=plan, backend=backend), a, plan)
        _check(einsum("aA->Aa", a, plan=plan, backend=backend), a.T, plan)
        _check(einsum("aAb,bBc,cCd,dDe->ABCD", *ops, plan=plan, backend=backend),
               np.einsum("aAb,bBc,cCd,dDe->ABCD", *ops), plan)


UNICODE = [("αβ,βγ->αγ", "ab,bc->ac", [(2, 3), (3, 4)]), ("γβ,βα", "cb,ba", [(2, 3), (3, 4)]),
           ("zж,жa", "yz,za", [(2, 3), (3, 4)]), ("Ωω,ωΩ->", "Aa,aA->", [(2, 3), (3, 2)]),
           ("京i,i", "ji,i", [(2, 3), (3,)]), ("...αβ,βγ->...αγ", "...ab,bc->...ac",
                                               [(2, 2, 3), (3, 4)]),
           ("αα->α", "aa->a", [(3, 3)]), ("αβ,β->αβ", "ab,b->ab", [(2, 1), (3,)])]


@pytest.mark.parametrize("subscripts,ascii,shapes", UNICODE, ids=[s for s, _, _ in UNICODE])
def test_unicode_labels_as_opt_einsum(subscripts, ascii, shapes, backend):
    """Any Unicode letter is a label, as in opt_einsum's contract (the implicit output in
    code point order): the same values and dtype as NumPy with ASCII labels in that order."""
    rng = np.random.default_rng(13)
    for dtype in ("float64", "int64"):
        ops = [_values(shape, dtype, rng) for shape in shapes]
        want = np.einsum(ascii, *ops)
        for plan in ("optimal", "relational", "dense"):
            _check(einsum(subscripts, *ops, plan=plan, backend=backend), want,
                   (subscripts, dtype, plan))


def test_pinned_plans_of_unicode_labels(duck):
    a, b = np.arange(6.0).reshape(2, 3), np.arange(12.0).reshape(3, 4)
    with einsum_session("αβ,βγ->αγ", a, b, backend=duck) as session:
        plan = session.plan("Αβ,βΓ->ΑΓ")
        assert plan.choices["OUT"].tiles == (("u3b1", 1), ("u3b2", 3), ("u3b3", 1))
        _check(session.run(plan).outputs["OUT"], a @ b, "pinned")
    with pytest.raises(DataError, match="'1' is not a label letter"):
        einsum("α1", np.ones((2, 2)), backend=duck)


def test_many_labels_keep_the_search_bounded():
    """26 labels on one operand: the decompositions tried stay few (not 2**26)."""
    x = np.ones((2,) * 10 + (1,) * 16)
    with einsum_session(string.ascii_lowercase + "->", x, backend=None,
                        dialect=DuckDBDialect()) as session:
        assert session.optimizer().space.combinations() <= 64
        assert session.plan("optimal").cost is not None
    assert einsum(string.ascii_lowercase + "->", x) == 1024.0
