"""Partition kernels: the V-optimal dynamic program and minimum-error grouping.

Two dynamic programs carry the histogram mechanisms:

* :func:`voptimal` -- the V-optimal histogram (Jagadish et al. 1998) over bins
  **in domain order**: split ``x[0:n]`` into ``k`` contiguous buckets so that the
  total within-bucket sum of squared errors (SSE) is smallest,
  ``D[k, j] = min_{i<j} D[k-1, i] + SSE(i, j)``. Used by NoiseFirst and
  StructureFirst. The within-bucket SSE in domain order does **not** satisfy the
  quadrangle inequality, so Knuth or divide-and-conquer speed-ups are not exact
  here. The compiled kernel instead prunes with a bound that is provably exact:
  SSE is superadditive over adjacent intervals
  (``SSE(i', j) >= SSE(i', i) + SSE(i, j)``), hence for every ``i' < i``
  ``D[k-1, i'] + SSE(i', j) >= D[k, i] + SSE(i, j)``; scanning ``i`` downwards we
  stop as soon as ``D[k, i] + SSE(i, j)`` reaches the best cost found.
* :func:`sorted_grouping` -- minimum-error grouping of **sorted** values into
  contiguous groups (sort-and-group, AHP). Over sorted values the SSE is a Monge
  cost (and so is SSE plus any convex function of the group size), so the
  optimal split points are monotone and divide-and-conquer (fixed ``k``) or the
  monotone-argmin search (free ``k``) is exact.

Every kernel has a compiled version (numba, when installed) and a vectorized
numpy version; :func:`voptimal_reference` is the straightforward numpy
implementation of the same recurrence kept as the benchmark baseline.
"""

from __future__ import annotations

import numpy as np

from ..errors import InstanceTooLargeError, ParameterError
from ..validation import check_choice, check_finite_array, check_int
from ._compile import HAVE_NUMBA, njit, use_compiled

__all__ = [
    "prefix_sums",
    "bucket_sse",
    "partition_cost",
    "voptimal",
    "voptimal_table",
    "voptimal_reference",
    "backtrack",
    "sorted_grouping",
    "edges_to_labels",
    "HAVE_NUMBA",
]

_ENGINES = ("auto", "numba", "numpy")


def prefix_sums(x) -> tuple[np.ndarray, np.ndarray]:
    """Return ``(P, P2)``: prefix sums of ``x`` and of ``x**2`` (float64, ``P[0] = 0``).

    Values are centred on their mean first; SSE is shift-invariant and the
    centring keeps the cancellation in ``P2[j] - P2[i] - (P[j]-P[i])**2/m`` small.
    """
    v = np.asarray(x, dtype=np.float64)
    v = v - (v.mean() if v.size else 0.0)
    P = np.concatenate(([0.0], np.cumsum(v)))
    P2 = np.concatenate(([0.0], np.cumsum(v * v)))
    return P, P2


def bucket_sse(x, edges) -> np.ndarray:
    """SSE of every bucket ``x[edges[t]:edges[t+1]]`` around its own mean.

    Examples
    --------
    >>> bucket_sse([1, 3, 10, 10], [0, 2, 4]).tolist()
    [2.0, 0.0]
    """
    P, P2 = prefix_sums(x)
    e = np.asarray(edges, dtype=np.int64)
    m = np.diff(e).astype(np.float64)
    s = P[e[1:]] - P[e[:-1]]
    return np.maximum(P2[e[1:]] - P2[e[:-1]] - s * s / m, 0.0)


def partition_cost(x, edges) -> float:
    """Total within-bucket SSE of the partition given by ``edges`` (0 = e0 < ... < ek = n)."""
    return float(bucket_sse(x, edges).sum())


def edges_to_labels(edges, n: int) -> np.ndarray:
    """Bucket index of every bin for the partition ``edges`` (length ``n``)."""
    e = np.asarray(edges, dtype=np.int64)
    return np.repeat(np.arange(e.size - 1), np.diff(e))[:n]


# --------------------------------------------------------------------------- V-optimal kernels

