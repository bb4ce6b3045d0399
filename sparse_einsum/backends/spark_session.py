"""Starting Spark for the spark backend, and reading its failures as one line.

A session the backend starts on this machine (``local[N]``, ``local-cluster[W,C,MB]``):

- runs the driver's interpreter (`sys.executable`) in the Python workers, unless
  PYSPARK_PYTHON is set: PySpark otherwise starts ``python3`` from PATH, which may lack
  the packages the kernels import;
- gives the driver JVM half of the machine's memory unless spark.driver.memory is set
  (Spark's default is 1g, and with local[N] every task runs in that JVM);
- gives local-cluster executors their worker's MB unless spark.executor.memory is set;
- puts the kernel jar (`spark_jar`) on ``spark.jars`` and registers its function catalog
  as ``spark.sql.catalog.sparse_einsum``, unless the user's config names that catalog;
- ends the driver JVM on an OutOfMemoryError (-XX:+ExitOnOutOfMemoryError), which
  otherwise can kill a scheduler thread and leave the job waiting forever; the backend
  then raises a BackendError naming the setting to raise.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from contextlib import contextmanager, nullcontext
from typing import Iterator

from ..errors import BackendError
from ..memory import physical_memory
from ..sql.spark import KERNEL_CATALOG, SparkDialect
from ..sql.templates import render
from . import spark_jar

# settings of a session this backend starts (a session given to it is left as it is)
SESSION_CONFIG = {
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    # inputs that travel inside tasks (small ones, or any on a cluster master): a relation
    # of a few large array tuples is over the default 128 MB
    "spark.rpc.message.maxSize": "1024",
}
CATALOG_KEY = f"spark.sql.catalog.{KERNEL_CATALOG}"
# the JVM aggregates' states stay in the hash aggregate (the planner bounds groups x state
# size: `unspillable_states`) instead of falling back to sorting the rows after 128 groups
AGGREGATE_CONFIG = {"spark.sql.objectHashAggregate.sortBased.fallbackThreshold": str(2**31 - 1)}
# a statement's cached result keeps the partitions adaptive execution coalesced its last
# shuffle to (by default a cached plan keeps all spark.sql.shuffle.partitions of them, and
# every later read of it runs a task for each), and is not compressed (choosing and
# running the encodings of every column took longer than reading Parquet into the cache)
CACHE_CONFIG = {"spark.sql.optimizer.canChangeCachedPlanOutputPartitioning": "true",
                "spark.sql.inMemoryColumnarStorage.compressed": "false"}
_jar_missing: list[str] = []      # why start_session could not add the kernel jar
_LOCAL_CLUSTER = re.compile(r"local-cluster\[\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*\]")
_EXIT_ON_OOM = "-XX:+ExitOnOutOfMemoryError"
_OOM_EXIT_CODE = 3        # the JVM's exit status under ExitOnOutOfMemoryError


def is_local(master: str) -> bool:
    """Whether `master` runs the executors on this machine (they read its files)."""
    return master == "local" or master.startswith(("local[", "local-cluster["))


def local_config(master: str, config: dict[str, str]) -> dict[str, str]:
    """The settings a session started on the local `master` adds to the user's `config`."""
    added = {}
    if "spark.driver.memory" not in config and "--driver-memory" not in \
            os.environ.get("PYSPARK_SUBMIT_ARGS", ""):
        added["spark.driver.memory"] = f"{max(1, machine_memory() // 2 >> 30)}g"
    cluster = _LOCAL_CLUSTER.fullmatch(master)
    if cluster and "spark.executor.memory" not in config:
        added["spark.executor.memory"] = f"{cluster.group(3)}m"
    if "spark.driver.defaultJavaOptions" not in config:
        added["spark.driver.defaultJavaOptions"] = _EXIT_ON_OOM
    return added


def kernel_config(config: dict[str, str]) -> dict[str, str]:
    """The kernel jar on spark.jars and its catalog, added to the user's `config` (nothing
    where the user names the catalog, or where the jar cannot be had: the reason is kept
    for the backend's fallback note)."""
    if CATALOG_KEY in config:
        return {}
    try:
        jar = str(spark_jar.jar_path())
    except BackendError as exc:
        _jar_missing[:] = [str(exc).splitlines()[0]]
        return {}
    return {"spark.jars": ",".join(filter(None, (config.get("spark.jars"), jar))),
            CATALOG_KEY: spark_jar.CATALOG_CLASS}


def kernel_catalog_missing(session) -> str | None:
    """Why `session` cannot call the JVM kernels, or None when it can (the catalog is set
    and a call of it is analysed; nothing runs)."""
    try:
        configured = session.conf.get(CATALOG_KEY, None)
    except Exception:  # noqa: BLE001 - a Spark Connect server may refuse to say
        configured = None
    if not configured:
        why = _jar_missing[0] if _jar_missing else \
            "it was not started with the kernel jar (docs/spark.md)"
        return f"the session has no {CATALOG_KEY}: {why}"
    try:
        check = render("spark/kernels_check", SparkDialect.quote, catalog=KERNEL_CATALOG)
        session.sql(check).schema
    except Exception as exc:  # noqa: BLE001 - the jar is missing or does not load
        return f"{CATALOG_KEY} does not load: {first_line(exc)}"
    return None


