"""Plans reused across calls (`reuse`), prepared plans (`prepare`) and einsum's sparse
results for sparse operands: values against NumPy, planning counted."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import sparse_einsum as se
import sparse_einsum.reuse as reuse_module
import sparse_einsum.session as session_module
from sparse_einsum import DataError, Session
from sparse_einsum.reuse import PLANS, STATS, PlanCache, Planned, summary
from sparse_einsum.stats.tensor_stats import exact_stats

SPMM = "input A[i,j]\ninput H[j,f]\nY[i,f] = A[i,j] * H[j,f]\noutput Y"


def _spmm_data(seed: int, density: float = 0.02, n: int = 120):
    rng = np.random.default_rng(seed)
    return {"A": sp.random(n, n, density=density, format="csr", random_state=seed),
            "H": rng.normal(size=(n, 16))}


@pytest.fixture
def counted(monkeypatch):
    """Calls of the strategies (planning) and of exact statistics, counted."""
    calls = {"plans": 0, "stats": 0}

    def counting(name, fn):
        def wrapper(*args, **kwargs):
            calls[name] += 1
            return fn(*args, **kwargs)
        return wrapper
    monkeypatch.setattr(session_module, "plans", counting("plans", session_module.plans))
    monkeypatch.setattr(session_module.STATS, "get", counting("stats", STATS.get))
    PLANS.clear()
    return calls


def test_reused_plan_gives_the_values_of_a_fresh_one(counted):
    first, second = _spmm_data(1), _spmm_data(2)
    want = se.run(SPMM, first)["Y"]
    assert counted["plans"] == 1
    got = se.run(SPMM, second)["Y"]               # close statistics: nothing planned
    assert counted["plans"] == 1 and PLANS.hits == 1
    np.testing.assert_allclose(want, first["A"] @ first["H"], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got, second["A"] @ second["H"], rtol=1e-12, atol=1e-12)
    with Session(SPMM, second) as fresh:
        np.testing.assert_allclose(got, fresh.run().outputs["Y"], rtol=1e-12, atol=1e-12)
    a, b = np.random.default_rng(3).normal(size=(2, 30, 30))
    for x in (a, 2 * a):
        np.testing.assert_allclose(se.einsum("ij,jk->ik", x, b), x @ b, rtol=1e-12)
    assert PLANS.hits == 2


def test_statistics_far_from_the_plans_replan(counted):
    sparse, dense = _spmm_data(1, density=0.01), _spmm_data(1, density=1.0)
    with Session(SPMM, sparse, reuse=True) as s:
        chosen = s.plan()
    with Session(SPMM, _spmm_data(5, density=0.015), reuse=True) as s:
        assert s.plan() is chosen                 # within 2x: the same plan object
    with Session(SPMM, dense, reuse=True) as s:
        replanned = s.plan()
        np.testing.assert_allclose(s.run(replanned).outputs["Y"], dense["A"] @ dense["H"],
                                   rtol=1e-12, atol=1e-12)
    with Session(SPMM, dense) as fresh:
        assert replanned.choices == fresh.plan().choices
    assert replanned.choices != chosen.choices
    assert counted["plans"] == 3 and (PLANS.hits, PLANS.misses) == (1, 2)


def test_nan_or_larger_integers_replan(counted):
    a = np.arange(12.0).reshape(3, 4)
    se.einsum("ij->i", a)
    with_nan = a.copy()
    with_nan[0, 0] = np.nan
    np.testing.assert_array_equal(se.einsum("ij->i", with_nan), with_nan.sum(axis=1))
    i = np.arange(12).reshape(3, 4)
    se.einsum("ij,jk->ik", i, i.T)
    big = i * 2**24                  # products beyond 2**53: exact BIGINT arithmetic
    np.testing.assert_array_equal(se.einsum("ij,jk->ik", big, big.T), big @ big.T)
    assert PLANS.hits == 0 and counted["plans"] == 4


def test_prepared_calls_do_no_statistics_and_no_planning(counted):
    data = _spmm_data(1)
    with se.prepare(SPMM, data) as step:
        planned = dict(counted)
        for seed in (2, 3):
            new = _spmm_data(seed)
            np.testing.assert_allclose(step(new)["Y"], new["A"] @ new["H"], rtol=1e-12,
                                       atol=1e-12)
        assert counted == planned
        with pytest.raises(DataError, match=r"^input H: shape \(120, 8\) and dtype float64, "
                                            r"but the plan was prepared for shape \(120, 16\)"):
            step({"A": data["A"], "H": np.ones((120, 8))})
        with pytest.raises(DataError, match="^input H holds NaN or inf"):
            step({"A": data["A"], "H": np.full((120, 16), np.inf)})
        with pytest.raises(DataError, match=r"^no data for input 'A' \(data was given for 'H'\)$"):
            step({"H": data["H"]})


def test_prepared_einsum_matches_numpy(counted):
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(2, 40, 8))
    mask = sp.random(40, 40, density=0.05, format="csr", random_state=0)
    with se.prepare("ik,ij,jk->ij", x, mask, y) as sddmm:
        planned = counted["plans"]
        for scale in (1.0, -3.0):
            got = sddmm(scale * x, mask, y)
            assert sp.issparse(got)
            np.testing.assert_allclose(got.toarray(), mask.multiply(scale * x @ y.T).toarray(),
                                       rtol=1e-12, atol=1e-12)
        assert counted["plans"] == planned
    i = rng.integers(-5, 5, size=(6, 7))
    with se.prepare("ij,kj->ik", i, i) as gram:
        got = gram(i + 1, i)
        assert got.dtype == np.int64
        np.testing.assert_array_equal(got, (i + 1) @ i.T)
        with pytest.raises(DataError, match="^input T0 holds integers up to"):
            gram(i * 10, i)


def test_einsum_returns_sparse_for_sparse_operands_when_the_result_is_sparse():
    rng = np.random.default_rng(1)
    x, y = rng.normal(size=(2, 50, 4))
    mask = sp.random(50, 50, density=0.04, format="csr", random_state=1)
    want = mask.multiply(x @ y.T).toarray()
    got = se.einsum("ik,ij,jk->ij", x, mask, y)
    assert sp.issparse(got) and got.dtype == np.float64
    np.testing.assert_allclose(got.toarray(), want, rtol=1e-12, atol=1e-12)
    product = se.einsum("ij,jk->ik", mask, x)        # estimated full: dense, as scipy's
    assert isinstance(product, np.ndarray)
    np.testing.assert_allclose(product, mask @ x, rtol=1e-12, atol=1e-12)
    dense = se.einsum("ik,ij,jk->ij", x, mask.toarray(), y)
    assert isinstance(dense, np.ndarray)
    np.testing.assert_allclose(dense, want, rtol=1e-12, atol=1e-12)
    forced = se.einsum("ik,ij,jk->ij", x, mask, y, format="dense")
    assert isinstance(forced, np.ndarray)
    out = np.empty((50, 50))
    assert se.einsum("ik,ij,jk->ij", x, mask, y, out=out) is out
    np.testing.assert_allclose(out, want, rtol=1e-12, atol=1e-12)


def test_summary_agrees_with_exact_statistics():
    rng = np.random.default_rng(2)
    dense = np.where(rng.random((30, 20)) < 0.1, 1.0, 0.0)
    for x in (dense, sp.csr_array(dense), sp.csc_array(dense), sp.coo_array(dense),
              np.ones((4, 5))):
        got, want = summary(x), exact_stats(x)
        assert (got.nnz, got.distinct, got.finite) == (want.nnz, want.distinct, want.finite)


def test_cache_keeps_the_most_recently_used():
    cache = PlanCache(size=2)
    entries = [Planned(None, [], {}, False) for _ in range(3)]
    for n, entry in enumerate(entries[:2]):
        cache.put(n, entry)
    assert cache.find(0, {}) is entries[0]
    cache.put(2, entries[2])
    assert len(cache) == 2 and cache.find(1, {}) is None and cache.find(0, {}) is entries[0]


def test_statistics_are_kept_per_array_while_it_is_unchanged():
    a = np.where(np.random.default_rng(4).random((20, 30)) < 0.2, 1.0, 0.0)
    first = STATS.get(a)
    assert STATS.get(a) is first
    a[:, :] = 1.0                          # changed in place: counted again
    again = STATS.get(a)
    assert again is not first and again.nnz == a.size == exact_stats(a).nnz


def test_a_first_call_summarises_each_input_once(monkeypatch):
    """The summary a call computes to look for a plan is the one the statistics cache
    compares: one pass over each input, not two."""
    seen = []

    def counting(x, default=0.0):
        seen.append(id(x))
        return summary(x, default)
    monkeypatch.setattr(reuse_module, "summary", counting)
    monkeypatch.setattr(session_module, "summary", counting)
    PLANS.clear()
    data = _spmm_data(7)
    got = se.einsum("ij,jf->if", data["A"], data["H"])
    np.testing.assert_allclose(got, data["A"] @ data["H"], rtol=1e-12, atol=1e-12)
    assert sorted(seen) == sorted(map(id, (data["A"], data["H"])))
