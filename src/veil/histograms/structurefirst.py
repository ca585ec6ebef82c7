"""StructureFirst (Xu et al., VLDB Journal 2013) and the thesis' optimized StructureFirst.

Both compute the V-optimal ``k``-bucket structure on the (clipped) true counts,
draw the bucket boundaries one by one, right to left, with the exponential
mechanism, and then publish the bucket contents with the rest of the budget.

The score of a candidate start ``i`` of the last bucket ending at ``j`` is
``-(D[t-1, i] + SSE(i, j))``, the least total SSE of any structure that uses
this bucket. For counts in ``[0, F]`` one record changes one SSE by at most
``2F + 1``, so every score (a minimum of sums of SSEs in which the changed bin
occurs once) has sensitivity ``2F + 1``. ``F`` is a **public** bound
(``count_bound``): the counts are clipped to ``[0, F]`` before the structure
is computed, which keeps neighbouring histograms neighbouring (clipping is
1-Lipschitz per bin), so the bound holds for every input. The bound is never
read from the data.
"""

from __future__ import annotations

import math

import numpy as np

from ..mechanisms import exponential_mechanism_probabilities
from ..release import Release
from ..validation import check_choice, check_int, check_positive, check_probability
from ._common import (NEIGHBOURS, as_budget, as_counts, as_rng, bucket_sums, check_count_bound,
                      check_k_bins, noisy_integers, spread)
from .partition import prefix_sums, voptimal_table
from .tree import check_branching, noisy_tree, tree_height, tree_inference, zero_padding

__all__ = ["structure_first", "optimized_structure_first", "one_bucket_pays", "private_structure", "em_boundaries",
           "authors_structure_fraction", "optimal_structure_fraction", "AUTHORS_GRID",
           "NEIGHBOUR_VARIATION"]

#: optimized StructureFirst's public model: neighbouring bins differ by this times the mean count
#: (calibrated on the DPBench prefix runs: averaging stops paying between eps N/n = 0.1 and 1)
NEIGHBOUR_VARIATION = 5.0

#: the authors' budget search tries eps1 = j * eps / AUTHORS_GRID, j = 1, 2, ... (below eps)
AUTHORS_GRID = 20


def authors_structure_fraction(*, n: int, k: int, count_bound: float, epsilon: float,
                               literal: bool = False) -> float:
    """The share of epsilon the StructureFirst authors' code gives the structure.

    Their budget search (``getOptEps1`` in the authors' C++ shipped with DPBench)
    evaluates, on the grid ``eps1 = j eps / 20`` below ``eps``,

        v(eps1) = 2 (k-1)^3 / (eps1 (2 (k-1) - eps1 n F)) + 2 k / (eps - eps1)^2

    and keeps the ``eps1`` of least ``v`` (``F``: the count bound; public here,
    the authors' code used 10000 times the true mean count). Their code writes
    the second term as ``2 k / (1 - eps1)^2``, which equals this at ``eps = 1``;
    ``literal=True`` reproduces that (at ``eps > 1`` it then sends most of the
    budget to the structure). Whenever ``eps n F / 20 > 2 (k-1)`` -- every
    setting of the DPBench protocol, where ``F`` is at least the number of
    records -- the first term is negative and rising and the rule returns the
    first grid point: eps / 20 for the structure. The grid step 20 and the
    authors' ``k = ceil(0.1 n)`` are the constants of their ``Utilities.h``
    (``STEP_LEN``, ``K_RATIO``). ``k = 1`` or ``k = n`` (no boundary to draw)
    gives 0.

    Examples
    --------
    >>> authors_structure_fraction(n=1024, k=103, count_bound=1000, epsilon=0.1)
    0.05
    >>> authors_structure_fraction(n=64, k=7, count_bound=0.01, epsilon=1.0)
    0.45
    """
    n = check_int(n, "n", minimum=1)
    k = check_int(k, "k", minimum=1)
    F = check_positive(count_bound, "count_bound")
    eps = check_positive(epsilon, "epsilon")
    if k == 1 or k >= n:
        return 0.0
    e1 = np.arange(1, AUTHORS_GRID) * eps / AUTHORS_GRID
    top = 1.0 if literal else eps
    with np.errstate(divide="ignore", invalid="ignore"):
        v = (2.0 * (k - 1) ** 3 / (e1 * (2.0 * (k - 1) - e1 * n * F))
             + 2.0 * k / (top - e1) ** 2)
    v = np.where(np.isfinite(v), v, np.inf)
    return float(round(e1[int(np.argmin(v))] / eps, 12))


