"""Einsum over semirings and tensors whose absent entries are not 0, against NumPy
references that implement each semiring; shortest paths, reachability levels and Viterbi
decoding against scipy.sparse.csgraph and NumPy."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.csgraph import dijkstra, shortest_path

import sparse_einsum as se
from experiments.paths import (numpy_viterbi, random_graph, reachability_levels, scipy_step,
                               shortest_paths, viterbi, with_loops)
from sparse_einsum.api import einsum_session
from sparse_einsum.errors import DataError, PlanError
from sparse_einsum.optimizer.strategies import STRATEGIES
from sparse_einsum.plan import Plan
from sparse_einsum.program.semirings import SEMIRINGS
from sparse_einsum.reference import semiring_einsum
from sparse_einsum.sql.native import NativeDialect

EXPRESSIONS = ("ij,jk->ik", "ij,j->i", "i,ij->j", "ij->i", "ij,ij->ij", "ij,jk,k->i")


def _operands(expression: str, ring, seed: int) -> list[object]:
    """A scipy.sparse matrix (explicit zeros among its entries: real ones in min-plus) per
    2-D term, and dense vectors holding the semiring's zero here and there."""
    rng = np.random.default_rng(seed)
    found = []
    for k, term in enumerate(expression.split("->")[0].split(",")):
        if len(term) == 2:
            m = sp.random(6, 6, density=0.35, random_state=seed + k, format="csr")
            m.data = np.round(m.data * 10) - 2.0
            found.append(m)
        else:
            v = rng.integers(-3, 5, 6).astype(np.float64)
            v[rng.random(6) < 0.3] = ring.zero
            found.append(v)
    return found


def _plans(session) -> dict[tuple, str]:
    """Each distinct decomposition the registered strategies name."""
    found: dict[tuple, str] = {}
    for strategy in STRATEGIES.values():
        for spec in strategy.examples(session.optimizer()):
            try:
                plan = session.plan(spec)
            except PlanError as exc:
                assert "distinct plans" in str(exc), exc
                continue
            found.setdefault(tuple(sorted(plan.choices.items())), spec)
    return found


@pytest.mark.parametrize("name", list(SEMIRINGS))
@pytest.mark.parametrize("expression", EXPRESSIONS)
def test_every_semiring_under_every_strategy(name, expression, backend):
    ring = SEMIRINGS[name]
    ops = _operands(expression, ring, seed=len(expression))
    expected = semiring_einsum(expression, ops, ring)
    with einsum_session(expression, *ops, backend=backend, semiring=name) as session:
        plans = _plans(session)
        assert any(b > 1 for choices in plans for _, c in choices for _, b in c.tiles)
        for spec in plans.values():
            got = session.run(spec).outputs["OUT"]
            assert got.dtype == expected.dtype, (name, expression, spec)
            _assert_equal(got, expected, f"{name} {expression} {spec}")


def _assert_equal(got: np.ndarray, expected: np.ndarray, what: str) -> None:
    """Equal values, up to the rounding of sums taken in another order (min and max
    distribute over +, so a min-plus product of three is contracted pairwise)."""
    if expected.dtype == bool:
        np.testing.assert_array_equal(got, expected, err_msg=what)
    else:
        np.testing.assert_allclose(got, expected, rtol=1e-13, atol=0, err_msg=what)


@pytest.mark.parametrize("name", ["min_plus", "max_plus"])
def test_arrays_hold_the_semirings_zero(name, backend):
    """Plans that keep min-plus (max-plus) values in arrays: dense arrays hold inf (-inf)
    where entries are absent, tiles that are all inf are not stored, and a scipy.sparse
    operand read packed keeps only its stored entries (the kernel runs over them); the
    dense operand holds the zero too, and once the opposite infinity (densified)."""
    ring = SEMIRINGS[name]
    W = sp.random(12, 12, density=0.2, random_state=4, format="csr")
    W.data = np.round(W.data * 6) - 1.0                  # stored zeros among them
    x = np.round(np.random.default_rng(4).normal(size=12) * 3)
    x[[2, 5]] = ring.zero
    for vector in (x, np.where(np.arange(12) == 7, -ring.zero, x)):
        expected = semiring_einsum("ij,j->i", [W, vector], ring)
        with einsum_session("ij,j->i", W, vector, backend=backend, semiring=name) as session:
            dense = session.plan("dense")
            (v,) = session.dag.vertices
            packed = replace(dense, choices={v.name: replace(dense.choices[v.name],
                                                             sparse=frozenset({0}))})
            for plan in (dense, session.plan("Ij,j->I"), session.plan("I/4j/4,j/4->I/4"), packed):
                _assert_equal(session.run(plan).outputs["OUT"], expected, f"{name} {plan.name}")
            if isinstance(session.dialect, NativeDialect):    # the spec marks W's fill
                sql = " ".join(s.sql for s in session.compile(packed).statements())
                assert f"~{ring.zero!r}:" in sql
    # an array result read as scalars (exploded, entries of the zero left out) and scalars
    # stacked into arrays (filled with the zero); T's pieces of the zero are left out
    expected = semiring_einsum("ij,jk,k->i", [W, W, x], ring)
    with einsum_session("ij,jk,k->i", W, W, x, backend=backend, semiring=name) as session:
        first, second = session.dag.vertices
        for promoted in ((), second.all_labels), (first.all_labels, ()):
            plan = Plan.promoting(session.dag, dict(zip((first.name, second.name), promoted)))
            labels = {s.label.split()[0] for s in session.compile(plan).statements()}
            assert labels & {"explode", "stack"}, labels
            _assert_equal(session.run(plan).outputs["OUT"], expected, f"{name} {promoted}")


