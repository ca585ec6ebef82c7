"""Exception and warning hierarchy for veil.

Every error raised for bad input subclasses both :class:`VeilError` and the
matching built-in (``ValueError``, ``FileNotFoundError`` ...), so callers can
catch either. Messages name the parameter, file, row or column and the value
received, and say what to do.
"""

from __future__ import annotations

__all__ = [
    "VeilError",
    "ParameterError",
    "DataError",
    "InfeasibleError",
    "BudgetExceededError",
    "InstanceTooLargeError",
    "ResourceError",
    "PrivacyWarning",
]


class VeilError(Exception):
    """Base class of every error veil raises on purpose."""


class ParameterError(VeilError, ValueError):
    """A parameter has an invalid value (the message names it and the value)."""


class DataError(VeilError, ValueError):
    """Input data is malformed.

    Parameters
    ----------
    message : str
        What is wrong and what to do.
    path : str, optional
        The file the data came from.
    row : int, optional
        1-based data row (header not counted) where the problem was found.
    column : str, optional
        The column concerned.
    """

    def __init__(self, message: str, *, path: str | None = None, row: int | None = None,
                 column: str | None = None):
        self.path = path
        self.row = row
        self.column = column
        where = []
        if path is not None:
            where.append(f"file {path!s}")
        if row is not None:
            where.append(f"row {row}")
        if column is not None:
            where.append(f"column {column!r}")
        prefix = (", ".join(where) + ": ") if where else ""
        super().__init__(prefix + message)


class InfeasibleError(VeilError, ValueError):
    """No solution satisfies the constraints that were asked for."""


class BudgetExceededError(VeilError, RuntimeError):
    """Spending would exceed the privacy budget held by an accountant."""


class InstanceTooLargeError(VeilError, RuntimeError):
    """An exact algorithm would exceed its declared size or time limit."""


class ResourceError(VeilError, RuntimeError):
    """The job ran out of a machine resource (memory); the message names the setting to raise."""


class PrivacyWarning(UserWarning):
    """A privacy hazard the user explicitly opted into (e.g. bins taken from the data)."""
