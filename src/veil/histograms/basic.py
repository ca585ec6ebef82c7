"""Identity and NoiseFirst (Xu et al., VLDB Journal 2013).

Neighbouring histograms differ by one record, i.e. one bin count changes by 1,
so the count vector has L1 sensitivity 1.
"""

from __future__ import annotations

import numpy as np

from ..release import Release
from ._common import (NEIGHBOURS, as_budget, as_counts, as_rng, bucket_sse_noisy,
                      check_k_bins, noisy_integers)
from .partition import backtrack, voptimal_table

__all__ = ["identity", "noise_first"]


def identity(counts, *, epsilon, rng=None) -> Release:
    """Identity: exact discrete Laplace noise on every bin (the baseline).

    Why it is eps-DP: the count vector has L1 sensitivity 1 between
    neighbouring histograms (one record changes one bin by 1), and each bin gets
    independent discrete Laplace noise of scale ``1/epsilon`` (rounded up to a
    dyadic rational), the geometric mechanism of Ghosh et al. The whole budget
    goes to this one step.

    Parameters
    ----------
    counts : array_like of int, shape (n,)
        True non-negative integer counts in domain order.
    epsilon : float or PureDP
    rng : numpy.random.Generator, optional

    Returns
    -------
    Release
        ``value``: int64 noisy counts (may be negative; clip or round as
        post-processing if needed).

    Examples
    --------
    >>> from veil.random import make_rng
    >>> r = identity([5, 0, 12], epsilon=1.0, rng=make_rng(seed=0))
    >>> r.value.shape, r.budget_split
    ((3,), {'counts': 1.0})
    """
    x = as_counts(counts)
    b = as_budget(epsilon)
    noisy, var, scale = noisy_integers(x, b.epsilon, as_rng(rng))
    return Release(noisy, "identity", b, {"n": x.size}, {"counts": b.epsilon},
                   noise_scale=scale, noise_variance=var,
                   expected_error={"per_bin_variance": var},
                   notes=(NEIGHBOURS,))


def noise_first(counts, *, epsilon, k_max: int | None = None, merge: str = "auto",
                engine: str = "auto", rng=None) -> Release:
    """NoiseFirst: noisy counts, then a V-optimal partition of the noisy counts.

    Steps: (1) discrete Laplace noise of scale ``1/epsilon`` on every bin (the
    whole budget); (2) the V-optimal dynamic program on the *noisy* counts for
    every number of buckets ``k <= k_max``; (3) ``k`` minimising the corrected
    error estimate ``SSE*(k) - (n - 2k) * sigma^2`` (``sigma^2`` the noise
    variance, ``2/eps^2`` for Laplace); (4) per bucket, the noisy counts are
    replaced by their mean unless the bucket's noisy spread says the bins
    differ (``merge='auto'``: keep the mean iff ``SSE_B(noisy) < 2 (m-1) sigma^2``,
    i.e. iff the estimated true SSE is below the noise reduction it buys).

    Why it is eps-DP: step (1) is the Identity mechanism (eps-DP, sensitivity
    1); steps (2)-(4) read only the noisy counts and public parameters, so they
    are post-processing and cost nothing. Budget split: all of epsilon on
    the counts.

    Parameters
    ----------
    counts : array_like of int, shape (n,)
    epsilon : float or PureDP
    k_max : int, optional
        Largest bucket count considered (default ``n``: every k, as published).
        Layers of the DP for k beyond the point where ``2 k sigma^2`` alone
        exceeds the best corrected estimate are skipped; this pruning is exact
        (SSE is non-negative), so the k chosen is the one over all ``k <= k_max``.
    merge : {'auto', 'always'}
        Per-bucket decision as above, or always publish bucket means.
    engine : {'auto', 'numba', 'numpy'}
        Kernel for the dynamic program.
    rng : numpy.random.Generator, optional

    Examples
    --------
    >>> from veil.random import make_rng
    >>> r = noise_first([10] * 20 + [50] * 20, epsilon=1.0, rng=make_rng(seed=1))
    >>> r.parameters["k"] <= 40
    True
    """
    from ..validation import check_choice

    x = as_counts(counts)
    n = x.size
    b = as_budget(epsilon)
    merge = check_choice(merge, "merge", ("auto", "always"))
    k_max = n if k_max is None else check_k_bins(k_max, n, "k_max")
    noisy, var, scale = noisy_integers(x, b.epsilon, as_rng(rng))
    y = noisy.astype(np.float64)
    # only k minimising SSE*(k) + 2 k var matters: stop layers once 2 k var alone is worse
    _, last, A = voptimal_table(y, k_max, full=False, engine=engine, size_penalty=2.0 * var)
    ks = np.arange(1, k_max + 1)
    est = last[1:] - (n - 2 * ks) * var
    k = int(ks[np.argmin(est)])
    edges = backtrack(A, k, n)
    m = np.diff(edges)
    sums = np.add.reduceat(y, edges[:-1])
    means = np.repeat(sums / m, m)
    if merge == "always":
        out = means
        kept = int(k)
    else:
        sse = bucket_sse_noisy(y, edges)
        use_mean = sse < 2.0 * (m - 1) * var
        out = np.where(np.repeat(use_mean, m), means, y)
        kept = int(use_mean.sum())
    return Release(out, "noisefirst", b,
                   {"n": n, "k_max": k_max, "k": k, "merge": merge,
                    "edges": edges.tolist()},
                   {"counts": b.epsilon}, noise_scale=scale, noise_variance=var,
                   expected_error={"estimated_sse": float(est[k - 1]),
                                   "buckets_averaged": kept},
                   notes=(NEIGHBOURS, "steps after the noisy counts are post-processing"),
                   derived=("parameters.k", "parameters.edges", "expected_error"))
