"""DAWA (Li, Hay, Miklau, Wang, PVLDB 2014): private L1 partition, then GreedyH on the buckets.

Stage 1, the **L1 partition** (``partition_fraction`` = 0.25 of epsilon, the
authors' ratio): the candidate buckets are all intervals whose length is a
power of two, at every offset (the authors' fast variant, the one DPBench
runs). A bucket ``I`` costs its L1 deviation from its own mean,
``dev(I) = sum_{i in I} |x_i - mean_I|`` (the bias of publishing the mean),
plus ``1/eps2``, the expected absolute noise of the bucket's measured total.
Every candidate's cost gets independent Laplace noise, and the partition of
least total noisy cost is found exactly by a shortest path over the intervals
(O(n log n) candidates).

Stage 2, **GreedyH** (``eps2 = epsilon - eps1``): a binary hierarchy over the
buckets; bottom up, each node chooses the share of the budget it keeps for its
own total (the rest is passed to its subtree) on a grid of 100 values, by the
workload error of the node's sub-strategy (Sherman-Morrison update of the
children's ``(A^T A)^{-1}``); then every node with a positive weight ``w`` is
measured (its total with noise of scale ``1 / (w eps2)``) and the bucket totals
are the least-squares estimate, spread uniformly over each bucket's bins.

Privacy of stage 1 (why the noise scale is ``4 / eps1``). Let ``x, x'`` differ
by one record in bin ``j`` and let ``P`` be any partition. For every interval
``I``, ``D_I = dev_{x'}(I) - dev_x(I)`` satisfies ``|D_I| <= 2 (1 - 1/|I|) < 2``
(the changed bin moves by 1 and the mean by ``1/|I|``) and ``D_I = 0`` unless
``j`` is in ``I``. Exactly one bucket ``I*`` of ``P`` contains ``j``; let
``d = min_{I contains j} D_I``. Shift the noise of ``I*`` alone by
``d - D_{I*}`` (``|d - D_{I*}| < 4``). Under ``x'`` with the shifted noise the
total of ``P`` changes by ``d``, and the total of any other partition changes
by the ``D`` of its own bucket containing ``j``, which is ``>= d``: so ``P``
still has the least noisy cost. The shift moves one Laplace(``4/eps1``)
coordinate by less than 4, which changes its density by less than
``e^eps1``; hence ``Pr_x[P] <= e^eps1 Pr_x'[P]`` (and symmetrically). The
published DAWA code adds noise of about half this scale to non-singleton
buckets only and clips noisy costs at 0; we do not use that argument (one
shift cannot compensate clipped or noise-free candidates), so veil's noise is
twice as large and every candidate, singletons included, is noised.

Measured and not adopted (2026-12-07): the deviation from the *median*,
``min_c sum |x_i - c|``, moves by at most 1 under one record (for each ``c`` one
term moves), so the same shift argument gives ``eps1`` at ``2/eps1``, the
authors' scale. On the DPBench protocol (18 histograms, n = 1024, 10 trials, the
same penalty schedule in noise units) DAWA's error was 0.974x (prefix) and 0.949x
(random ranges) this cost's over all cells, but 1.06x and 1.13x at eps N = 100,
where the median's cost collapses the partition on six histograms; refitted on
those rows, ``auto``'s held-out figures fell (prefix 97.2 % -> 93.5 % of cells
within 1.15x of the best, worst 1.74 -> 4.81, and 1.08x Identity in one cell),
and DAWA-2D's gains (0.96x) moved fewer map settings within 1.15x of the best.
docs/benchmarks.md, "DAWA's partition cost: the median, measured and not
adopted", has the figures and the commit that has the median's kernel.

Without the clipping, the least noisy cost favours partitions into many small
buckets whose noise happened to be negative (a minimum over many noisy paths),
so each bucket also pays a public penalty of ``SELECTION_PENALTY`` (2.5) times
the noise scale: ``bucket_cost = 1/eps2 + 2.5 * 4/eps1``. The penalty is a
constant, so the privacy argument above is unchanged. Its value was calibrated
on the 18 DPBench histograms at n = 1024 (prefix and 2000 random ranges, eps in
{0.01, 0.1, 1, 10}, scales 10^3, 10^5, 10^7, 3 trials, penalties 0-4 times the
noise scale; ``benchmarks/histograms.py --calibrate-dawa``): 2.5 had the lowest
error on average over the settings (1.13x of the best penalty per setting for
prefix ranges, 1.17x for random ranges); the best penalty falls from 4 at
eps x scale = 10 to about 2 above 10^4 (docs/benchmarks.md).

The best penalty depends on the signal ``s = epsilon * N / n`` (records per bin
in units of ``1/epsilon``): where the data is lost in the noise, the least noisy
cost is a minimum over many partitions that differ mainly in noise, and a
larger penalty (fewer, longer buckets, up to the uniform histogram) is better;
where the signal is high, a smaller one keeps the data's real boundaries. When
a public bound ``N`` on the number of records is given (``records_bound``),
the penalty follows :data:`PENALTY_SCHEDULE`, a step function of ``log10(s)``
fitted on the same 18 histograms (penalties 2-8 at ``eps * scale`` from 3.16 to
10^8, 3 trials; a step function that does not increase with the signal,
fitted jointly on both workloads, steps halfway between levels; 3-fold
cross-validation by dataset; ``benchmarks/histograms.py --fit-dawa-penalty``,
docs/benchmarks.md): 6 below ``log10(s) = -2.39``, 5 below -1.64, 3 below
-0.64, 2.5 below 0.49, then 2. ``N`` is public (or a DP estimate paid for
elsewhere, as ``auto`` does), so the penalty is still a public constant of the
release and the privacy argument is unchanged. Without ``N``, the constant
``SELECTION_PENALTY`` is used. The schedule was fitted at n = 1024 and checked
at n = 64, 256 and 4096 (better than the constant at each); it is applied up to
``SCHEDULE_MAX_N`` = 4096 bins only: on the Hilbert-ordered 256 x 256 maps
(n = 65536) it was up to 6.0x worse than the constant at low signal, where the
per-bin signal is small but the data's total (``eps N``) is not.

Why the whole mechanism is eps-DP: stage 1 is ``eps1``-DP (above) and the
partition is its only output; GreedyH's weights depend only on the partition
and the public workload; along any root-to-leaf path of the hierarchy the
weights sum to 1, so measuring node ``v``'s total with noise ``1/(w_v eps2)``
costs ``w_v eps2`` per level of the path and ``eps2`` in total (sequential
composition along the path, parallel across disjoint nodes); least squares and
spreading are post-processing. Total: ``eps1 + eps2 = epsilon``. The noise is
float64 Laplace (the costs are real numbers).
"""

