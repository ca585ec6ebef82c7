"""Sort-and-group (the thesis' mechanism) and AHP (Zhang et al., SIAM SDM 2014).

Both first publish a noisy histogram with part of the budget, sort the bins by
their noisy counts, group bins with similar noisy counts, and then measure each
group's true sum with the rest of the budget, publishing the group average in
every bin of the group. Sorting and grouping read only the noisy counts
(post-processing); the groups are disjoint, so the group sums have L1
sensitivity 1.
"""

from __future__ import annotations

import math

import numpy as np

from ..release import Release
from ..validation import check_nonnegative, check_probability
from ._common import NEIGHBOURS, as_budget, as_counts, as_rng, dl_variance, noisy_integers
from ._compile import njit
from .partition import sorted_grouping

__all__ = ["sort_and_group", "ahp", "randomized_sort"]


def randomized_sort(values, rng) -> np.ndarray:
    """Order of ``values`` ascending, ties broken uniformly at random.

    The result has the distribution of a randomized quicksort's output order:
    for distinct values it is the sorted order, and among equal values every
    order is equally likely, so the order reveals nothing beyond the values.
    """
    v = np.asarray(values)
    perm = rng.permutation(v.size)
    return perm[np.argsort(v[perm], kind="stable")]


def _publish_groups(x, order, edges, eps2, rng):
    """Noisy true sums of the groups (``order[edges[t]:edges[t+1]]``), averaged per bin."""
    labels = np.empty(x.size, dtype=np.int64)
    sizes = np.diff(edges)
    labels[order] = np.repeat(np.arange(sizes.size), sizes)
    sums = np.bincount(labels, weights=x, minlength=sizes.size).astype(np.int64)
    noisy, var, scale = noisy_integers(sums, eps2, rng)
    return (noisy / sizes)[labels], var, scale


def sort_and_group(counts, *, epsilon, sort_fraction: float = 0.5, k: int | None = None,
                   engine: str = "auto", rng=None) -> Release:
    """Sort-and-group: noisy histogram, randomized sort, minimum-error grouping, re-measure.

    Steps: (1) discrete Laplace noise (scale ``1/eps1``, ``eps1 = sort_fraction *
    epsilon``) on every bin; (2) randomized sort of the noisy counts; (3) the
    minimum-error grouping of the sorted bins by dynamic programming, where a
    group of ``m`` bins costs its noisy SSE corrected for the noise,
    ``SSE(noisy) - (m-1) s1^2``, plus the variance its published average will
    carry, ``s2^2 / m`` (``s1^2``, ``s2^2`` the noise variances of steps 1 and 4);
    over sorted values this cost is Monge, so the DP's monotone split points
    are exact; (4) discrete Laplace noise (scale ``1/eps2``) on each group's true
    sum, published as the group average in every bin.

    Why it is eps-DP: step (1) is the Identity mechanism at ``eps1``; steps
    (2)-(3) only read its output and public parameters (post-processing); given
    the groups, each record is in one group, so the group sums have L1
    sensitivity 1 and step (4) is ``eps2``-DP. Sequential composition:
    ``eps1 + eps2 = epsilon``.

    Parameters
    ----------
    counts : array_like of int, shape (n,)
    epsilon : float or PureDP
    sort_fraction : float in (0, 1)
        Share of epsilon for the noisy histogram that is sorted.
    k : int, optional
        Fixed number of groups; default: chosen by the DP's cost.
    engine : {'auto', 'numba', 'numpy'}
    rng : numpy.random.Generator, optional

    Examples
    --------
    >>> from veil.random import make_rng
    >>> r = sort_and_group([0, 50, 0, 50, 0, 50], epsilon=1.0, rng=make_rng(seed=3))
    >>> sorted(r.budget_split)
    ['counts', 'sort']
    """
    x = as_counts(counts)
    n = x.size
    b = as_budget(epsilon)
    frac = check_probability(sort_fraction, "sort_fraction", open_low=True, open_high=True)
    g = as_rng(rng)
    eps1, eps2 = (p.epsilon for p in b.split([frac, 1.0 - frac]))
    noisy, var1, _ = noisy_integers(x, eps1, g)
    order = randomized_sort(noisy, g)
    ys = noisy[order].astype(np.float64)
    var2 = dl_variance(eps2)
    if k is not None:
        from ._common import check_k_bins

        k = check_k_bins(k, n)
    edges, cost = sorted_grouping(ys, k=k, size_linear=-var1, per_group=var1,
                                  size_inverse=var2, engine=engine)
    value, var, scale = _publish_groups(x, order, edges, eps2, g)
    return Release(value, "sort-and-group", b,
                   {"n": n, "sort_fraction": frac, "groups": int(edges.size - 1),
                    "k": k},
                   {"sort": eps1, "counts": eps2}, noise_scale=scale, noise_variance=var,
                   expected_error={"estimated_sse": cost, "group_sum_variance": var},
                   notes=(NEIGHBOURS, "sorting and grouping are post-processing of the "
                          "first noisy histogram"))


