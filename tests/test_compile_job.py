"""Compiled SQL jobs (`sparse-einsum compile`) run by the database's own command-line client:
the duckdb shell (PyPI duckdb-cli) on a database file, and psql on PostgreSQL."""
from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import replace
from glob import glob
from pathlib import Path

import duckdb
import numpy as np
import pytest

from sparse_einsum import PlanError, ProgramError, run
from sparse_einsum.backends.duckdb import DuckDBBackend
from sparse_einsum.program.parser import load_program
from sparse_einsum.cli import main
from sparse_einsum.compile_job import compile_job
from sparse_einsum.sql.duckdb import LIST_LIMIT

HOSTILE = 'cj x"; DROP TABLE cj_y; --'
N, F, H, C = 12, 5, 4, 3

GCN = f"""
input A[i:{N}, j:{N}] from cj_edges(src, dst, weight)
input X[j:{N}, f:{F}] from cj_features(node, feature, value)
input W1[f:{F}, h:{H}] from "cj weights"(f, h, w)
input W2[h:{H}, c:{C}] from cj_w2(h, c, w)
XW1[j,h] = X[j,f] * W1[f,h]
AX[i,h]  = A[i,j] * XW1[j,h]
R[i,h]   = relu(AX[i,h])
HW2[j,c] = R[j,h] * W2[h,c]
Z[i,c]   = A[i,j] * HW2[j,c]
output Z
"""

# non-annihilating: +, -, max/min over rows with implicit zeros, softmax through a scalar
NON_ANNIHILATING = f"""
input A[i:{N}, j:{N}] from cj_edges(src, dst, weight)
input b[j:{N}] from cj_bias(j, v)
S[i,j] = A[i,j] + b[j]
M[i]   = max(S[i,j])
L[i]   = min(A[i,j] - 1)
T[]    = sum(exp(M[i]))
P[i]   = exp(M[i]) / T[]
output S, M, L, T, P
"""
PROGRAMS = {"gcn": GCN, "non_annihilating": NON_ANNIHILATING}
PLANS = ["optimal", "relational", "dense", "random:1", "random:2", "random:5"]


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def make_tables(seed: int = 0) -> dict[str, tuple[list[str], list[tuple]]]:
    """Input tables: name -> (columns, rows); edges has a duplicate key (summed)."""
    rng = np.random.default_rng(seed)
    edges = [(int(i), int(j), float(rng.uniform(0.1, 1))) for i in range(N) for j in range(N)
             if rng.random() < 0.3 or i == j]
    edges.append((0, 0, 0.5))
    dense = lambda rows, cols, zeros=0.0: [(r, c, float(rng.normal())) for r in range(rows)  # noqa
                                           for c in range(cols) if rng.random() >= zeros]
    return {"cj_edges": (["src", "dst", "weight"], edges),
            "cj_features": (["node", "feature", "value"], dense(N, F, 0.2)),
            "cj weights": (["f", "h", "w"], dense(F, H)),
            "cj_w2": (["h", "c", "w"], dense(H, C)),
            "cj_bias": (["j", "v"], [(j, float(rng.normal())) for j in range(N) if j % 3])}


def write_tables(execute, executemany, tables, param: str) -> None:
    for name, (cols, rows) in tables.items():
        execute(f"DROP TABLE IF EXISTS {_q(name)}")
        types = ", ".join(f"{_q(c)} {'DOUBLE PRECISION' if k == len(cols) - 1 else 'BIGINT'}"
                          for k, c in enumerate(cols))
        execute(f"CREATE TABLE {_q(name)} ({types})")
        executemany(f"INSERT INTO {_q(name)} VALUES ({', '.join([param] * len(cols))})", rows)


def expected(program: str, tables) -> dict[str, np.ndarray]:
    """sparse_einsum.run (Python UDF kernels) on the same tables, in memory."""
    con = duckdb.connect()
    write_tables(con.execute, con.executemany, tables, "?")
    try:
        with DuckDBBackend(con, native=False) as backend:
            return run(program, {}, backend=backend)
    finally:
        con.close()


def dense_result(rows: list[tuple], shape: tuple[int, ...]) -> np.ndarray:
    out = np.zeros(shape)
    keys = [r[:-1] for r in rows]
    assert len(set(keys)) == len(keys), "one row per non-zero"
    for r in rows:
        assert r[-1] != 0
        out[tuple(int(k) for k in r[:-1])] = r[-1]
    return out


