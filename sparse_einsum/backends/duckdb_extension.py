"""Build and find the sparse_einsum DuckDB extension (C sources in ``udf_kernels/duckdb``).

The extension is compiled with gcc against DuckDB's C extension API headers
(``duckdb.h``, ``duckdb_extension.h``), which are not in the duckdb wheel: they come
from the duckdb source distribution on PyPI, fetched with pip when the package is built
(setup.py) or by ``sparse-einsum build-extension``, never at run time. A wheel carries
the extension it compiled (``sparse_einsum/native``); a checkout builds it on first use
into ``~/.cache/sparse-einsum`` (``$SPARSE_EINSUM_CACHE``), keyed by its sources,
compiler, headers and BLAS, so a changed checkout builds anew (gcc and the cached
headers suffice). Matrix products run with the BLAS `blas.find` picks (PyPI's
scipy-openblas32; ``se_extension_blas()`` names it) or with the C loops.

It targets the V1 C API of DuckDB v1.2.0, so one file loads into every DuckDB from 1.2
on, the Python package and the command-line shell alike. DuckDB loads it only on a
connection opened with ``allow_unsigned_extensions`` (``duckdb -unsigned`` in the shell).
"""
from __future__ import annotations

import hashlib
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from ..errors import BackendError
from ..resources import NATIVE, UDF_KERNELS
from ..sql.templates import literal, render
from . import blas

NAME = "sparse_einsum"
FILE_NAME = f"{NAME}.duckdb_extension"
HEADERS_VERSION = "2.0.0"       # the duckdb sdist whose C API headers the build uses
C_API_VERSION = "v1.2.0"        # what the extension declares (see udf_kernels/duckdb/se_duckdb.h)
SOURCE_DIR = UDF_KERNELS
_HEADERS = ("duckdb.h", "duckdb_extension.h")
_CFLAGS = ["-O3", "-fPIC", "-shared", "-fvisibility=hidden", "-std=gnu11", "-Wall", "-pthread"]
_MACHINES = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(os.environ.get("SPARSE_EINSUM_CACHE") or Path(base) / "sparse-einsum")


def headers_dir() -> Path:
    return cache_dir() / f"duckdb-headers-{HEADERS_VERSION}"


def sources() -> list[Path]:
    """The C sources of the extension: its own and the engine-neutral kernel core."""
    own = sorted((SOURCE_DIR / "duckdb").glob("*.[ch]"))
    common = [SOURCE_DIR / "common" / n
              for n in ("se_kernel.c", "se_kernel.h", "se_ops.h", "se_blas.c", "se_threads.c")]
    return own + common


def _platform() -> str:
    system = platform.system().lower()
    machine = _MACHINES.get(platform.machine().lower(), platform.machine().lower())
    return f"{system}_{machine}"


def _compiler() -> str:
    cc = os.environ.get("CC", "gcc")
    if not shutil.which(cc):
        raise BackendError(f"no C compiler: {cc!r} is not on PATH (install gcc)")
    return cc


def _build_key(cc: str) -> str:
    digest = hashlib.sha256()
    for path in sources():
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    version = subprocess.run([cc, "--version"], capture_output=True, text=True).stdout
    found = blas.find(cc)
    for part in (version, " ".join(_CFLAGS), str(found) if found else "", HEADERS_VERSION,
                 C_API_VERSION, _platform()):
        digest.update(part.encode())
    return digest.hexdigest()[:16]


def fetch_headers() -> Path:
    """DuckDB's C API headers from the duckdb sdist on PyPI (pip download), cached; for
    install and build time only."""
    target = headers_dir()
    if all((target / h).is_file() for h in _HEADERS):
        return target
    with tempfile.TemporaryDirectory(prefix="se-duckdb-sdist-") as tmp:
        # -I: the interpreter's own pip even inside pip's isolated build environment
        done = subprocess.run([sys.executable, "-I", "-m", "pip", "download",
                               f"duckdb=={HEADERS_VERSION}", "--no-deps", "--no-binary", "duckdb",
                               "--quiet", "-d", tmp], capture_output=True, text=True)
        archives = list(Path(tmp).glob("duckdb-*.tar.gz"))
        if done.returncode or not archives:
            raise BackendError("could not fetch the duckdb source distribution for DuckDB's C "
                               f"headers: {(done.stderr or done.stdout).strip()[-500:]}")
        staging = Path(tempfile.mkdtemp(prefix="headers-", dir=_ensure(target.parent)))
        with tarfile.open(archives[0]) as archive:
            for member in archive.getmembers():
                if member.name.endswith(tuple(f"/src/include/{h}" for h in _HEADERS)):
                    with archive.extractfile(member) as src:
                        (staging / Path(member.name).name).write_bytes(src.read())
        if not all((staging / h).is_file() for h in _HEADERS):
            shutil.rmtree(staging, ignore_errors=True)
            raise BackendError(f"{archives[0].name} holds no {' and '.join(_HEADERS)}")
        _replace_dir(staging, target)
    return target


