"""MWEM, AHP's published clustering and StructureFirst's published budget split (issue 19)."""

import math

import numpy as np
import pytest
from scipy import stats

from veil.errors import ParameterError
from veil.histograms import ahp, publish, structure_first
from veil.histograms.mwem import mwem
from veil.histograms.partition import HAVE_NUMBA
from veil.histograms.sortgroup import _err_star_numba, _err_star_numpy, ahp_clusters
from veil.histograms.structurefirst import AUTHORS_GRID, authors_structure_fraction
from veil.random import make_rng

ENGINES = ["numpy"] + (["numba"] if HAVE_NUMBA else [])


# --------------------------------------------------------------------------- MWEM
def test_mwem_budget_split_and_output():
    x = np.concatenate([np.zeros(30, int), np.full(30, 50)])
    r = mwem(x, epsilon=0.8, rounds=4, rng=make_rng(seed=0))
    assert math.fsum(r.budget_split.values()) <= 0.8
    assert r.budget_split["total"] == pytest.approx(0.04)
    assert r.budget_split["select_and_measure"] == pytest.approx(0.76)
    assert len(r.parameters["selected"]) == 4
    assert (r.value >= 0).all() and r.value.shape == x.shape
    with pytest.raises(ParameterError, match="all-range"):
        mwem(x, epsilon=1.0, workload="all-range")


def test_mwem_learns_the_shape_with_large_epsilon():
    x = np.repeat([0, 200, 0, 100], 16)
    r = mwem(x, epsilon=500.0, rounds=12, rng=make_rng(seed=1))
    # prefix error well below the uniform guess's
    P, Q = np.cumsum(x), np.cumsum(r.value)
    U = np.cumsum(np.full(64, x.sum() / 64))
    assert np.abs(Q - P).mean() < 0.25 * np.abs(U - P).mean()


@pytest.mark.slow  # thousands of end-to-end calls
def test_mwem_selection_follows_the_exponential_mechanism():
    """One round on two queries: the first selection is the exponential mechanism with
    eps_t = (1 - total_fraction) eps / 2 and sensitivity 1 on |q(A) - q(x)|, A uniform with the
    noisy total. Chi-square (alpha 1e-6) against that law; power check: rejected under the
    law with eps_t doubled."""
    x = np.array([9, 0, 0, 0])              # uniform guess is off by 6.75 on [0,1)
    q = np.array([[0, 1], [2, 4]])
    eps = 0.6
    g = make_rng(seed=2)
    N = 6000
    picks = np.array([mwem(x, epsilon=eps, workload=q, rounds=1, updates=1,
                           rng=g).parameters["selected"][0][0] == 0 for _ in range(N)])
    # the total is noisy, so the law is a mixture: simulate its probability exactly
    from veil.samplers import discrete_laplace

    tot = 9 + discrete_laplace(1 / (0.05 * eps), size=200_000, rng=make_rng(seed=3))
    Nh = np.maximum(tot, 1.0)

    def p_first(eps_t):
        s0 = np.abs(Nh / 4 - 9)
        s1 = np.abs(Nh / 2 - 0)
        return float(np.mean(1 / (1 + np.exp(eps_t * (s1 - s0) / 2))))

    eps_t = 0.95 * eps / 2
    k = int(picks.sum())
    assert stats.binomtest(k, N, p_first(eps_t)).pvalue > 1e-6
    assert stats.binomtest(k, N, p_first(2 * eps_t)).pvalue < 1e-6


# --------------------------------------------------------------------------- AHP
def _ahp_reference(ys, var2):
    """Plain-Python restatement of the published greedy clustering (for comparison)."""
    n = len(ys)

    def err(a, b):
        w = ys[a:b]
        return float(((w - w.mean()) ** 2).sum()) + var2 / (b - a)

    def star(j):
        best, l1, l2 = var2, 0.0, var2
        bound = var2 / (n - j) ** 2
        for l in range(j + 1, n):
            m = l - j + 1
            e1 = (ys[j] - ys[j:l + 1].mean()) ** 2
            e2 = var2 / m ** 2
            if e1 - l1 >= l2 - bound:
                break
            best = min(best, e1 + e2)
            l1, l2 = e1, e2
        return best

    cuts, i, last = [0], 0, err(0, 1)
    for j in range(1, n):
        now = err(i, j + 1)
        if now >= last + star(j):
            cuts.append(j)
            i, last = j, err(j, j + 1)
        else:
            last = now
    return cuts + [n]


