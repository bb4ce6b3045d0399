"""The temporary data of a Spark backend on this machine, and who removes it.

One directory per backend, ``sparse-einsum-spark-<pid>-<random>`` in the system's
temporary directory, holds the Parquet files of inputs (`spark_inputs`), the reliable
checkpoints of a local master, and the local dirs (shuffle files, cached blocks) of a
session the backend starts on this machine. It goes when the backend closes. When the
backend's process dies first, the driver JVM removes it as it exits (PySpark's gateway
JVM ends when its stdin, a pipe from the Python parent, reaches its end). When both die at
once (a job's processes killed together), the next backend removes the directories whose
process is gone, and the files they list (a local-cluster's executor logs).
"""
from __future__ import annotations

import os
import re
import shutil
import tempfile
import weakref
from pathlib import Path

PREFIX = "sparse-einsum-spark-"
_OWNED = re.compile(re.escape(PREFIX) + r"(\d+)-\w+")
_ALSO = "also-remove"           # paths outside the directory that go with it, one a line


class Scratch:
    """This backend's temporary directory, made on creation after `sweep`."""

    def __init__(self):
        sweep()
        self.path = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-"))
        self._finalizer = weakref.finalize(self, _remove, self.path)

    def subdir(self, name: str) -> Path:
        path = self.path / name
        path.mkdir(exist_ok=True)
        return path

    def also(self, path: str) -> None:
        """Remove `path` (outside the directory) with it."""
        with open(self.path / _ALSO, "a") as f:
            f.write(path + "\n")

    def hand_to(self, spark) -> None:
        """Let the driver JVM of `spark` remove the directory (and what it lists) at its
        exit; nothing for a Spark Connect session."""
        try:
            jvm = spark.sparkContext._jvm
        except Exception:  # noqa: BLE001 - Spark Connect sessions have no SparkContext
            return
        hooks = jvm.org.apache.spark.util.ShutdownHookManager
        for path in [self.path, *_listed(self.path)]:
            hooks.registerShutdownDeleteDir(jvm.java.io.File(str(path)))

    def close(self) -> None:
        self._finalizer()


def _listed(directory: Path) -> list[Path]:
    try:
        return [Path(line) for line in (directory / _ALSO).read_text().splitlines() if line]
    except OSError:
        return []


def _remove(directory: Path) -> None:
    for path in _listed(directory):
        shutil.rmtree(path, ignore_errors=True)
    shutil.rmtree(directory, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:        # another user's process
        return True
    return True


def sweep(root: str | None = None) -> list[Path]:
    """Remove the directories (in `root`, default the system's temporary directory) of
    backends whose process has ended; returns them."""
    removed = []
    for directory in Path(root or tempfile.gettempdir()).glob(PREFIX + "*"):
        owner = _OWNED.fullmatch(directory.name)
        if owner and not _alive(int(owner.group(1))):
            _remove(directory)
            removed.append(directory)
    return removed
