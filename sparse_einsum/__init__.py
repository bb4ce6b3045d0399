"""sparse-einsum: compile EinSum programs to tensor-relational SQL (DuckDB, PostgreSQL)."""
from .api import einsum, run
from .errors import DataError, PlanError, ProgramError, SparseEinsumError
from .plan import Plan

__all__ = ["einsum", "run", "explain", "Plan", "SparseEinsumError", "ProgramError",
           "DataError", "PlanError"]


def explain(*args, **kwargs):
    """Top-k plans of a program with their estimated (and with analyze=True, actual) costs."""
    from .explain import explain_program
    return explain_program(*args, **kwargs)
