"""PrivTree (Zhang, Xiao and Xie, SIGMOD 2016): a private quadtree without a height limit.

The tree is grown from the root (the grid padded with public empty cells to a power-of-two
square). A node ``v`` at depth ``d`` with ``c(v)`` points has the *biased count*
``b(v) = max(c(v) - d delta, theta - delta)``; it is split into its four quarters iff
``b(v) + Lap(lambda) > theta`` (and it is larger than one cell). With fan-out ``beta = 4``,
``lambda = (2 beta - 1) / (beta - 1) / eps_tree`` and ``delta = lambda ln beta`` the whole
decomposition is ``eps_tree``-DP for neighbours that differ by one point (the paper's Theorem):
the bias makes the privacy loss along a root-to-leaf path a geometric series, so the depth is
unbounded yet the cost is fixed.

The released tree is then measured with the rest of the budget, ``eps_meas``. In the paper only
the leaves are (they partition the grid). veil also measures the internal nodes, as a
hierarchical histogram does (Hay et al., PVLDB 2010; Qardaji et al.'s AG measures two levels):
in a tree of height ``H`` each internal level gets ``eps_meas * internal_share / (H - 1)`` and a
leaf the rest of its path's budget (:func:`node_epsilons`), all with discrete Laplace noise; the
leaves are then the least-squares estimates from every measurement (:func:`tree_least_squares`)
and spread uniformly over their cells. A large rectangle reads a few internal nodes instead of
the sum of many noisy leaves. With ``internal_share = 0`` this is the paper's measurement.

A protected unit of up to ``s`` points is handled by group privacy: ``lambda`` and ``delta`` are
those of ``eps_tree / s`` (so each of the ``s`` single-point steps costs ``eps_tree / s``), and
a node measured with budget ``e`` has noise of scale ``s / e``.

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
from ._common import NEIGHBOURS, as_budget, as_grid_counts, check_sensitivity, dl_var, noisy

__all__ = ["privtree", "privtree_batch", "privtree_parameters", "node_epsilons",
           "tree_least_squares", "TREE_FRACTION", "INTERNAL_SHARE"]

FANOUT = 4
#: the default share of epsilon for the decomposition. Calibrated, not taken from the paper:
#: ``benchmarks/maps.py calibrate-privtree`` (:func:`veil.maps.bench.privtree_fraction_calibration`)
#: ran fractions 0.15-0.5 on the eight protocol maps (two DPBench maps, six from the shared
#: point files) at eps 0.1 and 1, N 10^4-10^8, 20 runs each; 0.3 had the smallest geometric mean
#: ratio to the best fraction per setting (docs/benchmarks.md, "PrivTree's tree fraction").
#: Until 2026-12-07 it was 0.5, 1.2x worse in that measure.
TREE_FRACTION = 0.3
#: the default share of the measurement budget for the internal nodes (spread evenly over the
#: internal levels); calibrated together with TREE_FRACTION (docs/benchmarks.md)
INTERNAL_SHARE = 0.5


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


def _grow(x: np.ndarray, *, batch: int, eps_tree: float, sensitivity: int, theta: float,
          rng, split_on_true: bool) -> tuple[list[dict], float, float]:
    """Grow ``batch`` trees level by level; every level's nodes (batch index, corner, true
    count, index of the parent in the level above, leaf flag) and ``(lambda, delta)``."""
    rows, cols = x.shape
    side = 1 << side_power(max(rows, cols), 2)
    P = prefix2d(pad_square(x, side))
    lam, delta = privtree_parameters(eps_tree, sensitivity)
    bidx = np.arange(batch, dtype=np.int64)
    y0 = np.zeros(batch, dtype=np.int64)
    x0 = np.zeros(batch, dtype=np.int64)
    parent = np.full(batch, -1, dtype=np.int64)
    size, depth = side, 0
    levels = []
    while bidx.size:
        c = rect_sums(P, y0, y0 + size, x0, x0 + size)
        biased = np.maximum(c - depth * delta, theta - delta)
        if split_on_true:
            score = biased
        else:
            score = biased + rng.laplace(0.0, lam, size=biased.shape)
        split = (score > theta) if size > 1 else np.zeros(bidx.size, dtype=bool)
        levels.append({"size": size, "b": bidx, "y0": y0, "x0": x0, "c": c,
                       "parent": parent, "leaf": ~split})
        if not split.any():
            break
        half = size // 2
        ids = np.flatnonzero(split)
        dy = np.array([0, 0, 1, 1], dtype=np.int64) * half
        dx = np.array([0, 1, 0, 1], dtype=np.int64) * half
        cy = (y0[ids][:, None] + dy[None, :]).ravel()
        cx = (x0[ids][:, None] + dx[None, :]).ravel()
        inside = (cy < rows) & (cx < cols)  # quarters wholly in the public padding are dropped
        bidx = np.repeat(bidx[ids], 4)[inside]
        parent = np.repeat(ids, 4)[inside]
        y0, x0 = cy[inside], cx[inside]
        size, depth = half, depth + 1
    return levels, lam, delta


def node_epsilons(levels: list[dict], eps: float, internal_share: float, batch: int
                  ) -> list[np.ndarray]:
    """The measurement budget of every node, level by level (0: not measured).

    A tree of height ``H`` (levels 0 .. H-1) gives each internal node at depth ``d``
    ``eps * internal_share / (H - 1)`` and each leaf at depth ``d`` the rest of its path,
    ``eps * (1 - internal_share * d / (H - 1))``: along every root-to-leaf path the budgets
    sum to exactly ``eps``, and the nodes of one depth are disjoint, so one point changes one
    node per depth of its path. ``H`` is each tree's own (a function of the released tree).

    Examples
    --------
    >>> lv = [{"b": np.array([0]), "leaf": np.array([False])},
    ...       {"b": np.array([0, 0]), "leaf": np.array([True, False])},
    ...       {"b": np.array([0]), "leaf": np.array([True])}]
    >>> [e.tolist() for e in node_epsilons(lv, 1.0, 0.5, batch=1)]
    [[0.25], [0.75, 0.25], [0.5]]
    """
    height = np.zeros(batch, dtype=np.int64)
    for d, L in enumerate(levels):
        height[L["b"]] = d + 1
    out = []
    for d, L in enumerate(levels):
        h = height[L["b"]]
        step = np.where(h > 1, internal_share / np.maximum(h - 1, 1), 0.0)
        out.append(eps * np.where(L["leaf"], 1.0 - step * d, step))
    return out


_VAR_FLOOR = 1e-30


def tree_least_squares(levels: list[dict], y: list[np.ndarray], var: list[np.ndarray]
                       ) -> list[np.ndarray]:
    """Generalised least squares on a tree of count measurements (unmeasured: ``var = inf``).

    Every node's estimate is consistent (a node equals the sum of its children) and is the
    minimum-variance unbiased combination of the independent measurements: the usual two
    passes (Hay et al., PVLDB 2010, with unequal variances), bottom-up (a node's own
    measurement combined with its children's sum, by inverse variance), then top-down (the
    parent's final value minus its children's sum shared in proportion to their variances).
    Every leaf must be measured. Returns the final estimate of every node, level by level.
    """
    H = len(levels)
    z: list = [None] * H
    vz: list = [None] * H
    for d in range(H - 1, -1, -1):
        # a noiseless measurement (variance 0: epsilon so large that the discrete Laplace is
        # degenerate) is floored at VAR_FLOOR, so it dominates every noisy one
        own_v = np.maximum(np.asarray(var[d], dtype=np.float64), _VAR_FLOOR)
        own_y = np.asarray(y[d], dtype=np.float64)
        measured = np.isfinite(own_v)
        inv = np.where(measured, 1.0 / np.where(measured, own_v, 1.0), 0.0)
        num = np.where(measured, own_y * inv, 0.0)
        if d + 1 < H:
            n = own_v.size
            p = levels[d + 1]["parent"]
            has = np.bincount(p, minlength=n) > 0
            zc = np.bincount(p, weights=z[d + 1], minlength=n)
            vc = np.bincount(p, weights=vz[d + 1], minlength=n)
            vc_safe = np.where(has, vc, 1.0)
            inv = inv + np.where(has, 1.0 / vc_safe, 0.0)
            num = num + np.where(has, zc / vc_safe, 0.0)
        z[d] = num / inv
        vz[d] = 1.0 / inv
    final = [z[0]]
    for d in range(1, H):
        p = levels[d]["parent"]
        n = z[d - 1].size
        zc = np.bincount(p, weights=z[d], minlength=n)
        vc = np.bincount(p, weights=vz[d], minlength=n)
        final.append(z[d] + vz[d] / vc[p] * (final[d - 1][p] - zc[p]))
    return final


def privtree_batch(x: np.ndarray, *, batch: int, eps_tree: float, eps_leaf: float,
                   sensitivity: int, theta: float, rng, split_on_true: bool = False,
                   internal_share: float = INTERNAL_SHARE,
                   leaf_eps_override: float | None = None) -> tuple[np.ndarray, dict]:
    """Grow ``batch`` independent PrivTrees on the counts ``x`` (rows, cols) and measure them.

    ``eps_leaf`` is the measurement budget of every root-to-leaf path: with
    ``internal_share = 0`` the leaves alone are measured with it; otherwise the internal nodes
    too (:func:`node_epsilons`) and the leaves are the least-squares estimates
    (:func:`tree_least_squares`). Returns ``(estimates (batch, rows, cols), info)``.
    ``split_on_true`` (the split decision on the true biased count, no noise) and
    ``leaf_eps_override`` (the nodes measured with another budget than the one claimed) exist
    only for the audits' canaries and tests; never use them.
    """
    rows, cols = x.shape
    levels, lam, delta = _grow(x, batch=batch, eps_tree=eps_tree, sensitivity=sensitivity,
                               theta=theta, rng=rng, split_on_true=split_on_true)
    e_meas = eps_leaf if leaf_eps_override is None else leaf_eps_override
    eps_nodes = node_epsilons(levels, e_meas, internal_share, batch)
    flat_eps = np.concatenate(eps_nodes)
    flat_c = np.concatenate([L["c"] for L in levels])
    y_flat = np.zeros(flat_c.size, dtype=np.float64)
    v_flat = np.full(flat_c.size, np.inf)
    for e in np.unique(flat_eps[flat_eps > 0]):  # one discrete Laplace draw per budget class
        sel = np.flatnonzero(flat_eps == e)
        yy, vv, _ = noisy(flat_c[sel], float(e), sensitivity, rng)
        y_flat[sel] = yy
        v_flat[sel] = vv
    # the noisiest measurement of a leaf (the deepest leaves'), reported in the release
    e_low = float(min(e[L["leaf"]].min() for e, L in zip(eps_nodes, levels) if L["leaf"].any()))
    scale, var0 = sensitivity / e_low, dl_var(e_low, sensitivity)
    bounds = np.cumsum([0] + [L["c"].size for L in levels])
    ys = [y_flat[bounds[d]:bounds[d + 1]] for d in range(len(levels))]
    vs = [v_flat[bounds[d]:bounds[d + 1]] for d in range(len(levels))]
    final = ys if internal_share == 0 else tree_least_squares(levels, ys, vs)
    side = levels[0]["size"]
    out = np.zeros((batch, side, side), dtype=np.float64)
    n_leaves = 0
    for d, L in enumerate(levels):
        lf = L["leaf"]
        if not lf.any():
            continue
        sz, b_, yy, xx = L["size"], L["b"][lf], L["y0"][lf], L["x0"][lf]
        n_leaves += int(lf.sum())
        area = (np.minimum(yy + sz, rows) - yy) * (np.minimum(xx + sz, cols) - xx)
        dens = np.asarray(final[d], dtype=np.float64)[lf] / area
        off = np.arange(sz, dtype=np.int64)
        out[b_[:, None, None], (yy[:, None] + off)[:, :, None],
            (xx[:, None] + off)[:, None, :]] = dens[:, None, None]
    info = {"lambda": lam, "delta": delta, "leaves": n_leaves,
            "measured_nodes": int((flat_eps > 0).sum()), "leaf_noise_scale": scale,
            "leaf_noise_variance": var0, "max_depth": len(levels) - 1}
    return out[:, :rows, :cols], info


def privtree(counts, *, epsilon, sensitivity: int = 1, tree_fraction: float = TREE_FRACTION,
             internal_share: float = INTERNAL_SHARE, theta: float = 0.0, rng=None) -> Release:
    """PrivTree on a count grid (Zhang, Xiao and Xie, SIGMOD 2016); see the module docstring.

    Why it is eps-DP: the decomposition is ``eps_tree``-DP by the paper's theorem (applied with
    ``eps_tree / s`` per point and group privacy over the ``s`` points of a protected unit).
    Given the tree, the nodes of one depth are disjoint, so a protected unit changes the counts
    of one depth's nodes by at most ``s`` in L1, and the nodes a point falls in along its
    root-to-leaf path have budgets summing to ``eps_meas`` (:func:`node_epsilons`; the budgets
    depend on the released tree only): the measurements are ``eps_meas``-DP given the tree.
    ``eps_tree + eps_meas = eps`` by sequential (adaptive) composition. The least squares and
    the spreading are post-processing. The split decisions use float64 Laplace noise; only the
    resulting tree (a set of booleans) is released, not the noisy values.

    Parameters
    ----------
    counts : array_like of int, shape (rows, cols)
    epsilon : float or PureDP
    sensitivity : int
    tree_fraction : float in (0, 1)
        Share of epsilon for the decomposition (the rest measures the tree's nodes); default
        :data:`TREE_FRACTION` (calibrated on the protocol maps).
    internal_share : float in [0, 1)
        Share of the measurement budget for the internal nodes; 0 measures the leaves alone
        (the paper's PrivTree); default :data:`INTERNAL_SHARE`.
    theta : float
        Split threshold (public).
    rng : numpy.random.Generator, optional

    Examples
    --------
    >>> from veil.random import make_rng
    >>> x = np.zeros((32, 32), dtype=int); x[:4, :4] = 500
    >>> r = privtree(x, epsilon=1.0, rng=make_rng(seed=0))
    >>> r.value.shape, r.parameters["leaves"] > 1, sorted(r.budget_split)
    ((32, 32), True, ['nodes', 'tree'])
    """
    x = as_grid_counts(counts)
    b = as_budget(epsilon)
    s = check_sensitivity(sensitivity)
    frac = check_probability(tree_fraction, "tree_fraction", open_low=True, open_high=True)
    share = check_probability(internal_share, "internal_share", open_high=True)
    theta = float(theta)
    if not math.isfinite(theta):
        from ..errors import ParameterError

        raise ParameterError(f"theta must be finite, got {theta!r}")
    e_tree, e_meas = (p.epsilon for p in b.split([frac, 1.0 - frac]))
    est, info = privtree_batch(x, batch=1, eps_tree=e_tree, eps_leaf=e_meas, sensitivity=s,
                               theta=theta, rng=make_rng(rng), internal_share=share)
    rows, cols = x.shape
    return Release(est[0], "privtree", b,
                   {"rows": rows, "cols": cols, "sensitivity": s, "tree_fraction": frac,
                    "internal_share": share, "theta": theta, "fanout": FANOUT,
                    "lambda": info["lambda"], "delta": info["delta"], "leaves": info["leaves"],
                    "max_depth": info["max_depth"], "measured_nodes": info["measured_nodes"]},
                   {"tree": e_tree, "nodes": e_meas},
                   noise_scale=info["leaf_noise_scale"],
                   noise_variance=info["leaf_noise_variance"],
                   expected_error={"deepest_leaf_variance_before_least_squares":
                                   info["leaf_noise_variance"]},
                   notes=(NEIGHBOURS, "the number of leaves, the depth and the measured nodes "
                          "are functions of the private tree (eps_tree-DP), not of the data "
                          "directly",
                          f"internal nodes measured with {share:g} of the measurement budget, "
                          "spread evenly over the internal levels; leaves by least squares"),
                   # the deepest leaves' noise scale depends on the tree's height (a lone root
                   # leaf gets the whole measurement budget): outputs, like the tree's shape
                   derived=("parameters.leaves", "parameters.max_depth",
                            "parameters.measured_nodes", "noise_scale", "noise_variance",
                            "expected_error"))
