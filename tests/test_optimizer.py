"""The optimizer: DP optimal for its cost model, estimator accuracy, plan choices, ranks."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from sparse_einsum import Session
from sparse_einsum.capabilities import Capabilities
from sparse_einsum.cost import CostModel, CostParams, DEFAULT_PARAMS
from sparse_einsum.optimizer import search
from sparse_einsum.optimizer.search import (
    LoadItem, SearchSpace, brute_force, dynamic_programming, greedy,
)
from sparse_einsum.plan import Choice, Plan
from sparse_einsum.program.parser import load_program
from sparse_einsum.api import einsum_session
from sparse_einsum.reference import evaluate
from sparse_einsum.sql.duckdb import DuckDBDialect
from sparse_einsum.explanation import format_explanation
from sparse_einsum.stats import tensor_stats
from sparse_einsum.stats.tensor_stats import TileCounts, exact_stats

DAGS = {
    "chain": ("""input A[i,j]
input X[j,k]
input Y[k,l]
input w[l]
B[i,k] = A[i,j] * X[j,k]
C[i,l] = B[i,k] * Y[k,l]
E[i] = C[i,l] * w[l]""", {"A": (30, 20), "X": (20, 8), "Y": (8, 6), "w": (6,)}),
    "tree": ("""input A[i,j]
input B[j,k]
input C[k,l]
input D[l,m]
P[i,k] = A[i,j] * B[j,k]
Q[k,m] = C[k,l] * D[l,m]
R[i,m] = P[i,k] * Q[k,m]""", {"A": (25, 12), "B": (12, 9), "C": (9, 14), "D": (14, 5)}),
    "shared": ("""input A[i,j]
input B[j,k]
input C[k,l]
input D[i,l]
P[i,k] = A[i,j] * B[j,k]
Q[i,l] = P[i,k] * C[k,l]
R[k,l] = P[i,k] * D[i,l]
S[i,k] = Q[i,l] * R[k,l]""", {"A": (20, 15), "B": (15, 10), "C": (10, 6), "D": (20, 6)}),
    "input_used_twice": ("""input X[i,m]
input WQ[m,k]
input WK[m,k]
input A[i,j]
T0[i,k] = X[i,m] * WQ[m,k]
T1[j,k] = X[j,m] * WK[m,k]
T2[i,j,k] = T0[i,k] * A[i,j]
T3[i,j] = T2[i,j,k] * T1[j,k]""", {"X": (24, 16), "WQ": (16, 8), "WK": (16, 8), "A": (24, 24)}),
    "mixed_ops": ("""input A[i,j]