@njit
def _vopt_numba(P, P2, K, D, last, A, lam):  # pragma: no cover - compiled
    n = P.size - 1
    gbest = np.inf
    roll = D.shape[0] == 2
    for j in range(n + 1):
        D[0, j] = np.inf
    D[0, 0] = 0.0
    last[0] = np.inf if n > 0 else 0.0
    # layer 1: one bucket
    r1 = 1
    D[r1, 0] = np.inf
    for j in range(1, n + 1):
        s = P[j]
        v = P2[j] - s * s / j
        D[r1, j] = v if v > 0.0 else 0.0
        A[1, j] = 0
    last[1] = D[r1, n]
    for k in range(2, K + 1):
        if lam > 0.0:
            g = last[k - 1] + lam * (k - 1)
            if g < gbest:
                gbest = g
            if lam * k >= gbest:  # no k' >= k can beat the best penalised cost
                for kk in range(k, K + 1):
                    last[kk] = np.inf
                return k - 1
        cur = k % 2 if roll else k
        prv = (k - 1) % 2 if roll else k - 1
        for j in range(k):
            D[cur, j] = np.inf
        for j in range(k, n + 1):
            best = np.inf
            arg = j - 1
            pj = P[j]
            p2j = P2[j]
            i = j - 1
            while i >= k - 1:
                m = j - i
                s = pj - P[i]
                sse = p2j - P2[i] - s * s / m
                if sse < 0.0:
                    sse = 0.0
                c = D[prv, i] + sse
                if c < best:
                    best = c
                    arg = i
                # exact pruning: every i' < i costs at least D[k, i] + SSE(i, j)
                if i >= k and D[cur, i] + sse >= best:
                    break
                i -= 1
            D[cur, j] = best
            A[k, j] = arg
        last[k] = D[cur, n]
    return K


def _vopt_numpy(P, P2, K, D, last, A, lam=0.0, block: int = 512) -> int:
    """Vectorized per layer (blocks of right ends ``j``); same recurrence, no pruning."""
    n = P.size - 1
    roll = D.shape[0] == 2
    D[0, :] = np.inf
    D[0, 0] = 0.0
    j = np.arange(1, n + 1)
    r1 = 1
    D[r1, 0] = np.inf
    D[r1, 1:] = np.maximum(P2[1:] - P[1:] ** 2 / j, 0.0)
    A[1, 1:] = 0
    last[0] = np.inf if n > 0 else 0.0
    last[1] = D[r1, n]
    gbest = np.inf
    for k in range(2, K + 1):
        if lam > 0.0:
            gbest = min(gbest, last[k - 1] + lam * (k - 1))
            if lam * k >= gbest:
                last[k:] = np.inf
                return k - 1
        cur = k % 2 if roll else k
        prv = (k - 1) % 2 if roll else k - 1
        D[cur, :k] = np.inf
        dprev = D[prv]
        for j0 in range(k, n + 1, block):
            jj = np.arange(j0, min(n + 1, j0 + block))
            ii = np.arange(k - 1, jj[-1])  # candidate split points
            m = jj[None, :] - ii[:, None]
            valid = m > 0
            mm = np.where(valid, m, 1).astype(np.float64)
            s = P[jj][None, :] - P[ii][:, None]
            sse = np.maximum(P2[jj][None, :] - P2[ii][:, None] - s * s / mm, 0.0)
            c = np.where(valid, dprev[ii][:, None] + sse, np.inf)
            a = np.argmin(c, axis=0)
            D[cur, jj] = c[a, np.arange(jj.size)]
            A[k, jj] = ii[a]
        last[k] = D[cur, n]
    return K


def _check_engine(engine: str) -> str:
    engine = check_choice(engine, "engine", _ENGINES)
    if engine == "numba" and not HAVE_NUMBA:
        raise ParameterError("engine='numba' requested but numba is not installed "
                             "(pip install numba), or VEIL_NO_NUMBA is set")
    return engine


#: The most cells of the V-optimal dynamic program's tables (int32 choices plus float64
#: costs: about 12 bytes a cell, so 1.6 GB): NoiseFirst keeps up to n buckets, so this
#: holds n up to about 11,000 bins (20,000 took 1.8 GB and 24 s; 65,536 asked for 16 GiB)
VOPT_MAX_CELLS = 2 ** 27


