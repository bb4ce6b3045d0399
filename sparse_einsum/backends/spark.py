"""The Spark backend: Spark SQL on a local master, a cluster, or a Spark Connect server.

Inputs go in through Arrow (``createDataFrame`` of an Arrow table) and Parquet files are
read in place; every statement is a temporary view, computed when it is issued and held
in the executors' memory as a local checkpoint (`SparkBackend.materialize`); results come
back through Arrow (``toArrow``). Kernels are Arrow UDFs registered for the statement
that calls them. Their code is pickled by value, so the executors need the Python
packages the kernels import (numpy, scipy, pyarrow, and pandas for pyspark's Arrow
path), not sparse-einsum itself.
"""
from __future__ import annotations

import re
import sys
import warnings
from dataclasses import replace
from importlib import import_module
from typing import Callable, Sequence

import numpy as np

from ..blocks import Blocks
from ..cost import CostParams
from ..errors import BackendError, DataError
from ..inputs import SourceInput
from ..kernels import arrow_kernels, numpy_kernels, spec as kernel_spec
from ..kernels.arrow_kernels import (aggregate_function, kernel_function, scalars,
                                     sparsify_function, split_function, stack_function,
                                     to_arrow)
from ..memory import parse_size
from ..program import ops as ops_table
from ..program.ops import BINARY, CONSTANT, OPS
from ..sql.spark import SCALAR_UDF_PREFIX, SparkDialect
from ..sql.steps import KernelUse, Step, TableRelation
from .base import Backend, arrow_columns, arrow_relation, relation_blocks

DEFAULT_MASTER = "local[*]"
# settings of a session this backend starts (a session given to it is left as it is)
SESSION_CONFIG = {
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    # a task carries its slice of a loaded input: a relation of a few large array tuples
    # is over the default 128 MB
    "spark.rpc.message.maxSize": "1024",
}
_ARRAY, _DOUBLE = "array<double>", "double"
# the modules the kernels run, shipped with them: executors need no sparse-einsum
_PICKLED_BY_VALUE = (arrow_kernels, numpy_kernels, kernel_spec, ops_table,
                     import_module("..blocks", __package__), import_module("..tiling", __package__))


def _first_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__


def start_session(master: str, config: dict[str, str] | None = None):
    """A SparkSession on `master`: ``local[N]``, ``local-cluster[W,C,MB]``, a cluster's
    master URL (``spark://``, ``yarn``, ``k8s://``) or a Spark Connect URL (``sc://``)."""
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise BackendError("the spark backend needs pyspark: pip install "
                           "'sparse-einsum[spark]' (and Java 17)") from None
    if master.startswith("sc://"):
        builder = SparkSession.builder.remote(master)
    else:
        builder = SparkSession.builder.master(master).appName("sparse-einsum")
        if master.startswith("local"):   # executors are this machine: use this Python
            builder = builder.config("spark.pyspark.python", sys.executable)
    for key, value in {**SESSION_CONFIG, **(config or {})}.items():
        builder = builder.config(key, value)
    try:
        session = builder.getOrCreate()
        if not master.startswith("sc://"):
            session.sparkContext.setLogLevel("ERROR")
        return session
    except Exception as exc:  # noqa: BLE001 - pyspark raises many kinds; one line for the user
        raise BackendError(f"cannot start Spark on {master}: {_first_line(exc)} (the spark "
                           "backend needs Java 17: apt-get install openjdk-17-jre-headless)"
                           ) from None


