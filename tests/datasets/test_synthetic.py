"""Synthetic generators: determinism with a seed, shapes, value ranges, schema, correlations."""

from __future__ import annotations

import numpy as np
import pytest

from veil.datasets.synthetic import (
    CENSUS_COLUMNS,
    CENSUS_QUASI_IDENTIFIERS,
    CENSUS_SENSITIVE,
    category_tree,
    columns_to_arrow,
    mobility_model,
    synthetic_census,
    synthetic_checkins,
    synthetic_city,
    synthetic_trajectories,
)
from veil.errors import ParameterError
from veil.random import make_rng


@pytest.fixture(scope="module")
def city():
    return synthetic_city(n_pois=1500, rows=12, cols=15, seed=11)


# ---------------------------------------------------------------- category tree

def test_category_tree_structure():
    t = category_tree()
    assert len(set(t.names)) == t.n_nodes
    assert t.parent[0] == -1 and (t.parent[1:] >= 0).all()
    assert (t.parent[1:] < np.arange(1, t.n_nodes)).all()  # parents precede children
    assert t.n_leaves == int(t.is_leaf.sum()) > 40
    # every leaf's path starts at a top-level node and ends with the leaf itself
    for i in t.leaves:
        path = t.path(t.names[i])
        assert path[-1] == t.names[i]
        assert t.depth[t.index(path[0])] == 1
        assert len(path) == t.depth[i]
    # leaves_under agrees with path() for every internal node (brute force)
    for node in np.flatnonzero(~t.is_leaf)[1:]:
        name = t.names[node]
        brute = [k for k, leaf in enumerate(t.leaves) if name in t.path(t.names[leaf])]
        assert t.leaves_under(name).tolist() == brute
    assert t.leaves_under("Place").tolist() == list(range(t.n_leaves))
    assert sorted(t.edges())[:1] and len(t.edges()) == t.n_nodes - 1


def test_category_tree_sensitive_subtrees():
    t = category_tree()
    sens = set(t.leaf_names[t.sensitive_leaf_mask()])
    assert {"Mosque", "Church", "Synagogue", "Dentist", "Mental Health Clinic",
            "Emergency Room"} <= sens
    assert not {"Coffee Shop", "Park", "Office"} & sens
    only_rel = t.leaf_names[t.sensitive_leaf_mask(["Religious Places"])]
    assert set(only_rel) == {"Church", "Mosque", "Synagogue", "Temple", "Meditation Center"}
    top_names = {t.names[i] for i in t.top_level}
    assert "Health & Medicine" in top_names and "Religious Places" in top_names
    assert t.names[t.top_level[t.leaves_under("Clinic")[0]]] == "Health & Medicine"


def test_category_tree_unknown_name_suggests():
    with pytest.raises(ParameterError, match="did you mean 'Mosque'"):
        category_tree().index("Mosqe")


# ---------------------------------------------------------------- city

def test_city_is_deterministic_with_seed_and_varies_without():
    a = synthetic_city(n_pois=300, seed=5)
    b = synthetic_city(n_pois=300, seed=5)
    c = synthetic_city(n_pois=300, seed=6)
    for f in ("poi_lat", "poi_lon", "poi_category"):
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f))
    assert not np.array_equal(a.poi_lat, c.poi_lat)
    d = synthetic_city(n_pois=300, rng=make_rng(seed=5))
    np.testing.assert_array_equal(a.poi_lat, d.poi_lat)


def test_city_shapes_and_ranges(city):
    assert city.poi_lat.shape == city.poi_lon.shape == city.poi_category.shape == (1500,)
    assert city.poi_category.dtype == np.int64
    assert ((city.poi_lat >= city.south) & (city.poi_lat <= city.north)).all()
    assert ((city.poi_lon >= city.west) & (city.poi_lon <= city.east)).all()
    assert city.south < city.centre_lat < city.north and city.west < city.centre_lon < city.east
    assert ((city.poi_category >= 0) & (city.poi_category < city.categories.n_leaves)).all()
    # the box is 10 km x 8 km, cells are 12 x 15
    h, w = city.cell_size_m
    assert h * city.rows == pytest.approx(8000, rel=1e-9)
    assert w * city.cols == pytest.approx(10000, rel=1e-9)
    assert city.poi_counts().sum() == city.n_pois
    # POIs cluster: the busiest cell holds far more than the average
    assert city.poi_counts().max() > 4 * city.n_pois / city.n_cells


