"""Contraction order chosen with sparsity (optimizer.order) and sparse results."""
from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest
import scipy.sparse as sp

import sparse_einsum as se
from sparse_einsum.api import einsum_session
from sparse_einsum.errors import PlanError
from sparse_einsum.optimizer import search
from sparse_einsum.optimizer.order import DENSE, ENUMERATE, ProductKind, all_paths, tree_of
from sparse_einsum.optimizer.context import OptimizerContext
from sparse_einsum.optimizer.search import brute_force
from sparse_einsum.program.dag import Dag, Operand
from sparse_einsum.sql.duckdb import DuckDBBuiltinDialect, DuckDBDialect


def _mask(n: int, nnz: int, seed: int = 0) -> sp.csr_array:
    rng = np.random.default_rng(seed)
    m = sp.csr_array((rng.random(nnz) + 0.5, (rng.integers(0, n, nnz), rng.integers(0, n, nnz))),
                     shape=(n, n))
    m.sum_duplicates()
    return m


def _sddmm(n=400, nnz=2000, k=16):
    rng = np.random.default_rng(1)
    return rng.normal(size=(n, k)), _mask(n, nnz), rng.normal(size=(n, k))


def test_sddmm_keeps_the_mask_early():
    """No intermediate of the SDDMM estimated larger than the mask x k, whatever the plan
    (the plans share the DAG); opt_einsum's path multiplies X and Y densely first."""
    x, m, y = _sddmm()
    bound = m.nnz * x.shape[1]
    with einsum_session("ik,ij,jk->ij", x, m, y, backend=None, dialect=DuckDBDialect()) as session:
        stats = session.optimizer().stats
        assert all(stats[v.name].nnz <= bound for v in session.dag.vertices)
        assert all(set(v.labels) != {"i", "j"} or m.shape[0] * m.shape[1] > stats[v.name].nnz
                   for v in session.dag.vertices)
        for plan in session.plans("rank:1", 3):
            assert all(plan.statement_costs[v.name].est_tuples <= bound
                       for v in session.dag.vertices)
    with einsum_session("ik,ij,jk->ij", x, m, y, backend=None, dialect=DuckDBDialect(),
                        paths="opt_einsum") as session:
        stats = session.optimizer().stats
        assert max(stats[v.name].nnz for v in session.dag.vertices) > 0.99 * m.shape[0] * m.shape[1]


@pytest.mark.parametrize("plan", ["optimal", "rank:2", "relational"])
def test_sddmm_values_as_sparse_results(backend, plan):
    x, m, y = _sddmm(n=60, nnz=300, k=8)
    expected = np.einsum("ik,ij,jk->ij", x, m.toarray(), y)
    result = se.einsum("ik,ij,jk->ij", x, m, y, plan=plan, backend=backend, format="sparse")
    assert sp.issparse(result) and result.format == "csr" and result.dtype == np.float64
    np.testing.assert_allclose(result.toarray(), expected, rtol=1e-9, atol=1e-12)
    assert result.nnz == np.count_nonzero(expected)


# (subscripts, which operands are sparse): chains and trees of a graph and dense features
SMALL_PRODUCTS = [
    ("ij,jk,kl->il", (0,)),
    ("ij,jk,kl->il", (1,)),
    ("ik,ij,jk->ij", (1,)),
    ("ij,jk,kl,lm->im", (0, 2)),
    ("ij,ik,il,i->jkl", (3,)),
]
# four operands: without sparse payloads (the dialect of compiled jobs), so that brute
# force over 15 trees stays quick
FOUR = {"ij,jk,kl,lm->im", "ij,ik,il,i->jkl"}


def _operands(subscripts: str, sparse: tuple[int, ...], n: int = 24):
    rng = np.random.default_rng(2)
    terms = subscripts.split("->")[0].split(",")
    sizes = {l: n if l in "ijl" else 8 for l in "ijklm"}
    ops = []
    for k, term in enumerate(terms):
        shape = tuple(sizes[l] for l in term)
        array = rng.normal(size=shape)
        if k in sparse:
            array *= rng.random(shape) < 0.08
        ops.append(array)
    return ops


