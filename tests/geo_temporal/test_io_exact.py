"""`veil trajectory model|release|risk` keep user ids and times exactly as read, name the
time value that does not parse, and write lat/lon with the digits of --resolution.

Regressions: user ids were read as numbers (``007`` and ``7`` merged into user ``7.0``, a
transition counted across them, ``1e3`` written as ``1000.0``); released times were rounded
to 3 decimals (0.0001 and 0.0002 both 0, epoch nanoseconds lost digits); a time column
mixing ISO forms was refused, blaming a valid row; CSV lat/lon always had 7 decimals, so
``--resolution 0`` (raw floats) and finer lattices were not honoured.
"""

from __future__ import annotations

import io
import json
import warnings

import numpy as np
import pandas as pd
import pytest

from cli_cases import exit_code as _run

from veil.errors import DataError
from veil.geo.temporal import MarkovModel, TemporalGrid, release_trajectory
from veil.geo.temporal.io import read_track, released_table
from veil.random import make_rng, spawn

pytestmark = pytest.mark.usefixtures("repeat_releases")

GRID = "43.964,-32.063,44.036,-31.937,10,10"        # the synthetic city's public box


@pytest.fixture(scope="module")
def grid():
    return TemporalGrid.parse(GRID)


@pytest.fixture(scope="module")
def model_path(tmp_path_factory, grid):
    rng = np.random.default_rng(0)
    seqs = [np.clip(c + np.cumsum(rng.integers(-1, 2, 60)), 0, grid.n_cells - 1)
            for c in rng.integers(0, grid.n_cells, 8)]
    p = tmp_path_factory.mktemp("model") / "m.npz"
    MarkovModel.from_trajectories(seqs, grid=grid, prior_weight=0.2).save(p)
    return p


def _points(grid, cells):
    return grid.to_latlon(grid.centers_m[np.asarray(cells)])


def _write_csv(path, users, times, latlon):
    lines = ["user,t,lat,lon"] + [f"{u},{t},{float(la)!r},{float(lo)!r}"
                                  for u, t, (la, lo) in zip(users, times, latlon)]
    path.write_text("\n".join(lines) + "\n")
    return path


def _release(src, model, out, *extra, seed=5):
    code = _run(["trajectory", "release", src, "-e", 1, "-d", 0.1, "--model", model, "-o", out,
                 "--seed", seed, *extra])
    assert code == 0
    return out


# -- 1. user ids ---------------------------------------------------------------------------

def test_model_keeps_users_with_numeric_looking_ids_apart(tmp_path, grid, capsys):
    """``007`` and ``7`` are two users: two sequences, no transition across them."""
    src = _write_csv(tmp_path / "u.csv", ["007", "007", "7", "7"], [0, 10, 20, 30],
                     _points(grid, [11, 12, 55, 56]))
    out = tmp_path / "m.npz"
    assert _run(["trajectory", "model", src, "--grid", GRID, "-o", out]) == 0
    m = MarkovModel.load(out)
    assert m.meta["n_sequences"] == 2
    assert m.meta["n_transitions"] == 2          # 11 -> 12 and 55 -> 56, not 12 -> 55


def test_release_writes_user_ids_back_as_read(tmp_path, grid, model_path):
    """User 7 first, then 007 (earlier times): two users, each sorted; ids unchanged, and
    each user's points are the library's release on her own child stream."""
    users = ["7", "7", "007", "007", "1e3", "1e3"]
    cells = [44, 45, 11, 12, 66, 67]
    src = _write_csv(tmp_path / "u.csv", users, [10, 20, 0, 5, 0, 1], _points(grid, cells))
    out = _release(src, model_path, tmp_path / "r.csv", "--resolution", 0)
    rel = pd.read_csv(out, dtype={"user": str, "t": str})
    assert rel["user"].tolist() == users
    meta = json.loads((tmp_path / "r.csv.meta.json").read_text())
    assert meta["parameters"]["n_users"] == 3
    m = MarkovModel.load(model_path)
    streams = spawn(make_rng(seed=5), 3)
    for k, u in enumerate(["7", "007", "1e3"]):
        rows = [i for i, v in enumerate(users) if v == u]
        r = release_trajectory(np.asarray(cells)[rows], model=m, epsilon=1.0, delta=0.1,
                               rng=streams[k], resolution_m=0)
        got = rel.loc[rel["user"] == u, ["lat", "lon"]].to_numpy()
        np.testing.assert_array_equal(got, r.released_latlon)
    # JSON output: the same ids, as text
    jout = _release(src, model_path, tmp_path / "r.json")
    assert [r["user"] for r in json.loads(jout.read_text())] == users


