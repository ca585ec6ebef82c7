"""Statistical tests of the map mechanisms' noise, each with a power check (alpha 1e-6).

* Identity: the noise is discrete Laplace of scale s/eps (chi-square), and the same test
  rejects the scale x1.3 and x0.7.
* The linear mechanisms (UG with a given size, the quadtree, HB2D, HDMM): a rectangle query's
  answer is unbiased and its variance equals the closed form computed from the mechanism's
  linear map; the same variance test rejects the noise of a wrong scale (x1.3 / x0.7).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from veil.audit import conformance_chi2
from veil.maps import identity
from veil.samplers import discrete_laplace_pmf

ALPHA = 1e-6
N_S = 8000  # releases per variance test (the sample variance has a relative SE <= 2.5 %)
X = np.random.default_rng(4).poisson(6.0, (8, 8)).astype(np.int64)
Q = (1, 6, 2, 7)  # rectangle rows [1, 6) x cols [2, 7)


def test_identity_noise_is_discrete_laplace_with_power():
    s, eps = 3, 0.75
    noise = (identity(np.broadcast_to(X, (4000, 8, 8)), epsilon=eps, sensitivity=s,
                      rng=np.random.default_rng(11)).value - X).ravel()
    support = np.arange(-25, 26)
    scale = s / eps
    assert conformance_chi2(noise, lambda z: discrete_laplace_pmf(z, scale), support,
                            alpha=ALPHA).passed
    for wrong in (1.3, 0.7):
        assert not conformance_chi2(noise, lambda z: discrete_laplace_pmf(z, scale * wrong),
                                    support, alpha=ALPHA).passed


def _variance_test(samples: np.ndarray, mean: float, var: float) -> tuple[float, float]:
    """Two-sided p-values of E = mean (z-test) and Var = var (large-sample: the sample
    variance has standard error sqrt((m4 - s^4) / n), m4 the sample fourth central moment)."""
    n = samples.size
    m = samples.mean()
    s2 = samples.var(ddof=1)
    m4 = np.mean((samples - m) ** 4)
    z_mean = (m - mean) / np.sqrt(var / n)
    z_var = (s2 - var) / np.sqrt(max(m4 - s2 ** 2, 1e-300) / n)
    return 2 * stats.norm.sf(abs(z_mean)), 2 * stats.norm.sf(abs(z_var))


def _query(v):
    r0, r1, c0, c1 = Q
    return v[..., r0:r1, c0:c1].sum(axis=(-2, -1))


def _ug_case(scale_factor=1.0):
    from veil.maps.mechanisms import ug

    s, eps = 2, 0.5
    v = ug(np.broadcast_to(X, (N_S, 8, 8)), epsilon=eps / scale_factor, sensitivity=s,
           size=4, rng=np.random.default_rng(5)).value
    from veil.samplers import discrete_laplace_variance

    # 4 x 4 blocks of 2 x 2 cells: the query [1,6) x [2,7) covers block fractions
    fr = np.array([0.5, 1.0, 1.0, 0.0])  # rows 1..5 over blocks [0,2),[2,4),[4,6),[6,8)
    fc = np.array([0.0, 1.0, 1.0, 0.5])  # cols 2..6
    w = np.outer(fr, fc)
    var = discrete_laplace_variance(s / eps) * float((w ** 2).sum())
    true = float(_query(X.astype(float)))
    from veil.maps._blocks import split_edges, spread_blocks

    re_ = split_edges(8, 4)
    P = np.add.reduceat(np.add.reduceat(X, re_[:-1], axis=0), re_[:-1], axis=1)
    mean = float(_query(spread_blocks(P, re_, re_)))
    return _query(v), mean, var, true


def _hdmm_case(scale_factor=1.0):
    from veil.maps.hdmm import PIdentity, hdmm_measure, hdmm_reconstruct

    g = np.random.default_rng(0)
    ar = PIdentity(g.random((2, 8)), float("nan"))
    ac = PIdentity(g.random((2, 8)), float("nan"))
    s, eps = 2, 0.5
    y = hdmm_measure(np.broadcast_to(X, (N_S, 8, 8)), ar, ac, epsilon=eps / scale_factor,
                     sensitivity=s, rng=np.random.default_rng(6))
    est = hdmm_reconstruct(y, ar, ac)
    qr = np.zeros(8)
    qr[Q[0]:Q[1]] = 1
    qc = np.zeros(8)
    qc[Q[2]:Q[3]] = 1
    pr = np.linalg.pinv(ar.matrix()).T @ qr
    pc = np.linalg.pinv(ac.matrix()).T @ qc
    b = s / eps
    var = 2 * b * b * float((pr ** 2).sum() * (pc ** 2).sum())
    return _query(est), float(_query(X.astype(float))), var, None


def _tree_case(scale_factor=1.0, base=2):
    """A grid of side base**h (no padding), so the block order covers exactly its cells."""
    from veil.histograms.tree import tree_inference
    from veil.maps._blocks import block_order
    from veil.maps.mechanisms import quadtree_epsilons, tree2d, tree_levels
    from veil.samplers import discrete_laplace_variance

    s, eps = 2, 1.0
    side = 8 if base == 2 else 16
    x = X if base == 2 else np.random.default_rng(8).poisson(6.0, (16, 16)).astype(np.int64)
    L = tree_levels(side, side, base)
    leps = quadtree_epsilons(L, eps) if base == 2 else [eps / L] * L
    est, var_levels, _ = tree2d(np.broadcast_to(x, (N_S, side, side)),
                                base=base, level_eps=[e / scale_factor for e in leps],
                                sensitivity=s, rng=np.random.default_rng(7))
    # the estimate is linear in the node noise: the query's coefficient on every node, from
    # the inference applied to unit vectors
    h = L - 1
    sizes = [(base * base) ** (h - lv) for lv in range(L)]
    order = block_order(base, h)
    qmask = np.zeros((side, side))
    qmask[Q[0]:Q[1], Q[2]:Q[3]] = 1
    qvec = qmask.ravel()[order]
    v_true = [discrete_laplace_variance(s / e) for e in leps]
    var = 0.0
    for lv in range(L):
        E = np.eye(sizes[lv])
        levels = [np.zeros((sizes[lv], sizes[k])) for k in range(L)]
        levels[lv] = E
        leaf = tree_inference(levels, v_true, base * base)[0]
        coef = leaf @ qvec
        var += v_true[lv] * float((coef ** 2).sum())
    return _query(est), float(_query(x.astype(float))), var, None


@pytest.mark.parametrize("case", ["ug", "hdmm", "quadtree", "hb2d"])
def test_linear_mechanisms_unbiased_with_the_claimed_variance_and_power(case):
    fn = {"ug": _ug_case, "hdmm": _hdmm_case, "quadtree": _tree_case,
          "hb2d": lambda f=1.0: _tree_case(f, base=4)}[case]
    samples, mean, var, _ = fn()
    p_mean, p_var = _variance_test(samples, mean, var)
    assert p_mean > ALPHA and p_var > ALPHA, (case, p_mean, p_var, samples.var(), var)
    for wrong in (1.3, 0.7):  # power: noise of a wrong scale, same test
        s2, m2, v2, _ = fn(wrong)
        _, p_bad = _variance_test(s2, m2, var)
        assert p_bad < ALPHA, (case, wrong, p_bad)