input B[j,k]
input C[i,k]
P[i,k] = A[i,j] * B[j,k]
Q[i,k] = P[i,k] + C[i,k]
R[i] = max(relu(Q[i,k]))""", {"A": (18, 10), "B": (10, 7), "C": (18, 7)}),
}
PARAMS = [DEFAULT_PARAMS["duckdb"], CostParams(1e-8, 1e-10, 1e-6, 1e-9),
          CostParams(1e-10, 1e-8, 1e-8, 1e-8)]


def _session(program, data, **options) -> Session:
    """A session that only plans (no database), statements as written (not fused)."""
    return Session(program, data, backend=None, dialect=DuckDBDialect(),
                   **{"paths": "opt_einsum", **options})


def _einsum(subscripts: str, data: dict) -> Session:
    return einsum_session(subscripts, *data.values(), backend=None, dialect=DuckDBDialect())


def _space(text, data, params) -> SearchSpace:
    ctx = _session(text, data).optimizer()
    return SearchSpace(ctx.dag, CostModel(ctx.dag, ctx.stats, params), {})


def _relational(v) -> Choice:
    return Choice.of({l: 1 for l in v.all_labels})


def _data(shapes, seed):
    rng = np.random.default_rng(seed)
    data = {}
    for k, (name, shape) in enumerate(sorted(shapes.items())):
        density = [0.03, 0.3, 1.0][(k + seed) % 3]
        data[name] = np.where(rng.random(shape) < density, rng.normal(size=shape), 0.0)
    return data


@pytest.mark.parametrize("params", PARAMS, ids=["calibrated", "tuple-heavy", "flop-heavy"])
@pytest.mark.parametrize("name", sorted(DAGS))
def test_dp_is_optimal_for_its_cost_model(name, params):
    text, shapes = DAGS[name]
    for seed in range(2):
        space = _space(text, _data(shapes, seed), params)
        best = brute_force(space)[0]
        found = dynamic_programming(space, k=3)
        assert found[0].total == pytest.approx(best.total, rel=1e-9)
        assert [p.total for p in found] == sorted(p.total for p in found)
        for p in found:   # the reported cost is the cost of the plan it describes
            assert space.cost(dict(p.choices)).total == pytest.approx(p.total, rel=1e-9)
        assert greedy(space).total >= best.total * (1 - 1e-9)


@pytest.mark.parametrize("params", PARAMS, ids=["calibrated", "tuple-heavy", "flop-heavy"])
def test_joint_enumeration_when_few_combinations_could_beat_greedy(params, monkeypatch):
    """P is read twice and has four output tilings; with limits of one combination they
    are enumerated (one DP per tiling, exact) when at most one has a lower bound below
    greedy's plan, else one wide DP runs, and none when no bound is below greedy's plan;
    either way the DP finds brute force's best (the three cases each occur below)."""
    from sparse_einsum.optimizer import search

    monkeypatch.setattr(search, "JOINT_LIMIT", 1)
    monkeypatch.setattr(search, "JOINT_LIMIT_BEST", 1)
    text, shapes = DAGS["shared"]
    for seed in range(2):
        space = _space(text, _data(shapes, seed), params)
        fixed_runs = []
        run_dp = space.run_dp
        space.run_dp = lambda k, fixed: fixed_runs.append(fixed) or run_dp(k, fixed)
        found = dynamic_programming(space, k=1)
        assert found[0].total == pytest.approx(brute_force(space)[0].total, rel=1e-9)
        p = space.dag.vertex("P")
        outs = [sorted({c.tiling(p.labels) for c in space.options["P"]})]
        below = sum(bound <= greedy(space).total
                    for bound, *_ in search._joint_runs(space, [p], outs, []))
        assert len(outs[0]) == 4
        if below == 0:           # every bound above greedy's plan: it is the best
            assert fixed_runs == []
        else:
            assert fixed_runs and (all(fixed_runs) if below <= 1 else fixed_runs == [{}])


def test_dp_is_optimal_over_tiles():
    """Labels large enough for tiles: the DP still equals brute force over every choice."""
    text = "input A[i,j]\ninput B[j,k]\ninput C[k,l]\nP[i,k] = A[i,j] * B[j,k]\nQ[i,l] = P[i,k] * C[k,l]"
    data = _data({"A": (256, 200), "B": (200, 130), "C": (130, 9)}, 0)
    for params in PARAMS:
        space = _space(text, data, params)
        assert any(b not in (1, 256) for c in space.options["P"] for l, b in c.tiles if l == "i")
        assert dynamic_programming(space, 1)[0].total == pytest.approx(
            brute_force(space)[0].total, rel=1e-9)


def test_dp_is_optimal_with_stored_inputs():
    text, shapes = DAGS["shared"]
    space = _space(text, _data(shapes, 3), PARAMS[0])
    space.stored = {name: (1,) * len(s) for name, s in shapes.items()}
    assert dynamic_programming(space, 1)[0].total == pytest.approx(
        brute_force(space)[0].total, rel=1e-9)


@pytest.mark.parametrize("name", sorted(DAGS))
def test_ranked_and_greedy_plans_compute_the_same_numbers(name, duck):
    text, shapes = DAGS[name]
    program = load_program(text)
    data = _data(shapes, 1)
    expected = evaluate(program, data)
    with Session(program, data, backend=duck) as session:
        plans = session.plans("optimal", 3) + session.plans("greedy")
        assert len({tuple(sorted(p.choices.items())) for p in plans[:3]}) == 3
        for plan in plans:
            got = session.run(plan).outputs
            for out in program.outputs:
                np.testing.assert_allclose(got[out], expected[out], rtol=1e-9, atol=1e-12)


# -- estimator accuracy -------------------------------------------------------------------
def _uniform(n, m, nnz, seed):
    return sp.random(n, m, density=nnz / (n * m), format="csr", random_state=seed)


