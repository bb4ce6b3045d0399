"""How inputs reach Spark's executors.

``createDataFrame`` of an Arrow table keeps the rows in the driver and ships them inside
the tasks (a local relation, or a parallelized collection): cheap for small inputs, but
every copy is held in the driver's heap, which large inputs exhaust. When the executors run on this machine, a larger input is
written instead as a Parquet file in the backend's temporary directory (`spark_scratch`)
and read by the executors themselves (``spark.read.parquet``); the file is removed once the
input has been materialized, and its directory when the backend closes.
"""
from __future__ import annotations

import math
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

INLINE_BYTES = 2 << 20     # inputs up to this size travel inside the tasks
_ROW_GROUP_BYTES = 64 << 20


class InputFiles:
    """Arrow tables as DataFrames; the Parquet files among them in `scratch`'s ``inputs``
    directory, made on first use. `readable`: whether the executors read this machine's
    files."""

    def __init__(self, parallelism: int | None, readable: bool, scratch):
        self.parallelism = parallelism or 1
        self.readable = readable
        self.scratch = scratch
        self.directory: Path | None = None
        self._paths: dict[str, Path] = {}
        self._made = 0

    def frame(self, spark, name: str, table: pa.Table):
        """A DataFrame of `table`: inside the tasks when small (or not `readable`), else
        read from a Parquet file kept under `name` until `remove`. Row groups are small enough for Spark to split
        the file across the task slots (it splits at row groups); the schema is given, so
        Spark reads no footer to infer it."""
        if not self.readable or table.nbytes <= INLINE_BYTES:
            return spark.createDataFrame(table)
        from pyspark.sql.pandas.types import from_arrow_schema
        if self.directory is None:
            self.directory = self.scratch.subdir("inputs")
        self._made += 1
        path = self.directory / f"{self._made}.parquet"
        groups = max(2 * self.parallelism, math.ceil(table.nbytes / _ROW_GROUP_BYTES))
        pq.write_table(table, path, row_group_size=max(1, math.ceil(table.num_rows / groups)),
                       compression="none", use_dictionary=False)
        self._paths[name] = path
        return spark.read.schema(from_arrow_schema(table.schema)).parquet(str(path))

    def inline(self, name: str) -> bool:
        """Whether input `name` travels inside the tasks (no file of its own)."""
        return name not in self._paths

    def remove(self, name: str) -> None:
        path = self._paths.pop(name, None)
        if path is not None:
            path.unlink(missing_ok=True)

    def close(self) -> None:
        """Remove the directory and every file left in it."""
        if self.directory is not None:
            shutil.rmtree(self.directory, ignore_errors=True)
        self.directory, self._paths = None, {}
