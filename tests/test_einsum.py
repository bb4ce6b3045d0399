"""Differential tests: sparse_einsum.einsum on DuckDB and PostgreSQL against numpy.einsum."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from einsum_cases import DENSITIES, EXPRESSIONS, operands, reference
from sparse_einsum import einsum
from sparse_einsum.api import einsum_session
from sparse_einsum.blocks import compose, compose_sparse, decompose
from sparse_einsum.optimizer.strategies import STRATEGIES


def test_corpus_is_large_enough():
    assert len(EXPRESSIONS) >= 60
    assert len({e.count(",") + 1 for e in EXPRESSIONS} & {3, 4, 5, 6}) == 4


def distinct_plans(session) -> dict[tuple, list[str]]:
    """The plans every registered strategy names for a session, each decomposition once
    (with the specs that chose it)."""
    found: dict[tuple, list[str]] = {}
    for strategy in STRATEGIES.values():
        for spec in strategy.examples(session.optimizer()):
            plan = session.plan(spec)
            found.setdefault(tuple(sorted(plan.choices.items())), []).append(spec)
    return found


@pytest.mark.parametrize("expression", EXPRESSIONS)
def test_einsum_matches_numpy(expression, backend):
    """Every registered strategy, on the plans its registry entry names for the expression."""
    for k, density in enumerate(DENSITIES):
        ops = operands(expression, density, seed=k, sparse_matrices=(k % 2 == 1))
        expected = reference(expression, ops)
        with einsum_session(expression, *ops, backend=backend) as session:
            for specs in distinct_plans(session).values():
                got = session.run(specs[0]).outputs["OUT"]
                assert got.shape == np.shape(expected), (expression, density)
                np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-12,
                                           err_msg=f"{expression} density={density} plan={specs}")


def test_every_strategy_is_exercised_by_the_corpus():
    counts = dict.fromkeys(STRATEGIES, 0)
    for expression in EXPRESSIONS:
        with einsum_session(expression, *operands(expression, 0.3, seed=0)) as session:
            for name, strategy in STRATEGIES.items():
                counts[name] += len(strategy.examples(session.optimizer()))
    assert all(n >= 10 for n in counts.values()), counts


def test_sparse_payloads_are_planned_on_every_engine(backend):
    """The corpus runs plans with packed sparse operands on every engine, product-sums with
    one of them among them (the C kernels run those over the non-zeros), each checked
    against NumPy by test_einsum_matches_numpy."""
    sparse = product_sums = 0
    for expression in EXPRESSIONS:
        ops = operands(expression, DENSITIES[0], seed=0)
        with einsum_session(expression, *ops, backend=backend) as session:
            for key in distinct_plans(session):
                for name, choice in key:
                    v = session.dag.vertex(name)
                    sparse += bool(choice.sparse)
                    product_sums += len(choice.sparse) == 1 and v.op == "mul" and v.agg == "sum"
    assert sparse >= 20 and product_sums >= 10, (sparse, product_sums)


@pytest.mark.parametrize("expression,plan", [("ij,jk->ik", "Ij,jK->IK"), ("ij,jk->ik", "iJ,Jk->ik"),
                                             ("ij,jk,kl->il", "IJ,JK,Kl->Il"),
                                             ("bij,bjk->bik", "Bij,Bjk->Bik")])
def test_pinned_plans(expression, plan, backend):
    ops = operands(expression, 0.3, seed=7)
    np.testing.assert_allclose(einsum(expression, *ops, plan=plan, backend=backend),
                               reference(expression, ops), rtol=1e-9, atol=1e-12)


def test_scalar_operands_and_result(backend):
    assert einsum(",->", 2.0, 3.5, plan="dense", backend=backend) == pytest.approx(7.0)
    got = einsum("i,i", np.arange(4.0), np.arange(4.0), plan="relational", backend=backend)
    assert np.ndim(got) == 0 and float(got) == pytest.approx(14.0)


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo", "duplicates"])
def test_sparse_inputs_in_any_format_decompose_alike(fmt):
    rng = np.random.default_rng(7)
    rows, cols = rng.integers(0, 40, 300), rng.integers(0, 30, 300)
    values = rng.normal(size=300)
    matrix = sp.coo_matrix((values, (rows, cols)), shape=(40, 30))
    expected = matrix.toarray()           # duplicates summed
    if fmt == "duplicates":                 # not canonical: last row gets column 3 twice
        csr = matrix.tocsr()
        indptr = csr.indptr.copy()
        indptr[-1] += 2
        matrix = sp.csr_matrix((np.r_[csr.data, 1.5, 2.5], np.r_[csr.indices, 3, 3], indptr),
                               shape=(40, 30))
        expected[-1, 3] += 4.0
    else:
        matrix = matrix.asformat(fmt)
    for tiling in [(1, 1), (1, 30), (40, 1), (40, 30), (7, 4), (16, 30), (1, 8)]:
        np.testing.assert_allclose(compose(decompose(matrix, tiling), (40, 30), tiling), expected)
        if min(tiling) > 1:            # packed payloads: as the dense array's, packed
            got, want = decompose(matrix, tiling, True), decompose(expected, tiling, True)
            for a, b in zip(got.keys + [got.values, got.bounds], want.keys + [want.values, want.bounds]):
                np.testing.assert_array_equal(a, b)
    # a tensor in one tile keeps its tuple, all zero (one-tuple statements read it)
    empty = decompose(sp.csr_matrix((40, 30)), (40, 30), True)
    assert len(empty) == 1 and empty.values.size == 0
    for zeros in (sp.csr_matrix((40, 30)), np.zeros((40, 30))):
        assert decompose(zeros, (40, 30)).values.shape == (1, 1200)
    assert len(decompose(np.zeros((40, 30)), (20, 30))) == 0


@pytest.mark.parametrize("shape", [(40, 30), (40,), (6, 5, 4)])
@pytest.mark.parametrize("default", [0.0, np.inf])
def test_sparse_composition_keeps_the_entries_of_every_tiling(shape, default):
    """compose_sparse gives the entries that differ from the default (explicit zeros of a
    tensor of default 0 left out) at their coordinates, under every tiling, from dense
    and from packed payloads: as scipy.sparse would hold the dense array."""
    rng = np.random.default_rng(11)
    dense = np.where(rng.random(shape) < 0.2, rng.normal(size=shape), default)
    dense.flat[:3] = [0.0, -0.0, 1.0]
    stored = dense != default
    tilings = {(40, 30): [(1, 1), (1, 30), (40, 1), (40, 30), (7, 4), (16, 30), (1, 8)],
               (40,): [(1,), (8,), (40,)], (6, 5, 4): [(1, 1, 1), (2, 5, 1), (6, 5, 4)]}
    for tiling in tilings[shape]:
        for packed in (False, True) if default == 0 else (False,):
            got = compose_sparse(decompose(dense, tiling, packed, default), shape, tiling,
                                 default)
            assert got.shape == shape and got.format == ("csr" if len(shape) == 2 else "coo")
            coo = got.tocoo()
            assert sorted(zip(*coo.coords)) == sorted(zip(*np.nonzero(stored))), tiling
            np.testing.assert_array_equal(coo.data, dense[coo.coords])
            if len(shape) == 2:            # scipy's own index type for such a matrix
                assert got.indices.dtype == np.int32


def test_the_callers_data_is_left_unchanged():
    """Explicit zeros in a CSR matrix (and complex parts sharing its memory) stay as given."""
    matrix = sp.csr_matrix(np.array([[1.0, 0.0, 2.0], [0.0, 3.0, 0.0]]))
    matrix.data[1] = 0.0                      # an explicit zero
    before = (matrix.data.copy(), matrix.indices.copy(), matrix.indptr.copy())
    for plan in ("relational", "dense", "Ij,jk->Ik", "iJ,Jk->ik"):
        got = einsum("ij,jk->ik", matrix, np.ones((3, 2)), plan=plan)
        np.testing.assert_allclose(got, matrix.toarray() @ np.ones((3, 2)))
    for now, then in zip((matrix.data, matrix.indices, matrix.indptr), before):
        np.testing.assert_array_equal(now, then)
