"""Acceptance: malformed inputs (files and parameters) give one clear line and no output.

Each case runs the whole pipeline -- the ``veil`` entry point for the command-line
cases, read-then-write for the library cases -- into an empty output folder, then
checks (1) the exit status / exception type, (2) that the message names the file,
row, column or parameter concerned, and (3) that the output folder is still empty:
no output file, no sidecar and no temporary file.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from veil.cli import main
from veil.errors import DataError, ParameterError, VeilError
from veil.io import read_checkins, read_counts, read_points, write_table

GOOD = "bin,count\na,10\nb,0\nc,5\n"

# (id, input file name, input content (str/bytes/None = do not create), extra argv,
#  substrings that the one-line message must contain). "{in}" is the input path,
#  "{out}" the output folder.
CLI_CASES = [
    ("missing-file", "nope.csv", None, [], ["{in}", "no such file"]),
    ("empty-file", "h.csv", "", [], ["{in}", "empty"]),
    ("header-only", "h.csv", "bin,count\n", [], ["{in}", "no data rows"]),
    ("missing-column", "h.csv", "bin,cnt\na,1\n", [], ["{in}", "column 'count'", "did you mean 'cnt'"]),
    ("non-numeric", "h.csv", "bin,count\na,1\nb,many\n", [],
     ["{in}", "row 2", "column 'count'", "'many' is not a number"]),
    ("negative-count", "h.csv", "bin,count\na,1\nb,2\nc,-3\n", [],
     ["{in}", "row 3", "column 'count'", "negative"]),
    ("fractional-count", "h.csv", "bin,count\na,1.5\n", [],
     ["{in}", "row 1", "column 'count'", "not an integer count"]),
    ("empty-cell", "h.csv", "bin,count\na,1\nb,\n", [],
     ["{in}", "row 2", "column 'count'", "missing value"]),
    ("nan-count", "h.csv", "bin,count\na,nan\n", [], ["{in}", "row 1", "column 'count'", "finite"]),
    ("int64-overflow", "h.csv", "bin,count\na,99999999999999999999999\n", [],
     ["{in}", "row 1", "column 'count'", "64-bit"]),
    ("ragged-row", "h.csv", "bin,count\na,1\nb,2,3\n", [], ["{in}", "row 2", "3 field"]),
    ("binary-garbage-csv", "h.csv", b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe\x00", [], ["{in}", "UTF-8"]),
    ("garbled-parquet", "h.parquet", b"PAR1garbagegarbage", [], ["{in}", "Parquet"]),
    ("garbled-json", "h.json", "[{\"count\": 1}, {\"count\":", [], ["{in}", "JSON"]),
    ("unknown-extension", "h.xlsx", GOOD, [], ["INPUT", "h.xlsx", "--input-format"]),
    ("bad-input-format", "h.csv", GOOD, ["--input-format", "excel"], ["--input-format", "'excel'"]),
    ("input-is-folder", "adir.csv", "DIR", [], ["{in}", "folder"]),
    ("epsilon-zero", "h.csv", GOOD, ["-e", "0"], ["--epsilon", "0"]),
    ("epsilon-negative", "h.csv", GOOD, ["-e", "-2"], ["--epsilon", "-2"]),
    ("epsilon-nan", "h.csv", GOOD, ["-e", "nan"], ["--epsilon", "NaN"]),
    ("epsilon-inf", "h.csv", GOOD, ["-e", "inf"], ["--epsilon", "inf"]),
    ("epsilon-text", "h.csv", GOOD, ["-e", "big"], ["--epsilon", "valid number"]),
    ("sensitivity-zero", "h.csv", GOOD, ["--sensitivity", "0"], ["--sensitivity", "0"]),
    ("bad-format", "h.csv", GOOD, ["--format", "xml"], ["--format", "'xml'"]),
    ("output-folder-missing", "h.csv", GOOD, ["-o", "{out}/no/such/dir/o.csv"],
     ["--output", "does not exist"]),
    ("output-is-folder", "h.csv", GOOD, ["-o", "{out}"], ["--output", "folder"]),
    ("semicolon-delimited", "h.csv", "bin;count\na;1\n", [],
     ["{in}", "column 'count'", "';'-delimited", "--delimiter"]),
    ("bad-delimiter", "h.csv", GOOD, ["--delimiter", "::"], ["--delimiter", "'::'"]),
    ("format-mismatch", "h.csv", GOOD, ["--format", "parquet"],
     ["--format parquet", "noisy.csv", "csv extension"]),
    ("missing-column-option", "h.csv", GOOD, ["--column"], ["--column"]),
]


def _run(argv, capsys):
    try:
        main(argv)
        code = 0
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("case", CLI_CASES, ids=[c[0] for c in CLI_CASES])
def test_cli_bad_input(case, tmp_path, capsys):
    _, name, content, extra, expect = case
    src_dir = tmp_path / "in"
    out_dir = tmp_path / "out"
    src_dir.mkdir()
    out_dir.mkdir()
    src = src_dir / name
    if content == "DIR":
        src.mkdir()
    elif isinstance(content, bytes):
        src.write_bytes(content)
    elif content is not None:
        src.write_text(content)
    extra = [a.replace("{out}", str(out_dir)) for a in extra]
    argv = ["noise", "counts", str(src)]
    if "--column" not in extra:
        argv += ["--column", "count"]
    if "-e" not in extra:
        argv += ["-e", "1"]
    if "-o" not in extra:
        argv += ["-o", str(out_dir / "noisy.csv")]
    argv += extra
    if argv[-1] == "--column":  # an option given without its value
        argv = ["noise", "counts", str(src), "-e", "1", "-o", str(out_dir / "noisy.csv"),
                "--column"]
    code, stdout, err = _run(argv, capsys)
    assert code == 2, (stdout, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    line = lines[0]
    assert line.startswith("veil: error: ") and "Traceback" not in err
    for piece in expect:
        assert piece.replace("{in}", str(src)).replace("{out}", str(out_dir)) in line, line
    assert list(out_dir.iterdir()) == [], "an output or temporary file was left behind"
    assert sorted(p.name for p in src_dir.iterdir()) == ([name] if content is not None else [])


def test_cli_failure_while_writing_leaves_nothing(tmp_path, capsys, monkeypatch):
    import veil.io.write as W

    def partial_then_fail(arrow, tmp, fmt, final):
        tmp.write_text("bin,count\na,1")
        raise OSError(f"cannot write {str(final)!r} as {fmt}: No space left on device")

    monkeypatch.setattr(W, "_copy", partial_then_fail)
    src = tmp_path / "h.csv"
    src.write_text(GOOD)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    out = out_dir / "noisy.parquet"
    code, _, err = _run(["noise", "counts", str(src), "-c", "count", "-e", "1", "-o", str(out)],
                        capsys)
    assert code == 2
    assert err.strip().splitlines() == [
        f"veil: error: cannot write {str(out)!r} as parquet: No space left on device"]
    assert list(out_dir.iterdir()) == []


def test_cli_failure_keeps_existing_output(tmp_path, capsys):
    src = tmp_path / "h.csv"
    src.write_text("bin,count\na,-1\n")
    out = tmp_path / "noisy.csv"
    out.write_text("previous release\n")
    code, _, err = _run(["noise", "counts", str(src), "-c", "count", "-e", "1", "-o", str(out)],
                        capsys)
    assert code == 2 and "negative" in err
    assert out.read_text() == "previous release\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["h.csv", "noisy.csv"]


# ---------------------------------------------------------------- library pipelines


def _points_pipeline(src: Path, out: Path, **kw):
    pts = read_points(src, **kw)
    write_table({"lat": pts[:, 0], "lon": pts[:, 1]}, out)


def _checkins_pipeline(src: Path, out: Path, **kw):
    ci = read_checkins(src, **kw)
    write_table(ci, out)


def _counts_pipeline(src: Path, out: Path, **kw):
    write_table({"count": read_counts(src, **kw)}, out)


LIB_CASES = [
    ("lat-out-of-range", _points_pipeline, "p.csv", "lat,lon\n10,20\n91,20\n", {},
     DataError, ["row 2", "column 'lat'", "outside [-90, 90]"]),
    ("lon-out-of-range", _points_pipeline, "p.csv", "lat,lon\n10,-180.01\n", {},
     DataError, ["row 1", "column 'lon'", "outside [-180, 180]"]),
    ("nan-coordinate", _points_pipeline, "p.csv", "lat,lon\n10,20\nNaN,20\n", {},
     DataError, ["row 2", "column 'lat'", "finite"]),
    ("inf-coordinate", _points_pipeline, "p.csv", "lat,lon\n10,20\n1,-inf\n", {},
     DataError, ["row 2", "column 'lon'", "finite"]),
    ("swapped-lat-lon", _points_pipeline, "p.csv", "lat,lon\n-73.9,40.7\n-122.4,37.8\n", {},
     DataError, ["row 2", "column 'lat'", "swapped"]),
    ("text-coordinate", _points_pipeline, "p.csv", "lat,lon\n10,20\n1 N,2 E\n", {},
     DataError, ["row 2", "column 'lat'", "'1 N' is not a number"]),
    ("missing-lon-column", _points_pipeline, "p.csv", "lat,lng\n10,20\n", {},
     DataError, ["column 'lon'", "did you mean 'lng'"]),
    ("same-lat-lon", _points_pipeline, "p.csv", "lat,lon\n10,20\n", {"lat": "lat", "lon": "lat"},
     ParameterError, ["lat and lon", "'lat'"]),
    ("checkin-missing-user", _checkins_pipeline, "c.csv", "user,category\nu1,Food\n,Gym\n", {},
     DataError, ["row 2", "column 'user'", "missing value"]),
    ("checkin-bad-time", _checkins_pipeline, "c.csv", "user,category,t\nu1,Food,2012-01-01\nu2,Gym,soon\n",
     {"time": "t"}, DataError, ["row 2", "column 't'", "'soon' is not a time"]),
    ("parquet-negative", _counts_pipeline, "n.json", "[{\"count\": 3}, {\"count\": -1}]", {},
     DataError, ["row 2", "column 'count'", "negative"]),
    ("counts-bad-kind-param", _counts_pipeline, "n.csv", "count\n1\n", {"column": ""},
     ParameterError, ["column names must be non-empty"]),
]


@pytest.mark.parametrize("case", LIB_CASES, ids=[c[0] for c in LIB_CASES])
def test_library_bad_input(case, tmp_path):
    _, pipeline, name, content, kw, exc_type, expect = case
    src = tmp_path / name
    src.write_text(content)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    with pytest.raises(exc_type) as ei:
        pipeline(src, out_dir / "result.csv", **kw)
    assert isinstance(ei.value, VeilError) and isinstance(ei.value, ValueError)
    msg = str(ei.value)
    assert "\n" not in msg
    if exc_type is DataError:
        assert msg.startswith(f"file {src}")
        assert ei.value.path == str(src)
    for piece in expect:
        assert piece in msg, msg
    assert list(out_dir.iterdir()) == []


def test_at_least_twenty_malformed_inputs():
    assert len(CLI_CASES) + len(LIB_CASES) >= 20
    assert len({c[0] for c in CLI_CASES + LIB_CASES}) == len(CLI_CASES) + len(LIB_CASES)


def test_sidecar_is_valid_json_on_success(tmp_path, capsys):
    src = tmp_path / "h.csv"
    src.write_text(GOOD)
    out = tmp_path / "o.json"
    code, _, err = _run(["noise", "counts", str(src), "-c", "count", "-e", "1", "-o", str(out)],
                        capsys)
    assert code == 0, err
    assert [r["bin"] for r in json.loads(out.read_text())] == ["a", "b", "c"]
    assert json.loads((tmp_path / "o.json.meta.json").read_text())["mechanism"] == "geometric"
