"""Readers: formats, kinds, schema checks and the file/row/column in every error."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from veil.errors import DataError, ParameterError
from veil.io import (KINDS, detect_format, read_checkins, read_columns, read_counts, read_points,
                     read_table, write_table)


def _csv(tmp_path, text, name="in.csv"):
    p = tmp_path / name
    p.write_text(text)
    return p


# ---------------------------------------------------------------- formats


@pytest.mark.parametrize("name,fmt", [("a.csv", "csv"), ("a.TSV", "csv"), ("a.parquet", "parquet"),
                                      ("a.pq", "parquet"), ("a.json", "json"),
                                      ("a.ndjson", "json"), ("dir.x/a.jsonl", "json")])
def test_detect_format_from_extension(name, fmt):
    assert detect_format(name) == fmt


def test_detect_format_explicit_overrides_and_validates():
    assert detect_format("a.dat", "PARQUET") == "parquet"
    with pytest.raises(ParameterError, match="did you mean 'parquet'"):
        detect_format("a.csv", "parket")
    with pytest.raises(ParameterError, match=r"'\.dat'"):
        detect_format("a.dat")


@pytest.mark.parametrize("fmt", ["csv", "parquet", "json"])
def test_same_table_from_every_format(tmp_path, fmt):
    rng = np.random.default_rng(1)
    n = 257
    data = {"lat": rng.uniform(-90, 90, n), "lon": rng.uniform(-180, 180, n),
            "n": rng.integers(0, 1000, n), "user": np.array([f"u{i % 7}" for i in range(n)],
                                                            dtype=object)}
    path = tmp_path / f"t.{fmt}"
    write_table(data, path)
    cols = read_columns(path, columns={"lat": "lat", "lon": "lon", "n": "count", "user": "str"})
    np.testing.assert_allclose(cols["lat"], data["lat"], rtol=0, atol=1e-12)
    np.testing.assert_allclose(cols["lon"], data["lon"], rtol=0, atol=1e-12)
    assert cols["n"].dtype == np.int64
    np.testing.assert_array_equal(cols["n"], data["n"])
    assert cols["user"].tolist() == data["user"].tolist()


def test_json_records_and_ndjson(tmp_path):
    recs = [{"u": "a", "c": 1}, {"u": "b", "c": 2}]
    (tmp_path / "a.json").write_text(json.dumps(recs))
    (tmp_path / "b.ndjson").write_text("\n".join(json.dumps(r) for r in recs) + "\n")
    for name in ("a.json", "b.ndjson"):
        cols = read_columns(tmp_path / name, columns={"u": "str", "c": "count"})
        assert cols["u"].tolist() == ["a", "b"] and cols["c"].tolist() == [1, 2]


def test_json_string_in_numeric_column_is_reported(tmp_path):
    p = tmp_path / "m.json"
    p.write_text(json.dumps([{"c": 1}, {"c": 2}, {"c": "many"}]))
    with pytest.raises(DataError) as ei:
        read_counts(p, column="c")
    assert ei.value.row == 3 and ei.value.column == "c" and "many" in str(ei.value)


def test_columns_none_reads_everything_typed(tmp_path):
    p = _csv(tmp_path, "a,b,c\n1,x,2.5\n2,y,3.5\n")
    t = read_table(p)
    assert t.column_names == ["a", "b", "c"]
    assert pa.types.is_integer(t.schema.field("a").type)
    assert pa.types.is_floating(t.schema.field("c").type)


def test_keep_others_keeps_file_order_and_exact_text(tmp_path):
    p = _csv(tmp_path, "id,count,label\n007,3,x y\n010,4,\"a,b\"\n")
    t = read_table(p, columns={"count": "count"}, keep_others=True)
    assert t.column_names == ["id", "count", "label"]
    assert t.column("id").to_pylist() == ["007", "010"]
    assert t.column("label").to_pylist() == ["x y", "a,b"]


def test_only_declared_columns_returned_in_given_order(tmp_path):
    p = _csv(tmp_path, "a,b,c\n1,2,3\n")
    assert read_table(p, columns={"c": "int", "a": "int"}).column_names == ["c", "a"]


def test_tsv_and_headerless_with_names(tmp_path):
    p = tmp_path / "g.tsv"
    p.write_text("0\t2010-10-19 23:55:27+0000\t30.2\t-97.7\n1\t2010-10-18 22:17:43+0000\t30.3\t-97.8\n")
    t = read_table(p, header=False, names=["user", "time", "lat", "lon"],
                   columns={"user": "str", "time": "time", "lat": "lat", "lon": "lon"})
    assert t.num_rows == 2
    assert pa.types.is_timestamp(t.schema.field("time").type)
    assert str(t.column("time")[0].as_py()) == "2010-10-19 23:55:27"


def test_time_numeric_and_datetime_and_bad(tmp_path):
    num = _csv(tmp_path, "t\n1.5\n3\n", "num.csv")
    assert read_columns(num, columns={"t": "time"})["t"].tolist() == [1.5, 3.0]
    dt = _csv(tmp_path, "t\n2012-04-03 18:00:09\n2012-04-04\n", "dt.csv")
    arr = read_columns(dt, columns={"t": "time"})["t"]
    assert arr.dtype == np.dtype("datetime64[us]")
    bad = _csv(tmp_path, "t\n2012-04-03 18:00:09\nyesterday\n", "bad.csv")
    with pytest.raises(DataError, match="row 2.*'yesterday' is not a time"):
        read_columns(bad, columns={"t": "time"})


def test_read_points_counts_checkins(tmp_path):
    p = _csv(tmp_path, "uid,cat,lat,lon,hour,n\n1,Food,40.7,-74.0,13,2\n2,Gym,40.8,-73.9,9,0\n")
    pts = read_points(p)
    assert pts.shape == (2, 2) and pts.dtype == np.float64
    np.testing.assert_allclose(pts, [[40.7, -74.0], [40.8, -73.9]])
    assert read_counts(p, column="n").tolist() == [2, 0]
    ci = read_checkins(p, user="uid", category="cat", time="hour")
    assert ci["user"].tolist() == ["1", "2"] and ci["category"].tolist() == ["Food", "Gym"]
    assert ci["time"].tolist() == [13.0, 9.0]
    assert set(read_checkins(p, user="uid", category="cat")) == {"user", "category"}


def test_integer_forms_accepted_exactly(tmp_path):
    big = 2 ** 62 + 1  # not representable in float64: must come through BIGINT exactly
    p = _csv(tmp_path, f"n\n3.0\n 4 \n{big}\n")
    assert read_counts(p, column="n").tolist() == [3, 4, big]


def test_parquet_typed_columns(tmp_path):
    p = tmp_path / "t.parquet"
    pq.write_table(pa.table({"lat": pa.array([1.0, 2.0], pa.float32()),
                             "lon": pa.array([3, 4], pa.int32()),
                             "n": pa.array([5, 6], pa.uint16())}), p)
    cols = read_columns(p, columns={"lat": "lat", "lon": "lon", "n": "count"})
    assert cols["lat"].dtype == np.float64 and cols["n"].dtype == np.int64
    assert cols["lon"].tolist() == [3.0, 4.0]


def test_real_foursquare_checkins():
    from veil.datasets import shared_data_path

    path = shared_data_path("foursquare-nyc", "foursquare_nyc.csv")
    ci = read_checkins(path, user="label", category="category", time="hour")
    assert len(ci["user"]) > 40_000
    assert ci["time"].min() >= 0 and ci["time"].max() <= 23
    pts = read_points(path)
    assert (np.abs(pts[:, 0] - 40.7) < 1).all()


# ---------------------------------------------------------------- errors name file/row/column


@pytest.mark.parametrize("text,columns,row,column,pattern", [
    ("x\n1\n2\nabc\n", {"x": "float"}, 3, "x", r"'abc' is not a number"),
    ("x\n1\n\n", {"x": "float"}, 2, "x", r"missing value"),
    ("x,y\n1,\n", {"y": "float"}, 1, "y", r"missing value"),
    ("lat,lon\n10,20\nnan,1\n", {"lat": "lat"}, 2, "lat", r"latitude must be finite.*'nan'"),
    ("lat,lon\n10,20\n1,inf\n", {"lon": "lon"}, 2, "lon", r"longitude must be finite.*'inf'"),
    ("lat\n90\n-90.0001\n", {"lat": "lat"}, 2, "lat", r"outside \[-90, 90\]"),
    ("lon\n180\n180.5\n", {"lon": "lon"}, 2, "lon", r"outside \[-180, 180\]"),
    ("n\n1\n-2\n", {"n": "count"}, 2, "n", r"count -2 is negative"),
    ("n\n1\n2.5\n", {"n": "count"}, 2, "n", r"'2.5' is not an integer count"),
    ("n\n1\n1e30\n", {"n": "int"}, 2, "n", r"does not fit in a 64-bit integer"),
    ("v\n1\n-Infinity\n", {"v": "float"}, 2, "v", r"must be finite"),
])
def test_value_errors_name_row_and_column(tmp_path, text, columns, row, column, pattern):
    p = _csv(tmp_path, text)
    with pytest.raises(DataError, match=pattern) as ei:
        read_table(p, columns=columns)
    err = ei.value
    assert err.row == row and err.column == column and err.path == str(p)
    assert str(err).startswith(f"file {p}, row {row}, column {column!r}: ")


def test_first_offending_row_is_reported_among_many(tmp_path):
    rows = ["1"] * 5000
    rows[3210] = "x1"
    rows[4000] = "x2"
    p = _csv(tmp_path, "n\n" + "\n".join(rows) + "\n")
    with pytest.raises(DataError) as ei:
        read_counts(p, column="n")
    assert ei.value.row == 3211 and "'x1'" in str(ei.value)


def test_missing_column_did_you_mean(tmp_path):
    p = _csv(tmp_path, "latitude,longitude\n1,2\n")
    with pytest.raises(DataError, match="did you mean 'latitude'") as ei:
        read_points(p, lat="latitud", lon="longitude")
    assert ei.value.column == "latitud" and ei.value.row is None
    with pytest.raises(DataError, match="case-sensitive"):
        read_table(p, columns={"Latitude": "lat"})


def test_missing_file_did_you_mean(tmp_path):
    _csv(tmp_path, "a\n1\n", "points.csv")
    with pytest.raises(DataError, match="no such file; did you mean") as ei:
        read_table(tmp_path / "pionts.csv")
    assert isinstance(ei.value, ValueError)


@pytest.mark.parametrize("content,pattern", [
    (b"", "the file is empty"),
    (b"a,b\n", "no data rows"),
    (b"a,b\n1,2\n3\n", "row 2, column.*has 1 field|row 2: has 1 field"),
    (b"a,b\n1,2\n3,4,5\n", "row 2.*3 field"),
    (b"\x00\xff\xfe\x01garbage\x80\x81\n\x00", "not UTF-8"),
])
def test_garbled_or_empty_csv(tmp_path, content, pattern):
    p = tmp_path / "g.csv"
    p.write_bytes(content)
    with pytest.raises(DataError, match=pattern) as ei:
        read_table(p, columns={"a": "int"})
    assert str(p) in str(ei.value)


def test_ragged_row_deep_in_file(tmp_path):
    p = tmp_path / "r.csv"
    p.write_text("a,b\n" + "1,2\n" * 30000 + "1,2,3\n")
    with pytest.raises(DataError) as ei:
        read_table(p, columns={"a": "int"})
    assert ei.value.row == 30001


@pytest.mark.parametrize("name,content,pattern", [
    ("g.parquet", b"PAR1 this is not really parquet", "cannot be read as Parquet"),
    ("g.json", b"{\"a\": [1, 2", "cannot be read as JSON"),
])
def test_garbled_binary_formats(tmp_path, name, content, pattern):
    p = tmp_path / name
    p.write_bytes(content)
    with pytest.raises(DataError, match=pattern):
        read_table(p)


def test_empty_parquet(tmp_path):
    p = tmp_path / "e.parquet"
    pq.write_table(pa.table({"n": pa.array([], pa.int64())}), p)
    with pytest.raises(DataError, match="no data rows"):
        read_counts(p, column="n")


def test_folder_instead_of_file(tmp_path):
    with pytest.raises(DataError, match="is a folder"):
        read_table(tmp_path / ".", format="csv")


@pytest.mark.parametrize("kwargs,pattern", [
    ({"columns": {"a": "number"}}, "kind of column 'a' must be one of"),
    ({"columns": "a"}, "columns must be a dict"),
    ({"columns": {}}, "at least one column"),
    ({"delimiter": ";;"}, "delimiter must be a single character"),
    ({"format": "xlsx"}, "format must be one of"),
])
def test_bad_reader_parameters(tmp_path, kwargs, pattern):
    p = _csv(tmp_path, "a\n1\n")
    with pytest.raises(ParameterError, match=pattern):
        read_table(p, **kwargs)


def test_same_column_twice_rejected(tmp_path):
    p = _csv(tmp_path, "a\n1\n")
    with pytest.raises(ParameterError, match="different columns"):
        read_points(p, lat="a", lon="a")
    with pytest.raises(ParameterError, match="different columns"):
        read_checkins(p, user="a", category="a")


def test_kinds_are_documented():
    assert set(KINDS) == {"float", "int", "count", "lat", "lon", "str", "time"}


def test_quoted_empty_string_is_a_value_unquoted_empty_is_missing(tmp_path):
    p = _csv(tmp_path, 's,t\n"",x\n')
    assert read_columns(p, columns={"s": "str"})["s"].tolist() == [""]
    q = _csv(tmp_path, "s,t\n,x\n", "q.csv")
    with pytest.raises(DataError, match="row 1, column 's': missing value"):
        read_columns(q, columns={"s": "str"})


def test_near_int64_limit_exact(tmp_path):
    top = 2 ** 63 - 1
    p = _csv(tmp_path, f"n\n{top}\n{-top - 1}\n")
    assert read_columns(p, columns={"n": "int"})["n"].tolist() == [top, -top - 1]
    q = _csv(tmp_path, f"n\n{top + 1}\n", "q.csv")
    with pytest.raises(DataError, match="64-bit"):
        read_columns(q, columns={"n": "int"})


def test_duckdb_spills_outside_the_working_directory(tmp_path, monkeypatch):
    """A query over the memory limit spills; DuckDB's default spill directory is `.tmp` in
    the working directory (next to the user's files, and through a planted `.tmp` symbolic
    link), created readable by everyone. veil's connections spill into a directory inside a
    per-user folder that only this user can enter, removed on close."""
    import os
    import stat
    import tempfile

    from veil.io.read import _connect

    work = tmp_path / "work"
    work.mkdir()
    bait = tmp_path / "bait"
    bait.mkdir()
    (work / ".tmp").symlink_to(bait)               # a planted link must receive nothing
    monkeypatch.chdir(work)
    con = _connect()
    con.execute("SET memory_limit = '64MB'")
    con.execute("SET threads = 1")
    spill = con.sql("SELECT current_setting('temp_directory')").fetchall()[0][0]
    rel = con.sql("SELECT i % 3000000 AS g, count(*) AS n FROM range(12000000) t(i) "
                  "GROUP BY g ORDER BY g")
    out = rel.fetchall()
    assert len(out) == 3_000_000
    assert os.path.isdir(spill) and os.listdir(spill)     # it did spill, there
    assert list(bait.iterdir()) == [] and sorted(os.listdir(work)) == [".tmp"]
    root = os.path.dirname(spill)
    assert os.path.dirname(root) == tempfile.gettempdir()
    assert stat.S_IMODE(os.stat(root).st_mode) == 0o700   # others cannot reach the files
    con.close()
    assert not os.path.exists(spill)                       # DuckDB removed it on close


def test_a_planted_spill_folder_is_not_used(tmp_path, monkeypatch):
    """The per-user spill folder is used only when it is a real directory of this user with
    mode 0700: a symbolic link or an open folder planted under its name is passed over."""
    import os
    import stat
    import tempfile

    from veil.io.read import _spill_root

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    name = tmp_path / f"veil-duckdb-{os.getuid()}"
    assert _spill_root() == str(name)
    assert stat.S_IMODE(os.stat(name).st_mode) == 0o700
    os.rmdir(name)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    name.symlink_to(elsewhere)
    got = _spill_root()
    assert got != str(name) and os.path.dirname(got) == str(tmp_path)
    assert stat.S_IMODE(os.lstat(got).st_mode) == 0o700 and not os.path.islink(got)
    name.unlink()
    name.mkdir(mode=0o755)
    os.chmod(name, 0o755)
    assert _spill_root() not in (str(name), got)


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_iter_column_equals_read_columns_and_names_the_same_bad_row(tmp_path, suffix):
    """``iter_column`` (histogram publish reads its column with it, batch by batch) gives the
    values of ``read_columns`` in order, and a bad value in a later batch raises the same
    error naming the same row."""
    from veil.errors import DataError
    from veil.io import iter_column, read_columns

    g = np.random.default_rng(0)
    vals = g.normal(size=25).round(3)
    good = tmp_path / f"good{suffix}"
    write_table({"name": ["a"] * 25, "v": vals}, good)
    batches = list(iter_column(good, "v", batch_rows=4))
    assert [b.size for b in batches] == [4] * 6 + [1]
    np.testing.assert_array_equal(np.concatenate(batches),
                                  read_columns(good, columns={"v": "float"})["v"])
    for bad_value in ("abc", "", "inf"):
        bad = tmp_path / "bad.csv"
        cells = [str(v) for v in vals]
        cells[17] = bad_value
        bad.write_text("v\n" + "\n".join(cells) + "\n")
        with pytest.raises(DataError) as whole:
            read_columns(bad, columns={"v": "float"})
        with pytest.raises(DataError) as batched:
            list(iter_column(bad, "v", batch_rows=4))
        assert str(batched.value) == str(whole.value) and "row 18" in str(whole.value)
    (tmp_path / "empty.csv").write_text("v\n")
    with pytest.raises(DataError, match="no data rows"):
        list(iter_column(tmp_path / "empty.csv", "v"))
    with pytest.raises(DataError, match="did you mean"):
        list(iter_column(good, "V"))


@pytest.mark.parametrize("text,message", [
    ("lat,lon\n1,-180.01\n", "row 1, column 'lon': longitude -180.01 is outside [-180, 180]"),
    ("lat,lon\n0,0\n116.4,39.9\n", "row 2, column 'lat': latitude 116.4 is outside [-90, 90]"),
    ("lat,lon\n91,0\n", "row 1, column 'lat': latitude 91 is outside [-90, 90]")])
def test_out_of_range_coordinates_are_named_as_written(tmp_path, text, message):
    """The message showed numpy's repr (`longitude np.float64(-180.01) is outside ...`), not
    the value docs/io.md shows."""
    from veil.errors import DataError
    from veil.io import read_points

    (tmp_path / "p.csv").write_text(text)
    with pytest.raises(DataError) as exc:
        read_points(tmp_path / "p.csv")
    assert message in str(exc.value) and "np." not in str(exc.value), str(exc.value)


def test_a_folder_without_an_extension_is_named_a_folder(tmp_path):
    """docs/io.md: `file data: is a folder, not a file`; a folder without an extension said
    "cannot tell the format of 'data' from its extension '(none)'"."""
    from veil.errors import DataError
    from veil.io import read_counts

    (tmp_path / "data").mkdir()
    with pytest.raises(DataError, match="is a folder, not a file"):
        read_counts(tmp_path / "data")
