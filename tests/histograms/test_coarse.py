"""``coarse``: equal-width buckets from the signal, GreedyH, uniform spread."""

from __future__ import annotations

import math

import numpy as np
import pytest
from lsq_cases import dense_gls, small_cases
from scipy import stats

from veil.errors import ParameterError
from veil.histograms import coarse, publish
from veil.histograms._common import split_edges
from veil.histograms.coarse import BUCKET_RULE, coarse_buckets
from veil.random import make_rng

#: significance level of the statistical tests below (each also rejects a wrong twin: power)
ALPHA = 1e-4


def test_bucket_rule_follows_the_fitted_line_and_stays_in_range():
    for n in (1, 7, 1024, 4096):
        prev = 0
        for signal in np.logspace(-2, 9, 60):
            B = coarse_buckets(epsilon=1.0, records_bound=signal, n=n)
            assert 1 <= B <= n and B >= prev          # never fewer buckets for more signal
            prev = B
            line = BUCKET_RULE[0] + BUCKET_RULE[1] * math.log10(signal)
            if 0 < line < math.log2(n):
                # a power of two within half a doubling of the line (or n when it is below)
                assert B == n or abs(math.log2(B) - line) <= 0.5 + 1e-9
    # the same signal eps * N gives the same count, whatever the split of eps and N
    assert coarse_buckets(epsilon=0.01, records_bound=10**5, n=1024) == \
        coarse_buckets(epsilon=1.0, records_bound=10**3, n=1024) == 64
    with pytest.raises(ParameterError, match="records_bound"):
        coarse_buckets(epsilon=1.0, records_bound=0, n=8)


def test_split_edges_cover_the_domain_with_buckets_one_bin_apart():
    for n in range(1, 40):
        for B in range(1, n + 1):
            e = split_edges(n, B)
            w = np.diff(e)
            assert e[0] == 0 and e[-1] == n and len(e) == B + 1
            assert w.min() >= 1 and w.max() - w.min() <= 1


@pytest.mark.parametrize("workload", ["prefix", "all-range", [[0, 5], [3, 17], [10, 20]]])
def test_release_equals_brute_force_least_squares_of_the_same_measurements(workload):
    from veil.histograms.dawa import _measure_tree, greedy_h
    from veil.histograms.workload import RangeWorkload

    for trial, n, x in small_cases(workload):
        B = int(np.random.default_rng(trial).integers(1, n + 1))
        r = coarse(x, epsilon=0.7, buckets=B, workload=workload, rng=make_rng(seed=trial))
        edges = split_edges(n, B)
        strat = greedy_h(edges, RangeWorkload.from_spec(workload, n))
        y, var = _measure_tree(np.add.reduceat(x, edges[:-1]), strat, 0.7,
                               make_rng(seed=trial))          # the same noise draws
        np.testing.assert_allclose(r.value, dense_gls(edges, strat, y, var), atol=1e-8)
        assert r.parameters["buckets"] == B and r.budget_split == {"buckets": 0.7}
        # uniform within every bucket
        for lo, hi in zip(edges[:-1], edges[1:]):
            assert np.ptp(r.value[lo:hi]) < 1e-9


def test_public_bound_and_noisy_total_paths():
    x = np.r_[np.zeros(512, int), np.full(512, 3)]
    r = coarse(x, epsilon=0.1, records_bound=10**4, rng=make_rng(seed=1))
    assert r.parameters["buckets"] == coarse_buckets(epsilon=0.1, records_bound=10**4, n=1024)
    assert r.parameters["bucket_rule"] == "records_bound" and r.derived == ()
    r = coarse(x, epsilon=0.1, rng=make_rng(seed=1))
    assert r.budget_split == pytest.approx({"total": 0.005, "buckets": 0.095})
    assert r.parameters["bucket_rule"] == "noisy total"
    assert r.parameters["buckets"] == coarse_buckets(
        epsilon=0.095, records_bound=r.parameters["noisy_total"], n=1024)
    assert {"parameters.buckets", "parameters.noisy_total"} <= set(r.derived)
    r = coarse(x, epsilon=0.1, buckets=8, records_bound=10**4, rng=make_rng(seed=1))
    assert r.parameters["buckets"] == 8 and r.parameters["bucket_rule"] == "given"
    assert any("records_bound=10000 not used" in note for note in r.notes)
    with pytest.raises(ParameterError, match="records_bound"):
        coarse(x, epsilon=0.1, buckets=8, records_bound=-1)
    with pytest.raises(ParameterError, match="buckets"):
        coarse(x, epsilon=1.0, buckets=1025)
    with pytest.raises(ParameterError, match="buckets"):
        publish(counts=x, epsilon=1.0, method="hb", buckets=4)


