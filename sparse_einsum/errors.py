"""Errors raised for bad user input; each names the place it comes from."""
from __future__ import annotations


class SparseEinsumError(Exception):
    """Base class: bad input (a program, data or plan the user gave). CLI exit code 2."""


class ProgramError(SparseEinsumError):
    """A program that cannot be parsed or is not well formed.

    `source`, `line` and `column` (1-based) locate the problem when known.
    """

    def __init__(self, message: str, *, source: str | None = None,
                 line: int | None = None, column: int | None = None):
        self.bare_message = message
        self.source, self.line, self.column = source, line, column
        where = ""
        if source or line:
            where = f"{source or '<program>'}"
            if line:
                where += f":{line}"
                if column:
                    where += f":{column}"
            where += ": "
        super().__init__(where + message)


class DataError(SparseEinsumError):
    """Bound data that does not match the program (missing, wrong rank, wrong shape)."""


class PlanError(SparseEinsumError):
    """A plan specification that is unknown or does not fit the program."""


class BackendError(SparseEinsumError):
    """A database backend that cannot be reached or lacks something it needs."""