@pytest.mark.parametrize("engine", ENGINES)
def test_ahp_clustering_is_the_published_rule(engine):
    rng = np.random.default_rng(4)
    for _ in range(40):
        n = int(rng.integers(1, 60))
        ys = np.sort(np.round(rng.exponential(rng.uniform(1, 30), n)))
        v = float(rng.uniform(0.5, 50))
        assert ahp_clusters(ys, v, engine=engine).tolist() == _ahp_reference(ys, v)
    ys = np.sort(rng.exponential(10, 300))
    np.testing.assert_allclose(_err_star_numba(ys, 3.0), _err_star_numpy(ys, 3.0))  # py or jit


def test_ahp_release_uses_threshold_and_clusters():
    x = np.concatenate([np.zeros(40, int), np.full(40, 300)])
    r = ahp(x, epsilon=2.0, rng=make_rng(seed=5))
    assert r.budget_split == {"counts": 1.7, "cluster_sums": pytest.approx(0.3)}
    assert r.parameters["threshold"] == pytest.approx(0.35 * math.log(80) / 1.7)
    assert r.parameters["clusters"] <= 10
    assert np.abs(r.value - x).mean() < 20


# --------------------------------------------------------------------------- StructureFirst
def test_authors_split_rule_is_their_grid_search():
    def v(e1, n, k, F, eps):
        return 2 * (k - 1) ** 3 / (e1 * (2 * (k - 1) - e1 * n * F)) + 2 * k / (eps - e1) ** 2

    for n, k, F, eps in [(1024, 103, 1000.0, 0.1), (4096, 410, 1e7, 10.0), (64, 7, 0.01, 1.0),
                         (100, 10, 0.05, 2.0), (30, 3, 0.001, 0.3)]:
        grid = [j * eps / AUTHORS_GRID for j in range(1, AUTHORS_GRID)]
        vals = [v(e, n, k, F, eps) for e in grid]
        best = grid[int(np.argmin(vals))] / eps
        assert authors_structure_fraction(n=n, k=k, count_bound=F, epsilon=eps) == \
            pytest.approx(best)
    # every DPBench setting (F >= records): eps / 20 for the structure
    for eps in (0.01, 0.1, 1.0, 10.0):
        for scale in (1e3, 1e5, 1e7):
            assert authors_structure_fraction(n=1024, k=103, count_bound=scale,
                                              epsilon=eps) == 0.05
    # the authors' literal (1 - eps1) term sends most of a large budget to the structure
    assert authors_structure_fraction(n=1024, k=103, count_bound=1e3, epsilon=10.0,
                                      literal=True) == 0.95


def test_structure_first_defaults_to_the_authors_split():
    """Issue 19: StructureFirst's default split is the authors' (eps / 20 here), not 0.5."""
    x = np.random.default_rng(6).poisson(30, 200)
    r = structure_first(x, epsilon=1.0, count_bound=1e4, rng=make_rng(seed=7))
    assert r.parameters["split_rule"] == "authors"
    assert r.budget_split["structure"] == pytest.approx(0.05)
    assert r.parameters["k"] == 20                                    # ceil(n / 10)
    r = structure_first(x, epsilon=1.0, count_bound=1e4, structure_fraction=0.3,
                        rng=make_rng(seed=7))
    assert r.budget_split["structure"] == pytest.approx(0.3)
    # no boundary to draw: the whole budget goes to the counts
    for k in (1, 200):
        r = structure_first(x, epsilon=1.0, count_bound=1e4, k=k, rng=make_rng(seed=8))
        assert r.budget_split == {"structure": 0.0, "counts": 1.0}


@pytest.mark.parametrize("m,start,spread", [(5, 0, (0.80, 0.95)), (8, 3, (0.93, 1.07)),
                                            (8, 8, (0.15, 0.35)), (13, 40, (0.45, 0.65))])
