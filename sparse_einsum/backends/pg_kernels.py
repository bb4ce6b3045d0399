"""Build, install and check the PostgreSQL C extension ``sparse_einsum_kernels``.

The sources are ``udf_kernels/postgres`` and the kernel core shared with the DuckDB
extension, ``udf_kernels/common`` (package data of an installed wheel, see `resources`).
Building needs a C compiler, ``make`` and the server headers of the same major version
as the server (Debian: ``postgresql-server-dev-15``); matrix products link the BLAS
`blas.find` picks (PyPI's scipy-openblas32, whose library is copied beside the kernels'
in the server's lib directory). Installing needs write access to the server's lib and
extension directories, so it must run on the server's machine. It updates an extension
of an older version in place (``ALTER EXTENSION ... UPDATE``); the library of each
version has its own file, so databases still on an older version keep working meanwhile.
"""
from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import tempfile
from glob import glob
from pathlib import Path

from ..errors import BackendError
from ..extras import require
from ..resources import UDF_KERNELS
from ..sql.templates import literal, render
from . import blas

KERNELS_VERSION = "1.4"
EXTENSION = "sparse_einsum_kernels"
SOURCE_DIR = UDF_KERNELS / "postgres"
_INSTALL_HINT = "run sparse-einsum install-kernels --dsn DSN (as a user that may write the PostgreSQL lib dir)"


def _connect(dsn: str):
    psycopg = require("psycopg")

    try:
        return psycopg.connect(dsn, autocommit=True)
    except psycopg.Error as e:
        raise BackendError(f"cannot connect to PostgreSQL ({dsn!r}): {e}".strip()) from e


def _pg_config(major: int) -> str:
    """The pg_config of the server's major version, or a BackendError saying what to install."""
    candidates = [f"/usr/lib/postgresql/{major}/bin/pg_config", shutil.which("pg_config") or ""]
    candidates += sorted(glob("/usr/lib/postgresql/*/bin/pg_config"))
    found = []
    for path in dict.fromkeys(c for c in candidates if c and os.access(c, os.X_OK)):
        out = subprocess.run([path, "--version"], capture_output=True, text=True).stdout
        found.append(f"{path} ({out.strip()})")
        if out.split()[1:2] and out.split()[1].split(".")[0] == str(major):
            return path
    if not found:
        raise BackendError(f"no pg_config found: install postgresql-server-dev-{major} "
                           f"(the PostgreSQL {major} server headers and PGXS)")
    raise BackendError(f"no pg_config for PostgreSQL {major} (found {', '.join(found)}): "
                       f"install postgresql-server-dev-{major}")


def _config(pg_config: str, key: str) -> str:
    return subprocess.run([pg_config, f"--{key}"], capture_output=True, text=True,
                          check=True).stdout.strip()


def _check_tools(pg_config: str, major: int) -> str:
    """The C compiler; BackendError names the first missing build or install prerequisite."""
    cc = shlex.split(_config(pg_config, "cc") or "cc")[0]
    if not shutil.which(cc):
        raise BackendError(f"no C compiler: {cc!r} (from pg_config --cc) is not on PATH; "
                           "install gcc (apt-get install gcc)")
    if not shutil.which("make"):
        raise BackendError("no make: install make (apt-get install make)")
    include = Path(_config(pg_config, "includedir-server"))
    pgxs = Path(_config(pg_config, "pgxs"))
    if not (include / "postgres.h").exists() or not pgxs.exists():
        raise BackendError(f"no PostgreSQL server headers ({include}/postgres.h or {pgxs} missing): "
                           f"install postgresql-server-dev-{major}")
    for d in (Path(_config(pg_config, "pkglibdir")),
              Path(_config(pg_config, "sharedir")) / "extension"):
        if not os.access(d, os.W_OK):
            raise BackendError(f"no permission to write {d}: install the kernels as root "
                               "or as a user that owns the PostgreSQL installation")
    return cc


