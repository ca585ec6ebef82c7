"""DP mechanisms for 2-D count grids (maps): Identity, UG, AG, quadtree, HB2D and DAWA-2D.

PrivTree is in :mod:`veil.maps.privtree` and HDMM in :mod:`veil.maps.hdmm`. Every mechanism
takes the true counts of a public grid (``rows x cols`` non-negative integers) and returns a
:class:`veil.release.Release` whose value is a float64 ``rows x cols`` estimate (a *density
map*: range sums over whole cells are sums of the values). Neighbouring inputs differ by one
protected unit: one person's at most ``sensitivity`` points (after per-person bounding, see
:mod:`veil.maps.points`) or one point (``sensitivity=1``); the count grid then changes by at most
``sensitivity`` in L1 norm, which is the sensitivity every mechanism below is calibrated to.

References: UG and AG, Qardaji, Yang and Li, "Differentially private grids for geospatial data",
ICDE 2013; quadtree with geometric budget and constrained inference, Cormode, Procopiuc,
Srivastava, Shen and Yu, "Differentially private spatial decompositions", ICDE 2012; HB and its
branching rule, Qardaji, Yang and Li, PVLDB 2013; DAWA, Li, Hay, Miklau and Wang, PVLDB 2014 (for
2-D: cells ordered along a Hilbert curve, then the 1-D algorithm).
"""

from __future__ import annotations

import math

import numpy as np

from ..histograms.tree import noisy_tree, tree_inference, zero_empty_nodes
from ..random import make_rng
from ..release import Release
from ..validation import check_int, check_positive, check_probability
from ._blocks import (block_order, hilbert_order, pad_square, prefix2d, rect_sums, side_power,
                      split_edges, spread_blocks)
from ._common import (NEIGHBOURS, as_budget, as_grid_counts, check_sensitivity, grid_dims,
                      noisy, scale_estimate)

__all__ = ["identity", "ug", "ag", "ag_core", "quadtree", "hb2d", "dawa2d", "ug_size", "ag_sizes",
           "hb2d_branching", "quadtree_epsilons", "tree2d", "UG_C"]

#: Qardaji et al.'s constant in the grid-size rules (c = 10; AG's second level uses c/2)
UG_C = 10.0


def _meta(x, s, extra=None):
    rows, cols = x.shape[-2:]
    return {"rows": int(rows), "cols": int(cols), "sensitivity": int(s), **(extra or {})}


# --------------------------------------------------------------------------- Identity
def identity(counts, *, epsilon, sensitivity: int = 1, rng=None) -> Release:
    """Identity: exact discrete Laplace noise of scale ``sensitivity / epsilon`` on every cell.

    Why it is eps-DP: the cell counts have L1 sensitivity ``sensitivity`` between neighbouring
    inputs (one protected unit adds at most that many points), and every cell gets independent
    discrete Laplace noise of that scale over epsilon (the geometric mechanism). The whole
    budget goes to the cells.

    Parameters
    ----------
    counts : array_like of int, shape (rows, cols)
    epsilon : float or PureDP
    sensitivity : int
        Points one protected unit can contribute (1 for record-level privacy).
    rng : numpy.random.Generator, optional

    Examples
    --------
    >>> from veil.random import make_rng
    >>> r = identity([[3, 0], [1, 9]], epsilon=1.0, rng=make_rng(seed=0))
    >>> r.value.shape, r.budget_split
    ((2, 2), {'cells': 1.0})
    """
    x = as_grid_counts(counts, batch=True)
    b = as_budget(epsilon)
    s = check_sensitivity(sensitivity)
    y, var, scale = noisy(x, b.epsilon, s, make_rng(rng))
    return Release(y.astype(np.float64), "identity", b, _meta(x, s), {"cells": b.epsilon},
                   noise_scale=scale, noise_variance=var,
                   expected_error={"per_cell_variance": var}, notes=(NEIGHBOURS,))


