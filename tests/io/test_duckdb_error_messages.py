"""DuckDB's errors never reach a user whole (security probe, defect M1).

DuckDB's CSV errors quote the row they failed on ("Original Line: ..."), values they could
not convert, and list the reader's settings over many lines: ``veil map publish`` on a file
with one byte that is not UTF-8 printed a private row, and a 32 MB field made a 10 KB error
holding the field. Each test fails on the code before the fix. File names hold a quote and
a semicolon.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cli_cases import run_veil
from veil.errors import DataError
from veil.identity import identity_of_file, identity_of_files

HOSTILE = "it's;"
#: the private row of the non-UTF-8 file; none of it may appear in a message
PRIVATE = ("Restaurant", "2026-03-04T10:33:42", "43.9917", "-31.9853")
#: what DuckDB adds to its CSV errors
INTERNALS = ("Original Line", "Invalid Input Error", "CSV Error on Line", "sample_size",
             "Possible Solution", "file = ", "all_varchar")


def _bad_utf8(d: Path) -> Path:
    """Points whose data row 2 holds a byte that is not UTF-8 (row 1 is private)."""
    p = d / f"{HOSTILE}bad.csv"
    p.write_bytes(b"user,cat,time,lat,lon\n"
                  b"0,Restaurant,2026-03-04T10:33:42,43.9917,-31.9853\n"
                  b"1,Caf\xe9,2026-03-04T10:34:00,43.5,-31.5\n"
                  b"2,Bar,2026-03-04T10:35:00,43.6,-31.6\n")
    return p


def _huge_field(d: Path) -> Path:
    """Points whose data row 2 holds a field of 3 MB (DuckDB's line limit is 2 MB)."""
    p = d / f"{HOSTILE}huge.csv"
    p.write_text("user,cat,time,lat,lon\n0,Bar,2026-03-04T10:33:42,43.9917,-31.9853\n"
                 f"1,{'Q' * 3_000_000},2026-03-04T10:34:00,43.5,-31.5\n")
    return p


def _clean(err: str, *extra: str) -> str:
    line = err.strip()
    assert "\n" not in line and line.startswith("veil: error: "), err[:2000]
    assert len(line) < 400, line[:2000]
    for text in PRIVATE + INTERNALS + extra:
        assert text not in line, (text, line[:2000])
    return line


def _map(d: Path, f: Path):
    return run_veil(["map", "publish", f.name, "--protects", "record", "--bbox",
                     "40,-35,45,-30", "--grid", "4x4", "-e", "1", "-o", "map.csv"], d)


def test_map_publish_on_a_non_utf8_file_names_the_row_not_its_content(tmp_path):
    res = _map(tmp_path, _bad_utf8(tmp_path))
    assert res.code == 2
    line = _clean(res.err)
    assert f"file {HOSTILE}bad.csv, row 2: is not UTF-8" in line, line


def test_map_publish_on_a_huge_field_is_a_short_error_without_the_field(tmp_path):
    res = _map(tmp_path, _huge_field(tmp_path))
    assert res.code == 2
    line = _clean(res.err, "QQQQ")
    assert f"{HOSTILE}huge.csv" in line and "2,000,000 bytes" in line, line


def test_identity_errors_never_quote_the_file(tmp_path):
    bad, huge = _bad_utf8(tmp_path), _huge_field(tmp_path)
    for call in (lambda: identity_of_file(bad), lambda: identity_of_files([huge, bad]),
                 lambda: identity_of_files([bad])):
        with pytest.raises(DataError) as info:
            call()
        text = str(info.value)
        assert "\n" not in text and len(text) < 400, text[:2000]
        for s in PRIVATE + INTERNALS + ("QQQQ",):
            assert s not in text, (s, text[:2000])
    with pytest.raises(DataError, match="row 2: is not UTF-8"):
        identity_of_files([tmp_path / _plain(tmp_path), bad])  # the file at fault is named
    with pytest.raises(DataError) as info:
        identity_of_files([tmp_path / _plain(tmp_path), bad])
    assert str(info.value).startswith(f"file {bad}"), str(info.value)


def _plain(d: Path) -> str:
    p = d / "plain.csv"
    p.write_text("user,cat,time,lat,lon\n5,Gym,2026-03-04T11:00:00,43.1,-31.1\n")
    return p.name


# ------------------------------------------------------------------------------ visits
def _hide(d: Path, f: Path):
    return run_veil(["visits", "hide", f.name, "-s", "Bar", "--categories", "Bar,Cafe,Gym",
                     "-o", "out.csv"], d)


def test_visits_hide_on_a_non_utf8_histogram_names_the_file_and_problem(tmp_path):
    f = tmp_path / f"{HOSTILE}hist.csv"
    f.write_bytes(b"category,count\nBar,3\nCaf\xe9,5\nGym,2\n")
    res = _hide(tmp_path, f)
    assert res.code == 2
    line = _clean(res.err)
    assert f"file {f.name}, row 2: is not UTF-8" in line, line


def test_visits_hide_on_a_huge_field_names_the_file_and_problem(tmp_path):
    f = tmp_path / f"{HOSTILE}hist.csv"
    f.write_text(f"category,count\nBar,3\nCafe,{'9' * 3_000_000}\nGym,2\n")
    res = _hide(tmp_path, f)
    assert res.code == 2
    line = _clean(res.err, "9999999999")
    assert f.name in line and "longer than 2,000,000 bytes" in line, line


def test_visits_hide_a_count_that_is_not_a_number_is_named_by_its_row(tmp_path):
    f = tmp_path / f"{HOSTILE}hist.csv"
    f.write_text(f"category,count\nBar,3\nCafe,{'s3cret' * 1000}\nGym,2\n")
    res = _hide(tmp_path, f)
    assert res.code == 2
    line = _clean(res.err, "Conversion Error", "s3cret" * 8)
    assert f"file {f.name}, row 2, column 'count'" in line and "is not a number" in line, line


def test_visits_hide_on_a_non_utf8_check_in_file(tmp_path):
    f = tmp_path / f"{HOSTILE}checkins.csv"
    f.write_bytes(b"user,cat\nu1,Bar\nu1,Restaurant\nu2,Caf\xe9\n")
    res = run_veil(["visits", "hide", f.name, "--user-column", "user", "--category-column",
                    "cat", "-s", "Bar", "--categories", "Bar,Restaurant,Cafe", "-o", "o.csv"],
                   tmp_path)
    assert res.code == 2
    line = _clean(res.err, "histogram")
    assert f"file {f.name}, row 3: is not UTF-8" in line, line


def test_a_duckdb_error_no_code_path_caught_is_not_printed_whole(tmp_path, monkeypatch):
    """The last net: ``veil`` prints a DuckDB error that reached it as one safe line."""
    import duckdb

    import veil.cli.noise

    def fail(*args, **kwargs):
        raise duckdb.InvalidInputException(
            "Invalid Input Error: CSV Error on Line: 3\nOriginal Line: 0,Restaurant,"
            "2026-03-04T10:33:42,43.9917,-31.9853\n\n  file = x.csv\n  sample_size = 20480")

    monkeypatch.setattr(veil.cli.noise, "read_input", fail)
    f = tmp_path / f"{HOSTILE}counts.csv"
    f.write_text("bin,count\na,1\n")
    res = run_veil(["noise", "counts", f.name, "-c", "count", "-e", "1", "-o", "n.csv"],
                   tmp_path)
    assert res.code == 1
    line = res.err.strip()
    assert "\n" not in line and line.startswith("veil: internal error: "), line
    for text in PRIVATE + ("Original Line", "file = ", "sample_size"):
        assert text not in line, (text, line)
    assert "InvalidInputException: CSV Error on Line: 3" in line, line


def _surrogate_key_json(d: Path) -> Path:
    """A JSON array (with a byte-order mark) whose key escapes a surrogate pair: DuckDB hands
    the struct back as CESU-8 and its Python binding raises UnicodeDecodeError (found by
    ``tests/test_fuzz_commands.py``)."""
    p = d / f"{HOSTILE}odd.json"
    p.write_bytes(b'\xef\xbb\xbf[{"lat": 0.0, "lon": 0.0, "user": "", "user": false, '
                  b'"\\u0080\\ud800\\udc00": 0}]')
    return p


def test_text_duckdb_cannot_return_as_utf8_is_a_named_error(tmp_path):
    """``veil map publish`` printed "veil: error: 'utf-8' codec can't decode bytes in position
    142-144: invalid continuation byte" (no file); the identity and the reader raised the bare
    UnicodeDecodeError."""
    f = _surrogate_key_json(tmp_path)
    res = run_veil(["map", "publish", f.name, "--lat-column", "lat", "--lon-column", "lon",
                    "--protects", "record", "--bbox", "0,0,1,1", "--grid", "4x4", "-e", "1",
                    "-o", "m.csv"], tmp_path)
    assert res.code == 2, res.err
    line = res.err.strip()
    assert "\n" not in line and line.startswith(f"veil: error: file {f.name}: holds text"), line
    assert "codec" not in line and not (tmp_path / "m.csv").exists()
    with pytest.raises(DataError, match="invalid UTF-8") as info:
        identity_of_file(f)
    assert f.name in str(info.value)
    from veil.io import read_table

    with pytest.raises(DataError, match="invalid UTF-8") as info:
        read_table(f)
    assert f.name in str(info.value)
