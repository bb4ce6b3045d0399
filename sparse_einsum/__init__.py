"""sparse-einsum: compile EinSum programs to tensor-relational SQL (DuckDB, PostgreSQL)."""
from .api import einsum, explain, prepare, run
from .errors import DataError, PlanError, ProgramError, SparseEinsumError
from .plan import Plan
from .session import Session
from .training import grad, train

__all__ = ["einsum", "run", "explain", "prepare", "grad", "train", "Session", "Plan", "SparseEinsumError", "ProgramError",
           "DataError", "PlanError"]
