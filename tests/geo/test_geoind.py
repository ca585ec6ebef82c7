"""Planar Laplace mechanisms, the consistent obfuscator, the LP baseline and the metrics."""

import math

import numpy as np
import pytest
from scipy import stats

from veil.budget import GeoDP
from veil.distances import haversine_m
from veil.errors import InstanceTooLargeError, ParameterError
from veil.geo.geoind import (ConsistentObfuscator, discretization_epsilon,
                             discretized_planar_laplace, planar_laplace, planar_laplace_xy)
from veil.geo.geometry import Box, Disc, Grid, LocalProjection
from veil.geo.lp import greedy_spanner, optimal_mechanism_lp
from veil.geo.metrics import (adversary_error, distance_errors, error_summary,
                              expected_loss_of_channel, laplace_radius_cdf,
                              laplace_radius_quantile, planar_laplace_channel)
from veil.random import make_rng


def test_planar_laplace_release_and_distance_distribution():
    rng = make_rng(seed=1)
    pts = np.column_stack((rng.uniform(-60, 60, 50_000), rng.uniform(-179, 179, 50_000)))
    rel = planar_laplace(pts, epsilon=0.01, rng=rng)
    assert rel.mechanism == "planar-laplace" and rel.parameters["epsilon_per_metre"] == 0.01
    corr = rel.budget_split["float64 snapping correction"]
    assert rel.budget == GeoDP(0.01 + corr) and 0 < corr < 1e-6
    assert rel.value.shape == pts.shape
    d = haversine_m(pts[:, 0], pts[:, 1], rel.value[:, 0], rel.value[:, 1])
    # alpha 1e-6; power: the same test rejects a 1.3x scale
    assert stats.kstest(d, lambda r: laplace_radius_cdf(r, 0.01)).pvalue > 1e-6
    assert stats.kstest(d, lambda r: laplace_radius_cdf(r, 0.013)).pvalue < 1e-6
    assert rel.expected_error["mean_distance_m"] == 200.0
    assert "epsilon_per_metre" in rel.metadata()["parameters"]


def test_numba_and_numpy_kernels_agree():
    from veil.geo._kernels import _HAVE_NUMBA, polar_destination
    rng = make_rng(seed=2)
    n = 30_000
    lat, lon = rng.uniform(-89, 89, n), rng.uniform(-180, 180, n)
    r, t = rng.gamma(2, 5000.0, n), rng.uniform(0, 2 * np.pi, n)
    a = polar_destination(lat, lon, r, np.cos(t), np.sin(t), 6_371_008.8)
    assert np.max(np.abs(haversine_m(lat, lon, a[0], a[1]) - r)) < 1e-6
    from veil.geo._kernels import displace_turn, planar_laplace_draws
    u, f = planar_laplace_draws(n, rng)
    eps = 1e-4                      # long displacements too: mean 20 km, some beyond 12 km
    lat[:50] = rng.uniform(89.5, 90, 50)     # near the pole: the general path
    lat[50:100] = -89.99
    lon[100:200] = 179.9999                  # across the antimeridian
    th = 2 * np.pi * u - np.pi
    ref = polar_destination(lat, lon, -f / eps, np.cos(th), np.sin(th), 6_371_008.8)
    for flag in ([False, True] if _HAVE_NUMBA else [False]):
        c = displace_turn(np.column_stack((lat, lon)), u, f, eps, 6_371_008.8, use_numba=flag).T
        assert np.max(np.abs(c[0] - ref[0])) < 1e-9
        assert np.max(np.abs(((c[1] - ref[1] + 180) % 360) - 180)) < 1e-9
        assert np.all((c[1] >= -180) & (c[1] < 180))
    # short displacements (the vectorized series path) agree to float64 rounding
    m = slice(200, None)
    c = displace_turn(np.column_stack((lat[m], lon[m])), u[m], f[m], 0.01, 6_371_008.8).T
    ref = polar_destination(lat[m], lon[m], -f[m] / 0.01, np.cos(th[m]), np.sin(th[m]),
                            6_371_008.8)
    assert np.max(np.abs(c[0] - ref[0])) < 1e-12
    assert np.max(np.abs(((c[1] - ref[1] + 180) % 360) - 180)) < 1e-12


def test_turn_kernel_polynomials_match_libm():
    from veil.geo._kernels import _COS, _SIN
    x = np.linspace(-np.pi / 2, np.pi / 2, 200_001)
    y = x * x
    sin_p = x * np.polynomial.polynomial.polyval(y, _SIN)
    cos_p = np.polynomial.polynomial.polyval(y, _COS)
    assert np.max(np.abs(sin_p - np.sin(x))) < 4e-16
    assert np.max(np.abs(cos_p - np.cos(x))) < 4e-16
    # a power short, the error is visible: the check can fail
    assert np.max(np.abs(x * np.polynomial.polynomial.polyval(y, _SIN[:-2]) - np.sin(x))) > 1e-14