def private_structure(counts, *, k: int, epsilon: float, count_bound: float, rng,
                      engine: str = "auto", use_em: bool = True,
                      size: int | None = None) -> np.ndarray:
    """Draw a ``k``-bucket structure with the exponential mechanism (epsilon in total).

    The counts are clipped to ``[0, count_bound]``; each of the ``k - 1``
    boundaries is drawn with ``epsilon / (k - 1)`` and score sensitivity
    ``2F + 1`` (sequential composition). ``use_em=False`` takes the optimal
    boundaries instead (NOT private; only for tests and canaries). ``size``
    draws that many independent structures at once (for audits), shape
    ``(size, k + 1)``.

    Returns the bucket edges ``[0, e1, ..., n]``.
    """
    x = np.minimum(as_counts(counts), count_bound).astype(np.float64)
    return em_boundaries(x, k=k, epsilon=epsilon, sensitivity=2.0 * count_bound + 1.0,
                         rng=rng, engine=engine, use_em=use_em, size=size)


def em_boundaries(x: np.ndarray, *, k: int, epsilon: float, sensitivity: float, rng,
                  engine: str = "auto", use_em: bool = True,
                  size: int | None = None) -> np.ndarray:
    """Right-to-left exponential-mechanism draws of the boundaries of ``x`` (already clipped).

    Score of a start ``i`` of the last bucket ending at ``j`` with ``t`` buckets left:
    ``-(D[t-1, i] + SSE(i, j))``; ``epsilon / (k-1)`` per draw.
    """
    n = x.size
    m_out = 1 if size is None else int(size)
    edges = np.empty((m_out, k + 1), dtype=np.int64)
    edges[:, 0], edges[:, k] = 0, n
    if k > 1:
        D, _, _ = voptimal_table(x, k - 1, full=True, engine=engine)
        P, P2 = prefix_sums(x)
        eps_draw = epsilon / (k - 1)
        j = np.full(m_out, n, dtype=np.int64)
        for t in range(k, 1, -1):  # one draw per boundary, vectorized over candidates
            for jj in np.unique(j):  # distinct right ends (one when size is None)
                rows = np.flatnonzero(j == jj)
                i = np.arange(t - 1, jj)
                m = (jj - i).astype(np.float64)
                s = P[jj] - P[i]
                cost = D[t - 1, i] + np.maximum(P2[jj] - P2[i] - s * s / m, 0.0)
                if use_em:
                    p = exponential_mechanism_probabilities(-cost, epsilon=eps_draw,
                                                            sensitivity=sensitivity)
                    j[rows] = i[rng.choice(i.size, size=rows.size, p=p)]
                else:
                    j[rows] = i[np.argmin(cost)]
            edges[:, t - 1] = j
    return edges[0] if size is None else edges


def _bucket_trees(x: np.ndarray, edges: np.ndarray, epsilon: float, branching: int, rng):
    """A Boost tree inside every bucket (parallel composition), batched by tree height."""
    m = np.diff(edges)
    out = np.empty(x.size, dtype=np.float64)
    heights = np.array([0 if mm == 1 else tree_height(int(mm), branching) for mm in m])
    var0 = {}
    for h in np.unique(heights):  # one batch per distinct tree height
        sel = np.flatnonzero(heights == h)
        width = branching ** int(h) if h > 0 else 1
        rows = np.zeros((sel.size, width), dtype=np.int64)
        lens = m[sel]
        col = np.arange(width)
        mask = col[None, :] < lens[:, None]
        starts = edges[:-1][sel]
        idx = np.where(mask, starts[:, None] + col[None, :], 0)
        rows[mask] = x[idx[mask]]
        if h == 0:
            y, v, _ = noisy_integers(rows[:, 0], epsilon, rng)
            leaves = y.astype(np.float64)[:, None]
        else:
            L = int(h) + 1
            noisy, var, _ = noisy_tree(rows, branching=branching,
                                       level_epsilons=[epsilon / L] * L, rng=rng)
            leaves = tree_inference(zero_padding(noisy, lens, branching), var, branching)[0]
            v = var[0]
        var0[int(h)] = v
        out[idx[mask]] = leaves[mask]
    return out, var0


