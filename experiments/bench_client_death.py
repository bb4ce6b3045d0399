"""How long PostgreSQL works on for a client that died: the time from a SIGKILL of
`sparse-einsum run` in the middle of a long statement to no backend of that client left.

    python -m experiments.bench_client_death --dsn DSN [--repeats 3] [--limit 120]
                                             [--out FILE.csv]

The program is A A^T of a dense 500 x 200 matrix under the relational plan (one statement
of tens of seconds). The run is started with the `sparse_einsum` its working directory
imports, so running this file from another checkout measures that version. Backends still
there after `--limit` seconds are terminated. Prints each time, their median and noise
(`experiments.harness.Timings`).
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np
import psycopg

from . import harness

PROGRAM = "input A[i,j]\nY[i,k] = A[i,j] * A[k,j]\noutput Y\n"


def killed_once(dsn: str, work: Path, limit: float) -> float:
    """Seconds from the SIGKILL to no backend of the killed client (`limit` if some remain)."""
    name = f"se_bench_kill_{uuid.uuid4().hex[:8]}"
    child = subprocess.Popen(
        [sys.executable, "-m", "sparse_einsum", "run", str(work / "gram.se"), "--data",
         str(work), "--backend", "postgres", "--plan", "relational", "--quiet",
         "--dsn", psycopg.conninfo.make_conninfo(dsn, application_name=name)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    mine = "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s"
    with psycopg.connect(dsn, autocommit=True) as conn:
        try:
            while not conn.execute(mine + " AND state = 'active' AND query LIKE '%%JOIN%%'",
                                   (name,)).fetchone()[0]:
                if child.poll() is not None:
                    raise SystemExit("the run ended before its statement was seen")
                time.sleep(0.05)
            time.sleep(1.0)
            child.kill()
            start = time.perf_counter()
            child.wait()
            while conn.execute(mine, (name,)).fetchone()[0]:
                if time.perf_counter() - start > limit:
                    break
                time.sleep(0.05)
            return time.perf_counter() - start
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
            conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                         "WHERE application_name = %s", (name,))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m experiments.bench_client_death",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--dsn", required=True)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--limit", type=float, default=120.0)
    ap.add_argument("--out", help="write the median to this CSV file")
    args = ap.parse_args(argv)
    provenance = harness.Provenance("bench_client_death", argv)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "gram.se").write_text(PROGRAM)
        np.save(work / "A.npy", np.random.default_rng(0).random((500, 200)))
        times = [killed_once(args.dsn, work, args.limit) for _ in range(args.repeats)]
    timings = harness.Timings({"SIGKILL -> no backend left": times})
    print("SIGKILL -> no backend left (s): " + ", ".join(f"{t:.2f}" for t in times))
    print("\n".join(timings.lines()))
    if args.out:
        harness.write_csv(args.out, timings.rows(limit_s=args.limit), provenance)


if __name__ == "__main__":
    main()