def test_the_audited_bucket_tree_is_veils_bucket_tree(m, start, spread):
    """The benchmark and the audit publish a bucket through audits.bucket_tree_release: veil's
    StructureFirst bucket tree, or the authors' twin, whose own code must differ from veil's
    only where it says: at start 0 no internal node is exact, so with the same draws it
    publishes exactly veil's values."""
    from veil.histograms.audits import bucket_tree_release
    from veil.histograms.structurefirst import _bucket_trees

    x = np.random.default_rng(m).poisson(7, m)
    rows3 = np.tile(x, (3, 1))
    ours, _ = _bucket_trees(rows3.ravel(), np.arange(4) * m, 0.7, 2, make_rng(seed=4))
    twin_at_0 = bucket_tree_release(rows3, start=0, epsilon=0.7, rng=make_rng(seed=4),
                                    authors_tree=True)
    np.testing.assert_array_equal(ours.reshape(3, m), twin_at_0)
    # The authors' twin: exact internal nodes where start + offset >= m. Spread of the
    # published bucket total, twin / veil's as it was before zero_padding (padding noised),
    # 4000 draws each (fixed seeds; the ratio's standard error is about 1.6 %): (5, 0) gains
    # only from the 3 padding leaves, (8, 3) has no padding and its root is still measured,
    # (8, 8) and (13, 40) start at or after their length, so every internal node, the root
    # included, is exact.
    rows = np.tile(x, (4000, 1))
    twin = bucket_tree_release(rows, start=start, epsilon=1.0, rng=make_rng(seed=1),
                               authors_tree=True).sum(axis=1)
    honest = bucket_tree_release(rows, start=start, epsilon=1.0, rng=make_rng(seed=2),
                                 exact_padding=False).sum(1)
    ratio = np.std(twin - x.sum()) / np.std(honest - x.sum())
    assert spread[0] < ratio < spread[1]


def test_padding_nodes_are_zero_not_noise():
    """Regression: the nodes of a tree made only of padding leaves were published with noise
    (Boost and HB at any n that is not a power of the arity, StructureFirst's bucket trees at
    almost every bucket size); they are now their known 0. The padded tree's release then
    equals the same draws with those nodes zeroed, and on n = 5 (padded to 8) the total's
    spread drops (4000 draws, fixed seeds)."""
    from veil.histograms.tree import (noisy_tree, tree_inference, tree_release_batch,
                                      zero_padding)

    X = np.tile(np.array([3, 0, 4, 1, 2]), (4000, 1))
    got = tree_release_batch(X, epsilon=1.0, branching=2, rng=make_rng(seed=5))[0]
    noisy, var, _ = noisy_tree(X, branching=2, level_epsilons=[0.25] * 4, rng=make_rng(seed=5))
    kept = [y.copy() for y in noisy]
    assert all(np.any(y[:, -1] != 0) for y in kept[:3])            # padding nodes were noisy
    zeroed = zero_padding(noisy, 5, 2)
    assert all((y[:, 5 // 2 ** lv + (5 % 2 ** lv > 0):] == 0).all() for lv, y in enumerate(zeroed))
    np.testing.assert_array_equal(got, tree_inference(zeroed, var, 2)[0][:, :5])
    before = tree_inference(kept, var, 2)[0][:, :5]
    assert np.std(got.sum(1) - 10) < 0.95 * np.std(before.sum(1) - 10)


def test_ahp_reference_steps_baseline():
    """The baseline of ``benchmarks/histograms.py --ahp-steps`` (AHP with the DPBench
    implementation's noise and sort): with negligible noise it returns the counts, and with
    real noise its error is that of veil's AHP within run-to-run noise on a small run."""
    from veil.histograms.bench import ahp_reference_check, ahp_steps_reference

    g = np.random.default_rng(0)
    x = np.repeat([0, 3, 50, 7], 16)
    g.shuffle(x)
    y = ahp_steps_reference(x, 1e7, g)
    assert np.allclose(y, x, atol=1e-3)
    rows = ahp_reference_check(trials=3, n=64, epsilons=(1.0,), scales=(10**4,), seed=1,
                               log=lambda *_: None)
    (row,) = rows
    for w in ("prefix", "random"):
        assert 0.5 < row[w]["ratio"] < 2.0, row