def test_city_cell_geometry(city):
    lat, lon = city.cell_centres()
    np.testing.assert_array_equal(city.cell_of(lat, lon), np.arange(city.n_cells))
    corners = city.cell_of([city.south, city.north, city.south - 1e-9, city.north],
                           [city.west, city.east, city.west, city.east + 1e-9])
    assert corners.tolist() == [0, city.n_cells - 1, -1, -1]
    x, y = city.to_local_m(city.centre_lat, city.centre_lon)
    assert abs(float(x)) < 1e-9 and abs(float(y)) < 1e-9
    x, y = city.to_local_m(city.north, city.east)
    assert float(x) == pytest.approx(5000, rel=1e-9) and float(y) == pytest.approx(4000, rel=1e-9)


@pytest.mark.parametrize("kwargs, match", [
    ({"n_pois": 0}, "n_pois must be >= 1"),
    ({"rows": 0}, "rows must be >= 1"),
    ({"cols": 2.5}, "cols must be an integer"),
    ({"width_km": -1.0}, "width_km must be > 0"),
    ({"height_km": float("nan")}, "height_km"),
    ({"centre": (95.0, 0.0)}, "centre must be"),
    ({"centre": (0.0, float("inf"))}, "centre"),
    ({"seed": -1}, "seed must be a non-negative integer"),
])
def test_city_bad_parameters(kwargs, match):
    with pytest.raises(ParameterError, match=match):
        synthetic_city(**kwargs)


# ---------------------------------------------------------------- mobility

def test_mobility_model_is_stochastic_and_local(city):
    m = mobility_model(city)
    P = m.transition_matrix()
    assert P.shape == (city.n_cells, city.n_cells)
    np.testing.assert_allclose(P.sum(axis=1), 1.0, atol=1e-12)
    np.testing.assert_allclose(np.diag(P), 0.55)
    rows, cols = np.divmod(np.arange(city.n_cells), city.cols)
    dr = np.abs(rows[:, None] - rows[None, :])
    dc = np.abs(cols[:, None] - cols[None, :])
    assert (P[(dr > 1) | (dc > 1)] == 0).all()
    assert (P[(dr <= 1) & (dc <= 1)] > 0).all()   # every neighbour is reachable
    assert m.initial.sum() == pytest.approx(1.0)


def test_trajectories_deterministic_shapes_and_moves(city):
    a = synthetic_trajectories(city, n_users=30, n_steps=50, step_seconds=60, seed=3)
    b = synthetic_trajectories(city, n_users=30, n_steps=50, step_seconds=60, seed=3)
    c = synthetic_trajectories(city, n_users=30, n_steps=50, step_seconds=60, seed=4)
    for f in ("user", "step", "time", "cell", "lat", "lon"):
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f))
    assert not np.array_equal(a.cell, c.cell)
    assert a.user.shape == (1500,) and a.cells_matrix().shape == (30, 50)
    np.testing.assert_array_equal(city.cell_of(a.lat, a.lon), a.cell)
    cm = a.cells_matrix()
    r, col = np.divmod(cm, city.cols)
    assert (np.abs(np.diff(r, axis=1)) <= 1).all() and (np.abs(np.diff(col, axis=1)) <= 1).all()
    # every observed transition has positive probability in the model
    P = mobility_model(city).transition_matrix()
    assert (P[cm[:, :-1], cm[:, 1:]] > 0).all()
    t = a.time.reshape(30, 50)
    assert (np.diff(t, axis=1) == np.timedelta64(60, "s")).all()
    assert t[0, 0] == np.datetime64("2026-03-02T08:00:00")
    assert a.time.dtype == np.dtype("datetime64[s]")
    tbl = a.to_arrow()
    assert tbl.column_names == ["user", "step", "time", "cell", "lat", "lon"]
    assert tbl.num_rows == 1500


def test_trajectories_follow_the_transition_matrix(city):
    """Empirical transition frequencies out of the busiest cell match the model.

    Chi-square at alpha = 1e-6 (unseeded); power check: the same test rejects the
    frequencies against a wrong model (stay probability 0.4 instead of 0.55).
    """
    from scipy import stats

    m = mobility_model(city)
    tr = synthetic_trajectories(city, n_users=400, n_steps=200, model=m)
    cm = tr.cells_matrix()
    src, dst = cm[:, :-1].ravel(), cm[:, 1:].ravel()
    s = np.bincount(src).argmax()
    obs = np.bincount(dst[src == s], minlength=city.n_cells)
    P = m.transition_matrix()
    support = P[s] > 0
    assert obs[~support].sum() == 0
    exp = obs.sum() * P[s, support]
    assert stats.chisquare(obs[support], exp).pvalue > 1e-6
    wrong = mobility_model(city, stay=0.4).transition_matrix()[s, support]
    assert stats.chisquare(obs[support], obs.sum() * wrong).pvalue < 1e-6