@pytest.mark.parametrize("name", ["min_plus", "max_plus"])
def test_min_and_max_are_pushed_past_plus(name):
    """A min-plus product of three contracts two first, never forming the three-way join."""
    W = sp.random(6, 6, density=0.4, random_state=0, format="csr")
    with einsum_session("ij,jk,k->i", W, W, np.arange(6.0), semiring=name) as session:
        assert [len(v.all_labels) for v in session.dag.vertices] == [2, 2]


@pytest.mark.parametrize("name", list(SEMIRINGS))
def test_sparse_product_equals_numpy_with_zero_for_absent(name):
    """`einsum("ij,jk->ik", W, W, semiring=...)` on scipy.sparse W: the NumPy product with
    the semiring's zero (inf for min-plus) for W's unstored entries; a sparse result
    stores exactly the entries that differ from the zero (explicit 0 edges included)."""
    ring = SEMIRINGS[name]
    W = sp.random(40, 40, density=0.08, random_state=3, format="csr")
    W.data = np.round(W.data * 5)                         # some stored zeros
    dense = np.full(W.shape, ring.zero)
    coo = W.tocoo()
    dense[coo.row, coo.col] = coo.data
    if ring.boolean:
        dense = dense.astype(bool)
    expected = ring.numpy_sum.reduce(ring.numpy_product(dense[:, :, None], dense[None]), axis=1)
    dense_result = se.einsum("ij,jk->ik", W, W, semiring=name, format="dense")
    np.testing.assert_array_equal(dense_result, expected)
    assert dense_result.dtype == expected.dtype
    got = se.einsum("ij,jk->ik", W, W, semiring=name, format="sparse")
    stored = sp.coo_array(got)
    assert stored.nnz == np.count_nonzero(expected != ring.zero)
    result = np.full(W.shape, ring.zero, dtype=stored.dtype)
    result[stored.row, stored.col] = stored.data
    np.testing.assert_array_equal(result, expected)
    assert result.dtype == expected.dtype


def test_dense_operands_are_read_as_they_are():
    """An inf in a dense min-plus operand is an absent edge, a 0 a 0-weight edge."""
    A = np.array([[0.0, np.inf], [2.0, 1.0]])
    expected = np.min(A[:, :, None] + A[None], axis=1)
    np.testing.assert_array_equal(se.einsum("ij,jk->ik", A, A, semiring="min_plus"), expected)


def test_broadcast_sparse_operand_keeps_its_zero():
    """A scipy.sparse row broadcast along a size-1 axis: its stored 0 is a 0, its unstored
    entry the semiring's zero."""
    row = sp.csr_array((np.array([0.0, 2.0]), np.array([0, 1]), np.array([0, 2])), shape=(1, 3))
    B = np.arange(12.0).reshape(4, 3)
    np.testing.assert_array_equal(
        se.einsum("ij,ij->ij", row, B, semiring="min_plus", format="dense"),
        np.array([[0.0, 2.0, np.inf]]) + B)


def test_unknown_semiring_lists_the_known_ones():
    with pytest.raises(DataError, match="unknown semiring 'tropical': use one of plus_times, "
                                        "min_plus") as info:
        se.einsum("ij,jk->ik", np.eye(2), np.eye(2), semiring="tropical")
    assert "\n" not in str(info.value)