from __future__ import annotations

import math

import numpy as np

from ..release import Release
from ..validation import check_choice, check_nonnegative, check_positive, check_probability
from ._common import NEIGHBOURS, as_budget, as_counts, as_rng, bucket_sums, spread
from ._compile import njit, use_compiled
from .workload import RangeWorkload

__all__ = ["dawa", "PARTITION_NOISE", "SELECTION_PENALTY", "PENALTY_SCHEDULE", "SCHEDULE_MAX_N",
           "selection_penalty", "l1_partition",
           "interval_deviations", "best_partition", "greedy_h",
           "GreedyHStrategy", "tree_gls"]

#: the grid of GreedyH (the share a node keeps for itself is a multiple of 1/GRID)
GRID = 100
#: nodes per block when GreedyH scores a level's nodes on the grid (bounds its memory)
_GRID_CHUNK = 4096

#: the partition's Laplace noise scale times eps1: twice the bound 2 on how far one record
#: moves one interval's cost (the module docstring's proof)
PARTITION_NOISE = 4.0

#: extra cost per bucket, in units of the partition's noise scale (see the module docstring)
SELECTION_PENALTY = 2.5

#: the penalty when a public records bound ``N`` is known: ``(upper bound on log10(s), penalty)``
#: in order, ``s = epsilon * N / n`` (fitted offline, see the module docstring)
PENALTY_SCHEDULE = ((-2.3856, 6.0), (-1.6353, 5.0), (-0.6353, 3.0), (0.4897, 2.5),
                    (math.inf, 2.0))

#: the schedule is used up to this many bins (the sizes it was measured at: 64-4096)
SCHEDULE_MAX_N = 4096