@pytest.mark.parametrize("kwargs, match", [
    ({"n_users": 0}, "n_users must be >= 1"),
    ({"n_steps": -3}, "n_steps must be >= 1"),
    ({"step_seconds": 0}, "step_seconds must be >= 1"),
    ({"start": "yesterday"}, "start must be an ISO timestamp"),
])
def test_trajectories_bad_parameters(city, kwargs, match):
    with pytest.raises(ParameterError, match=match):
        synthetic_trajectories(city, **kwargs)


def test_trajectories_reject_model_of_other_city(city):
    other = mobility_model(synthetic_city(n_pois=50, rows=3, cols=3, seed=0))
    with pytest.raises(ParameterError, match="cells"):
        synthetic_trajectories(city, model=other)


# ---------------------------------------------------------------- check-ins

def test_checkins_deterministic_and_schema(city):
    a = synthetic_checkins(city, n_users=50, mean_per_user=30, days=14, seed=8)
    b = synthetic_checkins(city, n_users=50, mean_per_user=30, days=14, seed=8)
    for f in ("user", "category", "poi", "time", "lat", "lon"):
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f))
    assert len(a) == a.user.size > 50 * 15
    tbl = a.to_arrow()
    assert tbl.column_names == ["user", "category", "time", "lat", "lon"]
    assert set(tbl.column("category").to_pylist()) <= set(city.categories.leaf_names)
    assert ((a.user >= 0) & (a.user < 50)).all()
    assert np.unique(a.user).size == 50  # every user checks in at least once
    assert ((a.lat >= city.south) & (a.lat <= city.north)).all()
    assert ((a.lon >= city.west) & (a.lon <= city.east)).all()
    start = np.datetime64("2026-03-02T00:00:00")
    assert (a.time >= start).all() and (a.time < start + np.timedelta64(14, "D")).all()
    # sorted by user then time
    order = np.lexsort((a.time, a.user))
    np.testing.assert_array_equal(order, np.arange(len(a)))
    # the category of a check-in is the category of its place, and it is near the place
    np.testing.assert_array_equal(city.poi_category[a.poi], a.category)
    from veil.distances import haversine_m

    assert haversine_m(a.lat, a.lon, city.poi_lat[a.poi], city.poi_lon[a.poi]).max() < 100


def test_visit_histograms_match_brute_force(city):
    ci = synthetic_checkins(city, n_users=12, mean_per_user=15, seed=2)
    h = ci.visit_histograms()
    brute = np.zeros((12, city.categories.n_leaves), dtype=np.int64)
    for u, c in zip(ci.user.tolist(), ci.category.tolist()):
        brute[u, c] += 1
    np.testing.assert_array_equal(h, brute)
    assert h.dtype == np.int64 and h.sum() == len(ci)


def test_checkins_hours_depend_on_category(city):
    ci = synthetic_checkins(city, n_users=300, mean_per_user=40, seed=9)
    hour = (ci.time.astype("datetime64[h]").astype(np.int64)) % 24
    top = city.categories.top_level[ci.category]
    names = city.categories.names
    night = top == names.index("Nightlife")
    work = top == names.index("Work")
    assert np.isin(hour[night], [20, 21, 22, 23, 0, 1, 2]).mean() > 0.6
    assert np.isin(hour[work], range(7, 18)).mean() > 0.7


def test_checkins_prefer_places_near_home(city):
    """With a short locality scale, check-ins are closer to each user's centre of activity."""
    near = synthetic_checkins(city, n_users=100, mean_per_user=30, locality_m=300, seed=1)
    far = synthetic_checkins(city, n_users=100, mean_per_user=30, locality_m=1e7, seed=1)

    def spread(ci):
        x, y = city.to_local_m(ci.lat, ci.lon)
        cx = np.bincount(ci.user, x) / np.bincount(ci.user)
        cy = np.bincount(ci.user, y) / np.bincount(ci.user)
        return float(np.median(np.hypot(x - cx[ci.user], y - cy[ci.user])))

    assert spread(near) < 0.8 * spread(far)


@pytest.mark.parametrize("kwargs, match", [
    ({"n_users": 0}, "n_users must be >= 1"),
    ({"mean_per_user": 0.0}, "mean_per_user must be > 0"),
    ({"days": 0}, "days must be >= 1"),
    ({"taste": -1.0}, "taste must be > 0"),
    ({"locality_m": float("inf")}, "locality_m must be finite"),
    ({"candidates": 0}, "candidates must be >= 1"),
    ({"start": "not a date"}, "start must be an ISO date"),
])
def test_checkins_bad_parameters(city, kwargs, match):
    with pytest.raises(ParameterError, match=match):
        synthetic_checkins(city, **kwargs)


# ---------------------------------------------------------------- census