@pytest.mark.parametrize("subscripts,sparse", SMALL_PRODUCTS)
def test_order_and_decompositions_equal_brute_force(subscripts, sparse):
    """Per path the DP's price equals brute force over its decompositions, and the
    session's optimal plan costs the minimum of brute force over (path x decomposition):
    the pruning of four-operand trees by estimated work keeps the best tree here (labels
    of at most 24 have no tile sizes, so pricing without tiles is the full space)."""
    ops = _operands(subscripts, sparse)
    dialect = DuckDBBuiltinDialect() if subscripts in FOUR else DuckDBDialect()
    with einsum_session(subscripts, *ops, backend=None, dialect=dialect) as session:
        chooser = session._paths
        terms, target = subscripts.split("->")
        operands = [Operand(f"T{k}", tuple(t)) for k, t in enumerate(terms.split(","))]
        assert len(operands) <= ENUMERATE
        dag = _inputs_only(session.dag)
        brute = []
        for path in all_paths(len(operands)):
            product = chooser.product_dag(dag, operands, path, tuple(target), 1.0)
            ctx = OptimizerContext.build(product, {t: chooser.stats[t] for t in product.inputs},
                                         chooser.params, **chooser.options)
            brute.append(brute_force(ctx.space, 1)[0].total)
            assert chooser.price(dag, operands, path, tuple(target)) == pytest.approx(brute[-1])
            # bounded by another path's price: the same price, or inf where it cannot win
            for below in (2 * brute[-1], brute[-1] / 2):
                bounded = chooser.price(dag, operands, path, tuple(target), below=below)
                assert bounded == pytest.approx(brute[-1]) or (
                    bounded == math.inf and below < brute[-1])
        best = session.plans("optimal")[0].cost
        assert best == pytest.approx(min(brute), rel=1e-9)


def test_paths_that_cannot_win_are_not_searched(monkeypatch):
    """A path whose lower bound (the sum of its vertices' least costs) is above the
    cheapest price found so far runs no search: of the chain's three trees, only the one
    priced first, the cheapest, is searched, and it is the order chosen. The bound is
    summed vertex by vertex and stops once above: the last tree priced costs the choices
    of one of its two vertices."""
    searches, costed = [], set()
    greedy, options = search.greedy, search.SearchSpace.vertex_options
    monkeypatch.setattr(search, "greedy", lambda space: searches.append(space) or greedy(space))
    monkeypatch.setattr(search.SearchSpace, "vertex_options",
                        lambda space, v: costed.add((space, v.name)) or options(space, v))
    ops = _operands("ij,jk,kl->il", (0,))
    with einsum_session("ij,jk,kl->il", *ops, backend=None, dialect=DuckDBDialect()) as session:
        priced = len(searches)
        vertices = sorted(Counter(space for space, _ in costed).values())
        chooser = session._paths
        operands = [Operand(f"T{k}", tuple(t)) for k, t in enumerate(("ij", "jk", "kl"))]
        prices = {tree_of(path): chooser.price(_inputs_only(session.dag), operands, path,
                                               ("i", "l")) for path in all_paths(3)}
        first = session.dag.vertices[0]
    assert priced == 1 and len(set(prices.values())) == 3
    assert vertices == [1, 2, 2]
    assert prices[tree_of([(0, 1), (0, 1)])] == min(prices.values())
    assert [o.tensor for o in first.operands] == ["T0", "T1"]


@pytest.mark.parametrize("ring,agg", [("min_plus", "min"), ("max_plus", "max")])
@pytest.mark.parametrize("subscripts,sparse", SMALL_PRODUCTS[:3])
def test_semiring_orders_equal_brute_force(subscripts, sparse, ring, agg):
    """The same for min-plus and max-plus products (their sparse operands' absent entries
    inf or -inf): each path priced as that product, the optimal plan the minimum over
    (path x decomposition)."""
    ops = [sp.csr_array(x) if k in sparse else x
           for k, x in enumerate(_operands(subscripts, sparse))]
    kind = ProductKind("add", agg)
    with einsum_session(subscripts, *ops, backend=None, dialect=DuckDBDialect(),
                        semiring=ring) as session:
        chooser = session._paths
        terms, target = subscripts.split("->")
        operands = [Operand(f"T{k}", tuple(t)) for k, t in enumerate(terms.split(","))]
        dag = _inputs_only(session.dag)
        brute = []
        for path in all_paths(len(operands)):
            product = chooser.product_dag(dag, operands, path, tuple(target), 1.0, kind)
            assert {v.op for v in product.vertices} == {"add"}
            ctx = OptimizerContext.build(product, {t: chooser.stats[t] for t in product.inputs},
                                         chooser.params, **chooser.options)
            brute.append(brute_force(ctx.space, 1)[0].total)
            assert chooser.price(dag, operands, path, tuple(target), 1.0, kind) == \
                pytest.approx(brute[-1])
        assert session.plans("optimal")[0].cost == pytest.approx(min(brute), rel=1e-9)


