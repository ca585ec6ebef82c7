"""A JSON array after a UTF-8 byte-order mark is read as the array it is.

Windows tools write a BOM in front of UTF-8 JSON. DuckDB's ``read_json_auto`` then read
``\\ufeff[{...}, {...}]`` as one row of one column ``json`` holding the whole list: every
command said ``column 'lat' is not one of ['json']``, and the content identity differed from
the same data without the mark. Every JSON read goes through ``veil.io.sql.read_json``, which
reads such a file with ``format = 'array'``, and every JSON file with ``records = true``. The
tests fail on the code before the fix, except the last one (a record keyed ``json``), which
guards the other side; the file names are hostile.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli_cases import run_veil
from veil.errors import DataError
from veil.identity import identity_of_file, identity_of_files
from veil.io import read_table

NAME = "it's;"
ROWS = [{"user": f"u{i % 5}", "lat": 0.1 + 0.01 * i, "lon": 0.2 + 0.01 * i,
         "cat": ["Bar", "Park", "Gym"][i % 3]} for i in range(40)]


def _pair(d: Path, lead: bytes = b"\xef\xbb\xbf") -> tuple[Path, Path]:
    text = json.dumps(ROWS).encode()
    plain, marked = d / f"{NAME}plain.json", d / f"{NAME}bom.json"
    plain.write_bytes(text)
    marked.write_bytes(lead + text)
    return plain, marked


@pytest.mark.parametrize("lead", [b"\xef\xbb\xbf", b"\xef\xbb\xbf \r\n\t"],
                         ids=["bom", "bom-then-blanks"])
def test_a_marked_json_array_reads_and_identifies_as_the_plain_one(tmp_path, lead):
    plain, marked = _pair(tmp_path, lead)
    a, b = read_table(plain), read_table(marked)
    assert b.column_names == ["user", "lat", "lon", "cat"] and b.num_rows == 40
    assert a.equals(b)
    assert identity_of_file(plain).id == identity_of_file(marked).id
    assert identity_of_files([plain]).id == identity_of_files([marked]).id


def test_map_publish_of_a_marked_json_array_is_the_plain_files_release(tmp_path, monkeypatch):
    plain, marked = _pair(tmp_path)
    outs = []
    for f in (plain, marked):   # one home each: the two files are the same dataset
        monkeypatch.setenv("VEIL_HOME", str(tmp_path / f"home-{f.stem}"))
        out = f"m-{f.stem}.csv"
        res = run_veil(["map", "publish", f.name, "--protects", "record", "--bbox", "0,0,1,1",
                        "--grid", "4x4", "-m", "identity", "-e", "1", "--seed", "3", "-o", out],
                       tmp_path)
        assert res.code == 0, res.err
        outs.append((tmp_path / out).read_bytes())
    assert outs[0] == outs[1]


def test_batch_counts_of_a_marked_json_array_is_the_plain_files_job(tmp_path, monkeypatch):
    plain, marked = _pair(tmp_path)
    parts = []
    for f in (plain, marked):
        monkeypatch.setenv("VEIL_HOME", str(tmp_path / f"home-{f.stem}"))
        out = tmp_path / f"out-{f.stem}"
        res = run_veil(["batch", "counts", f.name, "-o", out.name, "--categories",
                        "Bar,Park,Gym", "-e", "1", "--user-column", "user",
                        "--category-column", "cat", "--seed", "5", "--quiet"], tmp_path)
        assert res.code == 0, res.err
        parts.append(sorted((p.name, p.read_bytes()) for p in out.glob("part-*")))
    assert parts[0] and parts[0] == parts[1]


@pytest.mark.parametrize("text", ["[]", "\ufeff[]", "[1, 2, 3]", "[[1, 2], [3]]", "\"a\"\n\"b\"\n"],
                         ids=["empty", "bom-empty", "numbers", "lists", "ndjson-strings"])
def test_json_without_records_is_named_as_such(tmp_path, text):
    """DuckDB read these as one column ``json``; the commands then said ``column 'lat' is not
    one of ['json']``, and a file whose one key is ``json`` was indistinguishable. JSON is read
    with ``records = true``, and the message says what veil reads."""
    f = tmp_path / f"{NAME}odd.json"
    f.write_bytes(text.encode())
    with pytest.raises(DataError, match="holds no JSON records") as info:
        read_table(f)
    assert f.name in str(info.value)
    res = run_veil(["map", "publish", f.name, "--protects", "record", "--bbox", "0,0,1,1",
                    "--grid", "4x4", "-e", "1", "-o", "m.csv"], tmp_path)
    assert res.code == 2 and f"file {f.name}: holds no JSON records" in res.err, res.err
    assert not (tmp_path / "m.csv").exists()


def test_a_record_whose_one_key_is_json_is_still_a_record(tmp_path):
    """The other side of the test above (it passed before the change too)."""
    f = tmp_path / "k.json"
    f.write_text('[{"json": 5}, {"json": 7}]')
    t = read_table(f)
    assert t.column_names == ["json"] and t.column("json").to_pylist() == [5, 7]


def test_a_marked_array_with_a_blank_key_names_the_blank_key(tmp_path):
    """The blank-key check read the file's objects without the array format, so behind a
    byte-order mark it saw one array and reported "the records have 0 different keys"."""
    f = tmp_path / f"{NAME}blank.json"
    f.write_bytes(b'\xef\xbb\xbf' + json.dumps([{"lat": 1.0, "": "x"}]).encode())
    with pytest.raises(DataError, match="a record has a blank key"):
        read_table(f)
