"""Hostile column names and file names through every non-batch command (issue 20, defects 5, 12).

For every command that reads a file (``cli_cases.CASES``) and every hostile column name, the
command either writes exactly what it writes for a plain name (same seed: the same rows, the
header holding the hostile name as it was written), or stops with a one-line exit-2 error and
writes nothing. Every SQL string DuckDB receives is logged, and none holds a name other than
through ``veil.io.sql`` quoting: a smuggled predicate (``user" IS NULL OR (SELECT ...)``) can
neither run nor change a result. Input paths are literal in every command (``p[1].csv`` reads
``p[1].csv``, never ``p1.csv``; ``data?.csv`` never reads ``data1.csv``). ``veil report``
reads nothing outside its run folder.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import duckdb
import numpy as np
import pytest

from cli_cases import (CASES, PLAIN_COL, PLAIN_STEM, assert_clean_error, listing, read_rows,
                       run_veil, write_csv)
from veil.io import sql

# these tests release the same data many times on purpose (see tests/conftest.py)
pytestmark = pytest.mark.usefixtures("repeat_releases")

INJECTION = "user\" IS NULL OR (SELECT count(*) FROM read_text('/etc/hostname')) > 0 OR \"user"
#: Names every command must handle (correct output), and names it may refuse cleanly.
MUST_WORK = [INJECTION, "a\"b'c", "select é 名 ✓"]
MAY_REFUSE = ["new\nline", " padded ", "x,y"]


# ----------------------------------------------------------------------------- SQL log

class _LoggedConnection:
    """A DuckDB connection that records every SQL string it is given."""

    def __init__(self, con, log):
        self._con, self._log = con, log

    def _logged(self, name):
        def call(query, *args, **kwargs):
            self._log.append(str(query))
            return getattr(self._con, name)(query, *args, **kwargs)
        return call

    def __getattr__(self, name):
        if name in ("sql", "execute", "query"):
            return self._logged(name)
        return getattr(self._con, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._con.close()


@pytest.fixture
def sql_log(monkeypatch):
    log: list[str] = []
    real_connect, real_sql = duckdb.connect, duckdb.sql
    monkeypatch.setattr(duckdb, "connect", lambda *a, **k: _LoggedConnection(
        real_connect(*a, **k), log))

    def module_sql(query, *args, **kwargs):
        log.append(str(query))
        return real_sql(query, *args, **kwargs)

    monkeypatch.setattr(duckdb, "sql", module_sql)
    return log


_QUOTED = re.compile(r'"(?:[^"]|"")*"|\'(?:[^\']|\'\')*\'')


def unquoted_uses(log: list[str], name: str) -> list[str]:
    """SQL strings in which ``name`` (or the injection's ``read_text``) is outside quotes.

    Every quoted identifier (``"..."`` with ``""`` escapes) and string literal (``'...'``
    with ``''`` escapes) is removed; what is left is SQL that DuckDB parses as code.
    """
    bad = []
    for q in log:
        rest = _QUOTED.sub(" ", q)
        if name in rest or (name == INJECTION and "read_text" in rest):
            bad.append(q)
    return bad


def test_the_sql_check_catches_hand_made_quoting():
    """Canary: the check flags a name pasted between double quotes without doubling them."""
    hand_made = f'SELECT count(*) FROM t WHERE "{INJECTION}" IS NULL'
    assert unquoted_uses([hand_made], INJECTION) == [hand_made]
    proper = f"SELECT count(*) FROM t WHERE {sql.ident(INJECTION)} IS NULL"
    assert unquoted_uses([proper], INJECTION) == []


# ----------------------------------------------------------------------------- running

def _run_case(case, root: Path, col: str, stem: str):
    d = root / f"{case.id}-{abs(hash((col, stem))) % 10**8}"
    d.mkdir()
    argv, outputs = case.build(d, col, stem)
    before = set(listing(d))
    res = run_veil(argv, d)
    return d, res, outputs, before


_TIMING = re.compile(r"(_s|_seconds|_ms)$|^(runtime|elapsed|seconds)")


def _renamed(obj, names: dict):
    """``obj`` (parsed JSON) with every given name replaced in its strings, and without
    timings (a key like ``runtime_s`` holding a number differs from run to run)."""
    if isinstance(obj, dict):
        return {_renamed(k, names): _renamed(v, names) for k, v in obj.items()
                if not (_TIMING.search(str(k)) and isinstance(v, int | float))}
    if isinstance(obj, list):
        return [_renamed(v, names) for v in obj]
    if isinstance(obj, str):
        for old, new in names.items():
            if old and old != new:
                obj = obj.replace(old, new)
    return obj


def _assert_same_output(case, plain, hostile, col: str, stem: str = PLAIN_STEM):
    d0, r0, outputs, _ = plain
    d1, r1, _, _ = hostile
    if case.stdout:
        assert r1.out.replace(col, PLAIN_COL) == r0.out, (r0.out, r1.out)
        return
    for name in outputs:
        if name.endswith((".csv",)) and not name.endswith(".json"):
            rows0, rows1 = read_rows(d0 / name), read_rows(d1 / name)
            assert rows1[1:] == rows0[1:], name
            assert rows1[0] == [col if h == PLAIN_COL else h for h in rows0[0]], name
        elif name.endswith(".json"):  # the sidecar differs only by the names given
            meta0 = json.loads((d0 / name).read_text(encoding="utf-8"))
            meta1 = json.loads((d1 / name).read_text(encoding="utf-8"))
            # a name may be shown as repr() in a note (its quotes then differ from the plain's)
            assert _renamed(meta1, {repr(col): repr(PLAIN_COL), col: PLAIN_COL,
                                    stem: PLAIN_STEM}) == \
                _renamed(meta0, {}), name
        else:  # binary (model.npz): identical bytes are too strict (zip timestamps)
            a0, a1 = np.load(d0 / name), np.load(d1 / name)
            assert sorted(a0.files) == sorted(a1.files)
            for key in a0.files:
                if a0[key].dtype.kind in "fiub":
                    np.testing.assert_array_equal(a0[key], a1[key])


@pytest.fixture(scope="module")
def plain_runs(tmp_path_factory, repeat_releases_module):
    root = tmp_path_factory.mktemp("plain")
    runs = {}
    # a module fixture runs before the per-test private VEIL_HOME (tests/conftest.py): give
    # these runs their own ledger, never the developer's
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VEIL_HOME", str(tmp_path_factory.mktemp("plain-veil-home")))
        mp.delenv("VEIL_LEDGER", raising=False)
        # several cases read the same input: repeat_releases_module lets them (conftest.py)
        for case in CASES:
            run = _run_case(case, root, PLAIN_COL, PLAIN_STEM)
            assert run[1].code == 0, (case.id, run[1].err)
            runs[case.id] = run
    return runs


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
@pytest.mark.parametrize("col", MUST_WORK + MAY_REFUSE,
                         ids=["injection", "quotes", "unicode", "newline", "padded", "comma"])
def test_hostile_column_name(case, col, plain_runs, tmp_path, sql_log):
    run = _run_case(case, tmp_path, col, PLAIN_STEM)
    d, res, outputs, before = run
    assert "internal error" not in res.err and "Traceback" not in res.err, res.err
    assert not res.runtime_warnings, [str(w.message) for w in res.runtime_warnings]
    assert unquoted_uses(sql_log, col) == []
    if col in MUST_WORK or not case.col_in_sql:
        assert res.code == 0, res.err
    if res.code == 0:
        _assert_same_output(case, plain_runs[case.id], run, col)
    else:
        assert_clean_error(res)
        assert set(listing(d)) == before, "a failed command left files behind"


def test_duplicate_column_names_refused_by_table_anonymize(tmp_path):
    write_csv(tmp_path / "t.csv", ["age", "sex", "age"], [[1, "F", 2], [1, "F", 3]])
    res = run_veil(["table", "anonymize", "t.csv", "--k", "2", "--qi", "age,sex", "-o",
                    "out.csv"], tmp_path)
    assert_clean_error(res, "age", "twice")
    assert listing(tmp_path) == ["t.csv"]


# ----------------------------------------------------------------------------- literal paths

GLOBBY = ["p[1]", "data?", "q*{a,b}", "it's \"x\" é 名", "new\nline"]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
@pytest.mark.parametrize("stem", GLOBBY, ids=["brackets", "question", "star-braces",
                                              "quotes-unicode", "newline"])
def test_input_path_is_literal(case, stem, plain_runs, tmp_path, sql_log):
    """The file named ``stem`` is read, whatever a glob reading of its name would match."""
    d = tmp_path / "w"
    d.mkdir()
    # decoys a glob reading of the name would match, with other data
    for decoy in ["p1", "data1", "data2", "data3", "qq", "sa", "it's x"]:
        write_csv(d / f"{decoy}.csv", [PLAIN_COL, "x"], [["999", "999"]])
    argv, outputs = case.build(d, PLAIN_COL, stem)
    res = run_veil(argv, d)
    assert res.code == 0, res.err
    _assert_same_output(case, plain_runs[case.id], (d, res, outputs, None), PLAIN_COL, stem)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_glob_that_matches_files_but_names_none_is_an_error(case, tmp_path):
    d = tmp_path / "w"
    d.mkdir()
    argv, outputs = case.build(d, PLAIN_COL, "data1")
    shutil.copy(d / "data1.csv", d / "data2.csv")
    argv = [a if a != "data1.csv" else "data?.csv" for a in argv]
    before = set(listing(d))
    res = run_veil(argv, d)
    assert_clean_error(res, "data?.csv")
    assert set(listing(d)) == before


OUT_NAMES = ["o[1].csv", "o?.csv", "o*.csv", "it's \"o\".csv"]


@pytest.mark.parametrize("name", OUT_NAMES)
def test_output_path_is_literal(name, tmp_path):
    """``veil data synth`` and a DP command write exactly the file named, nothing else."""
    res = run_veil(["data", "synth", "census", "--rows", "20", "--seed", "1", "-o", name],
                   tmp_path)
    assert res.code == 0, res.err
    assert listing(tmp_path) == [name]
    assert len(read_rows(tmp_path / name)) == 21
    res = run_veil(["noise", "counts", name, "-c", "age", "-e", "1", "-o", "n" + name],
                   tmp_path)
    assert res.code == 0, res.err
    assert listing(tmp_path) == sorted([name, "n" + name, "n" + name + ".meta.json"])
    assert len(read_rows(tmp_path / ("n" + name))) == 21


# ----------------------------------------------------------------------------- report

def _run_folder(root: Path, name: str = "run") -> Path:
    from veil.report.core import Section
    from veil.report.html import save_report

    run = root / name
    save_report(run, [Section("alpha", "Alpha", "none", results={"n": 1})], title="t")
    return run


def test_report_rebuilds_from_a_hostile_folder_name(tmp_path):
    run = _run_folder(tmp_path, "r[1] it's \"x\"")
    res = run_veil(["report", str(run)], tmp_path)
    assert res.code == 0, res.err
    assert "Alpha" in (run / "index.html").read_text(encoding="utf-8")


@pytest.mark.parametrize("entry", ["../secret", "../../etc/hostname", "/etc/hostname",
                                   "sections/../../secret", "a/b", "", 3])
def test_report_refuses_section_names_that_leave_the_folder(tmp_path, entry):
    run = _run_folder(tmp_path)
    (tmp_path / "secret.json").write_text(json.dumps({"id": "s", "title": "SECRET-TEXT"}))
    meta = json.loads((run / "meta.json").read_text())
    meta["sections"] = [{"id": entry, "status": "ok"}]
    (run / "meta.json").write_text(json.dumps(meta))
    index_before = (run / "index.html").read_bytes()
    res = run_veil(["report", str(run)], tmp_path)
    assert_clean_error(res, "meta.json", "not a plain name")
    assert (run / "index.html").read_bytes() == index_before


@pytest.mark.parametrize("what", ["section", "meta"])
def test_report_refuses_symlinks_out_of_the_folder(tmp_path, what):
    run = _run_folder(tmp_path)
    secret = tmp_path / "secret.json"
    if what == "section":
        secret.write_text(json.dumps({"id": "alpha", "title": "SECRET-TEXT"}))
        (run / "sections" / "alpha.json").unlink()
        os.symlink(secret, run / "sections" / "alpha.json")
    else:
        secret.write_text(json.dumps({"title": "SECRET-TEXT", "sections": ["alpha"]}))
        (run / "meta.json").unlink()
        os.symlink(secret, run / "meta.json")
    res = run_veil(["report", str(run)], tmp_path)
    assert_clean_error(res, "outside the run folder")
    assert "SECRET-TEXT" not in (run / "index.html").read_text(encoding="utf-8")


def test_report_follows_symlinks_that_stay_inside(tmp_path):
    run = _run_folder(tmp_path)
    (run / "sections" / "alpha.json").rename(run / "kept.json")
    os.symlink(run / "kept.json", run / "sections" / "alpha.json")
    assert run_veil(["report", str(run)], tmp_path).code == 0


def test_report_loader_doctest():
    import doctest

    import veil.report.html as mod

    result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 1 and result.failed == 0


# ----------------------------------------------------------------------------- --count-bound

@pytest.mark.parametrize("extra", [[], ["--records-bound", "15"]],
                         ids=["noisy-total", "records-bound"])
def test_count_bound_with_the_default_method(tmp_path, extra):
    """Defect 12: ``--counts --count-bound`` with ``auto`` failed with "hb() got an unexpected
    keyword argument"; auto now sets aside an option its pick does not take (the pick can
    follow a noisy total, so only ``publish`` knows it) and the sidecar says so."""
    from veil.cli.histogram import OPTION_METHODS

    write_csv(tmp_path / "c.csv", ["count"], [[3], [5], [7]])
    res = run_veil(["histogram", "publish", "c.csv", "-c", "count", "--counts",
                    "--count-bound", "100", "-e", "1", "--seed", "3", "-o", "o.csv", *extra],
                   tmp_path)
    assert res.code == 0, res.err
    meta = json.loads((tmp_path / "o.csv.meta.json").read_text())
    picked = meta["mechanism"]
    unused = [n for n in meta["notes"] if "count_bound=100.0 not used: auto picked" in n]
    if picked in OPTION_METHODS["count_bound"][1]:
        assert not unused and meta["parameters"]["count_bound"] == 100
    else:
        assert len(unused) == 1 and picked in unused[0] and "not used" in res.err
    res = run_veil(["histogram", "publish", "c.csv", "-c", "count", "--counts",
                    "--count-bound", "100", "-e", "1", "-o", "p.csv", "-m", "identity"],
                   tmp_path)
    assert_clean_error(res, "--count-bound does not apply to --method identity")
    res = run_veil(["histogram", "publish", "c.csv", "-c", "count", "--counts",
                    "--count-bound", "100", "--k", "2", "-e", "1", "-o", "q.csv",
                    "-m", "structurefirst"], tmp_path)
    assert res.code == 0, res.err
    assert json.loads((tmp_path / "q.csv.meta.json").read_text())["parameters"][
        "count_bound"] == 100


def test_option_table_matches_the_mechanisms():
    """OPTION_METHODS says which methods take --k/--count-bound/--branching; check it."""
    from veil.cli.histogram import OPTION_METHODS
    from veil.errors import ParameterError
    from veil.histograms import publish
    from veil.histograms.api import METHODS
    from veil.random import make_rng

    values = {"k": 2, "count_bound": 100.0, "branching": 2, "buckets": 2}
    counts = np.array([3, 5, 7, 2, 9, 4, 1, 8])
    for method in METHODS:
        if method == "auto":
            continue
        for key, (_, methods) in OPTION_METHODS.items():
            extra = {"count_bound": 100.0} if method in OPTION_METHODS["count_bound"][1] else {}
            try:
                publish(counts, epsilon=1.0, method=method, rng=make_rng(seed=0),
                        **{**extra, key: values[key]})
                takes = True
            except ParameterError as exc:
                assert "unexpected keyword" in str(exc), (method, key, exc)
                takes = False
            assert takes == (method in methods), (method, key)


def test_auto_sets_aside_only_options_some_mechanism_takes():
    """auto refuses an option no mechanism takes (before any budget is spent) and sets aside
    one its pick does not take, saying so in the release's notes."""
    from veil.errors import ParameterError
    from veil.histograms import publish
    from veil.random import make_rng

    with pytest.raises(ParameterError, match="no mechanism takes an option 'kk'"):
        publish([3, 5, 7], epsilon=1.0, method="auto", kk=2, rng=make_rng(seed=0))
    rel = publish([3, 5, 7], epsilon=1.0, method="auto", branching=2, records_bound=15,
                  rng=make_rng(seed=0))
    takes = rel.mechanism in ("boost", "structurefirst")
    assert any("branching=2 not used" in n for n in rel.notes) == (not takes)


