"""``privtree`` (1-D): PrivTree's leaves, HDMM (or GreedyH) on them, uniform spread.

The tree step is checked against brute force: the exact probability of every set of leaves
(a product of Laplace tail probabilities over the decisions) is enumerated on small
histograms, compared with the sampler's frequencies, and its privacy loss between every pair
of neighbours is computed exactly.
"""

from __future__ import annotations

import contextlib
import importlib
import itertools
import math

import numpy as np
import pytest
from lsq_cases import dense_gls, small_cases
from scipy import stats

from veil.errors import ParameterError
from veil.histograms import privtree, publish
from veil.histograms.privtree import (leaf_measurement, leaf_strategy, leaf_workload_gram,
                                     privtree_leaves, privtree_parameters)
from veil.histograms.workload import RangeWorkload
from veil.random import make_rng

# the module (``veil.histograms.privtree`` the attribute is the function)
privtree_module = importlib.import_module("veil.histograms.privtree")

#: significance level of the statistical tests below (each also rejects a wrong twin: power)
ALPHA = 1e-4


def _split_probability(biased: float, theta: float, lam: float) -> float:
    """P(biased + Lap(lam) > theta)."""
    t = theta - biased
    return 1.0 - 0.5 * math.exp(t / lam) if t < 0 else 0.5 * math.exp(-t / lam)


def _exact_leaf_sets(x, eps_tree: float, theta: float = 0.0, *, lambda_factor: float = 1.0,
                     bias: bool = True) -> dict[frozenset, float]:
    """Brute force: every set of leaf starts and its exact probability (recursion over
    the decisions, as the paper defines the tree)."""
    lam, delta = privtree_parameters(eps_tree)
    lam *= lambda_factor
    P = np.concatenate(([0], np.cumsum(x)))

    def grow(lo, hi, depth):
        if hi - lo == 1:
            return {frozenset([lo]): 1.0}
        c = float(P[hi] - P[lo])
        b = max(c - depth * delta, theta - delta) if bias else c  # no bias: the plain count
        p = _split_probability(b, theta, lam)
        out = {frozenset([lo]): 1.0 - p}
        mid = (lo + hi) // 2
        for (a, pa), (b, pb) in itertools.product(grow(lo, mid, depth + 1).items(),
                                                   grow(mid, hi, depth + 1).items()):
            out[a | b] = out.get(a | b, 0.0) + p * pa * pb
        return out
    return grow(0, len(x), 0)


def _neighbour_pairs(n, values):
    """Every histogram with bin counts in ``values`` and each of its neighbours (one record
    more in one bin)."""
    for x in itertools.product(values, repeat=n):
        for i in range(n):
            y = np.array(x)
            y[i] += 1
            yield np.array(x), y


def _max_loss(eps_tree, pairs, theta=0.0, **kw) -> float:
    """The largest |log P_x(leaves) / P_x'(leaves)| over the neighbour pairs."""
    worst = 0.0
    for x, y in pairs:
        px = _exact_leaf_sets(x, eps_tree, theta, **kw)
        py = _exact_leaf_sets(y, eps_tree, theta, **kw)
        assert px.keys() == py.keys()
        for k in px:
            worst = max(worst, abs(math.log(px[k]) - math.log(py[k])))
    return worst


def _deep_pairs():
    """Neighbours on 16 bins (depth 4): the extra record where the data are, and where
    they are not."""
    for base in (np.zeros(16, int), np.r_[np.full(4, 6), np.zeros(12, int)],
                 np.r_[np.zeros(15, int), 40]):
        for i in (0, 3, 9, 15):
            y = base.copy()
            y[i] += 1
            yield base, y


@pytest.mark.parametrize("theta", [0.0, 3.0])
def test_leaves_are_eps_tree_dp_exactly_on_every_small_neighbour_pair(theta):
    """Exact privacy loss of the released leaves, enumerated over every histogram of 2 to 5
    bins with small counts and deeper 16-bin cases: at most eps_tree everywhere (PrivTree's
    theorem). Not vacuous: some pair reaches a whole decision's loss, 1 / lambda."""
    eps_tree = 1.0
    lam, _ = privtree_parameters(eps_tree)
    for n in (2, 3, 4, 5):
        values = (0, 1, 2, 4, 7) if n <= 4 else (0, 2, 5)
        loss = _max_loss(eps_tree, _neighbour_pairs(n, values), theta)
        assert 1 / lam * (1 - 1e-9) <= loss <= eps_tree * (1 + 1e-9)
    assert _max_loss(eps_tree, _deep_pairs(), theta) <= eps_tree * (1 + 1e-9)


