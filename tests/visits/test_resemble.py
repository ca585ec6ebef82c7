"""TR / TA: exact RO and AO against brute force; heuristics feasible with valid bounds."""

import math

import numpy as np
import pytest

from veil.distances import bin_terms
from veil.errors import InfeasibleError, InstanceTooLargeError, ParameterError
from veil.visits import avoid, resemble

DIST = ["js", "l1", "l2", "chi2", "hellinger"]


def brute(h, target, eps, qd, pd, S, sense, forbid, comps):
    allx = comps(S, h.size)
    if forbid:
        allx = allx[~((allx > 0) & (h == 0)[None, :]).any(axis=1)]
    q = bin_terms(h / h.sum(), allx / S, qd).sum(axis=1)
    p = bin_terms(allx / S, target / target.sum(), pd).sum(axis=1)
    ok = q <= eps * (1 + 1e-9) + 1e-12
    if not ok.any():
        return None
    return p[ok].min() if sense == "min" else p[ok].max()


def instances(seed, count):
    rng = np.random.default_rng(seed)
    for i in range(count):
        n = int(rng.integers(2, 5))
        h = rng.integers(0, 5, size=n)
        if h.sum() == 0:
            h[0] = 2
        target = rng.random(n) * (rng.random(n) < 0.8) + 1e-3 * (i % 2)
        if target.sum() == 0:
            target[-1] = 1.0
        eps = float(rng.choice([0.0, 0.02, 0.05, 0.1, 0.3, 1.0]))
        yield i, h, target, eps, DIST[i % 5], DIST[(i + 2) % 5]


@pytest.mark.parametrize("fn, sense", [(resemble, "min"), (avoid, "max")])
def test_exact_equals_brute_force(fn, sense, comps):
    for i, h, target, eps, qd, pd in instances(7 if sense == "min" else 8, 60):
        forbid = i % 7 == 3
        best = brute(h, target, eps, qd, pd, int(h.sum()), sense, forbid, comps)
        res = fn(h, target, quality_bound=eps, quality_distance=qd, privacy_distance=pd,
                 method="exact", forbid_unvisited=forbid)
        assert res.exact and res.gap == 0.0
        assert res.histogram.sum() == h.sum()
        assert res.quality_loss <= eps * (1 + 1e-9) + 1e-12
        assert res.privacy_value == pytest.approx(best, rel=1e-9, abs=1e-12), (i, h, target, eps)


@pytest.mark.parametrize("fn, sense", [(resemble, "min"), (avoid, "max")])
def test_heuristic_is_feasible_and_bound_is_valid(fn, sense, comps):
    worse = 0
    for i, h, target, eps, qd, pd in instances(11, 60):
        best = brute(h, target, eps, qd, pd, int(h.sum()), sense, False, comps)
        res = fn(h, target, quality_bound=eps, quality_distance=qd, privacy_distance=pd,
                 method="heuristic")
        assert not res.exact and res.algorithm in ("RH", "AH")
        assert res.quality_loss <= eps * (1 + 1e-9) + 1e-12
        assert res.histogram.sum() == h.sum()
        if sense == "min":
            assert res.bound <= best + 1e-9 and res.privacy_value >= best - 1e-9
            assert res.gap == pytest.approx(res.privacy_value - res.bound, abs=1e-12)
        else:
            assert res.bound >= best - 1e-9 and res.privacy_value <= best + 1e-9
        worse += res.privacy_value != pytest.approx(best, rel=1e-9, abs=1e-12)
    assert worse < 60  # the heuristic is not trivially wrong everywhere


@pytest.mark.parametrize("fn, sense", [(resemble, "min"), (avoid, "max")])
def test_target_size_variant_equals_brute_force(fn, sense, comps):
    rng = np.random.default_rng(3)
    for i in range(30):
        n = int(rng.integers(2, 4))
        h = rng.integers(1, 5, size=n)
        target = rng.integers(0, 5, size=n).astype(float)
        if target.sum() == 0:
            target[0] = 1
        S = int(target.sum())
        eps = float(rng.choice([0.05, 0.2, 0.7]))
        best = brute(h, target, eps, "js", "js", S, sense, False, comps)
        if best is None:
            with pytest.raises(InfeasibleError, match="quality_bound"):
                fn(h, target, quality_bound=eps, size="target", method="exact")
            continue
        res = fn(h, target, quality_bound=eps, size="target", method="exact")
        assert res.histogram.sum() == S
        assert res.privacy_value == pytest.approx(best, rel=1e-9, abs=1e-12)


def test_eps_zero_returns_input():
    h = np.array([4, 0, 3, 1])
    for fn in (resemble, avoid):
        res = fn(h, [1, 1, 1, 1], quality_bound=0.0)
        assert res.histogram.tolist() == h.tolist()