def structure_first(counts, *, epsilon, k: int | None = None, count_bound: float,
                    structure_fraction: float | None = None, variant: str = "boost",
                    branching: int = 2, engine: str = "auto", rng=None) -> Release:
    """StructureFirst: private V-optimal structure, then noisy bucket contents.

    Steps: clip the counts to ``[0, F]`` (``F = count_bound``, public); run the
    V-optimal DP for ``k`` buckets; draw the ``k - 1`` boundaries right to left
    with the exponential mechanism (``eps1 = structure_fraction * epsilon``,
    ``eps1 / (k-1)`` per draw, score sensitivity ``2F + 1``); publish the
    buckets with ``eps2 = epsilon - eps1``. By default the split is the
    authors' (:func:`authors_structure_fraction`: eps / 20 for the structure in
    every regime where ``F`` bounds real counts), with their ``k = ceil(n/10)``;
    when there is no boundary to draw (``k = 1`` or ``k = n``) the whole budget
    goes to the counts, as in their code. The buckets are published as:

    * ``variant='mean'``: one noisy sum per bucket (discrete Laplace, scale
      ``1/eps2``), spread as the bucket mean (Xu et al.'s paper);
    * ``variant='boost'``: a Boost tree inside each bucket (the authors' code).
      Their tree adds noise to an internal node only if the node's first bin,
      as an index into the whole histogram, is below the bucket's length, so
      the bucket sums of most buckets are published exact: not private, and
      not reproduced here (the audit canary
      ``structurefirst/authors-bucket-tree`` is that tree).

    Why it is eps-DP: the structure step is ``k - 1`` exponential-mechanism
    draws each ``eps1/(k-1)``-DP (score sensitivity ``2F+1`` for clipped
    counts, see the module docstring), ``eps1`` in total; given the public
    structure, the buckets are disjoint, so the bucket sums (mean variant) have
    L1 sensitivity 1 and the bucket trees (boost variant) each see a record in
    at most one tree (parallel composition), ``eps2`` in total. Sequential
    composition gives ``eps1 + eps2 = epsilon``. The counts published are the
    true (unclipped) ones.

    Parameters
    ----------
    counts : array_like of int, shape (n,)
    epsilon : float or PureDP
    k : int, optional
        Number of buckets (default ``ceil(n / 10)``, the published setting).
    count_bound : float
        Required public upper bound F on a bin count. Never derived from data.
    structure_fraction : float in (0, 1), optional
        Share of epsilon spent on the structure (default: the authors' rule).
    variant : {'boost', 'mean'}
    branching : int
        Arity of the per-bucket trees (boost variant).
    engine : {'auto', 'numba', 'numpy'}
    rng : numpy.random.Generator, optional

    Examples
    --------
    >>> from veil.random import make_rng
    >>> r = structure_first([1] * 30 + [40] * 30, epsilon=1.0, k=4, count_bound=100,
    ...                     rng=make_rng(seed=0))
    >>> len(r.parameters["edges"]), sorted(r.budget_split)
    (5, ['counts', 'structure'])
    """
    x = as_counts(counts)
    n = x.size
    b = as_budget(epsilon)
    F = check_count_bound(count_bound)
    k = max(1, math.ceil(n / 10)) if k is None else check_k_bins(k, n)
    variant = check_choice(variant, "variant", ("boost", "mean"))
    if structure_fraction is None:
        frac = authors_structure_fraction(n=n, k=k, count_bound=F, epsilon=b.epsilon)
        rule = "authors"
    else:
        frac = check_probability(structure_fraction, "structure_fraction", open_low=True,
                                 open_high=True)
        rule = "given"
    branching = check_branching(branching, n)
    g = as_rng(rng)
    if k == 1 or k == n or frac == 0.0:
        eps1, eps2 = 0.0, b.epsilon
        edges = np.array([0, n]) if k == 1 else np.arange(n + 1)
    else:
        eps1, eps2 = (p.epsilon for p in b.split([frac, 1.0 - frac]))
        edges = private_structure(x, k=k, epsilon=eps1, count_bound=F, rng=g, engine=engine)
    if variant == "mean":
        noisy, var, scale = noisy_integers(bucket_sums(x, edges), eps2, g)
        value = spread(edges, noisy)
        err = {"bucket_sum_variance": var}
    else:
        value, var0 = _bucket_trees(x, edges, eps2, branching, g)
        var, scale = None, None
        err = {f"node_variance_height_{h}": v for h, v in var0.items()}
    return Release(value, "structurefirst", b,
                   {"n": n, "k": k, "count_bound": F, "variant": variant,
                    "structure_fraction": frac, "split_rule": rule, "branching": branching,
                    "edges": edges.tolist(), "score_sensitivity": 2 * F + 1},
                   {"structure": eps1, "counts": eps2}, noise_scale=scale,
                   noise_variance=var, expected_error=err,
                   notes=(NEIGHBOURS, "structure computed on counts clipped to the public "
                          "count_bound; published counts are not clipped"),
                   derived=("parameters.edges",
                            *(("expected_error",) if variant != "mean" else ())))