def test_the_exact_loss_exceeds_eps_without_the_bias_or_with_too_little_noise():
    """Power of the exact check: the same enumeration finds the broken twins' excess (no
    depth bias: every split on the path of an extra record costs 1 / lambda, so 4 levels
    cost 4/3 eps; half the noise doubles every decision's loss)."""
    assert _max_loss(1.0, _deep_pairs(), 5.0, bias=False) > 1.2
    assert _max_loss(1.0, _neighbour_pairs(4, (0, 1, 2, 4, 7)), lambda_factor=0.5) > 1.05


def test_sampler_frequencies_match_the_exact_leaf_probabilities():
    """Chi-square goodness of fit at ALPHA of 200,000 sampled trees against the enumerated
    distribution; the same test rejects trees grown with half the noise (power check)."""
    x = np.array([2, 0, 3, 1, 0, 4])
    exact = _exact_leaf_sets(x, 1.0)
    keys = sorted(exact, key=sorted)
    p = np.array([exact[k] for k in keys])
    assert p.sum() == pytest.approx(1.0)

    def counts(**kw):
        s, _ = privtree_leaves(x, eps_tree=1.0, rng=make_rng(seed=5), batch=200_000, **kw)
        uniq, n_seen = np.unique(s, axis=0, return_counts=True)
        found = {frozenset(np.flatnonzero(u).tolist()): int(c) for u, c in zip(uniq, n_seen)}
        assert set(found) <= set(exact)         # no leaf set the enumeration calls impossible
        return np.array([found.get(k, 0) for k in keys])

    obs = counts()
    assert stats.chisquare(obs, p * obs.sum()).pvalue > ALPHA
    bad = counts(lambda_factor=0.5)
    assert stats.chisquare(bad, p * bad.sum()).pvalue < ALPHA


def test_leaves_partition_the_domain_and_follow_the_mass():
    g = np.random.default_rng(0)
    for n in (1, 2, 3, 7, 64, 1000):
        s, depth = privtree_leaves(g.integers(0, 50, n), eps_tree=0.5, rng=make_rng(seed=n),
                                   batch=20)
        assert s.shape == (20, n) and s[:, 0].all()
        assert depth <= max(1, math.ceil(math.log2(n))) + 1
    # a dense stretch is cut finer than an empty one
    x = np.r_[np.zeros(512, int), np.full(512, 50)]
    s, _ = privtree_leaves(x, eps_tree=1.0, rng=make_rng(seed=1), batch=50)
    assert s[:, 512:].sum() > 10 * s[:, 1:512].sum()


@pytest.mark.parametrize("workload", ["prefix", "all-range", [[0, 5], [3, 17], [10, 20]]])
def test_release_equals_brute_force_least_squares_of_the_same_measurements(workload):
    """``measure='greedy-h'``: the release is the dense weighted least-squares solve of the
    GreedyH measurements drawn with the same random numbers."""
    from veil.histograms.dawa import _measure_tree, greedy_h

    for trial, n, x in small_cases(workload):
        r = privtree(x, epsilon=0.7, workload=workload, measure="greedy-h",
                     rng=make_rng(seed=trial))
        # the same draws: the tree first, then the measurement
        rng = make_rng(seed=trial)
        s, depth = privtree_leaves(x, eps_tree=0.7 * 0.15, rng=rng)
        edges = np.r_[np.flatnonzero(s[0]), n]
        assert r.parameters["edges"] == edges.tolist()
        assert r.parameters["max_depth"] == depth
        assert r.parameters["leaf_measure"] == "greedy-h"
        strat = greedy_h(edges, RangeWorkload.from_spec(workload, n))
        y, var = _measure_tree(np.add.reduceat(x, edges[:-1]), strat, 0.7 * 0.85, rng)
        np.testing.assert_allclose(r.value, dense_gls(edges, strat, y, var), atol=1e-8)
        assert r.budget_split == pytest.approx({"tree": 0.105, "buckets": 0.595})
        for lo, hi in zip(edges[:-1], edges[1:]):
            assert np.ptp(r.value[lo:hi]) < 1e-9


