"""The Spark backend: Spark SQL on a local master, a cluster, or a Spark Connect server.

Inputs go in through Arrow (``createDataFrame`` of an Arrow table), or, when the executors
run on this machine and the input is large, through a temporary Parquet file
(`spark_inputs`); Parquet files the user names are read in place. With the JVM kernels,
large one-tuple arrays (inputs, and statements' results that kernels read as constants)
are held by the driver's JVM instead, which kernels call by name (`_broadcast_input`,
`run`). Every statement is a temporary view, computed when it is issued and persisted in
the executors (memory, then disk), with its lineage kept and cut by a reliable checkpoint
every few statements (`SparkBackend.materialize`); results come back through Arrow
(``toArrow``). The backend's temporary data on this machine, and who removes it:
`spark_scratch`. Kernels run in the JVM, from the kernel jar's function catalog
(`sql.spark.SparkNativeDialect`), on a session that has it (`start_session` adds it); on a
session without it (a managed cluster that refuses jars) they are Arrow UDFs registered
for the statement that calls them, with a warning and a note in explain. Their code is
pickled by value, so the executors need the Python packages the kernels import (numpy,
scipy, pyarrow, and pandas for pyspark's Arrow path), not sparse-einsum itself. How a
session is started, and how Spark's failures become one-line errors: `spark_session`."""
from __future__ import annotations

import functools
import math
import os
import re
import warnings
from contextlib import contextmanager
from dataclasses import replace
from importlib import import_module
from typing import Callable, Iterator, Sequence

import numpy as np

from ..blocks import Blocks
from ..cost import CostParams
from ..errors import BackendError, DataError, SparseEinsumError
from ..inputs import SourceInput
from ..kernels import arrow_kernels, numpy_kernels, spec as kernel_spec
from ..kernels.arrow_kernels import scalars, to_arrow
from ..memory import parse_size
from ..program import ops as ops_table
from ..program.ops import BINARY, CONSTANT, OPS
from ..sql.dialect import Dialect
from ..sql.spark import SCALAR_UDF_PREFIX, SparkDialect, SparkNativeDialect
from ..sql.pipeline import pieces_query, statement_query
from ..sql.steps import KernelUse, Step, TableRelation
from ..sql.templates import SQL, render
from . import udfs
from .base import Backend, arrow_columns, arrow_relation, relation_blocks
from .spark_inputs import InputFiles
from .spark_scratch import Scratch
from .spark_session import (AGGREGATE_CONFIG, CACHE_CONFIG, failure, first_line,
                            forget_dead_jvm, is_local, jvm_ended, kernel_catalog_missing,
                            start_session)

DEFAULT_MASTER = "local[*]"
# statements a view's lineage may reach back before it is written to a reliable checkpoint
CHECKPOINT_DEPTH = 16
# a statement's shuffle partitions: one per this many bytes it reads (adaptive execution's
# advisory partition size), at least one per task slot
PARTITION_BYTES = 64 << 20
SHUFFLE_PARTITIONS = "spark.sql.shuffle.partitions"
_WARNED: set[str] = set()      # fallback reasons already warned of
_ARRAY, _DOUBLE = "array<double>", "double"
_SPARK_TYPES = {udfs.DOUBLE: _DOUBLE, udfs.LIST: _ARRAY, udfs.LISTS: "array<array<double>>"}
# the modules the kernels run, shipped with them: executors need no sparse-einsum
_PICKLED_BY_VALUE = (arrow_kernels, numpy_kernels, kernel_spec, ops_table,
                     import_module("..blocks", __package__), import_module("..tiling", __package__))


