"""The offline fit of ``auto``'s public rule and its held-out evaluation (issue 19)."""

import math

import numpy as np
import pytest

from veil.histograms.api import AUTO_RULE, choose_method
from veil.histograms.autofit import apply_rule, cross_validate, evaluate_rule, fit_rule
from veil.histograms.evaluation import EvalRow


def _rows(table):
    """table: {(dataset, eps): {method: error}} at scale 1000, n 1000 (signal = eps)."""
    out = []
    for (d, eps), errs in table.items():
        for m, e in errs.items():
            for w in ("prefix", "random"):
                out.append(EvalRow(d, m, eps, 1000, w, n=1000, errors=[e]))
    return out


TABLE = {
    ("d1", 0.01): {"identity": 9.0, "mwem": 1.0, "hdmm": 3.0},
    ("d2", 0.01): {"identity": 9.0, "mwem": 2.0, "hdmm": 2.5},
    ("d1", 1.0): {"identity": 2.0, "mwem": 5.0, "hdmm": 1.0},
    ("d2", 1.0): {"identity": 2.0, "mwem": 5.0, "hdmm": 1.2},
    ("d1", 100.0): {"identity": 1.0, "mwem": 5.0, "hdmm": 0.8},
    ("d2", 100.0): {"identity": 1.0, "mwem": 5.0, "hdmm": 0.9},
}


def test_exact_epsilon_is_where_identity_wins_at_every_signal():
    table = {k: v for k, v in TABLE.items() if k[1] < 100}
    for d in ("d1", "d2"):   # at eps 10 (the top level) Identity (exact) wins at every level
        table[(d, 10.0)] = {"identity": 0.0, "mwem": 5.0, "hdmm": 1e-3}
    rule = fit_rule(_rows(table), candidates=("identity", "mwem", "hdmm"))
    assert rule["exact_epsilon"] == pytest.approx(math.sqrt(10.0))
    assert apply_rule(rule, "prefix", 4.0, epsilon=10.0) == "identity"
    assert fit_rule(_rows(TABLE), candidates=("identity", "mwem", "hdmm"))[
        "exact_epsilon"] == math.inf


def test_fit_picks_least_mean_log_ratio_per_level_and_merges_steps():
    rule = fit_rule(_rows(TABLE), candidates=("identity", "mwem", "hdmm"))
    # levels -2, 0, 2 (log10 signal): mwem at -2 (mean log ratio 0.11 vs 0.86 for hdmm),
    # hdmm at 0 and 2: one step boundary, halfway between -2 and 0
    assert rule["prefix"] == ((-1.0, "mwem"), (math.inf, "hdmm"))
    assert rule["exact_epsilon"] == math.inf      # identity never wins the top level
    assert apply_rule(rule, "prefix", 0.0) == "hdmm"
    assert rule["prefix"] == rule["ranges"]


def test_evaluate_rule_reports_ratios_to_best_and_identity():
    rows = _rows(TABLE)
    rule = {"prefix": ((-1.0, "mwem"), (math.inf, "hdmm")),
            "ranges": ((math.inf, "identity"),)}
    ev = evaluate_rule(rows, rule)
    d2 = [e for e in ev if e["dataset"] == "d2" and e["class"] == "prefix" and e["epsilon"] == 0.01]
    assert d2[0]["chosen"] == "mwem" and d2[0]["over_best"] == 1.0
    assert d2[0]["over_identity"] == pytest.approx(2 / 9)
    r = [e for e in ev if e["class"] == "ranges" and e["epsilon"] == 1.0]
    assert all(e["over_best"] == pytest.approx(2 / {"d1": 1.0, "d2": 1.2}[e["dataset"]]) for e in r)


def test_cross_validation_never_fits_on_the_held_out_datasets():
    table = dict(TABLE)
    # a third dataset that alone prefers identity at the lowest signal
    table[("d3", 0.01)] = {"identity": 1.0, "mwem": 50.0, "hdmm": 60.0}
    table[("d3", 1.0)] = {"identity": 2.0, "mwem": 5.0, "hdmm": 1.0}
    table[("d3", 100.0)] = {"identity": 1.0, "mwem": 5.0, "hdmm": 1.0}
    rules, held = cross_validate(_rows(table), folds=3, candidates=("identity", "mwem", "hdmm"))
    for r in rules:
        assert len(r["held_out"]) == 1
        test = r["held_out"][0]
        # the rule of the fold holding out d3 picks mwem at low signal; the others may not
        if test == "d3":
            assert apply_rule(r["rule"], "prefix", -2.0) == "mwem"
        assert {h["dataset"] for h in held if h["fold"] == r["fold"]} == {test}


def test_shipped_rule_is_well_formed_and_used_by_choose_method():
    assert apply_rule(AUTO_RULE, "prefix", 0.0, epsilon=AUTO_RULE["exact_epsilon"]) == "identity"
    for cls, steps in ((k, v) for k, v in AUTO_RULE.items() if k != "exact_epsilon"):
        assert [u for u, _ in steps] == sorted(u for u, _ in steps)
        assert math.isinf(steps[-1][0])
        for u, m in steps:
            ls = min(u - 0.1, 8.0)
            assert choose_method(n=1000, epsilon=1.0, records_bound=1000 * 10 ** ls,
                                 workload="prefix" if cls == "prefix" else "all-range")[0] == \
                apply_rule(AUTO_RULE, cls, ls, epsilon=1.0)


