"""Install-time build of the sparse_einsum DuckDB extension (metadata is in pyproject.toml).

After the Python files are built, DuckDB's C API headers are fetched from PyPI (the duckdb
source distribution) and the extension is compiled with gcc into the user's cache, as
`sparse_einsum.backends.duckdb_extension` describes. A failure (no compiler, no network)
does not fail the install: DuckDB then runs kernels as Python UDFs, with a warning, and
`sparse-einsum build-extension` tries again.
"""
from __future__ import annotations

import sys
import types
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent


def _extension_module():
    """sparse_einsum.backends.duckdb_extension without running the package's __init__
    (the build environment has none of its dependencies; the module needs none)."""
    for name in ("sparse_einsum", "sparse_einsum.backends"):
        package = types.ModuleType(name)
        package.__path__ = [str(ROOT.joinpath(*name.split(".")))]
        sys.modules.setdefault(name, package)
    from sparse_einsum.backends import duckdb_extension
    return duckdb_extension


class BuildPyWithExtension(build_py):
    def run(self) -> None:
        super().run()
        try:
            extension = _extension_module()
            extension.fetch_headers()
            print(f"sparse-einsum: built the DuckDB extension {extension.build()}")
        except Exception as exc:    # never fail the install for it
            print(f"sparse-einsum: warning: the DuckDB extension was not built ({exc}); DuckDB "
                  "will run kernels as Python UDFs until `sparse-einsum build-extension` "
                  "succeeds", file=sys.stderr)


setup(cmdclass={"build_py": BuildPyWithExtension})
