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
           "answer", "scaled_error", "resample_to_scale", "WORKLOADS", "RangeWorkload"]

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


# --------------------------------------------------------------------------- implicit workloads

class RangeWorkload:
    """A public 1-D range workload with implicit Gram-matrix products.

    Workload-aware mechanisms (HDMM, DAWA's GreedyH stage) need products with the
    Gram matrix ``G = W^T W`` of the query matrix ``W`` (one row per range, ones on
    the range). ``G`` is never formed: prefix queries, all ranges and an explicit
    set of ranges each have O(n + q) products through prefix sums.

    Parameters
    ----------
    kind : {'prefix', 'all-range', 'ranges'}
    n : int
        Number of bins.
    queries : array (q, 2), optional
        Half-open ranges ``[lo, hi)`` (required for ``kind='ranges'``; prefix is
        stored as its ``n`` explicit ranges).

    Examples
    --------
    >>> w = RangeWorkload.from_spec("prefix", 4)
    >>> w.size, w.gram_diag().tolist()
    (4, [4.0, 3.0, 2.0, 1.0])
    """

    KINDS = ("prefix", "all-range", "ranges")

    def __init__(self, kind: str, n: int, queries=None):
        self.kind = check_choice(kind, "workload", self.KINDS)
        self.n = check_int(n, "n", minimum=1)
        if self.kind == "prefix":
            queries = prefix_workload(self.n)
        if self.kind == "all-range":
            self.queries = None
            self.size = self.n * (self.n + 1) // 2
        else:
            if queries is None:
                raise ParameterError("workload 'ranges' needs queries, an array (q, 2) of [lo, hi)")
            self.queries = _check_queries(queries, self.n)
            self.size = int(self.queries.shape[0])

    @classmethod
    def from_spec(cls, spec, n: int) -> "RangeWorkload":
        """``'prefix'``, ``'all-range'``, a RangeWorkload, or an array of ranges ``[lo, hi)``."""
        if isinstance(spec, RangeWorkload):
            if spec.n != n:
                raise ParameterError(f"workload is over {spec.n} bins, the histogram has {n}")
            return spec
        if isinstance(spec, str):
            if spec == "ranges":
                raise ParameterError("give the ranges themselves (an array (q, 2)) for a "
                                     "user range set")
            return cls(spec, n)
        return cls("ranges", n, spec)

    def key(self) -> tuple:
        """A hashable fingerprint (kind, n, digest of the ranges) for caching strategies."""
        if self.queries is None or self.kind == "prefix":
            return (self.kind, self.n)
        import hashlib

        return (self.kind, self.n, hashlib.sha1(np.ascontiguousarray(self.queries).tobytes())
                .hexdigest())

    def describe(self) -> str:
        return {"prefix": f"all {self.n} prefix ranges",
                "all-range": f"all {self.size} ranges",
                "ranges": f"{self.size} given ranges"}[self.kind]

    # -- products with G -------------------------------------------------------------------
    def gram_rows(self, V) -> np.ndarray:
        """``V @ G`` for ``V`` of shape ``(p, n)`` (``G`` is symmetric)."""
        V = np.atleast_2d(np.asarray(V, dtype=np.float64))
        n = self.n
        if self.kind == "prefix":
            C = np.cumsum(V, axis=1)
            return np.cumsum(C[:, ::-1], axis=1)[:, ::-1]
        if self.kind == "all-range":
            # G[i, j] = (min(i, j) + 1) (n - max(i, j))
            i = np.arange(n, dtype=np.float64)
            left = np.cumsum(V * (i + 1.0), axis=1)              # sum_{j <= i} (j+1) v_j
            right = np.cumsum((V * (n - i))[:, ::-1], axis=1)[:, ::-1]  # sum_{j >= i} (n-j) v_j
            right = np.concatenate((right[:, 1:], np.zeros((V.shape[0], 1))), axis=1)
            return (n - i) * left + (i + 1.0) * right
        lo, hi = self.queries[:, 0], self.queries[:, 1]
        P = np.concatenate((np.zeros((V.shape[0], 1)), np.cumsum(V, axis=1)), axis=1)
        U = P[:, hi] - P[:, lo]                                     # W v for every row
        D = np.zeros((V.shape[0], n + 1))
        np.add.at(D.T, lo, U.T)
        np.add.at(D.T, hi, -U.T)
        return np.cumsum(D[:, :n], axis=1)                          # W^T (W v)

    def gram_diag(self) -> np.ndarray:
        """The diagonal of ``G`` (how many queries contain each bin)."""
        n = self.n
        i = np.arange(n, dtype=np.float64)
        if self.kind == "prefix":
            return n - i
        if self.kind == "all-range":
            return (i + 1.0) * (n - i)
        D = np.zeros(n + 1)
        np.add.at(D, self.queries[:, 0], 1.0)
        np.add.at(D, self.queries[:, 1], -1.0)
        return np.cumsum(D[:n])

    def block_quadratic(self, v, starts) -> np.ndarray:
        """``v_s^T G v_s`` for every segment ``s`` of ``v`` (cross terms between segments dropped).

        ``starts`` are the first bins of consecutive segments covering ``0..n-1``
        (``starts[0] = 0``). Equals ``sum_q (sum of v over q and s)^2`` per segment.
        """
        v = np.asarray(v, dtype=np.float64)
        st = np.asarray(starts, dtype=np.int64)
        n = self.n
        ends = np.concatenate((st[1:], [n]))
        seg = np.repeat(np.arange(st.size), ends - st)             # segment of every bin
        if self.kind == "all-range":
            # sum_{i<=j in s} (2 - [i=j]) (i+1)(n-j) v_i v_j, with a segmented cumsum
            i = np.arange(n, dtype=np.float64)
            a = v * (i + 1.0)
            ca = np.cumsum(a)
            base = np.concatenate(([0.0], ca))[st][seg]             # sum before the segment
            within = ca - base                                      # sum_{i<=j, i in s} (i+1) v_i
            terms = 2.0 * (n - i) * v * within - (i + 1.0) * (n - i) * v * v
            return np.bincount(seg, weights=terms, minlength=st.size)
        P = np.concatenate(([0.0], np.cumsum(v)))
        tot = P[ends] - P[st]
        lo, hi = self.queries[:, 0], self.queries[:, 1]
        s_lo, s_hi = seg[lo], seg[hi - 1]
        out = np.zeros(st.size)
        same = s_lo == s_hi
        part = P[hi[same]] - P[lo[same]]
        np.add.at(out, s_lo[same], part * part)
        d = ~same
        left = P[ends[s_lo[d]]] - P[lo[d]]                          # partial first segment
        right = P[hi[d]] - P[st[s_hi[d]]]                           # partial last segment
        np.add.at(out, s_lo[d], left * left)
        np.add.at(out, s_hi[d], right * right)
        # segments strictly between the two ends are covered whole
        cover = np.zeros(st.size + 1)
        np.add.at(cover, s_lo[d] + 1, 1.0)
        np.add.at(cover, s_hi[d], -1.0)
        return out + np.cumsum(cover[:-1]) * tot * tot

    def dense_gram(self) -> np.ndarray:
        """``G`` as a dense matrix (tests and small domains only)."""
        return self.gram_rows(np.eye(self.n))
