"""Smoke test of an installed wheel, run by .ci/wheel_check.sh with the venv's python from
a directory outside the checkout, the venv not on PATH: DuckDB with the wheel's native
kernels and PyPI's BLAS, PostgreSQL kernels installed by the command line into a fresh
database, Spark local mode with the wheel's JVM kernels; every result against NumPy."""
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import scipy.sparse as sp

import sparse_einsum as se
from sparse_einsum.api import einsum_session

assert "site-packages" in se.__file__, se.__file__
cli = str(Path(sys.executable).with_name("sparse-einsum"))
rng = np.random.default_rng(0)
a = sp.random(300, 300, density=0.02, format="csr", random_state=1)
x, w = rng.normal(size=(300, 40)), rng.normal(size=(40, 16))
want = a @ x @ w


def check(backend, plan, **options):
    with einsum_session("ij,jf,fg->ig", a, x, w, backend=backend, **options) as session:
        kernels = session.explain()["kernels"]
        got = session.run(plan).outputs["OUT"]
    got = got.toarray() if sp.issparse(got) else got
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)
    print(f"{backend} {plan}: ok; kernels: {kernels}")
    return kernels


kernels = check("duckdb", "optimal")
assert kernels.startswith("native C") and "scipy-openblas32" in kernels, kernels
check("duckdb", "random:3")

dsn = os.environ["SE_SMOKE_PG_DSN"]          # a fresh database
done = subprocess.run([cli, "install-kernels", "--dsn", dsn], capture_output=True, text=True)
assert done.returncode == 0, done.stderr
kernels = check("postgres", "random:5", dsn=dsn)
assert "scipy-openblas32" in kernels, kernels

if os.environ.get("SE_SMOKE_SPARK", "1") == "1":
    kernels = check("spark", "random:7", master="local[2]")
    assert kernels.startswith("JVM") and "fallback" not in kernels, kernels
print("wheel smoke test passed")