@pytest.mark.parametrize("points,eps,msg", [
    ([[91.0, 0.0]], 0.01, "latitude must be in"),
    ([[np.nan, 0.0]], 0.01, "finite"),
    ([[0.0, 200.0]], 0.01, "longitude"),
    ([[0.0, 0.0]], 0.0, "epsilon"),
    ([[0.0, 0.0]], -1.0, "epsilon"),
    ([[0.0, 0.0]], float("nan"), "epsilon"),
    ([0.0, 0.0, 0.0], 0.01, "shape"),
])
def test_planar_laplace_bad_input(points, eps, msg):
    with pytest.raises(ParameterError, match=msg):
        planar_laplace(points, epsilon=eps)


def test_planar_laplace_xy_and_bad():
    rel = planar_laplace_xy(np.zeros((10, 2)), epsilon=0.1, rng=make_rng(seed=0))
    assert rel.value.shape == (10, 2)
    with pytest.raises(ParameterError):
        planar_laplace_xy([[np.nan, 0.0]], epsilon=0.1)


def test_discretized_release_records_eps_prime_and_stays_on_grid():
    proj = LocalProjection(39.9, 116.4)
    region = Disc((0.0, 0.0), 2000.0)
    rng = make_rng(seed=3)
    pts = proj.points_to_latlon(rng.uniform(-1000, 1000, size=(5000, 2)))
    rel = discretized_planar_laplace(pts, epsilon=0.005, grid_step=25.0, region=region,
                                     projection=proj, rng=rng)
    eps_p = discretization_epsilon(0.005, 25.0, 4000.0)
    assert rel.epsilon == eps_p and eps_p > 0.005
    assert rel.parameters["epsilon_prime"] == eps_p
    xy = proj.points_to_plane(rel.value)
    assert region.contains(xy).all()
    g = region.grid(25.0)
    assert np.isin(g.cell_of(xy), np.flatnonzero(region.contains(g.centers))).all()
    assert np.max(np.abs((xy - 12.5) / 25.0 - np.round((xy - 12.5) / 25.0))) < 1e-6


@pytest.mark.parametrize("kwargs,msg", [
    (dict(grid_step=0.0), "grid_step"),
    (dict(grid_step=1e-12), "too fine"),
    (dict(region="box"), "region must be a Region"),
    (dict(epsilon=0.0), "epsilon"),
])
def test_discretized_bad_input(kwargs, msg):
    base = dict(epsilon=0.01, grid_step=10.0, region=Box(-100, -100, 100, 100),
                projection=LocalProjection(0.0, 0.0))
    base.update(kwargs)
    with pytest.raises(ParameterError, match=msg):
        discretized_planar_laplace([[0.0, 0.0]], **base)


def test_discretized_region_smaller_than_a_cell():
    with pytest.raises(ParameterError, match="empty after discretization"):
        discretized_planar_laplace([[0.0, 0.0]], epsilon=0.01, grid_step=100.0,
                                   region=Disc((50.0, 50.0), 1.0),
                                   projection=LocalProjection(0.0, 0.0))


def test_consistent_obfuscator_defeats_averaging():
    ob = ConsistentObfuscator(epsilon=0.01, window_s=3600.0, key=b"k" * 32)
    pts = np.tile([45.0, 7.0], (1000, 1))
    rel = ob.obfuscate(pts, t=np.linspace(0, 3599, 1000))
    assert np.unique(rel.value, axis=0).shape[0] == 1          # one report per window
    later = ob.obfuscate(pts[:2], t=[3600.0, 7300.0]).value
    assert not np.array_equal(later[0], later[1])
    # the per-window reports are planar Laplace draws around the public cell centre
    # (KS at alpha 1e-6; power: the same test rejects a 1.3x scale)
    many = ob.obfuscate(np.tile([45.0, 7.0], (20_000, 1)), t=np.arange(20_000) * 3600.0).value
    r, c = ob.cells.cell_of([45.0], [7.0])
    clat, clon = ob.cells.centre(r, c)
    d = haversine_m(clat[0], clon[0], many[:, 0], many[:, 1])
    assert stats.kstest(d, lambda x: laplace_radius_cdf(x, 0.01)).pvalue > 1e-6
    assert stats.kstest(d, lambda x: laplace_radius_cdf(x, 0.013)).pvalue < 1e-6
    other = ConsistentObfuscator(epsilon=0.01, window_s=3600.0, key=b"x" * 32)
    assert not np.array_equal(other.obfuscate(pts[:1], t=[0.0]).value, rel.value[:1])
    # users are keyed separately: two users at the same place get independent reports
    two = ob.obfuscate(pts[:2], t=[0.0, 0.0], user=["ann", "bob"]).value
    assert not np.array_equal(two[0], two[1])
    with pytest.raises(ParameterError):
        ConsistentObfuscator(epsilon=0.01, window_s=0.0)
    with pytest.raises(ParameterError):
        ob.obfuscate(pts[:2], t=[0.0, np.nan])


