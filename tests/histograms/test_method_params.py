"""Extreme but legal method options (each case was wrong before, see the docstrings)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from veil.errors import ParameterError
from veil.histograms import publish
from veil.random import make_rng


@pytest.mark.parametrize("method, extra", [("boost", {}), ("structurefirst",
                                                           {"count_bound": 100})])
def test_branching_is_at_most_the_number_of_bins(method, extra):
    """--branching 2^32 padded 64 bins to a tree of 32 GiB (boost) / 224 GiB (structurefirst):
    an internal MemoryError."""
    x = np.arange(64)
    with pytest.raises(ParameterError, match="branching must be <= 64"):
        publish(x, epsilon=1.0, method=method, branching=2 ** 32, **extra)
    assert publish(x, epsilon=1.0, method=method, branching=64, rng=make_rng(seed=0),
                   **extra).value.shape == (64,)


def test_map_branching_is_at_most_the_grid_side_and_options_name_their_methods():
    """hb2d --branching 100000 tried 74.5 GiB; --height with the default auto was an internal
    TypeError; with identity a raw "unexpected keyword argument"."""
    from veil.maps import publish as publish_map

    x = np.ones((8, 8), dtype=np.int64)
    with pytest.raises(ParameterError, match="branching must be <= 8"):
        publish_map(x, epsilon=1.0, method="hb2d", branching=100_000)
    with pytest.raises(ParameterError, match="height applies to --method quadtree, not 'auto'"):
        publish_map(x, epsilon=1.0, height=2)
    with pytest.raises(ParameterError, match="branching applies to --method hb2d, not "
                                             "'identity'"):
        publish_map(x, epsilon=1.0, method="identity", branching=3)


def test_map_auto_takes_its_own_options():
    """auto's own keywords (its rule, its budget shares) pass the option check: the check
    above rejected them too, which broke `benchmarks/maps.py autoeval` (every fold's rule is
    run through publish(..., method='auto', rule=...))."""
    from veil.maps import publish as publish_map
    from veil.maps.auto import RULE

    x = np.ones((16, 16), dtype=np.int64) * 50
    never = {**RULE, "hdmm_above": 1e300, "hdmm_mid_signal": 1e300, "privtree_min_signal": 1e300,
             "dawa_occupancy": -1.0}
    r = publish_map(x, epsilon=1.0, rule=never, scale=12_800.0, rng=make_rng(seed=0))
    assert r.parameters["chosen"] == "ag"
    r2 = publish_map(x, epsilon=1.0, feature_fraction=0.05, scale=12_800.0, rng=make_rng(seed=0))
    assert r2.value.shape == (16, 16)
    with pytest.raises(ParameterError, match="theta applies to --method privtree, not 'auto'"):
        publish_map(x, epsilon=1.0, theta=1.0)


def test_optimized_structurefirst_on_ten_bins_is_not_a_flat_average_at_high_signal():
    """k = ceil(n / 10) = 1 for ten bins or fewer, and one bucket was always published: at
    eps = 10^6 the counts [0, ..., 0, 1000] came out as ten times 100."""
    x = np.array([0] * 9 + [1000])
    r = publish(x, epsilon=1e6, method="optimized-structurefirst", count_bound=1000,
                records_bound=1000, rng=make_rng(seed=1))
    assert np.abs(r.value - x).max() < 1.0
    assert r.parameters["structure_fraction"] == 0.0 and r.budget_split["structure"] == 0.0
    # at low signal one bucket still pays (its bias is below the noise it saves)
    low = publish([5, 6, 5, 4], epsilon=0.01, method="optimized-structurefirst", count_bound=10,
                  rng=make_rng(seed=1))
    assert low.parameters["k"] == 1 and np.ptp(low.value) == 0


def test_a_huge_records_bound_is_not_an_overflow():
    """records_bound = 1e300 stopped with "internal error: OverflowError"."""
    r = publish(np.arange(64), epsilon=1.0, method="optimized-structurefirst", count_bound=100,
                records_bound=1e300, rng=make_rng(seed=0))
    assert r.value.shape == (64,)


@pytest.mark.parametrize("method, extra", [("noisefirst", {}),
                                           ("structurefirst", {"count_bound": 100})])
def test_a_v_optimal_table_too_large_is_refused_before_it_is_allocated(method, extra):
    """NoiseFirst keeps a (n+1) x (n+1) table: 65,536 bins asked for 16 GiB and 2^20 bins for
    4 TiB (an internal MemoryError); StructureFirst at 2^18 bins about 200 GiB."""
    from veil.errors import InstanceTooLargeError

    n = 2 ** 16 if method == "noisefirst" else 2 ** 18
    with pytest.raises(InstanceTooLargeError, match="V-optimal table .* use fewer bins"):
        publish(np.zeros(n, dtype=np.int64), epsilon=1.0, method=method, **extra)


@pytest.mark.parametrize("bound", [-3, 0, float("nan"), float("inf")])
def test_auto_checks_the_records_bound_at_every_epsilon(bound):
    """From eps 3.16 `auto` runs Identity and does not need the bound: --records-bound -3 was
    accepted there silently (and refused at eps 1)."""
    x = np.arange(12)
    for eps in (1.0, 5.0):
        with pytest.raises(ParameterError, match="records_bound must be"):
            publish(x, epsilon=eps, method="auto", records_bound=bound)
    assert publish(x, epsilon=5.0, method="auto", records_bound=66,
                   rng=make_rng(seed=0)).mechanism == "identity"


def test_auto_at_large_domains_picks_methods_that_run():
    """The rule was fitted at n = 1024. At 30,000 bins its ranges pick at signal 0.1,
    optimized StructureFirst, refused its V-optimal table (InstanceTooLargeError: `auto`
    failed); above 4096 bins its HDMM pick optimized a strategy at run time (39 s at 8192
    bins, 515 s at 65,536). Now DAWA and HB there, with the reason in the rule's text."""
    from veil.histograms.api import AUTO_RULE, choose_method
    from veil.histograms.partition import VOPT_MAX_CELLS

    for n in (1024, 4096, 8192, 30000, 65536):
        for wl in ("prefix", "all-range"):
            for log_signal in np.arange(-3.0, 3.01, 0.25):
                m, why = choose_method(n=n, epsilon=1.0, records_bound=n * 10 ** log_signal,
                                       workload=wl)
                if m == "optimized-structurefirst":
                    k = int(np.ceil(n / 10))
                    assert k * (n + 1) * 2 <= VOPT_MAX_CELLS
                if m == "hdmm":
                    assert n <= 4096
                if n <= 4096:   # the fitted rule, unchanged
                    assert m in {meth for _, meth in AUTO_RULE["prefix" if wl == "prefix"
                                                                  else "ranges"]}
                    assert "ready" not in why and "limit" not in why
    # the shipped rule no longer picks optimized StructureFirst (coarse, then privtree, took
    # its low-signal ranges); the fallback still serves a rule that does
    m, why = choose_method(n=30000, epsilon=0.1, records_bound=30000, workload="all-range",
                           rule={"ranges": ((math.inf, "optimized-structurefirst"),)})
    assert m == "dawa" and "V-optimal table" in why
    x = np.random.default_rng(1).multinomial(30000, np.full(30000, 1 / 30000))
    r = publish(x, epsilon=0.1, method="auto", workload="all-range", records_bound=30000,
                rng=make_rng(seed=1))
    assert r.mechanism == "privtree" and r.value.size == 30000
    m, why = choose_method(n=8192, epsilon=1.0, records_bound=10 ** 7)
    assert m == "hb" and "no ready strategy for 8,192 bins" in why


def test_a_records_bound_a_method_does_not_take_is_noted_not_dropped():
    """`--records-bound 100 --method hb` used to vanish without a word: the release now
    says the bound was not used (and by which method); methods that use it say nothing."""
    x = np.array([3, 0, 5, 7] * 8)
    for m in ("hb", "identity", "privtree", "hdmm"):
        r = publish(x, epsilon=1.0, method=m, records_bound=100, rng=make_rng(seed=1))
        assert any(f"records_bound=100 not used: {m} takes no records bound" in n
                   for n in r.notes), (m, r.notes)
    for m in ("dawa", "coarse"):
        r = publish(x, epsilon=1.0, method=m, records_bound=100, rng=make_rng(seed=1))
        assert not any("not used" in n for n in r.notes) and r.parameters["records_bound"] == 100
    with pytest.raises(ParameterError, match="records_bound"):
        publish(x, epsilon=1.0, method="hb", records_bound=-1)
