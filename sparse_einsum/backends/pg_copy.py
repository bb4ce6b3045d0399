"""Moving NumPy arrays in and out of PostgreSQL, encoded and decoded by NumPy as a whole.

Binary COPY (copy_in_arrays, copy_out_arrays) takes any query, scalar and array
columns: each row is one NumPy structured record laid out exactly as PostgreSQL's binary
COPY row (big-endian): field count, then per field its length and bytes; a float8[]
field is ``ndim, has_null, elemtype, (dim, lbound), (len 8, value) * width``. Every row
has the same byte size (no NULLs, one array width), so a whole chunk is one record array.
Reading back costs one libpq call per row and no other per-row Python.

Payloads skip PostgreSQL's per-element array send and receive functions as raw
native-endian bytes: insert_rows through the kernels' se_rows (libpq blocking while it
sends them), and copy_out_arrays of a bytea column such as se_raw(val, width).
"""
from __future__ import annotations

from contextlib import contextmanager
from functools import cache
from typing import Iterator

import numpy as np

from sparse_einsum.errors import DataError

from ..sql.templates import render
from .pg_settings import session_setting

_HEADER = b"PGCOPY\n\xff\r\n\x00" + b"\x00" * 8
_TRAILER = b"\xff\xff"
_SCALARS = {16: "?", 20: ">i8", 21: ">i2", 23: ">i4", 700: ">f4", 701: ">f8"}   # oid -> dtype
_ARRAYS = {1022: (701, ">f8"), 1021: (700, ">f4")}                              # float8[], float4[]
_BYTEA = 17                       # read back as raw native-endian float8 rows (se_raw)
_CHUNK_BYTES = 4 << 20


def _array_fields(prefix: str, code: str, width: int) -> list:
    """Record fields of one 1-D array value (ndim 0 when width is 0)."""
    f = [(f"{prefix}len", ">i4"), (f"{prefix}ndim", ">i4"), (f"{prefix}null", ">i4"),
         (f"{prefix}oid", ">i4")]
    if width:
        f += [(f"{prefix}dim", ">i4"), (f"{prefix}lb", ">i4"),
              (f"{prefix}el", [("len", ">i4"), ("x", code)], (width,))]
    return f


def _fill_array(rec: np.ndarray, prefix: str, elem_oid: int, code: str, width: int,
                values: np.ndarray | None) -> None:
    item = np.dtype(code).itemsize
    rec[f"{prefix}len"] = 12 + (8 + (4 + item) * width if width else 0)
    rec[f"{prefix}ndim"] = 1 if width else 0
    rec[f"{prefix}null"] = 0
    rec[f"{prefix}oid"] = elem_oid
    if width:
        rec[f"{prefix}dim"] = width
        rec[f"{prefix}lb"] = 1
        rec[f"{prefix}el"]["len"] = item
        if values is not None:
            rec[f"{prefix}el"]["x"] = values


def _check_fits(name: str, arr: np.ndarray, code: str) -> np.ndarray:
    target = np.dtype(code)
    if target.kind == "i" and arr.dtype.kind in "iu" and arr.size:
        info = np.iinfo(target)
        if arr.min() < info.min or arr.max() > info.max:
            raise DataError(f"copy_in_arrays: column {name} has values outside {target.name}")
    return arr