def test_user_ids_named_like_missing_values_are_ids(tmp_path, grid):
    src = _write_csv(tmp_path / "u.csv", ["NA", "NA", "nan", "null"], [0, 1, 0, 0],
                     _points(grid, [1, 2, 3, 4]))
    tr = read_track(src)
    assert tr.user.tolist() == ["NA", "NA", "nan", "null"]


def test_parquet_integer_users_stay_distinct_and_unchanged(tmp_path, grid, model_path):
    ll = _points(grid, [11, 12, 44, 45])
    src = tmp_path / "u.parquet"
    pd.DataFrame({"user": np.array([7, 7, 70, 70], dtype=np.int64), "t": [0, 1, 0, 1],
                  "lat": ll[:, 0], "lon": ll[:, 1]}).to_parquet(src)
    out = _release(src, model_path, tmp_path / "r.json")
    rows = json.loads(out.read_text())
    assert [r["user"] for r in rows] == [7, 7, 70, 70]      # integers, as in the file
    assert [r["t"] for r in rows] == [0, 1, 0, 1]
    cout = _release(src, model_path, tmp_path / "r.csv")
    assert pd.read_csv(cout)["user"].tolist() == [7, 7, 70, 70]


def test_json_input_keeps_text_ids(tmp_path, grid, model_path):
    ll = _points(grid, [11, 12, 44])
    src = tmp_path / "u.json"
    src.write_text(json.dumps([{"user": "007", "t": 0, "lat": ll[0, 0], "lon": ll[0, 1]},
                               {"user": "007", "t": 1, "lat": ll[1, 0], "lon": ll[1, 1]},
                               {"user": 7, "t": 0, "lat": ll[2, 0], "lon": ll[2, 1]}]))
    out = _release(src, model_path, tmp_path / "r.json")
    assert [r["user"] for r in json.loads(out.read_text())] == ["007", "007", 7]


def test_risk_counts_users_with_numeric_looking_ids_apart(tmp_path, grid):
    src = _write_csv(tmp_path / "u.csv", ["007", "007", "7", "7"], [0, 10, 0, 10],
                     _points(grid, [11, 12, 55, 56]))
    out = tmp_path / "risk.json"
    assert _run(["trajectory", "risk", src, "--grid", GRID, "--k", 1, "--seed", 1,
                 "-o", out]) == 0
    res = json.loads(out.read_text())
    assert res["attacks"]["location"]["before"]["n_users"] == 2


# -- 2. times ------------------------------------------------------------------------------

def test_release_writes_times_back_exactly(tmp_path, grid, model_path):
    times = ["0.0001", "0.0002", "1600000000123456789", "1600000000123456790"]
    src = _write_csv(tmp_path / "t.csv", ["a", "a", "b", "b"], times,
                     _points(grid, [11, 12, 44, 45]))
    out = _release(src, model_path, tmp_path / "r.csv")
    assert pd.read_csv(out, dtype={"t": str})["t"].tolist() == times
    jout = _release(src, model_path, tmp_path / "r.json")
    got = [r["t"] for r in json.loads(jout.read_text())]
    assert got == [0.0001, 0.0002, 1600000000123456789, 1600000000123456790]


def test_nanosecond_times_are_ordered_exactly(tmp_path, grid, model_path, capsys):
    """Two epoch-nanosecond times 1 ns apart in the wrong order: float seconds tie, the
    exact key sees it."""
    src = _write_csv(tmp_path / "t.csv", ["a", "a"], ["1600000000123456790",
                                                      "1600000000123456789"],
                     _points(grid, [11, 12]))
    code = _run(["trajectory", "release", src, "-e", 1, "-d", 0.1, "--model", model_path,
                 "-o", tmp_path / "r.csv"])
    assert code == 2 and "not sorted" in capsys.readouterr().err


def test_iso_times_are_written_back_as_given(tmp_path, grid, model_path):
    times = ["2020-01-01T00:00:00", "2020-01-01 00:00:10", "2020-01-01T00:00:20+00:00"]
    src = _write_csv(tmp_path / "t.csv", ["a"] * 3, times, _points(grid, [11, 12, 13]))
    out = _release(src, model_path, tmp_path / "r.csv")
    assert pd.read_csv(out, dtype={"t": str})["t"].tolist() == times
    jout = _release(src, model_path, tmp_path / "r.json")
    assert [r["t"] for r in json.loads(jout.read_text())] == times