# --------------------------------------------------------------------------- UG
def ug_size(n_points: float, epsilon: float, sensitivity: int = 1, c: float = UG_C) -> int:
    """Qardaji et al.'s uniform-grid size ``m = ceil(sqrt(N eps / c))`` (cells per side).

    With a contribution bound ``s`` the noise is ``s`` times larger, which the rule sees as
    ``eps / s`` (group privacy).

    Examples
    --------
    >>> ug_size(10**6, 1.0)
    317
    """
    n = max(float(n_points), 0.0)
    return max(1, math.ceil(math.sqrt(n * epsilon / (sensitivity * c)) - 1e-12))


def ug(counts, *, epsilon, sensitivity: int = 1, scale: float | None = None,
       size: int | None = None, c: float = UG_C, scale_fraction: float = 0.05,
       rng=None) -> Release:
    """UG, the uniform grid of Qardaji, Yang and Li (ICDE 2013).

    Cells are merged into an ``m x m`` grid of blocks with ``m = ceil(sqrt(N eps / (s c)))``,
    ``c = 10`` (capped at the grid's own size), every block total gets discrete Laplace noise of
    scale ``s / eps`` and is spread uniformly over its cells.

    Why it is eps-DP: the block structure depends only on public values (the grid, epsilon and
    ``N``); the block totals have L1 sensitivity ``s``; spreading is post-processing. ``N`` is the
    public ``scale`` when given (e.g. a census count), else a noisy total bought with
    ``scale_fraction`` of epsilon (sequential composition; DPBench's treatment of side
    information), never the true number of points.

    Parameters
    ----------
    counts : array_like of int, shape (rows, cols)
    epsilon : float or PureDP
    sensitivity : int
    scale : float, optional
        Public number of points the rule uses.
    size : int, optional
        Blocks per side, overriding the rule (public).
    c : float
    scale_fraction : float
    rng : numpy.random.Generator, optional

    Examples
    --------
    >>> from veil.random import make_rng
    >>> r = ug(np.ones((64, 64), dtype=int), epsilon=1.0, scale=4096, rng=make_rng(seed=0))
    >>> r.parameters["blocks"]
    [21, 21]
    """
    x = as_grid_counts(counts, batch=True)
    b0 = b = as_budget(epsilon)
    s = check_sensitivity(sensitivity)
    g = make_rng(rng)
    rows, cols = x.shape[-2:]
    split, note = {}, "size given by the caller"
    if size is None:
        n_est, b, split, note = scale_estimate(x, b, scale=scale, sensitivity=s, rng=g,
                                               fraction=scale_fraction)
        m = ug_size(n_est, b.epsilon, s, check_positive(c, "c"))
    else:
        m = check_int(size, "size", minimum=1)
    mr, mc = grid_dims(m, rows, cols)
    re_, ce = split_edges(rows, mr), split_edges(cols, mc)
    P = prefix2d(x)
    tot = rect_sums(P, re_[:-1, None], re_[1:, None], ce[None, :-1], ce[None, 1:])
    y, var, ns = noisy(tot, b.epsilon, s, g)
    # with a noisy scale, the grid size (and the note giving the scale) are outputs
    derived = ("parameters.m", "parameters.blocks", "parameters.scale_rule", "notes") \
        if "scale" in split else ()
    split["blocks"] = b.epsilon
    return Release(spread_blocks(y, re_, ce), "ug", b0,
                   _meta(x, s, {"m": m, "blocks": [mr, mc], "c": c, "scale_rule": note}),
                   split, noise_scale=ns, noise_variance=var,
                   expected_error={"per_block_variance": var},
                   notes=(NEIGHBOURS, note), derived=derived)


# --------------------------------------------------------------------------- AG
def ag_sizes(n_points: float, epsilon: float, sensitivity: int = 1, c: float = UG_C
             ) -> int:
    """AG's first-level size ``m1 = max(10, ceil(sqrt(N eps / c) / 4))``.

    Examples
    --------
    >>> ag_sizes(10**6, 1.0)
    80
    """
    n = max(float(n_points), 0.0)
    return max(10, math.ceil(math.sqrt(n * epsilon / (sensitivity * c)) / 4 - 1e-12))


