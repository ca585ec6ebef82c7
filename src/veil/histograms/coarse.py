"""Coarse: equal-width buckets whose number follows the signal, measured with GreedyH.

At very low signal (``epsilon * N`` of a few tens to a few thousands, ``N`` records), no
method can afford to measure 1024 bins, and the data-dependent partitions (DAWA's, AHP's
clusters) pay for their choice with a part of the budget and with the bias of picking the
least *noisy* cost. The data-independent alternative, as UG does in two dimensions
(Qardaji, Yang, Li, ICDE 2013), is a grid as coarse as the signal requires: ``B``
equal-width buckets, each bucket's total measured (here with DAWA's GreedyH hierarchy over
the buckets, for the public workload, and least squares), spread uniformly over its bins.
The number of buckets balances the noise (more buckets, more noise in every range) against
the bias of the uniform spread (fewer buckets, coarser shape).

**The bucket rule.** ``log2 B = BUCKET_RULE[0] + BUCKET_RULE[1] * log10(epsilon * N)``,
rounded to the nearest integer and clipped to ``[1, n]``: 2 buckets at ``epsilon N = 10``,
16 at 100, 64 at 1000, 512 at 10^4. It is the least-squares line through the best power of
two per setting and workload (prefix and 2000 random ranges, ``epsilon * N`` from 10 to 10^4,
the settings where fewer than ``n`` buckets win), measured on the 18 DPBench 1-D histograms
at n = 1024 with 10 trials (``benchmarks/histograms.py --calibrate-coarse --trials 10
--seed 14``; docs/benchmarks.md, "Coarse: equal-width buckets at low signal"). The error is
flat near the best count: on that run the rule's count is within 1.10x of the best count's
error at every setting and workload.

**Why it is eps-DP.** ``B`` and the bucket edges depend only on public values (``n``,
``epsilon`` and a public records bound ``N``) or, without a bound, on a noisy total that
costs ``total_fraction`` of epsilon (discrete Laplace, sensitivity 1). One record changes
exactly one bucket total by 1, so each node of the hierarchy moves by at most 1, and only
the nodes on one root-to-leaf path; GreedyH's weights depend on the edges and the workload
only and sum to at most 1 along every path, so measuring node ``v`` with Laplace noise of
scale ``1 / (w_v eps)`` costs at most ``eps`` in total (as DAWA's stage 2,
:mod:`veil.histograms.dawa`). Least squares and the uniform spread are post-processing.
"""

from __future__ import annotations

import math

import numpy as np

from ..release import Release
from ..validation import check_int, check_positive, check_probability
from ._common import (NEIGHBOURS, as_budget, as_counts, as_rng, bucket_sums, noisy_integers,
                      split_edges, spread)
from .dawa import _measure_tree, greedy_h, tree_gls
from .workload import RangeWorkload

__all__ = ["coarse", "coarse_buckets", "BUCKET_RULE"]

#: ``(a, b)``: ``log2 B = a + b * log10(epsilon * N)`` (fitted offline, see the module docstring)
BUCKET_RULE = (-1.2724, 2.5454)


def coarse_buckets(*, epsilon: float, records_bound: float, n: int) -> int:
    """The number of equal-width buckets for ``epsilon`` and a public records bound.

    ``records_bound`` must be public (or a DP estimate paid for elsewhere): the bucket
    count, and so every edge, is published with the release.

    Examples
    --------
    >>> [coarse_buckets(epsilon=0.01, records_bound=N, n=1024) for N in (10**3, 10**4, 10**5)]
    [2, 16, 64]
    >>> coarse_buckets(epsilon=10.0, records_bound=10**7, n=1024)   # never more than n
    1024
    """
    n = check_int(n, "n", minimum=1)
    signal = float(check_positive(epsilon, "epsilon")) * float(
        check_positive(records_bound, "records_bound"))
    log2b = BUCKET_RULE[0] + BUCKET_RULE[1] * math.log10(signal)
    if log2b <= 0:
        return 1
    if log2b >= math.log2(n):
        return n
    return min(n, max(1, 2 ** round(log2b)))


