"""Privacy models on a sensitive attribute: distinct and entropy l-diversity, t-closeness.

k-anonymity hides *which* row is a person's; it does not hide the person's
sensitive value when every row of their class has the same one (homogeneity).
These models constrain the sensitive values inside every equivalence class
(rows with the same published quasi-identifier tuple):

* :class:`DistinctLDiversity` (Machanavajjhala et al. 2006): at least ``l``
  distinct sensitive values in every class;
* :class:`EntropyLDiversity`: the entropy of the class's sensitive-value
  distribution is at least ``log(l)``;
* :class:`TCloseness` (Li, Li, Venkatasubramanian 2007): the Earth Mover's
  Distance between the class's distribution and the whole table's is at most
  ``t``; with equal ground distances (categorical values) the EMD is half the
  L1 distance, with ordered values (``ordered=True``: numbers, sorted
  numerically) it is ``sum_i |cumsum(p - q)_i| / (m - 1)``.

The anonymizers (:mod:`veil.tables.generalize`, DIVA and the suppression
baselines) treat them as constraints every published class satisfies. What
they do not give: l-diversity does not bound how *likely* a value is (a class
with 98 "flu" and 1 "HIV" and 1 "cancer" is distinct 3-diverse); t-closeness
keeps the class distributions close to the table's, so the table's own
distribution is revealed; neither is differential privacy.

Distinct l-diversity is monotone (merging two classes keeps at least the
distinct values of each), which lets the lattice search prune; entropy
l-diversity and t-closeness are not monotone once failing classes are
suppressed, so the search evaluates them and does not prune on them.

Examples
--------
>>> m = DistinctLDiversity("disease", 2)
>>> m.check(np.array([0, 0, 1, 1]), 2, np.array([0, 1, 0, 0]), 2).tolist()
[True, False]
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from ..errors import ParameterError

__all__ = ["PrivacyModel", "DistinctLDiversity", "EntropyLDiversity", "TCloseness",
           "class_table", "SensitiveColumn", "encode_sensitive", "check_models"]


def class_table(classes: np.ndarray, nclasses: int, sens: np.ndarray, nsens: int) -> np.ndarray:
    """Counts of each sensitive value per class, shape (nclasses, nsens)."""
    flat = np.asarray(classes, dtype=np.int64) * nsens + np.asarray(sens, dtype=np.int64)
    return np.bincount(flat, minlength=nclasses * nsens).reshape(nclasses, nsens)


class PrivacyModel:
    """A constraint on the sensitive values of every equivalence class."""

    sensitive: str
    monotone: bool = False

    def check(self, classes: np.ndarray, nclasses: int, sens: np.ndarray, nsens: int,
              overall: np.ndarray | None = None) -> np.ndarray:
        """Boolean per class: whether it satisfies the model."""
        return self.check_table(class_table(classes, nclasses, sens, nsens), overall)

    def check_table(self, table: np.ndarray, overall: np.ndarray | None = None) -> np.ndarray:
        raise NotImplementedError

    def measure(self, table: np.ndarray, overall: np.ndarray | None = None) -> np.ndarray:
        """The model's figure per class (l for l-diversity, the distance for t-closeness)."""
        raise NotImplementedError

    def to_dict(self) -> dict[str, Any]:
        raise NotImplementedError


def _check_sensitive(name: Any) -> str:
    if not isinstance(name, str) or not name:
        raise ParameterError(f"sensitive must be a column name, got {name!r}")
    return name


@dataclass(frozen=True)
class DistinctLDiversity(PrivacyModel):
    """At least ``l`` distinct sensitive values in every class (monotone)."""

    sensitive: str
    l: int
    monotone: bool = field(default=True, init=False)

    def __post_init__(self):
        _check_sensitive(self.sensitive)
        if isinstance(self.l, bool) or not isinstance(self.l, (int, np.integer)) or self.l < 1:
            raise ParameterError(f"l must be an integer >= 1, got {self.l!r}")

    def measure(self, table, overall=None):
        return (table > 0).sum(axis=1)

    def check_table(self, table, overall=None):
        return self.measure(table) >= self.l

    def to_dict(self):
        return {"model": "distinct-l-diversity", "sensitive": self.sensitive, "l": int(self.l)}