@pytest.mark.parametrize("workload", ["prefix", "all-range", [[0, 5], [3, 17], [10, 20]]])
def test_hdmm_measurement_is_dense_least_squares_of_the_same_strategy_answers(workload):
    """``measure='hdmm'`` (the default): the same tree, then the strategy answers of the
    leaf totals with Laplace(1/eps_leaf) each; the release is the dense least-squares solve
    (``np.linalg.lstsq`` on the strategy matrix) spread uniformly inside each leaf."""
    kind = "prefix" if workload == "prefix" else "all-range"
    for trial, n, x in small_cases(workload):
        r = privtree(x, epsilon=0.7, workload=workload, measure="hdmm", rng=make_rng(seed=trial))
        rng = make_rng(seed=trial)
        s, _ = privtree_leaves(x, eps_tree=0.7 * 0.15, rng=rng)
        edges = np.r_[np.flatnonzero(s[0]), n]
        m = edges.size - 1
        assert r.parameters["edges"] == edges.tolist()
        assert r.parameters["leaf_measure"] == "hdmm" and r.parameters["measure"] == "hdmm"
        strat = leaf_strategy(RangeWorkload.from_spec(workload, n), m)
        A = strat.dense()
        assert A.shape == (m + strat.p, m)
        np.testing.assert_allclose(np.abs(A).sum(axis=0), 1.0)   # sensitivity 1
        assert r.parameters["measured_nodes"] == m + strat.p
        totals = np.add.reduceat(x, edges[:-1]).astype(float)
        y = A @ totals + rng.laplace(0.0, 1.0 / (0.7 * 0.85), size=A.shape[0])
        est = np.linalg.lstsq(A, y, rcond=None)[0]
        np.testing.assert_allclose(r.value, np.repeat(est / np.diff(edges), np.diff(edges)),
                                   atol=1e-8)
        assert strat.workload.kind == ("prefix" if kind == "prefix" else "all-range")


@contextlib.contextmanager
def _fixed_leaves(edges):
    """privtree with its tree replaced by the leaves ``edges`` (so the leaf measurement's
    noise can be compared with its closed form); the tree's share is still spent."""
    starts = np.zeros((1, int(edges[-1])), dtype=bool)
    starts[0, np.asarray(edges)[:-1]] = True
    real = privtree_module.privtree_leaves
    privtree_module.privtree_leaves = lambda *a, **k: (starts.copy(), 3)
    try:
        yield
    finally:
        privtree_module.privtree_leaves = real


def _fixed_leaf_releases(x, edges, eps, runs, seed, *, measure="hdmm", workload="prefix"):
    """``runs`` releases of ``x`` with the leaves ``edges`` (:func:`_fixed_leaves`)."""
    g = make_rng(seed=seed)
    with _fixed_leaves(edges):
        return np.stack([privtree(x, epsilon=eps, workload=workload, measure=measure,
                                  rng=g).value for _ in range(runs)])


def test_hdmm_leaf_noise_matches_its_closed_form_with_power():
    """With the leaves fixed, every leaf-level prefix of the release is unbiased and its
    variance is HDMM's exact ``query_variances`` at eps_leaf (chi-square test of the sample
    variance, alpha 1e-4, one test per query with Bonferroni); the release measured with twice
    its budget (half the noise) is rejected by the same test."""
    x = np.r_[np.full(8, 20), np.zeros(16, int), np.full(8, 3), np.arange(32)]
    edges = np.array([0, 4, 8, 24, 28, 32, 40, 48, 56, 64])
    m, eps, runs = edges.size - 1, 0.8, 3000
    strat = leaf_strategy(RangeWorkload.from_spec("prefix", x.size), m)
    q = np.stack([np.zeros(m, int), np.arange(1, m + 1)], axis=1)
    var = strat.query_variances(0.85 * eps, q)
    P = np.cumsum(x)[edges[1:] - 1]

    def pvalues(vals):
        pref = np.cumsum(vals, axis=1)[:, edges[1:] - 1] - P
        z = pref.mean(axis=0) / np.sqrt(var / runs)
        chi = (runs - 1) * pref.var(axis=0, ddof=1) / var
        p_mean = 2 * stats.norm.sf(np.abs(z))
        p_var = 2 * np.minimum(stats.chi2.cdf(chi, runs - 1), stats.chi2.sf(chi, runs - 1))
        return np.minimum(p_mean, p_var).min() * 2 * m          # Bonferroni over 2m tests

    assert pvalues(_fixed_leaf_releases(x, edges, eps, runs, 1)) > ALPHA
    assert pvalues(_fixed_leaf_releases(x, edges, 2 * eps, runs, 2)) < ALPHA  # power


