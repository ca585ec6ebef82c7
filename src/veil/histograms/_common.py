"""Helpers shared by the histogram mechanisms (validation, noisy sums, spreading)."""

from __future__ import annotations

import math

import numpy as np

from ..budget import PureDP
from ..errors import ParameterError
from ..mechanisms import geometric_mechanism
from ..random import make_rng
from ..samplers import discrete_laplace_variance
from ..validation import check_counts, check_epsilon, check_int, check_positive

NEIGHBOURS = ("neighbouring histograms differ by one record: one bin count changes by 1 "
              "(add/remove one record)")


def as_budget(epsilon) -> PureDP:
    """A PureDP budget from a float or PureDP (eps <= 0, NaN, inf rejected)."""
    if isinstance(epsilon, PureDP):
        if math.isinf(epsilon.epsilon):
            raise ParameterError("epsilon must be finite for a histogram release, got inf")
        return epsilon
    return PureDP(check_epsilon(epsilon, "epsilon"))


def as_counts(counts) -> np.ndarray:
    """Validate a histogram: 1-d, non-empty, non-negative integer counts (int64)."""
    return check_counts(counts, "counts")


def as_rng(rng) -> np.random.Generator:
    return make_rng(rng)


def check_k_bins(k, n: int, name: str = "k") -> int:
    k = check_int(k, name, minimum=1)
    if k > n:
        raise ParameterError(f"{name} must be <= the number of bins n={n}, got {k}")
    return k


#: The largest count bound F: the largest integer a float64 holds exactly. Below it the
#: score sensitivity 2F + 1 and the error terms in F**2 stay finite (1e308 made them inf).
MAX_COUNT_BOUND = 2.0 ** 53


def check_count_bound(count_bound) -> float:
    """The public bound F on a bin count (required; never read from the data)."""
    if count_bound is None:
        raise ParameterError(
            "count_bound is required: a public upper bound F on any bin count (e.g. from "
            "domain knowledge). It must not be computed from the private counts.")
    F = check_positive(count_bound, "count_bound")
    if F > MAX_COUNT_BOUND:
        raise ParameterError(f"count_bound must be at most 2**53 = {MAX_COUNT_BOUND:.0f} (the "
                             f"largest count a float holds exactly), got {count_bound!r}")
    return F


def noisy_integers(values: np.ndarray, epsilon: float, rng, sensitivity: float = 1.0):
    """Exact discrete Laplace noise with scale sensitivity/epsilon; returns (noisy, variance)."""
    rel = geometric_mechanism(np.asarray(values, dtype=np.int64), epsilon=epsilon,
                              sensitivity=sensitivity, rng=rng)
    return rel.value, float(rel.noise_variance), float(rel.noise_scale)


def dl_variance(epsilon: float, sensitivity: float = 1.0) -> float:
    """Variance of the (dyadic-rounded) discrete Laplace used for scale sensitivity/epsilon."""
    return discrete_laplace_variance(sensitivity / epsilon)


def split_edges(n: int, parts: int) -> np.ndarray:
    """``parts + 1`` integer edges splitting ``[0, n)`` into nearly equal intervals (widths
    differ by at most one; ``parts`` is clipped to ``[1, n]``). Used by coarse's buckets and
    the maps' grids.

    Examples
    --------
    >>> split_edges(10, 3).tolist()
    [0, 3, 6, 10]
    """
    parts = max(1, min(int(parts), int(n)))
    return (np.arange(parts + 1, dtype=np.int64) * n) // parts


def bucket_sums(counts: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Sums of ``counts`` over the buckets ``[edges[t], edges[t+1])``."""
    c = np.concatenate(([0], np.cumsum(counts, dtype=np.int64)))
    e = np.asarray(edges, dtype=np.int64)
    return c[e[1:]] - c[e[:-1]]


def spread(edges: np.ndarray, totals: np.ndarray) -> np.ndarray:
    """Spread each bucket total uniformly over its bins (bucket mean in every bin)."""
    m = np.diff(np.asarray(edges, dtype=np.int64))
    return np.repeat(np.asarray(totals, dtype=np.float64) / m, m)


def bucket_sse_noisy(y: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Within-bucket SSE of real values ``y`` for the buckets given by ``edges``."""
    from .partition import bucket_sse

    return bucket_sse(y, edges)