def selection_penalty(*, epsilon: float, records_bound: float | None, n: int,
                      schedule=None) -> float:
    """The selection penalty DAWA uses (units of the partition's noise scale ``4/eps1``).

    ``records_bound`` must be public (or a DP estimate): the penalty is then a
    public constant, which the privacy argument of stage 1 allows. Without it, or
    above :data:`SCHEDULE_MAX_N` bins, :data:`SELECTION_PENALTY`.

    Examples
    --------
    >>> selection_penalty(epsilon=0.01, records_bound=1000, n=1024)
    5.0
    >>> selection_penalty(epsilon=1.0, records_bound=10**5, n=1024)
    2.0
    >>> selection_penalty(epsilon=1.0, records_bound=None, n=1024)
    2.5
    >>> selection_penalty(epsilon=0.01, records_bound=1000, n=65536)
    2.5
    """
    if records_bound is None or int(n) > SCHEDULE_MAX_N:
        return SELECTION_PENALTY
    signal = float(epsilon) * float(records_bound) / int(n)
    ls = math.log10(signal) if signal > 0 else -math.inf
    for upper, penalty in (PENALTY_SCHEDULE if schedule is None else schedule):
        if ls < upper:
            return float(penalty)
    raise ValueError("penalty schedule has no open last interval")  # pragma: no cover


# --------------------------------------------------------------------------- stage 1
@njit
def _deviations_numba(x, lengths):  # pragma: no cover - compiled
    n = x.size
    out = np.full((lengths.size, n), np.inf)
    for k in range(lengths.size):
        m = lengths[k]
        s = 0.0
        for i in range(m):
            s += x[i]
        for i in range(n - m + 1):
            if i > 0:
                s += x[i + m - 1] - x[i - 1]
            mu = s / m
            d = 0.0
            for t in range(i, i + m):
                v = x[t] - mu
                d += v if v >= 0.0 else -v
            out[k, i] = d
    return out


@njit
def _deviations_rank_numba(x, lengths, uniq):  # pragma: no cover - compiled
    # dev(I) = 2 * sum_{t in I, x_t > mu} (x_t - mu) (the deviations sum to 0), from a
    # Fenwick tree over the ranks of the values in the sliding window: O(n log V) per length
    n = x.size
    V = uniq.size
    rank = np.empty(n, dtype=np.int64)
    for t in range(n):                      # 1-based rank of x[t] among the distinct values
        lo, hi = 0, V
        while lo < hi:
            mid = (lo + hi) // 2
            if uniq[mid] < x[t]:
                lo = mid + 1
            else:
                hi = mid
        rank[t] = lo + 1
    out = np.full((lengths.size, n), np.inf)
    cnt = np.zeros(V + 1, dtype=np.int64)
    tot = np.zeros(V + 1)
    for k in range(lengths.size):
        m = lengths[k]
        if m > n:
            break
        cnt[:] = 0
        tot[:] = 0.0
        s = 0.0
        for t in range(m):
            s += x[t]
            j = rank[t]
            while j <= V:
                cnt[j] += 1
                tot[j] += x[t]
                j += j & (-j)
        for i in range(n - m + 1):
            if i > 0:
                a, b = i - 1, i + m - 1     # leaves, enters
                s += x[b] - x[a]
                j = rank[a]
                while j <= V:
                    cnt[j] -= 1
                    tot[j] -= x[a]
                    j += j & (-j)
                j = rank[b]
                while j <= V:
                    cnt[j] += 1
                    tot[j] += x[b]
                    j += j & (-j)
            mu = s / m
            lo, hi = 0, V                   # number of distinct values <= mu
            while lo < hi:
                mid = (lo + hi) // 2
                if uniq[mid] <= mu:
                    lo = mid + 1
                else:
                    hi = mid
            c = 0
            sl = 0.0
            j = lo
            while j > 0:
                c += cnt[j]
                sl += tot[j]
                j -= j & (-j)
            out[k, i] = 2.0 * ((s - sl) - (m - c) * mu)
    return out


def _exact_in_float(x: np.ndarray) -> bool:
    """Whether every deviation is an exact float64 for both kernels (so they agree bit for bit).

    For integer counts every window mean ``S / 2^k`` is exact, and so is every partial sum of
    ``|x_t - mu|`` (multiples of ``2^-k`` below ``2 S``) and ``(m - c) mu`` when
    ``S * n < 2^52``.
    """
    return bool(x.size == 0 or (np.all(x >= 0) and np.all(x == np.floor(x))
                                and float(x.sum()) * x.size < 2.0 ** 52))


