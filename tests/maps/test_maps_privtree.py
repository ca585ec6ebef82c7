"""PrivTree's measurement of the released tree: the budgets of the nodes, the tree least
squares against a dense weighted least-squares solve, and the release's noise against its
closed form (statistical, with a power check)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from veil.maps.privtree import (_grow, node_epsilons, privtree, privtree_batch,
                                tree_least_squares)
from veil.random import make_rng

ALPHA = 1e-4  # significance level of the statistical tests below


def _random_map(g, side=16):
    x = np.zeros((side, side), dtype=np.int64)
    x[: side // 4, : side // 4] = g.integers(20, 200, size=(side // 4, side // 4))
    x[side // 2:, side - 3] = g.integers(0, 40, size=side - side // 2)
    return x


def _leaf_matrix(levels):
    """Rows: every node (level by level); columns: the leaves; 1 where the leaf is under it."""
    leaf_ids = []  # (depth, index) of every leaf
    for d, L in enumerate(levels):
        leaf_ids += [(d, i) for i in np.flatnonzero(L["leaf"])]
    col = {k: j for j, k in enumerate(leaf_ids)}
    n_nodes = sum(L["c"].size for L in levels)
    offs = np.cumsum([0] + [L["c"].size for L in levels])
    A = np.zeros((n_nodes, len(leaf_ids)))
    for (d, i), j in col.items():
        dd, ii = d, i
        while dd >= 0:  # walk up to the root
            A[offs[dd] + ii, j] = 1.0
            ii = levels[dd]["parent"][ii]
            dd -= 1
    return A, leaf_ids, offs


@pytest.mark.parametrize("seed", range(6))
def test_tree_least_squares_equals_the_dense_weighted_least_squares_solve(seed):
    g = make_rng(seed=seed)
    levels, _, _ = _grow(_random_map(g), batch=1, eps_tree=2.0, sensitivity=1, theta=0.0,
                         rng=g, split_on_true=False)
    assert len(levels) >= 3
    A, leaf_ids, offs = _leaf_matrix(levels)
    n = A.shape[0]
    y = g.normal(0.0, 30.0, size=n) + A @ g.integers(0, 50, size=A.shape[1])
    v = g.uniform(0.5, 20.0, size=n)
    internal = np.concatenate([~L["leaf"] for L in levels])
    v[internal & (g.random(n) < 0.3)] = np.inf  # some internal nodes unmeasured
    ys = [y[offs[d]:offs[d + 1]] for d in range(len(levels))]
    vs = [v[offs[d]:offs[d + 1]] for d in range(len(levels))]
    final = tree_least_squares(levels, ys, vs)
    m = np.isfinite(v)
    w = 1.0 / np.sqrt(v[m])
    dense, *_ = np.linalg.lstsq(A[m] * w[:, None], y[m] * w, rcond=None)
    got = np.array([final[d][i] for d, i in leaf_ids])
    np.testing.assert_allclose(got, dense, rtol=1e-9, atol=1e-7)
    # consistent: every node is the sum of its leaves' estimates
    np.testing.assert_allclose(np.concatenate(final), A @ got, rtol=1e-9, atol=1e-7)


def test_node_budgets_sum_to_the_measurement_budget_on_every_path():
    g = make_rng(seed=3)
    x = np.zeros((32, 32), dtype=np.int64)  # counts near delta: the trees' heights vary
    x[:8, :8] = g.integers(0, 3, size=(8, 8))
    x[20, 20] = 6
    levels, _, _ = _grow(x, batch=50, eps_tree=1.0, sensitivity=1, theta=0.0, rng=g,
                         split_on_true=False)
    for share in (0.0, 0.3, 0.5, 0.9):
        eps = node_epsilons(levels, 0.7, share, batch=50)
        heights = {}
        for d, L in enumerate(levels):
            for b in L["b"]:
                heights[b] = d + 1
        for d, L in enumerate(levels):
            for i in np.flatnonzero(L["leaf"]):
                total, dd, ii = 0.0, d, i
                while dd >= 0:
                    total += eps[dd][ii]
                    ii = levels[dd]["parent"][ii]
                    dd -= 1
                assert total == pytest.approx(0.7, rel=1e-12)
                if share == 0:
                    assert eps[d][i] == 0.7
        assert all((e >= 0).all() for e in eps)
    assert len(set(heights.values())) > 1  # the batch's trees have different heights


def _block_variance_theory(levels, eps_nodes, s, block):
    """Exact variance of the least-squares estimate of the sum of ``block`` leaves."""
    from veil.maps._common import dl_var

    A, leaf_ids, _ = _leaf_matrix(levels)
    e = np.concatenate(eps_nodes)
    m = e > 0
    var = np.array([dl_var(float(v), s) for v in e[m]])
    W = np.diag(1.0 / var)
    cov = np.linalg.inv(A[m].T @ W @ A[m])
    sel = np.array([1.0 if k in block else 0.0 for k in leaf_ids])
    return float(sel @ cov @ sel), leaf_ids


@pytest.mark.parametrize("share", [0.0, 0.5])
def test_release_noise_matches_the_least_squares_closed_form_and_rejects_under_noise(share):
    """With the tree fixed (split on the true counts: a deterministic structure, so the tree's
    own randomness is out), a block of leaves has mean its true count and the closed-form
    variance of the least-squares estimate. Two-sided tests at ALPHA: the mean (z test) and
    the variance (the sample variance's normal approximation with the kurtosis estimated);
    power: the same variance test rejects the release whose nodes are measured with twice
    their budget."""
    x = np.zeros((8, 8), dtype=np.int64)
    x[:4, :4] = 40
    x[:2, :2] = 90
    x[6, 6] = 30
    n = 20_000
    eps_meas, s = 0.8, 2
    kw = dict(batch=n, eps_tree=1.0, sensitivity=s, theta=0.0, split_on_true=True,
              internal_share=share)
    est, _ = privtree_batch(x, eps_leaf=eps_meas, rng=make_rng(seed=11), **kw)
    levels, _, _ = _grow(x, batch=1, eps_tree=1.0, sensitivity=s, theta=0.0, rng=None,
                         split_on_true=True)
    eps_nodes = node_epsilons(levels, eps_meas, share, batch=1)
    # the top-left 4 x 4 quarter: its leaves are the nodes under depth-1 node 0
    block = {(d, i) for d, L in enumerate(levels) for i in np.flatnonzero(L["leaf"])
             if L["y0"][i] < 4 and L["x0"][i] < 4}
    want_var, _ = _block_variance_theory(levels, eps_nodes, s, block)
    q = est[:, :4, :4].sum(axis=(1, 2))

    def reject(sample):
        z_mean = (sample.mean() - x[:4, :4].sum()) / math.sqrt(want_var / n)
        sv = sample.var(ddof=1)
        kurt = stats.kurtosis(sample, fisher=False)
        se = want_var * math.sqrt((kurt - (n - 3) / (n - 1)) / n)
        z_var = (sv - want_var) / se
        crit = stats.norm.ppf(1 - ALPHA / 4)
        return abs(z_mean) > crit or abs(z_var) > crit

    assert not reject(q)
    under, _ = privtree_batch(x, eps_leaf=eps_meas, leaf_eps_override=2 * eps_meas,
                              rng=make_rng(seed=12), **kw)
    assert reject(under[:, :4, :4].sum(axis=(1, 2)))


def test_internal_share_zero_is_the_leaves_alone_and_the_default_measures_internal_nodes():
    x = _random_map(make_rng(seed=4))
    r0 = privtree(x, epsilon=1.0, internal_share=0.0, rng=make_rng(seed=9))
    r = privtree(x, epsilon=1.0, rng=make_rng(seed=9))
    assert r0.parameters["measured_nodes"] == r0.parameters["leaves"]
    assert r.parameters["measured_nodes"] > r.parameters["leaves"]
    assert r.parameters["internal_share"] == 0.5 and sorted(r.budget_split) == ["nodes", "tree"]
    # with share 0, a leaf's value is its noisy integer count spread over its cells
    est, info = privtree_batch(x, batch=1, eps_tree=0.3, eps_leaf=0.7, sensitivity=1,
                               theta=0.0, rng=make_rng(seed=9), internal_share=0.0)
    assert info["measured_nodes"] == info["leaves"]
    assert abs(est.sum() - round(est.sum())) < 1e-6
    with pytest.raises(Exception, match="internal_share"):
        privtree(x, epsilon=1.0, internal_share=1.0)


def test_what_depends_on_the_tree_is_declared_an_output():
    """The noisiest leaf's scale depends on the tree's height (a lone root leaf gets the whole
    measurement budget), so it is declared in ``derived`` with the tree's shape."""
    empty = np.zeros((16, 16), dtype=np.int64)
    dense = np.full((16, 16), 50, dtype=np.int64)
    r0 = next(r for r in (privtree(empty, epsilon=1.0, rng=make_rng(seed=k)) for k in range(50))
              if r.parameters["leaves"] == 1)
    r1 = privtree(dense, epsilon=1.0, rng=make_rng(seed=0))
    assert r0.noise_scale != r1.noise_scale
    assert r0.noise_scale == pytest.approx(1 / (0.7 * 1.0))
    assert r1.noise_scale == pytest.approx(1 / (0.7 * 0.5))
    for field in ("noise_scale", "noise_variance", "expected_error", "parameters.leaves",
                  "parameters.max_depth", "parameters.measured_nodes"):
        assert field in r0.derived and field in r1.derived
