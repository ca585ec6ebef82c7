"""The measured adversary (veil.visits.distinguishability) and the resample mitigation.

Statistical tests are seeded; each states its level and has a power check (the same test
must reject a deliberately wrong case).
"""

import numpy as np
import pytest
from scipy.stats import chisquare

from veil.errors import ParameterError
from veil.visits import Resample, hide
from veil.visits.distinguishability import auc, distinguishability
from veil.visits.hide import hide_many
from veil.visits.mitigation import apply_resample


def test_auc_equals_sklearn_with_ties():
    from sklearn.metrics import roc_auc_score

    g = np.random.default_rng(0)
    for _ in range(20):
        s = g.integers(0, 5, 60).astype(float)  # many ties
        y = g.random(60) < 0.4
        if y.all() or not y.any():
            continue
        assert auc(s, y) == pytest.approx(roc_auc_score(y, s), abs=1e-12)
    with pytest.raises(ParameterError, match="positive and one negative"):
        auc([1, 2], [1, 1])


def _users(g, n_users, per_user, signal):
    """Weekly-like units: label per user, counts shifted towards bin 0 when labelled."""
    lab_user = g.random(n_users) < 0.5
    groups = np.repeat(np.arange(n_users), per_user)
    y = lab_user[groups]
    rate = np.where(y[:, None], [3 + signal, 3, 3], [3, 3, 3 + signal])
    return g.poisson(rate), y, groups


@pytest.mark.parametrize("attack", ["likelihood", "gbm"])
def test_attack_detects_a_signal_and_not_its_absence(attack):
    g = np.random.default_rng(1)
    level = 0.999  # two-sided, per check
    X, y, groups = _users(g, 120, 5, signal=0.0)
    null = distinguishability(X, y, groups, attacks=[attack], level=level, n_boot=300, rng=g)
    r = null.results[attack]
    assert r.ci[0] <= 0.5 <= r.ci[1], r  # no signal: the CI covers 0.5
    assert r.control_ci[0] <= 0.5 <= r.control_ci[1]
    # power: a modest signal is detected by the same procedure
    X, y, groups = _users(g, 120, 5, signal=1.5)
    alt = distinguishability(X, y, groups, attacks=[attack], level=level, n_boot=300, rng=g)
    r = alt.results[attack]
    assert r.ci[0] > 0.5 and r.auc > 0.6, r
    assert r.control_ci[0] <= 0.5 <= r.control_ci[1]  # permuted labels: chance level


def test_split_over_users_is_what_keeps_the_attack_honest():
    # every user repeats one random histogram in all their units, labels are per user and
    # independent of the histogram: only memorizing users across the split could score
    g = np.random.default_rng(2)
    n_users, per = 150, 6
    base = g.poisson(4, size=(n_users, 6))
    groups = np.repeat(np.arange(n_users), per)
    X = base[groups]
    y = (g.random(n_users) < 0.5)[groups]
    honest = distinguishability(X, y, groups, attacks=["gbm"], n_boot=200, level=0.999, rng=g)
    assert abs(honest.results["gbm"].auc - 0.5) < 0.1  # chance level (150 independent users)
    # canary: splitting units instead of users lets the classifier memorize the users
    leaky = distinguishability(X, y, np.arange(X.shape[0]), attacks=["gbm"], n_boot=200,
                               level=0.999, rng=g)
    assert leaky.results["gbm"].auc > 0.9


@pytest.mark.parametrize("kwargs, match", [
    (dict(released=[[1, 2]], labels=[1], groups=[0]), "users"),
    (dict(released=[[1.5, 2]] * 8, labels=[0, 1] * 4, groups=range(8)), "integer"),
    (dict(released=[[1, -2]] * 8, labels=[0, 1] * 4, groups=range(8)), "non-negative"),
    (dict(released=[[1, 2]] * 8, labels=[1] * 8, groups=range(8)), "both kinds"),
    (dict(released=[[1, 2]] * 8, labels=[0, 1] * 4, groups=range(8), attacks=["svm"]),
     "did you mean|must be one of"),
    (dict(released=[[1, 2]] * 8, labels=[0, 1] * 3, groups=range(8)), "labels must have 8"),
])
def test_distinguishability_rejects_bad_input(kwargs, match):
    with pytest.raises(ParameterError, match=match):
        distinguishability(**kwargs)


