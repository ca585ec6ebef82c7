"""Partition kernels against brute force over all partitions."""

import itertools

import numpy as np
import pytest

from veil.errors import ParameterError
from veil.histograms import partition as P
from veil.histograms._compile import HAVE_NUMBA

ENGINES = ["numpy"] + (["numba"] if HAVE_NUMBA else [])


def brute_force(x, k, cost=None):
    """Least cost over every partition of x into k contiguous non-empty parts."""
    n = len(x)
    cost = cost or (lambda e: P.partition_cost(x, e))
    return min(cost([0, *c, n]) for c in itertools.combinations(range(1, n), k - 1))


def random_instance(rng):
    n = int(rng.integers(1, 10))
    k = int(rng.integers(1, n + 1))
    kind = rng.integers(3)
    if kind == 0:
        x = rng.integers(0, 30, n)
    elif kind == 1:
        x = rng.integers(0, 5, n) * rng.integers(0, 2, n)  # many ties and zeros
    else:
        x = np.round(rng.normal(0, 50, n), 2)  # noisy (negative) values
    return x, k


@pytest.mark.parametrize("engine", ENGINES)
def test_voptimal_equals_brute_force(engine):
    rng = np.random.default_rng(11)
    for _ in range(200):
        x, k = random_instance(rng)
        best = brute_force(x, k)
        edges, cost = P.voptimal(x, k, engine=engine)
        assert cost == pytest.approx(best, rel=1e-9, abs=1e-7)
        assert P.partition_cost(x, edges) == pytest.approx(best, rel=1e-9, abs=1e-7)
        assert edges[0] == 0 and edges[-1] == len(x) and (np.diff(edges) > 0).all()


def test_reference_equals_brute_force():
    rng = np.random.default_rng(12)
    for _ in range(150):
        x, k = random_instance(rng)
        _, cost = P.voptimal_reference(x, k)
        assert cost == pytest.approx(brute_force(x, k), rel=1e-9, abs=1e-7)


@pytest.mark.parametrize("engine", ENGINES)
def test_table_holds_every_k(engine):
    rng = np.random.default_rng(13)
    x = rng.integers(0, 40, 8)
    D, last, A = P.voptimal_table(x, 8, engine=engine)
    for k in range(1, 9):
        assert last[k] == pytest.approx(brute_force(x, k), abs=1e-7)
        for j in range(k, 9):  # every prefix, every k (StructureFirst needs the whole table)
            assert D[k, j] == pytest.approx(brute_force(x[:j], k), abs=1e-7)


@pytest.mark.parametrize("engine", ENGINES)
def test_pruned_kernel_matches_reference_on_larger_inputs(engine):
    rng = np.random.default_rng(14)
    cases = [np.arange(200, dtype=float),                     # smooth ramp: little pruning
             np.zeros(200),                                    # all ties
             rng.poisson(3, 200) * rng.integers(0, 2, 200),    # sparse counts
             rng.normal(0, 10, 200).cumsum()]                  # random walk
    for x in cases:
        for k in (1, 7, 25):
            _, c1 = P.voptimal(x, k, engine=engine)
            _, c2 = P.voptimal_reference(x, k)
            assert c1 == pytest.approx(c2, rel=1e-9, abs=1e-6)


def test_domain_order_sse_violates_quadrangle_inequality():
    """Why no Knuth/D&C speed-up is used in domain order: QI fails on real-looking data."""
    rng = np.random.default_rng(1)
    viol = 0
    for _ in range(2000):
        x = rng.integers(0, 20, 12)
        a, b, c, d = np.sort(rng.choice(np.arange(13), 4, replace=False))
        w = lambda i, j: P.partition_cost(x, [i, j]) if j > i else 0.0  # noqa: E731
        if w(a, c) + w(b, d) > w(a, d) + w(b, c) + 1e-9:
            viol += 1
    assert viol > 100


def test_sorted_sse_satisfies_quadrangle_inequality():
    rng = np.random.default_rng(2)
    for _ in range(2000):
        x = np.sort(rng.integers(0, 20, 12))
        a, b, c, d = np.sort(rng.choice(np.arange(13), 4, replace=False))
        w = lambda i, j: P.partition_cost(x, [i, j]) + 3.0 / (j - i) - 2.0 * (j - i)  # noqa: E731
        assert w(a, c) + w(b, d) <= w(a, d) + w(b, c) + 1e-9