@njit
def _greedy_clusters(ys, var2):  # pragma: no cover - compiled when numba is present
    """Greedy clustering of sorted values: extend the cluster while the estimated
    error of publishing its average (spread SSE + noise variance / size) stays
    below that of publishing the new value on its own."""
    n = ys.size
    cuts = np.empty(n + 1, dtype=np.int64)
    nc = 0
    cuts[0] = 0
    start = 0
    s = 0.0
    s2 = 0.0
    for j in range(n):
        if j > start:
            m = j - start
            s_new = s + ys[j]
            s2_new = s2 + ys[j] * ys[j]
            sse_new = s2_new - s_new * s_new / (m + 1)
            sse_old = s2 - s * s / m
            merged = sse_new + var2 / (m + 1)
            apart = sse_old + var2 / m + var2
            if merged > apart:
                nc += 1
                cuts[nc] = j
                start = j
                s = 0.0
                s2 = 0.0
        s += ys[j]
        s2 += ys[j] * ys[j]
    nc += 1
    cuts[nc] = n
    return cuts[:nc + 1]


def ahp(counts, *, epsilon, rho: float = 0.85, eta: float = 0.35, rng=None) -> Release:
    """AHP (Zhang et al. 2014): noisy counts, threshold, sort, greedy clustering, re-measure.

    Steps: (1) discrete Laplace noise (scale ``1/eps1``, ``eps1 = rho * epsilon``)
    on every bin; (2) noisy counts below ``eta * ln(n) / eps1`` are set to 0;
    (3) randomized sort and greedy clustering of the sorted values (a cluster is
    extended while its estimated error -- spread plus averaged noise -- beats
    publishing the next value alone); (4) discrete Laplace noise (scale
    ``1/eps2``, ``eps2 = (1 - rho) epsilon``) on each cluster's true sum, published
    as the cluster average.

    Why it is eps-DP: as :func:`sort_and_group` -- step (1) is ``eps1``-DP,
    (2)-(3) are post-processing, (4) measures disjoint cluster sums with L1
    sensitivity 1 at ``eps2``; ``eps1 + eps2 = epsilon``.

    Examples
    --------
    >>> from veil.random import make_rng
    >>> r = ahp([0] * 10 + [100] * 10, epsilon=1.0, rng=make_rng(seed=0))
    >>> r.parameters["rho"], r.value.shape
    (0.85, (20,))
    """
    x = as_counts(counts)
    n = x.size
    b = as_budget(epsilon)
    rho = check_probability(rho, "rho", open_low=True, open_high=True)
    eta = check_nonnegative(eta, "eta")
    g = as_rng(rng)
    eps1, eps2 = (p.epsilon for p in b.split([rho, 1.0 - rho]))
    noisy, _, _ = noisy_integers(x, eps1, g)
    thr = eta * math.log(max(n, 2)) / eps1
    y = np.where(noisy < thr, 0, noisy).astype(np.float64)
    order = randomized_sort(y, g)
    ys = y[order]
    var2 = dl_variance(eps2)
    # compiled with numba for large n; otherwise one Python loop over the n bins
    greedy = _greedy_clusters if n > 2048 else _greedy_clusters.py_func
    edges = greedy(ys, var2)
    value, var, scale = _publish_groups(x, order, edges, eps2, g)
    return Release(value, "ahp", b,
                   {"n": n, "rho": rho, "eta": eta, "threshold": thr,
                    "clusters": int(edges.size - 1)},
                   {"counts": eps1, "cluster_sums": eps2}, noise_scale=scale,
                   noise_variance=var, expected_error={"cluster_sum_variance": var},
                   notes=(NEIGHBOURS, "thresholding, sorting and clustering are "
                          "post-processing of the first noisy histogram"))
