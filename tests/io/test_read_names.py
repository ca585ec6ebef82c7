"""Readers keep column names exactly as written and refuse files whose names are ambiguous.

DuckDB trims padded header names, renames blank ones (``column1``) and renames names that
differ only in case (``Sex``/``sex`` -> ``Sex``/``sex_1``); veil reads the header itself and
gives SQL only positional names, so what is read (and written back with ``keep_others``) is
the file's own header. Nested (list/struct) cells and booleans are never taken as numbers or
text silently.
"""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from veil.errors import DataError
from veil.io import read_columns, read_table, write_table


@pytest.mark.parametrize("name", [" sp ", "\t", "new\nline", "é 名", 'a"b', "it's", "a,b",
                                  'user" IS NULL OR (SELECT 1) > 0 OR "user'])
def test_csv_header_names_are_kept_exactly(tmp_path, name):
    p = tmp_path / "h.csv"
    write_table({name: np.array([3, 4]), "other": np.array(["x", "y"])}, p)
    t = read_table(p, columns={name: "count"}, keep_others=True)
    assert t.column_names == [name, "other"]
    assert t.column(name).to_pylist() == [3, 4]
    assert t.column("other").to_pylist() == ["x", "y"]


def test_names_differing_in_case_are_different_columns(tmp_path):
    p = tmp_path / "c.csv"
    p.write_text("Sex,sex\nF,1\nM,2\n")
    cols = read_columns(p, columns={"Sex": "str", "sex": "count"})
    assert cols["Sex"].tolist() == ["F", "M"] and cols["sex"].tolist() == [1, 2]
    q = tmp_path / "c.parquet"
    pq.write_table(pa.table({"Sex": ["F", "M"], "sex": [1, 2]}), q)
    cols = read_columns(q, columns={"Sex": "str", "sex": "count"})
    assert cols["Sex"].tolist() == ["F", "M"] and cols["sex"].tolist() == [1, 2]


def test_blank_header_name_round_trips(tmp_path):
    p = tmp_path / "b.csv"
    p.write_text("n,\n1,x\n2,y\n")
    t = read_table(p, columns={"n": "count"}, keep_others=True)
    assert t.column_names == ["n", ""]
    out = tmp_path / "o.csv"
    write_table(t, out)
    assert out.read_text().splitlines()[0] == "n,"


def test_bom_and_crlf_header(tmp_path):
    p = tmp_path / "bom.csv"
    p.write_bytes(b"\xef\xbb\xbfn,s\r\n1,a\r\n2,b\r\n")
    cols = read_columns(p, columns={"n": "count", "s": "str"})
    assert cols["n"].tolist() == [1, 2] and cols["s"].tolist() == ["a", "b"]


@pytest.mark.parametrize("header", ["a,a", "a,b,a"])
def test_duplicate_csv_names_refused(tmp_path, header):
    p = tmp_path / "d.csv"
    width = header.count(",") + 1
    p.write_text(header + "\n" + ",".join(["1"] * width) + "\n")
    with pytest.raises(DataError, match="appears twice") as ei:
        read_table(p, columns={"b" if "b" in header else "a": "int"})
    assert ei.value.column == "a" and str(p) in str(ei.value)


def test_duplicate_parquet_names_refused(tmp_path):
    p = tmp_path / "d.parquet"
    pq.write_table(pa.Table.from_arrays([pa.array([1]), pa.array([2])], names=["a", "a"]), p)
    with pytest.raises(DataError, match="appears twice"):
        read_table(p, columns={"a": "int"})


def test_json_keys_differing_only_in_case_refused(tmp_path):
    p = tmp_path / "k.json"
    p.write_text(json.dumps([{"a": 1, "A": 2}]))
    with pytest.raises(DataError, match="differ only in case"):
        read_table(p, columns={"A": "int"})


