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

__all__ = ["sort_and_group", "ahp", "ahp_clusters", "randomized_sort"]


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
                          "first noisy histogram"),
                   derived=("parameters.groups", "expected_error.estimated_sse"))


@njit
def _err_star_numba(ys, var2):  # pragma: no cover - compiled when numba is present
    n = ys.size
    out = np.empty(n)
    for j in range(n):
        best = var2                      # the value alone: no bias, full noise
        last1 = 0.0
        last2 = var2
        rest = n - j
        bound = var2 / (rest * rest)     # the least noise any cluster starting at j can have
        s = ys[j]
        for l in range(j + 1, n):
            s += ys[l]
            m = l - j + 1
            d = ys[j] - s / m
            e1 = d * d
            e2 = var2 / (m * m)
            if e1 - last1 >= last2 - bound:  # more bias than any further noise saving
                break
            if e1 + e2 < best:
                best = e1 + e2
            last1 = e1
            last2 = e2
        out[j] = best
    return out


def _err_star_numpy(ys: np.ndarray, var2: float) -> np.ndarray:
    """Same as the compiled kernel, one vector per start ``j`` (windows grown by doubling)."""
    n = ys.size
    out = np.empty(n)
    P = np.concatenate(([0.0], np.cumsum(ys)))
    for j in range(n):
        rest = n - j
        bound = var2 / (rest * rest)
        width = 64
        while True:
            l = np.arange(j, min(n, j + width))
            m = (l - j + 1).astype(np.float64)
            e1 = (ys[j] - (P[l + 1] - P[j]) / m) ** 2
            e2 = var2 / (m * m)
            stop = np.flatnonzero((e1[1:] - e1[:-1]) >= (e2[:-1] - bound))
            if stop.size or l[-1] == n - 1:
                k = int(stop[0]) + 1 if stop.size else l.size
                out[j] = float(np.min(e1[:k] + e2[:k]))
                break
            width *= 2
    return out


def ahp_clusters(ys, var2: float, *, engine: str = "auto") -> np.ndarray:
    """AHP's greedy clustering of sorted values (Zhang et al. 2014); returns group edges.

    A cluster ``[i, j)`` costs ``SSE + var2 / size`` (bias of its average plus the
    noise of its averaged sum). Scanning the sorted values, the next value ``j``
    starts a new cluster when adding it costs at least as much as the value's
    own best error ``err*(j)``: the least ``(y_j - mean(y_j..y_l))^2 + var2 / (l-j+1)^2``
    over clusters starting at ``j``, searched forward until the increase of the
    bias exceeds the largest noise reduction still possible (the published early
    stop). Reads only the (noisy, sorted) values: post-processing.

    Examples
    --------
    >>> ahp_clusters(np.array([0.0, 0.0, 0.0, 50.0, 51.0]), 2.0).tolist()
    [0, 3, 5]
    """
    from ._compile import use_compiled
    from .partition import _check_engine

    engine = _check_engine(engine)
    y = np.asarray(ys, dtype=np.float64)
    n = y.size
    if n == 0:
        return np.zeros(1, dtype=np.int64)
    star = (_err_star_numba if use_compiled(engine, 50.0 * n * n) else _err_star_numpy)(y, var2)
    P = np.concatenate(([0.0], np.cumsum(y)))
    P2 = np.concatenate(([0.0], np.cumsum(y * y)))
    cuts = [0]
    i = 0

    def err(a, b):  # cluster [a, b)
        m = b - a
        s = P[b] - P[a]
        return max(P2[b] - P2[a] - s * s / m, 0.0) + var2 / m

    last = err(0, 1)
    for j in range(1, n):  # one comparison per value (O(1) each)
        now = err(i, j + 1)
        if now >= last + star[j]:
            cuts.append(j)
            i = j
            last = err(j, j + 1)
        else:
            last = now
    cuts.append(n)
    return np.asarray(cuts, dtype=np.int64)


def ahp(counts, *, epsilon, rho: float = 0.85, eta: float = 0.35, engine: str = "auto",
        rng=None) -> Release:
    """AHP (Zhang et al. 2014): noisy counts, threshold, sort, greedy clustering, re-measure.

    Steps: (1) discrete Laplace noise (scale ``1/eps1``, ``eps1 = rho * epsilon``)
    on every bin; (2) noisy counts at or below ``eta * ln(n) / eps1`` are set to 0;
    (3) randomized sort and the published greedy clustering of the sorted values
    (:func:`ahp_clusters`: a value opens a new cluster when joining the current
    one costs more than its own best error); (4) discrete Laplace noise (scale
    ``1/eps2``, ``eps2 = (1 - rho) epsilon``) on each cluster's true sum,
    published as the cluster average.

    Why it is eps-DP: as :func:`sort_and_group` -- step (1) is ``eps1``-DP, (2)-(3)
    are post-processing, (4) measures disjoint cluster sums with L1 sensitivity 1
    at ``eps2``; ``eps1 + eps2 = epsilon``.

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
    y = np.where(noisy <= thr, 0, noisy).astype(np.float64)
    order = randomized_sort(y, g)
    edges = ahp_clusters(y[order], dl_variance(eps2), engine=engine)
    value, var, scale = _publish_groups(x, order, edges, eps2, g)
    return Release(value, "ahp", b,
                   {"n": n, "rho": rho, "eta": eta, "threshold": thr,
                    "clusters": int(edges.size - 1)},
                   {"counts": eps1, "cluster_sums": eps2}, noise_scale=scale,
                   noise_variance=var, expected_error={"cluster_sum_variance": var},
                   notes=(NEIGHBOURS, "thresholding, sorting and clustering are "
                          "post-processing of the first noisy histogram"),
                   derived=("parameters.clusters",))