# ----------------------------------------------------------------------------- maps

@pytest.mark.parametrize("header,lat,expect", [
    (["lat", "lon", "user", "user"], "lat", "appears twice"),
    (["lat", "lon", "lat"], "lat", "appears twice"),
])
def test_map_publish_refuses_duplicate_names(tmp_path, header, lat, expect):
    """DuckDB renames the second 'user' to 'user_1' and read the first one silently."""
    rows = [[0.1, 0.2] + ["u1"] * (len(header) - 2), [0.3, 0.4] + ["u2"] * (len(header) - 2)]
    write_csv(tmp_path / "p.csv", header, rows)
    who = (["--user-column", "user", "--max-points", "2"] if "user" in header
           else ["--protects", "record"])
    res = run_veil(["map", "publish", "p.csv", "--lat-column", lat, *who, "--bbox", "0,0,1,1",
                    "--grid", "2x2", "-e", "1", "-o", "m.csv"], tmp_path)
    assert_clean_error(res, "p.csv", expect)
    assert listing(tmp_path) == ["p.csv"]


@pytest.mark.parametrize("names", [[" lat ", "lon", "user"], ["LAT", "lat", "lon", "user"],
                                   ["", "lat", "lon", "user"]],
                         ids=["padded", "case-twin", "blank"])
