"""sparse-einsum: compile EinSum programs to tensor-relational SQL (DuckDB, PostgreSQL)."""
from .api import einsum, run
from .errors import DataError, PlanError, ProgramError, SparseEinsumError
from .plan import Plan

__all__ = ["einsum", "run", "explain", "Plan", "SparseEinsumError", "ProgramError",
           "DataError", "PlanError"]
from .explain import explain_program as explain  # noqa: E402  (after the submodule import)
