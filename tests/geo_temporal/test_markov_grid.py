"""Grid, Markov model and GeoLife loader."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from veil.datasets import shared_data_path
from veil.errors import DataError, ParameterError
from veil.geo.temporal import (MarkovModel, TemporalGrid, beijing_grid, load_geolife,
                               read_plt, to_cells, transition_counts)
from veil.random import make_rng

G = TemporalGrid(lat_min=39.0, lon_min=116.0, lat_max=39.05, lon_max=116.1, nx=10, ny=5)


def test_grid_cells_and_projection():
    assert G.n_cells == 50
    assert G.cell_of([39.0001], [116.0001])[0] == 0
    assert G.cell_of([39.0499], [116.0999])[0] == 49
    assert G.cell_of([39.015], [116.015])[0] == 1 * 10 + 1
    assert G.cell_of([39.0, 39.0], [np.nan, 117.0]).tolist() == [-1, -1]
    c = G.centers_m
    np.testing.assert_allclose(G.cell_of(*G.to_latlon(c).T), np.arange(50))
    w, h = G.cell_size_m
    np.testing.assert_allclose(c[1] - c[0], [w, 0], rtol=1e-12)
    np.testing.assert_allclose(c[10] - c[0], [0, h], rtol=1e-12)
    assert 800 < w < 900 and 1000 < h < 1200  # 0.01 deg lon at 39N, 0.01 deg lat


@pytest.mark.parametrize("kw,match", [
    (dict(lon_min=1, lat_min=0, lon_max=0, lat_max=1, nx=2, ny=2), "lon_min"),
    (dict(lon_min=0, lat_min=0, lon_max=1, lat_max=1, nx=0, ny=2), "nx"),
    (dict(lon_min=np.nan, lat_min=0, lon_max=1, lat_max=1, nx=2, ny=2), "lon_min"),
])
def test_grid_bad_parameters(kw, match):
    with pytest.raises(ParameterError, match=match):
        TemporalGrid(**kw)


def test_grid_parse():
    assert TemporalGrid.parse("beijing") == beijing_grid(50)
    assert TemporalGrid.parse("39,116,39.05,116.1,10,5") == G
    with pytest.raises(ParameterError, match="--grid"):
        TemporalGrid.parse("1,2,3")
    # the old lon-first order is refused with a hint, not silently swapped (issue 17, 7)
    with pytest.raises(ParameterError, match="latitude first"):
        TemporalGrid.parse("116,39,116.1,39.05,10,5")


def test_latlon_order_everywhere_and_old_callers_get_a_clear_error():
    """TemporalGrid used (lon, lat) while veil.geo uses (lat, lon) (issue 17, defect 7)."""
    lat, lon = 39.012, 116.034
    cell = int(G.cell_of([lat], [lon])[0])
    np.testing.assert_allclose(G.to_latlon(G.centers_m[[cell]])[0], [39.015, 116.035])
    xy = G.to_metres([lat], [lon])[0]
    np.testing.assert_allclose(G.to_latlon([xy])[0], [lat, lon], atol=1e-12)
    assert xy[0] < 0 and xy[1] < 0        # x east, y north from the centre (39.025, 116.05)
    assert G.origin == pytest.approx((39.025, 116.05))
    with pytest.raises(ParameterError, match=r"\(lat, lon\)"):
        G.cell_of([lon], [lat])           # longitudes first: a latitude of 116 degrees
    with pytest.raises(ParameterError, match=r"\(lat, lon\)"):
        G.to_metres([lon], [lat])
    small = TemporalGrid(lat_min=10.0, lon_min=20.0, lat_max=10.5, lon_max=20.5, nx=2, ny=2)
    with pytest.raises(ParameterError, match="swapped"):
        small.cell_of([20.1, 20.2], [10.1, 10.2])  # valid latitudes, but only inside swapped
    with pytest.warns(DeprecationWarning, match="to_latlon"):
        old = G.to_lonlat(G.centers_m[[cell]])
    np.testing.assert_allclose(old[0], [116.035, 39.015])


@pytest.mark.parametrize("seed", range(5))
def test_transition_counts_brute_force(seed):
    rng = make_rng(seed=seed)
    seqs = [rng.integers(-1, 6, size=rng.integers(0, 20)) for _ in range(4)]
    want = np.zeros((6, 6), dtype=np.int64)
    for s in seqs:
        for a, b in zip(s[:-1], s[1:]):
            if a >= 0 and b >= 0:
                want[a, b] += 1
    np.testing.assert_array_equal(transition_counts(seqs, 6).toarray(), want)


def test_model_rows_and_empty_row_policies():
    g = TemporalGrid(lon_min=0, lat_min=0, lon_max=0.03, lat_max=0.01, nx=3, ny=1)
    m = MarkovModel.from_trajectories([[0, 0, 1, 0]], grid=g)
    np.testing.assert_allclose(m.to_dense(), [[0.5, 0.5, 0], [1, 0, 0], [0, 0, 1]])
    assert sp.issparse(m.matrix)
    u = MarkovModel.from_trajectories([[0, 0, 1, 0]], grid=g, empty_rows="uniform")
    np.testing.assert_allclose(u.to_dense()[2], [1 / 3] * 3)
    s = MarkovModel.from_trajectories([[0, 0, 1, 0]], grid=g, smoothing=1.0)
    np.testing.assert_allclose(s.to_dense()[0], [2 / 3, 1 / 3, 0])
    p = np.array([0.2, 0.3, 0.5])
    np.testing.assert_allclose(m.step(p), p @ m.to_dense())
    with pytest.raises(ParameterError, match="empty_rows"):
        MarkovModel.from_trajectories([[0, 1]], grid=g, empty_rows="nope")
    with pytest.raises(ParameterError, match="sum to 1"):
        MarkovModel(grid=g, matrix=np.eye(3) * 0.5)
    with pytest.raises(DataError, match="cell indices"):
        transition_counts([[0, 7]], 3)


def test_model_save_load_and_grid_check(tmp_path):
    m = MarkovModel.from_trajectories([[0, 1, 2, 12, 13]], grid=G)
    path = m.save(tmp_path / "m.npz")
    m2 = MarkovModel.load(path)
    assert m2.grid == G
    np.testing.assert_array_equal(m2.to_dense(), m.to_dense())
    m2.check_grid(G)
    with pytest.raises(ParameterError, match="grid"):
        m2.check_grid(beijing_grid(50))
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    with pytest.raises(DataError, match="junk"):
        MarkovModel.load(tmp_path / "junk.npz")


def test_geolife_loader_on_shared_data():
    folder = shared_data_path("geolife", "geolife_long_10_MB")
    trs = load_geolife(folder)
    assert len(trs) == 111
    assert sum(len(t) for t in trs) == 164_531
    t0 = trs[0]
    assert t0.user == "000" and np.all(np.diff(t0.t) >= 0)
    assert 39 < np.median(t0.lat) < 41 and 115 < np.median(t0.lon) < 117
    cells = to_cells(t0, beijing_grid(50))
    assert cells.min() >= -1 and cells.max() < 2500


def test_read_plt_bad_file(tmp_path):
    p = tmp_path / "x.plt"
    p.write_text("h\n" * 6 + "39.9,116.3,0,10,abc,2008-10-23,02:53:04\n")
    with pytest.raises(DataError, match="x.plt"):
        read_plt(p)


def test_cell_order_matches_the_beijing_fixture():
    """locQuery.txt (PIM demo fixture) maps state k to (x, y) = (k % 50, k // 50): row-major
    from the south-west, as our cell numbering."""
    q = np.loadtxt(shared_data_path("geolife", "beijing_grid", "locQuery.txt"), dtype=np.int64)
    assert q.shape == (2, 2500)
    g = beijing_grid(50)
    latlon = g.to_latlon(g.centers_m)
    col = np.floor((latlon[:, 1] - g.lon_min) / (g.lon_max - g.lon_min) * 50).astype(int)
    row = np.floor((latlon[:, 0] - g.lat_min) / (g.lat_max - g.lat_min) * 50).astype(int)
    np.testing.assert_array_equal(col, q[0])
    np.testing.assert_array_equal(row, q[1])
