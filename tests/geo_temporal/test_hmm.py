"""HMM forward filter, delta-location set and surrogate against brute force."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from veil.errors import ParameterError
from veil.geo.temporal import (brute_force_filter, delta_location_set, forward_filter,
                               nearest_in_set, posterior_update)
from veil.random import make_rng


def _brute_delta_set_size(p, delta):
    """Smallest subset size with mass >= 1 - delta by enumerating all subsets."""
    n = len(p)
    for k in range(1, n + 1):
        best = max(sum(p[list(c)]) for c in itertools.combinations(range(n), k))
        if best >= (1 - delta) * p.sum() * (1 - 1e-12):
            return k, best
    return n, p.sum()


def test_paper_example():
    p = [0.3, 0.4, 0.05, 0.2, 0.03, 0.02]
    assert delta_location_set(p, 0.1).tolist() == [1, 0, 3]
    assert delta_location_set(p, 0.05).tolist() == [1, 0, 3, 2]


@pytest.mark.parametrize("seed", range(20))
def test_delta_set_is_smallest_and_most_probable(seed):
    rng = make_rng(seed=seed)
    n = int(rng.integers(1, 10))
    p = rng.random(n) * (rng.random(n) < 0.7)
    if p.sum() == 0:
        p[0] = 1.0
    delta = float(rng.uniform(0.01, 0.5))
    s = delta_location_set(p, delta)
    k, best = _brute_delta_set_size(p, delta)
    assert s.size == k
    assert p[s].sum() == pytest.approx(best)
    assert (p[s] > 0).all()


def test_delta_set_ties_broken_by_index():
    assert delta_location_set([0.25, 0.25, 0.25, 0.25], 0.5).tolist() == [0, 1]


@pytest.mark.parametrize("bad,delta,match", [
    ([0.5, 0.5], 0.0, "delta"), ([0.5, 0.5], 1.0, "delta"), ([0.5, 0.5], np.nan, "delta"),
    ([0.5, np.nan], 0.1, "prior"), ([-0.1, 1.1], 0.1, "prior"), ([0.0, 0.0], 0.1, "prior"),
])
def test_delta_set_bad_input(bad, delta, match):
    with pytest.raises(ParameterError, match=match):
        delta_location_set(bad, delta)


@pytest.mark.parametrize("seed", range(10))
def test_nearest_in_set_matches_brute_force_with_lowest_index_ties(seed):
    rng = make_rng(seed=seed)
    set_pts = rng.integers(0, 6, size=(int(rng.integers(1, 30)), 2)).astype(float)
    set_pts = np.unique(set_pts, axis=0)
    rng.shuffle(set_pts)
    q = rng.integers(-2, 8, size=(200, 2)).astype(float)
    got = nearest_in_set(q, set_pts)
    d2 = ((q[:, None] - set_pts[None]) ** 2).sum(axis=2)
    want = np.argmax(d2 == d2.min(axis=1, keepdims=True), axis=1)
    np.testing.assert_array_equal(got, want)
    # one query at a time gives the same answer as the batch (release vs likelihood)
    for i in range(0, 200, 37):
        assert nearest_in_set(q[i], set_pts)[0] == got[i]


@pytest.mark.parametrize("seed", range(6))
def test_forward_filter_equals_brute_force_bayes(seed):
    rng = make_rng(seed=seed)
    m, t_len = 3, 5
    mat = rng.random((m, m)) * (rng.random((m, m)) < 0.8)
    mat[np.arange(m), np.arange(m)] += 0.1
    mat /= mat.sum(axis=1, keepdims=True)
    p0 = rng.random(m)
    lik = rng.random((t_len, m)) + 0.01
    _, post = forward_filter(p0, mat, np.log(lik))
    np.testing.assert_allclose(post[-1], brute_force_filter(p0, mat, lik), rtol=1e-10)
    for t in range(1, t_len + 1):
        np.testing.assert_allclose(post[t - 1], brute_force_filter(p0, mat, lik[:t]),
                                   rtol=1e-10)


def test_posterior_update_stable_for_far_observations():
    prior = np.array([0.5, 0.5, 0.0])
    post = posterior_update(prior, np.array([-2000.0, -2001.0, 0.0]))
    np.testing.assert_allclose(post, [1 / (1 + np.exp(-1)), np.exp(-1) / (1 + np.exp(-1)), 0])