def _random_structure_sse(n: int, k: int, F: float, records_bound, gamma: float) -> float:
    """``C`` of :func:`optimal_structure_fraction`: the SSE of ``k`` buckets around their
    means when the structure is no better than random (public quantities only)."""
    if records_bound is not None:
        N = check_positive(records_bound, "records_bound")
        # (N / n)^2 overflowed for N = 1e300 ("internal error: OverflowError")
        return gamma ** 2 * (n - k) * (N / n) ** 2 if N / n < 1e150 else math.inf
    return (n - k) * F * F / 4.0


def one_bucket_pays(*, n: int, count_bound: float, epsilon: float,
                    records_bound: float | None = None,
                    neighbour_variation: float = NEIGHBOUR_VARIATION) -> bool:
    """Whether one bucket over the whole domain (``k = 1``: the flat average) is expected to
    beat not averaging (``2 n / eps^2``), by the model of :func:`optimal_structure_fraction`:
    its error is the bias ``C`` plus ``2 / (n eps^2)``. With ``k = 1`` (the default for ten
    bins or fewer) the flat average was always published: at eps = 10^6 the counts
    [0, ..., 0, 1000] came out as ten times 100.

    Examples
    --------
    >>> one_bucket_pays(n=10, count_bound=1000, epsilon=1e6)
    False
    >>> one_bucket_pays(n=10, count_bound=1, epsilon=0.01)
    True
    """
    n = check_int(n, "n", minimum=1)
    eps = check_positive(epsilon, "epsilon")
    C = _random_structure_sse(n, 1, check_positive(count_bound, "count_bound"), records_bound,
                              check_positive(neighbour_variation, "neighbour_variation"))
    return C + 2.0 / (n * eps ** 2) < 2.0 * n / eps ** 2