def _blas_make_args(cc: str, pg_config: str) -> list[str]:
    """make variables linking the BLAS; PyPI's library is copied into the server's lib
    directory (atomically: running backends keep the file they mapped), found there by
    the kernels' run path."""
    found = blas.find(cc)
    if found is None:
        return ["SE_BLAS_CFLAGS=", "SE_BLAS_LIBS="]
    libs = list(found.libs)
    if found.library:
        libdir = Path(_config(pg_config, "pkglibdir"))
        staging = libdir / f".{found.library.name}.{os.getpid()}"
        shutil.copyfile(found.library, staging)
        os.replace(staging, libdir / found.library.name)
        libs.append(f"-Wl,-rpath,{libdir}")
    return [f"SE_BLAS_CFLAGS={shlex.join(found.cflags)}", f"SE_BLAS_LIBS={shlex.join(libs)}"]


def _build(source: Path, pg_config: str, make_args: list[str]) -> None:
    """make + make install in a scratch copy of source and ../common (keeps the source
    tree clean)."""
    if not (source / "Makefile").exists():
        raise BackendError(f"no extension sources in {source}")
    with tempfile.TemporaryDirectory(prefix="se-kernels-") as tmp:
        work = Path(tmp) / "postgres"
        ignore = shutil.ignore_patterns("*.o", "*.so", "*.bc")
        shutil.copytree(source, work, ignore=ignore)
        shutil.copytree(source.parent / "common", Path(tmp) / "common", ignore=ignore)
        for target in ([], ["install"]):
            r = subprocess.run(["make", "-C", str(work), f"PG_CONFIG={pg_config}", *make_args,
                                *target], capture_output=True, text=True)
            if r.returncode:
                raise BackendError(f"make {' '.join(target)} failed in {work}:\n"
                                   f"{(r.stdout + r.stderr)[-3000:]}")


def install_kernels(dsn: str, *, build_dir: str | None = None) -> str:
    """Build and install the extension for the server at dsn and create it there.

    build_dir overrides the extension source directory. Returns the installed version.
    """
    psycopg = require("psycopg")

    with _connect(dsn) as conn:
        major = conn.info.server_version // 10000
    pg_config = _pg_config(major)
    cc = _check_tools(pg_config, major)
    _build(Path(build_dir) if build_dir else SOURCE_DIR, pg_config, _blas_make_args(cc, pg_config))
    with _connect(dsn) as conn:          # a new session loads the new library
        try:
            row = conn.execute(render("postgres/extension_version"), (EXTENSION,)).fetchone()
            if row is None:
                conn.execute(render("postgres/create_extension", extension=EXTENSION))
            elif row[0] != KERNELS_VERSION:
                conn.execute(render("postgres/update_extension", extension=EXTENSION,
                                    version=literal(KERNELS_VERSION)))
        except psycopg.errors.InsufficientPrivilege as e:
            raise BackendError(f"CREATE EXTENSION {EXTENSION} needs a superuser role: {e}") from e
        except psycopg.errors.UndefinedFile as e:
            raise BackendError(f"the server does not see the installed extension files (is it "
                               f"PostgreSQL {major} on this machine?): {e}") from e
        except psycopg.Error as e:
            raise BackendError(f"installing {EXTENSION} failed: {e} (an old version without an "
                               f"update path: DROP EXTENSION {EXTENSION} CASCADE, then retry)") from e
    with _connect(dsn) as conn:
        check_kernels(conn)
        return conn.execute(render("postgres/kernels_version")).fetchone()[0]


def check_kernels(conn) -> None:
    """Raise BackendError unless the extension of version KERNELS_VERSION is usable on conn."""
    import psycopg

    try:
        with conn.transaction():
            row = conn.execute(render("postgres/extension_version"), (EXTENSION,)).fetchone()
            if row is None:
                raise BackendError(f"kernels not installed: {_INSTALL_HINT}")
            lib = conn.execute(render("postgres/kernels_version")).fetchone()[0]
    except psycopg.Error as e:
        raise BackendError(f"kernels installed but not loadable ({e}): {_INSTALL_HINT}") from e
    if row[0] != KERNELS_VERSION or lib != KERNELS_VERSION:
        raise BackendError(f"kernels version {row[0]} (library {lib}) installed, "
                           f"{KERNELS_VERSION} needed: {_INSTALL_HINT}")