def coarse(counts, *, epsilon, buckets: int | None = None, records_bound: float | None = None,
           workload="prefix", total_fraction: float = 0.05, rng=None) -> Release:
    """Equal-width buckets (as many as the signal affords), GreedyH, uniform spread.

    Why it is eps-DP: the bucket edges are public (from ``buckets``, or from ``epsilon``
    and a public ``records_bound``, or from a noisy total bought with ``total_fraction`` of
    epsilon); the bucket totals have sensitivity 1 and are measured on DAWA's GreedyH
    hierarchy, whose weights sum to at most 1 along every path (module docstring).

    Parameters
    ----------
    counts : array_like of int, shape (n,)
    epsilon : float or PureDP
    buckets : int, optional
        A public number of buckets (1 to n). Default: :func:`coarse_buckets`.
    records_bound : float, optional
        A **public** bound on the number of records (or a DP estimate paid for elsewhere)
        for the bucket rule. Never the true count of private data. Without it and without
        ``buckets``, ``total_fraction`` of epsilon buys a noisy total.
    workload : 'prefix', 'all-range' or array (q, 2) of ranges ``[lo, hi)``
        The public queries GreedyH's weights are chosen for.
    total_fraction : float in (0, 1)
        Share of epsilon for the noisy total when neither ``buckets`` nor
        ``records_bound`` is given.
    rng : numpy.random.Generator, optional

    Examples
    --------
    >>> from veil.random import make_rng
    >>> r = coarse([3] * 512 + [0] * 512, epsilon=0.1, records_bound=2000,
    ...            rng=make_rng(seed=0))
    >>> r.parameters["buckets"], len(r.value)
    (32, 1024)
    """
    x = as_counts(counts)
    n = x.size
    b = as_budget(epsilon)
    w = RangeWorkload.from_spec(workload, n)
    frac = check_probability(total_fraction, "total_fraction", open_low=True, open_high=True)
    g = as_rng(rng)
    split, params, derived = {}, {}, ()
    measure = b
    unused = ()
    if buckets is not None:
        B = check_int(buckets, "buckets", minimum=1, maximum=n)
        rule = "given"
        if records_bound is not None:  # checked, then set aside: the count is given
            check_positive(records_bound, "records_bound")
            unused = (f"records_bound={records_bound:g} not used: the number of buckets "
                      f"was given",)
    elif records_bound is not None:
        N = check_positive(records_bound, "records_bound")
        B = coarse_buckets(epsilon=b.epsilon, records_bound=N, n=n)
        rule, params = "records_bound", {"records_bound": N}
    else:
        e0, measure = b.split([frac, 1.0 - frac])
        tot, _, _ = noisy_integers(np.array([int(x.sum())]), e0.epsilon, g)
        N = max(float(tot[0]), 1.0)
        B = coarse_buckets(epsilon=measure.epsilon, records_bound=N, n=n)
        rule, split = "noisy total", {"total": e0.epsilon}
        params = {"noisy_total": N, "total_fraction": frac}
        derived = ("parameters.noisy_total", "parameters.buckets", "parameters.edges",
                   "parameters.measured_nodes")
    edges = split_edges(n, B)
    strat = greedy_h(edges, w)
    y, var = _measure_tree(bucket_sums(x, edges), strat, measure.epsilon, g)
    est = tree_gls(strat, y, var)
    return Release(spread(edges, est), "coarse", b,
                   {"n": n, "buckets": B, "edges": edges.tolist(), "bucket_rule": rule,
                    "workload": w.describe(),
                    "measured_nodes": int((strat.weight > 0).sum()), **params},
                   {**split, "buckets": measure.epsilon}, noise_scale=1.0 / measure.epsilon,
                   notes=(NEIGHBOURS, "equal-width buckets from public values"
                          + (" and a noisy total" if derived else "")
                          + "; GreedyH weights from the edges and the public workload only",
                          "float64 Laplace noise; a node of weight w has scale "
                          "1/(w epsilon)", *unused),
                   derived=derived)
