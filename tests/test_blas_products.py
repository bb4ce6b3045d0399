"""Matrix products large enough to run with BLAS in both engines' native kernels, against
NumPy (values and dtype; inf and NaN operands, where 0 x inf is NaN), the DuckDB
extension built without BLAS (SPARSE_EINSUM_BLAS=0), whose C loops must give the same,
and the cost of matrix-product kernels (c_gemm)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from sparse_einsum import Session, einsum
from sparse_einsum.api import einsum_session
from sparse_einsum.backends import duckdb_extension
from sparse_einsum.backends.blas import PYPI_PACKAGE
from sparse_einsum.capabilities import Capabilities
from sparse_einsum.cost import CostModel, CostParams
from sparse_einsum.plan import Choice

ROOT = Path(__file__).resolve().parents[1]

# plans of X[i,m] W[m,k]: one tuple each (one big product), rows against the one weight
# tuple (a run of rows is one product), tiles of 64 rows (a product per tuple)
PLANS = ["im,mk->ik", "Im,mk->Ik", "I/64m,mk->I/64k", "iM,Mk->ik"]


def operands(nonfinite: bool, dtype=np.float64) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    x = rng.normal(size=(300, 120)) * (rng.random((300, 120)) < 0.7)
    w = rng.normal(size=(120, 90))
    if nonfinite:
        x[:, 5] = 0.0
        w[5, :] = np.inf            # 0 x inf: NaN in every output
        w[7, 3] = np.nan
        x[11, :] = 0.0
        x[11, 9] = -np.inf          # -inf times W's row 9 (zeros there give NaN)
        w[9, ::4] = 0.0
    return x.astype(dtype), w.astype(dtype)


@pytest.fixture(params=["duck", "pg"])
def native(request):
    """Each engine's native kernels (DuckDB extension, PostgreSQL extension)."""
    return request.getfixturevalue(request.param)


@pytest.mark.parametrize("nonfinite", [False, True], ids=["finite", "inf-nan"])
@pytest.mark.parametrize("plan", PLANS)
def test_products_match_numpy(native, plan, nonfinite):
    x, w = operands(nonfinite)
    with np.errstate(invalid="ignore"):
        want = np.einsum("im,mk->ik", x, w)
    got = einsum("im,mk->ik", x, w, plan=plan, backend=native)
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10, equal_nan=True)
    assert np.array_equal(np.isnan(got), np.isnan(want)) and nonfinite == np.isnan(want).any()


def test_float32_products_keep_the_dtype(native):
    x, w = operands(False, np.float32)
    got = einsum("im,mk->ik", x, w, plan="Im,mk->Ik", backend=native)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, np.einsum("im,mk->ik", x, w), rtol=1e-4, atol=1e-4)


def test_the_extension_names_its_blas(duck):
    """The extension links PyPI's OpenBLAS (a dependency), and explain names it."""
    blas = duck.query("SELECT se_extension_blas()")[0][0]
    assert blas.startswith(PYPI_PACKAGE + " ")
    kernels = einsum_session("ij,jk->ik", np.ones((3, 4)), np.ones((4, 5)), backend=duck
                             ).explain()["kernels"]
    assert f"({blas} for matrix products)" in kernels


@pytest.mark.parametrize("program,product", [
    ("input A[i,m]\ninput W[m,k]\nY[i,k] = A[i,m] * W[m,k]\noutput Y\n", True),
    ("input A[i,m]\ninput W[i,m]\nY[i] = A[i,m] * W[i,m]\noutput Y\n", True),
    ("input A[i,m]\ninput W[m,k]\nY[i,k] = A[i,m] + W[m,k]\noutput Y\n", False),
    ("input A[i,m]\ninput W[m,k]\nY[i,m,k] = A[i,m] * W[m,k]\noutput Y\n", False)])
def test_products_cost_c_gemm_per_flop(program, product):
    """A kernel summing a product over a payload label costs c_gemm per flop; others c_kernel."""
    data = {"A": np.ones((6, 5)), "W": np.ones((5, 4)) if "W[m,k]" in program else np.ones((6, 5))}
    with Session(program, data) as session:
        ctx = session.optimizer()
        v = next(v for v in ctx.dag.vertices if v.name == "Y")
        dense = Choice.of({l: ctx.dag.label_sizes(v)[l] for l in v.all_labels}, frozenset())
        costs = [CostModel(ctx.dag, ctx.stats, CostParams(0, 1.0, 0, 0, c_gemm=gemm)
                           ).vertex(v, dense).kernel for gemm in (0.0, 0.25)]
    assert costs[1] == (costs[0] / 4 if product else costs[0]) and costs[0] > 0


def test_a_contraction_over_keys_is_summed_unformed(duck):
    """X^T Y with the summed label promoted: DuckDB sums the rows' outer products in
    se_ksum (one matrix product over the rows), which the cost model prices at c_gemm
    per flop, with no adds and no results per tuple in the memory cap."""
    rng = np.random.default_rng(3)
    x, y = rng.normal(size=(500, 40)), rng.normal(size=(500, 30))
    with einsum_session("jf,jh->fh", x, y, backend=duck) as session:
        sql = " ".join(s.sql for s in session.compile("Jf,Jh->fh").steps)
        assert "se_ksum(" in sql and "se_vsum(" not in sql
        np.testing.assert_allclose(session.run("Jf,Jh->fh").outputs["OUT"], x.T @ y,
                                   rtol=1e-10, atol=1e-10)
        ctx = session.optimizer()
        v = ctx.dag.vertex("OUT")
        choice = session.plan("Jf,Jh->fh").choices["OUT"]
        params = CostParams(0, 1.0, 0, 1.0, c_gemm=0.25)
        summed, formed = (CostModel(ctx.dag, ctx.stats, params, 500 * 40 * 30 * 8.0,
                                    Capabilities(kernel_sums=on)) for on in (True, False))
        assert summed.kernel_summed(v, choice) and not formed.kernel_summed(v, choice)
        assert summed.vertex(v, choice).kernel == formed.vertex(v, choice).kernel / 4
        assert summed.vertex(v, choice).aggregate < formed.vertex(v, choice).aggregate
        assert summed.fits(v, choice) and not formed.fits(v, choice)


_WITHOUT_BLAS = """
import duckdb, numpy as np
from sparse_einsum import einsum
from sparse_einsum.backends.duckdb import DuckDBBackend
from tests.test_blas_products import PLANS, operands
with DuckDBBackend(native=True) as db:
    assert db.query("SELECT se_extension_blas()")[0][0] is None
    assert db.kernel_detail == "C loops for matrix products: built without BLAS"
    for nonfinite in (False, True):
        x, w = operands(nonfinite)
        with np.errstate(invalid="ignore"):
            want = np.einsum("im,mk->ik", x, w)
        for plan in PLANS:
            got = einsum("im,mk->ik", x, w, plan=plan, backend=db)
            assert got.dtype == want.dtype
            np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10, equal_nan=True)
print("ok")
"""


def test_the_extension_builds_and_runs_without_blas(tmp_path):
    """SPARSE_EINSUM_BLAS=0 builds the extension without BLAS (a build of its own, under a
    fresh cache with the headers copied), in a process of its own: its C loops agree."""
    shutil.copytree(duckdb_extension.headers_dir(), tmp_path / duckdb_extension.headers_dir().name)
    env = {**os.environ, "SPARSE_EINSUM_BLAS": "0", "SPARSE_EINSUM_CACHE": str(tmp_path),
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", _WITHOUT_BLAS], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().endswith("ok")
    assert list((tmp_path / "duckdb").glob("*/" + duckdb_extension.FILE_NAME))
