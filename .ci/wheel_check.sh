#!/usr/bin/env bash
# The product as a user installs it: build the sdist and the wheel from it, install the
# wheel with its extras into a new venv outside the checkout, and run .ci/wheel_smoke.py
# with that venv's python from another directory, the venv not on PATH (DuckDB's native
# kernels with PyPI's BLAS, install-kernels into a fresh PostgreSQL database, Spark local
# with the wheel's JVM kernels). Needs $SE_TEST_PG_DSN (a superuser's DSN, .ci/pg_setup.sh),
# a JDK (javac) and pyspark in this python (its jars compile the Spark kernel jar).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
WORK="$(mktemp -d /tmp/se-wheel-XXXXXX)"
trap 'rm -rf "$WORK"' EXIT
SPARSE_EINSUM_SPARK_JARS="$(python -c "import os, pyspark; print(os.path.join(os.path.dirname(pyspark.__file__), 'jars'))")" \
    python -m build -o "$WORK/dist" "$ROOT" >"$WORK/build.log" 2>&1 ||
    { tail -40 "$WORK/build.log"; exit 1; }
wheel="$(ls "$WORK"/dist/*.whl)"
python -m zipfile -l "$wheel" >"$WORK/contents.txt"
grep -q "sparse_einsum/native/sparse_einsum.duckdb_extension" "$WORK/contents.txt" ||
    { echo "wheel_check: $wheel carries no DuckDB extension"; exit 1; }
grep -q "sparse_einsum/native/sparse_einsum_spark.jar" "$WORK/contents.txt" ||
    { echo "wheel_check: $wheel carries no Spark kernel jar"; exit 1; }
grep -q "sparse_einsum/sql_templates/" "$WORK/contents.txt" ||
    { echo "wheel_check: $wheel carries no SQL templates"; exit 1; }
python -m venv "$WORK/venv"
"$WORK/venv/bin/pip" install -q "$wheel[postgres,spark]"
psql "$SE_TEST_PG_DSN" -qc "DROP DATABASE IF EXISTS se_wheel_smoke" -c "CREATE DATABASE se_wheel_smoke"
mkdir "$WORK/user" && cp "$ROOT/.ci/wheel_smoke.py" "$WORK/user/"
cd "$WORK/user"
env PATH=/usr/local/bin:/usr/bin:/bin \
    SE_SMOKE_PG_DSN="$(python -c "import sys; from psycopg.conninfo import make_conninfo; print(make_conninfo(sys.argv[1], dbname='se_wheel_smoke'))" "$SE_TEST_PG_DSN")" \
    "$WORK/venv/bin/python" wheel_smoke.py
psql "$SE_TEST_PG_DSN" -qc "DROP DATABASE se_wheel_smoke"
