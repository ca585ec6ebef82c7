"""NaN in a Parquet float column is seen by every veil query.

Regression: Parquet's min/max statistics leave NaN out (pyarrow writes them so) and DuckDB
(2.0.1) prunes and folds filters by them unless ``can_have_nan`` is set: on such a file
``WHERE lat <= 40`` kept the NaN rows and ``WHERE isnan(lat)`` found none. `veil map
publish` then failed with "cannot be read as Parquet (corrupt ...)" instead of naming the
bad row (the same points as a CSV were named), and `veil batch trajectories --on-invalid
drop` counted dropped NaN points in the published budget (tests/engine/test_batch_review.py).
"""

from __future__ import annotations

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cli_cases import run_main

from veil.io import sql


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("VEIL_HOME", str(tmp_path / "home"))


def _points(tmp_path):
    rng = np.random.default_rng(1)
    lat, lon = rng.uniform(40.6, 40.8, 400), rng.uniform(-74.0, -73.8, 400)
    lat[[0, 7]] = np.nan
    table = pa.table({"user": np.arange(400) % 20, "lat": lat, "lon": lon})
    pq.write_table(table, tmp_path / "p.parquet")
    table.to_pandas().to_csv(tmp_path / "p.csv", index=False)
    return tmp_path / "p.parquet", tmp_path / "p.csv"


def test_read_parquet_sees_nan_through_a_filter(tmp_path):
    pqf, _ = _points(tmp_path)
    src = sql.read_parquet(sql.path(pqf))
    got = duckdb.sql(f"SELECT count(*) FILTER (WHERE lat <= 40.8), "
                     f"(SELECT count(*) FROM {src} WHERE lat <= 40.8), "
                     f"(SELECT count(*) FROM {src} WHERE isnan(lat)) FROM {src}").fetchall()[0]
    assert got == (398, 398, 2)
    # what DuckDB does without the option (so that this test would see a fixed DuckDB)
    plain = duckdb.sql(f"SELECT count(*) FROM read_parquet({sql.path(pqf)}) "
                       "WHERE isnan(lat)").fetchall()[0][0]
    assert plain in (0, 2)


@pytest.mark.parametrize("engine", ["local", "dask"])
def test_map_publish_names_a_nan_latitude_of_a_parquet_file_like_a_csv(tmp_path, capsys,
                                                                      engine):
    pqf, csv = _points(tmp_path)
    errs = []
    for f in (pqf, csv):
        out = tmp_path / f"o_{f.suffix[1:]}.csv"
        code, _, err = run_main(["map", "publish", f, "--user-column", "user", "--max-points",
                                 "50", "--bbox", "40.6,-74.0,40.8,-73.8", "--grid", "4x4",
                                 "-e", "1", "-m", "identity", "-o", out, "--seed", "1",
                                 *(["--engine", "dask"] if engine == "dask" and f == pqf
                                   else [])], capsys)
        assert code == 2, err
        assert not out.exists()
        errs.append(err.strip())
    assert "row 1, column 'lat': latitude" in errs[0], errs[0]
    assert "corrupt" not in errs[0]
    assert "row 1, column 'lat': latitude" in errs[1], errs[1]


def test_map_publish_bbox_from_data_names_a_nan_latitude(tmp_path, capsys):
    from veil.errors import PrivacyWarning

    pqf, _ = _points(tmp_path)
    with pytest.warns(PrivacyWarning):
        code, _, err = run_main(["map", "publish", pqf, "--user-column", "user",
                                 "--max-points", "50", "--bbox-from-data", "--grid", "4x4",
                                 "-e", "1", "-m", "identity", "-o", tmp_path / "o.csv"], capsys)
    assert code == 2 and "row 1, column 'lat'" in err and "corrupt" not in err, err