def test_fit_with_a_target_counts_cells_over_it_before_the_mean_log_ratio():
    """The mean log ratio alone prefers a method 1.2x the best on most datasets to one that is
    best on most and 3x on one; with ``target`` the fit counts the cells over it first."""
    from veil.histograms.autofit import TARGET
    from veil.histograms.evaluation import EvalRow

    errs = {"d1": (1.0, 1.2), "d2": (1.0, 1.2), "d3": (1.0, 1.2), "d4": (3.0, 1.0)}
    rows = [EvalRow(d, m, 0.01, 1000, "prefix", n=1000, errors=[v])
            for d, (a, b) in errs.items() for m, v in (("a", a), ("b", b))]
    assert TARGET == 1.15
    assert fit_rule(rows, candidates=("a", "b"), target=TARGET)["prefix"] == ((math.inf, "a"),)
    assert fit_rule(rows, candidates=("a", "b"))["prefix"] == ((math.inf, "b"),)


def test_auto_report_fits_and_cross_validates_with_the_target_it_is_given():
    """``--fit-auto --fit-target 1.15``: the report fits by the count of cells over the target
    (the rule differs from the mean-log-ratio fit on these rows) and says so."""
    from veil.histograms.bench import auto_report

    errs = {"d1": (1.0, 1.2), "d2": (1.0, 1.2), "d3": (1.0, 1.2), "d4": (3.0, 1.0)}
    rows = [EvalRow(d, m, 0.01, 1000, w, n=1000, errors=[v])
            for d, (a, b) in errs.items() for m, v in (("dawa", a), ("hb", b))
            for w in ("prefix", "random")]
    lines = []
    plain = auto_report(rows, folds=2, log=lines.append)
    counted = auto_report(rows, folds=2, target=1.15, log=lines.append)
    assert plain["rule"]["prefix"] == [[math.inf, "hb"]]
    assert counted["rule"]["prefix"] == [[math.inf, "dawa"]]
    assert any("above 1.15x the best" in line for line in lines)


def test_fit_target_is_a_ratio_of_at_least_one():
    """``fit_rule(target=...)`` counts cells above ``target`` times the best: a ratio below 1
    (every cell would count), nan or inf is refused by the library, not only the command."""
    from veil.errors import ParameterError
    from veil.histograms.autofit import check_target, fit_rule

    assert check_target(None) is None and check_target(1.15) == 1.15
    for bad in (0.5, 0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ParameterError, match="target"):
            fit_rule([], target=bad)


def test_miss_significance_separates_firm_misses_from_trial_noise():
    """The held-out misses are ratios of 10-trial means; ``miss_significance`` calls a miss firm
    only when a paired bootstrap over the trials puts it above the target at the family-wise
    level. Power: a cell at twice the best is firm; a cell whose methods have the same error
    distribution (above 1.15 only by the draw) is not; unpaired trials are reported untested."""
    from veil.histograms.bench import auto_report, miss_significance

    g = np.random.default_rng(3)
    base = g.lognormal(0.0, 0.05, size=10)
    noisy_a, noisy_b = g.lognormal(0.0, 0.4, size=(2, 10))
    while not noisy_a.mean() / noisy_b.mean() > 1.15:  # the same law, a draw above the target
        noisy_a, noisy_b = g.lognormal(0.0, 0.4, size=(2, 10))
    rows = [EvalRow("firm", "a", 0.1, 1000, "prefix", n=16, errors=list(2.0 * base)),
            EvalRow("firm", "b", 0.1, 1000, "prefix", n=16, errors=list(base)),
            EvalRow("noise", "a", 0.1, 1000, "prefix", n=16, errors=list(noisy_a)),
            EvalRow("noise", "b", 0.1, 1000, "prefix", n=16, errors=list(noisy_b)),
            EvalRow("short", "a", 0.1, 1000, "prefix", n=16, errors=[2.0, 2.0]),
            EvalRow("short", "b", 0.1, 1000, "prefix", n=16, errors=[1.0])]
    held = [{"dataset": d, "class": "prefix", "epsilon": 0.1, "scale": 1000, "chosen": "a",
             "best": "b", "over_best": r} for d, r in
            (("firm", 2.0), ("noise", noisy_a.mean() / noisy_b.mean()), ("short", 2.0))]
    lines = []
    out = {o["dataset"]: o for o in miss_significance(rows, held, candidates=("a", "b"),
                                                      log=lines.append)}
    assert out["firm"]["firm"] and out["firm"]["lower_bound"] > 1.15
    assert not out["noise"]["firm"] and out["noise"]["tested"]
    assert not out["short"]["tested"] and math.isnan(out["short"]["lower_bound"])
    assert "3 of 3" in lines[0] and ": 1 (" in lines[0] and "1 not tested" in lines[0]
    # and auto_report runs it on the held-out cells of its cross-validation
    named = [EvalRow(r.dataset, {"a": "dawa", "b": "hb"}[r.method], r.epsilon, r.scale,
                     r.workload, n=r.n, errors=r.errors) for r in rows[:4]]
    lines = []
    rep = auto_report(named, folds=2, target=1.15, log=lines.append)
    assert all(o["over_best"] > 1.15 for o in rep["misses"])
    assert {o["dataset"] for o in rep["misses"]} == {h["dataset"] for h in rep["held_out"]
                                                     if h["over_best"] > 1.15}
    assert any("beyond trial noise" in line for line in lines)