def _group_cost(x, e, lin, inv, per):
    e = np.asarray(e)
    m = np.diff(e)
    return P.partition_cost(x, e) + float((lin * m + inv / m + per).sum())


@pytest.mark.parametrize("engine", ENGINES)
def test_sorted_grouping_fixed_k_equals_brute_force(engine):
    rng = np.random.default_rng(15)
    for _ in range(200):
        x, k = random_instance(rng)
        x = np.sort(x)
        lin, inv, per = float(rng.normal(0, 3)), float(rng.uniform(0, 20)), float(rng.normal(0, 3))
        best = brute_force(x, k, lambda e: _group_cost(x, e, lin, inv, per))
        edges, cost = P.sorted_grouping(x, k=k, size_linear=lin, size_inverse=inv,
                                        per_group=per, engine=engine)
        assert cost == pytest.approx(best, rel=1e-9, abs=1e-7)
        assert _group_cost(x, edges, lin, inv, per) == pytest.approx(best, rel=1e-9, abs=1e-7)


@pytest.mark.parametrize("engine", ENGINES)
def test_sorted_grouping_free_k_equals_brute_force(engine):
    rng = np.random.default_rng(16)
    for _ in range(200):
        x, _ = random_instance(rng)
        x = np.sort(x)
        lin, inv, per = float(rng.normal(0, 3)), float(rng.uniform(0, 20)), float(rng.normal(0, 3))
        best = min(brute_force(x, k, lambda e: _group_cost(x, e, lin, inv, per))
                   for k in range(1, len(x) + 1))
        edges, cost = P.sorted_grouping(x, size_linear=lin, size_inverse=inv, per_group=per,
                                        engine=engine)
        assert cost == pytest.approx(best, rel=1e-9, abs=1e-7)
        assert _group_cost(x, edges, lin, inv, per) == pytest.approx(best, rel=1e-9, abs=1e-7)


@pytest.mark.parametrize("x, k, match", [
    ([], 1, "empty"),
    ([1.0, np.nan], 1, "finite"),
    ([1, 2, 3], 4, "k must be <= the number of bins n=3, got 4"),
    ([1, 2, 3], 0, "k must be >= 1"),
    ([[1, 2]], 1, "1-dimensional"),
])
def test_voptimal_bad_input(x, k, match):
    with pytest.raises(ParameterError, match=match):
        P.voptimal(x, k)


def test_sorted_grouping_rejects_unsorted_and_concave_size_term():
    with pytest.raises(ParameterError, match="sorted"):
        P.sorted_grouping([3, 1, 2])
    with pytest.raises(ParameterError, match="size_inverse"):
        P.sorted_grouping([1, 2, 3], size_inverse=-1.0)


def test_unknown_engine_has_did_you_mean():
    with pytest.raises(ParameterError, match="did you mean 'numba'"):
        P.voptimal([1, 2], 1, engine="numbaa")


def test_numpy_fallback_used_without_numba(monkeypatch):
    monkeypatch.setattr(P, "HAVE_NUMBA", False)
    with pytest.raises(ParameterError, match="numba is not installed"):
        P.voptimal([1, 2, 3], 2, engine="numba")
    edges, cost = P.voptimal([1, 1, 9], 2)  # auto -> numpy
    assert edges.tolist() == [0, 2, 3] and cost == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("engine", ENGINES)
def test_size_penalty_pruning_keeps_the_penalised_argmin(engine):
    rng = np.random.default_rng(17)
    for _ in range(60):
        n = int(rng.integers(2, 40))
        x = rng.normal(0, 5, n) + np.repeat(rng.integers(0, 50, 4), 10)[:n]
        lam = float(rng.uniform(0.1, 200))
        _, full, _ = P.voptimal_table(x, n, full=False, engine=engine)
        _, pruned, _ = P.voptimal_table(x, n, full=False, engine=engine, size_penalty=lam)
        ks = np.arange(1, n + 1)
        assert np.argmin(full[1:] + lam * ks) == np.argmin(pruned[1:] + lam * ks)
        done = np.isfinite(pruned[1:])
        np.testing.assert_allclose(pruned[1:][done], full[1:][done], rtol=1e-12, atol=1e-9)
