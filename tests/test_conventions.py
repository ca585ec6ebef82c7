"""Issue 17, defect 7: one library convention across capabilities.

* budgets: every DP entry point takes a float or the budget object of its kind (``PureDP`` for
  pure DP, ``GeoDP`` for geo-indistinguishability) with the same result, and refuses the other
  kind with a ParameterError;
* labelled inputs: a pandas Series (its index), a dict and an array with ``labels`` give the
  same answer; ``load_checkins`` takes a DataFrame as well as a file;
* results: every result type has ``to_arrow()`` and ``to_pandas()``, which agree, and hold
  only what may be published;
* ``diva`` keeps the dtype of every column it does not suppress in;
* a batch output folder reads as one table with ``pandas.read_parquet``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import veil
from veil.budget import GeoDP, PureDP
from veil.errors import ParameterError
from veil.random import make_rng

POINTS = np.array([[48.85, 2.35], [48.86, 2.36], [40.7, -74.0]])


def _temporal_model():
    from veil.geo.temporal import MarkovModel, TemporalGrid

    g = TemporalGrid(lat_min=0.0, lon_min=0.0, lat_max=0.05, lon_max=0.05, nx=5, ny=5)
    return MarkovModel.from_trajectories([[0, 1, 2, 7, 12, 13, 18, 24]] * 3, grid=g)


def _pure_calls():
    from veil.geo.temporal import release_trajectory
    from veil.histograms import publish as hpublish
    from veil.maps import publish as mpublish
    from veil.mechanisms import exponential_mechanism, geometric_mechanism, laplace_mechanism

    h = np.array([5, 0, 3, 9, 2, 2, 7, 1])
    model = _temporal_model()
    return {
        "histograms.publish identity": lambda e, r: hpublish(h, epsilon=e, method="identity",
                                                             rng=r),
        "histograms.publish hb": lambda e, r: hpublish(h, epsilon=e, method="hb", rng=r),
        "histograms.publish dawa": lambda e, r: hpublish(h, epsilon=e, method="dawa", rng=r),
        "maps.publish identity": lambda e, r: mpublish(h.reshape(2, 4), epsilon=e,
                                                       method="identity", rng=r),
        "maps.publish privtree": lambda e, r: mpublish(h.reshape(2, 4), epsilon=e,
                                                       method="privtree", rng=r),
        "geometric_mechanism": lambda e, r: geometric_mechanism(h, epsilon=e, rng=r),
        "laplace_mechanism": lambda e, r: laplace_mechanism(h * 1.0, epsilon=e, rng=r),
        "exponential_mechanism": lambda e, r: exponential_mechanism(
            h * 1.0, epsilon=e, sensitivity=1.0, rng=r),
        "release_trajectory": lambda e, r: release_trajectory(
            [0, 1, 2, 7], model=model, epsilon=e, delta=0.05, rng=r).release,
    }


def _geo_calls():
    from veil.geo.geoind import ConsistentObfuscator, planar_laplace, planar_laplace_xy

    return {
        "planar_laplace": lambda e, r: planar_laplace(POINTS, epsilon=e, rng=r),
        "planar_laplace_xy": lambda e, r: planar_laplace_xy(POINTS * 1000, epsilon=e, rng=r),
        # deterministic given its secret key (the rng is not used)
        "ConsistentObfuscator": lambda e, r: ConsistentObfuscator(
            epsilon=e, window_s=3600.0, key=b"k" * 32).obfuscate(
                POINTS, t=np.zeros(3), user=["a", "b", "a"]),
    }


@pytest.mark.parametrize("name", sorted(_pure_calls()))
def test_pure_budget_float_or_puredp_alike(name):
    call = _pure_calls()[name]
    a = call(0.7, make_rng(seed=5))
    b = call(PureDP(0.7), make_rng(seed=5))
    assert isinstance(a.budget, PureDP) and a.epsilon == b.epsilon
    assert np.array_equal(np.asarray(a.value), np.asarray(b.value))
    with pytest.raises(ParameterError):
        call(GeoDP(0.01), make_rng(seed=5))


@pytest.mark.parametrize("name", sorted(_geo_calls()))
def test_geo_budget_float_or_geodp_alike(name):
    call = _geo_calls()[name]
    a = call(0.01, make_rng(seed=5))
    b = call(GeoDP(0.01), make_rng(seed=5))
    assert isinstance(a.budget, GeoDP) and a.epsilon == b.epsilon
    assert np.array_equal(a.value, b.value)
    with pytest.raises(ParameterError, match="per metre"):
        call(PureDP(1.0), make_rng(seed=5))


# ---------------------------------------------------------------- labelled inputs

LABELS = ["Bar", "Clinic", "Park", "Gym"]
COUNTS = [5, 3, 0, 2]


def test_hide_honours_a_series_index_and_accepts_a_dict():
    from veil.visits import hide

    ref = hide(COUNTS, sensitive=["Clinic"], labels=LABELS).published()
    # the same histogram in another order: the index, not the position, names the bins
    s = pd.Series(COUNTS, index=LABELS).iloc[[3, 1, 0, 2]]
    by_series = hide(s, sensitive=["Clinic"], labels=LABELS).published()
    by_dict = hide(dict(zip(LABELS, COUNTS)), sensitive=["Clinic"], labels=LABELS).published()
    by_sparse_dict = hide({"Bar": 5, "Clinic": 3, "Gym": 2}, sensitive=["Clinic"],
                          labels=LABELS).published()
    assert by_series == ref == by_dict == by_sparse_dict
    # without labels the Series/dict name the bins themselves
    own = hide(pd.Series(COUNTS, index=LABELS), sensitive=["Clinic"])
    assert own.labels == tuple(LABELS) and own.published() == ref
    with pytest.raises(ParameterError, match="not among the labels"):
        hide({"Bar": 5, "Casino": 1}, sensitive=["Bar"], labels=LABELS)


def test_resemble_aligns_a_labelled_target_by_name():
    from veil.visits import resemble

    target = {"Park": 10.0, "Bar": 5.0, "Gym": 5.0, "Clinic": 0.0}
    arr = resemble(COUNTS, [target[x] for x in LABELS], quality_bound=0.2, labels=LABELS)
    named = resemble(dict(zip(LABELS, COUNTS)), target, quality_bound=0.2)
    assert named.labels == tuple(LABELS)
    assert named.published() == arr.published()
    with pytest.raises(ParameterError, match="names its bins"):
        resemble(COUNTS, target, quality_bound=0.2)


def test_load_checkins_takes_a_dataframe_like_a_file(tmp_path):
    from veil.visits.batch import load_checkins

    df = pd.DataFrame({"user": ["u1", "u1", "u2", "u3", "u3", "u3"],
                       "category": ["Bar", "Bar", "Park", "Gym", "Bar", "Gym"],
                       "t": range(6)})
    f = tmp_path / "c.csv"
    df.to_csv(f, index=False)
    a, b = load_checkins(f), load_checkins(df)
    c = load_checkins(pa.Table.from_pandas(df))
    for u in (b, c):
        assert u.users.tolist() == a.users.tolist() and u.categories == a.categories
        assert all(np.array_equal(u.dense(i), a.dense(i)) for i in range(a.n_users))
    with pytest.raises(veil.errors.DataError, match="user column 'who'"):
        load_checkins(df, user_column="who")


# ---------------------------------------------------------------- results

def _results():
    from veil.geo.geoind import planar_laplace
    from veil.geo.temporal import release_trajectory
    from veil.histograms import publish as hpublish
    from veil.maps import MapGrid, publish as mpublish
    from veil.tables.diverse import diva
    from veil.visits import hide

    rng = make_rng(seed=3)
    grid = MapGrid(0.0, 0.0, 1.0, 2.0, rows=2, cols=4)
    m = mpublish(np.arange(8).reshape(2, 4), epsilon=1.0, method="identity", rng=rng)
    import dataclasses

    m_grid = dataclasses.replace(m, parameters={**m.parameters, "grid": grid.to_dict()})
    tr = release_trajectory([0, 1, 2, 7], model=_temporal_model(), epsilon=1.0, delta=0.05,
                            rng=rng)
    people = pd.DataFrame({"sex": ["F"] * 4 + ["M"] * 4, "age": [30, 30, 31, 31] * 2,
                           "pay": np.arange(8)})
    return {
        "histogram Release": (hpublish(np.array([3, 1, 4]), epsilon=1.0, rng=rng),
                              ["index", "value"], 3),
        "map Release": (m, ["row", "col", "value"], 8),
        "map Release with its grid": (m_grid, ["row", "col", "lat_min", "lat_max", "lon_min",
                                               "lon_max", "value"], 8),
        "points Release": (planar_laplace(POINTS, epsilon=0.01, rng=rng), ["lat", "lon"], 3),
        "TrajectoryRelease": (tr, ["step", "lat", "lon"], 4),
        "trajectory Release": (tr.release, ["lat", "lon"], 4),
        "VisitResult": (hide(dict(zip(LABELS, COUNTS)), sensitive=["Clinic"]),
                        ["category", "visits"], 4),
        "Anonymization": (diva(people, k=2, qi=["sex", "age"], constraints="sex=F: 4..4"),
                          ["sex", "age", "pay"], 8),
    }


RESULT_TYPES = ("histogram Release", "map Release", "map Release with its grid", "points Release",
                "TrajectoryRelease", "trajectory Release", "VisitResult", "Anonymization")


def test_the_result_list_is_complete():
    assert sorted(_results()) == sorted(RESULT_TYPES)


@pytest.mark.parametrize("name", RESULT_TYPES)
def test_every_result_converts_to_arrow_and_pandas(name):
    res, columns, rows = _results()[name]
    t = res.to_arrow()
    df = res.to_pandas()
    assert isinstance(t, pa.Table) and isinstance(df, pd.DataFrame)
    assert t.column_names == columns == [str(c) for c in df.columns]
    assert t.num_rows == rows == len(df)
    pd.testing.assert_frame_equal(t.to_pandas(), df, check_dtype=False)


def test_result_tables_hold_the_published_values():
    r = _results()
    hist = r["histogram Release"][0]
    assert hist.to_pandas()["value"].tolist() == hist.value.tolist()
    pts = r["points Release"][0]
    assert np.array_equal(pts.to_pandas()[["lat", "lon"]].to_numpy(), pts.value)
    vr = r["VisitResult"][0]
    # only the sanitized histogram: the original counts are not in the table
    assert vr.to_pandas()["visits"].tolist() == vr.histogram.tolist() != vr.original.tolist()
    m = r["map Release with its grid"][0]
    cells = m.to_pandas()
    assert np.array_equal(cells["value"].to_numpy().reshape(2, 4), m.value)
    assert cells.loc[5, ["row", "col", "lat_min", "lon_min"]].tolist() == [1, 1, 0.5, 0.5]


def test_published_map_and_batch_result_convert(tmp_path):
    from veil.maps import MapGrid, publish, read_map, write_map
    from veil.visits.batch import load_checkins, sanitize_users

    grid = MapGrid(0.0, 0.0, 1.0, 1.0, rows=2, cols=2)
    rel = publish(np.array([[1, 2], [3, 4]]), epsilon=1.0, method="identity",
                  rng=make_rng(seed=0))
    write_map(rel, tmp_path / "m.parquet", grid=grid)
    pm = read_map(tmp_path / "m.parquet")
    df = pm.to_pandas()
    assert len(df) == 4 and np.array_equal(df["count"].to_numpy().reshape(2, 2), pm.values)
    uh = load_checkins(pd.DataFrame({"user": ["a", "a", "b", "b"],
                                     "category": ["Bar", "Clinic", "Bar", "Park"]}))
    br = sanitize_users(uh, problem="hide", sensitive=np.array([uh.categories.index("Clinic")]))
    t = br.to_pandas()
    assert set(t.columns) == set(br.table) and len(t) == len(br.table["user"])
    assert "quality_loss" not in t.columns  # the private summary is not part of it


# ---------------------------------------------------------------- diva dtypes

def test_diva_keeps_the_dtype_of_columns_it_does_not_suppress():
    from veil.tables.diverse import diva

    df = pd.DataFrame({"sex": ["F", "F", "M", "M", "F", "M"],
                       "age": np.array([30, 30, 30, 30, 31, 31], dtype=np.int64),
                       "zip": np.array([1000] * 6, dtype=np.int64),
                       "pay": np.array([1.5, 2.5, 3.5, 4.5, 5.5, 6.5])})
    res = diva(df, k=2, qi=["sex", "age", "zip"], constraints="sex=F: 2..")
    out = res.to_pandas()
    assert out["zip"].dtype == np.int64 and out["pay"].dtype == np.float64
    assert out["zip"].tolist() == df["zip"].tolist()     # nothing to hide: published as is
    sup = res.suppressed
    j = ["sex", "age", "zip"].index("age")
    if sup[:, j].any():  # a column with a suppressed cell holds text with the marker
        assert "*" in set(out["age"])
    else:
        assert out["age"].dtype == np.int64
    assert not sup[:, 2].any()


# ---------------------------------------------------------------- batch output

def test_batch_output_folder_reads_with_pandas(tmp_path):
    import pyarrow.parquet as pq

    from veil.engine import Job, run_job

    pq.write_table(pa.table({"user": np.arange(60) % 20, "category": ["a", "b", "c"] * 20}),
                   tmp_path / "checkins.parquet")
    res = run_job(Job(tmp_path / "checkins.parquet", tmp_path / "out", "count-noise",
                      params={"categories": ["a", "b"], "epsilon": 1.0},
                      ledger=tmp_path / "ledger.json", progress=False))
    df = pd.read_parquet(tmp_path / "out")
    assert res.rows_out == len(df) > 0
    parts = pd.concat([pd.read_parquet(p) for p in sorted((tmp_path / "out").glob("*.parquet"))])
    assert len(parts) == len(df)
    from veil.engine.job import read_manifest

    assert read_manifest(tmp_path / "out")["rows_out"] == len(df)


@pytest.mark.parametrize("module", ["veil.labelled", "veil.release", "veil.visits.result",
                                    "veil.visits.batch"])
def test_doctests_of_the_conventions(module):
    import doctest
    import importlib

    res = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert res.attempted > 0 and res.failed == 0
