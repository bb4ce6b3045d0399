"""sparse-einsum: compile EinSum programs to tensor-relational SQL (DuckDB, PostgreSQL)."""
from .api import einsum, explain, run
from .errors import DataError, PlanError, ProgramError, SparseEinsumError
from .plan import Plan
from .session import Session

__all__ = ["einsum", "run", "explain", "Session", "Plan", "SparseEinsumError", "ProgramError",
           "DataError", "PlanError"]