def ag(counts, *, epsilon, sensitivity: int = 1, scale: float | None = None,
       alpha: float = 0.5, c: float = UG_C, c2: float | None = None,
       scale_fraction: float = 0.05, rng=None) -> Release:
    """AG, the adaptive grid of Qardaji, Yang and Li (ICDE 2013).

    Level 1: an ``m1 x m1`` grid, ``m1 = max(10, ceil(sqrt(N eps / c) / 4))``, measured with
    ``alpha eps``. Level 2: each level-1 block with noisy count ``N'`` is split into
    ``m2 x m2`` sub-blocks, ``m2 = ceil(sqrt(N' (1 - alpha) eps / c2))`` (``c2 = c / 2``), measured
    with ``(1 - alpha) eps``. Constrained inference makes each block equal to the sum of its
    sub-blocks (inverse-variance weighting of the block's two estimates; the difference shared
    equally), and each sub-block is spread uniformly over its cells.

    Why it is eps-DP: each level partitions the points (L1 sensitivity ``s`` per level) and the
    levels compose sequentially to ``alpha eps + (1 - alpha) eps``; the level-2 sizes depend only
    on the level-1 noisy counts (post-processing of an eps-DP output) and public values; ``N`` as
    in :func:`ug`; inference and spreading are post-processing.

    Examples
    --------
    >>> from veil.random import make_rng
    >>> r = ag(np.ones((64, 64), dtype=int), epsilon=1.0, scale=4096, rng=make_rng(seed=0))
    >>> r.parameters["m1"]
    10
    """
    x = as_grid_counts(counts)
    b0 = b = as_budget(epsilon)
    s = check_sensitivity(sensitivity)
    alpha = check_probability(alpha, "alpha", open_low=True, open_high=True)
    c = check_positive(c, "c")
    c2 = c / 2 if c2 is None else check_positive(c2, "c2")
    g = make_rng(rng)
    n_est, b, split, note = scale_estimate(x, b, scale=scale, sensitivity=s, rng=g,
                                           fraction=scale_fraction)
    e1, e2 = (p.epsilon for p in b.split([alpha, 1.0 - alpha]))
    m1 = ag_sizes(n_est, b.epsilon, s, c)
    value, info = ag_core(x, m1=m1, e1=e1, e2=e2, sensitivity=s, c2=c2, rng=g)
    derived = ("parameters.m1", "parameters.blocks", "parameters.scale_rule", "notes") \
        if "scale" in split else ()
    split.update({"level_1": e1, "level_2": e2})
    return Release(value, "ag", b0,
                   _meta(x, s, {"m1": int(m1), "blocks": info["blocks"], "alpha": alpha,
                                "c": c, "c2": c2, "scale_rule": note}),
                   split, noise_scale=info["scale_2"], noise_variance=info["var_2"],
                   expected_error={"level_1_variance": info["var_1"],
                                   "level_2_variance": info["var_2"]},
                   notes=(NEIGHBOURS, note, "the level-2 sizes are read from the noisy level-1 "
                          "counts (post-processing); they are not published separately"),
                   derived=derived)