def voptimal_table(x, k_max: int, *, full: bool = True, engine: str = "auto",
                   size_penalty: float = 0.0):
    """Run the V-optimal dynamic program for every bucket count up to ``k_max``.

    Parameters
    ----------
    x : array_like, shape (n,)
        Values in domain order (true or noisy counts).
    k_max : int
        Largest number of buckets, ``1 <= k_max <= n``.
    full : bool
        Keep the whole cost table ``D`` (shape ``(k_max+1, n+1)``); with
        ``False`` only two rows are kept (memory O(n) besides the split table).
    engine : {'auto', 'numba', 'numpy'}
    size_penalty : float
        ``lam > 0`` asks only for the ``k`` minimising ``last[k] + lam * k``
        (NoiseFirst's choice of k): layers stop as soon as ``lam * k`` alone
        reaches the best penalised cost so far -- exact, since ``last[k] >= 0``.
        Layers not computed have ``last[k] = inf``.

    Returns
    -------
    D : ndarray
        ``D[k, j]`` = least SSE of ``x[:j]`` in exactly ``k`` buckets (``inf``
        when ``j < k``); two rolling rows when ``full=False``.
    last : ndarray, shape (k_max+1,)
        ``last[k] = D[k, n]``, the optimal SSE with ``k`` buckets.
    A : ndarray of int32, shape (k_max+1, n+1)
        Optimal last split point, for :func:`backtrack`.

    Examples
    --------
    >>> D, last, A = voptimal_table([1, 1, 5, 5, 9], 3)
    >>> last.round(3).tolist()
    [inf, 44.8, 10.667, 0.0]
    """
    v = check_finite_array(x, "x", ndim=1)
    n = v.size
    k_max = check_int(k_max, "k", minimum=1)
    if k_max > n:
        raise ParameterError(f"k must be <= the number of bins n={n}, got {k_max}")
    engine = _check_engine(engine)
    cells = (k_max + 1) * (n + 1) * (2 if full else 1)
    if cells > VOPT_MAX_CELLS:  # NoiseFirst at 65,536 bins asked for 16 GiB (2^20: 4 TiB)
        raise InstanceTooLargeError(
            f"the V-optimal table for {n:,} bins and up to {k_max:,} buckets has {cells:.3g} "
            f"cells, above {VOPT_MAX_CELLS:.3g} (several GB): use fewer bins, or a method "
            "without it (hb, dawa, hdmm, identity)")
    P, P2 = prefix_sums(v)
    D = np.empty((k_max + 1 if full else 2, n + 1), dtype=np.float64)
    last = np.empty(k_max + 1, dtype=np.float64)
    A = np.zeros((k_max + 1, n + 1), dtype=np.int32)
    lam = float(size_penalty)
    if use_compiled(engine, float(n) * n * min(k_max, 64)):
        _vopt_numba(P, P2, k_max, D, last, A, lam)
    else:
        _vopt_numpy(P, P2, k_max, D, last, A, lam)
    return D, last, A


def backtrack(A: np.ndarray, k: int, n: int) -> np.ndarray:
    """Bucket edges ``[0, e1, ..., n]`` of the optimal ``k``-bucket partition from a split table."""
    edges = np.empty(k + 1, dtype=np.int64)
    edges[k] = n
    j = n
    for kk in range(k, 0, -1):  # k steps, not per element
        j = int(A[kk, j])
        edges[kk - 1] = j
    return edges


def voptimal(x, k: int, *, engine: str = "auto") -> tuple[np.ndarray, float]:
    """Optimal ``k``-bucket partition of ``x`` in domain order (V-optimal histogram).

    Returns
    -------
    edges : ndarray of int64, shape (k+1,)
        ``0 = e0 < e1 < ... < ek = n``; bucket ``t`` is ``x[e_t:e_{t+1}]``.
    cost : float
        Its total within-bucket SSE (the minimum over all partitions).

    Examples
    --------
    >>> edges, cost = voptimal([1, 1, 5, 5, 9], 3)
    >>> edges.tolist(), round(cost, 9)
    ([0, 2, 4, 5], 0.0)
    """
    _, last, A = voptimal_table(x, k, full=False, engine=engine)
    n = np.asarray(x).size
    return backtrack(A, k, n), float(last[k])