def check_outputs(fetch, program: str, want: dict[str, np.ndarray]) -> None:
    for name, value in want.items():
        got = dense_result(fetch(f"SELECT * FROM {_q(name)}"), np.shape(value))
        np.testing.assert_allclose(got, value, rtol=1e-9, atol=1e-12, err_msg=name)


def compile_cli(tmp_path: Path, program: str, *args: str, name: str = "job.sql") -> Path:
    source, job = tmp_path / "program.se", tmp_path / name
    source.write_text(program)
    assert main(["compile", str(source), "-o", str(job), *args]) == 0
    return job


# -- DuckDB: the duckdb shell ---------------------------------------------------------
@pytest.fixture
def duck_file(tmp_path, duckdb_cli):
    """A database file with the input tables, readable by the (older) duckdb shell."""
    version = subprocess.run([duckdb_cli, "--version"], capture_output=True, text=True).stdout
    major, minor = re.search(r"v(\d+)\.(\d+)", version).groups()
    path = tmp_path / "db.duckdb"
    tables = make_tables()
    with duckdb.connect(str(path), config={"storage_compatibility_version":
                                           f"v{major}.{minor}.0"}) as con:
        write_tables(con.execute, con.executemany, tables, "?")
        con.execute("CREATE TABLE cj_y (k BIGINT)")
    return path, tables


def duck_run(cli: str, path: Path, job: Path, after: str = "") -> subprocess.CompletedProcess:
    """`duckdb -unsigned FILE < job.sql` (plus `after` in the same session)."""
    return subprocess.run([cli, "-unsigned", "-csv", "-noheader", str(path)],
                          input=job.read_text() + after, capture_output=True, text=True, timeout=300)


def duck_fetch(path: Path):
    def fetch(sql: str) -> list[tuple]:
        with duckdb.connect(str(path), read_only=True) as con:
            return con.execute(sql).fetchall()
    return fetch


def duck_tables(path: Path) -> set[str]:
    return {r[0] for r in duck_fetch(path)("SELECT table_name FROM duckdb_tables()")}


@pytest.mark.parametrize("dialect", ["duckdb", "duckdb-builtin"])
@pytest.mark.parametrize("plan", PLANS)
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_duckdb_job_matches_run(name, plan, dialect, tmp_path, duck_file, duckdb_cli):
    path, tables = duck_file
    program = PROGRAMS[name]
    job = compile_cli(tmp_path, program, "--dialect", dialect, "--plan", plan,
                      "--database", str(path))
    text = job.read_text()
    assert ".bail on" in text and "BEGIN;" in text and text.rstrip().endswith("COMMIT;")
    assert "se_job_" in text and "_f1(" not in text            # no UDF calls
    assert ("LOAD '" in text) == (dialect == "duckdb")
    left = "SELECT 'temp=' || count(*) FROM duckdb_tables() WHERE temporary;\n"
    done = duck_run(duckdb_cli, path, job, left)
    assert done.returncode == 0, done.stderr
    assert "temp=0" in done.stdout                              # nothing left in the session
    want = expected(program, tables)
    check_outputs(duck_fetch(path), program, want)
    again = subprocess.run([duckdb_cli, "-unsigned", str(path), "-f", str(job)],
                           capture_output=True, text=True, timeout=300)   # re-run replaces outputs
    assert again.returncode == 0, again.stderr
    check_outputs(duck_fetch(path), program, want)
    assert duck_tables(path) == set(tables) | {"cj_y"} | set(want)


MIN_PLUS = f"""
input A[i:{N}, j:{N}] default inf from cj_edges(src, dst, weight)
input b[j:{N}] default inf from cj_bias(j, v)
D[i] = min(A[i,j] + b[j])
output D
"""


