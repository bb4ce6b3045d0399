"""Build steps beyond setuptools' own (metadata is in pyproject.toml).

A wheel (``python -m build``, ``pip install .``) carries the kernel sources as package
data (``sparse_einsum/udf_kernels``: ``sparse-einsum install-kernels`` builds the
PostgreSQL kernels from them on the server's machine), the SQL templates
(``sparse_einsum/sql_templates``) and the DuckDB extension compiled
against PyPI's scipy-openblas32 (``sparse_einsum/native``), which makes it a platform
wheel; DuckDB's C API headers come from the duckdb source distribution on PyPI for that
build. An editable install only fetches the headers: the extension is built on first use
into the user's cache. A failed build (no compiler) does not fail the install: DuckDB then runs kernels as Python UDFs,
with a warning, and ``sparse-einsum build-extension`` tries again. The wheel also carries
the Spark kernel jar (``sparse_einsum/native``), compiled with javac against pyspark's
jars (the build environment's pyspark, or the directory $SPARSE_EINSUM_SPARK_JARS names);
without javac or pyspark the wheel lacks it and Spark runs kernels as Arrow UDFs until
``sparse-einsum build-extension --spark`` builds it.
"""
from __future__ import annotations

import shutil
import sys
import types
from pathlib import Path

from setuptools import Distribution, setup
from setuptools.command.bdist_wheel import bdist_wheel
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
KERNEL_SOURCES = ("common", "duckdb", "postgres", "spark")


def _build_modules():
    """sparse_einsum.backends.duckdb_extension and spark_jar without running the package's
    __init__ (the build environment has none of its dependencies; the modules need none)."""
    for name in ("sparse_einsum", "sparse_einsum.backends"):
        package = types.ModuleType(name)
        package.__path__ = [str(ROOT.joinpath(*name.split(".")))]
        sys.modules.setdefault(name, package)
    from sparse_einsum.backends import duckdb_extension, spark_jar
    return duckdb_extension, spark_jar


class BuildPyWithKernels(build_py):
    def run(self) -> None:
        super().run()
        package = Path(self.build_lib) / "sparse_einsum"
        if not self.editable_mode:
            for name in KERNEL_SOURCES:
                shutil.copytree(ROOT / "udf_kernels" / name, package / "udf_kernels" / name,
                                dirs_exist_ok=True,
                                ignore=shutil.ignore_patterns("*.o", "*.so", "*.bc"))
            shutil.copytree(ROOT / "sql_templates", package / "sql_templates", dirs_exist_ok=True)
        try:
            extension, _ = _build_modules()
            extension.fetch_headers()
            if not self.editable_mode:      # (a checkout builds on first use, in its own env)
                built = extension.build(into=package / "native")
                print(f"sparse-einsum: built the DuckDB extension {built}")
        except Exception as exc:    # never fail the install for it
            print(f"sparse-einsum: warning: the DuckDB extension was not built ({exc}); DuckDB "
                  "will run kernels as Python UDFs until `sparse-einsum build-extension` "
                  "succeeds", file=sys.stderr)
        if self.editable_mode:
            return
        try:
            _, spark_jar = _build_modules()
            print(f"sparse-einsum: built the Spark kernel jar "
                  f"{spark_jar.build(into=package / 'native')}")
        except Exception as exc:    # never fail the install for it
            print(f"sparse-einsum: warning: the Spark kernel jar was not built ({exc}); Spark "
                  "will run kernels as Arrow UDFs until `sparse-einsum build-extension --spark` "
                  "succeeds", file=sys.stderr)


class WithBinary(Distribution):
    """The DuckDB extension makes the wheel a platform wheel."""

    def has_ext_modules(self) -> bool:
        return True


class PlatformWheel(bdist_wheel):
    """Tagged for the platform only: the extension does not link Python."""

    def get_tag(self) -> tuple[str, str, str]:
        return "py3", "none", super().get_tag()[2]


setup(distclass=WithBinary, cmdclass={"build_py": BuildPyWithKernels, "bdist_wheel": PlatformWheel})
