"""PrivTree (Zhang, Xiao and Xie, SIGMOD 2016): a private quadtree without a height limit.

The tree is grown from the root (the grid padded with public empty cells to a power-of-two
square). A node ``v`` at depth ``d`` with ``c(v)`` points has the *biased count*
``b(v) = max(c(v) - d delta, theta - delta)``; it is split into its four quarters iff
``b(v) + Lap(lambda) > theta`` (and it is larger than one cell). With fan-out ``beta = 4``,
``lambda = (2 beta - 1) / (beta - 1) / eps_tree`` and ``delta = lambda ln beta`` the whole
decomposition is ``eps_tree``-DP for neighbours that differ by one point (the paper's Theorem):
the bias makes the privacy loss along a root-to-leaf path a geometric series, so the depth is
unbounded yet the cost is fixed. The leaves partition the grid; their counts are published with
discrete Laplace noise (``eps_leaf``) and spread uniformly over each leaf's cells.

A protected unit of up to ``s`` points is handled by group privacy: ``lambda`` and ``delta`` are
those of ``eps_tree / s`` (so each of the ``s`` single-point steps costs ``eps_tree / s``), and
the leaf noise has scale ``s / eps_leaf``.

Everything runs level by level over arrays of nodes; the same code grows ``batch`` independent
trees at once (the audits use that), with node counts read from one summed-area table.
"""

from __future__ import annotations

import math

import numpy as np

from ..random import make_rng
from ..release import Release
from ..validation import check_probability
from ._blocks import pad_square, prefix2d, rect_sums, side_power
from ._common import NEIGHBOURS, as_budget, as_grid_counts, check_sensitivity, noisy

__all__ = ["privtree", "privtree_batch", "privtree_parameters", "TREE_FRACTION"]

FANOUT = 4
#: the default share of epsilon for the decomposition. Calibrated, not taken from the paper:
#: ``benchmarks/maps.py calibrate-privtree`` (:func:`veil.maps.bench.privtree_fraction_calibration`)
#: ran fractions 0.15-0.5 on the eight protocol maps (two DPBench maps, six from the shared
#: point files) at eps 0.1 and 1, N 10^4-10^8, 20 runs each; 0.3 had the smallest geometric mean
#: ratio to the best fraction per setting (docs/benchmarks.md, "PrivTree's tree fraction").
#: Until 2026-12-07 it was 0.5, 1.2x worse in that measure.
TREE_FRACTION = 0.3


def privtree_parameters(eps_tree: float, sensitivity: int = 1) -> tuple[float, float]:
    """``(lambda, delta)`` for a tree budget ``eps_tree`` and contribution bound ``sensitivity``.

    Examples
    --------
    >>> lam, delta = privtree_parameters(1.0)
    >>> round(lam, 4), round(delta, 4)
    (2.3333, 3.2347)
    """
    lam = (2 * FANOUT - 1) / (FANOUT - 1) * sensitivity / eps_tree
    return lam, lam * math.log(FANOUT)


def privtree_batch(x: np.ndarray, *, batch: int, eps_tree: float, eps_leaf: float,
                   sensitivity: int, theta: float, rng, split_on_true: bool = False,
                   leaf_eps_override: float | None = None) -> tuple[np.ndarray, dict]:
    """Grow ``batch`` independent PrivTrees on the counts ``x`` (rows, cols).

    Returns ``(estimates (batch, rows, cols), info)``. ``split_on_true`` (the split decision
    on the true biased count, no noise) exists only for the audit's canary; never use it.
    """
    rows, cols = x.shape
    k = side_power(max(rows, cols), 2)
    side = 1 << k
    P = prefix2d(pad_square(x, side))
    lam, delta = privtree_parameters(eps_tree, sensitivity)
    bidx = np.arange(batch, dtype=np.int64)
    y0 = np.zeros(batch, dtype=np.int64)
    x0 = np.zeros(batch, dtype=np.int64)
    size, depth = side, 0
    leaves = []  # (size, b, y0, x0, count)
    while bidx.size:
        c = rect_sums(P, y0, y0 + size, x0, x0 + size)
        biased = np.maximum(c - depth * delta, theta - delta)
        if split_on_true:
            score = biased
        else:
            score = biased + rng.laplace(0.0, lam, size=biased.shape)
        split = (score > theta) if size > 1 else np.zeros(bidx.size, dtype=bool)
        keep = ~split
        if keep.any():
            leaves.append((size, bidx[keep], y0[keep], x0[keep], c[keep]))
        if not split.any():
            break
        half = size // 2
        sb, sy, sx = bidx[split], y0[split], x0[split]
        dy = np.array([0, 0, 1, 1], dtype=np.int64) * half
        dx = np.array([0, 1, 0, 1], dtype=np.int64) * half
        cb = np.repeat(sb, 4)
        cy = (sy[:, None] + dy[None, :]).ravel()
        cx = (sx[:, None] + dx[None, :]).ravel()
        inside = (cy < rows) & (cx < cols)  # quarters wholly in the public padding are dropped
        bidx, y0, x0 = cb[inside], cy[inside], cx[inside]
        size, depth = half, depth + 1
    counts = np.concatenate([lf[4] for lf in leaves])
    e_leaf = eps_leaf if leaf_eps_override is None else leaf_eps_override
    y, var, scale = noisy(counts, e_leaf, sensitivity, rng)
    out = np.zeros((batch, side, side), dtype=np.float64)
    start = 0
    for sz, b_, yy, xx, cc in leaves:
        n = cc.size
        vals = y[start:start + n].astype(np.float64)
        start += n
        area = (np.minimum(yy + sz, rows) - yy) * (np.minimum(xx + sz, cols) - xx)
        dens = vals / area
        off = np.arange(sz, dtype=np.int64)
        out[b_[:, None, None], (yy[:, None] + off)[:, :, None],
            (xx[:, None] + off)[:, None, :]] = dens[:, None, None]
    info = {"lambda": lam, "delta": delta, "leaves": int(counts.size),
            "leaf_noise_scale": scale, "leaf_noise_variance": var, "max_depth": depth}
    return out[:, :rows, :cols], info


