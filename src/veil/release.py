"""The :class:`Release`: a private output together with what a user needs to judge it."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .budget import GeoDP, PureDP

__all__ = ["Release", "to_jsonable", "PROTECTED_UNITS"]

#: The units of protection a release can state (see :attr:`Release.protects`).
PROTECTED_UNITS = ("record", "user")


def to_jsonable(obj: Any) -> Any:
    """Convert numpy scalars/arrays, budgets and dataclasses into JSON-friendly values."""
    if isinstance(obj, PureDP | GeoDP):
        return obj.to_dict()
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return to_jsonable(obj.tolist())
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating | float):
        v = float(obj)
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return v
    if isinstance(obj, np.bool_):
        return bool(obj)
    if hasattr(obj, "to_dict"):
        return to_jsonable(obj.to_dict())
    return obj


@dataclass(frozen=True)
class Release:
    """A private output with its provenance.

    Attributes
    ----------
    value : Any
        The released data (array, table, points ...).
    mechanism : str
        Name of the mechanism that produced it.
    budget : PureDP or GeoDP
        The total budget spent.
    parameters : dict
        The public parameters the mechanism was called with.
    budget_split : dict
        How the budget was divided among the mechanism's steps (label -> epsilon).
    noise_scale : float or None
        Scale of the noise added (e.g. Laplace b, discrete Laplace t).
    noise_variance : float or None
        Per-value variance of the noise, when it has a closed form.
    expected_error : dict
        Optional named error estimates (e.g. expected absolute error per bin).
    notes : tuple of str
        Caveats (e.g. floating point; effective epsilon after rounding).
    protects : {"record", "user"}
        The unit of protection: ``"record"`` when neighbouring inputs differ in one record
        (one check-in, one point, one row of a table: the default of every mechanism that
        takes counts or points), ``"user"`` when they differ in everything one person
        contributed (contribution bounded to a public number of records per user, or a
        whole trajectory). A record-level guarantee protects a person only if each person
        contributed a single record.

    Examples
    --------
    >>> from veil.budget import PureDP
    >>> Release([1, 2], "identity", PureDP(1.0)).protects
    'record'
    >>> Release([1, 2], "identity", PureDP(1.0), protects="person")
    Traceback (most recent call last):
    ...
    veil.errors.ParameterError: protects must be one of 'record', 'user', got 'person'
    """

    value: Any
    mechanism: str
    budget: PureDP | GeoDP
    parameters: dict[str, Any] = field(default_factory=dict)
    budget_split: dict[str, float] = field(default_factory=dict)
    noise_scale: float | None = None
    noise_variance: float | None = None
    expected_error: dict[str, float] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    protects: str = "record"

    def __post_init__(self) -> None:
        from .validation import check_choice

        check_choice(self.protects, "protects", PROTECTED_UNITS)

    @property
    def epsilon(self) -> float:
        b = self.budget
        return b.epsilon if isinstance(b, PureDP) else b.epsilon_per_metre

    def metadata(self) -> dict[str, Any]:
        """Everything but the value, as JSON-friendly data (the CLI's sidecar)."""
        return to_jsonable({
            "mechanism": self.mechanism,
            "budget": self.budget,
            "parameters": self.parameters,
            "budget_split": self.budget_split,
            "noise_scale": self.noise_scale,
            "noise_variance": self.noise_variance,
            "expected_error": self.expected_error,
            "notes": list(self.notes),
            "protects": self.protects,
        })

    def sidecar_json(self) -> str:
        return json.dumps(self.metadata(), indent=2, sort_keys=True)

    def __repr__(self) -> str:  # short: never dump a large value
        shape = getattr(self.value, "shape", None)
        return (f"Release(mechanism={self.mechanism!r}, budget={self.budget!r}, "
                f"noise_scale={self.noise_scale!r}, value_shape={shape})")
