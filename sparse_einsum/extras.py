"""The optional parts of the package, by the extra that installs them: a missing one is a
one-line error naming the ``pip install`` that adds it."""
from __future__ import annotations

from importlib import import_module
from types import ModuleType

from .errors import BackendError

EXTRAS = {"psycopg": "postgres", "pyspark": "spark", "pandas": "spark"}


def missing(exc: ImportError) -> BackendError | None:
    """The one-line error for an ImportError of an optional module (None for others)."""
    top = (exc.name or "").split(".")[0]
    if top not in EXTRAS:
        return None
    return BackendError(f"{top} is not installed: pip install 'sparse-einsum[{EXTRAS[top]}]'")


def require(module: str) -> ModuleType:
    """Import an optional module, or raise the error naming its extra."""
    try:
        return import_module(module)
    except ImportError as exc:
        raise (missing(exc) or exc) from None
