"""Issue 13, defect 7: KL with size="target", RH with KL and an empty target bin, TA's
fallback bound clipped to the largest possible distance. Exact against brute force."""

import math

import numpy as np
import pytest

from veil.distances import bin_terms
from veil.errors import InfeasibleError
from veil.visits import avoid, resemble
from veil.visits.resemble import DISTANCE_MAX


def brute(h, target, eps, qd, pd, S, sense, comps):
    allx = comps(S, h.size)
    with np.errstate(divide="ignore", invalid="ignore"):
        q = bin_terms(h / h.sum(), allx / S, qd).sum(axis=1)
        p = bin_terms(allx / S, target / target.sum(), pd).sum(axis=1)
    ok = q <= eps * (1 + 1e-9) + 1e-12
    if not ok.any():
        return None
    return p[ok].min() if sense == "min" else p[ok].max()


def test_issue_example_kl_quality_with_target_size():
    r = resemble([2, 7], [2, 4], quality_bound=0.05, quality_distance="kl", size="target")
    assert r.histogram.tolist() == [2, 4]
    assert r.quality_loss <= 0.05


@pytest.mark.parametrize("fn, sense", [(resemble, "min"), (avoid, "max")])
def test_kl_quality_target_size_equals_brute_force(fn, sense, comps):
    rng = np.random.default_rng(13)
    checked = 0
    for _ in range(40):
        n = int(rng.integers(2, 5))
        h = rng.integers(0, 6, size=n)
        h[0] = max(h[0], 1)
        target = rng.integers(1, 6, size=n).astype(float)
        S = int(target.sum())
        eps = float(rng.choice([0.05, 0.2, 1.0, 3.0]))
        pd = str(rng.choice(["js", "l2", "hellinger"]))
        best = brute(h, target, eps, "kl", pd, S, sense, comps)
        if best is None:
            with pytest.raises(InfeasibleError):
                fn(h, target, quality_bound=eps, quality_distance="kl", privacy_distance=pd,
                   size="target", method="exact")
            continue
        res = fn(h, target, quality_bound=eps, quality_distance="kl", privacy_distance=pd,
                 size="target", method="exact")
        assert res.histogram.sum() == S
        assert res.privacy_value == pytest.approx(best, rel=1e-9, abs=1e-12)
        checked += 1
    assert checked >= 20


def test_issue_example_rh_with_kl_and_empty_target_bin():
    h, t = [3, 2, 0, 1], [0, 3, 3, 4]
    exact = resemble(h, t, quality_bound=0.5, privacy_distance="kl", method="exact")
    heur = resemble(h, t, quality_bound=0.5, privacy_distance="kl", method="heuristic")
    assert exact.privacy_value == pytest.approx(0.0094665, abs=1e-6)
    assert math.isfinite(heur.privacy_value)
    assert heur.histogram[0] == 0
    assert heur.privacy_value == pytest.approx(exact.privacy_value, rel=1e-9)


def test_rh_with_kl_empty_target_bins_against_brute_force(comps):
    rng = np.random.default_rng(5)
    finite = reached = 0
    for _ in range(40):
        n = int(rng.integers(3, 5))
        h = rng.integers(0, 5, size=n)
        h[0] = max(h[0], 1)
        target = rng.integers(1, 5, size=n).astype(float)
        target[0] = 0.0  # the user visits a bin the target leaves empty
        eps = float(rng.choice([0.1, 0.3, 1.0]))
        best = brute(h, target, eps, "js", "kl", int(h.sum()), "min", comps)
        res = resemble(h, target, quality_bound=eps, privacy_distance="kl", method="heuristic")
        assert res.quality_loss <= eps * (1 + 1e-9) + 1e-12
        assert res.privacy_value >= best - 1e-9 and res.bound <= best + 1e-9
        if math.isfinite(best):
            finite += 1
            reached += math.isfinite(res.privacy_value)
    assert finite >= 15
    assert reached == finite  # whenever a finite answer exists, RH leaves the infinite bins


def test_ta_fallback_bound_clipped_to_ln2():
    rng = np.random.default_rng(2)
    n, S = 30, 4000  # n * S^2 > 3e8: the cheap fallback bound is used
    h = rng.multinomial(S, np.full(n, 1 / n))
    t = rng.dirichlet(np.full(n, 0.3))
    res = avoid(h, t, quality_bound=0.001, method="heuristic")
    assert any("clipped" in note for note in res.notes)
    assert res.bound <= DISTANCE_MAX["js"] == pytest.approx(math.log(2))
    assert res.privacy_value <= res.bound + 1e-12
    assert res.gap == pytest.approx(res.bound - res.privacy_value, abs=1e-12)


def test_convex_table_alloc_matches_brute_force(comps):
    from veil.visits.resemble import convex_table_alloc

    rng = np.random.default_rng(9)
    for _ in range(30):
        n, S = int(rng.integers(2, 5)), int(rng.integers(1, 7))
        h = rng.integers(0, 4, size=n)
        h[0] = max(h[0], 1)
        x = np.arange(S + 1)[None, :] / S
        C = bin_terms((h / h.sum())[:, None], x, "kl")  # inf at 0 where h > 0
        allx = comps(S, n)
        vals = C[np.arange(n)[None, :], allx].sum(axis=1)
        if not np.isfinite(vals.min()):
            with pytest.raises(InfeasibleError):
                convex_table_alloc(C, S)
            continue
        got = convex_table_alloc(C, S)
        assert got.sum() == S
        assert C[np.arange(n), got].sum() == pytest.approx(vals.min(), rel=1e-12)