def test_hdmm_leaves_beat_greedy_h_leaves_at_high_signal():
    """What the HDMM measurement is for: many leaves (a dense histogram at high signal)."""
    x = np.random.default_rng(3).integers(500, 1500, 256)
    edges = np.arange(0, 257)
    P = np.cumsum(x)
    err = {}
    for measure in ("hdmm", "greedy-h"):
        v = _fixed_leaf_releases(x, edges, 1.0, 300, 4, measure=measure)
        err[measure] = np.mean((np.cumsum(v, axis=1) - P) ** 2)
    assert err["hdmm"] < 0.85 * err["greedy-h"]


def test_greedy_h_measures_above_the_largest_shipped_strategy(monkeypatch):
    monkeypatch.setattr(privtree_module, "MAX_HDMM_LEAVES", 2)
    x = np.r_[np.full(8, 200), np.full(8, 300)]
    r = privtree(x, epsilon=5.0, rng=make_rng(seed=0))
    assert r.parameters["buckets"] > 2
    assert r.parameters["measure"] == "least-error"
    assert r.parameters["leaf_measure"] == "greedy-h"
    assert r.parameters["leaf_expected_errors"] is None
    assert leaf_strategy(RangeWorkload.from_spec("prefix", 16), 3) is None


def test_leaf_strategies_need_no_optimizer_from_sixteen_leaves():
    """From 16 leaves up the strategy is shipped (or restricted from the next shipped size):
    no optimizer. Below, the all-range strategy of 16 bins restricted to 9-15 is empty and a
    few L-BFGS-B steps from the public start confirm Identity (B = 0)."""
    for kind in ("prefix", "all-range"):
        w = RangeWorkload.from_spec(kind, 4096)
        for m in (*range(8, 40), 100, 1000, 1023, 1024, 4095, 4096):
            s = leaf_strategy(w, m)
            assert s.n == m
            if m >= 16 or kind == "prefix":
                assert s.source.startswith("shipped"), (kind, m, s.source)
            else:
                assert not s.B.any() and s.iterations < 100, (kind, m, s.source)


def _single_bin_totals(eps: float, runs: int, seed: int, *, noise_factor: float = 1.0):
    """The published value of a one-bin histogram (never split; its noise is
    Laplace(1 / eps_leaf)); ``noise_factor`` < 1 is the under-noised twin (power check)."""
    g = make_rng(seed=seed)
    out = np.empty(runs)
    for i in range(runs):
        out[i] = privtree([7], epsilon=eps / noise_factor, rng=g).value[0]
    return out - 7


def test_leaf_noise_is_laplace_one_over_eps_leaf_with_power():
    eps, frac = 0.5, 0.15
    ref = stats.laplace(scale=1 / (eps * (1 - frac))).cdf
    assert stats.kstest(_single_bin_totals(eps, 4000, 1), ref).pvalue > ALPHA
    assert stats.kstest(_single_bin_totals(eps, 4000, 2, noise_factor=0.5), ref).pvalue < ALPHA


def test_parameters_are_checked_and_the_outputs_declared():
    x = np.r_[np.zeros(60, int), np.full(4, 30)]
    r = privtree(x, epsilon=1.0, rng=make_rng(seed=0))
    assert r.mechanism == "privtree" and r.parameters["lambda"] == pytest.approx(3 / 0.15)
    assert {"parameters.buckets", "parameters.edges", "parameters.max_depth",
            "parameters.measured_nodes", "parameters.leaf_measure",
            "parameters.leaf_expected_errors"} == set(r.derived)
    for bad in ({"tree_fraction": 0.0}, {"tree_fraction": 1.0}, {"theta": math.inf},
                {"measure": "hb"}):
        with pytest.raises(ParameterError, match=next(iter(bad))):
            privtree(x, epsilon=1.0, **bad)
    r = publish(counts=x, epsilon=1.0, method="privtree", workload="all-range",
                rng=make_rng(seed=0))
    assert r.mechanism == "privtree" and r.parameters["workload"] == "all 2080 ranges"