def privtree(counts, *, epsilon, sensitivity: int = 1, tree_fraction: float = TREE_FRACTION,
             theta: float = 0.0, rng=None) -> Release:
    """PrivTree on a count grid (Zhang, Xiao and Xie, SIGMOD 2016); see the module docstring.

    Why it is eps-DP: the decomposition is ``eps_tree``-DP by the paper's theorem (applied with
    ``eps_tree / s`` per point and group privacy over the ``s`` points of a protected unit); the
    leaves partition the grid, so their counts have L1 sensitivity ``s`` and discrete Laplace
    of scale ``s / eps_leaf`` makes them ``eps_leaf``-DP given the tree; ``eps_tree + eps_leaf
    = eps`` by sequential composition. Spreading a leaf's count over its cells is
    post-processing. The split decisions use float64 Laplace noise; only the resulting tree (a
    set of booleans) is released, not the noisy values.

    Parameters
    ----------
    counts : array_like of int, shape (rows, cols)
    epsilon : float or PureDP
    sensitivity : int
    tree_fraction : float in (0, 1)
        Share of epsilon for the decomposition (the rest measures the leaves); default
        :data:`TREE_FRACTION` (0.3, calibrated on the protocol maps).
    theta : float
        Split threshold (public).
    rng : numpy.random.Generator, optional

    Examples
    --------
    >>> from veil.random import make_rng
    >>> x = np.zeros((32, 32), dtype=int); x[:4, :4] = 500
    >>> r = privtree(x, epsilon=1.0, rng=make_rng(seed=0))
    >>> r.value.shape, r.parameters["leaves"] > 1
    ((32, 32), True)
    """
    x = as_grid_counts(counts)
    b = as_budget(epsilon)
    s = check_sensitivity(sensitivity)
    frac = check_probability(tree_fraction, "tree_fraction", open_low=True, open_high=True)
    theta = float(theta)
    if not math.isfinite(theta):
        from ..errors import ParameterError

        raise ParameterError(f"theta must be finite, got {theta!r}")
    e_tree, e_leaf = (p.epsilon for p in b.split([frac, 1.0 - frac]))
    est, info = privtree_batch(x, batch=1, eps_tree=e_tree, eps_leaf=e_leaf, sensitivity=s,
                               theta=theta, rng=make_rng(rng))
    rows, cols = x.shape
    return Release(est[0], "privtree", b,
                   {"rows": rows, "cols": cols, "sensitivity": s, "tree_fraction": frac,
                    "theta": theta, "fanout": FANOUT, "lambda": info["lambda"],
                    "delta": info["delta"], "leaves": info["leaves"]},
                   {"tree": e_tree, "leaves": e_leaf},
                   noise_scale=info["leaf_noise_scale"],
                   noise_variance=info["leaf_noise_variance"],
                   expected_error={"leaf_variance": info["leaf_noise_variance"]},
                   notes=(NEIGHBOURS, "the number of leaves is a function of the private tree "
                          "(eps_tree-DP), not of the data directly"),
                   derived=("parameters.leaves",))


