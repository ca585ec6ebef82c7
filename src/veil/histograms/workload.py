"""Range-query workloads and the DPBench error protocol (Hay et al., SIGMOD 2016).

A workload is an integer array of shape ``(q, 2)`` of half-open ranges
``[lo, hi)`` over the bins. Answers come from prefix sums (O(n + q)).
The DPBench scaled error of an estimate is ``mean_q |W x - W x_hat| / scale``
where ``scale`` is the number of records of the true histogram; data are
re-sampled to a target scale from a dataset's shape (its normalised counts).
"""

from __future__ import annotations

import numpy as np

from ..errors import ParameterError
from ..random import make_rng
from ..validation import check_choice, check_counts, check_finite_array, check_int

__all__ = ["prefix_workload", "random_range_workload", "point_workload", "make_workload",
           "answer", "scaled_error", "resample_to_scale", "WORKLOADS"]

WORKLOADS = ("prefix", "random", "point")


def prefix_workload(n: int) -> np.ndarray:
    """All ``n`` prefix ranges ``[0, j)``, ``j = 1..n``.

    Examples
    --------
    >>> prefix_workload(3).tolist()
    [[0, 1], [0, 2], [0, 3]]
    """
    n = check_int(n, "n", minimum=1)
    return np.column_stack((np.zeros(n, dtype=np.int64), np.arange(1, n + 1, dtype=np.int64)))


def point_workload(n: int) -> np.ndarray:
    """The ``n`` single-bin queries ``[j, j+1)``."""
    n = check_int(n, "n", minimum=1)
    j = np.arange(n, dtype=np.int64)
    return np.column_stack((j, j + 1))


def random_range_workload(n: int, *, size: int = 2000, rng=None) -> np.ndarray:
    """``size`` random ranges: two bins drawn uniformly, the range between them (inclusive).

    Examples
    --------
    >>> from veil.random import make_rng
    >>> q = random_range_workload(100, size=5, rng=make_rng(seed=0))
    >>> bool(((q[:, 0] < q[:, 1]) & (q[:, 1] <= 100)).all())
    True
    """
    n = check_int(n, "n", minimum=1)
    size = check_int(size, "size", minimum=1)
    g = make_rng(rng)
    ab = g.integers(0, n, size=(size, 2))
    return np.column_stack((ab.min(axis=1), ab.max(axis=1) + 1)).astype(np.int64)


def make_workload(name: str, n: int, *, size: int = 2000, rng=None) -> np.ndarray:
    """Workload by name: 'prefix', 'random' (``size`` ranges) or 'point'."""
    name = check_choice(name, "workload", WORKLOADS)
    if name == "prefix":
        return prefix_workload(n)
    if name == "point":
        return point_workload(n)
    return random_range_workload(n, size=size, rng=rng)


def _check_queries(queries, n: int) -> np.ndarray:
    q = np.asarray(queries)
    if q.ndim != 2 or q.shape[1] != 2 or q.shape[0] == 0:
        raise ParameterError(f"queries must have shape (q, 2) with q >= 1, got {q.shape}")
    q = q.astype(np.int64)
    if (q[:, 0] < 0).any() or (q[:, 1] > n).any() or (q[:, 0] >= q[:, 1]).any():
        raise ParameterError(f"queries must be ranges [lo, hi) with 0 <= lo < hi <= n={n}")
    return q


def answer(queries, x) -> np.ndarray:
    """Answers ``W x`` of the range queries on the histogram (or estimate) ``x``."""
    v = check_finite_array(x, "x", ndim=1)
    q = _check_queries(queries, v.size)
    P = np.concatenate(([0.0], np.cumsum(v)))
    return P[q[:, 1]] - P[q[:, 0]]


def scaled_error(queries, x_true, x_est, *, scale: float | None = None) -> float:
    """DPBench scaled per-query error ``mean |W x - W x_hat| / scale``.

    ``scale`` defaults to the number of records ``sum(x_true)``.

    Examples
    --------
    >>> scaled_error(prefix_workload(2), [5, 5], [6, 5])
    0.1
    """
    xt = check_finite_array(x_true, "x_true", ndim=1)
    xe = check_finite_array(x_est, "x_est", ndim=1)
    if xt.size != xe.size:
        raise ParameterError(f"x_est has {xe.size} bins, x_true has {xt.size}")
    s = float(xt.sum()) if scale is None else float(scale)
    if s <= 0:
        raise ParameterError(f"scale must be > 0, got {s}")
    return float(np.mean(np.abs(answer(queries, xt) - answer(queries, xe))) / s)


def resample_to_scale(shape_counts, scale: int, *, rng=None) -> np.ndarray:
    """Draw a histogram of ``scale`` records from the shape (normalised counts) of a dataset.

    Examples
    --------
    >>> from veil.random import make_rng
    >>> int(resample_to_scale([1, 3, 0], 1000, rng=make_rng(seed=0)).sum())
    1000
    """
    c = check_counts(shape_counts, "shape_counts")
    if c.sum() == 0:
        raise ParameterError("shape_counts must have at least one record")
    scale = check_int(scale, "scale", minimum=1)
    return make_rng(rng).multinomial(scale, c / c.sum()).astype(np.int64)
