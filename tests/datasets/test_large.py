"""Streaming generators for the scale benchmarks."""

import duckdb
import pytest

from veil.datasets.large import LARGE_CATEGORIES, write_large_checkins, write_large_trajectories
from veil.errors import ParameterError


def test_large_checkins_shape_and_determinism(tmp_path):
    p = tmp_path / "c.parquet"
    rows = write_large_checkins(p, 1234, categories_per_user=7, checkins_per_user=11, seed=3,
                                chunk_users=500)
    assert rows == 1234 * 11
    users, distinct, cats = duckdb.sql(
        f"SELECT count(DISTINCT user), min(d), count(DISTINCT category) FROM "
        f"(SELECT user, category, count(DISTINCT category) OVER (PARTITION BY user) d FROM '{p}')"
    ).fetchall()[0]
    assert users == 1234 and distinct == 7 and cats <= len(LARGE_CATEGORIES)
    q = tmp_path / "c2.parquet"
    write_large_checkins(q, 1234, categories_per_user=7, checkins_per_user=11, seed=3,
                         chunk_users=500)
    assert duckdb.sql(f"SELECT * FROM '{p}' EXCEPT ALL SELECT * FROM '{q}'").fetchall() == []
    with pytest.raises(ParameterError):
        write_large_checkins(p, 10, categories_per_user=5, checkins_per_user=3)


def test_large_trajectories_stay_in_the_box(tmp_path):
    p = tmp_path / "t.parquet"
    box = (116.0, 39.0, 116.5, 39.5)
    assert write_large_trajectories(p, 300, steps=20, bbox=box, chunk_users=128) == 6000
    lo_lon, lo_lat, hi_lon, hi_lat, n = duckdb.sql(
        f"SELECT min(lon), min(lat), max(lon), max(lat), count(DISTINCT user) FROM '{p}'"
    ).fetchall()[0]
    assert box[0] <= lo_lon and hi_lon <= box[2] and box[1] <= lo_lat and hi_lat <= box[3]
    assert n == 300
