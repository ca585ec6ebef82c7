"""DAWA (Li et al., PVLDB 2014), a simplified but honest version.

DAWA has two stages: (1) a private partition of the domain into buckets of
similar counts (the "L1 partition"), (2) a workload-aware hierarchy of
measurements on the reduced domain of bucket totals, whose estimates are spread
uniformly over each bucket's bins.

What is simplified here (and why it stays eps-DP):

* Stage 1 chooses the partition from a noisy histogram instead of noisy
  interval costs: discrete Laplace noise of scale ``1/eps1`` on every bin
  (L1 sensitivity 1, ``eps1``-DP), then -- post-processing -- the partition
  minimising the estimated error ``sum_B [SSE_B(noisy) - (m_B - 1) s1^2 + s2^2]``
  (unbiased estimate of the true within-bucket SSE plus the variance ``s2^2`` a
  bucket total will carry), found exactly by the V-optimal DP with a size
  penalty (:func:`veil.histograms.partition.voptimal_table`). DAWA's own
  stage 1 adds Laplace noise to the L1 cost of every interval; we do not rely
  on that argument for overlapping candidate intervals.
  :func:`l1_partition` keeps an honest dyadic variant of the L1 costs (noise
  scaled to the sensitivity ``2L`` of all dyadic costs) for comparison.
* Stage 2 uses a binary tree over the bucket totals with per-level budgets
  ``eps2 * w_l``, ``w_l`` proportional to ``u_l^(1/3)`` where ``u_l`` counts how
  often the workload's dyadic decompositions use level ``l`` (this minimises
  ``sum_l u_l / w_l^2``, the workload's noise variance; DAWA's GreedyH solves a
  finer version). Every record is in one node per level: level ``l`` is
  ``eps2 w_l``-DP, the levels compose to ``eps2``. Least-squares inference
  (:func:`veil.histograms.tree.tree_inference`) is post-processing.
"""

from __future__ import annotations

import math

import numpy as np

from ..release import Release
from ..validation import check_probability
from ._common import NEIGHBOURS, as_budget, as_counts, as_rng, bucket_sums, spread
from ._common import dl_variance, noisy_integers
from .tree import level_usage, noisy_tree, tree_height, tree_inference
from .workload import _check_queries, prefix_workload

__all__ = ["dawa", "l1_partition"]


def _dyadic_l1_costs(x: np.ndarray, h: int) -> list[np.ndarray]:
    """L1 deviation from the mean of every dyadic interval, per level (leaves first)."""
    costs = []
    for lv in range(h + 1):
        blocks = x.reshape(-1, 2 ** lv).astype(np.float64)
        costs.append(np.abs(blocks - blocks.mean(axis=1, keepdims=True)).sum(axis=1))
    return costs


_Z = 2.0  # margin (in standard deviations of the SSE estimate) before a bucket is split


def tree_partition(level_costs: list[np.ndarray], n: int) -> np.ndarray:
    """Least-cost partition of ``[0, n)`` into dyadic intervals; returns the edges.

    ``level_costs[l][j]`` is the cost of making the dyadic interval
    ``[j 2^l, (j+1) 2^l)`` one bucket (leaves first, level ``l`` has ``2^(h-l)``
    entries over the domain padded to ``2^h``). A bottom-up pass keeps, for every
    node, the cheaper of "one bucket" and "the best partitions of both
    children"; a top-down pass reads the buckets off. Exact over dyadic
    partitions (checked against brute force in the tests).
    """
    L = len(level_costs)
    best = np.asarray(level_costs[0], dtype=np.float64)
    split = []
    for lv in range(1, L):
        kids = best.reshape(-1, 2).sum(axis=1)
        own = np.asarray(level_costs[lv], dtype=np.float64)
        keep = own <= kids
        split.append(~keep)
        best = np.where(keep, own, kids)
    active = np.ones(1, dtype=bool)  # the root is reached
    starts = []
    for lv in range(L - 1, -1, -1):
        sp = split[lv - 1] if lv >= 1 else np.zeros(active.size, dtype=bool)
        starts.append(np.flatnonzero(active & ~sp) * 2 ** lv)
        active = np.repeat(active & sp, 2)
    st = np.sort(np.concatenate(starts))
    st = st[st < n]
    return np.concatenate((st, [n])).astype(np.int64)


def l1_partition(counts, *, epsilon: float, penalty: float, rng) -> np.ndarray:
    """Private partition into dyadic buckets from noisy L1 costs (DAWA-like); returns edges.

    eps-DP: the costs of all dyadic intervals have L1 sensitivity ``2 (h+1)`` and
    get Laplace noise of scale ``2 (h+1) / epsilon``; :func:`tree_partition` reads
    only them.
    """
    x = as_counts(counts)
    n = x.size
    h = tree_height(max(n, 2), 2)
    pad = np.zeros(2 ** h, dtype=np.int64)
    pad[:n] = x
    L = h + 1
    scale = 2.0 * L / epsilon
    costs = [c + rng.laplace(0.0, scale, size=c.size) + penalty
             for c in _dyadic_l1_costs(pad, h)]
    return tree_partition(costs, n)


