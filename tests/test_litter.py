"""No litter: a run killed with SIGKILL or interrupted with Ctrl-C (SIGINT) leaves no table in
the database and no PostgreSQL statement running, and a killed Spark run no JVM, executor or
temporary file (real subprocesses, real signals);
`cleanup` removes what older versions left, and nothing else; a DuckDB file another process
holds is named with that process."""
from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import duckdb
import numpy as np
import pytest

import sparse_einsum as se
from sparse_einsum.backends.duckdb import DuckDBBackend
from sparse_einsum.cli import main

REPO = Path(__file__).resolve().parents[1]

# A chain of sparse products under the relational plan: several seconds of statements.
CHILD = r"""
import sys
import numpy as np, scipy.sparse as sp
import sparse_einsum as se
backend, target, prefix = sys.argv[1:4]
rng = np.random.default_rng(0)
n, nnz = 100_000, 400_000
a = sp.coo_matrix((rng.random(nnz), (rng.integers(0, n, nnz), rng.integers(0, n, nnz))),
                  shape=(n, n)).tocsr()
program = "input A[i,j]\ninput Y0[j,f]\n" + "".join(
    f"Y{k + 1}[i,f] = A[i,j] * Y{k}[j,f]\n" for k in range(8)) + "output Y8"
options = {"database": target} if backend == "duckdb" else {"dsn": target}
se.run(program, {"A": a, "Y0": rng.random((n, 4))}, plan="relational", backend=backend,
       prefix=prefix, progress=lambda line: print(line, flush=True), **options)
print("finished", flush=True)
"""


def interrupted_run(backend: str, target: str, sig: int) -> str:
    """Start CHILD, send `sig` once its third step runs; returns the table prefix it used."""
    prefix = f"se_{uuid.uuid4().hex[:10]}"
    child = subprocess.Popen([sys.executable, "-c", CHILD, backend, target, prefix], cwd=REPO,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for line in child.stdout:
            assert line.strip() != "finished", "the run ended before it could be interrupted"
            if line.startswith("[3/"):
                break
        time.sleep(0.5)
        os.kill(child.pid, sig)
        child.wait(timeout=120)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    return prefix


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT], ids=["SIGKILL", "SIGINT"])
def test_interrupted_duckdb_run_leaves_nothing(tmp_path, sig):
    path = tmp_path / "work.duckdb"
    with duckdb.connect(str(path)) as con:
        con.execute("CREATE TABLE keep (x INTEGER)")
    interrupted_run("duckdb", str(path), sig)
    with duckdb.connect(str(path)) as con:
        tables = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    assert tables == {"keep"}


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT], ids=["SIGKILL", "SIGINT"])
def test_interrupted_postgres_run_leaves_nothing(pg, pg_dsn, sig):
    prefix = interrupted_run("postgres", pg_dsn, sig)
    deadline = time.time() + 60
    while time.time() < deadline:     # the server ends the killed client's backend
        busy = pg.query("SELECT count(*) FROM pg_stat_activity WHERE query LIKE %s",
                        [f"%{prefix}%"])[0][0]
        if not busy:
            break
        time.sleep(0.5)
    left = pg.query("SELECT relname FROM pg_class WHERE relname LIKE %s", [f"{prefix}%"])
    assert left == []


# A A^T of a dense 500 x 200 matrix under the relational plan: it loads in a moment, and its
# one statement (a join of 50M rows) runs for tens of seconds.
GRAM = "input A[i,j]\nY[i,k] = A[i,j] * A[k,j]\noutput Y\n"


def _poll(query, deadline: float, done) -> list[tuple]:
    """Rows of `query` (a callable), polled until `done(rows)` or `deadline` (time.time())."""
    while True:
        rows = query()
        if done(rows) or time.time() > deadline:
            return rows
        time.sleep(0.1)


def test_a_killed_postgres_client_stops_its_statement(pg, pg_dsn, tmp_path):
    """SIGKILL of `sparse-einsum run` mid-statement: the server notices the closed
    connection (client_connection_check_interval) and ends the backend within seconds,
    its transaction rolled back; the next run gives NumPy's answer."""
    import psycopg

    name = f"se_test_kill_{uuid.uuid4().hex[:8]}"
    (tmp_path / "gram.se").write_text(GRAM)
    (tmp_path / "data").mkdir()
    np.save(tmp_path / "data" / "A.npy", np.random.default_rng(0).random((500, 200)))
    dsn = psycopg.conninfo.make_conninfo(pg_dsn, application_name=name)
    child = subprocess.Popen(
        [sys.executable, "-m", "sparse_einsum", "run", str(tmp_path / "gram.se"), "--data",
         str(tmp_path / "data"), "--backend", "postgres", "--dsn", dsn, "--plan", "relational",
         "--quiet"], cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    mine = "SELECT pid, state, query FROM pg_stat_activity WHERE application_name = %s"
    try:
        running = _poll(lambda: pg.query(mine + " AND state = 'active' AND query LIKE %s",
                                         [name, "%JOIN%"]),
                        time.time() + 60, bool)
        assert running and child.poll() is None, "the statement did not start"
        prefix = re.search(r"se_[0-9a-f]{10}_", running[0][2]).group()
        child.kill()
        child.wait()
        left = _poll(lambda: pg.query(mine, [name]), time.time() + 5, lambda rows: not rows)
        assert left == [], "the killed client's backend still runs"
        assert pg.query("SELECT relname FROM pg_class WHERE relname LIKE %s",
                        [prefix + "%"]) == []
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        pg.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                 "WHERE application_name = %s", [name])
    a = np.random.default_rng(1).random((30, 20))
    got = se.run(GRAM, {"A": a}, plan="relational", backend=pg)["Y"]
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, a @ a.T, rtol=1e-12)


