"""Where the files the package ships beside its Python code are.

An installed wheel holds them inside the package (setup.py copies them there); a
checkout (an editable install) has them at the repository root. ``NATIVE`` holds what a
wheel build compiled (the DuckDB extension); a checkout compiles into the user's cache.
"""
from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
NATIVE = PACKAGE / "native"


def shipped(name: str) -> Path:
    """The directory `name` (``udf_kernels``, ``sql_templates``) of an installed wheel or
    of a checkout."""
    inside = PACKAGE / name
    return inside if inside.is_dir() else PACKAGE.parent / name


UDF_KERNELS = shipped("udf_kernels")