class SparkBackend(Backend):
    """Runs compiled steps on Spark: a session started on `master` (default local[*]) and
    stopped on close, or a SparkSession given as `session` (left running)."""
    name = "spark"
    # one tuple or kernel call: at most a quarter of an executor's memory (the Arrow
    # batches, the Python worker's copies and the kernel's arrays share it)
    memory_share = 1 / 4

    def __init__(self, master: str | None = None, *, session=None,
                 parallelism: int | None = None, config: dict[str, str] | None = None):
        from pyspark import cloudpickle
        for module in _PICKLED_BY_VALUE:
            cloudpickle.register_pickle_by_value(module)
        self._owns = session is None
        self.spark = session if session is not None else \
            start_session(master or DEFAULT_MASTER, config)
        self.parallelism = parallelism or self._cluster_parallelism()
        self.dialect = SparkDialect()
        self._frames: dict[str, object] = {}      # view -> its checkpointed DataFrame
        self._register_scalar_udfs()

    def _cluster_parallelism(self) -> int | None:
        """Task slots of the cluster: a local master's threads, a local-cluster's workers
        times their cores, else Spark's default parallelism (which is at least 2 on a
        cluster); a Spark Connect client cannot ask: None."""
        try:
            context = self.spark.sparkContext
        except Exception:  # noqa: BLE001 - Spark Connect sessions have no SparkContext
            return None
        local = re.fullmatch(r"local\[(\d+)\]|local-cluster\[(\d+),\s*(\d+),\s*\d+\]",
                             context.master)
        if local:
            threads, workers, cores = local.groups()
            return int(threads) if threads else int(workers) * int(cores)
        return int(context.defaultParallelism)

    def cost_params(self, params: CostParams) -> CostParams:
        return replace(params, parallelism=float(self.parallelism)) if self.parallelism \
            else params

    def memory_limit(self) -> tuple[int, str] | None:
        """An executor's memory (Spark's default 1g where the session does not set it;
        None for a Spark Connect client, which cannot ask)."""
        try:
            text = self.spark.sparkContext.getConf().get("spark.executor.memory", "1g")
        except Exception:  # noqa: BLE001 - Spark Connect sessions have no SparkContext
            return None
        size = parse_size(text.lower().rstrip("b") + "ib")       # Spark's 2g, 512m: binary
        return (size, f"spark.executor.memory {text}") if size else None

    def close(self) -> None:
        if self._owns:
            self.spark.stop()
            self._owns = False

    # -- data in and out ----------------------------------------------------
    def load(self, rel: TableRelation, blocks: Blocks) -> None:
        self.materialize(rel.table, self.spark.createDataFrame(arrow_relation(rel, blocks)))

    def materialize(self, view: str, frame) -> None:
        """Compute `frame` now, keep it in the executors (memory, then disk) and make it
        the view `view`. The local checkpoint cuts its lineage: later statements read it
        as a table, so planning them never analyses the statements before them again
        (with cached views it did, and the time grew with the depth of the DAG)."""
        frame = frame.localCheckpoint(eager=True)
        frame.createOrReplaceTempView(view)
        self._frames[view] = frame

    def create(self, table: str, select: str, temporary: bool = False) -> None:
        self.materialize(table, self.spark.sql(select))

    def fetch(self, rel: TableRelation) -> Blocks:
        cols = ", ".join(self.dialect.q(c) for c in rel.columns + ("val",))
        return relation_blocks(rel, self.spark.sql(
            f"SELECT {cols} FROM {self.dialect.q(rel.table)}").toArrow())

    def drop(self, rel: TableRelation) -> None:
        self.execute(f"DROP VIEW IF EXISTS {self.dialect.q(rel.table)}")
        frame = self._frames.pop(rel.table, None)
        try:      # free the checkpoint now (Spark Connect frees it with the DataFrame)
            frame._jdf.queryExecution().logical().rdd().unpersist(False)
        except Exception:  # noqa: BLE001 - no frame, or a Spark Connect DataFrame
            pass

    def query(self, sql: str, params: Sequence = ()) -> list[tuple]:
        return [tuple(row) for row in self.spark.sql(sql, args=list(params) or None).collect()]

    def execute(self, sql: str) -> None:
        self.spark.sql(sql)

    def table_columns(self, table: str) -> dict[str, str] | None:
        try:
            schema = self.spark.table(self.dialect.q(table)).schema
        except Exception:  # noqa: BLE001 - AnalysisException: no such table or view
            return None
        return {f.name: f.dataType.simpleString() for f in schema.fields}

    def source_from(self, source: SourceInput, scratch: str) -> str:
        """Parquet files are read in place (the path must be readable by the executors);
        CSV files and Arrow tables become a temporary view."""
        if source.kind == "file" and source.file_format == "parquet":
            return f"parquet.{self.dialect.q(source.location)}"
        if source.kind == "file":
            try:
                frame = self.spark.read.csv(source.location, header=True, inferSchema=True)
            except Exception as exc:  # noqa: BLE001
                raise DataError(f"input {source.name}: cannot read {source.location}: "
                                f"{_first_line(exc)}") from None
        else:
            frame = self.spark.createDataFrame(arrow_columns(source, source.arrow))
        frame.createOrReplaceTempView(scratch)
        return self.dialect.q(scratch)

    def release_source(self, scratch: str) -> None:
        self.execute(f"DROP VIEW IF EXISTS {self.dialect.q(scratch)}")

    # -- statements ---------------------------------------------------------
    def run(self, step: Step) -> None:
        """Register the step's kernels, create its view (the statement) and materialize it;
        then the kernels are no longer needed."""
        for use in step.kernels:
            self._register(use.name, *self._udf(use))
        try:
            self.execute(step.sql)
            self.materialize(step.target.table, self.spark.table(
                self.dialect.q(step.target.table)))
        finally:
            for use in step.kernels:
                self.execute(f"DROP TEMPORARY FUNCTION IF EXISTS {use.name}")

    def _register(self, name: str, fn: Callable, returns: str) -> None:
        from pyspark.sql.functions import ArrowUDFType, arrow_udf
        with warnings.catch_warnings():     # pyspark prefers type hints to the UDF type
            warnings.simplefilter("ignore", UserWarning)
            udf = arrow_udf(fn, returns, ArrowUDFType.SCALAR)
        self.spark.udf.register(name, udf)

    def _udf(self, use: KernelUse) -> tuple[Callable, str]:
        if use.kind == "kernel":
            apply = kernel_function(use.spec, use.args_are_lists, use.returns_list,
                                    self.kernel_constants(use), use.sparse)
            udf = (lambda a: apply(a)) if len(use.args_are_lists) == 1 else \
                (lambda a, b: apply(a, b))
            return udf, _ARRAY if use.returns_list else _DOUBLE
        if use.kind == "aggregate":
            return aggregate_function(use.agg, use.expected_count), _ARRAY
        if use.kind == "sparsify":
            return sparsify_function, _ARRAY
        if use.kind == "split":
            return split_function(use.spec), "array<array<double>>"
        if use.kind == "stack":
            return stack_function(use.spec, use.args_are_lists[0]), _ARRAY
        raise ValueError(use.kind)

    def _register_scalar_udfs(self) -> None:
        """``se_<op>``: the operations Spark SQL cannot evaluate as NumPy does."""
        for op in OPS.values():
            if op.sql_template(self.dialect.name) is None:
                self._register(SCALAR_UDF_PREFIX + op.name, _scalar_function(op.numpy,
                               2 if op.kind in (BINARY, CONSTANT) else 1), _DOUBLE)


def _scalar_function(fn: Callable, arity: int) -> Callable:
    def apply(*arrays):
        with np.errstate(all="ignore"):
            return to_arrow(np.asarray(fn(*(scalars(a).astype(np.float64) for a in arrays)),
                                       dtype=np.float64))
    return (lambda x: apply(x)) if arity == 1 else (lambda a, b: apply(a, b))
