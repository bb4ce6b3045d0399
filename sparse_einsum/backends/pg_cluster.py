"""A PostgreSQL server for the tests and benchmarks: $SE_TEST_PG_DSN, or a throwaway
cluster started with initdb.

The cluster lives in a temp dir, listens only on a Unix socket there, runs as user
postgres when we are root, and is stopped at exit.
"""
from __future__ import annotations

import atexit
import contextlib
import os
import pwd
import shutil
import subprocess
import tempfile
from glob import glob
from pathlib import Path
from typing import Iterator


_shared: dict[str, str | None] = {}


def _find_bin() -> Path | None:
    """Directory of initdb/pg_ctl: PATH first, then the newest /usr/lib/postgresql/*/bin."""
    found = shutil.which("initdb")
    if found:
        return Path(found).parent
    dirs = sorted(glob("/usr/lib/postgresql/*/bin/initdb"),
                  key=lambda p: int(Path(p).parts[-3]) if Path(p).parts[-3].isdigit() else 0)
    return Path(dirs[-1]).parent if dirs else None


def _run(cmd: list[str], user: str | None) -> None:
    if user:
        cmd = ["runuser", "-u", user, "--", *cmd]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{r.stdout}{r.stderr}")


@contextlib.contextmanager
def pg_server() -> Iterator[str | None]:
    """Yield a DSN ($SE_TEST_PG_DSN or a throwaway cluster), or None when there is no server."""
    if os.environ.get("SE_TEST_PG_DSN"):
        yield os.environ["SE_TEST_PG_DSN"]
        return
    bindir = _find_bin()
    if bindir is None:
        yield None
        return
    user = None
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            raise RuntimeError("running as root and there is no user 'postgres' to run initdb") from None
        user = "postgres"
    tmp = tempfile.mkdtemp(prefix="se-pg-", dir="/tmp" if os.path.isdir("/tmp") else None)
    if user:
        shutil.chown(tmp, user, user)
    data = os.path.join(tmp, "data")
    started = False
    try:
        _run([str(bindir / "initdb"), "-D", data, "-A", "trust", "-U", "postgres",
              "--no-sync", "-E", "UTF8"], user)
        for port in range(5433, 5463):
            opts = f"-c listen_addresses='' -k {tmp} -p {port} -c fsync=off"
            try:
                _run([str(bindir / "pg_ctl"), "-D", data, "-w", "-t", "60", "-o", opts,
                      "-l", os.path.join(tmp, "log"), "start"], user)
            except RuntimeError:
                continue
            started = True
            yield f"host={tmp} port={port} user=postgres dbname=postgres"
            break
        else:
            log = Path(tmp, "log").read_text() if Path(tmp, "log").exists() else ""
            raise RuntimeError(f"could not start PostgreSQL in {tmp}:\n{log[-2000:]}")
    finally:
        if started:
            with contextlib.suppress(RuntimeError):
                _run([str(bindir / "pg_ctl"), "-D", data, "-m", "immediate", "stop"], user)
        shutil.rmtree(tmp, ignore_errors=True)


def shared_dsn() -> str | None:
    """One server per process, whatever imports this module; stopped at exit."""
    if "dsn" not in _shared:
        cm = pg_server()
        _shared["dsn"] = cm.__enter__()
        atexit.register(cm.__exit__, None, None, None)
    return _shared["dsn"]