def test_released_table_library_keeps_time_text():
    text = released_table(np.array(["0.0001", "0.0002"], dtype=object), np.zeros((2, 2)),
                          np.array([1, 1]), "csv")
    assert pd.read_csv(io.StringIO(text), dtype={"t": str})["t"].tolist() == ["0.0001", "0.0002"]


# -- 3. time parsing errors ------------------------------------------------------------------

def _times_file(tmp_path, grid, times):
    return _write_csv(tmp_path / "t.csv", ["a"] * len(times), times,
                      _points(grid, np.arange(len(times)) + 11))


def test_mixed_iso_forms_are_read(tmp_path, grid):
    src = _times_file(tmp_path, grid, ["2020-01-01T00:00:00", "2020-01-01 00:00:10"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tr = read_track(src)
    np.testing.assert_array_equal(np.diff(tr.t), [10.0])
    assert tr.t[0] == pd.Timestamp("2020-01-01", tz="UTC").timestamp()


@pytest.mark.parametrize("times,row,words", [
    (["100", "2020-01-01T00:00:00"], 2, "is a timestamp"),
    (["2020-01-01T00:00:00", "2020-01-01T00:00:10", "200"], 3, "is a number"),
    (["2020-01-01T00:00:00", "2020-01-01 00:00:10", "yesterday", "5"], 3, "neither"),
    (["2020-01-01T00:00:00", "2020-02-30 00:00:10"], 2, "neither"),
    (["5", "6", "abc"], 3, "neither"),
])
def test_time_errors_name_the_failing_row(tmp_path, grid, times, row, words):
    src = _times_file(tmp_path, grid, times)
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # no pandas warning leaks
        with pytest.raises(DataError) as exc:
            read_track(src)
    msg = str(exc.value)
    assert f"row {row} " in msg and words in msg and repr(times[row - 1]) in msg


def test_cli_time_error_names_the_row_without_a_warning(tmp_path, grid, model_path, capsys):
    src = _times_file(tmp_path, grid, ["100", "2020-01-01T00:00:00"])
    out = tmp_path / "r.csv"
    capsys.readouterr()
    code = _run(["trajectory", "release", src, "-e", 1, "-d", 0.1, "--model", model_path,
                 "-o", out])
    err = capsys.readouterr().err
    assert code == 2 and "row 2" in err and "row 1 is a number" in err
    assert "Warning" not in err and "infer format" not in err
    assert len(err.strip().splitlines()) == 1 and not out.exists()


# -- 4. lat/lon digits of --resolution -----------------------------------------------------

@pytest.mark.parametrize("resolution", [0.0, 0.1, 1.0])
def test_csv_lat_lon_honour_the_resolution(tmp_path, grid, model_path, resolution):
    cells = [11, 12, 13, 23, 24, 34, 35, 45]
    src = _write_csv(tmp_path / "t.csv", ["a"] * len(cells), range(len(cells)),
                     _points(grid, cells))
    out = _release(src, model_path, tmp_path / "r.csv", "--resolution", resolution, seed=9)
    rel = pd.read_csv(out)
    m = MarkovModel.load(model_path)
    r = release_trajectory(np.asarray(cells), model=m, epsilon=1.0, delta=0.1,
                           rng=spawn(make_rng(seed=9), 1)[0], resolution_m=resolution)
    got = rel[["lat", "lon"]].to_numpy()
    if resolution == 0:                        # raw floats: every bit
        np.testing.assert_array_equal(got, r.released_latlon)
    else:                                      # on the lattice, to 2 % of its step
        err = np.abs(m.grid.to_metres(got[:, 0], got[:, 1]) - r.released_m)
        assert err.max() <= 0.02 * resolution
    jout = _release(src, model_path, tmp_path / "r.json", "--resolution", resolution, seed=9)
    js = np.array([[p["lat"], p["lon"]] for p in json.loads(jout.read_text())])
    np.testing.assert_array_equal(js, r.released_latlon)


def test_io_docstring_examples():
    import doctest

    import veil.geo.temporal.io as io_module

    res = doctest.testmod(io_module)
    assert res.failed == 0 and res.attempted > 0