def test_privacy_threshold_unreachable_raises():
    h = np.array([9, 1, 0, 0])
    with pytest.raises(InfeasibleError, match="best possible"):
        resemble(h, [0, 0, 1, 1], quality_bound=0.01, privacy_threshold=0.01, method="exact")
    with pytest.raises(InfeasibleError, match="best possible"):
        avoid(h, h, quality_bound=0.01, privacy_threshold=0.5, method="exact")
    # and a reachable threshold passes
    res = resemble(h, [0.5, 0.5, 0, 0], quality_bound=0.5, privacy_threshold=0.05)
    assert res.privacy_value <= 0.05


def test_heuristic_miss_with_proof_or_hint():
    h = np.array([9, 1, 0, 0])
    with pytest.raises(InfeasibleError):
        resemble(h, [0, 0, 1, 1], quality_bound=0.01, privacy_threshold=0.01, method="heuristic")


def test_exact_reports_too_large():
    rng = np.random.default_rng(0)
    h = rng.integers(0, 20, size=30)
    t = rng.random(30)
    with pytest.raises(InstanceTooLargeError, match="max_labels"):
        resemble(h, t, quality_bound=0.05, method="exact", max_labels=50)
    res = resemble(h, t, quality_bound=0.05, method="auto", max_labels=50)
    assert res.algorithm == "RH" and res.notes and res.gap >= 0


@pytest.mark.parametrize("kwargs, match", [
    (dict(histogram=[1, -2, 3], target=[1, 1, 1], quality_bound=0.1), r"must be >= 0"),
    (dict(histogram=[1, 2, 3], target=[1, 1], quality_bound=0.1), "different|domain"),
    (dict(histogram=[1, 2, 3], target=[1, -1, 1], quality_bound=0.1), r"target\[1\]"),
    (dict(histogram=[1, 2, 3], target=[0, 0, 0], quality_bound=0.1), "sums to 0"),
    (dict(histogram=[1, 2, 3], target=[1, 1, 1], quality_bound=-0.1), "quality_bound"),
    (dict(histogram=[1, 2, 3], target=[1, 1, 1], quality_bound=math.nan), "quality_bound"),
    (dict(histogram=[1, 2, 3], target=[1, 1, 1], quality_bound=0.1, privacy_threshold=-1),
     "privacy_threshold"),
    (dict(histogram=[1, 2, 3], target=[1, 1, 1], quality_bound=0.1, method="fast"), "method"),
    (dict(histogram=[1, 2, 3], target=[1.5, 1, 1], quality_bound=0.1, size="target"),
     "integer total"),
    (dict(histogram=[1, 2, 3], target=[1, 1, 1], quality_bound=0.1, privacy_distance="xx"),
     "privacy_distance"),
])
def test_bad_input(kwargs, match):
    with pytest.raises(ParameterError, match=match):
        resemble(**kwargs)


def test_avoid_threshold_above_maximum():
    with pytest.raises(ParameterError, match="largest possible"):
        avoid([1, 2, 3], [1, 1, 1], quality_bound=0.1, privacy_threshold=0.9)


@pytest.mark.parametrize("restrict, rule", [(True, "gain"), (True, "ratio"), (False, "gain")])
def test_heuristic_variants_feasible(restrict, rule, comps):
    for i, h, target, eps, qd, pd in instances(13, 20):
        best = brute(h, target, eps, qd, pd, int(h.sum()), "min", False, comps)
        res = resemble(h, target, quality_bound=eps, quality_distance=qd, privacy_distance=pd,
                       method="heuristic", restrict=restrict, rule=rule)
        assert res.quality_loss <= eps * (1 + 1e-9) + 1e-12
        assert res.privacy_value >= best - 1e-9 and res.bound <= best + 1e-9


def test_paper_pruning_gives_the_same_optimum():
    rng = np.random.default_rng(21)
    for _ in range(10):
        h = rng.integers(0, 8, size=5)
        h[0] += 1
        t = rng.random(5)
        for fn in (resemble, avoid):
            a = fn(h, t, quality_bound=0.08, method="exact")
            b = fn(h, t, quality_bound=0.08, method="exact", pruning="paper")
            assert a.privacy_value == pytest.approx(b.privacy_value, rel=1e-9, abs=1e-12)


def test_result_to_dict_is_json():
    import json

    res = resemble([3, 1, 2], [1, 1, 1], quality_bound=0.1, labels=["a", "b", "c"])
    d = json.loads(json.dumps(res.to_dict()))
    assert d["histogram"].keys() == {"a", "b", "c"}
    assert "not differential privacy" in d["guarantee"]
    assert set(d["parameters"]["timings"]) >= {"heuristic_s", "bound_s"}