def _one_bucket_totals(eps: float, runs: int, seed: int, *, noise_factor: float = 1.0):
    """Published total of a one-bucket release (its noise is Laplace(1/eps) on the total);
    ``noise_factor`` < 1 is the under-noised twin used for the power check."""
    g = make_rng(seed=seed)
    x = np.r_[np.full(6, 2), np.zeros(10, int)]
    out = np.empty(runs)
    for i in range(runs):
        out[i] = coarse(x, epsilon=eps / noise_factor, buckets=1, rng=g).value.sum()
    return out - x.sum()


def test_noise_of_the_measured_total_is_laplace_one_over_eps_with_power():
    """KS test of the total's noise against Laplace(1/eps) at ALPHA; the same test rejects
    the mechanism with half the noise (power check)."""
    eps = 0.5
    good = _one_bucket_totals(eps, 4000, 1)
    assert stats.kstest(good, stats.laplace(scale=1 / eps).cdf).pvalue > ALPHA
    bad = _one_bucket_totals(eps, 4000, 2, noise_factor=0.5)
    assert stats.kstest(bad, stats.laplace(scale=1 / eps).cdf).pvalue < ALPHA


def test_auto_and_publish_pass_the_records_bound():
    x = np.r_[np.zeros(512, int), np.full(512, 3)]
    r = publish(counts=x, epsilon=0.1, method="coarse", records_bound=2000,
                rng=make_rng(seed=0))
    assert r.mechanism == "coarse" and r.parameters["records_bound"] == 2000
    assert r.parameters["buckets"] == coarse_buckets(epsilon=0.1, records_bound=2000, n=1024)


def test_coarse_beats_identity_at_low_signal():
    """What it is for: at eps * N = 100 on a skewed shape, coarse's prefix error is a fraction
    of Identity's (the benchmark measures the DPBench protocol; this is a smoke check)."""
    from veil.histograms.workload import make_workload, scaled_error

    g = np.random.default_rng(0)
    shape = np.exp(-np.arange(1024) / 150.0)
    W = make_workload("prefix", 1024)
    ec, ei = [], []
    for s in range(5):
        x = g.multinomial(1000, shape / shape.sum())
        ec.append(scaled_error(W, x, coarse(x, epsilon=0.1, records_bound=1000,
                                            rng=make_rng(seed=s)).value, scale=1000))
        ei.append(scaled_error(W, x, publish(counts=x, epsilon=0.1, method="identity",
                                             rng=make_rng(seed=s)).value, scale=1000))
    assert np.mean(ec) < 0.5 * np.mean(ei)


def test_bucket_calibration_reports_the_best_count_per_setting_and_fits_a_line():
    """The benchmark behind BUCKET_RULE on a small grid: every row names its best count (the
    ratio 1.00 in its column), and the fitted line rises with the signal."""
    from veil.histograms.bench import coarse_bucket_calibration

    pytest.importorskip("veil.datasets").shared_data_path("dpbench-1d")
    res = coarse_bucket_calibration(buckets=(1, 2, 4, 8, 16, 32, 64), n=64, trials=2,
                                    settings=((10**3, 0.01), (10**3, 0.1), (10**4, 1.0)),
                                    datasets=["HEPTH.n4096", "INCOME.n4096"], log=lambda *_: 0)
    for table in res["tables"].values():
        rows = table.splitlines()[2:]
        assert len(rows) == 3
        for row in rows:
            cells = [c.strip() for c in row.strip("|").split("|")]
            ratios, best = [float(c) for c in cells[1:-1]], int(cells[-1])
            assert min(ratios) == 1.0 and ratios[(1, 2, 4, 8, 16, 32, 64).index(best)] == 1.0
    intercept, slope = res["rule"]
    assert slope > 0
