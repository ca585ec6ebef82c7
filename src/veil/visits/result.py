"""The result of a visit-histogram sanitization."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["VisitResult"]


from ..release import TabularMixin


@dataclass(frozen=True)
class VisitResult(TabularMixin):
    """A sanitized visit histogram and what a user needs to judge it.

    These mechanisms are deterministic optimisations, not differential privacy:
    the guarantee is the syntactic one of the problem solved (sensitive bins are
    zero; the privacy distance to the target is <= c or >= c).

    Attributes
    ----------
    histogram : ndarray of int64
        The sanitized histogram ``H'``.
    original : ndarray of int64
        The user's histogram ``H``.
    problem : {"hide", "resemble", "avoid"}
    algorithm : str
        ``"LHO"``, ``"convex-greedy"``, ``"RO"``, ``"RH"``, ``"AO"``, ``"AH"``.
    exact : bool
        True when the answer is proven optimal.
    quality_distance : str
    quality_loss : float
        ``d_q(H, H')`` on normalized histograms.
    privacy_distance : str or None
    privacy_value : float or None
        ``d_p(H', H'')`` (TR/TA).
    bound : float or None
        A proven bound on the optimum of the objective: a lower bound on the
        best ``d_p`` (resemble) or an upper bound (avoid); for exact answers the
        optimum itself.
    gap : float
        ``|value - bound|``: how far the answer can be from the optimum (0 when exact).
    labels : tuple of str or None
        Bin names when known.
    parameters : dict
    runtime_s : float
    notes : tuple of str
    """

    histogram: np.ndarray
    original: np.ndarray
    problem: str
    algorithm: str
    exact: bool
    quality_distance: str
    quality_loss: float
    privacy_distance: str | None = None
    privacy_value: float | None = None
    bound: float | None = None
    gap: float = 0.0
    labels: tuple[str, ...] | None = None
    parameters: dict[str, Any] = field(default_factory=dict)
    runtime_s: float = 0.0
    notes: tuple[str, ...] = ()

    @property
    def size(self) -> int:
        return int(self.histogram.sum())

    def published(self) -> dict[str, Any]:
        """What may be published: the sanitized histogram only, over the result's domain.

        Every bin of the domain is present (zeros included), so the keys never
        depend on which bins were zeroed; nothing else (size of the input, K,
        quality loss, algorithm) is included.

        Examples
        --------
        >>> from veil.visits import hide
        >>> hide([5, 3, 0, 2], sensitive=[3], labels=["a", "b", "c", "d"]).published()
        {'histogram': {'a': 6, 'b': 4, 'c': 0, 'd': 0}}
        """
        if self.labels is None:
            return {"histogram": [int(v) for v in self.histogram]}
        return {"histogram": {lab: int(c) for lab, c in zip(self.labels, self.histogram)}}

    def to_arrow(self):
        """What may be published (:meth:`published`) as a table: one row per bin of the domain.

        Columns ``category`` (the labels; ``bin`` numbers without labels) and ``visits``.

        Examples
        --------
        >>> from veil.visits import hide
        >>> hide({"a": 5, "b": 3, "c": 0, "d": 2}, sensitive=["d"]).to_pandas()
          category  visits
        0        a       6
        1        b       4
        2        c       0
        3        d       0
        """
        import pyarrow as pa

        key = ("category", list(self.labels)) if self.labels is not None else \
            ("bin", np.arange(self.histogram.size, dtype=np.int64))
        return pa.table({key[0]: key[1], "visits": np.asarray(self.histogram, dtype=np.int64)})

    def to_dict(self) -> dict[str, Any]:
        """The custodian's PRIVATE report (original counts, K, losses): never publish it.

        JSON-friendly (histograms as lists, or as label -> count maps); use
        :meth:`published` for what may be released.
        """
        from ..release import to_jsonable

        def hist(h):
            if self.labels is None:
                return h.tolist()
            return {lab: int(c) for lab, c in zip(self.labels, h)}

        return to_jsonable({
            "problem": self.problem, "algorithm": self.algorithm, "exact": self.exact,
            "histogram": hist(self.histogram), "original": hist(self.original),
            "size": self.size, "original_size": int(self.original.sum()),
            "quality_distance": self.quality_distance, "quality_loss": self.quality_loss,
            "privacy_distance": self.privacy_distance, "privacy_value": self.privacy_value,
            "bound": self.bound, "gap": self.gap, "parameters": self.parameters,
            "runtime_s": self.runtime_s, "notes": list(self.notes),
            "guarantee": "deterministic optimisation; not differential privacy",
        })
