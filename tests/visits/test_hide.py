"""SLH: LHO and the convex fast path against brute force and each other."""

import numpy as np
import pytest

from veil.distances import bin_terms
from veil.errors import InfeasibleError, ParameterError
from veil.visits import convex_allocate, hide, lho
from veil.visits._kernels import HAVE_NUMBA, minplus_backtrack, minplus_chain

CONVEX = ["js", "l1", "l2", "chi2", "hellinger"]


def brute_hide(h, sens, distance, r, forbid, comps):
    N = h.sum()
    K = h[sens].sum()
    S = N - K + r
    free = np.setdiff1d(np.arange(h.size), sens)
    best = np.inf
    for add in comps(r, free.size):
        if forbid and (add[h[free] == 0] > 0).any():
            continue
        out = np.zeros(h.size)
        out[free] = h[free] + add
        best = min(best, bin_terms(h / N, out / S, distance).sum())
    return best


def random_instance(rng, n_max=5, count_max=6):
    n = int(rng.integers(2, n_max + 1))
    h = rng.integers(0, count_max + 1, size=n)
    ns = int(rng.integers(1, n))
    sens = np.sort(rng.choice(n, size=ns, replace=False))
    free = np.setdiff1d(np.arange(n), sens)
    if h[free].sum() == 0:
        h[free[0]] = 1
    return h, sens


@pytest.mark.parametrize("distance", CONVEX)
def test_lho_and_convex_equal_brute_force(distance, comps):
    rng = np.random.default_rng(1)
    for _ in range(25):
        h, sens = random_instance(rng)
        forbid = bool(rng.integers(0, 2))
        r = int(rng.integers(0, 7)) if rng.random() < 0.3 else None
        K = int(h[sens].sum())
        rr = K if r is None else r
        best = brute_hide(h, sens, distance, rr, forbid, comps)
        a = hide(h, sensitive=sens, distance=distance, r=r, method="lho", forbid_unvisited=forbid)
        b = hide(h, sensitive=sens, distance=distance, r=r, method="convex",
                 forbid_unvisited=forbid)
        for res in (a, b):
            assert res.histogram[sens].sum() == 0
            assert res.histogram.sum() == h.sum() - K + rr
            assert np.all(res.histogram >= np.where(np.isin(np.arange(h.size), sens), 0, h))
            assert res.quality_loss == pytest.approx(best, rel=1e-9, abs=1e-12)
            if forbid:
                assert (res.histogram[h == 0] == 0).all()


def test_brute_force_finds_worse_allocations(comps):
    """Power check: the brute-force minimum really is below other allocations."""
    h = np.array([5, 1, 4, 0])
    best = brute_hide(h, np.array([2]), "js", 4, False, comps)
    worst = bin_terms(h / 10, np.array([5, 5, 0, 0]) / 10, "js").sum()
    assert best < worst - 1e-3


def test_convex_equals_lho_on_500_random_instances():
    rng = np.random.default_rng(2026)
    for trial in range(500):
        n = int(rng.integers(2, 25))
        h = rng.integers(0, 30, size=n) * (rng.random(n) < 0.8)
        ns = int(rng.integers(1, n))
        sens = rng.choice(n, size=ns, replace=False)
        free = np.setdiff1d(np.arange(n), sens)
        if h[free].sum() == 0:
            h[free[0]] = 3
        distance = CONVEX[trial % len(CONVEX)]
        r = None if trial % 3 else int(rng.integers(0, 60))
        forbid = trial % 4 == 1
        a = hide(h, sensitive=sens, distance=distance, r=r, method="lho", forbid_unvisited=forbid)
        b = hide(h, sensitive=sens, distance=distance, r=r, method="convex",
                 forbid_unvisited=forbid)
        assert b.quality_loss == pytest.approx(a.quality_loss, rel=1e-9, abs=1e-12), trial
        assert a.histogram.sum() == b.histogram.sum()
        if distance == "l1":
            # integer objective with the documented tie-break: identical secondary sums
            add_a = a.histogram - np.where(np.isin(np.arange(n), sens), 0, h)
            add_b = b.histogram - np.where(np.isin(np.arange(n), sens), 0, h)
            assert (add_a ** 2).sum() == (add_b ** 2).sum(), trial


def test_l1_tie_break_spreads_evenly():
    # every allocation has L1 loss 2K/N; the tie-break spreads the visits evenly
    h = np.array([10, 1, 1, 6])
    res = hide(h, sensitive=[3], distance="l1")
    assert res.histogram.tolist() == [12, 3, 3, 0]
    assert res.quality_loss == pytest.approx(2 * 6 / 18)
    # the same with LHO
    assert hide(h, sensitive=[3], distance="l1", method="lho").histogram.tolist() == [12, 3, 3, 0]


def test_lho_accepts_nonconvex_costs_and_infinite_entries(comps):
    rng = np.random.default_rng(5)
    for _ in range(30):
        m, R = int(rng.integers(1, 5)), int(rng.integers(0, 7))
        C = rng.random((m, R + 1)) * 10
        C[rng.random(C.shape) < 0.2] = np.inf
        C[0, :] = rng.random(R + 1)  # keep it feasible
        brute = min(sum(C[i, a[i]] for i in range(m)) for a in comps(R, m))
        if not np.isfinite(brute):
            with pytest.raises(InfeasibleError):
                lho(C, R)
            continue
        alloc, cost = lho(C, R)
        assert cost == pytest.approx(brute)
        assert alloc.sum() == R
        assert sum(C[i, alloc[i]] for i in range(m)) == pytest.approx(cost)