def test_a_step_lays_out_its_sparser_operands_labels_first(backend):
    """Each intermediate of a product lists its sparser operand's labels first (where
    that is sparse), so that a kernel driven by that operand's entries runs over the
    other's labels contiguously; every plan gives NumPy's values."""
    rng = np.random.default_rng(5)
    g, a = rng.normal(size=(50, 8)), _mask(50, 150, seed=6)
    x = sp.random_array((50, 30), density=0.2, rng=7, format="csr")
    subscripts = "ih,ij,jf->fh"
    with einsum_session(subscripts, g, a, x, backend=None, dialect=DuckDBDialect()) as session:
        stats, dag = session.optimizer().stats, session.dag
        steps = [v for v in dag.vertices if v.name not in dag.outputs]
        assert steps
        for v in steps:
            full = [stats[o.tensor].nnz / np.prod(dag.shapes[o.tensor]) for o in v.operands]
            assert min(full) < DENSE
            sparser = v.operands[int(np.argmin(full))]
            kept = tuple(l for l in sparser.labels if l in v.labels)
            assert v.labels[:len(kept)] == kept
    expected = np.einsum(subscripts, g, a.toarray(), x.toarray())
    for plan in ("optimal", "dense", "relational"):
        result = se.einsum(subscripts, g, a, x, plan=plan, backend=backend)
        assert result.dtype == np.float64
        np.testing.assert_allclose(result, expected, rtol=1e-9, atol=1e-12)


def _inputs_only(dag: Dag) -> Dag:
    return Dag(dag.inputs, {t: dag.shapes[t] for t in dag.inputs}, [],
               defaults=dag.input_defaults)


def test_trees_are_enumerated_once():
    assert [len(list(all_paths(n))) for n in (2, 3, 4, 5)] == [1, 3, 15, 105]


def test_many_operands_follow_a_greedy_sparse_path(backend):
    """Beyond ENUMERATE operands the path is opt_einsum's or the sparse greedy one,
    whichever the cost model prefers; the values are NumPy's."""
    rng = np.random.default_rng(3)
    a = _mask(40, 120, seed=4)
    x = rng.normal(size=(40, 6))
    w = [rng.normal(size=(6, 6)) for _ in range(3)]
    ops = [a, a, x, *w]
    subscripts = "ij,jk,ka,ab,bc,cd->id"
    expected = np.einsum(subscripts, a.toarray(), a.toarray(), x, *w, optimize=True)
    result = se.einsum(subscripts, *ops, backend=backend)
    np.testing.assert_allclose(result, expected, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("subscripts", ["ij,jk->ijk", "ij,j->i", "ij->"])
def test_sparse_results_of_other_ranks(duck, subscripts):
    m = _mask(20, 60, seed=5).astype(np.float32)
    v = np.random.default_rng(6).normal(size=(20, 3) if "k" in subscripts else 20)
    ops = (m,) if subscripts == "ij->" else (m, v)
    expected = np.einsum(subscripts, *(o.toarray() if sp.issparse(o) else o for o in ops))
    result = se.einsum(subscripts, *ops, backend=duck, format="sparse")
    if expected.ndim == 0:
        assert not sp.issparse(result)
        np.testing.assert_allclose(result, expected, rtol=1e-6)
        return
    assert sp.issparse(result) and result.dtype == expected.dtype
    np.testing.assert_allclose(result.todense(), expected, rtol=1e-6)


def test_sparse_results_keep_numpy_dtypes(duck):
    m = _mask(15, 40, seed=7)
    c = m.astype(np.complex128) * (1 - 2j)
    y = np.random.default_rng(8).normal(size=(15, 4))
    result = se.einsum("ij,jk->ik", c, y, backend=duck, format="sparse")
    assert result.dtype == np.complex128
    np.testing.assert_allclose(result.toarray(), c.toarray() @ y, rtol=1e-9)
    ints = (m > 0).astype(np.int64)
    result = se.run("input A[i,j]\nB[i,j] = A[i,j] * A[i,j]\noutput B", {"A": ints},
                    backend=duck, format="sparse")["B"]
    assert result.dtype == np.int64 and (result != ints).nnz == 0


def test_format_auto_and_bad_formats(duck):
    m = _mask(30, 50, seed=9)
    dense = np.ones((30, 30))
    assert sp.issparse(se.einsum("ij,ij->ij", m, dense, backend=duck, format="auto"))
    assert isinstance(se.einsum("ij,jk->ik", dense, dense, backend=duck, format="auto"),
                      np.ndarray)
    with pytest.raises(PlanError, match="format 'csr'"):
        se.einsum("ij->ij", m, backend=duck, format="csr")


def test_paths_must_be_known():
    with pytest.raises(PlanError, match="paths 'dp'"):
        einsum_session("ij,jk,kl->il", np.ones((2, 2)), np.ones((2, 2)), np.ones((2, 2)),
                       backend=None, dialect=DuckDBDialect(), paths="dp")