def test_privtree_beats_coarse_and_dawa_on_a_decaying_shape():
    """What it is for: mass that thins out over a wide domain (dense bins cut fine, the long
    sparse tail kept in few leaves) at eps * N = 1000. The benchmark measures the DPBench
    protocol; this is a smoke check that can fail (on isolated one-bin spikes DAWA wins:
    PrivTree's depth bias stops it before it reaches one bin)."""
    from veil.histograms.workload import make_workload, scaled_error

    g = np.random.default_rng(0)
    shape = np.exp(-np.arange(1024) / 30.0)
    W = make_workload("random", 1024, rng=np.random.default_rng(1))
    errs = {"privtree": [], "coarse": [], "dawa": []}
    for s in range(6):
        x = g.multinomial(10_000, shape / shape.sum())
        for m in errs:
            kw = {} if m == "privtree" else {"records_bound": 10_000}
            v = publish(counts=x, epsilon=0.1, method=m, workload=W, rng=make_rng(seed=s),
                        **kw).value
            errs[m].append(scaled_error(W, x, v, scale=10_000))
    assert np.mean(errs["privtree"]) < 0.8 * min(np.mean(errs["coarse"]), np.mean(errs["dawa"]))


def test_tree_fraction_calibration_reports_the_best_fraction_per_setting():
    """The benchmark behind the default tree fraction on a small grid: every setting's row
    names its best fraction (the ratio 1.00 in its column); the last row is the geometric
    mean of each column, at least 1."""
    from veil.histograms.bench import privtree_fraction_calibration

    pytest.importorskip("veil.datasets").shared_data_path("dpbench-1d")
    fr = (0.1, 0.15, 0.3)
    res = privtree_fraction_calibration(fractions=fr, n=64, trials=2,
                                        settings=((10**3, 0.1), (10**4, 1.0)),
                                        datasets=["HEPTH.n4096", "INCOME.n4096"],
                                        log=lambda *_: 0)
    for w, table in res["tables"].items():
        rows = table.splitlines()[2:]
        assert len(rows) == 3
        for row in rows[:2]:
            cells = [c.strip() for c in row.strip("|").split("|")]
            ratios, best = [float(c) for c in cells[1:-1]], float(cells[-1])
            assert min(ratios) == 1.0 and ratios[fr.index(best)] == 1.0
        assert all(v >= 1.0 for v in res["overall"][w].values())


def test_the_tree_audit_watches_every_leaf_set_of_its_four_bins():
    """The audit's events are one per reachable leaf set (as enumerated here): an event for
    a set that cannot occur, or a missing one, weakens it silently."""
    from veil.histograms.audits import _PT_A, _PT_TREE_CODES

    sets = _exact_leaf_sets(_PT_A, 1.0)
    assert sorted(sum(1 << i for i in s) for s in sets) == sorted(_PT_TREE_CODES)


def _spread_matrix(edges):
    n, m = int(edges[-1]), len(edges) - 1
    T = np.zeros((n, m))
    for leaf in range(m):
        T[edges[leaf]:edges[leaf + 1], leaf] = 1.0 / (edges[leaf + 1] - edges[leaf])
    return T


@pytest.mark.parametrize("workload", ["prefix", "all-range", "ranges"])
def test_leaf_workload_gram_equals_the_dense_projection(workload):
    g = np.random.default_rng(7)
    for n in (1, 2, 5, 17, 40):
        spec = workload
        if workload == "ranges":
            lo = g.integers(0, n, 30)
            spec = np.stack([lo, lo + 1 + g.integers(0, n - lo)], axis=1)
        w = RangeWorkload.from_spec(spec, n)
        for _ in range(5):
            cuts = np.sort(g.choice(np.arange(1, n), size=g.integers(0, n), replace=False)) \
                if n > 1 else np.array([], int)
            edges = np.r_[0, cuts, n].astype(int)
            T = _spread_matrix(edges)
            np.testing.assert_allclose(leaf_workload_gram(w, edges), T.T @ w.dense_gram() @ T,
                                       rtol=1e-12, atol=1e-9)


