"""Issue 17, defect 2: every sentence of the report with a number or a comparison is computed
from the data it describes. Each test changes the data and checks that the sentence follows;
``tests/report/test_demo.py`` recomputes the sentences of a built report from its own tables.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from veil.report.sections import geo, histograms, samplers, tables, temporal, visits


# ------------------------------------------------------------------ samplers

def test_samplers_planar_example_follows_epsilon():
    """The guarantee said '200 m on average' whatever epsilon was."""
    assert "200 m on average" in samplers.guarantee_text(0.01)
    g = samplers.guarantee_text(0.004)
    assert "500 m on average" in g and "200 m" not in g


def test_samplers_verdicts_follow_the_p_values():
    assert "consistent" in samplers.fit_sentence("KS", 0.2)
    assert "depart" in samplers.fit_sentence("KS", 1e-9)
    even = samplers.direction_sentence(0.4, np.array([100, 98, 103, 99]))
    skew = samplers.direction_sentence(1e-20, np.array([300, 10, 5, 2]))
    assert even.startswith("No direction is preferred") and "98 to 103" in even
    assert skew.startswith("The directions are NOT uniform") and "2 to 300" in skew


def test_samplers_exponential_sentence_follows_the_frequencies():
    scores = np.arange(4.0)
    up = samplers.exponential_sentence(scores, np.full(4, 0.25), np.array([1, 2, 3, 94]))
    down = samplers.exponential_sentence(scores, np.full(4, 0.25), np.array([94, 3, 2, 1]))
    only = samplers.exponential_sentence(scores, np.full(4, 0.25), np.array([0, 0, 0, 10]))
    assert "rise with" in up and "94% of draws" in up
    assert "fall with" in down and "1% of draws" in down
    assert "in every draw" in only and "never with certainty" not in only


# ------------------------------------------------------------------ histograms

def test_histograms_bin_error_is_the_mean_absolute_error_not_the_rms():
    """'off by about 14 records on average' at eps = 0.1 was the RMS (sqrt(2) x 10)."""
    from veil.samplers import discrete_laplace

    mae, t = histograms.identity_bin_error(0.1)
    z = np.abs(np.asarray(discrete_laplace(t, size=200_000, rng=np.random.default_rng(3))))
    # the closed form matches the exact sampler's mean |Z| (5-sigma band, ~3e-7 two-sided)
    assert abs(z.mean() - mae) < 5 * z.std() / math.sqrt(z.size)
    text = histograms.guarantee_text(0.1)
    assert "about 10 records on average" in text and "14 records" not in text
    # power: the RMS (the old number) is far outside the same band
    assert abs(z.mean() - math.sqrt(2) * t) > 5 * z.std() / math.sqrt(z.size)
    assert "about 2 records on average" in histograms.guarantee_text(0.5)


def test_histograms_slope_and_winners_follow_the_errors():
    eps = [0.1, 1.0, 10.0]
    inv = histograms.slope_sentence(eps, {"a": [1.0, 0.1, 0.01]})
    sq = histograms.slope_sentence(eps, {"a": [1.0, 0.01, 0.0001]})
    assert "epsilon^-1.00" in inv and "epsilon^-2.00" in sq
    from veil.report.stats import rank_methods

    lo = [1.0, 1.01, 0.99, 1.02, 0.98]
    hi = [2.0, 2.02, 1.98, 2.01, 1.99]
    one = {e: rank_methods({"a": lo, "b": hi}) for e in eps}
    two = {0.1: rank_methods({"a": lo, "b": hi}), 1.0: rank_methods({"a": hi, "b": lo})}
    none = {0.1: rank_methods({"a": [1, 3, 2], "b": [2, 1, 3]})}
    assert histograms.winners_sentence(one) == (
        "A significant winner at all 3 epsilons; a wins at every epsilon with a significant "
        "winner.")
    assert "2 different mechanisms win (a, b)" in histograms.winners_sentence(two)
    assert histograms.winners_sentence(none) == "No significant winner at any of the 1 epsilons."


def test_histograms_negative_counts_sentence_counts_them():
    assert histograms.negative_sentence(np.array([[-1.0, -2.0, 3.0]])).startswith("2 of the 3")
    assert histograms.negative_sentence(np.array([[1.0, 2.0, 3.0]])).startswith("None of the 3")


# ------------------------------------------------------------------ visits

def test_visits_sentences_follow_the_histograms():
    mask = np.array([True, True, False, False])
    h = np.array([3, 4, 5, 8])
    good = visits.hide_sentence(["X"], mask, h, np.array([0, 0, 9, 11]))
    bad = visits.hide_sentence(["X"], mask, h, np.array([2, 0, 8, 10]))
    assert "all 2 sensitive categories" in good and "their 7 visits" in good
    assert "1 of the 2 sensitive categories" in bad and "2 visits are left" in bad
    assert "both within the bound 0.05" in visits.bound_sentence({"a": 0.04, "b": 0.05}, 0.05)
    assert "b exceeds the bound 0.05" in visits.bound_sentence({"a": 0.04, "b": 0.06}, 0.05)
    assert visits.size_sentence(20, {"hide": 20}) == "Every output keeps the size (20 visits)."
    assert "avoid 19" in visits.size_sentence(20, {"hide": 20, "avoid": 19})


# ------------------------------------------------------------------ geo

def test_geo_sentences_follow_epsilon_and_the_curves():
    assert "within 200 m" in geo.geo_example(math.log(4) / 200)
    assert "within 400 m" in geo.geo_example(math.log(4) / 400)
    falling = geo.trend_sentence([0.01, 0.1], [200.0, 20.0], [150.0, 10.0], 500.0)
    rising = geo.trend_sentence([0.01, 0.1], [200.0, 20.0], [10.0, 150.0], 500.0)
    assert "falls from 200 to 20 m" in falling and "falls from 150 to 10 m" in falling
    assert "rises from 10 to 150 m" in rising
    from veil.geo.lprivacy import TightNoise, d_epsilon_privacy

    s1 = geo.staircase_sentence(TightNoise(d_epsilon_privacy(200.0, 1.0), core=0.0), 200.0)
    s2 = geo.staircase_sentence(TightNoise(d_epsilon_privacy(200.0, 2.0), core=80.0), 200.0)
    assert "first 0 m" in s1 and "(e^-1)" in s1
    assert "first 80 m" in s2 and "(e^-2)" in s2


# ------------------------------------------------------------------ temporal

def test_temporal_sentences_follow_the_curves():
    assert temporal.growth_sentence([10, 10, 50, 60, 55, 58], 2).startswith("The error grows")
    assert "does not grow" in temporal.growth_sentence([50, 55, 50, 52, 49, 51], 2)
    inside = np.array([[0.2, 0.3], [0.4, 0.4]])
    lo, hi = np.zeros(2), np.ones(2)
    assert temporal.view_sentence(inside, lo, hi) == "All 2 released points are inside the view."
    assert temporal.view_sentence(inside + 5, lo, hi).startswith("All 2 released points fall")
    assert temporal.view_sentence(np.vstack([inside, [[9, 9]]]), lo, hi).startswith("1 of the 3")


# ------------------------------------------------------------------ tables

def test_tables_summary_follows_the_results():
    ms = ["DIVA", "Mondrian", "sort-and-cut"]
    sh = {"DIVA": 0.2, "Mondrian": 0.3, "sort-and-cut": 0.1}
    sat = {"DIVA": 2, "Mondrian": 2, "sort-and-cut": 0}
    s = tables.summary_sentence(ms, sh, sat, 2, {m: 5 for m in ms}, 5)
    assert "DIVA suppresses 20.0%" in s and "all 2 constraints" in s
    assert "sort-and-cut's 10.0%, meeting none of the 2" in s and "5 rows or more" in s
    s = tables.summary_sentence(ms, sh, sat, 2, {"DIVA": 5, "Mondrian": 3, "sort-and-cut": 6}, 5)
    assert "smaller than k = 5 in: Mondrian (smallest 3 rows" in s


@pytest.mark.parametrize("k,n,text", [(0, 3, "none of the 3"), (3, 3, "all 3"),
                                      (1, 3, "1 of the 3")])
def test_count_phrase(k, n, text):
    from veil.report.stats import count_phrase

    assert count_phrase(k, n) == text


# ------------------------------------------------------------------ maps

def test_maps_sentences_follow_the_picks_and_the_counts():
    from veil.report.sections import maps

    same = maps.auto_sentence({0.1: ["ug"] * 3}, {0.1: 1.2})
    mixed = maps.auto_sentence({0.1: ["ug", "ag", "ug"]}, {0.1: 0.8})
    assert same == ("auto picked ug at eps=0.1; its mean error is between 1.20 and 1.20 times "
                    "the lowest-mean mechanism's.")
    assert "ag (1 of 3 runs) and ug (2 of 3 runs)" in mixed and "0.80" in mixed
    x = np.array([[100, 1], [7, 2]])
    assert maps.busiest_sentence(x, x + 0.5, 1) == \
        "The 1 busiest cells hold 100 points (of 110), published as 100.5."
    assert "hold 107 points" in maps.busiest_sentence(x, x, 2)


def test_tables_generalization_sentence_follows_the_rows():
    rows = [["global", 0.4, 3.0], ["local", 0.3, 2.0]]
    risk = [["input", 1.0, 0.9, 0.8], ["global", 0.2, 0.1, 0.05], ["local", 0.2, 0.1, 0.2]]
    s = tables.generalization_sentence(rows, risk)
    assert "local loses least granularity (0.300" in s and "global 0.400" in s
    assert "from 0.800 (input) to 0.050 (global)" in s and "0.200 (local) at worst" in s
    s = tables.generalization_sentence(rows[::-1], [risk[0], risk[2], risk[1]])
    assert "local loses least granularity" in s  # the order of the rows does not matter
    s = tables.generalization_sentence([["global", 0.1, 1.0], ["local", 0.3, 2.0]], risk)
    assert s.startswith("global loses least granularity (0.100; local 0.300)")