# ----------------------------------------------------------------------------- mitigation
def test_resample_matches_its_claimed_distribution():
    alpha = 1e-6
    g = np.random.default_rng(3)
    H = np.array([[6, 4, 0, 0, 5]] * 20000)
    m = Resample(size=12, mix=0.3)
    X = apply_resample(H, [3], m, g)
    p = H[0] / H[0].sum()
    p0 = np.array([1, 1, 1, 0, 1]) / 4.0
    q = 0.7 * p + 0.3 * p0
    tot = X.sum(axis=0)
    keep = q > 0
    assert (tot[~keep] == 0).all()
    assert chisquare(tot[keep], X.sum() * q[keep]).pvalue > alpha
    # power: a slightly wrong model (mix 0.2 instead of 0.3) is rejected by the same test
    q_wrong = 0.8 * p + 0.2 * p0
    assert chisquare(tot[keep], X.sum() * q_wrong[keep]).pvalue < alpha
    # per-row variance of a multinomial count: M q (1 - q)
    var = X[:, 0].var()
    assert var == pytest.approx(12 * q[0] * (1 - q[0]), rel=0.05)


def test_resample_depends_only_on_the_profile_and_has_a_fixed_size():
    sens = [3]
    m = Resample(size=9, mix=0.1)
    a = hide([4, 2, 0, 3, 2], sensitive=sens, mitigation=m, rng=np.random.default_rng(5))
    lho = np.array(a.parameters["lho_histogram"])
    b = hide(2 * lho, sensitive=sens, mitigation=m, rng=np.random.default_rng(5))
    # same sanitized profile (the first had K=3 visits hidden, the second none), same draw
    assert a.histogram.tolist() == b.histogram.tolist()
    assert a.histogram.sum() == 9 and a.histogram[3] == 0
    out, _, st = hide_many([[4, 2, 0, 1, 2], [0, 0, 0, 5, 0]], sensitive=sens, mitigation=m,
                           rng=np.random.default_rng(5))
    assert out[0].sum() == 9 and st[1] != "" and out[1].sum() == 0


def test_resample_default_rng_is_random():
    m = Resample(size=50)
    draws = {tuple(hide([5, 5, 5, 1], sensitive=[3], mitigation=m).histogram) for _ in range(5)}
    assert len(draws) > 1  # OS entropy by default: not a fixed seed


@pytest.mark.parametrize("kwargs, match", [(dict(size=0), "size"), (dict(size=5, mix=1.0), "< 1"),
                                           (dict(size=5, mix=-0.1), "mix"),
                                           (dict(size=5, profile=[1, -1]), "non-negative")])
def test_resample_rejects_bad_parameters(kwargs, match):
    with pytest.raises(ParameterError, match=match):
        Resample(**kwargs)


def test_resample_conflicts_and_profiles():
    with pytest.raises(ParameterError, match="forbid_unvisited"):
        hide([3, 1, 2], sensitive=[1], forbid_unvisited=True,
             mitigation=Resample(size=5, mix=0.5))
    with pytest.raises(ParameterError, match="no weight on a non-sensitive"):
        hide([3, 1, 2], sensitive=[1], mitigation=Resample(size=5, mix=0.5, profile=[0, 1, 0]))
    with pytest.raises(ParameterError, match="3 bins"):
        hide([3, 1, 2], sensitive=[1], mitigation=Resample(size=5, mix=0.5, profile=[1, 1]))


@pytest.mark.slow
def test_nyc_weekly_lho_is_distinguishable_and_the_mitigation_is_not():
    """Acceptance (issue 13): on the NYC weekly histograms the attacks beat LHO, and the
    documented mitigation setting brings every attack to AUC <= 0.55."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location(
        "bench_visits", Path(__file__).resolve().parents[2] / "benchmarks" / "visits.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    H, user, cats = mod.nyc_weekly()
    s = cats.index("Professional & Other Places")
    y = H[:, s] > 0
    attacks = ["likelihood", "gbm", "size"]
    out, _, _ = hide_many(H, sensitive=[s])
    lho = distinguishability(out, y, user, attacks=attacks, rng=np.random.default_rng(11))
    assert lho.max_auc > 0.58 and min(r.ci[0] for r in lho.results.values()) > 0.5
    mit = Resample(**mod.MITIGATION)
    worst = []
    for seed in (1, 2, 3):  # other seeds than the benchmark's (7, 8, 9)
        out, _, _ = hide_many(H, sensitive=[s], mitigation=mit, rng=np.random.default_rng(seed))
        d = distinguishability(out, y, user, attacks=attacks, rng=np.random.default_rng(seed))
        worst.append(d.max_auc)
    # one draw's AUC varies by about +-0.02 (folds, bootstrap, the mitigation's own draw): the
    # target is on the mean over draws of the strongest attack; no draw may be far above it
    print("strongest-attack AUC per draw:", [round(a, 4) for a in worst])
    assert np.mean(worst) <= 0.55 and max(worst) <= 0.58, worst