def test_map_publish_reads_the_column_named(tmp_path, names):
    """Names are the file's own: ``' lat '`` is not ``lat`` and ``LAT`` is not ``lat``; the
    map counts the points of the column asked for (DuckDB alone trims ``' lat '``, renames
    ``lat`` beside ``LAT`` to ``lat_1`` and calls a blank name ``column0``)."""
    decoy = {" lat ": 0.9, "LAT": 0.9, "": "x"}
    rows = [[decoy.get(n, 0.1) if n not in ("lat", "lon", "user") else
             {"lat": 0.1, "lon": 0.1, "user": "u1"}[n] for n in names]] * 3
    write_csv(tmp_path / "p.csv", names, rows)
    args = ["--user-column", "user", "--max-points", "5", "--bbox", "0,0,1,1", "--grid", "2x2", "-e",
            "50", "--method", "identity", "--seed", "1"]
    if " lat " in names:  # no column 'lat': refused with the exact names shown
        res = run_veil(["map", "publish", "p.csv", *args, "-o", "m.csv"], tmp_path)
        assert_clean_error(res, "p.csv", "'lat'")
        res = run_veil(["map", "publish", "p.csv", "--lat-column", " lat ", *args, "-o", "m.csv"],
                       tmp_path)
        assert res.code == 0, res.err
        want_row = 1  # the padded column holds 0.9: the upper row
    else:
        res = run_veil(["map", "publish", "p.csv", *args, "-o", "m.csv"], tmp_path)
        assert res.code == 0, res.err
        want_row = 0
    rows = read_rows(tmp_path / "m.csv")
    head = rows[0]
    cells = {(int(r[head.index("row")]), int(r[head.index("col")])): float(r[head.index("count")])
             for r in rows[1:]}
    assert max(cells, key=cells.get) == (want_row, 0), cells