def test_header_that_is_not_utf8(tmp_path):
    p = tmp_path / "l.csv"
    p.write_bytes("caf\u00e9,n\n1,2\n".encode("latin-1"))
    with pytest.raises(DataError, match="UTF-8") as ei:
        read_table(p, columns={"n": "int"})
    assert str(p) in str(ei.value)


@pytest.mark.parametrize("kind", ["str", "count", "float", "lat", "time"])
def test_parquet_list_column_is_refused_for_every_kind(tmp_path, kind):
    p = tmp_path / "l.parquet"
    pq.write_table(pa.table({"v": pa.array([[1, 2], [3]]), "w": [1, 2]}), p)
    with pytest.raises(DataError, match="nested values") as ei:
        read_table(p, columns={"v": kind})
    assert ei.value.column == "v"


def test_parquet_struct_column_is_refused(tmp_path):
    p = tmp_path / "s.parquet"
    pq.write_table(pa.table({"u": pa.array([{"x": 1}, {"x": 2}])}), p)
    with pytest.raises(DataError, match="nested values"):
        read_columns(p, columns={"u": "str"})


def test_json_array_cell_in_a_mixed_column_names_the_row(tmp_path):
    p = tmp_path / "m.json"
    p.write_text(json.dumps([{"u": "a"}, {"u": 3}, {"u": [1, 2]}]))
    with pytest.raises(DataError, match="list or an object") as ei:
        read_columns(p, columns={"u": "str"})
    assert ei.value.row == 3 and ei.value.column == "u"


def test_boolean_is_not_a_number(tmp_path):
    p = tmp_path / "b.parquet"
    pq.write_table(pa.table({"n": [True, False]}), p)
    with pytest.raises(DataError, match="not a number") as ei:
        read_columns(p, columns={"n": "count"})
    assert ei.value.row == 1


def test_numeric_category_codes_read_as_text(tmp_path):
    p = tmp_path / "n.parquet"
    pq.write_table(pa.table({"user": pa.array([1, 2], pa.int32()),
                             "category": pa.array([7, 7], pa.int64())}), p)
    cols = read_columns(p, columns={"user": "str", "category": "str"})
    assert cols["user"].tolist() == ["1", "2"] and cols["category"].tolist() == ["7", "7"]


@pytest.mark.parametrize("name", ["o[1].csv", "o?.parquet", "o*.json", "o{a}.csv", "it's.csv"])
def test_output_path_with_glob_characters_is_written_exactly(tmp_path, name):
    out = tmp_path / name
    write_table({"n": np.array([1, 2])}, out)
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]
    assert read_columns(out, columns={"n": "int"})["n"].tolist() == [1, 2]


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_case_twin_and_blank_names_are_written_as_they_are(tmp_path, fmt):
    t = pa.table({"Sex": ["F", "M"], "sex": [1, 2], "": ["a, b", 'q"x']})
    out = tmp_path / f"o.{fmt}"
    write_table(t, out)
    back = read_table(out, columns={"Sex": "str", "sex": "count"}, keep_others=True)
    assert back.column_names == ["Sex", "sex", ""]
    assert back.column("").to_pylist() == ["a, b", 'q"x']
    if fmt == "csv":
        assert out.read_text().splitlines()[0] == "Sex,sex,"


def test_json_output_refuses_names_it_cannot_keep(tmp_path):
    from veil.errors import ParameterError

    with pytest.raises(ParameterError, match="differing only in case"):
        write_table(pa.table({"Sex": [1], "sex": [2]}), tmp_path / "o.json")
    assert list(tmp_path.iterdir()) == []


def test_longer_last_row_in_a_crlf_file_is_a_ragged_row(tmp_path):
    """DuckDB took the longer last row of a CRLF file for the header and read no rows."""
    p = tmp_path / "r.csv"
    p.write_bytes(b"a,b\r\n1,2\r\n3,4,5\r\n")
    with pytest.raises(DataError, match="has 3 field") as ei:
        read_table(p, columns={"a": "int"})
    assert ei.value.row == 2
