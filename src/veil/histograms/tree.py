"""Hierarchical histograms: Boost (Hay et al. PVLDB 2010) and HB (Qardaji et al. PVLDB 2013).

A tree of arity ``b`` is laid over the domain (padded with empty bins up to the
next power of ``b``; the padding is public and is dropped after inference).
Every node's count gets exact discrete Laplace noise, then constrained
inference turns the noisy tree into the consistent least-squares estimate
(two linear passes, generalised here to a different noise variance per level).
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import ParameterError
from ..release import Release
from ..validation import check_finite_array, check_int
from ._common import NEIGHBOURS, as_budget, as_counts, as_rng, noisy_integers

__all__ = ["boost", "hb", "qardaji_branching", "tree_height", "tree_inference", "tree_strategy_matrix",
           "noisy_tree", "level_usage", "zero_padding"]


def tree_height(n: int, branching: int) -> int:
    """Smallest ``h >= 1`` with ``branching**h >= n`` (integer arithmetic)."""
    n = check_int(n, "n", minimum=1)
    b = check_int(branching, "branching", minimum=2)
    h, size = 1, b
    while size < n:
        size *= b
        h += 1
    return h


def qardaji_branching(n: int) -> int:
    """Branching factor minimising Qardaji et al.'s range-query variance (their Eq. 3).

    ``V(b) = (b - 1) h^3 - 2 (b + 1) h^2 / 3`` with ``h = ceil(log_b n)``,
    minimised over ``b = 2..n`` (vectorized). Depends only on the public n.

    Examples
    --------
    >>> qardaji_branching(4096)
    16
    """
    n = check_int(n, "n", minimum=1)
    if n <= 2:
        return 2
    b = np.arange(2, n + 1)
    h = np.ceil(np.log(n) / np.log(b) - 1e-12)
    h = np.maximum(h, 1)
    # fix floating rounding of log ratios with exact integer powers
    h = np.where(b.astype(np.float64) ** (h - 1) >= n, h - 1, h)
    h = np.where(b.astype(np.float64) ** h < n, h + 1, h)
    v = (b - 1) * h ** 3 - 2 * (b + 1) * h ** 2 / 3.0
    return int(b[np.argmin(v)])


def _levels_true(x: np.ndarray, b: int, h: int) -> list[np.ndarray]:
    """True counts per level, leaves first; the last axis padded with zeros to b**h.

    ``x`` may carry leading batch dimensions (one tree per row)."""
    lead = x.shape[:-1]
    leaves = np.zeros((*lead, b ** h), dtype=np.int64)
    leaves[..., :x.shape[-1]] = x
    levels = [leaves]
    for _ in range(h):
        levels.append(levels[-1].reshape(*lead, -1, b).sum(axis=-1))
    return levels


def tree_inference(noisy_levels, variances, branching: int) -> list[np.ndarray]:
    """Least-squares consistent estimates of every node from noisy node counts.

    Parameters
    ----------
    noisy_levels : list of arrays
        Noisy counts per level, leaves first (level ``l`` has ``b**(h-l)`` nodes).
    variances : sequence of float
        Noise variance of every node of a level (``inf``: level not measured).
    branching : int

    Returns
    -------
    list of arrays
        Consistent estimates (every parent equals the sum of its children), the
        generalised least-squares (best linear unbiased) estimate: an upward pass
        combines each node's own measurement with the sum of its children's
        estimates by inverse-variance weighting, a downward pass shares the
        parent's residual among the children in proportion to their variances
        (equal shares, since siblings have equal variance). With equal
        variances this is Hay et al.'s constrained inference.
    """
    b = check_int(branching, "branching", minimum=2)
    ys = [np.asarray(y, dtype=np.float64) for y in noisy_levels]
    var = [float(v) for v in variances]
    L = len(ys)
    lead = ys[0].shape[:-1]  # optional batch dimensions (many trees at once)
    z = [None] * L
    vz = [0.0] * L
    if not math.isfinite(var[0]):
        raise ParameterError("the leaf level must be measured (finite variance)")
    z[0] = ys[0]
    vz[0] = var[0]
    for lv in range(1, L):
        c = z[lv - 1].reshape(*lead, -1, b).sum(axis=-1)
        vc = b * vz[lv - 1]
        if var[lv] == 0.0:  # exact measurement (noise-free limit)
            z[lv], vz[lv] = ys[lv], 0.0
        elif vc == 0.0:
            z[lv], vz[lv] = c, 0.0
        elif math.isfinite(var[lv]):
            wy, wc = 1.0 / var[lv], 1.0 / vc
            z[lv] = (wy * ys[lv] + wc * c) / (wy + wc)
            vz[lv] = 1.0 / (wy + wc)
        else:
            z[lv] = c
            vz[lv] = vc
    est = [None] * L
    est[L - 1] = z[L - 1]
    for lv in range(L - 2, -1, -1):
        children = z[lv].reshape(*lead, -1, b)
        resid = est[lv + 1] - children.sum(axis=-1)
        est[lv] = (children + resid[..., None] / b).reshape(*lead, -1)
    return est


def noisy_tree(x: np.ndarray, *, branching: int, level_epsilons, rng) -> tuple:
    """Measure every level of the tree with its own epsilon; returns (levels, variances, scales)."""
    h = tree_height(max(x.shape[-1], 1), branching)
    levels = _levels_true(x, branching, h)
    eps = list(level_epsilons)
    if len(eps) != len(levels):
        raise ParameterError(f"level_epsilons needs {len(levels)} values (one per level, "
                             f"leaves first), got {len(eps)}")
    noisy, var, scales = [], [], []
    for lv, e in zip(levels, eps):
        if e <= 0:
            noisy.append(np.zeros_like(lv))
            var.append(math.inf)
            scales.append(math.inf)
            continue
        y, v, s = noisy_integers(lv, e, rng)
        noisy.append(y)
        var.append(v)
        scales.append(s)
    return noisy, var, scales


def zero_padding(noisy_levels, lengths, branching: int) -> list[np.ndarray]:
    """Set every node made only of padding leaves to its known value, 0 (in place; returned).

    A tree over ``m`` bins is padded to ``b**h`` leaves; the nodes past ``m`` count nothing
    whatever the data, so their noisy values are replaced by the truth. Still private (they
    hold no record) and never worse: the least squares stays unbiased and each of its
    estimates is a fixed linear map of the measurements, whose variance can only drop when
    independent noise terms are removed (StructureFirst's bucket trees, which are padded to
    a power of two for almost every bucket size: 1-13 % less prefix error on the DPBench
    protocol, ``benchmarks/histograms.py --sf-authors-tree``).

    ``lengths``: the real number of bins of each row (a scalar for all rows).
    """
    b = int(branching)
    for lv, y in enumerate(noisy_levels):
        first = np.arange(y.shape[-1]) * b ** lv      # each node's first leaf
        pad = first >= np.asarray(lengths)[..., None]   # (rows, nodes), or (1, nodes)
        if np.any(pad):
            y[...] = np.where(pad, 0, y)
    return noisy_levels


def zero_empty_nodes(noisy_levels, real_leaves, branching: int) -> list[np.ndarray]:
    """Set every node that covers no real leaf to its known value, 0 (in place; returned).

    ``real_leaves``: a 0/1 array over the tree's ``b**h`` (padded) leaves, 1 where the leaf
    holds real cells. The general form of :func:`zero_padding` for trees whose padding is not
    a tail of the leaves (the 2-D trees of ``veil.maps``, whose leaves are listed in
    nested-block order); private and never worse for the same reasons.
    """
    real = _levels_true(np.asarray(real_leaves, dtype=np.int64), int(branching),
                        len(noisy_levels) - 1)
    for y, r in zip(noisy_levels, real):
        empty = r == 0
        if np.any(empty):
            y[...] = np.where(empty, 0, y)
    return noisy_levels


def tree_release_batch(X: np.ndarray, *, epsilon: float, branching: int, rng):
    """Boost on every row of ``X`` (shape ``(..., n)``): ``epsilon / L`` per level, inference.

    The one code path of :func:`boost` and :func:`hb` (a single histogram is a
    batch of one); audits call it with many copies of a histogram at once.
    Returns ``(leaf estimates, level epsilons, level variances, level scales)``.
    """
    n = X.shape[-1]
    h = tree_height(max(n, 1), branching)
    L = h + 1
    eps_level = [epsilon / L] * L
    noisy, var, scales = noisy_tree(X, branching=branching, level_epsilons=eps_level, rng=rng)
    est = tree_inference(zero_padding(noisy, n, branching), var, branching)
    return est[0][..., :n], eps_level, var, scales


def _tree_release(x, b, epsilon, branching, rng, name, extra_params, notes=()):
    h = tree_height(max(x.size, 1), branching)
    L = h + 1
    value, eps_level, var, scales = tree_release_batch(x, epsilon=b.epsilon,
                                                       branching=branching, rng=rng)
    split = {f"level_{i}": e for i, e in enumerate(eps_level)}
    return Release(value, name, b,
                   {"n": x.size, "branching": branching, "height": h, "levels": L,
                    "padded_to": branching ** h, **extra_params},
                   split, noise_scale=scales[0], noise_variance=var[0],
                   expected_error={"node_noise_variance": var[0]},
                   notes=(NEIGHBOURS, "levels listed leaves first; padding bins dropped "
                          "after inference", *notes))


def boost(counts, *, epsilon, branching: int = 2, rng=None) -> Release:
    """Boost: hierarchical histogram with constrained inference (Hay et al. 2010).

    Why it is eps-DP: the tree has ``L = h + 1`` levels (leaves to root) and
    every record is counted in exactly one node per level, so the vector of all
    node counts has L1 sensitivity ``L``. Each level gets ``epsilon / L`` and
    discrete Laplace noise of scale ``L / epsilon`` on each node (sequential
    composition over levels, parallel within a level). Constrained inference is
    post-processing. Budget split: ``epsilon / L`` per level.

    Parameters
    ----------
    counts : array_like of int, shape (n,)
    epsilon : float or PureDP
    branching : int
        Arity ``b >= 2``; any ``n`` works (the domain is padded to ``b**h``).
    rng : numpy.random.Generator, optional

    Examples
    --------
    >>> from veil.random import make_rng
    >>> r = boost(list(range(10)), epsilon=1.0, branching=3, rng=make_rng(seed=0))
    >>> r.value.shape, r.parameters["padded_to"]
    ((10,), 27)
    """
    x = as_counts(counts)
    b = as_budget(epsilon)
    branching = check_branching(branching, x.shape[-1])
    return _tree_release(x, b, b.epsilon, branching, as_rng(rng), "boost", {})


def check_branching(branching, n: int) -> int:
    """A tree's branching: from 2 to the number of bins (a wider root is never split; 2^32
    padded 64 bins to a tree of 32 GiB)."""
    return check_int(branching, "branching", minimum=2, maximum=max(2, int(n)))


def hb(counts, *, epsilon, rng=None) -> Release:
    """HB: Boost with the branching factor chosen by Qardaji et al.'s variance formula.

    The branching depends only on the public domain size ``n``
    (:func:`qardaji_branching`), so the privacy argument is that of :func:`boost`:
    ``epsilon / L`` per level, L1 sensitivity ``L`` of the node counts.

    Examples
    --------
    >>> from veil.random import make_rng
    >>> hb([3] * 4096, epsilon=1.0, rng=make_rng(seed=0)).parameters["branching"]
    16
    """
    x = as_counts(counts)
    b = as_budget(epsilon)
    br = qardaji_branching(x.size)
    return _tree_release(x, b, b.epsilon, br, as_rng(rng), "hb", {"branching_rule": "qardaji"})


def level_usage(queries, n: int) -> np.ndarray:
    """How often each level of a binary tree over ``n`` bins is used by the dyadic
    decomposition of the range queries ``queries`` (array of half-open ``[lo, hi)``).

    Returns an array of length ``h + 1`` (leaves first).
    """
    q = check_finite_array(queries, "queries", ndim=2, dtype=np.int64)
    h = tree_height(max(n, 1), 2)
    lo = q[:, 0].copy()
    hi = q[:, 1].copy()
    use = np.zeros(h + 1, dtype=np.float64)
    for lv in range(h + 1):
        act = lo < hi
        ul = act & (lo % 2 == 1)
        lo = lo + ul
        uh = (lo < hi) & (hi % 2 == 1)
        hi = hi - uh
        use[lv] = ul.sum() + uh.sum()
        lo //= 2
        hi //= 2
    return use


def tree_strategy_matrix(n: int, branching: int) -> tuple[np.ndarray, int]:
    """The query matrix of a Boost/HB tree over ``n`` bins (padding columns dropped).

    Rows are the nodes' ranges (leaves first); returns ``(A, L)`` with ``L`` the
    number of levels (every node is measured with noise of scale ``L / eps``).
    For exact expected-error comparisons
    (:func:`veil.histograms.hdmm.linear_strategy_error`); dense, small ``n`` only.

    Examples
    --------
    >>> A, L = tree_strategy_matrix(4, 2)
    >>> A.shape, L
    ((7, 4), 3)
    """
    h = tree_height(max(n, 1), branching)
    N = branching ** h
    rows = []
    for lv in range(h + 1):
        size = branching ** lv
        for j in range(N // size):
            lo, hi = j * size, min((j + 1) * size, n)
            if lo < n:
                r = np.zeros(n)
                r[lo:hi] = 1.0
                rows.append(r)
    return np.array(rows), h + 1