@pytest.mark.skipif(not HAVE_NUMBA, reason="numba not installed: only the numpy backend exists")
def test_numba_and_numpy_backends_agree():
    rng = np.random.default_rng(9)
    C = rng.random((7, 31))
    a = minplus_chain(C, backend="numba", keep_all=True)
    b = minplus_chain(C, backend="numpy", keep_all=True)
    np.testing.assert_allclose(a[0], b[0])
    assert minplus_backtrack(a[1], 30).tolist() == minplus_backtrack(b[1], 30).tolist()


def test_convex_allocate_large_k_matches_quadratic_closed_form():
    w = np.array([1.0, 2.0, 4.0])
    # cost w_b k^2: optimum proportional to 1/w
    alloc = convex_allocate(lambda b, k: w[b] * (2 * k + 1), 3, 70_000)
    assert alloc.sum() == 70_000
    np.testing.assert_allclose(alloc / 70_000, np.array([4, 2, 1]) / 7, atol=1e-4)


def test_convex_allocate_infeasible_when_all_forbidden():
    with pytest.raises(InfeasibleError):
        convex_allocate(lambda b, k: np.full(np.shape(b), np.inf), 3, 2)


def test_labels_and_names():
    res = hide([4, 1, 2], sensitive=["church"], labels=["bar", "church", "park"])
    assert res.histogram.tolist()[1] == 0 and res.size == 7
    assert res.to_dict()["histogram"]["church"] == 0
    with pytest.raises(ParameterError, match="did you mean 'church'"):
        hide([4, 1, 2], sensitive=["chruch"], labels=["bar", "church", "park"])


@pytest.mark.parametrize("kwargs, exc, match", [
    (dict(histogram=[3, -1, 2], sensitive=[0]), ParameterError, r"histogram\[1\] must be >= 0"),
    (dict(histogram=[3, 1.5, 2], sensitive=[0]), ParameterError, "integer count"),
    (dict(histogram=[0, 0, 0], sensitive=[0]), ParameterError, "empty"),
    (dict(histogram=[3, 1, 0], sensitive=[0, 1]), InfeasibleError, "every visited place"),
    (dict(histogram=[3, 1], sensitive=[0, 1]), InfeasibleError, "every bin"),
    (dict(histogram=[3, 1, 2], sensitive=[5]), ParameterError, "out of range"),
    (dict(histogram=[3, 1, 2], sensitive=[0], distance="jss"), ParameterError, "did you mean"),
    (dict(histogram=[3, 1, 2], sensitive=[0], distance="kl"), ParameterError, "infinite"),
    (dict(histogram=[3, 1, 2], sensitive=[0], r=-1), ParameterError, "r must be >= 0"),
    (dict(histogram=[3, 1, 2], sensitive=[0], method="dp"), ParameterError, "method"),
    (dict(histogram=[3, 1, 2], sensitive=["a"]), ParameterError, "no labels"),
])
def test_bad_input(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        hide(**kwargs)


def test_forbid_unvisited_keeps_unvisited_bins_empty():
    res = hide([1, 5, 0, 0, 2], sensitive=[1], forbid_unvisited=True)
    assert res.histogram.tolist()[2:4] == [0, 0]
    free = hide([1, 5, 0, 0, 2], sensitive=[1], distance="l2")
    assert free.histogram[2:4].sum() > 0  # without the flag L2 does use the empty bins


def test_package_works_without_numba(tmp_path):
    """The numpy fallback is used when numba is unavailable (VEIL_NO_NUMBA=1)."""
    import os
    import subprocess
    import sys

    code = ("import numpy as np; from veil.visits import hide, resemble; "
            "from veil.visits._kernels import HAVE_NUMBA; assert not HAVE_NUMBA; "
            "r = hide([5, 3, 0, 2, 7], sensitive=[4], method='lho'); "
            "b = hide([5, 3, 0, 2, 7], sensitive=[4]); "
            "assert r.histogram.tolist() == b.histogram.tolist(); "
            "a = resemble([4, 1, 0, 3], [1, 1, 1, 1], quality_bound=0.1, method='exact'); "
            "print(a.algorithm)")
    env = dict(os.environ, VEIL_NO_NUMBA="1",
               PYTHONPATH=os.pathsep.join(p for p in sys.path if p.endswith("src")))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "RO"


def test_convex_fast_path_at_large_k_matches_heap_greedy():
    """At K = 3000 (beyond brute force and slow for LHO) against a textbook heap greedy."""
    import heapq

    from veil.visits.costs import QualityCost

    rng = np.random.default_rng(12)
    h = rng.integers(0, 50, size=40)
    h[0] = 3000
    free = np.arange(1, 40)
    cost = QualityCost(h, free, int(h.sum()), "js")
    fast = convex_allocate(cost.marginal, free.size, 3000)
    heap = [(float(cost.marginal(np.array([b]), np.array([0]))[0]), b) for b in range(free.size)]
    heapq.heapify(heap)
    slow = np.zeros(free.size, dtype=np.int64)
    for _ in range(3000):
        _, b = heapq.heappop(heap)
        slow[b] += 1
        heapq.heappush(heap, (float(cost.marginal(np.array([b]), np.array([slow[b]]))[0]), b))
    obj = lambda a: float(cost(np.arange(free.size), a).sum())  # noqa: E731
    assert fast.sum() == 3000
    assert obj(fast) == pytest.approx(obj(slow), rel=1e-12)
    res = hide(h, sensitive=[0])
    assert res.quality_loss == pytest.approx(
        float(bin_terms(h / h.sum(), np.r_[0, h[1:] + slow] / h.sum(), "js").sum()), rel=1e-9)
