"""Exact poles (issue 16, defect 1): latitude +-90 is accepted, so the law must hold there.

At a pole every bearing is a meridian. The textbook destination formula cancels to 0/0 there
and put every output on two meridians (an unbounded privacy loss against a point nearby).
KS tests at alpha 1e-6 (unseeded is fine at that alpha; seeded here for reproducibility); the
power check applies the same tests to the old formula, which they must reject.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from veil.audit import conformance_ks
from veil.distances import EARTH_RADIUS_M, haversine_m
from veil.geo.audits import EPS, audit_pole
from veil.geo.geoind import ConsistentObfuscator, planar_laplace
from veil.geo.geometry import LocalProjection, destination
from veil.geo.metrics import laplace_radius_cdf
from veil.random import make_rng

ALPHA = 1e-6
_DEG = math.pi / 180


def _textbook_destination(lat, lon, dx, dy):
    """The formula veil used before: atan2(sa sc cp0, cc - sp0 sin(lat2)) (0/0 at a pole)."""
    p0, l0 = np.radians(lat), np.radians(lon)
    c, az = np.hypot(dx, dy) / EARTH_RADIUS_M, np.arctan2(dx, dy)
    sp0, cp0, sc, cc = np.sin(p0), np.cos(p0), np.sin(c), np.cos(c)
    num = sp0 * cc + cp0 * sc * np.cos(az)
    la = np.arctan2(num, np.hypot(cp0 * cc - sp0 * sc * np.cos(az), sc * np.sin(az)))
    lo = l0 + np.arctan2(np.sin(az) * sc * cp0, cc - sp0 * num)
    return np.degrees(la), np.degrees((lo + np.pi) % (2 * np.pi) - np.pi)


def _law_tests(lat0, out):
    lon_u = (out[:, 1] + 180.0) / 360.0
    r = haversine_m(np.full(len(out), lat0), np.zeros(len(out)), out[:, 0], out[:, 1])
    return (conformance_ks(lon_u, stats.uniform.cdf, ALPHA, "longitude"),
            conformance_ks(r, lambda x: laplace_radius_cdf(x, EPS), ALPHA, "distance"))


@pytest.mark.parametrize("lat0,lon0", [(90.0, 0.0), (90.0, 123.4), (-90.0, -45.0)])
@pytest.mark.parametrize("n", [5_000, 40_000])   # numpy path and numba path (with fallback)
def test_planar_laplace_law_at_the_pole(lat0, lon0, n):
    out = planar_laplace(np.tile([lat0, lon0], (n, 1)), epsilon=EPS, rng=make_rng(seed=n)).value
    for res in _law_tests(lat0, out):
        assert res.passed, res


def test_pole_law_tests_have_power():
    """The same KS tests reject the old formula's outputs and a Gamma(1) radius."""
    g = make_rng(seed=4)
    n = 5_000
    th, r = g.uniform(0, 2 * np.pi, n), g.gamma(2.0, 1 / EPS, n)
    la, lo = _textbook_destination(np.full(n, 90.0), np.zeros(n), r * np.cos(th), r * np.sin(th))
    lon_test, _ = _law_tests(90.0, np.column_stack((la, lo)))
    assert not lon_test.passed
    assert len(np.unique(np.round(lo, 6))) <= 2           # the defect: two meridians
    r1 = g.gamma(1.0, 1 / EPS, n)
    la, lo = destination(np.full(n, 90.0), np.zeros(n), r1 * np.cos(th), r1 * np.sin(th))
    _, dist_test = _law_tests(90.0, np.column_stack((la, lo)))
    assert not dist_test.passed


def test_destination_at_the_pole_keeps_distance_and_bearing():
    th = np.linspace(-np.pi, np.pi, 13)[:-1]
    la, lo = destination(np.full(th.size, 90.0), np.full(th.size, 10.0),
                         500 * np.sin(th), 500 * np.cos(th))          # bearing th, 500 m
    np.testing.assert_allclose(haversine_m(90.0, 10.0, la, lo), 500.0, rtol=1e-9)
    np.testing.assert_allclose(np.mod(lo - (10.0 + 180.0 - np.degrees(th)) + 180, 360) - 180,
                               0.0, atol=1e-9)                       # lon = lon0 + 180 - bearing
    la, lo = destination(np.full(th.size, -90.0), np.zeros(th.size),
                         500 * np.sin(th), 500 * np.cos(th))
    np.testing.assert_allclose(np.mod(lo - np.degrees(th) + 180, 360) - 180, 0.0, atol=1e-9)
    # round trip through the pole's own plane
    proj = LocalProjection(90.0, 0.0)
    x, y = proj.to_plane(la * -1, lo)                                  # north-pole mirror
    back = proj.to_latlon(x, y)
    np.testing.assert_allclose(back[0], -la, atol=1e-9)


def test_consistent_obfuscator_at_the_pole():
    ob = ConsistentObfuscator(epsilon=EPS, window_s=60.0, key=b"k" * 32)
    n = 4_000
    pts = np.column_stack((np.full(n, 90.0), np.zeros(n)))
    out = ob.obfuscate(pts, t=np.arange(n) * 60.0).value             # one window per point
    lon_test, dist_test = _law_tests(90.0, out)
    assert lon_test.passed and dist_test.passed


def test_ratio_audit_between_the_pole_and_a_point_100m_away():
    res = audit_pole("correct")
    assert res.passed, res.summary()
    assert res.eps_lower_bound > 0.7 * res.claimed_epsilon
    assert not audit_pole("half_scale").passed
