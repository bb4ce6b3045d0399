"""Binding data to a program's inputs: every kind of input a user can give, in one place.

* `ArrayInput`: NumPy arrays (and anything `np.asarray` takes) and scipy.sparse
  matrices, decomposed in Python and loaded into the engine per decomposition.
* `SourceInput`: data in COO form that the engine reads itself and imports once as a
  relation (every axis promoted): a database table or a Parquet/CSV file named by the
  program's ``from`` clause, or a DataFrame (pandas, polars) or Arrow table given as
  data. Key columns hold integer indices from 0; the value column is optional (1.0).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Union

import numpy as np
import pyarrow as pa
import scipy.sparse as sp

from .errors import DataError
from .program.model import InputDecl, Program

FILE_FORMATS = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".tsv": "csv"}


@dataclass(frozen=True)
class ArrayInput:
    name: str
    value: object              # np.ndarray or a scipy.sparse matrix

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(int(n) for n in self.value.shape)


@dataclass(frozen=True)
class SourceInput:
    name: str
    decl: InputDecl
    kind: str                  # table | file | arrow
    location: str              # table name or file path ("" for arrow)
    keys: tuple[str, ...]      # one column per label
    value: str | None          # value column, None for 1.0
    arrow: pa.Table | None = None
    file_format: str = ""      # parquet | csv

    def describe(self) -> str:
        if self.kind == "table":
            return f"table {self.location!r}"
        if self.kind == "file":
            return f"file {self.location}"
        return f"the {type(self.arrow).__name__} given for {self.name}"


Input = Union[ArrayInput, SourceInput]


def bind_inputs(program: Program, data: dict[str, object] | None,
                base_dir: str | Path | None = None) -> dict[str, Input]:
    """Each input of `program` bound to its data (or to its table or file); relative file
    paths are resolved against `base_dir` (the program file's directory)."""
    data = {} if data is None else data
    if not isinstance(data, dict):
        raise DataError(f"data must be a dict of input name -> array, not {type(data).__name__}")
    where = f"{program.source}: " if program.source else ""
    for name in data:
        if name not in program.inputs:
            raise DataError(f"{where}data given for '{name}', which is not an input of the program")
    bound: dict[str, Input] = {}
    for name, decl in program.inputs.items():
        if name in data:
            bound[name] = _bind_value(decl, data[name])
        elif decl.source is not None and decl.source.file:
            bound[name] = _bind_file(decl, base_dir)
        elif decl.source is not None:
            src = decl.source
            bound[name] = SourceInput(name, decl, "table", src.table, src.keys, src.value)
        else:
            given = ", ".join(f"'{n}'" for n in data) or "no input"
            raise DataError(f"{where}no data for input '{name}' (data was given for {given})")
    return bound


def _bind_value(decl: InputDecl, value: object) -> Input:
    table = _arrow_table(value)
    if table is not None:
        return _bind_arrow(decl, table)
    hint = f"; read a file with `input {decl.name}[...] from 'FILE.parquet'(...)`"
    return ArrayInput(decl.name, numeric_array(f"input {decl.name}", value, hint))


def numeric_array(what: str, value: object, hint: str = "") -> object:
    """`value` as a NumPy array of numbers, or a 2-D scipy.sparse matrix (a sparse vector
    becomes a dense array); anything else is a DataError naming `what`."""
    if sp.issparse(value):
        if value.ndim == 2:
            return value
        if value.ndim == 1:
            return value.toarray()
        raise DataError(f"{what}: scipy.sparse data must be a vector or a matrix, not "
                        f"{value.ndim}-D (give other tensors as dense arrays)")
    if isinstance(value, (str, bytes, os.PathLike)):
        raise DataError(f"{what}: data must be an array, not a {type(value).__name__}{hint}")
    try:
        array = np.asarray(value)
    except (ValueError, TypeError) as exc:
        raise DataError(f"{what}: cannot make an array of its data: {exc}") from None
    if array.dtype == object or not (np.issubdtype(array.dtype, np.number)
                                     or array.dtype == np.bool_):
        raise DataError(f"{what}: expected numbers but the data has dtype {array.dtype}")
    return array


def is_frame(value: object) -> bool:
    """A data frame or Arrow table (COO rows), as opposed to an array."""
    return _arrow_table(value) is not None


def _arrow_table(value: object) -> pa.Table | None:
    """An Arrow table of a DataFrame (pandas, polars) or Arrow table/record batch."""
    if isinstance(value, pa.Table):
        return value
    if isinstance(value, pa.RecordBatch):
        return pa.Table.from_batches([value])
    module = type(value).__module__.split(".")[0]
    if module == "polars" and hasattr(value, "to_arrow"):
        return value.to_arrow()
    if module == "pandas" and hasattr(value, "columns") and hasattr(value, "iloc"):
        return pa.Table.from_pandas(value, preserve_index=False)
    return None


def _columns(decl: InputDecl, available: list[str], what: str) -> tuple[tuple[str, ...], str | None]:
    """Key and value columns: named by the declaration's ``from`` clause, or by position
    (one key column per label, then an optional value column)."""
    rank = len(decl.labels)
    if decl.source is not None:
        wanted = list(decl.source.keys) + ([decl.source.value] if decl.source.value else [])
        for col in wanted:
            if col not in available:
                raise DataError(f"input {decl.name}: {what} has no column {col!r} "
                                f"(it has {', '.join(map(repr, available))})")
        return decl.source.keys, decl.source.value
    if len(available) not in (rank, rank + 1):
        raise DataError(f"input {decl.name}: {what} has {len(available)} columns; expected {rank} "
                        f"key columns (one per label of {decl.name}[{','.join(decl.labels)}]) "
                        "and an optional value column")
    return tuple(available[:rank]), (available[rank] if len(available) > rank else None)


def _bind_arrow(decl: InputDecl, table: pa.Table) -> SourceInput:
    keys, value = _columns(decl, table.column_names, "the data frame")
    for col in keys:
        check_key_type(decl.name, f"the data frame given for {decl.name}", col,
                       table.schema.field(col).type)
    return SourceInput(decl.name, decl, "arrow", "", keys, value, arrow=table)


def _bind_file(decl: InputDecl, base_dir: str | Path | None) -> SourceInput:
    src = decl.source
    path = Path(src.table)
    if not path.is_absolute() and base_dir is not None:
        path = Path(base_dir) / path
    fmt = FILE_FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise DataError(f"input {decl.name}: {src.table!r} is not a Parquet or CSV file "
                        f"(expected one of {', '.join(FILE_FORMATS)})")
    if not path.is_file():
        raise DataError(f"input {decl.name}: file {path} does not exist")
    schema = _file_schema(decl.name, path, fmt)
    keys, value = _columns(decl, schema.names, f"file {path}")
    for col in keys:
        check_key_type(decl.name, f"file {path}", col, schema.field(col).type)
    return SourceInput(decl.name, decl, "file", str(path), keys, value, file_format=fmt)


def _file_schema(tensor: str, path: Path, fmt: str) -> pa.Schema:
    """The columns of a Parquet file (its metadata) or a CSV file (its first block)."""
    try:
        if fmt == "parquet":
            import pyarrow.parquet as pq
            return pq.read_schema(path)
        import pyarrow.csv as pcsv
        with pcsv.open_csv(path) as reader:
            return reader.schema
    except (pa.ArrowException, OSError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise DataError(f"input {tensor}: cannot read {path}: {first}") from None


def read_file(source: SourceInput) -> pa.Table:
    """The columns an input uses from its Parquet/CSV file (for engines that cannot read it)."""
    columns = list(source.keys) + ([source.value] if source.value else [])
    try:
        if source.file_format == "parquet":
            import pyarrow.parquet as pq
            return pq.read_table(source.location, columns=columns)
        import pyarrow.csv as pcsv
        return pcsv.read_csv(source.location, convert_options=pcsv.ConvertOptions(
            include_columns=columns))
    except (pa.ArrowException, OSError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise DataError(f"input {source.name}: cannot read {source.location}: {first}") from None


def check_key_type(tensor: str, where: str, column: str, arrow_type: pa.DataType) -> None:
    """Key columns hold integer indices."""
    if not (pa.types.is_integer(arrow_type) or pa.types.is_null(arrow_type)):
        raise DataError(f"input {tensor}: key column {column!r} of {where} has type "
                        f"{arrow_type}; key columns must hold integers")
