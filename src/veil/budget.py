"""Privacy budgets and an accountant.

Budgets are frozen and validated at construction. Composition is sequential
(basic composition): spending eps_1, ..., eps_m on the same data costs
sum(eps_i). ``split(weights)`` divides one budget into parts whose sum is at
most the whole (floating-point rounding is corrected downward, never upward).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Sequence

from .errors import BudgetExceededError, ParameterError
from .validation import check_epsilon, check_finite_array

__all__ = ["PureDP", "GeoDP", "Accountant", "LedgerEntry"]


def _split_values(total: float, weights: Sequence[float]) -> list[float]:
    w = check_finite_array(list(weights), "weights", ndim=1)
    if (w <= 0).any():
        raise ParameterError(f"weights must all be > 0, got {list(map(float, w))}")
    parts = [total * float(x) / float(w.sum()) for x in w]
    # Round so that the parts never add up to more than the total.
    while math.fsum(parts) > total:
        parts = [math.nextafter(p, 0.0) for p in parts]
    return parts


@dataclass(frozen=True)
class PureDP:
    """A pure epsilon-differential-privacy budget.

    Parameters
    ----------
    epsilon : float
        Finite and > 0 (NaN, ``inf`` and <= 0 are refused, naming the value: an infinite
        budget is no privacy, and every mechanism refuses it).

    Examples
    --------
    >>> b = PureDP(1.0)
    >>> [round(p.epsilon, 3) for p in b.split([1, 3])]
    [0.25, 0.75]
    """

    epsilon: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon, "epsilon"))

    def split(self, weights: Sequence[float]) -> tuple["PureDP", ...]:
        """Split into parts proportional to ``weights`` that sum to at most epsilon."""
        return tuple(PureDP(p) for p in _split_values(self.epsilon, weights))

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "pure-dp", "epsilon": self.epsilon}


@dataclass(frozen=True)
class GeoDP:
    """An epsilon-geo-indistinguishability budget, epsilon per metre.

    Two locations at distance d metres are (epsilon * d)-indistinguishable.
    For example ``GeoDP(math.log(4) / 200)`` gives eps = ln 4 within 200 m.
    """

    epsilon_per_metre: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon_per_metre",
                           check_epsilon(self.epsilon_per_metre, "epsilon_per_metre"))

    def at(self, distance_m: float) -> float:
        """The epsilon that protects two points ``distance_m`` metres apart."""
        return self.epsilon_per_metre * float(distance_m)

    def split(self, weights: Sequence[float]) -> tuple["GeoDP", ...]:
        return tuple(GeoDP(p) for p in _split_values(self.epsilon_per_metre, weights))

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "geo-dp", "epsilon_per_metre": self.epsilon_per_metre}


@dataclass(frozen=True)
class LedgerEntry:
    label: str
    epsilon: float


@dataclass
class Accountant:
    """A ledger of spending against a total pure-DP budget (sequential composition).

    Examples
    --------
    >>> acc = Accountant(PureDP(1.0))
    >>> part = acc.spend(0.4, "histogram")
    >>> round(acc.remaining, 2)
    0.6
    >>> acc.spend(0.7, "too much")
    Traceback (most recent call last):
    ...
    veil.errors.BudgetExceededError: spending 0.7 on 'too much' exceeds the remaining budget 0.6 (total 1)
    """

    total: PureDP
    ledger: list[LedgerEntry] = field(default_factory=list)

    @property
    def spent(self) -> float:
        return math.fsum(e.epsilon for e in self.ledger)

    @property
    def remaining(self) -> float:
        return max(0.0, self.total.epsilon - self.spent)

    def spend(self, epsilon: float | PureDP, label: str) -> PureDP:
        """Record spending ``epsilon`` under ``label`` and return it as a budget."""
        eps = epsilon.epsilon if isinstance(epsilon, PureDP) else check_epsilon(epsilon)
        if self.spent + eps > self.total.epsilon * (1 + 1e-12):
            raise BudgetExceededError(
                f"spending {eps:g} on {label!r} exceeds the remaining budget "
                f"{self.remaining:g} (total {self.total.epsilon:g})")
        self.ledger.append(LedgerEntry(label, eps))
        return PureDP(eps)

    def to_dict(self) -> dict[str, Any]:
        return {"total": self.total.to_dict(), "spent": self.spent,
                "ledger": [{"label": e.label, "epsilon": e.epsilon} for e in self.ledger]}