def optimal_structure_fraction(*, n: int, k: int, count_bound: float, epsilon: float,
                               records_bound: float | None = None,
                               neighbour_variation: float = NEIGHBOUR_VARIATION) -> float:
    """The share of epsilon for optimized StructureFirst's structure (public inputs only).

    Returns ``r`` in ``[0.05, 0.95]``, or ``0.0`` when no structure should be
    drawn at all: ``k = 1`` (one bucket; :func:`one_bucket_pays` decides between it and a
    Boost tree), ``k = n``, or when averaging cannot pay.

    Derivation. With ``k`` buckets of about ``w = n/k`` bins, ``eps1 = r eps``
    for the structure and ``eps2 = (1-r) eps`` for the ``k`` noisy bucket sums
    spread as means, the expected total squared error over the bins is about
    ``S(r) + V(r)``:

    * ``V(r) = sum_B 2 / (eps2^2 m_B) = 2 k^2 / (n (1-r)^2 eps^2)``: the noise of
      the bucket sums (variance ``2/eps2^2``) spread over the bucket's bins;
    * ``S(r)``, the SSE of the drawn structure around its bucket means. The
      exponential mechanism draws ``k - 1`` boundaries with ``eps1/(k-1)`` each
      and score sensitivity ``2F+1``; by McSherry-Talwar each draw loses at most
      ``2 (2F+1) (k-1) ln(n) / eps1`` in SSE with high probability, so the excess
      over the optimal structure is at most ``A / eps1``,
      ``A = 2 (2F+1) (k-1)^2 ln n``. But no structure costs more than a structure
      drawn at random, ``C``: every non-first bin of a bucket deviates from the
      bucket mean by about the spread between neighbouring bins. veil's model of
      that spread is public: neighbouring bins differ by ``gamma`` times the
      mean count ``N/n`` (``gamma = neighbour_variation``), so
      ``C = gamma^2 (n - k) (N/n)^2`` with ``N = records_bound``; without a
      records bound only ``F`` is known and ``C = (n - k) F^2 / 4`` (the largest
      variance of values in ``[0, F]``). Hence ``S(r) = min(A / (r eps), C)``.
    * Not averaging at all keeps every bin's own noise, ``2 n / eps^2`` for
      counts measured with the whole budget.

    The rule returns the ``r`` minimising ``S(r) + V(r)`` on a grid of
    ``[0.05, 0.95]`` unless the ``2 n / eps^2`` of not averaging is smaller,
    then 0 (:func:`optimized_structure_first` then draws no structure and
    publishes the counts through one Boost tree, StructureFirst's per-bucket
    tree with a single bucket). Why this is right at every scale: the earlier
    rule capped ``S`` by the worst case ``F N``, which at ``F = N = 10^7`` is so
    large that the exponential mechanism's bound always looked better and 95 %
    of the budget went to a structure that, with sensitivity ``2F+1``, is drawn
    nearly at random; the bias of averaging over random buckets then grows with
    ``N^2`` while the noise does not. Here the random-structure cost ``C`` grows
    as ``(N/n)^2`` and is compared with the noise it saves: averaging is chosen
    only while ``eps N / n`` is below about ``1.5 / gamma`` (n = 1024, k = 103;
    counts per bin well below the noise), and then the structure gets the
    smallest share (its bound ``A / (r eps)`` exceeds ``C`` at every ``r``)
    unless ``F`` is small. ``gamma = 5`` puts that threshold at ``eps N / n``
    of about 0.3: on the DPBench histograms (prefix ranges, n = 1024) averaging
    beat the single tree at 0.1 and lost at 1 (docs/benchmarks.md); real
    histograms are spiky, so neighbouring bins differ by several times the mean.

    Examples
    --------
    >>> optimal_structure_fraction(n=4096, k=410, count_bound=1000, epsilon=1.0,
    ...                            records_bound=1000)
    0.05
    >>> optimal_structure_fraction(n=4096, k=410, count_bound=1e7, epsilon=1.0,
    ...                            records_bound=1e7)
    0.0
    """
    n = check_int(n, "n", minimum=1)
    k = check_int(k, "k", minimum=1)
    F = check_positive(count_bound, "count_bound")
    eps = check_positive(epsilon, "epsilon")
    gamma = check_positive(neighbour_variation, "neighbour_variation")
    identity = 2.0 * n / eps ** 2
    if k == 1 or k >= n:  # one bucket needs no structure; n buckets are Identity's
        return 0.0
    A = 2.0 * (2.0 * F + 1.0) * (k - 1) ** 2 * math.log(n)
    C = _random_structure_sse(n, k, F, records_bound, gamma)
    r = np.linspace(0.05, 0.95, 181)
    f = np.minimum(A / (r * eps), C) + 2.0 * k * k / (n * (1.0 - r) ** 2 * eps ** 2)
    i = int(np.argmin(f))
    if identity <= f[i]:
        return 0.0
    return float(round(r[i], 6))


