"""Build and find the Spark kernel jar (Java sources in ``udf_kernels/spark``).

The jar holds the kernels as a Spark function catalog (``sparseeinsum.spark.KernelCatalog``,
`sql.spark.SparkNativeDialect` calls it). It is compiled with ``javac`` (a JDK 17) against
the jars of the installed pyspark. A wheel carries the jar it compiled
(``sparse_einsum/native``); a checkout builds it on first use into
``~/.cache/sparse-einsum`` (``$SPARSE_EINSUM_CACHE``), keyed by its sources and the Spark
version, or with ``sparse-einsum build-extension --spark``. A build without pyspark (a
wheel's isolated build environment) compiles against the jars directory that
``$SPARSE_EINSUM_SPARK_JARS`` names.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path

from ..errors import BackendError
from ..resources import NATIVE, UDF_KERNELS
from .duckdb_extension import cache_dir

FILE_NAME = "sparse_einsum_spark.jar"
CATALOG_CLASS = "sparseeinsum.spark.KernelCatalog"
SOURCE_DIR = UDF_KERNELS / "spark" / "src"


def sources() -> list[Path]:
    return sorted(SOURCE_DIR.rglob("*.java"))


def spark_jars() -> tuple[Path, str]:
    """The jars directory of pyspark (``$SPARSE_EINSUM_SPARK_JARS``, else the installed
    pyspark's) and its Spark version."""
    named = os.environ.get("SPARSE_EINSUM_SPARK_JARS")
    if named:
        core = sorted(Path(named).glob("spark-core_*.jar"))
        found = re.search(r"-(\d[\w.]*)\.jar$", core[0].name) if core else None
        if not found:
            raise BackendError(f"$SPARSE_EINSUM_SPARK_JARS: no spark-core jar in {named}")
        return Path(named), found.group(1)
    try:
        import pyspark
    except ImportError:
        raise BackendError("building the Spark kernel jar needs pyspark") from None
    jars = Path(pyspark.__file__).parent / "jars"
    if not jars.is_dir():
        raise BackendError(f"pyspark has no jars directory ({jars})")
    return jars, pyspark.__version__


def _javac() -> str:
    home = os.environ.get("JAVA_HOME")
    javac = str(Path(home) / "bin" / "javac") if home else "javac"
    if not shutil.which(javac):
        raise BackendError("no Java compiler: javac is not on PATH (install a JDK 17, e.g. "
                           "apt-get install openjdk-17-jdk-headless)")
    return javac


def _build_key(version: str) -> str:
    digest = hashlib.sha256(version.encode())
    for path in sources():
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def build(force: bool = False, into: Path | None = None) -> Path:
    """Compile the jar and return its path (into the cache once per key, or `into` the
    directory of a wheel being built); BackendError says why not."""
    javac = _javac()
    jars, version = spark_jars()
    if not sources():
        raise BackendError(f"no Spark kernel sources in {SOURCE_DIR}")
    target = (into or cache_dir() / "spark" / _build_key(version)) / FILE_NAME
    if target.is_file() and not force and into is None:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="se-spark-jar-") as tmp:
        cmd = [javac, "--release", "17", "-nowarn", "-cp", str(jars / "*"), "-d", tmp,
               *map(str, sources())]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode:
            raise BackendError(f"compiling the Spark kernel jar failed:\n{' '.join(cmd)}\n"
                               f"{(done.stdout + done.stderr)[-3000:]}")
        staging = target.parent / f"{FILE_NAME}.{os.getpid()}.tmp"
        with zipfile.ZipFile(staging, "w", zipfile.ZIP_DEFLATED) as jar:
            jar.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\n"
                         f"Implementation-Title: sparse-einsum Spark kernels (Spark {version})\n")
            for path in sorted(Path(tmp).rglob("*.class")):
                jar.write(path, path.relative_to(tmp).as_posix())
    os.replace(staging, target)      # atomic: a concurrent build wrote the same classes
    return target


def jar_path() -> Path:
    """The jar a wheel carries, or else one built from the checkout's sources (on first
    use); BackendError says why there is none."""
    packaged = NATIVE / FILE_NAME
    if packaged.is_file():
        return packaged
    return build()