def voptimal_reference(x, k: int) -> tuple[np.ndarray, float]:
    """Straightforward numpy V-optimal DP (one vector operation per (k, j)); the benchmark baseline.

    Same recurrence and result as :func:`voptimal`; kept simple on purpose.
    """
    v = check_finite_array(x, "x", ndim=1)
    n = v.size
    k = check_int(k, "k", minimum=1, maximum=n)
    P, P2 = prefix_sums(v)
    D = np.full((k + 1, n + 1), np.inf)
    A = np.zeros((k + 1, n + 1), dtype=np.int64)
    jj = np.arange(1, n + 1)
    D[1, 1:] = np.maximum(P2[1:] - P[1:] ** 2 / jj, 0.0)
    for kk in range(2, k + 1):
        for j in range(kk, n + 1):
            i = np.arange(kk - 1, j)
            s = P[j] - P[i]
            c = D[kk - 1, i] + np.maximum(P2[j] - P2[i] - s * s / (j - i), 0.0)
            a = int(np.argmin(c))
            D[kk, j] = c[a]
            A[kk, j] = i[a]
    return backtrack(A, k, n), float(D[k, n])


# --------------------------------------------------------------------------- sorted grouping

@njit
def _free_groups_numba(P, P2, alpha, beta, gamma, E, A):  # pragma: no cover - compiled
    n = P.size - 1
    E[0] = 0.0
    lo = 0
    for j in range(1, n + 1):
        best = np.inf
        arg = lo
        for i in range(lo, j):
            m = j - i
            s = P[j] - P[i]
            sse = P2[j] - P2[i] - s * s / m
            if sse < 0.0:
                sse = 0.0
            c = E[i] + sse + alpha * m + beta / m + gamma
            if c < best:
                best = c
                arg = i
        E[j] = best
        A[j] = arg
        lo = arg  # leftmost argmins are monotone for Monge costs


@njit
def _k_groups_numba(P, P2, K, alpha, beta, gamma, D, A):  # pragma: no cover - compiled
    n = P.size - 1
    for j in range(n + 1):
        D[0, j] = np.inf
    D[0, 0] = 0.0
    stack = np.empty((4 * (n + 2), 4), dtype=np.int64)
    for k in range(1, K + 1):
        for j in range(k):
            D[k, j] = np.inf
        # divide and conquer over right ends j in [k, n], split points in [k-1, n-1]
        top = 0
        stack[0, 0] = k
        stack[0, 1] = n
        stack[0, 2] = k - 1
        stack[0, 3] = n - 1
        top = 1
        while top > 0:
            top -= 1
            jlo = stack[top, 0]
            jhi = stack[top, 1]
            olo = stack[top, 2]
            ohi = stack[top, 3]
            if jlo > jhi:
                continue
            mid = (jlo + jhi) // 2
            best = np.inf
            arg = olo
            hi = ohi if ohi < mid - 1 else mid - 1
            for i in range(olo, hi + 1):
                m = mid - i
                s = P[mid] - P[i]
                sse = P2[mid] - P2[i] - s * s / m
                if sse < 0.0:
                    sse = 0.0
                c = D[k - 1, i] + sse + alpha * m + beta / m + gamma
                if c < best:
                    best = c
                    arg = i
            D[k, mid] = best
            A[k, mid] = arg
            stack[top, 0] = jlo
            stack[top, 1] = mid - 1
            stack[top, 2] = olo
            stack[top, 3] = arg
            top += 1
            stack[top, 0] = mid + 1
            stack[top, 1] = jhi
            stack[top, 2] = arg
            stack[top, 3] = ohi
            top += 1


def _group_cost_np(P, P2, i, j, alpha, beta, gamma):
    m = (j - i).astype(np.float64)
    s = P[j] - P[i]
    return np.maximum(P2[j] - P2[i] - s * s / m, 0.0) + alpha * m + beta / m + gamma