def _reported(method: Callable) -> Callable:
    """`method` with Spark's own failures raised as one-line BackendErrors (`failure`)."""
    @functools.wraps(method)
    def call(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except SparseEinsumError:
            raise
        except Exception as exc:
            error = failure(exc, self._memory, self._task_memory)
            if error is None:
                raise
            raise error from None
    return call


class SparkBackend(Backend):
    """Runs compiled steps on Spark: a session started on `master` (default local[*]) and
    stopped on close, or a SparkSession given as `session` (left running). `native`:
    True requires the JVM kernels, False runs the Arrow UDFs, None (default) the JVM
    kernels where the session has them."""
    name = "spark"
    # one tuple or kernel call: at most a quarter of an executor's memory (the Arrow
    # batches, the Python worker's copies and the kernel's arrays share it)
    memory_share = 1 / 4

    def __init__(self, master: str | None = None, *, session=None,
                 parallelism: int | None = None, config: dict[str, str] | None = None,
                 native: bool | None = None):
        from pyspark import cloudpickle
        for module in _PICKLED_BY_VALUE:
            cloudpickle.register_pickle_by_value(module)
        self._owns = session is None
        self._scratch = Scratch()
        if session is None and is_local(master or DEFAULT_MASTER):
            config = {"spark.local.dir": str(self._scratch.subdir("local")), **(config or {})}
        self.spark = session if session is not None else \
            start_session(master or DEFAULT_MASTER, config)
        self.parallelism = parallelism or self._cluster_parallelism()
        self.dialect = self._kernels(native)
        for key, value in CACHE_CONFIG.items():
            self.spark.conf.set(key, value)
        self._frames: dict[str, tuple] = {}     # view -> (persisted DataFrame, checkpointed RDD)
        self._depth: dict[str, int] = {}          # view -> statements its lineage reaches back
        # views whose data outlives the views it is computed from (training's parameters):
        # checkpointed when made, so that dropping those cannot cut their lineage
        self.rooted: set[str] = set()
        self._bytes: dict[str, int] = {}          # view -> bytes of its cached data
        self._broadcasts: set[str] = set()        # broadcast relations' views
        self._memory, self._task_memory = self._memory_settings()
        self._inputs = InputFiles(self.parallelism, readable=is_local(self._master()),
                                  scratch=self._scratch)
        self._checkpoints = self._checkpoint_dir()
        self._scratch.hand_to(self.spark)
        if not isinstance(self.dialect, SparkNativeDialect):
            self._register_scalar_udfs()

    def _kernels(self, native: bool | None) -> Dialect:
        """The JVM kernels' dialect where the session has the kernel catalog, else the
        Arrow UDF one (`fallback` says why; warned once per reason)."""
        if native is False:
            self.fallback = "the JVM kernels were not requested (native=False)"
            return SparkDialect()
        missing = kernel_catalog_missing(self.spark)
        if missing is None:
            for key, value in AGGREGATE_CONFIG.items():
                self.spark.conf.set(key, value)
            # the driver registers broadcast arrays (not a Spark Connect client)
            return SparkNativeDialect(broadcast_arrays=hasattr(self.spark, "_jsparkSession"))
        if native:
            raise BackendError(f"the Spark JVM kernels are not available: {missing}")
        self.fallback = missing
        if missing not in _WARNED:
            _WARNED.add(missing)
            warnings.warn(f"sparse-einsum runs Spark kernels as Python Arrow UDFs (slower): "
                          f"{missing}", RuntimeWarning, stacklevel=3)
        return SparkDialect()

    def _master(self) -> str:
        try:
            return self.spark.sparkContext.master
        except Exception:  # noqa: BLE001 - Spark Connect sessions have no SparkContext
            return ""

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
        """The memory of the JVM the tasks run in, and its setting (`_memory_settings`)."""
        value = self._memory.get(self._task_memory)
        size = value and parse_size(value.lower().rstrip("b") + "ib")   # 2g, 512m: binary
        return (size, f"{self._task_memory} {value}") if size else None

    def _memory_settings(self) -> tuple[dict[str, str], str]:
        """spark.driver.memory and spark.executor.memory with their values (Spark's default
        1g where the session does not set them; none for a Spark Connect client, which
        cannot ask), and the one that sizes the JVM the tasks run in: the driver's on
        local[N] (the tasks run inside it), else an executor's."""
        master = self._master()
        keys = ("spark.driver.memory", "spark.executor.memory")
        memory = {key: self.spark.sparkContext.getConf().get(key, "1g")
                  for key in keys} if master else {}
        return memory, keys[0 if re.fullmatch(r"local(\[.*\])?", master) else 1]

    def _checkpoint_dir(self) -> bool:
        """Whether reliable checkpoints can be written: to the session's checkpoint directory
        (spark.checkpoint.dir, shared storage on a cluster), else on a local master to one in
        the backend's temporary directory; a local-cluster's executor logs go with that
        directory too. A Spark Connect session keeps local checkpoints (`materialize`)."""
        master = self._master()
        if not master:
            return False
        context = self.spark.sparkContext
        if master.startswith("local-cluster[") and self._owns:
            home = context._jvm.System.getenv("SPARK_HOME")
            if home:
                self._scratch.also(os.path.join(home, "work", context.applicationId))
        if context.getCheckpointDir() is None and is_local(master):
            context.setCheckpointDir(str(self._scratch.subdir("checkpoints")))
        return context.getCheckpointDir() is not None

    def close(self) -> None:
        """Stop the session if this backend started it (after its JVM ended, only let the
        next session start a new one); remove the temporary directory."""
        self._inputs.close()
        if self._broadcasts and not jvm_ended():
            for view in self._broadcasts:
                self._arrays.remove(view)
        self._broadcasts.clear()
        if self._owns:
            self._owns = False
            if not jvm_ended():
                self.spark.stop()
            forget_dead_jvm()
        self._scratch.close()

    # -- data in and out ----------------------------------------------------
    @_reported
    def load(self, rel: TableRelation, blocks: Blocks) -> None:
        """An input travelling inside the tasks (`spark_inputs`) is a view of its rows as
        they are, with no job: they are in the plan already, and a lost executor loses
        nothing of them. A larger one is materialized from its Parquet file."""
        table = arrow_relation(rel, blocks)
        if rel.broadcast:
            self._broadcast_input(rel, table)
            return
        try:
            frame = self._inputs.frame(self.spark, rel.table, table)
            if self._inputs.inline(rel.table) and hasattr(frame, "_jdf"):
                frame.createOrReplaceTempView(rel.table)
                self._frames[rel.table] = (None, None)
                self._bytes[rel.table] = table.nbytes
            else:
                self.materialize(rel.table, frame)
        finally:
            self._inputs.remove(rel.table)

    @property
    def _arrays(self):
        """The kernel jar's registry of broadcast arrays (`BroadcastArray`)."""
        return self.spark._jvm.sparseeinsum.spark.BroadcastArray

    def _broadcast_input(self, rel: TableRelation, table) -> None:
        """A broadcast input (`TableRelation.broadcast`): its one tuple reaches the
        driver's JVM through a file of doubles (`BroadcastArray.fromFile`)."""
        path, count = None, 0
        if table.num_rows:
            values = np.ascontiguousarray(table.column("val").combine_chunks().flatten(),
                                          dtype="<f8")
            path, count = self._scratch.subdir("inputs") / f"{rel.table}.f8", values.size
            values.tofile(path)
        try:
            self._arrays.fromFile(self.spark._jsparkSession, rel.table,
                                  None if path is None else str(path), count)
        finally:
            if path is not None:
                path.unlink(missing_ok=True)
        self._broadcast_view(rel)

    def _broadcast_view(self, rel: TableRelation) -> None:
        """The view of a broadcast relation, for the statements that join it."""
        self._broadcasts.add(rel.table)
        self.execute(render("spark/broadcast_view", self.dialect.quote, view=rel.table,
                            value=SQL(self.dialect.constant(rel))))
        self._frames[rel.table] = (None, None)

    @_reported
    def materialize(self, view: str, frame, reads: frozenset[str] = frozenset()) -> None:
        """Compute `frame` now, persist it in the executors (memory, then disk) and make it
        the view `view`, a leaf over the persisted data: later statements read it as a
        table, so planning them never analyses the statements before them again (over
        cached views it did, and the time grew with the depth of the DAG). Its lineage stays:
        a lost executor's blocks are computed again. Once that lineage reaches back
        CHECKPOINT_DEPTH statements (through the views it `reads`), the data is
        also written to a reliable checkpoint, which then stands for the lineage. Spark
        Connect sessions keep a local checkpoint (the client cannot reach the cache)."""
        if not hasattr(frame, "_jdf"):
            frame.localCheckpoint(eager=True).createOrReplaceTempView(view)
            self._frames[view] = (None, None)
            return
        from pyspark import StorageLevel
        from pyspark.sql.classic.dataframe import DataFrame
        depth = 1 + max((self._depth.get(name, 0) for name in reads), default=0)
        jvm, session = self.spark._jvm, self.spark._jsparkSession
        frame.persist(StorageLevel.MEMORY_AND_DISK)
        cached = session.sharedState().cacheManager().lookupCachedData(frame._jdf).get() \
            .cachedRepresentation()
        blocks = cached.cacheBuilder().cachedColumnBuffers()
        checkpointed = None
        if (depth >= CHECKPOINT_DEPTH or view in self.rooted) and self._checkpoints:
            checkpointed = blocks
            checkpointed.checkpoint()   # written after the job below, from the cached blocks
            depth = 0
        blocks.count()      # one job that computes the cached blocks (a count of the frame
        # would read them again and add a shuffle to one partition)
        self._bytes[view] = int(cached.computeStats().sizeInBytes())
        # read through the cache with this frame's columns (an identical plan cached under
        # other names shares its data)
        rows = jvm.org.apache.spark.sql.classic.Dataset.ofRows(
            session, frame._jdf.queryExecution().analyzed())
        make = getattr(jvm.org.apache.spark.sql.execution, "LogicalRDD$").__getattr__("MODULE$")
        leaf = make.fromDataset(rows.queryExecution().toRdd(), rows, False,
                                getattr(make, "fromDataset$default$4")())
        DataFrame(jvm.org.apache.spark.sql.classic.Dataset.ofRows(session, leaf),
                  self.spark).createOrReplaceTempView(view)
        self._frames[view] = (frame, checkpointed)
        self._depth[view] = depth

    def create(self, table: str, select: str, temporary: bool = False) -> None:
        self.materialize(table, self.spark.sql(select))

    @_reported
    def fetch(self, rel: TableRelation, source: str | None = None) -> Blocks:
        """The relation `rel` from its view, or from the query `source` that computes it."""
        cols = ", ".join(self.dialect.q(c) for c in rel.columns + ("val",))
        source = f"({source}) AS q" if source else self.dialect.q(rel.table)
        return relation_blocks(rel, self.spark.sql(f"SELECT {cols} FROM {source}").toArrow())

    def drop(self, rel: TableRelation) -> None:
        self.drop_view(rel.table)

    def drop_view(self, view: str) -> None:
        """Drop `view` and free the data persisted under it."""
        if jvm_ended():       # a failed run cleans up after Spark ended: nothing to drop
            return
        self.execute(render("common/drop_view", self.dialect.quote, table=view))
        frame, checkpointed = self._frames.pop(view, (None, None))
        if view in self._broadcasts:
            self._broadcasts.discard(view)
            self._arrays.remove(view)
        self._depth.pop(view, None)
        self._bytes.pop(view, None)
        if frame is not None:     # Spark Connect frees a local checkpoint with its DataFrame
            frame.unpersist(blocking=False)
        if checkpointed is not None:
            context = self.spark.sparkContext
            context._jvm.org.apache.spark.rdd.ReliableRDDCheckpointData.cleanCheckpoint(
                context._jsc.sc(), checkpointed.id())

    def rename_view(self, view: str, new: str) -> None:
        """View `view` (and its persisted data) named `new`."""
        self.execute(render("spark/rename_view", self.dialect.quote, view=view, new=new))
        for kept in (self._frames, self._depth, self._bytes):
            if view in kept:
                kept[new] = kept.pop(view)

    @_reported
    def query(self, sql: str, params: Sequence = ()) -> list[tuple]:
        return [tuple(row) for row in self.spark.sql(sql, args=list(params) or None).collect()]

    @_reported
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
                                f"{first_line(exc)}") from None
        else:
            frame = self._inputs.frame(self.spark, scratch, arrow_columns(source, source.arrow))
        frame.createOrReplaceTempView(scratch)
        return self.dialect.q(scratch)

    def release_source(self, scratch: str) -> None:
        self._inputs.remove(scratch)
        if not jvm_ended():
            self.execute(render("common/drop_view", self.dialect.quote, table=scratch))

    # -- statements ---------------------------------------------------------
    @_reported
    def run(self, step: Step) -> None:
        """Materialize the step's query as its view (a broadcast target: computed and
        collected into the driver's registry, not cached; a stack into one tuple as its
        pieces, which the driver scatters without an aggregate's shuffle). The query is not
        made a view first: replacing a view uncaches what was cached under it, which would
        be the statement's own data."""
        with self._statement(step):
            session, table = self.spark._jsparkSession, step.target.table
            if not step.target.broadcast:
                self.materialize(table, self.spark.sql(statement_query(step, self.dialect)),
                                 step.reads)
                return
            if step.gather:
                frame = self.spark.sql(pieces_query(step, self.dialect))
                self._arrays.fromPieces(session, table, frame._jdf, step.gather[0])
            else:
                frame = self.spark.sql(statement_query(step, self.dialect))
                self._arrays.fromFrame(session, table, frame._jdf)
            self._broadcast_view(step.target)

    @_reported
    def run_and_fetch(self, step: Step) -> Blocks:
        """Read straight from the step's query: its result is neither cached nor counted
        by a job of its own (a lost executor's tasks are computed again from the views
        it reads)."""
        if step.target.broadcast:
            return super().run_and_fetch(step)
        with self._statement(step):
            return self.fetch(step.target, statement_query(step, self.dialect))

    @contextmanager
    def _statement(self, step: Step) -> Iterator[None]:
        """The step's kernels registered and its shuffle partitions set while it runs;
        then the kernels are no longer needed."""
        for use in step.kernels:
            self._register(use.name, *self._udf(use))
        partitions = self.shuffle_partitions(step.reads)
        previous = partitions and self.spark.conf.get(SHUFFLE_PARTITIONS)
        try:
            if partitions:
                self.spark.conf.set(SHUFFLE_PARTITIONS, str(partitions))
            yield
        finally:
            if partitions and not jvm_ended():
                self.spark.conf.set(SHUFFLE_PARTITIONS, previous)
            for use in step.kernels if not jvm_ended() else ():
                self.execute(render("spark/drop_function", self.dialect.quote, function=use.name))

    def shuffle_partitions(self, reads: frozenset[str]) -> int | None:
        """The shuffle partitions of a statement that reads the views `reads`: one per
        PARTITION_BYTES of their cached data, at least one per task slot (adaptive execution
        coalesces them further by the bytes each shuffle moves); None (the session's
        setting) where a read's size is unknown."""
        sizes = [self._bytes.get(name) for name in reads]
        if not sizes or None in sizes:
            return None
        return max(self.parallelism or 1, math.ceil(sum(sizes) / PARTITION_BYTES))

    def _register(self, name: str, fn: Callable, returns: str) -> None:
        from pyspark.sql.functions import ArrowUDFType, arrow_udf
        with warnings.catch_warnings():     # pyspark prefers type hints to the UDF type
            warnings.simplefilter("ignore", UserWarning)
            udf = arrow_udf(fn, returns, ArrowUDFType.SCALAR)
        self.spark.udf.register(name, udf)

    def _udf(self, use: KernelUse) -> tuple[Callable, str]:
        fn, _, returns = udfs.udf(use, self)
        return fn, _SPARK_TYPES[returns]

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