def test_formula_7_within_20_percent_on_uniform_data():
    a = _uniform(5000, 3000, 20000, 0)
    stats = exact_stats(a)
    truth_rows = np.count_nonzero(np.diff(a.indptr))
    assert stats.tuples((1, 3000)) == pytest.approx(truth_rows, rel=0.2)
    # three-way tensor, blocks over two axes
    rng = np.random.default_rng(0)
    t = np.where(rng.random((40, 50, 30)) < 0.002, 1.0, 0.0)
    est = exact_stats(t).tuples((1, 50, 1))
    assert est == pytest.approx(np.count_nonzero(t.any(axis=1)), rel=0.2)


@pytest.mark.parametrize("lazy_bytes", [TileCounts.LAZY_BYTES, 0])
@pytest.mark.parametrize("shape", [(300, 200), (257, 4099), (70, 5000)])
def test_tile_counts_of_inputs_are_exact(shape, lazy_bytes, monkeypatch):
    """The non-empty tiles of every candidate tiling, counted for a matrix given sparse
    (with an explicit zero and duplicates summing to zero) or dense, equal a count of
    the distinct (row tile, column tile) pairs; an all-zero matrix has none. Counted
    when first asked, or at once (`lazy_bytes` 0)."""
    monkeypatch.setattr(TileCounts, "LAZY_BYTES", lazy_bytes)
    m = sp.random(*shape, density=0.01, format="coo", random_state=3)
    m = sp.coo_matrix((np.r_[m.data, 0.0, 1.0, -1.0],
                       (np.r_[m.row, 0, 3, 3], np.r_[m.col, 1, 5, 5])), shape=shape)
    dense = m.toarray()
    rows, cols = np.nonzero(dense)
    for given in (m, m.tocsr(), dense):
        counts = exact_stats(given).tile_counts
        assert counts
        for (b0, b1), count in counts.items():
            assert count == len(set(zip(rows // b0, cols // b1))), (type(given), b0, b1)
    assert set(exact_stats(sp.csr_array(shape)).tile_counts.values()) == {0.0}


def test_tiles_are_searched_when_the_plan_without_them_costs_enough(monkeypatch):
    """A plan estimated under `tiles_above` seconds without tiles is searched without
    them, and its inputs' tiles are never counted; with `tiles_above=0` the tiled space
    is searched (the inputs' tiles counted once each) and its best plan costs at most as
    much; `explain` says which."""
    counted = []
    real = tensor_stats._tile_counts
    monkeypatch.setattr(tensor_stats, "_tile_counts",
                        lambda *args: counted.append(args[0]) or real(*args))
    rng = np.random.default_rng(5)
    a = sp.random(400, 300, density=0.02, format="csr", random_state=5)
    data = {"A": a, "X": rng.normal(size=(300, 16))}
    text = "input A[i,j]\ninput X[j,k]\nY[i,k] = A[i,j] * X[j,k]\noutput Y"
    flat = _session(text, data)
    best = flat.plan("optimal")
    ctx = flat.optimizer()
    assert not ctx.space.tiled and ctx.untiled_cost == pytest.approx(best.cost)
    assert best.cost <= ctx.tiles_above and counted == []
    assert "tiles not searched" in format_explanation(flat.explain(top=1))
    tiled = _session(text, data, tiles_above=0.0)
    assert tiled.optimizer().space.tiled and tiled.optimizer().untiled_cost is None
    assert tiled.plan("optimal").cost <= best.cost * (1 + 1e-9)
    assert counted == [a.shape]
    assert "tiles not searched" not in format_explanation(tiled.explain(top=1))


def test_join_and_aggregate_estimates_within_20_percent_on_uniform_data():
    a, b = _uniform(3000, 2000, 15000, 1), _uniform(2000, 2500, 12000, 2)
    ctx = _einsum("ij,jk->ik", {"T0": a, "T1": b}).optimizer()
    cost = ctx.model.vertex(ctx.dag.vertices[0], _relational(ctx.dag.vertices[0]))
    a_csc = a.tocsc()
    truth_join = int(np.sum(np.diff(a_csc.indptr) * np.diff(b.indptr)))
    truth_out = (a @ b).nnz
    assert cost.join_tuples == pytest.approx(truth_join, rel=0.2)
    assert cost.out_tuples == pytest.approx(truth_out, rel=0.2)
    assert ctx.stats["OUT"].nnz == pytest.approx(truth_out, rel=0.2)


def test_estimates_on_a_power_law_matrix_follow_the_degrees():
    """Skewed degrees break the uniformity assumption: squaring a power-law (Zipf) matrix
    with 27k non-zeros, the join is 4.37M tuples and the result 2.95M non-zeros, which
    the uniform estimator puts at 0.21M (21x and 14x under). The degree statistics give
    the join exactly (the matrix meets itself) and the result within 3x."""
    rng = np.random.default_rng(0)
    n = 4000
    weights = (np.arange(1, n + 1) ** -1.0)
    weights /= weights.sum()
    rows = rng.choice(n, 40000, p=weights)
    cols = rng.choice(n, 40000, p=weights)
    a = sp.csr_matrix((np.ones(40000), (rows, cols)), shape=(n, n))
    a.data[:] = 1.0
    ctx = _einsum("ij,jk->ik", {"T0": a, "T1": a}).optimizer()
    cost = ctx.model.vertex(ctx.dag.vertices[0], _relational(ctx.dag.vertices[0]))
    truth_join = int(np.sum(np.diff(a.tocsc().indptr) * np.diff(a.indptr)))
    assert cost.join_tuples == pytest.approx(truth_join, rel=1e-9)
    truth_out = (a @ a).nnz
    assert 1 / 3 < cost.out_tuples / truth_out < 3
    assert 1 / 3 < ctx.stats["OUT"].nnz / truth_out < 3


# -- the kind of plan chosen -----------------------------------------------------------------
def _power_law_graph(n, edges, seed):
    rng = np.random.default_rng(seed)
    weights = np.arange(1, n + 1) ** -0.8
    weights /= weights.sum()
    a = sp.csr_matrix((np.ones(edges), (rng.choice(n, edges, p=weights),
                                        rng.integers(0, n, edges))), shape=(n, n))
    a.data[:] = 1.0
    return a


def test_gcn_layer_plan_reads_the_graph_sparse():
    """Table 8's shape (a tuple per node, features and weights in payloads), with the
    graph's rows read as sparse payloads instead of one tuple per edge; it is estimated
    cheaper than Table 8's plan."""
    rng = np.random.default_rng(0)
    n = 6000
    data = {"A": _power_law_graph(n, 60000, 0), "H": rng.normal(size=(n, 256)),
            "W": rng.normal(size=(256, 256))}
    program = load_program("""input A[i,j]
input H[j,f]
input W[f,g]
AH[i,f] = A[i,j] * H[j,f]
Z[i,g] = AH[i,f] * W[f,g]""")
    session = _session(program, data)
    plan, dag = session.plan("optimal"), session.dag
    assert plan.uclc(dag, dag.vertex("AH")) == "AH[I,f] = ~A[I,j] * H[j,f]"
    assert plan.uclc(dag, dag.vertex("Z")) == "Z[I,g] = AH[I,f] * W[f,g]"
    table_8 = session.optimizer().price(Plan.promoting(dag, {"AH": "ij", "Z": "i"}))
    assert plan.cost < table_8.cost


def test_dense_small_product_stays_dense_and_very_sparse_is_promoted():
    rng = np.random.default_rng(0)
    dense = {"T0": rng.normal(size=(64, 64)), "T1": rng.normal(size=(64, 64))}
    session = _einsum("ij,jk->ik", dense)
    assert session.plan("optimal").keyed(session.dag, session.dag.vertex("OUT")) == frozenset()
    sparse = {"T0": _uniform(3000, 3000, 4000, 3), "T1": _uniform(3000, 3000, 4000, 4)}
    session = _einsum("ij,jk->ik", sparse)
    assert session.plan("optimal").choices["OUT"].tiles == (("i", 1), ("j", 1), ("k", 1))


def test_memory_cap_excludes_big_tuples():
    rng = np.random.default_rng(0)
    dense = {"T0": rng.normal(size=(64, 64)), "T1": rng.normal(size=(64, 64))}
    session = einsum_session("ij,jk->ik", *dense.values(), backend=None, dialect=DuckDBDialect(),
                             memory_cap=64 * 64 * 8 - 1)
    for plan in session.plans("optimal", 5):
        assert plan.keyed(session.dag, session.dag.vertex("OUT"))   # 64x64 doubles: too big


def test_rank_plans_by_name(duck):
    rng = np.random.default_rng(1)
    session = _einsum("ij,jk->ik", {"T0": rng.normal(size=(6, 5)), "T1": rng.normal(size=(5, 4))})
    costs = [session.plan(f"rank:{n}").cost for n in (1, 2, 3)]
    assert costs == sorted(costs) and session.plan("optimal").cost == costs[0]


def test_loading_inputs_is_priced_once_per_decomposition():
    """Loading a sparse matrix densified costs its bytes; the breakdown adds up to the plan."""
    rng = np.random.default_rng(2)
    data = {"A": _uniform(2000, 2000, 8000, 5), "H": rng.normal(size=(2000, 64))}
    program = load_program("input A[i,j]\ninput H[j,f]\nX[i,f] = A[i,j] * H[j,f]\n"
                           "Y[i,f] = A[i,j] * X[j,f]\noutput Y")
    session = _session(program, data)
    ctx = session.optimizer()
    assert ctx.model.load("A", (1, 2000)) > 100 * ctx.model.load("A", (1, 1))  # 2000 dense rows
    choices = {v.name: _relational(v) for v in ctx.dag.vertices}
    items = dict(ctx.space.cost(choices).costs)
    loads = [item for item in items if isinstance(item, LoadItem)]
    assert sorted(loads, key=repr) == [LoadItem("A", (1, 1)), LoadItem("H", (1, 1))]  # A once
    for plan in session.plans("optimal", 4):
        assert sum(s.total for s in plan.statement_costs.values()) == pytest.approx(plan.cost)


def test_unspillable_states_beyond_the_memory_cap_choose_another_plan(duck):
    """The DuckDB extension's aggregate states live outside DuckDB's buffer manager: when
    groups x state size would exceed the memory cap, the optimizer takes another plan
    (here relational or one without states) where the UDF path, whose states DuckDB can
    spill, keeps the same."""
    a = sp.random(20000, 300, density=0.01, format="csr", random_state=1)
    h = np.random.default_rng(0).normal(size=(300, 8))
    program = "input A[i,j]\ninput H[j,f]\nY[i,f] = A[i,j] * H[j,f]\noutput Y"
    cap = 512 * 1024           # the states of Y[I,f] take about 1.2 MB

    def chosen(**options) -> frozenset[str]:
        with Session(program, {"A": a, "H": h}, **options) as session:
            plan = session.plans("optimal")[0]
            if options.get("backend") is duck:
                np.testing.assert_allclose(session.run(plan).outputs["Y"], a @ h, rtol=1e-9,
                                           atol=1e-12)
            return plan.keyed(session.dag, session.dag.vertex("Y"))

    assert "f" not in chosen(backend=duck)
    # not IJ,Jf->If (its states exceed the cap): relational, or A packed sparse (no states)
    assert chosen(backend=duck, memory_cap=cap) in ({"i", "j", "f"}, {"i"})
    assert "f" not in chosen(backend=None, dialect=DuckDBDialect(), memory_cap=cap)
    with Session(program, {"A": a, "H": h}, backend=duck, memory_cap=cap) as session:
        assert not session.optimizer().price(session.plan("IJ,Jf->If")).fits


@pytest.mark.parametrize("infinite", [False, True])
def test_a_packed_operand_densified_by_a_non_finite_partner_must_fit(infinite):
    """Against inf or NaN the kernels densify a packed operand (0 x inf is NaN): the plan
    must then fit with the dense size, and the result keeps NumPy's NaN."""
    a = sp.random(2000, 2000, density=0.001, format="csr", random_state=1)
    h = np.ones((2000, 4))
    if infinite:
        h[3, 1] = np.inf
    with Session("input A[i,j]\ninput H[j,f]\nY[i,f] = A[i,j] * H[j,f]\noutput Y",
                 {"A": a, "H": h}, memory_cap=1e6) as session:   # dense A is 32 MB
        ctx, y = session.optimizer(), session.dag.vertex("Y")
        packed = Choice.of({"i": 2000, "j": 2000, "f": 4}, sparse=[0])
        assert ctx.model.fits(y, packed) is not infinite
        out = session.run("optimal").outputs["Y"]
    with np.errstate(invalid="ignore"):
        np.testing.assert_allclose(out, a.toarray() @ h, rtol=1e-9)


def test_a_one_tuple_operand_is_read_per_batch_where_the_engine_does_not_bind_it(duck):
    """Rows joined to one array tuple: engines that bind it into the kernel once pay for
    it once; DuckDB's native kernels read it with every batch of KERNEL_BATCH rows."""
    from math import ceil
    from sparse_einsum.cost import KERNEL_BATCH
    a = sp.random(10000, 3000, density=0.001, format="csr", random_state=2)
    h = np.random.default_rng(0).normal(size=(3000, 64))
    with einsum_session("ij,jf->if", a, h, backend=duck) as session:
        ctx = session.optimizer()
        assert not ctx.model.caps.constants_once          # the native dialect
        v = ctx.dag.vertices[0]
        choice = session.plan("Ij,jf->If").choices[v.name]
        bound_once = CostModel(ctx.dag, ctx.stats, ctx.model.p,
                               caps=Capabilities(constants_once=True))
        extra = ctx.model.vertex(v, choice).join - bound_once.vertex(v, choice).join
        reads = ceil(bound_once.vertex(v, choice).join_tuples / KERNEL_BATCH) - 1
        assert reads > 0
        assert extra == pytest.approx(reads * 3000 * 64 * 8 * ctx.model.p.c_xfer, rel=1e-9)


def test_a_kernel_call_holds_the_rows_the_engine_hands_it():
    """Rows of A (32 KB each) against one 8 MB matrix under a 20 MB cap: a batch of 2048
    rows does not fit, one row a call does (Spark calls its JVM kernels once per row)."""
    from sparse_einsum.sql.spark import SparkNativeDialect
    assert SparkNativeDialect.capabilities.kernel_rows == 1
    a = sp.random(4096, 4096, density=0.001, format="csr", random_state=3)
    h = np.ones((4096, 256))
    with einsum_session("ij,jf->if", a, h, backend=None, dialect=SparkNativeDialect()) as session:
        ctx = session.optimizer()
        v = ctx.dag.vertices[0]
        rows = Choice.of({label: 1 if label == "i" else size
                          for label, size in ctx.dag.label_sizes(v).items()})
        fits = {n: CostModel(ctx.dag, ctx.stats, ctx.model.p, 20e6,
                             Capabilities(kernel_rows=n)).fits(v, rows) for n in (1, 2048)}
        assert fits == {1: True, 2048: False}


def test_rows_against_one_matrix_are_priced_as_the_engine_runs_them():
    """Keyed tuples times one matrix tuple: where the engine batches rows, one product per
    batch (c_gemm_rows, rows and blocks alike); where it calls the kernel per tuple
    (Spark), a row is a matrix-vector product (c_gemm_rows), a block a matrix product
    (c_gemm)."""
    from dataclasses import replace
    from math import prod
    from sparse_einsum.sql.spark import SparkNativeDialect
    rng = np.random.default_rng(4)
    h, w = rng.normal(size=(4096, 256)), rng.normal(size=(256, 64))
    with einsum_session("ij,jf->if", h, w, backend=None, dialect=SparkNativeDialect()) as session:
        ctx = session.optimizer()
        v = ctx.dag.vertices[0]
        row, block = (Choice.of({"i": b, "j": 256, "f": 64}) for b in (1, 64))
        params = replace(ctx.model.p, c_gemm=1e-10, c_gemm_rows=5e-10)
        for kernel_rows, per_flop in ((1, {row: 5e-10, block: 1e-10}),
                                      (2048, {row: 5e-10, block: 5e-10})):
            model = CostModel(ctx.dag, ctx.stats, params, caps=replace(
                SparkNativeDialect.capabilities, kernel_rows=kernel_rows))
            for choice, want in per_flop.items():
                cost, cells = model.vertex(v, choice), prod(choice.sizes.values())
                assert cost.kernel == pytest.approx(
                    cost.join_tuples * 2 * cells * want / model.tasks(cost.join_tuples))


def test_unspillable_states_are_bounded_by_the_engines_memory_not_the_cap_per_tuple(duck):
    """All groups' aggregate states live at once: without a memory cap given they are
    bounded by the engine's share of its memory limit; a given cap bounds them too."""
    a = sp.random(200, 30, density=0.1, format="csr", random_state=1)
    h = np.ones((30, 4))
    with einsum_session("ij,jf->if", a, h, backend=duck) as session:
        limit, _ = duck.memory_limit()
        assert session.optimizer().model.state_cap == pytest.approx(limit * duck.memory_share)
        assert session.optimizer().model.cap <= 256 << 20
    with einsum_session("ij,jf->if", a, h, backend=duck, memory_cap=1e6) as session:
        assert session.optimizer().model.state_cap == 1e6


def test_a_sparse_kernel_pays_per_non_zero_it_visits():
    """~A[i,j] * H[j,F/b]: each tile of H's columns visits all of A's non-zeros once, so
    the kernels cost nnz x (2 x 64 x c_sparse + tiles x c_nnz) in all: the same flops
    whatever the tiles, and a visit per non-zero and tile."""
    a = sp.random(300, 200, density=0.05, format="csr", random_state=3)
    h = np.random.default_rng(0).normal(size=(200, 64))
    params = CostParams(c_xfer=0.0, c_kernel=0.0, c_fixed=0.0, c_add=0.0, c_sparse=1e-9,
                        c_nnz=3e-8)
    session = einsum_session("ij,jf->if", a, h, backend=None, dialect=DuckDBDialect(),
                             params=params)
    ctx, v = session.optimizer(), session.dag.vertices[0]
    for tile in (64, 16):
        choice = Choice.of({"i": 300, "j": 200, "f": tile}, [0])
        assert ctx.model.sparse_driven(v, choice)
        cost = ctx.model.vertex(v, choice)
        assert cost.kernel == pytest.approx(a.nnz * (2 * 64 * 1e-9 + 64 // tile * 3e-8))


def _workload_cases():
    from experiments.workloads import workload
    rng = np.random.default_rng(0)
    mask = sp.random(2000, 2000, density=0.001, format="csr", random_state=0)
    cases = [("input X[i,k]\ninput M[i,j]\ninput Y[j,k]\nO[i,j] = X[i,k] * M[i,j] * Y[j,k]",
              {"X": rng.normal(size=(2000, 64)), "M": mask, "Y": rng.normal(size=(2000, 64))})]
    for name, dataset in (("gcn2", "cora"), ("gcn2", "karate"), ("sparse_attention", "karate")):
        path, data = workload(name, dataset, d_k=64)
        cases.append((path.read_text(), data))
    return cases


@pytest.mark.parametrize("params", PARAMS, ids=["calibrated", "tuple-heavy", "flop-heavy"])
@pytest.mark.parametrize("name", sorted(DAGS))
def test_best_plan_over_the_options_that_can_beat_greedy_is_the_full_dps(name, params,
                                                                          monkeypatch):
    """The best plan (one per list) tries only the options that can be part of a plan no
    dearer than greedy's: the same plan and cost as over every option."""
    text, shapes = DAGS[name]
    for seed in range(2):
        found = dynamic_programming(_space(text, _data(shapes, seed), params), 1)[0]
        with monkeypatch.context() as m:
            m.setattr(search, "_within", lambda space, total: None)
            full = dynamic_programming(_space(text, _data(shapes, seed), params), 1)[0]
        assert (found.choices, found.total) == (full.choices, full.total)


def test_pruned_search_keeps_the_order_and_plan_of_programs(monkeypatch):
    """Contraction orders (priced by the DP) and best plans of the benchmark programs are
    those of the DP over every option, costs equal to the last bit."""
    for text, data in _workload_cases():
        with Session(text, data) as pruned:
            plan = pruned.plan("optimal")
        with monkeypatch.context() as m:
            m.setattr(search, "_within", lambda space, total: None)
            with Session(text, data) as full:
                want = full.plan("optimal")
        assert [repr(v) for v in pruned.dag.vertices] == [repr(v) for v in full.dag.vertices]
        assert (plan.choices, plan.cost) == (want.choices, want.cost)
