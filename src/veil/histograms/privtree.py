"""PrivTree in one dimension: a private binary interval tree without a height limit.

PrivTree (Zhang, Xiao and Xie, SIGMOD 2016) grows a hierarchical decomposition whose
privacy cost does not depend on its depth. In one dimension the root is the whole domain
``[0, n)``; a node ``[lo, hi)`` at depth ``d`` holding ``c`` records has the *biased count*
``b = max(c - d * delta, theta - delta)`` and is split at its midpoint ``(lo + hi) // 2``
iff ``b + Lap(lambda) > theta`` and it is longer than one bin. With fan-out ``beta = 2``,
``lambda = (2 beta - 1) / (beta - 1) / eps_tree = 3 / eps_tree`` and
``delta = lambda * ln(beta)``, the set of leaves is ``eps_tree``-DP for neighbours that
differ by one record (the paper's theorem: the bias ``d * delta`` turns the privacy loss
along a root-to-leaf path into a geometric series, so the depth is unbounded yet the cost is
fixed). ``veil.maps.privtree`` is the two-dimensional (quadtree) version.

The leaves partition the bins into intervals, as DAWA's partition does, but the partition
costs a fixed ``tree_fraction`` of epsilon whatever its size and follows the *mass* of the
data: empty or sparse stretches stay one leaf, dense ones are split down to where the bias
stops them. The ``m`` leaf totals are then measured with one of two strategies over the
leaves, then least squares and a uniform spread inside each leaf:

* HDMM's workload-optimized strategy over ``m`` bins: the shipped p-Identity strategy of the
  built-in workload -- prefix for the prefix workload, all ranges for any other range
  workload -- at size ``m`` (restricted from the next shipped size, no optimizer;
  :func:`veil.histograms.hdmm.optimize_strategy`), Laplace noise of scale ``1 / eps_leaf`` on
  each strategy answer;
* GreedyH's hierarchy over the leaves for the public workload, as DAWA and coarse measure
  their buckets: Laplace noise of scale ``1 / (w eps_leaf)`` on a node of weight ``w``,
  least squares by :func:`veil.histograms.dawa.tree_gls`.

``measure='least-error'`` (the default) computes both strategies' exact expected total
squared workload error given the leaves (``2 tr[(A^T S^-1 A)^-1 T^T G T] / eps_leaf^2``, ``T``
the uniform spread, ``G`` the workload's Gram matrix; :func:`leaf_measurement`) and uses the
smaller; ``'hdmm'`` and ``'greedy-h'`` force one. HDMM's strategy has about 0.69x the error
of a hierarchy for prefixes and 0.66x for all ranges at 1024 bins (docs/benchmarks.md, "HDMM:
exact expected error") and wins where the tree has many leaves (high signal); GreedyH's
weights follow the workload as it falls on the leaves and win where a few wide leaves carry
most of the queries. On the DPBench protocol the least-error release has 0.74-0.76x the
GreedyH-only release's prefix error from ``eps N = 10^5`` (docs/benchmarks.md, "PrivTree in
one dimension"). Above :data:`MAX_COMPARED_LEAVES` leaves HDMM measures without the
comparison, and above :data:`MAX_HDMM_LEAVES` (no shipped strategy; optimizing one takes
about a minute) GreedyH does.

**Why it is eps-DP.** The leaves are ``eps_tree``-DP (above). Given the leaves, one record
changes exactly one leaf total by 1. Which strategy measures is a function of the leaves and
the public workload only (post-processing of the tree). HDMM's strategy depends on ``m`` and
the workload kind only, and every one of its columns has L1 norm 1, so the strategy answers
have L1 sensitivity 1 and Laplace noise of scale ``1 / eps_leaf`` on each is
``eps_leaf``-DP. (GreedyH: the record moves the nodes of one root-to-leaf path of the
hierarchy, whose weights depend on the leaves and the public workload only and sum to at most
1 along every path: measuring with scale ``1 / (w eps_leaf)`` costs at most ``eps_leaf``.)
``eps_tree + eps_leaf = eps`` by sequential composition; least squares and the spread are
post-processing. Only the leaves (a set of booleans) are released from the tree step, not its
noisy counts.

**Defaults.** ``tree_fraction = 0.15`` and ``theta = 0`` (the paper's threshold). The
fraction was measured on the 18 DPBench 1-D histograms at n = 1024, 10 trials, fractions
0.05-0.3, ``eps N`` from 10 to 10^5 (``benchmarks/histograms.py --calibrate-privtree``;
docs/benchmarks.md, "PrivTree in one dimension"). With the GreedyH measurement (2026-12-07,
sixth session) 0.15 was within 1.03x of the best fraction on the geometric mean over the
settings for both workloads and within 1.10x at every setting; rerun with the least-error
measurement (seventh session) it is within 1.02x (prefix) and 1.04x (random ranges) of the
best fraction on that mean (0.2: 1.03x and 1.02x) and within 1.14x at every setting.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import ParameterError
from ..release import Release
from ..validation import check_positive, check_probability
from ._common import NEIGHBOURS, as_budget, as_counts, as_rng, bucket_sums, spread
from .dawa import _measure_tree, greedy_h, tree_gls
from .workload import RangeWorkload

__all__ = ["privtree", "privtree_leaves", "privtree_parameters", "leaf_strategy",
           "leaf_workload_gram", "leaf_measurement", "leaf_information", "FANOUT", "MEASURES", "MAX_HDMM_LEAVES",
           "MAX_COMPARED_LEAVES"]

#: binary splits (an interval into its two halves)
FANOUT = 2
#: how the leaf totals are measured: the one of HDMM's strategy and GreedyH's hierarchy with
#: the smaller exact expected workload error given the leaves, or either one
MEASURES = ("least-error", "hdmm", "greedy-h")
#: the most leaves measured with HDMM (the largest shipped strategy size); above it a strategy
#: would be optimized at run time (8192 bins: about a minute), so GreedyH measures them
MAX_HDMM_LEAVES = 4096
#: the most leaves for which 'least-error' computes both expected errors (two dense m x m
#: solves: about 0.15 s at 1024 leaves here); above it HDMM measures (at that many leaves the
#: signal is high, where HDMM's strategy was the better one on the DPBench protocol)
MAX_COMPARED_LEAVES = 1024


def leaf_strategy(workload: RangeWorkload, m: int):
    """HDMM's strategy for ``m`` leaves under the public workload's kind, or None above
    :data:`MAX_HDMM_LEAVES`: the prefix strategy for the prefix workload, the all-range one
    for every other range workload (a range of bins is a range of leaves up to its partial
    end leaves). A function of ``m`` and the workload kind only; shipped or restricted from
    the next shipped size, so no optimizer runs from 8 leaves up (below 8, a few milliseconds
    from a public start).

    Examples
    --------
    >>> s = leaf_strategy(RangeWorkload.from_spec("prefix", 1024), 100)
    >>> s.n, s.source
    (100, 'shipped n=128, restricted to the first 100 bins')
    """
    from .hdmm import optimize_strategy

    if int(m) > MAX_HDMM_LEAVES:
        return None
    return optimize_strategy("prefix" if workload.kind == "prefix" else "all-range", int(m))


def leaf_workload_gram(workload: RangeWorkload, edges) -> np.ndarray:
    """``T^T G T``: the Gram matrix of the workload mapped to the leaves ``edges``.

    ``T`` (``n x m``) spreads a leaf total uniformly over its bins, so a query's answer from
    leaf estimates ``z`` is ``w_q^T T z``; the expected total squared error of any unbiased
    leaf estimate with covariance ``C`` is ``tr(C T^T G T)``. For the prefix and all-range
    workloads ``G[i, j] = f(min(i, j)) g(max(i, j))`` (prefix: ``f = 1``, all ranges:
    ``f(i) = i + 1``; both ``g(j) = n - j``), so the blocks come from sums over the bins in
    ``O(n + m^2)``; for a given range set, from each query's coverage of the leaves
    (``O(q m)``).

    Examples
    --------
    >>> w = RangeWorkload.from_spec("prefix", 4)
    >>> leaf_workload_gram(w, [0, 2, 4]).tolist()      # prefixes 1..4 over leaves [0,2), [2,4)
    [[3.25, 1.5], [1.5, 1.25]]
    """
    e = np.asarray(edges, dtype=np.int64)
    n, m = workload.n, e.size - 1
    wid = np.diff(e).astype(np.float64)
    if workload.kind == "ranges":
        q = workload.queries
        lo = e[:-1].astype(np.float64)
        cover = (np.clip((q[:, 1:2] - lo) / wid, 0.0, 1.0)
                 - np.clip((q[:, 0:1] - lo) / wid, 0.0, 1.0))          # q x m
        return cover.T @ cover
    j = np.arange(n, dtype=np.float64)
    f = np.ones(n) if workload.kind == "prefix" else j + 1.0
    g = n - j
    Fc = np.concatenate(([0.0], np.cumsum(f)))
    F = Fc[e[1:]] - Fc[e[:-1]]                            # sum of f over each leaf
    Gs = np.add.reduceat(g, e[:-1])                      # sum of g over each leaf
    # within a leaf: sum_j g(j) (2 sum_{i in leaf, i < j} f(i) + f(j))
    leaf = np.repeat(np.arange(m), np.diff(e))
    before = Fc[:-1] - Fc[e[:-1]][leaf]                   # sum of f over the leaf before j
    D = np.bincount(leaf, weights=g * (2.0 * before + f), minlength=m)
    M = np.triu(np.outer(F, Gs), 1)
    out = M + M.T
    out[np.diag_indices(m)] = D
    return out / np.outer(wid, wid)


def leaf_information(name: str, strategy, m: int) -> np.ndarray:
    """``A^T S^-1 A`` of a leaf measurement in units of ``eps^2 / 2`` (``m x m``): ``A^T A``
    of HDMM's strategy (``name='hdmm'``), or the weighted node indicators of GreedyH's
    (``'greedy-h'``). Its inverse times ``2 / eps^2`` is the covariance of the least-squares
    leaf totals; the file audit uses it for its most powerful linear statistic."""
    if name == "hdmm":
        A = strategy.dense()
        return A.T @ A
    M = np.zeros((m, m))
    for lo, hi, wt in zip(strategy.lo.tolist(), strategy.hi.tolist(),
                          strategy.weight.tolist()):
        if wt > 0:
            M[lo:hi, lo:hi] += wt * wt
    return M


def leaf_measurement(workload: RangeWorkload, edges, measure: str = "least-error"):
    """How ``privtree`` measures the leaves ``edges``: ``(name, strategy, errors)``.

    ``name`` is 'hdmm' (``strategy`` an :class:`veil.histograms.hdmm.HDMMStrategy` over the
    leaves) or 'greedy-h' (a GreedyH hierarchy). With ``measure='least-error'`` and at most
    :data:`MAX_COMPARED_LEAVES` leaves, both strategies' exact expected total squared
    workload errors at epsilon 1 are computed (``2 tr[(A^T S^-1 A)^-1 T^T G T]``,
    :func:`leaf_workload_gram`) and returned in ``errors``, and the smaller one is used.
    A function of the leaves and the public workload only: post-processing of the tree.

    Examples
    --------
    >>> w = RangeWorkload.from_spec("prefix", 1024)
    >>> name, _, errors = leaf_measurement(w, np.arange(0, 1025, 16))    # 64 equal leaves
    >>> name, round(errors["hdmm"]), round(errors["greedy-h"])
    ('hdmm', 27641, 39672)
    """
    if measure not in MEASURES:
        raise ParameterError(f"measure must be one of {', '.join(MEASURES)}; got {measure!r}")
    e = np.asarray(edges, dtype=np.int64)
    m = int(e.size - 1)
    hs = leaf_strategy(workload, m) if measure != "greedy-h" else None
    if hs is None:
        return "greedy-h", greedy_h(e, workload), None
    if measure == "hdmm" or m > MAX_COMPARED_LEAVES:
        return "hdmm", hs, None
    from scipy.linalg import cho_factor, cho_solve

    G = leaf_workload_gram(workload, e)
    gh = greedy_h(e, workload)
    err = {}
    for name, strat in (("hdmm", hs), ("greedy-h", gh)):
        try:   # GreedyH keeps at least 1 % of every path for the children: full rank
            err[name] = 2.0 * float(np.trace(cho_solve(cho_factor(
                leaf_information(name, strat, m)), G)))
        except np.linalg.LinAlgError:  # pragma: no cover - a leaf total not identified
            err[name] = math.inf
    if err["hdmm"] <= err["greedy-h"]:
        return "hdmm", hs, err
    return "greedy-h", gh, err


def privtree_parameters(eps_tree: float) -> tuple[float, float]:
    """``(lambda, delta)`` of the binary PrivTree for a tree budget ``eps_tree``.

    Examples
    --------
    >>> lam, delta = privtree_parameters(1.0)
    >>> round(lam, 4), round(delta, 4)
    (3.0, 2.0794)
    """
    lam = (2 * FANOUT - 1) / (FANOUT - 1) / check_positive(eps_tree, "eps_tree")
    return lam, lam * math.log(FANOUT)


def privtree_leaves(counts, *, eps_tree: float, theta: float = 0.0, rng=None, batch: int = 1,
                    split_on_true: bool = False, lambda_factor: float = 1.0):
    """Grow ``batch`` independent binary PrivTrees over ``counts``; return their leaves.

    Returns ``(starts, max_depth)``: ``starts`` is a boolean array ``(batch, n)`` that is
    True where a leaf begins (``starts[:, 0]`` is always True), ``max_depth`` the largest
    depth reached. The trees are grown level by level over arrays of nodes.

    ``split_on_true`` (the split decision on the true biased count, no noise) and
    ``lambda_factor`` (noise scale times a factor) exist only for the audits' canaries;
    never use them.

    Examples
    --------
    >>> from veil.random import make_rng
    >>> s, depth = privtree_leaves([0] * 6 + [400, 400], eps_tree=1.0, rng=make_rng(seed=1))
    >>> s.shape, bool(s[0, 0]), bool(s[0, 6])     # the dense end is split off
    ((1, 8), True, True)
    """
    x = as_counts(counts)
    n = x.size
    g = as_rng(rng)
    lam, delta = privtree_parameters(eps_tree)
    lam *= float(lambda_factor)
    P = np.concatenate(([0], np.cumsum(x))).astype(np.float64)
    starts = np.zeros((batch, n), dtype=bool)
    b = np.arange(batch, dtype=np.int64)
    lo = np.zeros(batch, dtype=np.int64)
    hi = np.full(batch, n, dtype=np.int64)
    depth = 0
    while b.size:
        c = P[hi] - P[lo]
        biased = np.maximum(c - depth * delta, theta - delta)
        score = biased if split_on_true else biased + g.laplace(0.0, lam, size=biased.shape)
        split = (score > theta) & (hi - lo > 1)
        starts[b[~split], lo[~split]] = True
        if not split.any():
            break
        b, lo, hi = b[split], lo[split], hi[split]
        mid = (lo + hi) // 2
        b = np.concatenate((b, b))
        lo, hi = np.concatenate((lo, mid)), np.concatenate((mid, hi))
        depth += 1
    return starts, depth


def privtree(counts, *, epsilon, tree_fraction: float = 0.15, theta: float = 0.0,
             workload="prefix", measure: str = "least-error", rng=None) -> Release:
    """PrivTree's leaves (``tree_fraction`` of eps), their totals measured with HDMM or GreedyH.

    Why it is eps-DP: the leaves are ``eps_tree``-DP by PrivTree's theorem with fan-out 2
    (``lambda = 3 / eps_tree``, ``delta = lambda ln 2``); the leaf totals have sensitivity
    1 given the leaves and are measured with HDMM's strategy over the leaves (unit L1
    columns, Laplace ``1 / eps_leaf`` per answer) or on DAWA's GreedyH hierarchy, whose
    weights sum to at most 1 along every path (module docstring); sequential composition
    adds the two.

    Parameters
    ----------
    counts : array_like of int, shape (n,)
    epsilon : float or PureDP
    tree_fraction : float in (0, 1)
        Share of epsilon for growing the tree (the rest measures the leaves).
    theta : float
        The public split threshold (in records); 0 is the paper's choice.
    workload : 'prefix', 'all-range' or array (q, 2) of ranges ``[lo, hi)``
        The public queries the leaf measurement is chosen for (HDMM: the prefix strategy
        for 'prefix', the all-range strategy otherwise; GreedyH: its weights).
    measure : {'least-error', 'hdmm', 'greedy-h'}
        How the leaf totals are measured (module docstring; :func:`leaf_measurement`):
        'least-error' uses whichever of HDMM's strategy and GreedyH's hierarchy has the
        smaller exact expected workload error given the leaves. With more than
        :data:`MAX_HDMM_LEAVES` leaves GreedyH measures; the release's ``leaf_measure``
        parameter says which ran and ``leaf_expected_errors`` the two expected errors (at
        the leaf budget) when they were compared.
    rng : numpy.random.Generator, optional

    Examples
    --------
    >>> from veil.random import make_rng
    >>> x = [0] * 480 + [40] * 32 + [0] * 512
    >>> r = privtree(x, epsilon=1.0, rng=make_rng(seed=0))
    >>> r.parameters["buckets"] < 64, len(r.value), sorted(r.budget_split)
    (True, 1024, ['buckets', 'tree'])
    """
    x = as_counts(counts)
    n = x.size
    b = as_budget(epsilon)
    frac = check_probability(tree_fraction, "tree_fraction", open_low=True, open_high=True)
    theta = float(theta)
    if not math.isfinite(theta):
        raise ParameterError(f"theta must be finite, got {theta!r}")
    w = RangeWorkload.from_spec(workload, n)
    g = as_rng(rng)
    if measure not in MEASURES:
        raise ParameterError(f"measure must be one of {', '.join(MEASURES)}; got {measure!r}")
    e_tree, e_leaf = (p.epsilon for p in b.split([frac, 1.0 - frac]))
    starts, depth = privtree_leaves(x, eps_tree=e_tree, theta=theta, rng=g)
    edges = np.concatenate((np.flatnonzero(starts[0]), [n])).astype(np.int64)
    m = int(edges.size - 1)
    used, strat, errors = leaf_measurement(w, edges, measure)
    if used == "hdmm":
        est = strat.estimate(strat.measure(bucket_sums(x, edges).astype(np.float64), e_leaf,
                                           g))
        measured = m + strat.p
    else:
        y, var = _measure_tree(bucket_sums(x, edges), strat, e_leaf, g)
        est = tree_gls(strat, y, var)
        measured = int((strat.weight > 0).sum())
    # the notes follow the public option only: which strategy ran depends on the leaves
    hdmm_note = ("HDMM's p-Identity strategy over the leaves for the public workload's kind "
                 "(a function of the number of leaves only)")
    greedy_note = "GreedyH's hierarchy, its weights from the leaves and the public workload"
    how = {"least-error": f"the one of {hdmm_note} and {greedy_note} with the smaller exact "
                          "expected workload error given the leaves (leaf_measure says which; "
                          f"GreedyH above {MAX_HDMM_LEAVES} leaves), least squares",
           "hdmm": f"{hdmm_note} (GreedyH above {MAX_HDMM_LEAVES} leaves), least squares",
           "greedy-h": f"{greedy_note}, least squares"}[measure]
    noise = ("float64 Laplace noise: scale 1/epsilon on each HDMM strategy answer, "
             "1/(w epsilon) on a GreedyH node of weight w")
    lam, delta = privtree_parameters(e_tree)
    return Release(spread(edges, est), "privtree", b,
                   {"n": n, "tree_fraction": frac, "theta": theta, "fanout": FANOUT,
                    "lambda": lam, "delta": delta, "buckets": m, "edges": edges.tolist(),
                    "max_depth": int(depth), "workload": w.describe(), "measure": measure,
                    "leaf_measure": used, "measured_nodes": measured,
                    "leaf_expected_errors": None if errors is None else
                    {k: v / e_leaf ** 2 for k, v in errors.items()}},
                   {"tree": e_tree, "buckets": e_leaf}, noise_scale=1.0 / e_leaf,
                   notes=(NEIGHBOURS, "leaves: PrivTree with fan-out 2 (split decisions with "
                          "Laplace lambda = 3/eps_tree on counts biased by depth * delta; only "
                          "the leaves are released); leaf totals: " + how, noise),
                   derived=("parameters.buckets", "parameters.edges", "parameters.max_depth",
                            "parameters.measured_nodes", "parameters.leaf_measure",
                            "parameters.leaf_expected_errors"))