def _deviations_numpy(x: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    from numpy.lib.stride_tricks import sliding_window_view

    n = x.size
    out = np.full((lengths.size, n), np.inf)
    for k, m in enumerate(lengths):
        win = sliding_window_view(x, int(m))
        rows = max(1, 4_000_000 // int(m))
        for a in range(0, win.shape[0], rows):
            w = win[a:a + rows]
            out[k, a:a + w.shape[0]] = np.abs(w - w.mean(axis=1, keepdims=True)).sum(axis=1)
    return out


def interval_deviations(counts, *, engine: str = "auto") -> tuple[np.ndarray, np.ndarray]:
    """L1 deviation from the mean of every interval ``[i, i + 2^k)`` of the histogram.

    Returns ``(lengths, dev)``: ``dev[k, i]`` for the interval of length
    ``lengths[k]`` starting at ``i`` (``inf`` where it would run past the end).

    Compiled engine: for integer counts (total x n < 2^52) an O(n log n)-per-length kernel
    (``dev = 2 sum_{x_t > mean} (x_t - mean)`` from a Fenwick tree over the window's value
    ranks), which returns the same floats as the direct O(n m) sums (every term is exact in
    float64 there; tested); otherwise the direct sums.

    Examples
    --------
    >>> lengths, dev = interval_deviations([1, 3, 3, 5])
    >>> lengths.tolist(), dev[1, :3].tolist(), float(dev[2, 0])
    ([1, 2, 4], [2.0, 0.0, 2.0], 4.0)
    """
    from .partition import _check_engine

    engine = _check_engine(engine)
    x = np.asarray(counts, dtype=np.float64)
    n = x.size
    lengths = 2 ** np.arange(int(math.floor(math.log2(n))) + 1, dtype=np.int64)
    if use_compiled(engine, 2.0 * n * n):
        if _exact_in_float(x):   # O(n log n) per length; the same floats as the direct sums
            return lengths, _deviations_rank_numba(x, lengths, np.unique(x))
        return lengths, _deviations_numba(x, lengths)
    return lengths, _deviations_numpy(x, lengths)


@njit
def _shortest_numba(costs, lengths):  # pragma: no cover - compiled
    K, n = costs.shape
    best = np.full(n + 1, np.inf)
    arg = np.zeros(n + 1, dtype=np.int64)
    best[0] = 0.0
    for j in range(1, n + 1):
        for k in range(K):
            m = lengths[k]
            if m > j:
                break
            c = best[j - m] + costs[k, j - m]
            if c < best[j]:
                best[j] = c
                arg[j] = j - m
    return best, arg


def _shortest_numpy(costs: np.ndarray, lengths: np.ndarray):
    n = costs.shape[1]
    best = np.full(n + 1, np.inf)
    arg = np.zeros(n + 1, dtype=np.int64)
    best[0] = 0.0
    for j in range(1, n + 1):  # sequential by nature; one small vector per right end
        ks = lengths <= j
        m = lengths[ks]
        c = best[j - m] + costs[np.flatnonzero(ks), j - m]
        a = int(np.argmin(c))
        best[j] = c[a]
        arg[j] = j - m[a]
    return best, arg


def best_partition(costs, lengths, *, engine: str = "auto") -> np.ndarray:
    """Edges of the partition into intervals ``[i, i + lengths[k])`` of least total cost.

    ``costs[k, i]`` is the cost of the interval of length ``lengths[k]`` at ``i``
    (``inf`` if unavailable). Exact: a shortest path over right ends.

    Examples
    --------
    >>> c = np.array([[1.0, 1.0, 1.0, 1.0], [0.5, 9.0, 3.0, np.inf]])
    >>> best_partition(c, np.array([1, 2])).tolist()
    [0, 2, 3, 4]
    """
    from .partition import _check_engine

    engine = _check_engine(engine)
    costs = np.asarray(costs, dtype=np.float64)
    lengths = np.asarray(lengths, dtype=np.int64)
    n = costs.shape[1]
    fn = _shortest_numba if use_compiled(engine, 1e7 if n > 1024 else 0) else _shortest_numpy
    _, arg = fn(costs, lengths)
    cuts = [n]
    j = n
    while j > 0:  # one step per bucket
        j = int(arg[j])
        cuts.append(j)
    return np.asarray(cuts[::-1], dtype=np.int64)


def l1_partition(counts, *, epsilon: float, bucket_cost: float, rng, engine: str = "auto",
                 use_noise: bool = True) -> np.ndarray:
    """DAWA's private L1 partition (eps-DP; proof in the module docstring); returns edges.

    Every interval of power-of-two length gets the cost ``dev(I) + bucket_cost``
    plus Laplace noise of scale ``4 / epsilon``; the partition of least total
    noisy cost is returned. ``use_noise=False`` (NOT private) partitions the
    true costs: for tests and the audit's canary only.
    """
    x = as_counts(counts)
    lengths, dev = interval_deviations(x, engine=engine)
    costs = dev + float(bucket_cost)
    if use_noise:
        ok = np.isfinite(costs)
        costs[ok] += rng.laplace(0.0, PARTITION_NOISE / epsilon, size=int(ok.sum()))
    return best_partition(costs, lengths, engine=engine)


# --------------------------------------------------------------------------- stage 2
class GreedyHStrategy:
    """GreedyH's weighted binary hierarchy over ``m`` buckets (depends on public inputs only).

    Nodes are stored by index with arrays ``lo, hi`` (bucket ranges ``[lo, hi)``),
    ``left, right`` (-1 for leaves), ``depth`` and ``weight`` (the share of the
    budget spent on the node's own total; the weights along every root-to-leaf
    path sum to 1).
    """

    def __init__(self, lo, hi, left, right, depth, weight, model_error):
        self.lo, self.hi = lo, hi
        self.left, self.right = left, right
        self.depth = depth
        self.weight = weight
        self.model_error = float(model_error)

    @property
    def size(self) -> int:
        return int(self.lo.size)

    def path_weight_sums(self) -> np.ndarray:
        """Sum of the weights of the nodes containing each bucket (all 1 for a valid strategy)."""
        m = int(self.hi[0])
        tot = np.zeros(m + 1)
        np.add.at(tot, self.lo, self.weight)
        np.add.at(tot, self.hi, -self.weight)
        return np.cumsum(tot)[:m]


def _build_hierarchy(m: int):
    """The balanced binary hierarchy over ``m`` buckets in breadth-first order (``2m - 1``
    nodes; a node ``[a, b)`` splits at ``a + (b - a) // 2``), built level by level."""
    lo_l, hi_l, left_l, right_l, depth_l = [], [], [], [], []
    lo, hi = np.array([0], dtype=np.int64), np.array([m], dtype=np.int64)
    start, d = 0, 0
    while lo.size:
        split = hi - lo > 1
        nxt = start + lo.size                       # index of this level's first child
        child = nxt + 2 * (np.cumsum(split) - 1)
        left_l.append(np.where(split, child, -1))
        right_l.append(np.where(split, child + 1, -1))
        lo_l.append(lo)
        hi_l.append(hi)
        depth_l.append(np.full(lo.size, d, dtype=np.int64))
        a, b = lo[split], hi[split]
        mid = a + (b - a) // 2
        lo = np.stack((a, mid), axis=1).ravel()
        hi = np.stack((mid, b), axis=1).ravel()
        start, d = nxt, d + 1
    return tuple(np.concatenate(v).astype(np.int64)
                 for v in (lo_l, hi_l, left_l, right_l, depth_l))


def _segment_ids(starts, ends, m: int) -> np.ndarray:
    """For each of ``m`` buckets, the index of the disjoint segment ``[starts[j], ends[j])``
    holding it, or ``len(starts)`` for buckets in none."""
    out = np.full(m, starts.size, dtype=np.int64)
    lengths = ends - starts
    idx = np.repeat(np.arange(starts.size), lengths)
    pos = np.repeat(starts - np.concatenate(([0], np.cumsum(lengths)[:-1])), lengths)
    out[pos + np.arange(idx.size)] = idx
    return out


def greedy_h(edges, workload, *, criterion: str = "dawa") -> GreedyHStrategy:
    """GreedyH weights for the buckets ``edges`` and a public range workload.

    The workload is mapped to the buckets as DAWA does (a query covers a bucket
    by the fraction of the bucket's bins it contains). Bottom up, a node with
    children's inverse Gram blocks ``S`` (``u = S 1``, ``k = 1^T u``, children's
    errors summing to ``E``) keeping a share ``r = 1 - q`` for its own total has
    error ``(E - M r^2 / (q^2 + r^2 k)) / q^2`` with ``M = u^T G u``
    (Sherman-Morrison). ``criterion='dawa'`` is the published GreedyH's model:
    the root's squared share and the cross terms between the two children
    (``M - M_children``) discounted by ``2^(-depth/2)``; ``'exact'`` uses the
    node's exact workload error. ``r`` is the best of ``0, 0.01, ..., 0.99``.

    All nodes of one depth are scored at once (their buckets are disjoint), from the leaves
    up, in blocks of ``_GRID_CHUNK`` nodes; the result equals the node-by-node computation
    (``tests/lsq_cases.py`` keeps that form as the tests' reference).
    """
    criterion = check_choice(criterion, "criterion", ("dawa", "exact"))
    e = np.asarray(edges, dtype=np.int64)
    m = e.size - 1
    n = int(e[-1])
    w = RangeWorkload.from_spec(workload, n)
    lo, hi, left, right, depth = _build_hierarchy(m)
    N = lo.size
    bsize = np.diff(e).astype(np.float64)
    err = np.zeros(N)
    k = np.zeros(N)
    share = np.zeros(N)                   # r: the node's own share of its subtree's budget
    r_grid = np.arange(GRID) / GRID       # 0, 0.01, ..., 0.99
    q_grid = 1.0 - r_grid
    # every node's u vector, kept over the buckets: at a node's level ub[lo:hi] is its u (the
    # children's scaled vectors side by side); the nodes of one level cover disjoint buckets
    ub = np.ones(m)
    bins_per_bucket = np.diff(e)
    for d in range(int(depth.max()), -1, -1):
        nodes = np.flatnonzero(depth == d)   # breadth-first order: left to right
        nlo, nhi = lo[nodes], hi[nodes]
        covered = np.zeros(m + 1)
        np.add.at(covered, nlo, 1.0)
        np.add.at(covered, nhi, -1.0)
        covered = np.cumsum(covered)[:m] > 0
        vec = np.repeat(np.where(covered, ub / bsize, 0.0), bins_per_bucket)
        seg = np.unique(np.concatenate(([0], e[nlo], e[nhi])))
        seg = seg[seg < n]
        M = w.block_quadratic(vec, seg)[np.searchsorted(seg, e[nlo])]
        internal = left[nodes] >= 0
        leaves = nodes[~internal]
        err[leaves], k[leaves], share[leaves] = M[~internal], 1.0, 1.0
        if not internal.any():
            continue
        iv = nodes[internal]
        a, b = left[iv], right[iv]
        Mi = M[internal]
        E = err[a] + err[b]
        kk = k[a] + k[b]
        if criterion == "dawa":
            cseg = np.unique(np.concatenate(([0], e[lo[a]], e[lo[b]], e[hi[b]])))
            cseg = cseg[cseg < n]
            cq = w.block_quadratic(vec, cseg)
            M1 = cq[np.searchsorted(cseg, e[lo[a]])] + cq[np.searchsorted(cseg, e[lo[b]])]
            dec = 2.0 ** (-d / 2.0)
            r2 = (r_grid ** 2 * dec)[None, :]
            Mm = ((Mi - M1) * dec + M1)[:, None]
        else:
            r2 = (r_grid ** 2)[None, :]
            Mm = Mi[:, None]
        i = np.empty(iv.size, dtype=np.int64)
        best = np.empty(iv.size)
        for c0 in range(0, iv.size, _GRID_CHUNK):  # (nodes x GRID) floats, a chunk at a time
            sl = slice(c0, c0 + _GRID_CHUNK)
            Mc = Mm[sl]
            tot = (E[sl, None] - Mc * r2 / (q_grid[None, :] ** 2 + r2 * kk[sl, None])) \
                / q_grid ** 2
            i[sl] = np.argmin(tot, axis=1)
            best[sl] = tot[np.arange(tot.shape[0]), i[sl]]
        r, q = r_grid[i], q_grid[i]
        c = r * r / (q * q + r * r * kk)           # the exact update of the inverse
        scale = (1.0 - c * kk) / (q * q)
        ub *= np.r_[scale, 1.0][_segment_ids(lo[iv], hi[iv], m)]
        err[iv], k[iv], share[iv] = best, scale * kk, r
    # weights: own share times the product of the ancestors' passed-down shares
    weight = np.zeros(N)
    passed = np.ones(N)
    for d in range(int(depth.max()) + 1):     # parents before their children
        nodes = np.flatnonzero(depth == d)
        weight[nodes] = passed[nodes] * share[nodes]
        inner = nodes[left[nodes] >= 0]
        down = passed[inner] * (1.0 - share[inner])
        passed[left[inner]] = down
        passed[right[inner]] = down
    return GreedyHStrategy(lo, hi, left, right, depth, weight, err[0])


def tree_gls(strategy: GreedyHStrategy, y: np.ndarray, var: np.ndarray) -> np.ndarray:
    """Least-squares (best linear unbiased) bucket totals from noisy node totals.

    ``y[v]`` estimates node ``v``'s total with variance ``var[v]`` (``inf``: not
    measured). Upward pass: each node combines its own measurement with the sum
    of its children's estimates by inverse-variance weighting; downward pass:
    the parent's residual is shared among the children in proportion to their
    variances. Equal to the dense least-squares solution (tested). Both passes run
    level by level over arrays.
    """
    lo, left, right, depth = strategy.lo, strategy.left, strategy.right, strategy.depth
    y = np.asarray(y, dtype=np.float64)
    var = np.asarray(var, dtype=np.float64)
    N = lo.size
    z = np.zeros(N)
    vz = np.zeros(N)
    levels = [np.flatnonzero(depth == d) for d in range(int(depth.max()) + 1)]
    for nodes in reversed(levels):        # children (deeper) before their parents
        leaf = left[nodes] < 0
        lv = nodes[leaf]
        z[lv], vz[lv] = y[lv], var[lv]
        iv = nodes[~leaf]
        if not iv.size:
            continue
        a, b = left[iv], right[iv]
        cs, cv = z[a] + z[b], vz[a] + vz[b]
        own = var[iv]
        unmeasured = np.isinf(own)
        with np.errstate(divide="ignore", invalid="ignore"):
            wy, wc = 1.0 / own, 1.0 / cv
            zc = (wy * y[iv] + wc * cs) / (wy + wc)
            vc = 1.0 / (wy + wc)
        z[iv] = np.where(unmeasured, cs, zc)
        vz[iv] = np.where(unmeasured, cv, vc)
    est = z.copy()
    m = int(strategy.hi[0])
    out = np.zeros(m)
    for nodes in levels:                  # parents before their children
        leaf = left[nodes] < 0
        out[lo[nodes[leaf]]] = est[nodes[leaf]]
        iv = nodes[~leaf]
        if not iv.size:
            continue
        a, b = left[iv], right[iv]
        resid = est[iv] - z[a] - z[b]
        tv = vz[a] + vz[b]
        est[a] = z[a] + resid * vz[a] / tv
        est[b] = z[b] + resid * vz[b] / tv
    return out


def _measure_tree(totals: np.ndarray, strategy: GreedyHStrategy, epsilon: float, rng,
                  scale_factor: float = 1.0):
    """Noisy totals of every node with a positive weight: scale ``1 / (w eps)``."""
    P = np.concatenate(([0], np.cumsum(totals)))
    node_tot = (P[strategy.hi] - P[strategy.lo]).astype(np.float64)
    wgt = strategy.weight
    y = np.zeros(wgt.size)
    var = np.full(wgt.size, np.inf)
    on = wgt > 0
    b = scale_factor / (wgt[on] * epsilon)
    y[on] = node_tot[on] + rng.laplace(0.0, b)
    var[on] = 2.0 * b * b
    return y, var


def dawa(counts, *, epsilon, partition_fraction: float = 0.25, workload="prefix",
         criterion: str = "dawa", bucket_cost: float | None = None,
         records_bound: float | None = None, engine: str = "auto", rng=None) -> Release:
    """DAWA: private L1 partition (``partition_fraction`` of eps), GreedyH on the buckets.

    Why it is eps-DP: see the module docstring (stage 1 is ``eps1``-DP by a
    one-coordinate shift of the Laplace noise; stage 2 spends ``eps2`` along
    every root-to-leaf path of the hierarchy; the rest is post-processing).

    Parameters
    ----------
    counts : array_like of int, shape (n,)
    epsilon : float or PureDP
    partition_fraction : float in (0, 1)
        Share of epsilon for the partition (0.25, the authors' ratio).
    workload : 'prefix', 'all-range' or array (q, 2) of ranges ``[lo, hi)``
        The public queries the release should answer well (GreedyH's target).
    criterion : {'dawa', 'exact'}
        GreedyH's node error model (see :func:`greedy_h`).
    bucket_cost : float, optional
        Cost of one bucket in the partition (default ``1/eps2 + penalty * 4/eps1``: the
        authors' ``1/eps2`` plus the selection-bias penalty, see the module docstring and
        :func:`selection_penalty`).
    records_bound : float, optional
        A **public** upper bound on the number of records (or a DP estimate paid for
        elsewhere). It sets the penalty from the signal ``epsilon * N / n``
        (:data:`PENALTY_SCHEDULE`, up to ``SCHEDULE_MAX_N`` bins); without it the penalty is
        ``SELECTION_PENALTY``. Never
        pass the true count of private data: the penalty would then depend on it.
    engine : {'auto', 'numba', 'numpy'}
    rng : numpy.random.Generator, optional

    Examples
    --------
    >>> from veil.random import make_rng
    >>> r = dawa([5] * 32 + [80] * 32, epsilon=1.0, rng=make_rng(seed=0))
    >>> r.parameters["buckets"] <= 64, sorted(r.budget_split)
    (True, ['buckets', 'partition'])
    """
    x = as_counts(counts)
    n = x.size
    b = as_budget(epsilon)
    frac = check_probability(partition_fraction, "partition_fraction", open_low=True,
                             open_high=True)
    w = RangeWorkload.from_spec(workload, n)
    g = as_rng(rng)
    eps1, eps2 = (p.epsilon for p in b.split([frac, 1.0 - frac]))
    if records_bound is not None:
        records_bound = check_positive(records_bound, "records_bound")
    penalty = selection_penalty(epsilon=b.epsilon, records_bound=records_bound, n=n)
    lam = (1.0 / eps2 + penalty * PARTITION_NOISE / eps1 if bucket_cost is None
           else check_nonnegative(bucket_cost, "bucket_cost"))
    edges = l1_partition(x, epsilon=eps1, bucket_cost=lam, rng=g, engine=engine)
    totals = bucket_sums(x, edges)
    strat = greedy_h(edges, w, criterion=criterion)
    y, var = _measure_tree(totals, strat, eps2, g)
    est = tree_gls(strat, y, var)
    return Release(spread(edges, est), "dawa", b,
                   {"n": n, "partition_fraction": frac, "buckets": int(edges.size - 1),
                    "edges": edges.tolist(), "workload": w.describe(),
                    "greedy_h_criterion": criterion, "bucket_cost": lam,
                    **({} if bucket_cost is not None else {"selection_penalty": penalty}),
                    **({} if records_bound is None else {"records_bound": records_bound}),
                    "partition_noise_scale": PARTITION_NOISE / eps1,
                    "measured_nodes": int((strat.weight > 0).sum())},
                   {"partition": eps1, "buckets": eps2}, noise_scale=PARTITION_NOISE / eps1,
                   notes=(NEIGHBOURS, "partition: noisy L1 costs of power-of-two intervals "
                          "(Laplace 4/eps1, see veil.histograms.dawa); GreedyH weights from the "
                          "partition and the public workload only", "float64 Laplace noise",
                          *((f"selection penalty {penalty:g}: the schedule is used up to "
                             f"{SCHEDULE_MAX_N} bins (measured there), not at n = {n}",)
                            if records_bound is not None and bucket_cost is None
                            and n > SCHEDULE_MAX_N else ()),
                          *((f"selection penalty {penalty:g}: no public records bound was "
                             "given; with one (records_bound) the penalty follows the signal "
                             "eps N / n (PENALTY_SCHEDULE)",)
                            if records_bound is None and bucket_cost is None
                            and n <= SCHEDULE_MAX_N else ())),
                   derived=("parameters.buckets", "parameters.edges",
                            "parameters.measured_nodes"))