def test_the_client_check_on_a_callers_connection_lasts_the_backends_work(pg, pg_kernels):
    """The backend's own session checks for its client throughout; on a caller's connection
    only its transactions do, and the caller's setting is back after (also after a failure)."""
    import psycopg

    from sparse_einsum.backends.postgres import PostgresBackend

    show = "SHOW client_connection_check_interval"
    assert pg.query(show) == [("1s",)]
    with psycopg.connect(pg_kernels, autocommit=True) as conn:
        conn.execute("SET client_connection_check_interval = '5s'")
        backend = PostgresBackend(connection=conn)
        with backend.scope():
            assert backend.query(show) == [("1s",)]
        assert backend.query(show) == [("5s",)]
        with pytest.raises(psycopg.errors.DivisionByZero), backend.transaction():
            backend.execute("SELECT 1 / 0")
        assert backend.query(show) == [("5s",)]
        a = np.random.default_rng(2).random((4, 3))
        np.testing.assert_allclose(se.run(GRAM, {"A": a}, backend=conn)["Y"], a @ a.T,
                                   rtol=1e-12)
        assert backend.query(show) == [("5s",)]


def test_cleanup_removes_only_what_old_versions_left(tmp_path, capsys):
    path = tmp_path / "old.duckdb"
    old = ["se_0123456789_t1", "se_abcdef0123_in0", "se_abcdef0123_in0_src"]
    kept = ["se_job_t1", "se_012345678_t1", "se_0123456789", "edges", "se_0123456789x_t1",
            "se_0123456789ab_t1"]
    with duckdb.connect(str(path)) as con:
        for name in old + kept:
            con.execute(f'CREATE TABLE "{name}" (x INTEGER)')
    assert main(["cleanup", "--database", str(path), "--dry-run"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 3
    assert main(["cleanup", "--database", str(path)]) == 0
    out = capsys.readouterr()
    assert sorted(out.out.splitlines()) == sorted(f'removed table "main"."{n}"' for n in old)
    assert "removed 3 leftovers of killed runs" in out.err
    with duckdb.connect(str(path)) as con:
        tables = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    assert tables == set(kept)


def test_cleanup_on_postgres(pg, pg_dsn, capsys):
    name = f"se_{uuid.uuid4().hex[:10]}_t7"
    other = f"zz_{uuid.uuid4().hex[:10]}_t7"
    for table in (name, other):
        pg.execute(f'CREATE UNLOGGED TABLE "{table}" (x integer)')
    try:
        assert main(["cleanup", "--dsn", pg_dsn]) == 0
        assert f'removed table "public"."{name}"' in capsys.readouterr().out
        left = {r[0] for r in pg.query("SELECT relname FROM pg_class WHERE relname IN (%s, %s)",
                                       [name, other])}
        assert left == {other}
    finally:
        for table in (name, other):
            pg.execute(f'DROP TABLE IF EXISTS "{table}"')


def test_cleanup_needs_one_database(capsys, tmp_path):
    assert main(["cleanup"]) == 2
    assert "give one database" in capsys.readouterr().err
    assert main(["cleanup", "--database", str(tmp_path / "none.duckdb")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_stale_duckdb_spill_files_are_cleaned(tmp_path):
    path = tmp_path / "spill.duckdb"
    duckdb.connect(str(path)).close()
    spill = Path(str(path) + ".tmp")
    spill.mkdir()
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()
    stale = spill / f"duckdb_temp_{dead}_0_storage_DEFAULT-0.tmp"
    live = spill / f"duckdb_temp_{os.getpid()}_0_storage_DEFAULT-0.tmp"
    stale.write_bytes(b"x")
    live.write_bytes(b"x")
    assert main(["cleanup", "--database", str(path)]) == 0
    assert not stale.exists() and live.exists()


def test_a_duckdb_file_in_use_names_the_process(tmp_path):
    path = tmp_path / "held.duckdb"
    program = tmp_path / "p.se"
    program.write_text("input A[i]\nY[i] = A[i] * 2\n")
    (tmp_path / "data").mkdir()
    np.save(tmp_path / "data" / "A.npy", np.arange(3.0))
    with duckdb.connect(str(path)):
        result = subprocess.run(
            [sys.executable, "-m", "sparse_einsum", "run", str(program), "--data",
             str(tmp_path / "data"), "--database", str(path)],
            capture_output=True, text=True, cwd=REPO, timeout=120)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        f"sparse-einsum: error: cannot open DuckDB database {path}: it is in use by process "
        f"{os.getpid()} ("), lines


def test_duckdb_shell_opens_files_this_package_creates(tmp_path, capsys):
    """A file the package creates uses a storage version the duckdb 1.5 shell reads: a job
    compiled against it runs in the installed shell."""
    cli = shutil.which("duckdb")
    if cli is None:
        if os.environ.get("CI"):
            pytest.fail("no duckdb shell: pip install duckdb-cli (in the [dev] extra)")
        pytest.skip("no duckdb shell")
    path = tmp_path / "made.duckdb"
    with DuckDBBackend(database=str(path)) as db:
        db.execute("CREATE TABLE edges (src BIGINT, dst BIGINT, w DOUBLE)")
        db.execute("INSERT INTO edges VALUES (0, 1, 2.0), (1, 0, 3.0), (1, 1, 1.0)")
    program = tmp_path / "p.se"
    program.write_text("input E[i,j] from edges(src, dst, w)\nY[i] = E[i,j] * E[i,j]\n")
    job = tmp_path / "job.sql"
    assert main(["compile", str(program), "--dialect", "duckdb", "--database", str(path),
                 "-o", str(job)]) == 0
    done = subprocess.run([cli, "-unsigned", "-csv", "-noheader", str(path)],
                          input=job.read_text() + "SELECT * FROM Y ORDER BY 1;\n",
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["0,4.0", "1,10.0"]


def _descendants(pid: int) -> dict[int, str]:
    """The processes below `pid`, with their command lines."""
    rows = subprocess.run(["ps", "-ww", "-eo", "pid=,ppid=,args="], capture_output=True,
                          text=True).stdout.splitlines()
    children: dict[int, list[tuple[int, str]]] = {}
    for pid_, ppid, *args in (row.split(None, 2) for row in rows):
        children.setdefault(int(ppid), []).append((int(pid_), " ".join(args)))
    found, todo = {}, [pid]
    while todo:
        for child, args in children.get(todo.pop(), []):
            found[child] = args
            todo.append(child)
    return found


@pytest.mark.parametrize("master", ["local[2]", "local-cluster[2,1,1024]"])
def test_a_killed_spark_client_ends_its_application(tmp_path, master):
    """SIGKILL of `sparse-einsum run --backend spark` during a long statement: its driver
    JVM (which ends when its Python parent does) stops the executors and workers and
    removes the backend's temporary directory (inputs, checkpoints, Spark's local dirs,
    a local-cluster's executor logs) within seconds; a later backend sweeps what a dead
    process left, and nothing else."""
    pytest.importorskip("pyspark")
    from sparse_einsum.backends import spark_scratch
    (tmp_path / "gram.se").write_text(GRAM)
    (tmp_path / "data").mkdir()
    np.save(tmp_path / "data" / "A.npy", np.random.default_rng(0).random((500, 200)))
    child = subprocess.Popen(
        [sys.executable, "-m", "sparse_einsum", "run", str(tmp_path / "gram.se"), "--data",
         str(tmp_path / "data"), "--backend", "spark", "--spark", master,
         "--plan", "relational"], cwd=REPO, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, text=True)
    try:
        for line in child.stderr:
            if line.startswith("[2/"):         # the statement Y (after the load of A)
                break
        else:
            pytest.fail("the run ended before its statement")
        time.sleep(3)
        processes = _descendants(child.pid)
        scratch, = Path(tempfile.gettempdir()).glob(f"{spark_scratch.PREFIX}{child.pid}-*")
        also = spark_scratch._listed(scratch)
        assert child.poll() is None, "the statement ended before the kill"
        assert any("CoarseGrainedExecutorBackend" in a for a in processes.values()) == \
            master.startswith("local-cluster"), processes
        child.kill()
        child.wait()
        left = _poll(lambda: [p for p in processes if Path(f"/proc/{p}").exists()],
                     time.time() + 15, lambda rows: not rows)   # 2.5-4.5 s on an idle machine
        assert left == [], {p: processes[p] for p in left}
        assert not scratch.exists() and not any(p.exists() for p in also)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


def test_the_next_spark_backend_sweeps_what_dead_processes_left(tmp_path, monkeypatch):
    """Directories of backends whose process is gone go (with the paths they list);
    those of live processes and other names stay (no Spark needed)."""
    from sparse_einsum.backends import spark_scratch
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    dead = int(subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                              capture_output=True, text=True).stdout)
    logs = tmp_path / "work" / "app-1"
    logs.mkdir(parents=True)
    stale = tmp_path / f"{spark_scratch.PREFIX}{dead}-abc"
    (stale / "inputs").mkdir(parents=True)
    (stale / spark_scratch._ALSO).write_text(f"{logs}\n")
    live = tmp_path / f"{spark_scratch.PREFIX}{os.getpid()}-abc"
    other = tmp_path / f"{spark_scratch.PREFIX}abc"
    live.mkdir()
    other.mkdir()
    scratch = spark_scratch.Scratch()
    assert not stale.exists() and not logs.exists() and live.exists() and other.exists()
    assert scratch.path.parent == tmp_path and scratch.path.exists()
    scratch.close()
    assert not scratch.path.exists()