def test_program_defaults_fill_outputs():
    """`input A[i,j] default inf` in a program: the output comes back dense with inf where
    it has no entry, or as scipy.sparse holding the entries other than inf."""
    program = "input A[i,j] default inf\ninput x[j] default inf\ny[i] = min(A[i,j] + x[j])\n"
    A = sp.csr_array(np.array([[0.0, 3.0, 0.0], [0.0, 0.0, 0.0], [1.0, 0.0, 0.0]]))
    A.eliminate_zeros()
    x = np.array([np.inf, 0.0, 5.0])
    dense = se.run(program, {"A": A, "x": x})["y"]
    np.testing.assert_array_equal(dense, [3.0, np.inf, np.inf])
    sparse = se.run(program, {"A": A, "x": x}, format="sparse")["y"]
    assert sp.issparse(sparse) and sparse.nnz == 1


def test_a_minimum_over_a_default_that_changes_it_stays_relational():
    """min over absent entries of 5 folds 5 in: array aggregates fold in 0, so a plan that
    keeps it in arrays is refused in one line, and the optimizer promotes every label."""
    program = "input A[i,j] default 5\ny[i] = min(A[i,j])\n"
    A = np.array([[1.0, 5.0, 7.0], [6.0, 8.0, 9.0]])
    with se.Session(program, {"A": A}) as session:
        with pytest.raises(PlanError, match="min over absent tuples would miss their default"):
            session.run("Ij->I")
        np.testing.assert_array_equal(session.run("optimal").outputs["y"], A.min(axis=1))


def test_sum_over_a_finite_default_is_one_line_error():
    program = "input A[i,j] default 2\ny[i] = A[i,j] * A[i,j]\n"
    with pytest.raises(se.errors.ProgramError, match="a sum over absent entries of value 4.0"):
        se.run(program, {"A": np.eye(3)})


def test_shortest_paths_equal_dijkstra(backend):
    graph = random_graph(60, 240, seed=5)
    distances, steps = shortest_paths(graph, 0, backend=backend)
    np.testing.assert_array_equal(distances, dijkstra(graph, indices=0))
    assert steps > 2


def test_scipy_step_is_a_min_plus_step():
    graph = random_graph(50, 200, seed=2)
    looped = with_loops(graph)
    d = np.full(50, np.inf)
    d[[0, 7]] = [0.0, 1.5]
    np.testing.assert_array_equal(
        scipy_step(d, sp.csc_array(looped)),
        se.einsum("i,ij->j", d, looped, semiring="min_plus", format="dense"))


def test_reachability_levels_equal_breadth_first_search():
    graph = random_graph(80, 150, seed=4)
    expected = shortest_path(graph, unweighted=True, indices=3)
    expected = np.where(np.isinf(expected), -1, expected).astype(int)
    np.testing.assert_array_equal(reachability_levels(graph, 3), expected)


def test_viterbi_equals_numpy():
    rng = np.random.default_rng(0)
    transitions, emissions = rng.dirichlet(np.ones(5), 5), rng.dirichlet(np.ones(4), 5)
    start = rng.dirichlet(np.ones(5))
    observations = [int(o) for o in rng.integers(0, 4, 12)]
    path, probability = viterbi(transitions, emissions, start, observations)
    expected_path, expected_probability = numpy_viterbi(transitions, emissions, start,
                                                        observations)
    np.testing.assert_array_equal(path, expected_path)
    assert probability == pytest.approx(expected_probability, rel=1e-12)


def test_semirings_on_spark(spark):
    """Every semiring on Spark's default plan; min-plus (whose zero is not 0) under every
    strategy's plans and with W packed in tiles (the JVM kernels' packed input of default
    inf)."""
    W = sp.random(8, 8, density=0.3, random_state=1, format="csr")
    for name, ring in SEMIRINGS.items():
        got = se.einsum("ij,jk->ik", W, W, semiring=name, backend=spark, format="dense")
        _assert_equal(got, semiring_einsum("ij,jk->ik", [W, W], ring), name)
        assert got.dtype == (bool if ring.boolean else np.float64)
    expected = semiring_einsum("ij,jk->ik", [W, W], SEMIRINGS["min_plus"])
    with einsum_session("ij,jk->ik", W, W, backend=spark, semiring="min_plus") as session:
        tiled = session.plan("I/4j,jK/4->I/4K/4")
        (v,) = session.dag.vertices
        packed = replace(tiled, choices={v.name: replace(tiled.choices[v.name],
                                                         sparse=frozenset({0}))})
        for plan in [*_plans(session).values(), packed]:
            _assert_equal(session.run(plan).outputs["OUT"], expected, f"min_plus {plan}")