@pytest.mark.parametrize("dialect", ["duckdb", "duckdb-builtin"])
@pytest.mark.parametrize("plan", ["dense", "random:2", "relational"])
def test_duckdb_min_plus_job_matches_run(plan, dialect, tmp_path, duck_file, duckdb_cli):
    """A min-plus job: its arrays hold inf where entries are absent (kernels, stacks and
    explodes with the default), and its output table the entries other than inf."""
    path, tables = duck_file
    job = compile_cli(tmp_path, MIN_PLUS, "--dialect", dialect, "--plan", plan,
                      "--database", str(path))
    done = duck_run(duckdb_cli, path, job)
    assert done.returncode == 0, done.stderr
    want = expected(MIN_PLUS, tables)["D"]            # (b is absent, inf, at j % 3 == 0)
    rows = duck_fetch(path)("SELECT * FROM D")
    assert len(rows) == np.isfinite(want).sum()
    got = np.full(N, np.inf)
    for i, value in rows:
        got[int(i)] = value
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_duckdb_job_without_database_uses_declared_bounds(tmp_path, duck_file, duckdb_cli):
    path, tables = duck_file
    job = compile_cli(tmp_path, NON_ANNIHILATING, "--dialect", "duckdb")
    assert "statistics: assumed" in job.read_text()
    assert duck_run(duckdb_cli, path, job).returncode == 0
    check_outputs(duck_fetch(path), NON_ANNIHILATING, expected(NON_ANNIHILATING, tables))


def test_duckdb_failures_leave_previous_outputs(tmp_path, duck_file, duckdb_cli):
    path, tables = duck_file
    job = compile_cli(tmp_path, GCN, "--dialect", "duckdb", "--plan", "random:2")
    assert duck_run(duckdb_cli, path, job).returncode == 0
    before = duck_fetch(path)('SELECT * FROM "Z" ORDER BY ALL')

    # a statement failing after "Z" was dropped and re-created: the job rolls back
    broken = tmp_path / "broken.sql"
    broken.write_text(job.read_text().replace("\n-- intermediates\n",
                                              '\nSELECT * FROM "no such table";\n'))
    failed = duck_run(duckdb_cli, path, broken)
    assert failed.returncode != 0 and "no such table" in failed.stdout + failed.stderr
    assert duck_fetch(path)('SELECT * FROM "Z" ORDER BY ALL') == before
    assert duck_tables(path) == set(tables) | {"cj_y", "Z"}

    # new data with a key outside the compiled bound i:12 fails the input's CHECK
    with duckdb.connect(str(path)) as con:
        con.execute(f"INSERT INTO cj_edges VALUES ({N}, 0, 1.0)")
    failed = duck_run(duckdb_cli, path, job)
    assert failed.returncode != 0 and "CHECK constraint" in failed.stdout + failed.stderr
    assert duck_fetch(path)('SELECT * FROM "Z" ORDER BY ALL') == before
    assert duck_tables(path) == set(tables) | {"cj_y", "Z"}


def test_duckdb_hostile_table_name(tmp_path, duck_file, duckdb_cli):
    path, _ = duck_file
    with duckdb.connect(str(path)) as con:
        con.execute(f'CREATE TABLE {_q(HOSTILE)} (a BIGINT, "b c" BIGINT)')
        con.execute(f"INSERT INTO {_q(HOSTILE)} VALUES (0, 0), (2, 1), (2, 1)")
    program = f'input B[i:3, j:2] from {_q(HOSTILE)}(a, "b c")\nS[i] = B[i,j]\noutput S'
    job = compile_cli(tmp_path, program, "--dialect", "duckdb", "--plan", "dense")
    done = duck_run(duckdb_cli, path, job)
    assert done.returncode == 0, done.stderr
    assert sorted(duck_fetch(path)('SELECT * FROM "S"')) == [(0, 1.0), (2, 2.0)]
    assert "cj_y" in duck_tables(path)

    # an output name from a Program object (the parser only allows identifiers)
    parsed = load_program(program.replace("output S", "output S\nV[i] = S[i] * 2\noutput V"))
    hostile = 'V"; DROP TABLE cj_y; --'
    parsed.statements[-1] = replace(parsed.statements[-1], out=hostile, text="")
    parsed.outputs[-1] = hostile
    job.write_text(compile_job(parsed, dialect="duckdb"))
    done = duck_run(duckdb_cli, path, job)
    assert done.returncode == 0, done.stderr
    assert sorted(duck_fetch(path)(f"SELECT * FROM {_q(hostile)}")) == [(0, 2.0), (2, 4.0)]
    assert "cj_y" in duck_tables(path)