def ag_core(x: np.ndarray, *, m1: int, e1: float, e2: float, sensitivity: int, c2: float,
            rng, level2_from_true: bool = False) -> tuple[np.ndarray, dict]:
    """AG's two levels and inference on counts ``x`` of shape ``(..., rows, cols)``.

    One code path for a release and for a batch of releases (the audits). Every fine cell is
    mapped to its level-1 block and its sub-block (sub-edges ``floor(j h / m2)``), so sub-block
    sums, noise, inference and spreading are a few ``bincount`` calls over all cells.
    ``level2_from_true`` (level-2 sizes from the TRUE block counts) exists only for the audit's
    canary; it is not private.
    """
    s = sensitivity
    rows, cols = x.shape[-2:]
    xb = x.reshape(-1, rows, cols)
    B = xb.shape[0]
    mr, mc = grid_dims(m1, rows, cols)
    re_, ce = split_edges(rows, mr), split_edges(cols, mc)
    P = prefix2d(xb)
    tot1 = rect_sums(P, re_[:-1, None], re_[1:, None], ce[None, :-1], ce[None, 1:])
    y1, v1, _ = noisy(tot1, e1, s, rng)
    # level-2 sizes from the noisy level-1 counts (post-processing)
    src = tot1 if level2_from_true else y1
    m2 = np.ceil(np.sqrt(np.maximum(src, 0) * e2 / (s * c2)) - 1e-12).astype(np.int64)
    m2 = np.maximum(m2, 1)
    bh, bw = np.diff(re_), np.diff(ce)
    m2r = np.minimum(m2, bh[None, :, None])
    m2c = np.minimum(m2, bw[None, None, :])
    # every fine cell -> its block (I, J) and its sub-block
    I = np.repeat(np.arange(mr), bh)
    J = np.repeat(np.arange(mc), bw)
    ly = (np.arange(rows) - re_[I])[None, :, None]
    lx = (np.arange(cols) - ce[J])[None, None, :]
    bi = np.arange(B)[:, None, None]
    kr = m2r[bi, I[None, :, None], J[None, None, :]]
    kc = m2c[bi, I[None, :, None], J[None, None, :]]
    h = bh[I][None, :, None]
    w = bw[J][None, None, :]
    jr = ((ly + 1) * kr + h - 1) // h - 1
    jc = ((lx + 1) * kc + w - 1) // w - 1
    nb = mr * mc
    nsub = (m2r * m2c).reshape(B, nb)
    local = np.cumsum(nsub, axis=1) - nsub
    start = np.concatenate(([0], np.cumsum(nsub.sum(axis=1))[:-1]))
    block = (I[:, None] * mc + J[None, :])[None]
    leaf = start[:, None, None] + local[bi, block] + jr * kc + jc
    n_leaves = int(nsub.sum())
    true_leaf = np.bincount(leaf.ravel(), weights=xb.ravel(), minlength=n_leaves)
    area = np.bincount(leaf.ravel(), minlength=n_leaves)
    y2, v2, ns = noisy(np.rint(true_leaf).astype(np.int64), e2, s, rng)
    leaf_block = np.repeat(np.arange(B * nb), nsub.ravel())
    S = np.bincount(leaf_block, weights=y2.astype(np.float64), minlength=B * nb)
    k = nsub.ravel().astype(np.float64)
    v1, v2 = max(v1, 1e-300), max(v2, 1e-300)  # noise-free limit: no division by zero
    w1, w2 = 1.0 / v1, 1.0 / (k * v2)
    z = (w1 * y1.ravel() + w2 * S) / (w1 + w2)
    est_leaf = y2 + ((z - S) / k)[leaf_block]
    value = (est_leaf / area)[leaf].reshape(x.shape)
    return value, {"blocks": [mr, mc], "var_1": v1, "var_2": v2, "scale_2": ns,
                   "leaves": n_leaves}