def _greedy_h_dense(strat, m):
    on = strat.weight > 0
    A = np.zeros((int(on.sum()), m))
    for r, (lo, hi) in enumerate(zip(strat.lo[on], strat.hi[on])):
        A[r, lo:hi] = 1.0
    return A, 2.0 / strat.weight[on] ** 2


@pytest.mark.parametrize("workload", ["prefix", "all-range", "ranges"])
def test_least_error_compares_the_exact_expected_errors_and_takes_the_smaller(workload):
    """Both expected errors against a brute-force generalised least-squares error of the
    dense strategy matrices (``linear_strategy_error`` over the bins, the leaves spread
    uniformly: a strategy over the leaves is ``A T^+``); the pick is the smaller one."""
    from veil.histograms.dawa import greedy_h
    from veil.histograms.hdmm import linear_strategy_error

    n = 64
    spec = workload
    if workload == "ranges":
        spec = np.array([[0, 5], [3, 40], [10, 64], [20, 21], [0, 64], [33, 50]])
    w = RangeWorkload.from_spec(spec, n)
    picks = set()
    for edges in ([0, 1, 2, 3, 4, 64], [0, 2, 4, 6, 8, 10, 12, 14, 16, 64],
                  [0, 32, 48, 56, 60, 62, 63, 64], list(range(0, 65, 4)), list(range(65))):
        edges = np.array(edges)
        m = edges.size - 1
        name, strat, err = leaf_measurement(w, edges)
        G = _spread_matrix(edges).T @ w.dense_gram() @ _spread_matrix(edges)
        hs = leaf_strategy(w, m)
        A = hs.dense()
        ref_h = 2.0 * np.trace(np.linalg.inv(A.T @ A) @ G)
        Ag, var = _greedy_h_dense(greedy_h(edges, w), m)
        ref_g = np.trace(np.linalg.inv(Ag.T @ (Ag / var[:, None])) @ G)
        assert err["hdmm"] == pytest.approx(ref_h, rel=1e-9)
        assert err["greedy-h"] == pytest.approx(ref_g, rel=1e-9)
        # unit leaves: the same figure from the bin-level formula (the projection is the
        # identity)
        if m == n:
            assert err["hdmm"] == pytest.approx(
                linear_strategy_error(A, spec, noise_variances=2.0), rel=1e-9)
        assert name == ("hdmm" if err["hdmm"] <= err["greedy-h"] else "greedy-h")
        assert type(strat).__name__ == ("HDMMStrategy" if name == "hdmm" else "GreedyHStrategy")
        picks.add(name)
    if workload == "prefix":
        assert picks == {"hdmm", "greedy-h"}     # both are taken on these leaf sets


@pytest.mark.parametrize("edges,expected", [
    ([0, 2, 4, 6, 8, 10, 12, 14, 16, 64], "greedy-h"),
    (list(range(0, 65, 2)), "hdmm"),
])
def test_reported_expected_error_is_the_measured_workload_error_with_power(edges, expected):
    """With the leaves fixed and the counts uniform inside each leaf (no spread bias), the
    mean squared prefix error over releases estimates the reported
    ``leaf_expected_errors[leaf_measure]`` (z-test at alpha 1e-4 on the mean of the per-release
    total squared errors); the release measured with twice its budget is rejected."""
    edges = np.array(edges)
    widths = np.diff(edges)
    x = np.repeat(np.arange(1, widths.size + 1) * 5, widths)
    P = np.cumsum(x)
    eps, runs = 1.0, 4000

    def totals(eps_run, seed):
        vals = _fixed_leaf_releases(x, edges, eps_run, runs, seed, measure="least-error")
        return ((np.cumsum(vals, axis=1) - P) ** 2).sum(axis=1)

    with _fixed_leaves(edges):
        r = privtree(x, epsilon=eps, rng=make_rng(seed=0))
    assert r.parameters["leaf_measure"] == expected
    want = r.parameters["leaf_expected_errors"][expected]

    def pvalue(t):
        z = (t.mean() - want) / (t.std(ddof=1) / math.sqrt(t.size))
        return 2 * stats.norm.sf(abs(z))

    assert pvalue(totals(eps, 1)) > ALPHA
    assert pvalue(totals(2 * eps, 2)) < ALPHA        # power: half the noise
