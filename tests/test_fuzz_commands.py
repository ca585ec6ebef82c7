"""Fuzzing every reader of ``veil.io`` and every non-batch command with odd files (issue 20, 7).

Files come from ``fuzz_files.file_specs``: CSV/Parquet/JSON with hostile, blank, duplicate
and case-twin names, NaN/inf/huge numbers, empty cells, numeric codes, booleans, lists and
structs, dates, BOMs, CRLF, no final newline, header-only and empty files, bytes that are
not UTF-8, NULs and truncated ends.

Properties:
- a reader returns columns of the documented types and, for CSV, exactly the values
  written; or raises ``DataError`` naming the file (``ParameterError`` for a bad argument);
  never another exception, never a numpy ``RuntimeWarning``;
- a command exits 0 and writes its declared outputs (no temporary file left), or exits 2
  with ONE line ``veil: error: ...`` naming the input file or an option, and leaves the
  folder exactly as it was (no partial output); never "internal error", never a
  ``RuntimeWarning``. (``table constraints check`` also exits 1 when a constraint fails.)

The default (CI) run is bounded: a few dozen examples per test, well under 60 s for the
file on an idle machine; ``-m slow`` runs the same properties with many more examples.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cli_cases import listing, run_veil
from fuzz_files import USUAL, file_specs, names
from veil.errors import DataError, ParameterError
from veil.io import read_checkins, read_columns, read_counts, read_points, read_table

# these tests release the same data many times on purpose (see tests/conftest.py)
pytestmark = pytest.mark.usefixtures("repeat_releases")

FAST = settings(max_examples=25, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
SLOW = settings(max_examples=400, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

_READ_KINDS = ["float", "int", "count", "lat", "lon", "str", "time"]


# ----------------------------------------------------------------------------- readers

def _check_reader(spec, data):
    with tempfile.TemporaryDirectory() as tmp:
        path = spec.write(Path(tmp) / f"f{spec.suffix}")
        reader = data.draw(st.sampled_from(["table", "columns", "points", "counts",
                                            "checkins", "all"]))
        pool = list(dict.fromkeys(spec.names)) + [data.draw(names)]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                out = _call_reader(reader, path, pool, data, spec)
            except DataError as exc:
                assert str(path) in str(exc), str(exc)
                out = None
            except ParameterError as exc:
                assert "column" in str(exc) or "lat" in str(exc) or "user" in str(exc), exc
                out = None
        assert not [w for w in caught if issubclass(w.category, RuntimeWarning)], \
            [str(w.message) for w in caught]
        if out is not None:
            _check_values(spec, reader, out)


_NATURAL_READ = {"text": ["str"], "code": ["count", "int", "str", "float"], "int": ["int"],
                 "float": ["float"], "lat": ["lat", "float"], "lon": ["lon", "float"],
                 "time": ["time", "int", "count"], "date": ["time"], "bool": ["str"],
                 "list": ["str"], "struct": ["str"], "huge": ["int"]}


def _call_reader(reader, path, pool, data, spec):
    pick = lambda: data.draw(st.sampled_from(pool))  # noqa: E731
    if reader == "all":
        return ("all", read_table(path))
    if reader == "points":
        return ("points", read_points(path, lat=pick(), lon=pick()))
    if reader == "counts":
        col = pick()
        return ("counts", col, read_counts(path, column=col))
    if reader == "checkins":
        return ("checkins", read_checkins(path, user=pick(), category=pick()))
    cols = {}
    for _ in range(data.draw(st.integers(1, 3))):
        name = pick()
        natural = [_NATURAL_READ[k] for n, k in zip(spec.names, spec.kinds) if n == name]
        if natural and data.draw(st.integers(0, 3)) > 0:  # 75%: the kind it was written as
            cols[name] = data.draw(st.sampled_from(natural[0]))
        else:
            cols[name] = data.draw(st.sampled_from(_READ_KINDS))
    keep = data.draw(st.booleans())
    if reader == "table":
        return ("table", cols, keep, read_table(path, columns=cols, keep_others=keep))
    return ("columns", cols, read_columns(path, columns=cols))


_ARROW_TYPES = {"float": pa.float64(), "lat": pa.float64(), "lon": pa.float64(),
                "int": pa.int64(), "count": pa.int64(), "str": pa.string()}


def _check_values(spec, reader, out):
    """A successful read returns the documented types and, for CSV, the values written."""
    kind = out[0]
    if kind == "all":
        assert out[1].column_names == spec.names
        return
    if kind == "points":
        pts = out[1]
        assert pts.dtype == np.float64 and pts.ndim == 2 and pts.shape[1] == 2
        assert np.isfinite(pts).all() and (np.abs(pts[:, 0]) <= 90).all()
        return
    if kind == "counts":
        counts = out[2]
        assert counts.dtype == np.int64 and (counts >= 0).all()
        _compare_csv(spec, out[1], "count", counts)
        return
    if kind == "checkins":
        ci = out[1]
        assert len(ci["user"]) == len(ci["category"])
        assert spec.damage != "none" or len(ci["user"]) == len(spec.rows)
        return
    cols = out[1]
    if kind == "table":
        table = out[3]
        want = spec.names if out[2] else list(cols)
        assert table.column_names == want
        for name, k in cols.items():
            if k in _ARROW_TYPES:
                assert table.schema.field(name).type == _ARROW_TYPES[k], (name, k)
            _compare_csv(spec, name, k, table.column(name).to_numpy(zero_copy_only=False))
    else:
        for name, k in cols.items():
            _compare_csv(spec, name, k, out[2][name])


def _compare_csv(spec, name, kind, got):
    """CSV cells are read exactly as written (text as text, numbers parsed from the text)."""
    if spec.damage != "none":  # a truncated file has fewer rows; that is what was written
        return
    assert len(got) == len(spec.rows)
    if spec.fmt != "csv":
        return
    j = spec.names.index(name)
    from fuzz_files import _csv_text

    text = ["" if row[j] is None else _csv_text(row[j]) for row in spec.rows]
    if kind == "str":
        assert list(got) == text, (list(got), text)
    elif kind in ("float", "lat", "lon"):
        np.testing.assert_array_equal(np.asarray(got, dtype=np.float64),
                                      [float(t) for t in text])
    elif kind in ("int", "count"):
        assert [int(v) for v in got] == [int(float(t)) if "e" in t.lower() or "." in t
                                         else int(t) for t in text]


@FAST
@given(spec=file_specs(want=["lat", "lon", "count", "user", "category"]), data=st.data())
def test_readers_fuzz(spec, data):
    _check_reader(spec, data)


@pytest.mark.slow
@SLOW
@given(spec=file_specs(want=["lat", "lon", "count", "user", "category"]), data=st.data())
def test_readers_fuzz_slow(spec, data):
    _check_reader(spec, data)


# ----------------------------------------------------------------------------- commands

def _model(folder: Path) -> Path:
    """A small public mobility model for `trajectory release` (built once per process)."""
    cache = Path(tempfile.gettempdir()) / "veil-fuzz-model" / "model.npz"
    if not cache.exists():
        from cli_cases import _BEIJING, write_csv

        cache.parent.mkdir(parents=True, exist_ok=True)
        write_csv(cache.parent / "train.csv", ["time", "lat", "lon"], [list(r) for r in _BEIJING])
        res = run_veil(["trajectory", "model", "train.csv", "--grid", "beijing:5", "-o",
                        "model.npz"], cache.parent)
        assert res.code == 0, res.err
    shutil.copy(cache, folder / "model.npz")
    return folder / "model.npz"


_MAP_SIDECAR: list[bytes] = []


def _map_sidecar(target: Path) -> None:
    """The sidecar of a published 4x4 world map (built once per process), written to target."""
    if not _MAP_SIDECAR:
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / "p.csv").write_text("lat,lon\n1,2\n-3,4\n", encoding="utf-8")
            res = run_veil(["map", "publish", "p.csv", "--protects", "record", "--bbox",
                            "-90,-180,90,180", "--grid", "4x4", "-e", "1", "--method",
                            "identity", "-o", "map.csv"], Path(tmp))
            assert res.code == 0, res.err
            _MAP_SIDECAR.append((Path(tmp) / "map.csv.meta.json").read_bytes())
    target.write_bytes(_MAP_SIDECAR[0])


#: command -> (columns it usually wants, argv builder(file name, pick) -> (argv, outputs))
def _cmd_noise(f, pick):
    return (["noise", "counts", f, "-c", pick("count"), "-e", "1", "-o", "out.csv"],
            ["out.csv", "out.csv.meta.json"])


def _cmd_hist(f, pick):
    return (["histogram", "publish", f, "-c", pick("age"), "-e", "1", "--bins", "0:100:5",
             "-o", "out.csv"], ["out.csv", "out.csv.meta.json"])


def _cmd_hist_counts(f, pick):
    return (["histogram", "publish", f, "-c", pick("count"), "--counts", "-e", "1",
             "-o", "out.csv"], ["out.csv", "out.csv.meta.json"])


def _cmd_hist_evaluate(f, pick):
    return (["histogram", "evaluate", "published.csv", "--true", f, "--true-column",
             pick("count")], [])


def _cmd_location(f, pick):
    return (["location", "obfuscate", f, "--lat-column", pick("lat"), "--lon-column", pick("lon"), "-e",
             "0.01", "-o", "out.csv"], ["out.csv", "out.csv.meta.json"])


def _cmd_traj_model(f, pick):
    return (["trajectory", "model", f, "--grid", "beijing:5", "-o", "m.npz"], ["m.npz"])


def _cmd_traj_release(f, pick):
    return (["trajectory", "release", f, "-e", "1", "-d", "0.1", "--model", "model.npz",
             "--on-invalid", pick("drop-or-error"), "-o", "out.csv"],
            ["out.csv", "out.csv.meta.json"])


def _cmd_visits(problem):
    def build(f, pick):
        argv = ["visits", problem, f, "--user-column", pick("user"), "--category-column",
                pick("category"), "-o", "out.csv"]
        if problem == "hide":
            argv += ["-s", pick("sensitive"), "--categories", "Bar,Park,Gym,u1,0"]
        else:
            argv += ["--target", "target.json", "--quality-bound", "0.5"]
        return argv, ["out.csv", "out.csv.meta.json"]
    return build


def _cmd_anonymize(f, pick):
    return (["table", "anonymize", f, "--k", "2", "--qi", f"{pick('age')},{pick('sex')}",
             "-o", "out.csv"], ["out.csv", "out.csv.meta.json"])


def _cmd_risk(f, pick):
    return (["table", "risk", f, "--qi", f"{pick('age')},{pick('sex')}", "-o", "risk.json"],
            ["risk.json"])


def _cmd_check(f, pick):
    return ["table", "constraints", "check", f, "--constraints", "cons.txt"], []


def _cmd_map_publish(f, pick):
    unit = pick("user-or-record")
    who = (["--user-column", pick("user"), "--max-points", "3"] if unit == "user"
           else ["--protects", "record"])
    return (["map", "publish", f, "--lat-column", pick("lat"), "--lon-column", pick("lon"), *who, "--bbox",
             "-90,-180,90,180", "--grid", "4x4", "-e", "1", "-o", "out.csv"],
            ["out.csv", "out.csv.meta.json"])


def _cmd_map_query(f, pick):
    return ["map", "query", f, "--bbox", "-45,-90,45,90"], []


COMMANDS = {
    "noise-counts": (["count"], _cmd_noise),
    "histogram-records": (["age"], _cmd_hist),
    "histogram-counts": (["count"], _cmd_hist_counts),
    "histogram-evaluate": (["count"], _cmd_hist_evaluate),
    "location-obfuscate": (["lat", "lon"], _cmd_location),
    "trajectory-model": (["time", "lat", "lon"], _cmd_traj_model),
    "trajectory-release": (["time", "lat", "lon"], _cmd_traj_release),
    "visits-hide": (["user", "category"], _cmd_visits("hide")),
    "visits-resemble": (["user", "category"], _cmd_visits("resemble")),
    "visits-avoid": (["user", "category"], _cmd_visits("avoid")),
    "table-anonymize": (["age", "sex"], _cmd_anonymize),
    "table-risk": (["age", "sex"], _cmd_risk),
    "table-constraints-check": (["age", "sex"], _cmd_check),
    "map-publish": (["lat", "lon", "user"], _cmd_map_publish),
    "map-query": (["row", "col", "count"], _cmd_map_query),
}


def _check_command(command, spec, data):
    want, build = COMMANDS[command]
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        f = spec.write(d / f"in{spec.suffix}").name
        if command == "trajectory-release":
            _model(d)
        if command == "map-query":  # a valid sidecar next to the odd table
            _map_sidecar(d / f"{f}.meta.json")
        (d / "target.json").write_text(json.dumps({"Bar": 1, "Park": 2, "Gym": 1}))
        (d / "cons.txt").write_text("sex=F: 1..\n")
        (d / "published.csv").write_text("bin,count\n0,1.5\n1,2\n2,0\n")
        pool = list(dict.fromkeys(spec.names))

        def pick(usual):
            if usual == "drop-or-error":
                return data.draw(st.sampled_from(["drop", "error"]))
            if usual == "user-or-record":
                return data.draw(st.sampled_from(["user", "record"]))
            if usual == "sensitive":
                return data.draw(st.sampled_from(["Bar", "Park", "u1", "0", "nope"]))
            options = ([usual] if usual in pool else []) * 4 + pool + [data.draw(names)]
            name = data.draw(st.sampled_from(options))
            return name if name.strip() or name == "" else name

        argv, outputs = build(f, pick)
        before = listing(d)
        res = run_veil(argv, d)
        after = listing(d)
    assert "internal error" not in res.err and "Traceback" not in res.err, (argv, res.err)
    assert not res.runtime_warnings, (argv, [str(w.message) for w in res.runtime_warnings])
    if res.code == 0:
        assert not [p for p in after if ".veil-tmp" in p], after
        for out in outputs:
            assert out in after, (argv, out, after)
        return
    if res.code == 1 and command == "table-constraints-check":
        assert "FAIL" in res.out and after == before
        return
    lines = res.err.strip().splitlines()
    assert res.code == 2, (argv, res.code, res.err)
    assert len(lines) == 1 and lines[0].startswith("veil: error: "), (argv, res.err)
    msg = lines[0]
    assert any(s in msg for s in (f, "--", "cons.txt", "target.json", "model.npz",
                                  "published.csv")), \
        (argv, msg)
    assert after == before, ("a failed command left files behind", argv, res.err,
                             sorted(set(after) - set(before)))


def _command_test(command, settings_):
    want = COMMANDS[command][0]

    @settings_
    @given(spec=file_specs(want=want), data=st.data())
    def test(spec, data):
        _check_command(command, spec, data)
    return test


@pytest.mark.parametrize("command", list(COMMANDS))
def test_command_fuzz(command):
    _command_test(command, settings(FAST, max_examples=8))()


@pytest.mark.slow
@pytest.mark.parametrize("command", list(COMMANDS))
def test_command_fuzz_slow(command):
    _command_test(command, SLOW)()


# ----------------------------------------------------------------------------- report

_json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False),
              st.text(max_size=5)),
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(st.text(max_size=4), inner, max_size=3)),
    max_leaves=8)
_fields = st.sampled_from(["id", "title", "guarantee", "parameters", "results", "figures",
                           "tables", "how_to", "status", "warnings", "elapsed_s", "error"])


@st.composite
def run_folders(draw):
    """Section files with fields of any JSON type (and sometimes the right type), a meta.json."""
    sections = []
    for i in range(draw(st.integers(1, 3))):
        d = {"id": f"s{i}", "title": draw(st.text(max_size=6))}
        for key in draw(st.lists(_fields, max_size=4, unique=True)):
            d[key] = draw(_json_values)
        if draw(st.booleans()):
            d["figures"] = [{"title": "f", "png_base64": draw(st.one_of(
                st.text(max_size=8), st.integers())), "data": draw(_json_values)}]
        if draw(st.booleans()):
            d["tables"] = [{"columns": draw(_json_values), "rows": draw(_json_values)}]
        sections.append(d)
    meta = {"title": draw(_json_values), "sections": draw(st.one_of(
        st.just([f"s{i}" for i in range(len(sections))]), _json_values))}
    return sections, meta, draw(st.sampled_from(["ok", "bad-json", "no-meta"]))


def _check_report(folder_spec):
    sections, meta, how = folder_spec
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "run"
        (run / "sections").mkdir(parents=True)
        for i, d in enumerate(sections):  # the file name is s<i>; the "id" field may be odd
            (run / "sections" / f"s{i}.json").write_text(json.dumps(d))
        if how == "bad-json":
            (run / "meta.json").write_text("{" + json.dumps(meta)[:-3])
        elif how == "ok":
            (run / "meta.json").write_text(json.dumps(meta))
        before = listing(Path(tmp))
        res = run_veil(["report", "run"], Path(tmp))
        after = listing(Path(tmp))
    assert "internal error" not in res.err and "Traceback" not in res.err, res.err
    assert not res.runtime_warnings
    if res.code == 0:
        assert "run/index.html" in after
        return
    lines = res.err.strip().splitlines()
    assert res.code == 2 and len(lines) == 1 and lines[0].startswith("veil: error: "), res.err
    assert "run" in lines[0]
    assert after == before


@FAST
@given(folder=run_folders())
def test_report_fuzz(folder):
    _check_report(folder)


@pytest.mark.slow
@SLOW
@given(folder=run_folders())
def test_report_fuzz_slow(folder):
    _check_report(folder)


# ----------------------------------------------------------------------------- found by fuzzing
# Each failure the fuzzer found, as a plain regression test (they fail on the code before).

def _write(d: Path, name: str, text: str) -> str:
    (d / name).write_text(text, encoding="utf-8")
    return name


def _clean_error(res, *texts):
    lines = res.err.strip().splitlines()
    assert res.code == 2 and len(lines) == 1 and lines[0].startswith("veil: error: "), res.err
    for t in texts:
        assert t in lines[0], (t, lines[0])


@pytest.mark.parametrize("argv", [
    ["noise", "counts", "in.csv", "-c", "", "-e", "1", "-o", "o.csv"],
    ["histogram", "publish", "in.csv", "-c", "", "--counts", "-e", "1", "-o", "o.csv"],
    ["location", "obfuscate", "in.csv", "--lat-column", "", "--lon-column", "count", "-e", "1", "-o", "o.csv"],
])
def test_found_empty_column_option_names_the_option(argv, tmp_path):
    _write(tmp_path, "in.csv", "bin,count\na,1\n")
    _clean_error(run_veil(argv, tmp_path), "must name a column")
    assert listing(tmp_path) == ["in.csv"]


def test_found_hiding_the_first_category(tmp_path):
    """`visits hide -s Bar` said "matched no category" when Bar sorted first (index 0)."""
    _write(tmp_path, "c.csv", "user,category\nu1,Bar\nu1,Park\nu2,Bar\nu2,Park\n")
    res = run_veil(["visits", "hide", "c.csv", "-s", "Bar", "--categories", "Bar,Park", "-o",
                    "o.csv"], tmp_path)
    assert res.code == 0, res.err
    rows = (tmp_path / "o.csv").read_text().splitlines()
    assert "u1,Bar,0" in rows and "u2,Bar,0" in rows


def test_found_table_errors_name_the_file_or_option(tmp_path):
    _write(tmp_path, "t.csv", "age,sex\n1,F\n2,F\n")
    for argv, texts in (
            (["table", "anonymize", "t.csv", "--k", "2", "--qi", "age,age", "-o", "o.csv"],
             ("--qi", "twice")),
            (["table", "anonymize", "t.csv", "--k", "2", "--qi", "age,lat", "-o", "o.csv"],
             ("--qi", "'lat'")),
            (["table", "risk", "t.csv", "--qi", "age,lat"], ("--qi", "'lat'"))):
        _clean_error(run_veil(argv, tmp_path), *texts)
    _write(tmp_path, "t.json", '[{"age": 1, "sex": "F"}]')
    res = run_veil(["table", "anonymize", "t.json", "--k", "2", "--qi", "age", "-o", "o.csv"],
                   tmp_path)
    _clean_error(res, "t.json")
    assert sorted(listing(tmp_path)) == ["t.csv", "t.json"]


def test_found_checkin_file_with_duplicate_names_or_no_rows(tmp_path):
    (tmp_path / "target.json").write_text(json.dumps({"Bar": 1}))
    _write(tmp_path, "d.csv", "user,user\nu1,Bar\n")
    _write(tmp_path, "h.csv", "user,category\n")
    for f, text in (("d.csv", "appears twice"), ("h.csv", "no data rows")):
        res = run_veil(["visits", "resemble", f, "--target", "target.json",
                        "--quality-bound", "0.5", "-o", "o.csv"], tmp_path)
        _clean_error(res, f, text)


def test_found_target_with_other_categories_names_the_target(tmp_path):
    (tmp_path / "target.json").write_text(json.dumps({"Bar": 1}))
    _write(tmp_path, "c.csv", "user,category\nu1,0\n")
    res = run_veil(["visits", "resemble", "c.csv", "--target", "target.json",
                    "--quality-bound", "0.5", "-o", "o.csv"], tmp_path)
    _clean_error(res, "c.csv", "target")


def test_found_huge_longitude_in_a_trajectory(tmp_path):
    """lon = 1e308 printed 'RuntimeWarning: overflow encountered in divide'."""
    _model(tmp_path)
    _write(tmp_path, "t.csv", "time,lat,lon\n0,39.9,116.3\n1,39.9,1e308\n2,39.91,116.31\n")
    res = run_veil(["trajectory", "release", "t.csv", "-e", "1", "-d", "0.1", "--model",
                    "model.npz", "--on-invalid", "drop", "-o", "o.csv"], tmp_path)
    assert res.code == 0 and not res.runtime_warnings, (res.err, res.runtime_warnings)
    res = run_veil(["trajectory", "release", "t.csv", "-e", "1", "-d", "0.1", "--model",
                    "model.npz", "-o", "p.csv"], tmp_path)
    _clean_error(res, "t.csv", "row 2")
    assert not res.runtime_warnings


def test_found_latitude_beyond_90_in_a_trajectory_names_the_file(tmp_path):
    """A latitude of 1000 was refused as a (lon, lat) swap in a call, without the file."""
    _model(tmp_path)
    _write(tmp_path, "t.csv", "time,lat,lon\n0,39.9,116.3\n1,1000,116.3\n2,39.91,116.31\n")
    for argv in (["trajectory", "release", "t.csv", "-e", "1", "-d", "0.1", "--model",
                  "model.npz", "--on-invalid", "drop", "-o", "o.csv"],
                 ["trajectory", "model", "t.csv", "--grid", "beijing:5", "-o", "m.npz"]):
        _clean_error(run_veil(argv, tmp_path), "t.csv", "row 2", "latitude 1000")
    assert sorted(listing(tmp_path)) == ["model.npz", "t.csv"]


def test_found_empty_json_histogram_names_the_file(tmp_path):
    _write(tmp_path, "h.json", "[]")
    _clean_error(run_veil(["visits", "hide", "h.json", "-s", "0", "-o", "o.json"], tmp_path),
                 "h.json", "empty histogram")


def test_found_json_that_duckdb_reads_as_one_map_column(tmp_path):
    """A blank key made DuckDB read the records as ONE map column named 'json'."""
    p = tmp_path / "e.json"
    p.write_text(json.dumps([{"lat": 1.0, "": "x"}]))
    with pytest.raises(DataError, match="blank key"):
        read_table(p, columns={"lat": "lat"})
    with pytest.raises(DataError, match="blank key"):
        read_table(p)


def test_found_histogram_evaluate_true_counts_are_checked_with_the_file(tmp_path):
    """Negative or huge true counts gave 'true counts[0] must be >= 0' (no file) or a
    RuntimeWarning from the int64 cast."""
    _write(tmp_path, "published.csv", "bin,count\n0,1\n1,2\n")
    _write(tmp_path, "neg.csv", "count\n-3\n4\n")
    _write(tmp_path, "huge.csv", "count\n1e300\n4\n")
    _clean_error(run_veil(["histogram", "evaluate", "published.csv", "--true", "neg.csv"],
                          tmp_path), "neg.csv", "row 1", "negative")
    res = run_veil(["histogram", "evaluate", "published.csv", "--true", "huge.csv"], tmp_path)
    _clean_error(res, "huge.csv", "row 1")
    assert not res.runtime_warnings
    np.save(tmp_path / "huge.npy", np.array([1e20, 4.0]))
    res = run_veil(["histogram", "evaluate", "published.csv", "--true", "huge.npy"], tmp_path)
    _clean_error(res, "huge.npy", "64-bit")
    assert not res.runtime_warnings


@pytest.mark.parametrize("field,value", [("parameters", [1, 2]), ("figures", {"a": 1}),
                                         ("figures", [3]), ("tables", [[1, 2]]),
                                         ("warnings", 5)])
def test_found_report_section_of_the_wrong_shape(tmp_path, field, value):
    """A section file with a list where an object belongs was an internal AttributeError."""
    run = tmp_path / "run"
    (run / "sections").mkdir(parents=True)
    (run / "sections" / "a.json").write_text(json.dumps({"id": "a", "title": "A",
                                                         field: value}))
    res = run_veil(["report", "run"], tmp_path)
    _clean_error(res, "a.json", field)
    assert listing(tmp_path) == ["run", "run/sections", "run/sections/a.json"]


def test_found_infinite_quasi_identifier_values_do_not_warn(tmp_path):
    """An inf in a float QI column printed 'RuntimeWarning: invalid value in remainder'."""
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"age": [1.0, float("inf"), 1.0, float("inf")],
                             "sex": ["F", "F", "F", "F"]}), tmp_path / "inf.parquet")
    res = run_veil(["table", "anonymize", "inf.parquet", "--k", "2", "--qi", "age,sex", "-o",
                    "o.csv"], tmp_path)
    assert res.code == 0 and not res.runtime_warnings, (res.err, res.runtime_warnings)