# ---------------------------------------------------------------- LP baseline
def test_lp_two_points_closed_form():
    d, eps = 100.0, 0.01
    m = optimal_mechanism_lp([[0, 0], [d, 0]], epsilon=eps)
    a = math.exp(eps * d) / (1 + math.exp(eps * d))
    assert m.channel[0, 0] == pytest.approx(a, abs=1e-7)
    assert m.expected_loss == pytest.approx(d / (1 + math.exp(eps * d)), abs=1e-6)


def test_lp_geo_ind_constraints_and_spanner():
    X = Grid(0, 0, 400, 400, 4, 4).centers
    full = optimal_mechanism_lp(X, epsilon=0.01)
    span = optimal_mechanism_lp(X, epsilon=0.01, spanner_dilation=1.2)
    assert full.max_violation < 1e-6 and span.max_violation < 1e-6
    assert span.expected_loss >= full.expected_loss - 1e-7
    assert span.n_constraints < full.n_constraints
    assert np.allclose(full.channel.sum(axis=1), 1.0)
    # loss recomputed from the channel matches the objective
    assert expected_loss_of_channel(full.channel, np.full(16, 1 / 16), X, X) == \
        pytest.approx(full.expected_loss, rel=1e-6)
    out = full.sample([0, 1, 2], rng=make_rng(seed=0))
    assert out.shape == (3, 2)


def test_greedy_spanner_dilation_holds():
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import shortest_path
    rng = make_rng(seed=4)
    X = rng.uniform(0, 100, size=(40, 2))
    for dil in (1.1, 1.5, 2.0):
        e = greedy_spanner(X, dil)
        w = np.hypot(*(X[e[:, 0]] - X[e[:, 1]]).T)
        G = csr_matrix((w, (e[:, 0], e[:, 1])), shape=(40, 40))
        sp = shortest_path(G, directed=False)
        D = np.hypot(X[:, None, 0] - X[None, :, 0], X[:, None, 1] - X[None, :, 1])
        assert np.all(sp <= dil * D + 1e-9)
    with pytest.raises(ParameterError):
        greedy_spanner(X, 0.5)


def test_lp_refuses_too_large():
    with pytest.raises(InstanceTooLargeError):
        optimal_mechanism_lp(np.zeros((50, 2)) + np.arange(50)[:, None], epsilon=0.1,
                             max_variables=100)


# ---------------------------------------------------------------- metrics
def test_metrics():
    assert laplace_radius_quantile(0.5, 0.01) == pytest.approx(167.834699, rel=1e-6)
    p = np.array([0.1, 0.5, 0.9])
    assert np.allclose(laplace_radius_cdf(laplace_radius_quantile(p, 0.02), 0.02), p)
    e = distance_errors([[0, 0], [0, 0]], [[3, 4], [0, 0]], latlon=False)
    assert e.tolist() == [5.0, 0.0]
    s = error_summary(np.arange(101.0))
    assert s["q50"] == 50 and s["mean"] == 50
    with pytest.raises(ParameterError):
        error_summary([])


def test_adversary_error_brute_force():
    rng = make_rng(seed=5)
    X = rng.uniform(0, 300, size=(6, 2))
    pi = rng.dirichlet(np.ones(6))
    K = rng.dirichlet(np.ones(6), size=6)
    got = adversary_error(K, pi, X)["adversary_error"]
    D = np.hypot(X[:, None, 0] - X[None, :, 0], X[:, None, 1] - X[None, :, 1])
    want = 0.0
    for z in range(6):
        want += min(sum(pi[x] * K[x, z] * D[x, g] for x in range(6)) for g in range(6))
    assert got == pytest.approx(want)
    # more noise never helps the adversary
    Kl = planar_laplace_channel(X, X, 100.0, 0.1)
    Kh = planar_laplace_channel(X, X, 100.0, 0.001)
    assert adversary_error(Kh, pi, X)["adversary_error"] >= adversary_error(Kl, pi, X)["adversary_error"]


@pytest.mark.parametrize("eps,step,r_max", [(1.0, 1000.0, 20_000.0), (0.5, 2000.0, 1e5),
                                            (1e3, 1.0, 10.0)])
def test_discretization_epsilon_large_eps_step_is_a_parameter_error(eps, step, r_max):
    """eps * step beyond exp()'s range gave OverflowError (issue 16, defect 3)."""
    with pytest.raises(ParameterError, match="grid_step"):
        discretization_epsilon(eps, step, r_max)