# --------------------------------------------------------------------------- 2-D trees
def tree2d(x: np.ndarray, *, base: int, level_eps, sensitivity: int, rng,
           leaf_side: int = 1) -> tuple[np.ndarray, list[float], list[float]]:
    """Measure a 2-D tree of fan-out ``base**2`` over the grid and return consistent estimates.

    The grid (``(..., rows, cols)``, batch dimensions allowed) is padded with public zeros to a
    ``side x side`` square (``side = leaf_side * base**h``), merged into leaf blocks of
    ``leaf_side x leaf_side`` cells, and its cells are listed in nested-block order
    (:func:`~veil.maps._blocks.block_order`), so that every tree node is a contiguous run and
    :func:`veil.histograms.tree.noisy_tree` / :func:`~veil.histograms.tree.tree_inference` apply
    unchanged. Level ``l`` (leaves first) gets ``level_eps[l]``; a protected unit changes each
    level by at most ``sensitivity`` in L1, so discrete Laplace of scale ``sensitivity /
    level_eps[l]`` per node (group privacy: the 1-D helper is called with ``eps / sensitivity``).
    Nodes made only of padding are published as their known 0
    (:func:`veil.histograms.tree.zero_empty_nodes`). Leaf estimates are spread uniformly over
    the real cells of their block.

    Returns ``(estimate (..., rows, cols), level variances, level scales)``.
    """
    rows, cols = x.shape[-2:]
    lead = x.shape[:-2]
    nb = max(1, -(-max(rows, cols) // leaf_side))
    h = side_power(nb, base)
    side = leaf_side * base ** h
    pad = pad_square(x, side)
    if leaf_side > 1:
        k = side // leaf_side
        pad = pad.reshape(*lead, k, leaf_side, k, leaf_side).sum(axis=(-3, -1))
    n_leaf_side = base ** h
    order = block_order(base, h)
    v = pad.reshape(*lead, n_leaf_side * n_leaf_side)[..., order]
    eps = [float(e) / sensitivity for e in level_eps]
    if h == 0:  # a single leaf: the tree is one measured node
        y, v0, s0 = noisy(v, float(level_eps[0]), sensitivity, rng)
        est, var, scales = y.astype(np.float64), [v0], [s0]
    else:
        levels, var, scales = noisy_tree(v, branching=base * base, level_epsilons=eps, rng=rng)
        # the nodes made only of padding count nothing whatever the data: publish their 0
        real = pad_square(np.ones((rows, cols), dtype=np.int64), side)
        if leaf_side > 1:
            real = real.reshape(k, leaf_side, k, leaf_side).sum(axis=(-3, -1))
        real = (real.reshape(-1)[order] > 0).astype(np.int64)
        est = tree_inference(zero_empty_nodes(levels, real, base * base), var, base * base)[0]
    out = np.empty_like(est)
    out[..., order] = est
    out = out.reshape(*lead, n_leaf_side, n_leaf_side)
    if leaf_side == 1:
        return out[..., :rows, :cols], var, scales
    # spread each leaf block over its real (unpadded) cells
    edges = np.arange(n_leaf_side + 1) * leaf_side
    real_r = np.clip(np.minimum(edges[1:], rows) - edges[:-1], 0, None)
    real_c = np.clip(np.minimum(edges[1:], cols) - edges[:-1], 0, None)
    area = np.maximum(real_r[:, None] * real_c[None, :], 1)
    dens = out / area
    full = np.repeat(np.repeat(dens, leaf_side, axis=-2), leaf_side, axis=-1)
    return full[..., :rows, :cols], var, scales


def tree_levels(rows: int, cols: int, base: int, leaf_side: int = 1) -> int:
    """Number of levels (leaves to root) of the 2-D tree of :func:`tree2d`."""
    nb = max(1, -(-max(rows, cols) // leaf_side))
    return side_power(nb, base) + 1


def quadtree_epsilons(levels: int, epsilon: float) -> list[float]:
    """Cormode et al.'s geometric budget, leaves first: ``eps_i ∝ 2^((h - i) / 3)``.

    ``eps_i = eps 2^((h-i)/3) (2^(1/3) - 1) / (2^((h+1)/3) - 1)`` for level ``i`` (0 = leaves,
    ``h`` = root), which minimises the variance of a range query's canonical decomposition in a
    quadtree (the number of nodes used doubles per level down); the parts never sum to more
    than epsilon.

    Examples
    --------
    >>> [round(e, 4) for e in quadtree_epsilons(3, 1.0)]
    [0.4126, 0.3275, 0.2599]
    """
    from ..budget import PureDP

    h = levels - 1
    w = [2.0 ** ((h - i) / 3.0) for i in range(levels)]
    return [p.epsilon for p in PureDP(epsilon).split(w)]


def quadtree(counts, *, epsilon, sensitivity: int = 1, height: int | None = None,
             rng=None) -> Release:
    """DP quadtree with geometric budget and constrained inference (Cormode et al., ICDE 2012).

    A full quadtree over the grid (padded with public empty cells to a power-of-two square):
    every node is a square block, its four children the quarters. ``height`` levels below the
    root (default: down to single cells; a smaller height makes the leaves blocks, spread
    uniformly). Level ``i`` (0 = leaves) gets :func:`quadtree_epsilons`; ordinary least squares
    over all noisy node counts (two linear passes) makes the tree consistent.

    Why it is eps-DP: the tree is data-independent; every point is in one node per level, so a
    protected unit changes each level by at most ``sensitivity`` (L1), each level is
    ``eps_i``-DP with discrete Laplace of scale ``sensitivity / eps_i``, and the levels compose
    to ``sum eps_i <= eps``; inference is post-processing.

    Examples
    --------
    >>> from veil.random import make_rng
    >>> r = quadtree(np.ones((8, 8), dtype=int), epsilon=1.0, rng=make_rng(seed=0))
    >>> r.parameters["levels"], len(r.budget_split)
    (4, 4)
    """
    x = as_grid_counts(counts, batch=True)
    b = as_budget(epsilon)
    s = check_sensitivity(sensitivity)
    rows, cols = x.shape[-2:]
    full = side_power(max(rows, cols), 2)
    hh = full if height is None else check_int(height, "height", minimum=0, maximum=full)
    leaf_side = 2 ** (full - hh)
    L = hh + 1
    eps = quadtree_epsilons(L, b.epsilon)
    est, var, scales = tree2d(x, base=2, level_eps=eps, sensitivity=s, rng=make_rng(rng),
                              leaf_side=leaf_side)
    return Release(est, "quadtree", b,
                   _meta(x, s, {"levels": L, "height": hh, "leaf_side": leaf_side,
                                "padded_side": leaf_side * 2 ** hh, "budget": "geometric"}),
                   {f"level_{i}": e for i, e in enumerate(eps)},
                   noise_scale=scales[0], noise_variance=var[0],
                   expected_error={"leaf_node_variance": var[0]},
                   notes=(NEIGHBOURS, "levels listed leaves first; padding cells dropped after "
                          "inference"))


def hb2d_branching(rows: int, cols: int, *, queries: int = 2000) -> int:
    """Per-axis branching ``b`` of HB2D: minimises a range-query variance model.

    The model (Qardaji et al.'s argument for HB, in 2-D): every level gets ``eps / L``, so each
    node has variance proportional to ``L^2``; a rectangle is answered from its canonical
    decomposition into tree nodes (at level ``l``: the blocks of side ``b^l`` inside the query
    whose parent is not), so the variance is ``L^2`` times the number of nodes used, averaged
    over ``queries`` uniformly random rectangles of the padded grid (drawn with a fixed public
    seed: the choice depends only on the grid's shape). Candidates ``b = 2 .. 16``.

    Examples
    --------
    >>> hb2d_branching(256, 256)
    4
    """
    rows = check_int(rows, "rows", minimum=1)
    cols = check_int(cols, "cols", minimum=1)
    g = np.random.default_rng(20130827)  # public, fixed: the rule is data-independent
    ab = g.random((queries, 4))
    y = np.sort((ab[:, :2] * rows).astype(np.int64), axis=1)
    x = np.sort((ab[:, 2:] * cols).astype(np.int64), axis=1)
    y0, y1 = y[:, 0], y[:, 1] + 1
    x0, x1 = x[:, 0], x[:, 1] + 1
    best, best_v = 2, math.inf
    for b in range(2, 17):
        h = side_power(max(rows, cols), b)
        L = h + 1
        F = []
        for lv in range(h + 1):
            sz = b ** lv
            fy = np.maximum(y1 // sz - (-(-y0 // sz)), 0)
            fx = np.maximum(x1 // sz - (-(-x0 // sz)), 0)
            F.append(fy * fx)
        F.append(np.zeros_like(F[0]))
        nodes = sum(F[lv] - b * b * F[lv + 1] for lv in range(h + 1))
        v = L * L * float(np.mean(nodes))
        if v < best_v - 1e-9:
            best, best_v = b, v
    return best


def hb2d(counts, *, epsilon, sensitivity: int = 1, branching: int | None = None,
         rng=None) -> Release:
    """HB2D: a 2-D hierarchical histogram with uniform budget and constrained inference.

    Like :func:`veil.histograms.hb` in 2-D: a tree of fan-out ``b x b`` over the (padded) grid,
    ``eps / L`` per level, least-squares inference; ``b`` per axis from
    :func:`hb2d_branching` (a public function of the grid's shape) unless given.

    Why it is eps-DP: as :func:`quadtree`, with equal level budgets.

    Examples
    --------
    >>> from veil.random import make_rng
    >>> r = hb2d(np.ones((64, 64), dtype=int), epsilon=1.0, rng=make_rng(seed=0))
    >>> r.parameters["branching"], r.parameters["levels"]
    (4, 4)
    """
    x = as_grid_counts(counts, batch=True)
    b = as_budget(epsilon)
    s = check_sensitivity(sensitivity)
    rows, cols = x.shape[-2:]
    # at most the grid's side: a wider node is never split (100000 padded the tree to
    # 100000 x 100000 cells: 74.5 GiB)
    br = hb2d_branching(rows, cols) if branching is None else check_int(
        branching, "branching", minimum=2, maximum=max(2, rows, cols))
    L = tree_levels(rows, cols, br)
    eps = [p.epsilon for p in b.split([1.0] * L)]
    est, var, scales = tree2d(x, base=br, level_eps=eps, sensitivity=s, rng=make_rng(rng))
    return Release(est, "hb2d", b,
                   _meta(x, s, {"branching": br, "levels": L, "padded_side": br ** (L - 1),
                                "branching_rule": "variance model (hb2d_branching)"
                                if branching is None else "given"}),
                   {f"level_{i}": e for i, e in enumerate(eps)},
                   noise_scale=scales[0], noise_variance=var[0],
                   expected_error={"node_variance": var[0]},
                   notes=(NEIGHBOURS, "levels listed leaves first; padding cells dropped after "
                          "inference"))


# --------------------------------------------------------------------------- DAWA-2D
def hilbert_cells(rows: int, cols: int) -> np.ndarray:
    """Row-major indices of the ``rows x cols`` cells in Hilbert-curve order (the curve of the
    smallest enclosing power-of-two square, padding cells skipped)."""
    k = side_power(max(rows, cols), 2)
    n = 1 << k
    order = hilbert_order(k)
    r, c = np.divmod(order, n)
    keep = (r < rows) & (c < cols)
    return r[keep] * cols + c[keep]


def dawa2d(counts, *, epsilon, sensitivity: int = 1, rng=None) -> Release:
    """DAWA-2D: the cells in Hilbert-curve order, then the 1-D DAWA of :mod:`veil.histograms`.

    Why it is eps-DP: the Hilbert order is public (it depends only on the grid's shape), so the
    reordered cells are a 1-D histogram whose neighbours differ by at most ``sensitivity`` in L1;
    :func:`veil.histograms.dawa` is eps-DP for neighbours at L1 distance 1, so run with
    ``epsilon / sensitivity`` it is eps-DP at distance ``sensitivity`` (group privacy).

    Examples
    --------
    >>> from veil.random import make_rng
    >>> r = dawa2d(np.ones((8, 8), dtype=int), epsilon=1.0, rng=make_rng(seed=0))
    >>> r.value.shape
    (8, 8)
    """
    from ..histograms import dawa

    x = as_grid_counts(counts)
    b = as_budget(epsilon)
    s = check_sensitivity(sensitivity)
    rows, cols = x.shape
    idx = hilbert_cells(rows, cols)
    inner = dawa(x.ravel()[idx], epsilon=b.epsilon / s, rng=make_rng(rng))
    out = np.empty(rows * cols, dtype=np.float64)
    out[idx] = np.asarray(inner.value, dtype=np.float64)
    split = {f"dawa_{k}": float(v) * s for k, v in inner.budget_split.items()}
    return Release(out.reshape(rows, cols), "dawa2d", b,
                   _meta(x, s, {"order": "hilbert", "dawa_1d": inner.parameters}),
                   split, notes=(NEIGHBOURS, "1-D DAWA run with epsilon / sensitivity (group "
                                 "privacy) over the Hilbert order", *inner.notes),
                   derived=("parameters.dawa_1d",))
