from __future__ import annotations

import numpy as np
import pytest

from veil.errors import ParameterError
from veil.geo.temporal import drift_ratio, euclidean_error, knn_precision_recall
from veil.random import make_rng


@pytest.mark.parametrize("k,kp", [(5, 5), (5, 3), (3, 8)])
def test_knn_precision_recall_brute_force(k, kp):
    rng = make_rng(seed=k * 10 + kp)
    pois = rng.random((40, 2)) * 100
    t = rng.random((30, 2)) * 100
    z = t + rng.normal(scale=10, size=t.shape)
    p, r = knn_precision_recall(t, z, pois, k=k, k_prime=kp)
    for i in range(30):
        a = set(np.argsort(np.hypot(*(pois - t[i]).T))[:k])
        b = set(np.argsort(np.hypot(*(pois - z[i]).T))[:kp])
        assert p[i] == pytest.approx(len(a & b) / kp)
        assert r[i] == pytest.approx(len(a & b) / k)


def test_exact_release_has_perfect_knn_and_zero_error():
    pts = make_rng(seed=1).random((10, 2))
    p, r = knn_precision_recall(pts, pts, pts * 3, k=2)
    assert (p == 1).all() and (r == 1).all()
    assert (euclidean_error(pts, pts) == 0).all()
    assert drift_ratio([True, False, False, False]) == 0.25


def test_metric_bad_input():
    with pytest.raises(ParameterError, match="k=5"):
        knn_precision_recall([[0, 0]], [[0, 0]], [[1, 1]], k=5)
    with pytest.raises(ParameterError, match="shape"):
        euclidean_error([[0, 0]], [[0, 0], [1, 1]])
    with pytest.raises(ParameterError, match="empty"):
        drift_ratio([])
