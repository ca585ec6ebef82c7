"""Per-bin cost functions for the visit-histogram problems.

All distances in :data:`veil.distances.BIN_DISTANCES` compare *normalized*
histograms and decompose over bins. When the sanitized histogram ``H'`` has a
size ``S`` fixed in advance (``S = N`` for SLH/TR/TA, ``S = N - K + r`` for
SLH_r, ``S = |H''|`` for the target-size variants), the normalization of every
candidate is the same constant, so

    d_q(H, H') = sum_i term(H[i] / N, H'[i] / S)
    d_p(H', T) = sum_i term(H'[i] / S, T[i] / |T|)

and the cost of giving bin ``i`` the count ``x`` can be tabulated bin by bin.
Each of these terms is convex in ``x`` (all six distances are f-divergences or
convex norms of ``q``), which is what makes the greedy fast path exact.

``forbid_unvisited=True`` gives an infinite cost to every positive count in a
bin the user never visited (``H[i] == 0``), so no visit is invented there.
"""

from __future__ import annotations

import numpy as np

from ..distances import BIN_DISTANCES, bin_terms, step_terms
from ..errors import ParameterError
from ..validation import check_choice

__all__ = ["check_distance", "QualityCost", "L1_EXACT_LIMIT"]

#: largest value of the integer-scaled L1 objective that float64 holds exactly.
L1_EXACT_LIMIT = 2.0 ** 52


def check_distance(name: str, parameter: str) -> str:
    """Validate a distance name (did-you-mean on typos)."""
    if not isinstance(name, str):
        raise ParameterError(f"{parameter} must be a distance name, got {name!r}")
    return check_choice(name.lower(), parameter, tuple(BIN_DISTANCES))


class QualityCost:
    """Tabulates or evaluates the quality cost of giving bin ``i`` the count ``x``.

    Parameters
    ----------
    h : ndarray of int64
        The user's histogram (all bins).
    bins : ndarray of int
        The bins the optimisation may change.
    size : int
        The fixed size ``S`` of the sanitized histogram.
    distance : str
        Quality distance.
    forbid_unvisited : bool
        Infinite cost for any visit added to a bin with ``h == 0``.
    l1_exact : bool
        For ``l1``: evaluate the integer-scaled objective
        ``|N x - S h| * M + (x - h)^2`` (``M`` = 1 + max possible secondary sum)
        so costs are exact integers and ties are broken towards the most even
        spread of the added visits (documented L1 tie-break).
    """

    def __init__(self, h, bins, size, distance, *, forbid_unvisited=False, l1_exact=False,
                 base=None, max_units=0):
        self.h = np.asarray(h, dtype=np.int64)
        self.N = int(self.h.sum())
        self.bins = np.asarray(bins, dtype=np.int64)
        self.hb = self.h[self.bins].astype(np.float64)
        self.base = self.hb if base is None else np.asarray(base, dtype=np.float64)
        self.size = int(size)
        self.distance = distance
        self.forbid = (self.hb == 0) if forbid_unvisited else None
        self.l1_exact = bool(l1_exact and distance == "l1")
        if self.l1_exact:
            R = int(max_units)
            self.M = float(R * R + 1)
            worst = (2.0 * self.N * self.size + 2.0 * self.N * R) * self.M + self.M
            if worst >= L1_EXACT_LIMIT:
                self.l1_exact = False  # too large: fall back to float costs

    def __call__(self, idx, units):
        """Cost for bins ``self.bins[idx]`` holding ``base + units`` (broadcasting)."""
        hb = self.hb[idx]
        x = self.base[idx] + np.asarray(units, dtype=np.float64)
        if self.l1_exact:
            prim = np.abs(self.N * x - self.size * hb)
            add = x - self.base[idx]
            c = prim * self.M + add * add
        else:
            c = bin_terms(hb / self.N, x / self.size, self.distance)
        if self.forbid is not None:
            c = np.where(self.forbid[idx] & (x > 0), np.inf, c)
        return c

    def table(self, R: int) -> np.ndarray:
        """Matrix ``C[b, k]`` for ``k = 0..R`` added units (shape ``(m, R + 1)``)."""
        m = len(self.bins)
        return self(np.arange(m)[:, None], np.arange(R + 1)[None, :])

    def marginal(self, idx, k):
        """``cost(k + 1) - cost(k)``; ``inf`` where the step is forbidden.

        Float costs use :func:`veil.distances.step_terms`, the step computed directly (the
        difference of two costs lost its digits at large sizes); the integer ``l1`` cost is
        exact either way."""
        if self.l1_exact:
            a = self(idx, k)
            b = self(idx, np.asarray(k) + 1)
            with np.errstate(invalid="ignore"):
                d = b - a
            return np.where(np.isnan(d) | np.isinf(b), np.inf, d)
        hb = self.hb[idx]
        x = self.base[idx] + np.asarray(k, dtype=np.float64)
        d = step_terms(hb / self.N, x / self.size, 1.0 / self.size, self.distance)
        if self.forbid is not None:
            d = np.where(self.forbid[idx], np.inf, d)
        return np.where(np.isnan(d), np.inf, d)