def machine_memory() -> int:
    """The machine's memory, or the cgroup's limit when lower (in a container)."""
    memory = physical_memory()
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            with open(path) as f:
                text = f.read().strip()
        except OSError:
            continue
        if text.isdigit():
            memory = min(memory, int(text))
    return memory


@contextmanager
def driver_python() -> Iterator[None]:
    """PYSPARK_PYTHON set to this interpreter while a SparkContext starts (it reads the
    variable then), unless the user set it."""
    if "PYSPARK_PYTHON" in os.environ:
        yield
        return
    os.environ["PYSPARK_PYTHON"] = sys.executable
    try:
        yield
    finally:
        os.environ.pop("PYSPARK_PYTHON", None)


def start_session(master: str, config: dict[str, str] | None = None):
    """A SparkSession on `master`: ``local[N]``, ``local-cluster[W,C,MB]``, a cluster's
    master URL (``spark://``, ``yarn``, ``k8s://``) or a Spark Connect URL (``sc://``)."""
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise BackendError("the spark backend needs pyspark: pip install "
                           "'sparse-einsum[spark]' (and Java 17)") from None
    config = {**SESSION_CONFIG, **(config or {})}
    if master.startswith("sc://"):
        builder = SparkSession.builder.remote(master)
    else:
        builder = SparkSession.builder.master(master).appName("sparse-einsum")
        if is_local(master):
            config |= local_config(master, config)
        config |= kernel_config(config)
    for key, value in config.items():
        builder = builder.config(key, value)
    try:
        with driver_python() if is_local(master) else nullcontext():
            session = builder.getOrCreate()
        if not master.startswith("sc://"):
            session.sparkContext.setLogLevel("FATAL")  # failures reach the user as exceptions
        return session
    except Exception as exc:  # noqa: BLE001 - pyspark raises many kinds; one line for the user
        hint = " (the spark backend needs Java 17: apt-get install openjdk-17-jre-headless)" \
            if "JAVA_GATEWAY_EXITED" in str(exc) else ""
        raise BackendError(f"cannot start Spark on {master}: {first_line(exc)}{hint}") from None


def first_line(exc: BaseException) -> str:
    """The line of an error that says what happened: its first, or for a failed Java call
    the Java exception's (the line after "An error occurred while calling ...")."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    java = [line[1:].strip() for line in lines if line.startswith(": ")]
    return (java or lines or [type(exc).__name__])[0]


def failure(exc: BaseException, memory: dict[str, str], tasks: str) -> BackendError | None:
    """The one-line BackendError for a failure of Spark itself, or None for other errors:
    the driver JVM gone (an OutOfMemoryError ends it), out of memory in a task, an
    exception in a Python worker (its own line, not the worker's traceback). `memory`:
    the session's memory settings (spark.driver.memory, spark.executor.memory) and their
    values; `tasks`: the one that sizes the JVM the tasks run in."""
    from py4j.protocol import Py4JNetworkError

    def raise_(key: str) -> str:
        return f"raise {key}" + (f" (now {memory[key]})" if key in memory else "")

    status = _jvm_exit_status(wait=isinstance(exc, (ConnectionError, Py4JNetworkError)))
    if status == _OOM_EXIT_CODE:
        return BackendError("Spark's driver ran out of memory (java.lang.OutOfMemoryError) "
                            f"and its JVM ended: {raise_('spark.driver.memory')}")
    if status is not None:
        return BackendError(f"Spark's driver JVM ended (exit status {status}): "
                            f"{first_line(exc)}")
    text = str(exc)
    oom = re.search(r"java\.lang\.OutOfMemoryError[^\n]*", text)
    if oom or "exited with code 52" in text:         # Spark's exit code for it
        what = oom.group(0).strip() if oom else "an executor exited with code 52"
        return BackendError(f"Spark ran out of memory ({what}): {raise_(tasks)}")
    from pyspark.errors import PythonException
    if isinstance(exc, PythonException):
        return BackendError(f"a Spark Python worker failed: {_raised_line(text)}")
    return None


def _raised_line(text: str) -> str:
    """The exception line of the last traceback in `text` (the line after its frames)."""
    lines = text.splitlines()
    starts = [n for n, line in enumerate(lines) if line.startswith("Traceback (most recent")]
    if starts:
        for line in lines[starts[-1] + 1:]:
            if line.strip() and not line[0].isspace():
                return line.strip()
    return first_line(Exception(text))


def _jvm_exit_status(wait: bool) -> int | None:
    """The exit status of the driver JVM this process launched, None while it runs (or when
    there is none); `wait`: give an exiting JVM a few seconds to finish."""
    from pyspark import SparkContext
    proc = getattr(SparkContext._gateway, "proc", None)
    if proc is None:
        return None
    try:
        return proc.wait(timeout=10) if wait else proc.poll()
    except subprocess.TimeoutExpired:
        return None


def jvm_ended() -> bool:
    """Whether the driver JVM this process launched has ended."""
    return _jvm_exit_status(wait=False) is not None


def forget_dead_jvm() -> None:
    """After the driver JVM ended, let the next session launch a new one."""
    if jvm_ended():
        from pyspark import SparkContext
        from pyspark.sql import SparkSession
        SparkContext._gateway = SparkContext._jvm = None
        SparkContext._active_spark_context = None
        SparkSession._instantiatedSession = SparkSession._activeSession = None
