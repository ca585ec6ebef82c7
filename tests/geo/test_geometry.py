"""Geometry: projection round trips, distance fidelity, grids and region membership."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from veil.distances import haversine_m
from veil.errors import ParameterError
from veil.geo.geometry import (Box, Disc, Grid, LocalProjection, Polygon, aeqd_forward,
                               aeqd_inverse, as_region, check_latlon, destination)
from veil.random import make_rng


@pytest.mark.parametrize("lat0,lon0", [(0.0, 0.0), (48.8566, 2.3522), (39.9, 116.4),
                                       (-33.9, 151.2), (78.2, 15.6), (10.0, 179.9)])
def test_round_trip_centimetres_within_100km(lat0, lon0):
    rng = make_rng(seed=1)
    proj = LocalProjection(lat0, lon0)
    r = 100_000 * np.sqrt(rng.uniform(size=2000))
    t = rng.uniform(0, 2 * np.pi, 2000)
    x, y = r * np.cos(t), r * np.sin(t)
    lat, lon = proj.to_latlon(x, y)
    x2, y2 = proj.to_plane(lat, lon)
    assert np.max(np.hypot(x2 - x, y2 - y)) < 1e-6  # far below a centimetre
    # distance and bearing from the centre are exact: the norm is the haversine distance
    d = haversine_m(lat0, lon0, lat, lon)
    assert np.max(np.abs(d - np.hypot(x, y))) < 1e-6
    lat3, lon3 = proj.to_latlon(x2, y2)
    assert np.max(np.abs(lat3 - lat)) < 1e-10


def test_local_distances_match_haversine_to_centimetres():
    # pairs of points a few hundred metres apart anywhere within 100 km of the centre
    rng = make_rng(seed=2)
    proj = LocalProjection(45.0, 7.0)
    p = rng.uniform(-70_000, 70_000, size=(500, 2))
    q = p + rng.uniform(-300, 300, size=(500, 2))
    la1, lo1 = proj.to_latlon(p[:, 0], p[:, 1])
    la2, lo2 = proj.to_latlon(q[:, 0], q[:, 1])
    planar = np.hypot(*(p - q).T)
    assert np.max(np.abs(haversine_m(la1, lo1, la2, lo2) - planar)) < 0.02


def test_known_values_and_destination():
    x, y = aeqd_forward(0.0, 0.0, 0.0, 1.0)
    assert x == pytest.approx(2 * math.pi * 6_371_008.8 / 360, rel=1e-12)
    assert abs(y) < 1e-6
    lat, lon = destination(np.array([45.0, -45.0]), np.array([7.0, 7.0]), [0.0, 0.0], [1000.0, -1000.0])
    assert haversine_m(45.0, 7.0, lat[0], lon[0]) == pytest.approx(1000.0, abs=1e-6)
    assert lat[0] > 45.0 and lat[1] < -45.0


def test_antimeridian_wrap():
    lat, lon = aeqd_inverse(0.0, 179.9999, 100.0, 0.0)
    assert -180.0 <= lon[()] < 180.0
    x, y = aeqd_forward(0.0, 179.9999, lat, lon)
    assert abs(x - 100.0) < 1e-6


@pytest.mark.parametrize("lat,lon,msg", [
    ([91.0], [0.0], "latitude must be in"),
    ([-90.5], [0.0], "latitude must be in"),
    ([0.0], [181.0], "longitude must be in"),
    ([np.nan], [0.0], "latitude must be finite"),
    ([0.0], [np.inf], "longitude must be finite"),
    ([0.0, 1.0], [0.0], "shape"),
])
def test_bad_latlon(lat, lon, msg):
    with pytest.raises(ParameterError, match=msg):
        check_latlon(lat, lon)
    with pytest.raises(ParameterError):
        LocalProjection(0.0, 0.0).to_plane(lat, lon)


def test_grid_cells_and_centres_brute_force():
    g = Grid(-10.0, 5.0, 30.0, 25.0, 8, 4)
    rng = make_rng(seed=3)
    pts = rng.uniform([-20, 0], [40, 30], size=(3000, 2))
    idx = g.cell_of(pts)
    c = g.centers
    for k in range(len(pts)):
        x, y = pts[k]
        inside = -10 <= x <= 30 and 5 <= y <= 25
        if not inside:
            assert idx[k] == -1
        else:
            # the containing cell's centre is within half a step on each axis
            assert abs(c[idx[k], 0] - x) <= 2.5 + 1e-9 and abs(c[idx[k], 1] - y) <= 2.5 + 1e-9
    snapped = g.snap(pts)
    assert np.isin(snapped[:, 0], c[:, 0]).all()
    assert g.cell_of([[30.0, 25.0]])[0] == g.n_cells - 1
    assert g.cell_area == 25.0 and g.shape == (4, 8)


def test_grid_from_step_and_bad():
    g = Grid.from_step(0, 0, 95, 40, 10)
    assert (g.nx, g.ny) == (10, 4) and g.x1 == 100
    with pytest.raises(ParameterError, match="x1 must be > x0"):
        Grid(1, 0, 1, 1, 2, 2)
    with pytest.raises(ParameterError, match="nx"):
        Grid(0, 0, 1, 1, 0, 2)
    with pytest.raises(ParameterError, match="step"):
        Grid.from_step(0, 0, 1, 1, -1.0)


def _triangle_contains(tri, p):
    a, b, c = tri
    def s(u, v, w):
        return (u[0] - w[0]) * (v[1] - w[1]) - (v[0] - w[0]) * (u[1] - w[1])
    d1, d2, d3 = s(p, a, b), s(p, b, c), s(p, c, a)
    return not ((d1 < 0 or d2 < 0 or d3 < 0) and (d1 > 0 or d2 > 0 or d3 > 0))


def test_polygon_membership_against_triangulation():
    # a non-convex "arrow" made of two triangles
    verts = [[0, 0], [4, 2], [0, 4], [1, 2]]
    poly = Polygon(verts)
    tris = [((0, 0), (4, 2), (1, 2)), ((1, 2), (4, 2), (0, 4))]
    area_tri = sum(abs((b[0] - a[0]) * (c[1] - a[1]) - (c[0] - a[0]) * (b[1] - a[1])) / 2
                   for a, b, c in tris)
    assert poly.area == pytest.approx(area_tri)
    rng = make_rng(seed=4)
    pts = rng.uniform(-0.5, 4.5, size=(4000, 2))
    got = poly.contains(pts)
    want = np.array([any(_triangle_contains(t, p) for t in tris) for p in pts])
    assert (got == want).mean() > 0.999  # only boundary ties may differ
    # Monte Carlo area agrees
    s = poly.sample_uniform(20000, rng=rng)
    assert poly.contains(s).all()


def test_disc_box_area_contains_sampling():
    d = Disc((10.0, -5.0), 3.0)
    assert d.area == pytest.approx(math.pi * 9)
    rng = make_rng(seed=5)
    s = d.sample_uniform(50000, rng=rng)
    assert d.contains(s).all()
    # uniform: mean squared radius is r^2 / 2
    assert np.mean(np.sum((s - d.center) ** 2, axis=1)) == pytest.approx(4.5, rel=0.02)
    b = Box(0, 0, 2, 1)
    assert b.area == 2 and b.diameter == pytest.approx(math.sqrt(5))
    assert b.contains([[1, 0.5], [3, 0.5]]).tolist() == [True, False]
    assert as_region(b.to_dict()).area == 2
    assert as_region(d.to_dict()).radius == 3
    assert as_region(Polygon([[0, 0], [1, 0], [0, 1]]).to_dict()).area == pytest.approx(0.5)


@pytest.mark.parametrize("make,msg", [
    (lambda: Disc((0, 0), 0.0), "empty region"),
    (lambda: Disc((0, 0), -1.0), "radius"),
    (lambda: Box(0, 0, 0, 1), "empty"),
    (lambda: Polygon([[0, 0], [1, 1], [2, 2]]), "empty"),
    (lambda: Polygon([[0, 0], [1, 1]]), "m >= 3"),
    (lambda: Polygon([[0, 0], [1, np.nan], [2, 0]]), "finite"),
    (lambda: as_region({"type": "hexagon"}), "unknown type"),
])
def test_empty_or_bad_regions(make, msg):
    with pytest.raises(ParameterError, match=msg):
        make()


@settings(max_examples=200, deadline=None)
@given(lat0=st.floats(-85, 85), lon0=st.floats(-180, 179.999), r=st.floats(0, 100_000),
       t=st.floats(0, 2 * math.pi))
def test_round_trip_property(lat0, lon0, r, t):
    proj = LocalProjection(lat0, lon0)
    x, y = r * math.cos(t), r * math.sin(t)
    lat, lon = proj.to_latlon([x], [y])
    x2, y2 = proj.to_plane(lat, lon)
    assert math.hypot(x2[0] - x, y2[0] - y) < 1e-5
    assert abs(haversine_m(lat0, lon0, lat[0], lon[0]) - r) < 1e-5