def copy_in_arrays(conn, table: str, key_columns: dict[str, np.ndarray],
                   values: np.ndarray | None, *, value_column: str = "val") -> int:
    """COPY key columns and values (2-D rows x width into a float8[] column, or 1-D into a
    scalar column) into an existing table by binary COPY. Returns the row count."""
    from psycopg import sql

    names = list(key_columns) + ([value_column] if values is not None else [])
    if not names:
        raise DataError("copy_in_arrays: no columns given")
    cols = [np.asarray(key_columns[k]) for k in key_columns]
    vals = None if values is None else np.asarray(values)
    n = len(cols[0]) if cols else len(vals)
    for name, c in zip(names, cols + ([vals] if vals is not None else [])):
        if c.ndim < 1 or len(c) != n:
            raise DataError(f"copy_in_arrays: column {name} has shape {c.shape}, expected {n} rows")
    qualified = conn.execute(render("postgres/table_name"), (table,)).fetchone()[0]
    types = dict(conn.execute(render("postgres/column_types"), (table,)).fetchall())
    fields: list = [("n", ">i2")]
    for i, name in enumerate(key_columns):
        oid = types.get(name)
        if oid not in _SCALARS:
            raise DataError(f"copy_in_arrays: column {name} of {table} is missing or of an "
                            f"unsupported type (oid {oid})")
        fields += [(f"l{i}", ">i4"), (f"k{i}", _SCALARS[oid])]
    width = 0
    if vals is not None:
        oid = types.get(value_column)
        if vals.ndim == 2 and oid in _ARRAYS:
            width = vals.shape[1]
            fields += _array_fields("v", _ARRAYS[oid][1], width)
        elif vals.ndim == 1 and oid in _SCALARS:
            fields += [("vlen", ">i4"), ("v", _SCALARS[oid])]
        else:
            raise DataError(f"copy_in_arrays: {vals.ndim}-D values do not fit column "
                            f"{value_column} of {table} (type oid {oid})")
    dtype = np.dtype(fields)
    stmt = sql.SQL("COPY {} ({}) FROM STDIN (FORMAT BINARY)").format(
        sql.SQL(qualified), sql.SQL(", ").join(map(sql.Identifier, names)))
    step = max(1, _CHUNK_BYTES // dtype.itemsize)
    with conn.cursor() as cur, cur.copy(stmt) as copy:
        copy.write(_HEADER)
        for lo in range(0, n, step):
            hi = min(n, lo + step)
            rec = np.empty(hi - lo, dtype)
            rec["n"] = len(names)
            for i, c in enumerate(cols):
                code = dtype[f"k{i}"]
                rec[f"l{i}"] = code.itemsize
                rec[f"k{i}"] = _check_fits(names[i], c[lo:hi], code.str)
            if vals is not None and vals.ndim == 2:
                _fill_array(rec, "v", _ARRAYS[types[value_column]][0],
                            _ARRAYS[types[value_column]][1], width, vals[lo:hi])
            elif vals is not None:
                rec["vlen"] = dtype["v"].itemsize
                rec["v"] = vals[lo:hi]
            copy.write(memoryview(rec.view(np.uint8)))
        copy.write(_TRAILER)
    return n


def _layout(buf: memoryview, pos: int, oids: list[int], names: list[str]) -> list:
    """Record fields of the row starting at pos, read from that row's headers."""
    def i32(p: int) -> int:
        return int.from_bytes(buf[p:p + 4], "big", signed=True)

    fields: list = [("n", ">i2")]
    p = pos + 2
    for j, (oid, name) in enumerate(zip(oids, names)):
        length = i32(p)
        if length < 0:
            raise DataError(f"copy_out_arrays: column {name} is NULL")
        if oid in _SCALARS:
            fields += [(f"l{j}", ">i4"), (f"c{j}", _SCALARS[oid])]
        elif oid == _BYTEA:
            fields += [(f"l{j}", ">i4")] + ([(f"c{j}", f"V{length}")] if length else [])
        elif oid in _ARRAYS:
            ndim = i32(p + 4)
            if ndim > 1:
                raise DataError(f"copy_out_arrays: column {name} has {ndim}-D arrays")
            fields += _array_fields(f"a{j}", _ARRAYS[oid][1], i32(p + 16) if ndim else 0)
        else:
            raise DataError(f"copy_out_arrays: column {name} has an unsupported type (oid {oid})")
        p += 4 + length
    return fields


def copy_out_arrays(conn, query: str, *, values: bool = True
                    ) -> tuple[dict[str, np.ndarray], np.ndarray | None]:
    """Run query through binary COPY; returns (key columns by name, values).

    With values=True the last column holds the values (a float8[] column gives a 2-D
    array rows x width, a scalar column a 1-D array, a bytea column, such as the
    kernels' se_raw(val, width), its bytes as native float8 rows x width: PostgreSQL
    then sends each payload as one memcpy instead of an element at a time); every
    other column is a key.
    """
    import psycopg

    query = query.strip().rstrip(";")
    with conn.cursor() as cur:
        cur.execute(f"SELECT * FROM ({query}) AS q LIMIT 0")
        names = [d.name for d in cur.description]
        oids = [d.type_code for d in cur.description]
        chunks = []
        with cur.copy(f"COPY ({query}) TO STDOUT (FORMAT BINARY)"):
            # Drain the rows and the final result straight from libpq: psycopg's per-row
            # iteration costs ~9 us a row. psycopg's Copy then has nothing left to read.
            pgconn = conn.pgconn
            while True:
                nbytes, data = pgconn.get_copy_data(0)
                if nbytes <= 0:
                    break
                chunks.append(data)       # a view of libpq's buffer, kept alive by it
            results = []
            while (res := pgconn.get_result()) is not None:
                results.append(res)
            bad = [r for r in results if r.status != psycopg.pq.ExecStatus.COMMAND_OK]
            if bad:
                raise psycopg.errors.error_from_result(bad[0], encoding=conn.info.encoding)
    # one result tuple (a whole matrix: 51 MB for 100k x 64) is read where libpq put it;
    # joining copies (appending 51 MB to a bytearray took 45 ms)
    trailer = 2                                    # the -1 field count at the end
    if len(chunks) > 1 and chunks[-1] == b"\xff\xff":
        chunks.pop()
        trailer = 0
    mv = memoryview(chunks[0] if len(chunks) == 1 else b"".join(chunks))
    start = 19 + int.from_bytes(mv[15:19], "big")
    body = len(mv) - start - trailer
    nrows, rec = 0, None
    if body > 0:
        fields = _layout(mv, start, oids, names)
        dtype = np.dtype(fields)
        nrows, rest = divmod(body, dtype.itemsize)
        rec = np.frombuffer(mv[start:start + nrows * dtype.itemsize], dtype) if not rest else None
        fnames = [f[0] for f in fields]
        checked = [f for f in fnames if not f.startswith("c") and not f.endswith("el")]
        if rest or any(np.any(rec[f] != rec[0][f]) for f in checked) or any(
                np.any(rec[f]["len"] != rec[0][f]["len"]) for f in fnames if f.endswith("el")):
            raise DataError("copy_out_arrays: rows differ in layout (NULLs or arrays of "
                            "different lengths)")
    n_keys = len(names) - (1 if values else 0)
    keys: dict[str, np.ndarray] = {}
    out = None
    for j, (name, oid) in enumerate(zip(names, oids)):
        if oid in _SCALARS:
            col = rec[f"c{j}"] if nrows else np.empty(0, _SCALARS[oid])
            arr = col.astype(np.dtype(_SCALARS[oid]).newbyteorder("="))
        elif oid == _BYTEA:
            has_data = nrows and f"c{j}" in rec.dtype.names
            arr = np.ascontiguousarray(rec[f"c{j}"]).view(np.float64).reshape(nrows, -1) \
                if has_data else np.empty((nrows, 0))
        elif oid in _ARRAYS:
            code = np.dtype(_ARRAYS[oid][1]).newbyteorder("=")
            has_el = nrows and f"a{j}el" in rec.dtype.names
            arr = rec[f"a{j}el"]["x"].astype(code) if has_el else np.empty((nrows, 0), code)
        else:
            raise DataError(f"copy_out_arrays: column {name} has an unsupported type (oid {oid})")
        if j < n_keys:
            if arr.ndim != 1:
                raise DataError(f"copy_out_arrays: key column {name} must be a scalar")
            keys[name] = arr
        else:
            out = arr
    return keys, out


_RAW_CHUNK_BYTES = 1 << 20     # measured: larger parameters cost the server more in page faults


@contextmanager
def _blocking_send(conn) -> Iterator[None]:
    """libpq in blocking mode while a statement with large parameters is sent: in psycopg's
    nonblocking mode every flush moves the unsent rest of the message to the front of
    libpq's buffer, quadratic in its size (measured: a 51 MB parameter 0.51 s, blocking
    0.16 s)."""
    pgconn = conn.pgconn
    was = pgconn.nonblocking
    pgconn.nonblocking = 0
    try:
        yield
    finally:
        pgconn.nonblocking = was


def _generic_plan(conn):
    """Statements planned with their parameters left as parameters: a custom plan copies
    each parameter's value into the plan (measured: a 51 MB payload inserted in 0.60 s,
    with a generic plan 0.49 s; medians of 10). No statement is prepared by name (poolers
    in transaction mode do not keep them). The session's setting is restored after."""
    return session_setting(conn, "plan_cache_mode", "force_generic_plan")


@contextmanager
def large_parameters(conn) -> Iterator[None]:
    """Statements with large parameters inside the block are sent with libpq blocking and
    planned generically (see _blocking_send and _generic_plan)."""
    with _generic_plan(conn), _blocking_send(conn):
        yield


def _checked_rows(table: str, key_columns: dict[str, np.ndarray], values: np.ndarray,
                  bounds: np.ndarray) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """Keys as int64, values as contiguous float64, bounds as int64, checked to agree."""
    keys = [np.asarray(k, dtype=np.int64) for k in key_columns.values()]
    values = np.ascontiguousarray(values, dtype=np.float64).reshape(-1)
    bounds = np.asarray(bounds, dtype=np.int64)
    n = len(bounds) - 1
    if any(len(k) != n for k in keys) or bounds[0] != 0 or bounds[-1] != len(values):
        raise DataError(f"keys, values and bounds of {table} do not agree")
    return keys, values, bounds


def insert_rows(conn, table: str, key_columns: dict[str, np.ndarray], values: np.ndarray,
                bounds: np.ndarray, *, value_column: str = "val") -> int:
    """Insert rows of bigint keys and a float8[] payload (row r holds
    values[bounds[r]:bounds[r + 1]]) into an existing table through the kernels' se_rows:
    raw native-endian bytes, a chunk of rows per statement, a memcpy per row on the
    server. Returns the row count."""
    from psycopg import sql

    keys, values, bounds = _checked_rows(table, key_columns, values, bounds)
    n = len(bounds) - 1
    names = sql.SQL(", ").join(map(sql.Identifier, [*key_columns, value_column]))
    shape = ", ".join([f"k{i} bigint" for i in range(len(keys))] + ["v float8[]"])
    stmt = sql.SQL("INSERT INTO {} ({}) SELECT * FROM se_rows(%b, %b, %b) AS r({})").format(
        sql.SQL(table), names, sql.SQL(shape))
    step = _RAW_CHUNK_BYTES // 8
    lo = 0
    with large_parameters(conn):
        while lo < n:
            hi = min(n, max(lo + 1, int(np.searchsorted(bounds, bounds[lo] + step, "right")) - 1))
            chunk_keys = b"".join(k[lo:hi].tobytes() for k in keys)
            conn.execute(stmt, (chunk_keys, values[bounds[lo]:bounds[hi]].tobytes(),
                                (bounds[lo:hi + 1] - bounds[lo]).tobytes()))
            lo = hi
    return n


def rows_query(table: str, first: int, key_columns: dict[str, np.ndarray], values: np.ndarray,
               bounds: np.ndarray, *, value_column: str = "val") -> tuple[str, list[np.ndarray]]:
    """The rows insert_rows would store in `table`, as a query over se_rows whose three
    raw-byte arguments are the parameters $first, $first+1, $first+2 (see execute_raw);
    those."""
    keys, values, bounds = _checked_rows(table, key_columns, values, bounds)
    raw = [np.concatenate(keys) if keys else np.zeros(0, np.int64), values, bounds]
    q = [f'"{c.replace(chr(34), 2 * chr(34))}"' for c in [*key_columns, value_column]]
    shape = ", ".join([f"{c} bigint" for c in q[:-1]] + [f"{q[-1]} float8[]"])
    return f"SELECT * FROM se_rows(${first}, ${first + 1}, ${first + 2}) AS r({shape})", raw


def execute_raw(conn, statement: str, params: list[np.ndarray], *, rows: bool = False):
    """Run a statement whose parameters ($1, ...) are raw bytes (bytea), sent from the
    arrays' memory as they are (psycopg would copy each twice); returns its result
    (binary) when `rows`. Large parameters go with libpq blocking, under a generic plan."""
    import psycopg
    from psycopg import pq

    with large_parameters(conn), conn.lock:
        res = conn.pgconn.exec_params(
            statement.encode(), [memoryview(np.ascontiguousarray(p)).cast("B") for p in params],
            param_types=[_BYTEA] * len(params), param_formats=[pq.Format.BINARY] * len(params),
            result_format=pq.Format.BINARY)
    if res.status not in (pq.ExecStatus.COMMAND_OK, pq.ExecStatus.TUPLES_OK):
        raise psycopg.errors.error_from_result(res, encoding=conn.info.encoding)
    return res if rows else None


@cache
def _raw_context():
    """An adaptation context whose binary loaders return each cell as it is (a buffer)."""
    from types import SimpleNamespace

    from psycopg import adapters, pq
    from psycopg.adapt import AdaptersMap, Loader

    class Raw(Loader):
        format = pq.Format.BINARY

        def load(self, data):
            return data

    raw = AdaptersMap(adapters)
    for oid in (*_SCALARS, _BYTEA):
        raw.register_loader(oid, Raw)
    return SimpleNamespace(adapters=raw, connection=None)


def _cells(res) -> list[tuple]:
    """The rows of a binary result, each cell a buffer over the result's own memory (kept
    alive by it; psycopg's get_value would copy each), None for NULL."""
    from psycopg.adapt import Transformer

    tx = Transformer(_raw_context())
    tx.set_pgresult(res)
    return tx.load_rows(0, res.ntuples, tuple)


def result_arrays(res) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """What copy_out_arrays returns, from a binary result of bigint keys and a last column
    of float8, bigint or bytea (se_raw: native float8 rows; one row's is a view of the
    result's memory)."""
    nrows = res.ntuples
    names = [res.fname(j).decode() for j in range(res.nfields)]
    rows = _cells(res)
    columns = []
    for j, name in enumerate(names):
        cells = [row[j] for row in rows]
        if any(c is None for c in cells):
            raise DataError(f"result_arrays: column {name} is NULL")
        oid = res.ftype(j)
        if oid == _BYTEA:
            data = cells[0] if nrows == 1 else b"".join(cells)
            columns.append(np.frombuffer(data, np.float64).reshape(nrows, -1) if nrows else
                           np.empty((0, 0)))
        elif oid in _SCALARS:
            code = np.dtype(_SCALARS[oid])
            columns.append(np.frombuffer(b"".join(cells), code).astype(code.newbyteorder("=")))
        else:
            raise DataError(f"result_arrays: column {name} has an unsupported type (oid {oid})")
    return dict(zip(names[:-1], columns[:-1])), columns[-1]
