"""The BLAS that the native kernels (DuckDB extension, PostgreSQL kernels) link.

In order of preference: PyPI's ``scipy-openblas32`` (a dependency of the package: the
OpenBLAS build NumPy and SciPy ship, headers and library inside the wheel, every symbol
prefixed ``scipy_``), the system's OpenBLAS (Debian: ``libopenblas-dev``), or none (the
kernels' C loops run matrix products). ``SPARSE_EINSUM_BLAS=0`` builds without BLAS. A
fallback is announced once, with a warning, when a build uses it.
"""
from __future__ import annotations

import os
import subprocess
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path

PYPI_PACKAGE = "scipy-openblas32"
_PROBE = ("#include <cblas.h>\n"
          "int main(void) { double x = 1; return cblas_ddot(1, &x, 1, &x, 1) != 1; }\n")


@dataclass(frozen=True)
class Blas:
    """How to compile and link against one BLAS."""
    name: str                     # what the kernels report, e.g. "scipy-openblas32 0.3.34"
    cflags: tuple[str, ...]
    libs: tuple[str, ...]
    library: Path | None = None   # the shared library file, when it must be found at load time

    @property
    def lib_dir(self) -> Path | None:
        return self.library.parent if self.library else None


def _pypi() -> Blas | None:
    try:
        import scipy_openblas32 as pkg      # loads the library into this process (RTLD_GLOBAL)
    except ImportError:
        return None
    name = f"{PYPI_PACKAGE} {pkg.__version__}"
    library = Path(pkg.get_lib_dir()) / pkg.get_library(fullname=True)
    return Blas(name, ("-DSE_BLAS", "-DSE_BLAS_SCIPY", f'-DSE_BLAS_NAME="{name}"',
                       f"-I{pkg.get_include_dir()}"),
                (f"-L{pkg.get_lib_dir()}", f"-l{pkg.get_library()}"), library)


def _system(cc: str) -> Blas | None:
    with tempfile.TemporaryDirectory(prefix="se-blas-probe-") as tmp:
        probe = Path(tmp) / "probe.c"
        probe.write_text(_PROBE)
        done = subprocess.run([cc, str(probe), "-o", str(Path(tmp) / "probe"), "-lopenblas"],
                              capture_output=True, text=True)
    if done.returncode:
        return None
    return Blas("OpenBLAS (system)", ("-DSE_BLAS", '-DSE_BLAS_NAME="OpenBLAS (system)"'),
                ("-lopenblas",))


_found: dict[str, Blas | None] = {}


def find(cc: str) -> Blas | None:
    """The BLAS to build with (None: C loops), announcing a fallback once."""
    if os.environ.get("SPARSE_EINSUM_BLAS", "1") == "0":
        return None
    if cc not in _found:
        _found[cc] = blas = _pypi() or _system(cc)
        if blas is None or blas.library is None:
            what = blas.name if blas else "no BLAS (C loops for matrix products, several times slower)"
            warnings.warn(f"sparse-einsum: {PYPI_PACKAGE} is not installed, the native kernels "
                          f"use {what}: pip install {PYPI_PACKAGE}", RuntimeWarning, stacklevel=2)
    return _found[cc]


def describe(name: str | None) -> str:
    """What explain says of the BLAS a kernel library reports (None: built without)."""
    return f"{name} for matrix products" if name else "C loops for matrix products: built without BLAS"


def preload() -> None:
    """Load PyPI's OpenBLAS into this process (if installed), so that a kernel library
    linked against it finds it by its soname wherever the two were installed."""
    _pypi()