def test_duckdb_list_limit(tmp_path, duckdb_cli):
    """Built-in SQL holds LIST_LIMIT values per tuple; jobs with the extension hold more."""
    program = "input A[i:80, j:80] from big(r, c, v)\nY[i] = A[i,j] * A[i,j]\noutput Y"
    with pytest.raises(PlanError, match=f"at most {LIST_LIMIT}"):
        compile_job(program, dialect="duckdb-builtin", plan="dense")
    text = compile_job(program, dialect="duckdb-builtin")    # the optimizer's plan fits
    assert "CREATE TABLE \"Y\"" in text
    assert compile_job(program, dialect="postgres", plan="dense")   # no limit with C kernels
    job, path = tmp_path / "dense.sql", tmp_path / "big.duckdb"
    job.write_text(compile_job(program, dialect="duckdb", plan="dense"))   # 6400 values
    a = np.random.default_rng(5).normal(size=(80, 80))
    rows = ", ".join(f"({i}, {j}, {float(a[i, j])!r})" for i in range(80) for j in range(80))
    done = subprocess.run([duckdb_cli, "-unsigned", str(path)],
                          input=f"CREATE TABLE big (r BIGINT, c BIGINT, v DOUBLE); INSERT INTO "
                                f"big VALUES {rows};\n" + job.read_text(),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    got = dense_result(duck_fetch(path)('SELECT * FROM "Y"'), (80,))
    np.testing.assert_allclose(got, (a * a).sum(axis=1), rtol=1e-12)


def test_compile_errors_name_the_problem(tmp_path):
    with pytest.raises(ProgramError, match=r"input H is not bound to a table.*from"):
        compile_job("input A[i:2,j:2] from t(a, b)\ninput H[j:2]\nY[i] = A[i,j] * H[j]\n"
                    "output Y", dialect="duckdb")
    with pytest.raises(ProgramError, match="label j has no declared bound"):
        compile_job("input A[i:2,j] from t(a, b)\nY[i] = A[i,j]\noutput Y", dialect="postgres")
    with pytest.raises(ProgramError, match="would replace the input table"):
        compile_job("input A[i:2] from y(a)\nY[i] = A[i] * 2\noutput Y", dialect="duckdb")
    source = tmp_path / "p.se"
    source.write_text("input A[i:2] from t(a)\nY[i] = A[i] * 2\noutput Y")
    assert main(["compile", str(source), "--dialect", "duckdb", "--dsn", "x", "-o", "-"]) == 2
    assert main(["compile", str(source), "--dialect", "postgres", "--database", "x",
                 "-o", "-"]) == 2


def test_embedded_data_is_exact(tmp_path, duckdb_cli):
    """Inputs without a table binding are embedded from --data as exact literals."""
    program = "input A[i,j]\ninput b[j:3] from cj_b(j, v)\nY[i] = A[i,j] * b[j]\noutput Y"
    a = np.random.default_rng(3).normal(size=(4, 3)) * 1e-7
    path = tmp_path / "e.duckdb"
    (tmp_path / "data").mkdir()
    np.save(tmp_path / "data" / "A.npy", a)
    job = compile_cli(tmp_path, program, "--dialect", "duckdb", "--data", str(tmp_path / "data"))
    done = subprocess.run([duckdb_cli, "-unsigned", str(path)], input="CREATE TABLE cj_b (j BIGINT, v DOUBLE);"
                          "INSERT INTO cj_b VALUES (0, 0.1), (2, 3.0);\n" + job.read_text(),
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    got = dense_result(duck_fetch(path)('SELECT * FROM "Y"'), (4,))
    np.testing.assert_allclose(got, a @ np.array([0.1, 0.0, 3.0]), rtol=1e-15)


# -- PostgreSQL: psql -----------------------------------------------------------------
@pytest.fixture(scope="session")
def psql() -> str:
    found = shutil.which("psql") or next(iter(sorted(glob("/usr/lib/postgresql/*/bin/psql"))),
                                         None)
    if not found:
        pytest.skip("no psql")
    return found


@pytest.fixture
def pg_tables(pg):
    tables = make_tables()
    cur = pg.conn.cursor()
    write_tables(pg.execute, cur.executemany, tables, "%s")
    pg.execute("DROP TABLE IF EXISTS cj_y")
    pg.execute("CREATE TABLE cj_y (k BIGINT)")
    yield tables
    for name in list(tables) + ["cj_y", HOSTILE, "Z", "S", "M", "L", "T", "P"]:
        pg.execute(f"DROP TABLE IF EXISTS {_q(name)}")


def psql_run(psql: str, dsn: str, job: Path, after: str | None = None):
    cmd = [psql, "-X", "-q", "-t", "-A", dsn, "-f", str(job)] + (["-c", after] if after else [])
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300)


def pg_user_tables(pg) -> set[str]:
    return {r[0] for r in pg.query("SELECT tablename FROM pg_tables WHERE schemaname = 'public'",
                                   [])}


@pytest.mark.parametrize("plan", ["optimal", "relational", "dense", "random:1", "random:5"])
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_postgres_job_matches_run(name, plan, tmp_path, pg, pg_dsn, pg_tables, psql):
    program = PROGRAMS[name]
    job = compile_cli(tmp_path, program, "--dialect", "postgres", "--plan", plan,
                      "--dsn", pg_dsn)
    text = job.read_text()
    assert "\\set ON_ERROR_STOP on" in text and "se_kernels_version()" in text
    before = pg_user_tables(pg)
    left = ("SELECT 'temp=' || count(*) || ' check=' || current_setting("
            "'client_connection_check_interval') FROM pg_class "
            "WHERE relnamespace = pg_my_temp_schema()")
    done = psql_run(psql, pg_dsn, job, left)
    assert done.returncode == 0, done.stderr
    assert "temp=0 check=1s" in done.stdout     # psql's session checks for a vanished psql
    want = run(program, {}, backend=pg)
    check_outputs(lambda sql: pg.query(sql, []), program, want)
    again = psql_run(psql, pg_dsn, job)
    assert again.returncode == 0, again.stderr
    check_outputs(lambda sql: pg.query(sql, []), program, want)
    after = pg_user_tables(pg)
    assert set(want) <= after and after - before <= set(want)   # outputs only, no litter


def test_postgres_failures_leave_previous_outputs(tmp_path, pg, pg_dsn, pg_tables, psql):
    job = compile_cli(tmp_path, GCN, "--dialect", "postgres", "--plan", "random:2")
    assert psql_run(psql, pg_dsn, job).returncode == 0
    before = pg.query('SELECT * FROM "Z" ORDER BY 1, 2', [])
    broken = tmp_path / "broken.sql"
    broken.write_text(job.read_text().replace("\n-- intermediates\n",
                                              '\nSELECT * FROM "no such table";\n'))
    failed = psql_run(psql, pg_dsn, broken)
    assert failed.returncode != 0 and "no such table" in failed.stderr
    assert pg.query('SELECT * FROM "Z" ORDER BY 1, 2', []) == before

    tables = pg_user_tables(pg)
    pg.execute(f"INSERT INTO cj_edges VALUES ({N}, 0, 1.0)")
    failed = psql_run(psql, pg_dsn, job)
    assert failed.returncode != 0 and "input A: key i outside 0..11" in failed.stderr
    assert pg.query('SELECT * FROM "Z" ORDER BY 1, 2', []) == before
    assert pg_user_tables(pg) == tables


def test_postgres_hostile_table_name(tmp_path, pg, pg_dsn, pg_tables, psql):
    pg.execute(f'CREATE TABLE {_q(HOSTILE)} (a BIGINT, "b c" BIGINT)')
    pg.execute(f"INSERT INTO {_q(HOSTILE)} VALUES (0, 0), (2, 1), (2, 1)")
    program = f'input B[i:3, j:2] from {_q(HOSTILE)}(a, "b c")\nS[i] = B[i,j]\noutput S'
    job = compile_cli(tmp_path, program, "--dialect", "postgres")
    done = psql_run(psql, pg_dsn, job)
    assert done.returncode == 0, done.stderr
    assert sorted(pg.query('SELECT * FROM "S"', [])) == [(0, 1.0), (2, 2.0)]
    assert pg.query("SELECT count(*) FROM cj_y", [])[0][0] == 0


def test_postgres_job_needs_the_kernels(tmp_path, pg, pg_dsn, psql):
    from psycopg.conninfo import make_conninfo
    pg.execute("DROP DATABASE IF EXISTS cj_no_kernels")
    pg.execute("CREATE DATABASE cj_no_kernels")
    try:
        job = compile_cli(tmp_path, "input A[i:2] from t(a)\nY[i] = A[i] * 2\noutput Y",
                          "--dialect", "postgres")
        failed = psql_run(psql, make_conninfo(pg_dsn, dbname="cj_no_kernels"), job)
        assert failed.returncode != 0
        assert "needs the sparse_einsum_kernels extension" in failed.stderr
        assert "sparse-einsum install-kernels" in failed.stderr
    finally:
        pg.execute("DROP DATABASE IF EXISTS cj_no_kernels")


# -- Spark: spark-sql -------------------------------------------------------------------
SPARK_SQL_CONF = {"spark.master": "local[2]", "spark.sql.shuffle.partitions": "2",
                  "spark.sql.adaptive.enabled": "false",
                  "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"}


@pytest.fixture(scope="module")
def spark_sql() -> str:
    """pyspark's spark-sql script (a JVM starts per call: 30-60 s)."""
    try:
        import pyspark
    except ImportError:
        pytest.skip("no pyspark: pip install sparse-einsum[spark]")
    script = Path(pyspark.__file__).parent / "bin" / "spark-sql"
    if not (script.is_file() and shutil.which("java")):
        pytest.skip("spark-sql needs pyspark's scripts and Java")
    return str(script)


def test_spark_job_matches_run(tmp_path, spark_sql):
    """Jobs run by spark-sql, in one launch: the GCN with the JVM kernels (dense plan) and
    under a random plan, the non-annihilating program; then data with a key outside the
    compiled bound fails the job, naming the input and label, and leaves the outputs."""
    tables = {k.replace(" ", "_"): v for k, v in make_tables().items()}  # Spark: no spaces
    gcn = GCN.replace('"cj weights"', "cj_weights")
    setup = [f"CREATE TABLE `{name}` USING parquet AS SELECT * FROM VALUES "
             + ", ".join(f"({', '.join(map(_spark_literal, row))})" for row in rows)
             + f" AS v({', '.join(f'`{c}`' for c in cols)});"
             for name, (cols, rows) in tables.items()]
    random_gcn = gcn.replace("Z", "Zr")
    jobs = [compile_job(gcn, dialect="spark", plan="dense"),
            compile_job(random_gcn, dialect="spark", plan="random:2"),
            compile_job(NON_ANNIHILATING, dialect="spark")]
    jar = re.search(r"--jars (\S+)", jobs[0]).group(1)
    script = tmp_path / "all.sql"
    script.write_text("\n".join(setup + jobs + [f"INSERT INTO cj_edges VALUES ({N}, 0, 1.0);",
                                                 jobs[0], "SELECT 'not reached';"]))
    conf = [x for k, v in SPARK_SQL_CONF.items() for x in ("--conf", f"{k}={v}")]
    done = subprocess.run([spark_sql, "--jars", jar, "--conf",
                           "spark.sql.catalog.sparse_einsum=sparseeinsum.spark.KernelCatalog",
                           *conf, "-f", str(script)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=900)
    assert done.returncode != 0 and "not reached" not in done.stdout, done.stderr[-3000:]
    assert f"input A: key i outside 0..{N - 1}" in done.stderr, done.stderr[-3000:]
    warehouse = tmp_path / "spark-warehouse"
    assert not list(warehouse.glob("se_job*")), "staged outputs left behind"
    import pyarrow.parquet as pq
    want = {**expected(gcn, tables), **expected(random_gcn, tables),
            **expected(NON_ANNIHILATING, tables)}
    for name, value in want.items():
        rows = pq.read_table(warehouse / name.lower()).to_pylist()
        got = dense_result([tuple(r.values()) for r in rows], np.shape(value))
        np.testing.assert_allclose(got, value, rtol=1e-9, atol=1e-12, err_msg=name)


def _spark_literal(x: int | float) -> str:
    """Spark reads 0.5 as a DECIMAL: doubles in exponent notation."""
    return repr(x) if isinstance(x, int) or "e" in repr(x) else f"{x!r}e0"


def test_spark_jobs_do_not_train():
    from sparse_einsum.training import compile_training_job
    with pytest.raises(PlanError, match="^training jobs replace the parameter tables in one "
                                        "transaction, which spark jobs cannot: compile --train "
                                        "for postgres, duckdb, duckdb-builtin$"):
        compile_training_job(GCN, {}, dialect="spark", loss="softmax_ce", params=["W1"])