def optimized_structure_first(counts, *, epsilon, k: int | None = None, count_bound: float,
                              records_bound: float | None = None, engine: str = "auto",
                              rng=None) -> Release:
    """Optimized StructureFirst (the thesis): optimal split, DP structure, noisy group means.

    Steps: (1) split epsilon between structure and counts by
    :func:`optimal_structure_fraction` (a function of the public ``n``, ``k``,
    ``F``, ``epsilon`` and, if given, the public bound ``records_bound`` on the
    number of records only; its derivation is in that docstring) -- when it
    returns 0, averaging cannot pay: no structure is drawn and the counts are
    published through one binary Boost tree over the domain with the whole
    budget (StructureFirst's per-bucket tree, one bucket); (2) the V-optimal DP
    for the optimal grouping on
    the counts clipped to ``[0, F]``; (3) the exponential mechanism draws the
    boundaries (``eps1 / (k-1)`` each, sensitivity ``2F+1``); (4) discrete
    Laplace noise of scale ``1/eps2`` on each group's sum, published as the group
    average in every bin.

    Why it is eps-DP: as :func:`structure_first` with ``variant='mean'`` --
    ``eps1`` for the structure (k-1 exponential-mechanism draws), ``eps2`` for
    the disjoint group sums (L1 sensitivity 1); the split is data-independent
    and sums to epsilon. Without structure the release is :func:`boost`'s
    (binary tree, ``epsilon / L`` per level).

    Examples
    --------
    >>> from veil.random import make_rng
    >>> r = optimized_structure_first([2] * 50 + [30] * 50, epsilon=1.0, k=5,
    ...                               count_bound=64, rng=make_rng(seed=0))
    >>> round(sum(r.budget_split.values()), 9)
    1.0
    """
    x = as_counts(counts)
    n = x.size
    b = as_budget(epsilon)
    F = check_count_bound(count_bound)
    k = max(1, math.ceil(n / 10)) if k is None else check_k_bins(k, n)
    g = as_rng(rng)
    r = optimal_structure_fraction(n=n, k=k, count_bound=F, epsilon=b.epsilon,
                                   records_bound=records_bound)
    if k == 1 and one_bucket_pays(n=n, count_bound=F, epsilon=b.epsilon,
                                  records_bound=records_bound):
        eps1, eps2 = 0.0, b.epsilon
        edges = np.array([0, n])
    elif r == 0.0:  # averaging cannot pay: one Boost tree over the domain, no structure
        value, var0 = _bucket_trees(x, np.array([0, n]), b.epsilon, 2, g)
        return Release(value, "optimized-structurefirst", b,
                       {"n": n, "k": 1, "count_bound": F, "records_bound": records_bound,
                        "structure_fraction": 0.0, "published_as": "one binary Boost tree",
                        "edges": [0, n], "score_sensitivity": 2 * F + 1},
                       {"structure": 0.0, "counts": b.epsilon},
                       expected_error={f"node_variance_height_{h}": v for h, v in var0.items()},
                       notes=(NEIGHBOURS, "budget split from public parameters only: "
                              "no structure (averaging cannot pay at this signal)"))
    else:
        eps1, eps2 = (p.epsilon for p in b.split([r, 1.0 - r]))
        edges = private_structure(x, k=k, epsilon=eps1, count_bound=F, rng=g, engine=engine)
    noisy, var, scale = noisy_integers(bucket_sums(x, edges), eps2, g)
    return Release(spread(edges, noisy), "optimized-structurefirst", b,
                   {"n": n, "k": k, "count_bound": F, "records_bound": records_bound,
                    "structure_fraction": r,
                    "edges": edges.tolist(), "score_sensitivity": 2 * F + 1},
                   {"structure": eps1, "counts": eps2}, noise_scale=scale,
                   noise_variance=var, expected_error={"bucket_sum_variance": var},
                   notes=(NEIGHBOURS, "budget split from public parameters only"),
                   derived=("parameters.edges",))