def _free_groups_numpy(P, P2, alpha, beta, gamma, E, A) -> None:
    n = P.size - 1
    E[0] = 0.0
    lo = 0
    for j in range(1, n + 1):  # one vector operation per right end
        i = np.arange(lo, j)
        c = E[i] + _group_cost_np(P, P2, i, np.full(i.size, j), alpha, beta, gamma)
        a = int(np.argmin(c))
        E[j] = c[a]
        A[j] = i[a]
        lo = int(i[a])


def _k_groups_numpy(P, P2, K, alpha, beta, gamma, D, A) -> None:
    n = P.size - 1
    D[0, :] = np.inf
    D[0, 0] = 0.0
    for k in range(1, K + 1):
        D[k, :k] = np.inf
        jj = np.arange(k, n + 1)
        ii = np.arange(k - 1, n)
        jm = jj[None, :]
        im = ii[:, None]
        valid = jm > im
        cost = _group_cost_np(P, P2, im, np.where(valid, jm, im + 1), alpha, beta, gamma)
        c = np.where(valid, D[k - 1, ii][:, None] + cost, np.inf)
        a = np.argmin(c, axis=0)
        D[k, jj] = c[a, np.arange(jj.size)]
        A[k, jj] = ii[a]


def sorted_grouping(values, *, k: int | None = None, size_linear: float = 0.0,
                    size_inverse: float = 0.0, per_group: float = 0.0,
                    engine: str = "auto") -> tuple[np.ndarray, float]:
    """Minimum-error grouping of sorted values into contiguous groups.

    The cost of a group of ``m`` consecutive sorted values is
    ``SSE + size_linear * m + size_inverse / m + per_group``; with
    ``size_inverse >= 0`` the added term is convex in ``m`` so the total cost is
    Monge and the monotone-split-point speed-ups used here are exact.

    Parameters
    ----------
    values : array_like, shape (n,)
        Values sorted in non-decreasing order (checked).
    k : int, optional
        Exact number of groups (divide-and-conquer per layer, O(k n log n)).
        ``None`` lets the number of groups be chosen by the cost (O(n^2) worst case).
    size_linear, size_inverse, per_group : float
        Terms of the group cost (see above).
    engine : {'auto', 'numba', 'numpy'}

    Returns
    -------
    edges : ndarray of int64
        Group boundaries in the sorted order, ``0 = e0 < ... = n``.
    cost : float

    Examples
    --------
    >>> edges, cost = sorted_grouping([1, 1, 2, 10, 11], k=2)
    >>> edges.tolist()
    [0, 3, 5]
    """
    v = check_finite_array(values, "values", ndim=1)
    if (np.diff(v) < 0).any():
        raise ParameterError("values must be sorted in non-decreasing order for sorted_grouping")
    if size_inverse < 0:
        raise ParameterError(f"size_inverse must be >= 0 (convex size term), got {size_inverse}")
    n = v.size
    engine = _check_engine(engine)
    P, P2 = prefix_sums(v)
    a_, b_, g_ = float(size_linear), float(size_inverse), float(per_group)
    if k is None:
        E = np.empty(n + 1)
        A = np.zeros(n + 1, dtype=np.int64)
        fast = use_compiled(engine, float(n) * n)
        (_free_groups_numba if fast else _free_groups_numpy)(P, P2, a_, b_, g_, E, A)
        cuts = [n]
        j = n
        while j > 0:  # number of groups steps
            j = int(A[j])
            cuts.append(j)
        return np.asarray(cuts[::-1], dtype=np.int64), float(E[n])
    k = check_int(k, "k", minimum=1)
    if k > n:
        raise ParameterError(f"k must be <= the number of values n={n}, got {k}")
    D = np.empty((k + 1, n + 1))
    A = np.zeros((k + 1, n + 1), dtype=np.int32)
    fast = use_compiled(engine, float(n) * n * k)
    (_k_groups_numba if fast else _k_groups_numpy)(P, P2, k, a_, b_, g_, D, A)
    return backtrack(A, k, n), float(D[k, n])