def test_census_deterministic_and_schema():
    a = synthetic_census(2000, seed=1)
    b = synthetic_census(2000, seed=1)
    c = synthetic_census(2000, seed=2)
    assert tuple(a) == CENSUS_COLUMNS
    assert set(CENSUS_QUASI_IDENTIFIERS) | {CENSUS_SENSITIVE} == set(CENSUS_COLUMNS)
    for k in CENSUS_COLUMNS:
        np.testing.assert_array_equal(a[k], b[k])
        assert a[k].shape == (2000,)
    assert not np.array_equal(a["age"], c["age"])
    assert a["age"].dtype == np.int64
    assert all(a[k].dtype.kind == "U" for k in CENSUS_COLUMNS[1:])
    tbl = columns_to_arrow(a)
    assert tbl.column_names == list(CENSUS_COLUMNS)
    assert str(tbl.schema.field("age").type) == "int64"
    assert str(tbl.schema.field("salary").type) in ("string", "large_string")


def test_census_values_and_correlations():
    t = synthetic_census(30_000, seed=7)
    age = t["age"]
    assert age.min() >= 17 and age.max() <= 90 and 34 < age.mean() < 42
    assert set(t["sex"]) == {"Male", "Female"}
    assert set(t["salary"]) == {"<=50K", ">50K"}
    assert "?" not in set(t["occupation"]) | set(t["native-country"])
    assert len(set(t["education"])) == 16 and len(set(t["occupation"])) >= 13
    rich = t["salary"] == ">50K"
    assert 0.17 < rich.mean() < 0.30
    degree = np.isin(t["education"], ["Bachelors", "Masters", "Doctorate", "Prof-school"])
    hs = t["education"] == "HS-grad"
    assert rich[degree].mean() > 2 * rich[hs].mean()
    married = t["marital-status"] == "Married-civ-spouse"
    assert rich[married].mean() > 3 * rich[~married].mean()
    young = age < 25
    assert (t["marital-status"][young] == "Never-married").mean() > 0.6
    assert (t["marital-status"][age > 45] == "Never-married").mean() < 0.2
    # advanced degrees need a minimum age
    assert age[t["education"] == "Doctorate"].min() >= 26
    female = t["sex"] == "Female"
    assert (t["occupation"][female] == "Craft-repair").mean() < (
        t["occupation"][~female] == "Craft-repair").mean() / 3
    asian = t["race"] == "Asian-Pac-Islander"
    us = t["native-country"] == "United-States"
    assert us[asian].mean() < us[~asian].mean() - 0.3


def test_census_missing_values():
    t = synthetic_census(5000, missing_rate=0.1, seed=3)
    for k in CENSUS_COLUMNS:
        share = (t[k].astype(str) == "?").mean()
        if k in ("occupation", "native-country"):
            assert 0.07 < share < 0.13
        else:
            assert share == 0


@pytest.mark.parametrize("kwargs, match", [
    ({"n_rows": 0}, "n_rows must be >= 1"),
    ({"n_rows": "10"}, "n_rows must be an integer"),
    ({"missing_rate": 1.5}, "missing_rate"),
    ({"missing_rate": float("nan")}, "missing_rate"),
])
def test_census_bad_parameters(kwargs, match):
    kwargs = {"n_rows": 10, **kwargs}
    with pytest.raises(ParameterError, match=match):
        synthetic_census(**kwargs)


def test_generators_are_fast():
    """The demo budget: default sizes run in well under a second each."""
    import time

    t0 = time.perf_counter()
    city = synthetic_city(seed=0)
    synthetic_trajectories(city, n_users=200, n_steps=288, seed=0)
    synthetic_checkins(city, n_users=500, seed=0)
    synthetic_census(20_000, seed=0)
    assert time.perf_counter() - t0 < 5.0  # generous: the machine is shared


def test_grouped_categorical_draw_matches_row_wise_inverse_cdf():
    """Exactness: the memory-light grouped sampler equals the row-wise inverse CDF."""
    from veil.datasets.synthetic import _categorical_by_group, _inverse_cdf_rows

    rng = np.random.default_rng(0)
    for G, K in [(1, 1), (3, 5), (40, 63)]:
        w = rng.random((G, K)) * (rng.random((G, K)) < 0.7)
        w[:, rng.integers(0, K)] += 0.1  # every row has some weight
        g = rng.integers(0, G, size=5000)
        u = rng.random(5000)
        u[:3] = 0.0
        np.testing.assert_array_equal(_categorical_by_group(w, g, u), _inverse_cdf_rows(w[g], u))
        # zero-weight categories are never drawn
        assert (w[g, _categorical_by_group(w, g, u)] > 0).all()


def test_category_tree_size_matches_its_documentation():
    t = category_tree()
    assert (t.n_nodes, t.n_leaves, int((t.depth == 1).sum()), int(t.depth.max())) == (82, 63, 12, 3)
