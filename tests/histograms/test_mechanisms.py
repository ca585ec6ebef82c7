"""Histogram mechanisms: releases, budget splits, deterministic limits, bad input."""

import math

import numpy as np
import pytest

from veil.budget import PureDP
from veil.errors import ParameterError
from veil.histograms import (METHODS, ahp, boost, choose_method, dawa, hb, identity, noise_first,
                             optimized_structure_first, publish, qardaji_branching,
                             sort_and_group, structure_first)
from veil.histograms.sortgroup import randomized_sort
from veil.histograms.structurefirst import optimal_structure_fraction, private_structure
from veil.histograms.tree import level_usage, tree_height, tree_inference
from veil.random import make_rng

EXTRA = {"structurefirst": {"count_bound": 1000}, "optimized-structurefirst": {"count_bound": 1000},
         "auto": {"records_bound": 10_000}}
MECHS = [m for m in METHODS]


def counts(seed=0, n=64):
    g = np.random.default_rng(seed)
    return np.concatenate([g.poisson(5, n // 2), g.poisson(60, n - n // 2)])


@pytest.mark.parametrize("method", MECHS)
def test_release_shape_and_budget_split(method):
    x = counts()
    r = publish(x, epsilon=0.7, method=method, rng=make_rng(seed=1), **EXTRA.get(method, {}))
    assert r.value.shape == x.shape
    assert np.isfinite(r.value).all()
    assert r.budget == PureDP(0.7)
    assert r.budget_split and all(v >= 0 for v in r.budget_split.values())
    assert math.fsum(r.budget_split.values()) <= 0.7  # never more than epsilon
    assert math.fsum(r.budget_split.values()) == pytest.approx(0.7, rel=1e-9)
    meta = r.metadata()
    assert meta["budget"]["epsilon"] == 0.7 and meta["budget_split"]


# MWEM measures only `rounds` queries, so even without noise it does not recover every prefix
@pytest.mark.parametrize("method", [m for m in MECHS if m not in ("auto", "mwem")])
def test_large_epsilon_recovers_counts(method):
    """Deterministic limit: with huge epsilon the release is (nearly) exact on range sums."""
    x = np.repeat([3, 40, 7, 90], 16)
    extra = dict(EXTRA.get(method, {}))
    if "count_bound" in extra:
        extra.update(k=4, count_bound=100)
    r = publish(x, epsilon=1e6, method=method, rng=make_rng(seed=2), **extra)
    tol = 1e-3 * x.sum()
    assert abs(r.value.sum() - x.sum()) < max(tol, 1.0)
    if method not in ("sort-and-group", "ahp"):  # these group across the domain
        assert np.abs(np.cumsum(r.value) - np.cumsum(x)).max() < max(tol, 1.0)


def test_identity_is_integer_and_unbiased_in_mean():
    x = np.full(20000, 10)
    r = identity(x, epsilon=0.5, rng=make_rng(seed=3))
    assert r.value.dtype == np.int64
    noise = r.value - x
    # variance of discrete Laplace with scale 2: 2a/(1-a)^2, a = exp(-1/2)
    a = math.exp(-0.5)
    assert r.noise_variance == pytest.approx(2 * a / (1 - a) ** 2, rel=1e-5)
    se = math.sqrt(r.noise_variance / x.size)
    assert abs(noise.mean()) < 6 * se  # 6 sigma: alpha ~ 2e-9
    assert noise.var() == pytest.approx(r.noise_variance, rel=0.1)


def test_noisefirst_picks_k_and_uses_whole_budget_on_counts():
    x = np.repeat([0, 200, 10], [40, 30, 30])
    r = noise_first(x, epsilon=1.0, rng=make_rng(seed=4))
    assert r.budget_split == {"counts": 1.0}
    assert 1 <= r.parameters["k"] <= 100
    e = r.parameters["edges"]
    assert e[0] == 0 and e[-1] == 100
    # three flat blocks: the chosen partition should be coarse and the error small
    assert r.parameters["k"] < 30
    assert np.abs(r.value - x).mean() < 2.0


def test_noisefirst_merge_always_gives_bucket_means():
    x = counts(5)
    r = noise_first(x, epsilon=1.0, merge="always", rng=make_rng(seed=5))
    e = r.parameters["edges"]
    for a, b in zip(e[:-1], e[1:]):
        assert np.ptp(r.value[a:b]) == pytest.approx(0.0, abs=1e-9)


def test_structure_first_requires_public_count_bound():
    with pytest.raises(ParameterError, match="count_bound is required"):
        structure_first(counts(), epsilon=1.0, count_bound=None)
    with pytest.raises(TypeError):
        structure_first(counts(), epsilon=1.0)  # keyword is mandatory
    with pytest.raises(ParameterError, match="count_bound is required"):
        publish(counts(), epsilon=1.0, method="optimized-structurefirst")


def test_structure_is_computed_on_clipped_counts():
    """Counts above F cannot move the structure: the score sensitivity 2F+1 then holds."""
    x = np.repeat([1, 5, 2], 10)
    y = x.copy()
    y[3] = 10_000  # a huge count above the bound
    e_x = private_structure(np.minimum(x, 5), k=3, epsilon=1.0, count_bound=5,
                            rng=make_rng(seed=0), use_em=False)
    e_y = private_structure(y, k=3, epsilon=1.0, count_bound=5, rng=make_rng(seed=0),
                            use_em=False)
    y_clip = np.minimum(y, 5)
    e_yc = private_structure(y_clip, k=3, epsilon=1.0, count_bound=5, rng=make_rng(seed=0),
                             use_em=False)
    assert e_y.tolist() == e_yc.tolist()
    assert e_x.tolist() == [0, 10, 20, 30]


def test_structure_first_variants_and_split():
    x = counts(6)
    for variant in ("mean", "boost"):
        r = structure_first(x, epsilon=1.0, k=6, count_bound=200, variant=variant,
                            structure_fraction=0.3, rng=make_rng(seed=6))
        assert r.budget_split["structure"] == pytest.approx(0.3)
        assert r.budget_split["counts"] == pytest.approx(0.7)
        assert len(r.parameters["edges"]) == 7
        if variant == "mean":
            e = r.parameters["edges"]
            for a, b in zip(e[:-1], e[1:]):
                assert np.ptp(r.value[a:b]) == pytest.approx(0.0, abs=1e-9)


def test_structure_first_em_prefers_good_structures():
    """With a tight bound and large budget the exponential mechanism finds the true steps."""
    x = np.repeat([0, 20, 5], 20)
    hits = 0
    for s in range(20):
        r = structure_first(x, epsilon=200.0, k=3, count_bound=20, variant="mean",
                            structure_fraction=0.5, rng=make_rng(seed=s))
        hits += r.parameters["edges"] == [0, 20, 40, 60]
    assert hits >= 15


def test_optimized_structure_fraction_is_public_and_right_at_every_scale():
    """Issue 19: at eps 1, scale 10^7 the old rule gave 95 % to a structure drawn nearly at
    random (about 1000x Identity's error); the model now compares the cost of averaging over
    random buckets with the noise it saves and falls back to one bucket per bin."""
    # low signal: averaging pays, the structure gets the smallest share
    assert optimal_structure_fraction(n=4096, k=410, count_bound=1e3, epsilon=0.1,
                                      records_bound=1e3) == 0.05
    # high signal: no structure (Identity's release), the whole budget on the counts
    assert optimal_structure_fraction(n=4096, k=410, count_bound=1e7, epsilon=1.0,
                                      records_bound=1e7) == 0.0
    x = np.repeat([3, 90, 20, 400], 16) * 1000
    r = optimized_structure_first(x, epsilon=1.0, k=7, count_bound=1e7, records_bound=1e7,
                                  rng=make_rng(seed=0))
    # no structure: the counts go through one binary Boost tree (StructureFirst, one bucket)
    assert r.budget_split == {"structure": 0.0, "counts": 1.0}
    assert r.parameters["k"] == 1 and r.parameters["published_as"] == "one binary Boost tree"
    ref = boost(x, epsilon=1.0, branching=2, rng=make_rng(seed=0))
    assert np.abs(r.value - x).mean() < 3 * np.abs(ref.value - x).mean() + 1
    # without a records bound only F is known: the worst-case spread F^2/4 per bin
    assert optimal_structure_fraction(n=64, k=4, count_bound=10, epsilon=50.0) == 0.0
    r = publish(counts(), epsilon=0.1, method="optimized-structurefirst", k=5, count_bound=50,
                records_bound=50, rng=make_rng(seed=0))
    assert r.parameters["records_bound"] == 50
    assert r.budget_split["structure"] == pytest.approx(0.005)
    r = optimized_structure_first(counts(), epsilon=0.05, k=5, count_bound=100,
                                  records_bound=100, rng=make_rng(seed=7))
    assert r.parameters["structure_fraction"] == optimal_structure_fraction(
        n=64, k=5, count_bound=100, epsilon=0.05, records_bound=100)


def test_tree_inference_is_generalised_least_squares():
    """Two-pass inference equals the explicit weighted least-squares solution."""
    rng = np.random.default_rng(8)
    for b, n, var in [(2, 8, [1.0, 1.0, 1.0, 1.0]), (3, 9, [1.0, 4.0, 0.5]),
                      (2, 4, [2.0, math.inf, 0.7])]:
        h = tree_height(n, b)
        levels = [rng.normal(0, 5, b ** (h - lv)) for lv in range(h + 1)]
        est = tree_inference(levels, var, b)
        # explicit GLS: unknown leaves, each node = sum of its leaves
        rows, ys, ws = [], [], []
        for lv in range(h + 1):
            if not math.isfinite(var[lv]):
                continue
            size = b ** lv
            for j in range(b ** (h - lv)):
                row = np.zeros(b ** h)
                row[j * size:(j + 1) * size] = 1
                rows.append(row)
                ys.append(levels[lv][j])
                ws.append(1 / var[lv])
        A, y, w = np.array(rows), np.array(ys), np.sqrt(np.array(ws))
        leaves = np.linalg.lstsq(A * w[:, None], y * w, rcond=None)[0]
        np.testing.assert_allclose(est[0], leaves, atol=1e-9)
        for lv in range(1, h + 1):  # consistency
            np.testing.assert_allclose(est[lv], est[lv - 1].reshape(-1, b).sum(1), atol=1e-9)


def test_boost_any_branching_and_non_power_domain():
    x = np.arange(10)
    r = boost(x, epsilon=1.0, branching=3, rng=make_rng(seed=9))
    assert r.parameters["padded_to"] == 27 and r.parameters["levels"] == 4
    assert set(r.budget_split) == {f"level_{i}" for i in range(4)}
    assert r.noise_scale == pytest.approx(4.0, rel=1e-5)  # L / epsilon


def test_qardaji_branching_matches_formula_brute_force():
    for n in (2, 3, 10, 100, 1000, 4096):
        best, arg = math.inf, None
        for b in range(2, n + 1):
            h, s = 1, b
            while s < n:
                s, h = s * b, h + 1
            v = (b - 1) * h ** 3 - 2 * (b + 1) * h ** 2 / 3
            if v < best:
                best, arg = v, b
        assert qardaji_branching(n) == arg
    assert hb(np.ones(4096, dtype=int), epsilon=1.0, rng=make_rng(seed=0)).parameters[
        "branching"] == qardaji_branching(4096)


def test_level_usage_matches_explicit_dyadic_decomposition():
    rng = np.random.default_rng(10)
    n = 16
    q = np.sort(rng.choice(np.arange(n + 1), size=(50, 2)), axis=1)
    q = q[q[:, 0] < q[:, 1]]
    counts_ = np.zeros(5)
    for lo, hi in q:  # explicit recursive decomposition
        def rec(lv, start, size):
            a, b = start, start + size
            if hi <= a or b <= lo:
                return
            if lo <= a and b <= hi:
                counts_[lv] += 1
                return
            for c in range(2):
                rec(lv - 1, start + c * size // 2, size // 2)
        rec(4, 0, 16)
    np.testing.assert_array_equal(level_usage(q, n), counts_)


def test_sort_and_group_and_ahp_group_by_noisy_value():
    x = np.tile([0, 100], 50)
    r = sort_and_group(x, epsilon=5.0, rng=make_rng(seed=13))
    assert r.parameters["groups"] <= 10
    assert np.abs(r.value - x).max() < 10
    r2 = ahp(x, epsilon=5.0, rng=make_rng(seed=13))
    assert np.abs(r2.value - x).max() < 10


def test_randomized_sort_breaks_ties_uniformly():
    g = make_rng(seed=14)
    firsts = [int(randomized_sort(np.array([1, 0, 0, 0]), g)[0]) for _ in range(3000)]
    freq = np.bincount(firsts, minlength=4) / 3000
    assert freq[0] == 0 and np.all(np.abs(freq[1:] - 1 / 3) < 0.05)
    assert randomized_sort(np.array([3, 1, 2]), g).tolist() == [1, 2, 0]


def test_auto_rule_is_public_and_follows_the_table():
    from veil.histograms.api import AUTO_RULE

    exact = AUTO_RULE["exact_epsilon"]
    assert choose_method(n=64, epsilon=exact, records_bound=10)[0] == "identity"
    for cls, steps in ((k, v) for k, v in AUTO_RULE.items() if k != "exact_epsilon"):
        uppers = [u for u, _ in steps]
        assert uppers == sorted(uppers) and math.isinf(uppers[-1])
        for (u, m), lo in zip(steps, [-math.inf] + uppers[:-1]):
            # a signal just inside each interval picks that interval's method
            mid = u - 0.25 if math.isinf(lo) else (lo + 0.25 if math.isinf(u) else (lo + u) / 2)
            wl = "prefix" if cls == "prefix" else [[0, 3]]
            assert choose_method(n=4096, epsilon=1.0, records_bound=4096 * 10 ** mid,
                                 workload=wl)[0] == m
    # from the exact epsilon on, no noisy total is bought: Identity with the whole budget
    r = publish(counts(), epsilon=exact, method="auto", rng=make_rng(seed=2))
    assert r.mechanism == "identity" and r.budget_split == {"counts": exact}
    r = publish(counts(), epsilon=0.1, method="auto", records_bound=5, rng=make_rng(seed=0))
    assert "auto_rule" in r.parameters and r.parameters["auto_records_bound"] == 5
    assert math.fsum(r.budget_split.values()) == pytest.approx(0.1)


def test_auto_without_a_bound_buys_a_noisy_total():
    from veil.histograms.api import AUTO_TOTAL_FRACTION

    r = publish(counts(), epsilon=0.5, method="auto", rng=make_rng(seed=1))
    assert r.budget_split["auto_total"] == pytest.approx(AUTO_TOTAL_FRACTION * 0.5)
    assert math.fsum(r.budget_split.values()) == pytest.approx(0.5)
    assert math.fsum(r.budget_split.values()) <= 0.5
    assert r.budget.epsilon == 0.5 and "auto_noisy_total" in r.parameters


BAD = [
    (dict(counts=[1, -2, 3]), "counts\\[1\\] must be >= 0, got -2"),
    (dict(counts=[1.5, 2]), "counts\\[0\\] must be an integer count"),
    (dict(counts=[]), "empty"),
    (dict(counts=[[1, 2]]), "one-dimensional"),
    (dict(counts=[1, np.nan]), "finite"),
    (dict(epsilon=0.0), "epsilon must be > 0, got 0.0"),
    (dict(epsilon=-1.0), "epsilon must be > 0"),
    (dict(epsilon=float("nan")), "NaN"),
    (dict(epsilon=float("inf")), "finite"),
    (dict(method="boots"), "did you mean 'boost'"),
    (dict(method="noisefirst", k_max=5), "k_max must be <= the number of bins n=4, got 5"),
    (dict(method="structurefirst", k=9, count_bound=10), "k must be <= the number of bins n=4, got 9"),
    (dict(method="structurefirst", k=2, count_bound=-1), "count_bound must be > 0"),
    (dict(method="boost", branching=1), "branching must be >= 2"),
    (dict(method="ahp", rho=1.5), "rho must lie in"),
    (dict(method="hb", bogus=1), "method 'hb'.*bogus"),
    (dict(method="auto", records_bound=-5), "records_bound must be > 0"),
]


@pytest.mark.parametrize("kwargs, match", BAD)
def test_bad_input_is_a_clear_parameter_error(kwargs, match):
    args = dict(counts=[1, 2, 3, 4], epsilon=1.0, method="identity")
    args.update(kwargs)
    c = args.pop("counts")
    with pytest.raises(ParameterError, match=match):
        publish(c, rng=make_rng(seed=0), **args)


def test_no_fixed_default_seed():
    x = counts()
    a = identity(x, epsilon=1.0).value
    b = identity(x, epsilon=1.0).value
    assert not np.array_equal(a, b)