def _ensure(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


def _replace_dir(staging: Path, target: Path) -> None:
    """Move a finished directory into place (another process may have been faster)."""
    try:
        staging.rename(target)
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)
        if not target.exists():
            raise


def metadata_footer(extension_version: str) -> bytes:
    """The footer DuckDB reads from the end of an extension file: a WebAssembly custom
    section header, eight 32-byte fields (read back to front: magic "4", platform, C API
    version, extension version, ABI type) and 256 bytes of (absent) signature."""
    fields = ["", "", "", "C_STRUCT", extension_version, C_API_VERSION, _platform(), "4"]
    prefix = bytes([0, 147, 4, 16]) + b"duckdb_signature" + bytes([128, 4])
    body = b"".join(f.encode().ljust(32, b"\0") for f in fields)
    return prefix + body + bytes(256)


def build(force: bool = False, into: Path | None = None) -> Path:
    """Compile the extension and return its path; BackendError says why not.

    Into the cache, once per key, linked to the BLAS where it is installed now; or `into`
    a directory of a wheel being built, linked to the BLAS by a path relative to the
    extension (site-packages/sparse_einsum/native -> site-packages/scipy_openblas32/lib)."""
    cc = _compiler()
    headers = headers_dir()
    if not all((headers / h).is_file() for h in _HEADERS):
        raise BackendError("DuckDB's C headers are not cached: run `sparse-einsum "
                           "build-extension` (fetches them from PyPI) or reinstall the package")
    key = _build_key(cc)
    target = (into or cache_dir() / "duckdb" / key) / FILE_NAME
    if target.is_file() and not force and into is None:
        return target
    found = blas.find(cc)
    link = [*found.cflags, *found.libs] if found else []
    if found and found.lib_dir:
        link.append("-Wl,-rpath," + ("$ORIGIN/../../scipy_openblas32/lib" if into
                                     else str(found.lib_dir)))
    c_files = [str(p) for p in sources() if p.suffix == ".c"]
    staging = _ensure(target.parent) / f"{FILE_NAME}.{os.getpid()}.tmp"
    cmd = [cc, *_CFLAGS, f"-I{headers}", f"-I{SOURCE_DIR / 'common'}",
           f'-DSE_EXTENSION_VERSION="{key}"', *c_files, "-o", str(staging), *link, "-lm"]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode:
        staging.unlink(missing_ok=True)
        raise BackendError(f"compiling the DuckDB extension failed:\n{' '.join(cmd)}\n"
                           f"{(done.stdout + done.stderr)[-3000:]}")
    with open(staging, "ab") as f:
        f.write(metadata_footer(key))
    os.replace(staging, target)      # atomic: a concurrent build wrote the same bytes
    return target


def extension_path() -> Path:
    """The extension a wheel carries, or else one built from the checkout's sources (on
    first use)."""
    packaged = NATIVE / FILE_NAME
    if packaged.is_file():
        return packaged
    if not (SOURCE_DIR / "duckdb").is_dir():
        raise BackendError(f"no extension sources in {SOURCE_DIR / 'duckdb'}")
    return build()


_built: dict[str, Path] = {}


def load(con) -> Path:
    """Load the extension into a DuckDB connection (building it on first use); a
    BackendError says why it cannot."""
    allowed = con.execute(render("duckdb/setting", setting=literal(
        "allow_unsigned_extensions"))).fetchall()[0][0]
    if not allowed:
        raise BackendError("the DuckDB connection was opened without allow_unsigned_extensions "
                           "(duckdb.connect(..., config={'allow_unsigned_extensions': 'true'}) "
                           "lets it load the sparse_einsum extension)")
    if "path" not in _built:
        _built["path"] = extension_path()
        blas.preload()              # once per process: the library stays loaded
    path = _built["path"]
    try:
        con.execute(render("duckdb/load", extension=literal(str(path))))
    except Exception as exc:      # duckdb.Error, or an extension DuckDB refuses
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise BackendError(f"DuckDB could not load {path}: {first}") from None
    return path