@dataclass(frozen=True)
class EntropyLDiversity(PrivacyModel):
    """Entropy of every class's sensitive values at least ``log(l)`` (natural log)."""

    sensitive: str
    l: float

    def __post_init__(self):
        _check_sensitive(self.sensitive)
        if isinstance(self.l, bool) or not isinstance(self.l, (int, float, np.number)) \
                or not math.isfinite(self.l) or self.l < 1:
            raise ParameterError(f"l must be a number >= 1, got {self.l!r}")

    def measure(self, table, overall=None):
        """exp(entropy) per class: the 'effective number' of sensitive values."""
        tot = table.sum(axis=1, keepdims=True)
        with np.errstate(divide="ignore", invalid="ignore"):
            p = np.where(tot > 0, table / np.maximum(tot, 1), 0.0)
            h = -np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0)), 0.0).sum(axis=1)
        return np.exp(h)

    def check_table(self, table, overall=None):
        tot = table.sum(axis=1, keepdims=True)
        p = table / np.maximum(tot, 1)
        h = -np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0)), 0.0).sum(axis=1)
        return h >= math.log(self.l) - 1e-12

    def to_dict(self):
        return {"model": "entropy-l-diversity", "sensitive": self.sensitive, "l": float(self.l)}


@dataclass(frozen=True)
class TCloseness(PrivacyModel):
    """EMD between each class's sensitive distribution and the table's at most ``t``."""

    sensitive: str
    t: float
    ordered: bool = False

    def __post_init__(self):
        _check_sensitive(self.sensitive)
        if isinstance(self.t, bool) or not isinstance(self.t, (int, float, np.number)) \
                or not 0 <= self.t <= 1:
            raise ParameterError(f"t must be a number in [0, 1], got {self.t!r}")

    def measure(self, table, overall=None):
        if overall is None:
            overall = table.sum(axis=0)
        q = overall / max(overall.sum(), 1)
        tot = table.sum(axis=1, keepdims=True)
        p = table / np.maximum(tot, 1)
        d = p - q[None, :]
        m = table.shape[1]
        if self.ordered:
            if m <= 1:
                return np.zeros(table.shape[0])
            return np.abs(np.cumsum(d, axis=1)[:, :-1]).sum(axis=1) / (m - 1)
        return 0.5 * np.abs(d).sum(axis=1)

    def check_table(self, table, overall=None):
        return self.measure(table, overall) <= self.t + 1e-12

    def to_dict(self):
        return {"model": "t-closeness", "sensitive": self.sensitive, "t": float(self.t),
                "distance": "ordered EMD" if self.ordered else "equal-distance EMD"}


@dataclass
class SensitiveColumn:
    """A sensitive attribute's values as codes (ordered numerically when ``ordered``)."""

    name: str
    codes: np.ndarray
    values: np.ndarray
    overall: np.ndarray

    @property
    def size(self) -> int:
        return len(self.values)


def encode_sensitive(cols: dict, name: str, *, ordered: bool = False) -> SensitiveColumn:
    """Encode a sensitive column by its text (numerically sorted when ``ordered``)."""
    from ..errors import DataError
    from .data import cell_text

    if name not in cols:
        raise ParameterError(f"sensitive column {name!r} is not in the table (columns: "
                             f"{', '.join(cols)})")
    text = cell_text(cols[name], name=name)
    uniq, inv = np.unique(text.astype(str), return_inverse=True)
    if ordered:
        try:
            nums = np.array([float(u) for u in uniq])
        except ValueError:
            bad = next(u for u in uniq if not _is_number(u))
            raise DataError(f"ordered t-closeness needs numbers, got {bad!r}",
                            column=name) from None
        order = np.argsort(nums, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(len(order))
        inv = rank[inv.reshape(-1)]
        uniq = uniq[order]
    codes = inv.reshape(-1).astype(np.int64)
    return SensitiveColumn(name, codes, np.asarray(uniq.tolist(), dtype=object),
                           np.bincount(codes, minlength=len(uniq)))


def _is_number(u: str) -> bool:
    try:
        float(u)
        return True
    except ValueError:
        return False


def check_models(models: Sequence[PrivacyModel], qi: Sequence[str]) -> list[PrivacyModel]:
    """Validate a list of models: instances, the sensitive attribute is not a QI."""
    out = list(models or [])
    for i, m in enumerate(out):
        if not isinstance(m, PrivacyModel):
            raise ParameterError(f"models[{i}] must be a privacy model (DistinctLDiversity, "
                                 f"EntropyLDiversity, TCloseness), got {m!r}")
        if m.sensitive in qi:
            raise ParameterError(f"the sensitive attribute {m.sensitive!r} is also a "
                                 "quasi-identifier; a sensitive attribute is published as is")
    return out