def noisy_partition(counts, *, epsilon: float, bucket_variance: float, rng) -> np.ndarray:
    """Dyadic partition chosen on a noisy histogram (eps-DP; see the module docstring).

    Bucket cost: ``SSE(noisy) - (m - 1) s1^2 + s2^2`` over the bucket's real bins
    (unbiased for the true SSE plus the variance of the bucket's published total);
    intervals wholly in the padding cost 0.
    """
    x = as_counts(counts)
    n = x.size
    noisy, var1, _ = noisy_integers(x, epsilon, rng)
    h = tree_height(max(n, 2), 2)
    y = noisy.astype(np.float64)
    y = y - y.mean()
    P = np.concatenate(([0.0], np.cumsum(y)))
    P2 = np.concatenate(([0.0], np.cumsum(y * y)))
    costs = []
    for lv in range(h + 1):
        size = 2 ** lv
        lo = np.minimum(np.arange(0, 2 ** h, size), n)
        hi = np.minimum(lo + size, n)
        m = (hi - lo).astype(np.float64)
        s = P[hi] - P[lo]
        sse = np.maximum(P2[hi] - P2[lo] - s * s / np.maximum(m, 1.0), 0.0)
        # + z * s1^2 sqrt(2m): about the SSE estimate's own noise (sd ~ s1^2 sqrt(2(m-1))
        # on flat data); as sqrt is concave, two children always pay more than their
        # parent, so a split must beat the merge by more than the estimates' noise
        sd = var1 * np.sqrt(2.0 * m)
        costs.append(np.where(m > 0, sse - (m - 1) * var1 + bucket_variance + _Z * sd, 0.0))
    return tree_partition(costs, n)


def dawa(counts, *, epsilon, partition_fraction: float = 0.25, workload=None,
         partition: str = "noisy-histogram", rng=None) -> Release:
    """DAWA (simplified, see the module docstring): private L1 partition + workload-aware tree.

    Why it is eps-DP: stage 1 spends ``eps1 = partition_fraction * epsilon``
    (a noisy histogram, sensitivity 1; or Laplace on the dyadic interval costs,
    sensitivity ``2L``), and the partition is post-processing of it; given the public
    partition, stage 2 measures the bucket totals through a binary tree with
    per-level budgets summing to ``eps2 = epsilon - eps1`` (one node per level
    per record); inference and spreading are post-processing. Total: epsilon.

    Parameters
    ----------
    counts : array_like of int, shape (n,)
    epsilon : float or PureDP
    partition_fraction : float in (0, 1)
        Share of epsilon for the partition (0.25 in the paper).
    workload : array (q, 2), optional
        Public range queries ``[lo, hi)`` the release should answer well
        (default: all prefixes).
    partition : {'noisy-histogram', 'dyadic-l1'}
        Stage-1 variant (see the module docstring).
    rng : numpy.random.Generator, optional

    Examples
    --------
    >>> from veil.random import make_rng
    >>> r = dawa([5] * 32 + [80] * 32, epsilon=1.0, rng=make_rng(seed=0))
    >>> r.parameters["buckets"] <= 64
    True
    """
    x = as_counts(counts)
    n = x.size
    b = as_budget(epsilon)
    frac = check_probability(partition_fraction, "partition_fraction", open_low=True,
                             open_high=True)
    q = prefix_workload(n) if workload is None else _check_queries(workload, n)
    g = as_rng(rng)
    eps1, eps2 = (p.epsilon for p in b.split([frac, 1.0 - frac]))
    from ..validation import check_choice

    partition = check_choice(partition, "partition", ("noisy-histogram", "dyadic-l1"))
    if partition == "dyadic-l1":
        edges = l1_partition(x, epsilon=eps1, penalty=1.0 / eps2, rng=g)
    else:
        edges = noisy_partition(x, epsilon=eps1, bucket_variance=dl_variance(eps2), rng=g)
    m = edges.size - 1
    totals = bucket_sums(x, edges)
    # workload mapped to the reduced domain: buckets that intersect each query
    lo = np.searchsorted(edges, q[:, 0], side="right") - 1
    hi = np.searchsorted(edges, q[:, 1], side="left")
    use = level_usage(np.column_stack((lo, hi)), m)
    if m == 1:
        use = use[:1]
    w = np.cbrt(np.maximum(use, 0.01 * max(use.max(), 1.0)))
    w = w / w.sum()
    level_eps = [float(e) for e in eps2 * w]
    # the per-level parts must not sum to more than eps2
    while math.fsum([eps1, *level_eps]) > b.epsilon or math.fsum(level_eps) > eps2:
        level_eps = [math.nextafter(e, 0.0) for e in level_eps]
    if m == 1:
        y, v, _ = noisy_integers(totals, eps2, g)
        est_totals = y.astype(np.float64)
        level_eps = [eps2]
    else:
        noisy, var, _ = noisy_tree(totals, branching=2, level_epsilons=level_eps, rng=g)
        est_totals = tree_inference(noisy, var, 2)[0][:m]
    split = {"partition": eps1}
    split.update({f"level_{i}": e for i, e in enumerate(level_eps)})
    return Release(spread(edges, est_totals), "dawa", b,
                   {"n": n, "partition_fraction": frac, "buckets": int(m),
                    "edges": edges.tolist(), "workload_queries": int(q.shape[0]),
                    "partition": partition},
                   split, notes=(NEIGHBOURS, "simplified DAWA: partition from a noisy histogram "
                                 "(or dyadic L1 costs) and closed-form level weights (see "
                                 "veil.histograms.dawa)"))
