"""Conformance of the samplers at alpha = 1e-6, each with a power check.

Seeded (experiments), so the outcome is reproducible; a correct sampler fails
with probability at most 1e-6 per test, and every test is shown to reject a
deliberately wrong distribution with the same sample size.
"""

import math

import numpy as np
import pytest
from scipy import stats

from veil.audit import conformance_chi2, conformance_ks
from veil.errors import ParameterError
from veil.samplers import (discrete_laplace, discrete_laplace_pmf, dyadic_scale,
                           planar_laplace_noise, polygon_area, uniform_in_convex_polygon)

ALPHA = 1e-6
N = 200_000


@pytest.mark.parametrize("scale", [0.3, 1.0, 3.7, 20.0])
def test_discrete_laplace_conforms_and_test_has_power(scale):
    g = np.random.default_rng(11)
    z = discrete_laplace(scale, N, g)
    assert z.dtype == np.int64
    support = np.arange(-int(12 * scale) - 5, int(12 * scale) + 6)
    res = conformance_chi2(z, lambda v: discrete_laplace_pmf(v, scale), support, ALPHA)
    assert res.passed, res
    for wrong in (0.7, 1.3):  # power: the same test rejects a wrong scale
        zw = discrete_laplace(scale * wrong, N, np.random.default_rng(11))
        assert not conformance_chi2(zw, lambda v: discrete_laplace_pmf(v, scale), support,
                                    ALPHA).passed


def test_dyadic_scale_rounds_up():
    for s in (0.1, 1 / 3, 1.0, 7.25, 1e6):
        num, den = dyadic_scale(s)
        assert num / den >= s and (num / den - s) / s < 1e-6
        assert num & (num - 1) == 0  # power of two
    with pytest.raises(ParameterError):
        dyadic_scale(0)


def test_discrete_laplace_shapes():
    g = np.random.default_rng(0)
    assert discrete_laplace(2.0, (3, 4), g).shape == (3, 4)
    assert isinstance(discrete_laplace(2.0, rng=g), int)


def test_planar_laplace_radius_and_angle_conform_with_power():
    eps = 0.02
    d = planar_laplace_noise(eps, N, np.random.default_rng(5))
    r = np.hypot(d[:, 0], d[:, 1])
    theta = np.arctan2(d[:, 1], d[:, 0])
    assert conformance_ks(r, stats.gamma(2, scale=1 / eps).cdf, ALPHA).passed
    assert conformance_ks(theta, stats.uniform(-np.pi, 2 * np.pi).cdf, ALPHA).passed
    g = np.random.default_rng(5)
    # power: Gamma(1) radius and a 1.3x scale are rejected
    assert not conformance_ks(g.gamma(1, 1 / eps, N), stats.gamma(2, scale=1 / eps).cdf,
                              ALPHA).passed
    assert not conformance_ks(g.gamma(2, 1.3 / eps, N), stats.gamma(2, scale=1 / eps).cdf,
                              ALPHA).passed
    # power: per-axis Laplace has the wrong radius law
    lap = g.laplace(0, 1 / eps, (N, 2))
    assert not conformance_ks(np.hypot(lap[:, 0], lap[:, 1]),
                              stats.gamma(2, scale=1 / eps).cdf, ALPHA).passed


def _region_counts(pts, poly):
    # counts in the fan triangles from vertex 0 (known areas)
    v0 = poly[0]
    out = []
    for i in range(1, len(poly) - 1):
        a, b = poly[i] - v0, poly[i + 1] - v0
        m = np.linalg.inv(np.column_stack((a, b)))
        lam = (pts - v0) @ m.T
        out.append(np.count_nonzero((lam[:, 0] >= 0) & (lam[:, 1] >= 0) & (lam.sum(1) <= 1)))
    return np.array(out)


def test_uniform_in_convex_polygon_area_weights_with_power():
    poly = np.array([[0, 0], [10, 0], [10, 1], [1, 3], [0, 1]], dtype=float)
    pts = uniform_in_convex_polygon(poly, N, np.random.default_rng(3))
    a = np.array([abs(polygon_area(np.array([poly[0], poly[i], poly[i + 1]])))
                  for i in range(1, len(poly) - 1)])
    p = a / a.sum()
    counts = _region_counts(pts, poly)
    assert counts.sum() == N
    assert stats.chisquare(counts, N * p).pvalue >= ALPHA
    # power: choosing the triangle uniformly (not by area) is rejected
    wrong = np.full(len(p), 1 / len(p))
    assert stats.chisquare(counts, N * wrong).pvalue < ALPHA
    # a second, finer check: x-coordinate distribution of a unit square is uniform
    sq = uniform_in_convex_polygon(np.array([[0, 0], [1, 0], [1, 1], [0, 1]]), N,
                                   np.random.default_rng(4))
    assert conformance_ks(sq[:, 0], stats.uniform(0, 1).cdf, ALPHA).passed
    assert conformance_ks(sq[:, 1], stats.uniform(0, 1).cdf, ALPHA).passed


@pytest.mark.parametrize("bad", [
    [[0, 0], [1, 0]],                                  # too few vertices
    [[0, 0], [1, 0], [2, 0]],                           # zero area
    [[0, 0], [2, 0], [1, 0.2], [2, 2], [0, 2]],         # not convex
    [[0, 0], [1, 0], [np.nan, 1]],
])
def test_uniform_polygon_bad_input(bad):
    with pytest.raises(ParameterError):
        uniform_in_convex_polygon(np.array(bad, dtype=float), 10)