def test_kl_privacy_distance_with_empty_target_bins(comps):
    h = np.array([3, 2, 1])
    t = np.array([1.0, 1.0, 0.0])
    best = brute(h, t, 0.5, "js", "kl", 6, "min", False, comps)
    for method in ("exact", "heuristic"):
        r = resemble(h, t, quality_bound=0.5, privacy_distance="kl", method=method)
        assert r.histogram[2] == 0 and np.isfinite(r.privacy_value)
        assert r.privacy_value >= best - 1e-12
    with pytest.raises(ParameterError, match="unbounded"):
        avoid(h, t, quality_bound=0.5, privacy_distance="kl")


def test_large_size_uses_cheap_bound_and_no_exact(monkeypatch):
    import sys

    rs = sys.modules["veil.visits.resemble"]

    monkeypatch.setattr(rs, "DP_WORK_LIMIT", 1e3)
    h = np.array([30, 10, 5, 5])
    t = np.array([1.0, 2.0, 3.0, 4.0])
    with pytest.raises(InstanceTooLargeError, match="n\\*S\\^2"):
        avoid(h, t, quality_bound=0.05, method="exact")
    r = avoid(h, t, quality_bound=0.05)
    assert r.algorithm == "AH" and r.bound >= r.privacy_value and r.notes
    monkeypatch.setattr(rs, "DP_WORK_LIMIT", 1e12)
    best = avoid(h, t, quality_bound=0.05, method="exact").privacy_value
    assert r.bound >= best - 1e-12 and r.privacy_value <= best + 1e-12


def _random_problems(seed, count, max_bins, max_size, sign):
    """Random TR (sign 1) or TA (sign -1) instances of every distance pair, some with
    forbidden unvisited bins, empty target bins or a size other than the histogram's."""
    from veil.visits.resemble import _Problem
    rng = np.random.default_rng(seed)
    for i in range(count):
        n = int(rng.integers(2, max_bins))
        h = rng.multinomial(int(rng.integers(5, max_size)), rng.dirichlet(np.full(n, 0.7)))
        t = rng.dirichlet(np.ones(n)) * (rng.random(n) < 0.9) + 1e-3 * (i % 2)
        if t.sum() == 0:
            t[0] = 1.0
        S = int(h.sum()) if i % 3 else int(rng.integers(5, max_size))
        yield i, h, _Problem(h, t, S, float(rng.choice([0.01, 0.05, 0.2, 1.0])), DIST[i % 5],
                             DIST[(i + 1) % 5], i % 7 == 3, sign)


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_compiled_moves_equal_numpy_moves(sign):
    """The numba RH/AH loop makes the same moves as the numpy reference loop."""
    from veil.visits._kernels import HAVE_NUMBA
    from veil.visits.resemble import _heuristic
    if not HAVE_NUMBA:
        pytest.skip("numba not installed")
    moved = 0
    for i, h, prob in _random_problems(5 if sign > 0 else 6, 300, 12, 60, sign):
        x0 = h.copy() if prob.S == h.sum() else prob.min_quality_alloc()
        if not math.isfinite(prob.quality(x0)) or prob.quality(x0) > prob.eps_tol:
            continue
        for restrict, rule in ((True, "ratio"), (False, "gain"), (False, "ratio")):
            a = _heuristic(prob, x0, restrict, rule, backend="numba")
            b = _heuristic(prob, x0, restrict, rule, backend="numpy")
            assert a.tolist() == b.tolist(), (i, restrict, rule)
            moved += int(np.abs(a - x0).sum() > 0)
    assert moved > 200   # the comparison covers instances where the heuristic moves visits


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_compiled_lagrangian_equals_python_loop(sign):
    """The compiled bisection gives the same bound as the reference Python loop."""
    from veil.visits._kernels import HAVE_NUMBA
    from veil.visits.resemble import lagrangian_bound
    if not HAVE_NUMBA:
        pytest.skip("numba not installed")
    checked = 0
    for i, h, prob in _random_problems(15 if sign > 0 else 16, 150, 10, 50, sign):
        convex = sign > 0
        try:
            ref = lagrangian_bound(prob, convex=convex, backend="python")
        except InfeasibleError:
            with pytest.raises(InfeasibleError):
                lagrangian_bound(prob, convex=convex)
            continue
        got = lagrangian_bound(prob, convex=convex)
        assert got[0] == pytest.approx(ref[0], rel=1e-9, abs=1e-12), i
        assert (got[1] is None) == (ref[1] is None), i
        if ref[1] is not None:
            assert got[2] == pytest.approx(ref[2], rel=1e-9, abs=1e-12), i
        checked += 1
    assert checked > 100
