"""Every non-batch ``veil`` command that reads a file, as a reusable test case.

Used by ``test_hostile_inputs.py`` (hostile column names and file names) and
``test_fuzz_commands.py`` (generated files). Each case writes its input under a given
file name with a given key column name (the column the command is told to use, or, for
the trajectory commands whose columns are fixed, an extra column), and returns the argv
and the files the command writes. Commands run in-process through ``veil.cli.main`` (the
console script's entry point), so exit codes, messages and warnings are the real ones.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from veil.cli import main

#: A plain column name and file stem; hostile runs are compared with runs using these.
PLAIN_COL = "kq7col"
PLAIN_STEM = "in7file"


@dataclass
class Result:
    code: int
    out: str
    err: str
    warnings: list = field(default_factory=list)

    @property
    def runtime_warnings(self) -> list:
        return [w for w in self.warnings if issubclass(w.category, RuntimeWarning)]


def run_veil(argv: list[str], cwd: Path) -> Result:
    """Run ``veil ARGV`` in ``cwd`` in-process; capture exit code, stdout, stderr, warnings."""
    out, err = io.StringIO(), io.StringIO()
    old = os.getcwd()
    os.chdir(cwd)
    try:
        with warnings.catch_warnings(record=True) as caught, \
                contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            warnings.simplefilter("always")
            try:
                main([str(a) for a in argv])
                code = 0
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        os.chdir(old)
    return Result(code, out.getvalue(), err.getvalue(), list(caught))


def exit_code(argv: list) -> int:
    """Run ``veil ARGV`` in-process; its exit code (its output is left to ``capsys``)."""
    try:
        main([str(a) for a in argv])
    except SystemExit as exc:
        return exc.code or 0
    return 0


def run_main(argv: list, capsys) -> tuple:
    """Run ``veil ARGV`` in-process under pytest's ``capsys``: (exit code, stdout, stderr)."""
    code = exit_code(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


class FakeTerminal(io.StringIO):
    """A stderr that says it is a terminal (what ``veil`` sees in an interactive shell)."""

    def isatty(self) -> bool:
        return True

    def fileno(self) -> int:
        raise OSError("not a real terminal")


def write_csv(path: Path, header: list[str], rows: list[list]) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(header)
        w.writerows(rows)
    return path


@dataclass
class Case:
    """One command: ``build(folder, col, stem) -> (argv, outputs)``.

    ``outputs`` are the files (relative to the folder) the command writes on success;
    ``stdout`` says whether the command's result is its standard output instead.
    ``col_in_sql`` says whether ``col`` is a column the command is told to use (else it is
    an extra column the command must ignore).
    """

    id: str
    build: Callable[[Path, str, str], tuple[list[str], list[str]]]
    stdout: bool = False
    col_in_sql: bool = True


def _noise(d, col, stem):
    f = write_csv(d / f"{stem}.csv", ["bin", col], [["a", 3], ["b", 0], ["c", 5], ["d", 12]])
    return (["noise", "counts", f.name, "-c", col, "-e", "1", "--seed", "7", "-o", "out.csv"],
            ["out.csv", "out.csv.meta.json"])


def _hist_records(d, col, stem):
    f = write_csv(d / f"{stem}.csv", [col, "other"],
                  [[v, "x"] for v in (20, 30, 40, 55, 71, 99, 3)])
    return (["histogram", "publish", f.name, "-c", col, "-e", "1", "--bins", "0:100:4",
             "--seed", "7", "-o", "out.csv"], ["out.csv", "out.csv.meta.json"])


def _hist_counts(d, col, stem):
    f = write_csv(d / f"{stem}.csv", ["bin", col], [["a", 3], ["b", 0], ["c", 5], ["d", 12]])
    return (["histogram", "publish", f.name, "-c", col, "--counts", "-e", "1", "--seed", "7",
             "-o", "out.csv"], ["out.csv", "out.csv.meta.json"])


def _hist_evaluate(d, col, stem):
    f = write_csv(d / f"{stem}.csv", ["bin", col], [["a", 3], ["b", 0], ["c", 5], ["d", 12]])
    write_csv(d / "published.csv", ["bin", "count"], [["a", 2.5], ["b", 1], ["c", 4], ["d", 13]])
    return (["histogram", "evaluate", "published.csv", "--true", f.name, "--true-column", col,
             "--workload", "prefix"], [])


def _location(d, col, stem):
    f = write_csv(d / f"{stem}.csv", ["id", col, "lon"],
                  [["p1", 48.85, 2.35], ["p2", 40.71, -74.0], ["p3", -33.9, 151.2]])
    return (["location", "obfuscate", f.name, "--lat-column", col, "--lon-column", "lon", "-e", "0.01",
             "--seed", "7", "-o", "out.csv"], ["out.csv", "out.csv.meta.json"])


_BEIJING = [(0, 39.90, 116.30), (60, 39.91, 116.32), (120, 39.93, 116.35),
            (180, 39.95, 116.40), (240, 39.96, 116.42), (300, 39.94, 116.38)]


def _traj_model(d, col, stem):
    f = write_csv(d / f"{stem}.csv", ["time", "lat", "lon", col],
                  [[t, la, lo, "x"] for t, la, lo in _BEIJING])
    return (["trajectory", "model", f.name, "--grid", "beijing:5", "-o", "model.npz"],
            ["model.npz"])


def _traj_release(d, col, stem):
    write_csv(d / "train.csv", ["time", "lat", "lon"], [list(r) for r in _BEIJING])
    res = run_veil(["trajectory", "model", "train.csv", "--grid", "beijing:5", "-o",
                    "trained.npz"], d)
    assert res.code == 0, res.err
    f = write_csv(d / f"{stem}.csv", ["time", "lat", "lon", col],
                  [[t, la, lo, "x"] for t, la, lo in _BEIJING])
    return (["trajectory", "release", f.name, "-e", "1", "-d", "0.1", "--model", "trained.npz",
             "--seed", "7", "-o", "out.csv"], ["out.csv", "out.csv.meta.json"])


_CHECKINS = [["u1", "Bar"], ["u1", "Park"], ["u1", "Park"], ["u2", "Bar"], ["u2", "Gym"],
             ["u3", "Gym"], ["u3", "Park"]]


def _visits(problem):
    def build(d, col, stem):
        f = write_csv(d / f"{stem}.csv", [col, "cat"], _CHECKINS)
        argv = ["visits", problem, f.name, "--user-column", col, "--category-column", "cat",
                "-o", "out.csv"]
        if problem == "hide":
            argv += ["-s", "Park", "--categories", "Bar,Park,Gym"]
        else:
            (d / "target.json").write_text(json.dumps({"Bar": 1, "Park": 2, "Gym": 1}))
            argv += ["--target", "target.json", "--quality-bound", "0.5"]
        return argv, ["out.csv", "out.csv.meta.json"]
    return build


_TABLE = [[1, "F", "a"], [1, "F", "b"], [2, "M", "c"], [2, "M", "d"], [3, "F", "e"],
          [3, "M", "f"]]


def _table_anonymize(d, col, stem):
    f = write_csv(d / f"{stem}.csv", [col, "sex", "x"], _TABLE)
    return (["table", "anonymize", f.name, "--k", "2", "--qi", f"{col},sex", "-o", "out.csv"],
            ["out.csv", "out.csv.meta.json"])


def _table_risk(d, col, stem):
    f = write_csv(d / f"{stem}.csv", [col, "sex", "x"], _TABLE)
    return ["table", "risk", f.name, "--qi", f"{col},sex", "-o", "risk.json"], ["risk.json"]


def _table_check(d, col, stem):
    f = write_csv(d / f"{stem}.csv", [col, "sex", "x"], _TABLE)
    (d / "cons.txt").write_text("sex=F: 1..\nsex=M: 0..3\n")
    return ["table", "constraints", "check", f.name, "--constraints", "cons.txt"], []


_PINGS = [["u1", 0.10, 0.20], ["u1", 0.15, 0.30], ["u1", 0.80, 1.70], ["u2", 0.40, 1.10],
          ["u2", 0.45, 1.15], ["u3", 0.90, 0.10], ["u3", 0.20, 1.90], ["u4", 0.55, 0.95]]
_MAP = ["--bbox", "0,0,1,2", "--grid", "4x4", "-e", "1", "--method", "identity", "--seed", "7"]


def _map_publish(d, col, stem):
    f = write_csv(d / f"{stem}.csv", [col, "lat", "lon"], _PINGS)
    return (["map", "publish", f.name, "--user-column", col, "--max-points", "2", *_MAP, "-o",
             "out.csv"], ["out.csv", "out.csv.meta.json"])


def _map_query(d, col, stem):
    """A published map (from plain points) with an extra column ``col``, queried."""
    write_csv(d / "pings.csv", ["user", "lat", "lon"], _PINGS)
    res = run_veil(["map", "publish", "pings.csv", "--user-column", "user", "--max-points", "2", *_MAP,
                    "-o", "map.csv"], d)
    assert res.code == 0, res.err
    rows = read_rows(d / "map.csv")
    write_csv(d / f"{stem}.csv", rows[0] + [col], [r + ["x"] for r in rows[1:]])
    (d / f"{stem}.csv.meta.json").write_bytes((d / "map.csv.meta.json").read_bytes())
    return ["map", "query", f"{stem}.csv", "--bbox", "0,0,0.5,1", "--bbox", "0.2,0.4,1,2"], []


CASES: list[Case] = [
    Case("noise-counts", _noise),
    Case("histogram-records", _hist_records),
    Case("histogram-counts", _hist_counts),
    Case("histogram-evaluate", _hist_evaluate, stdout=True),
    Case("location-obfuscate", _location),
    Case("trajectory-model", _traj_model, col_in_sql=False),
    Case("trajectory-release", _traj_release, col_in_sql=False),
    Case("visits-hide", _visits("hide")),
    Case("visits-resemble", _visits("resemble")),
    Case("visits-avoid", _visits("avoid")),
    Case("table-anonymize", _table_anonymize),
    Case("table-risk", _table_risk),
    Case("table-constraints-check", _table_check, stdout=True, col_in_sql=False),
    Case("map-publish", _map_publish),
    Case("map-query", _map_query, stdout=True, col_in_sql=False),
]


def read_rows(path: Path) -> list[list[str]]:
    """A CSV output as rows of text (header first)."""
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.reader(fh))


def listing(d: Path) -> list[str]:
    """Every entry of a folder, recursively, relative (hidden files included)."""
    return sorted(str(p.relative_to(d)) for p in d.rglob("*"))


def assert_clean_error(res: Result, *must_contain: str) -> None:
    """Exit 2, ONE line ``veil: error: ...`` on stderr, no traceback, no internal error."""
    lines = res.err.strip().splitlines()
    assert res.code == 2, (res.code, res.err)
    assert len(lines) == 1 and lines[0].startswith("veil: error: "), res.err
    for text in must_contain:
        assert text in lines[0], (text, lines[0])


#: six fixes inside the built-in "beijing" grid (time s, lat, lon): small trajectory inputs
BEIJING_FIXES = [(0, 39.90, 116.30), (60, 39.91, 116.32), (120, 39.93, 116.35),
                 (180, 39.95, 116.40), (240, 39.96, 116.42), (300, 39.94, 116.38)]


def beijing_train(d: Path) -> Path:
    """A training track (time, lat, lon) for `veil trajectory model --grid beijing:N`."""
    return write_csv(d / "train.csv", ["time", "lat", "lon"], [list(r) for r in BEIJING_FIXES])


def beijing_tracks(d: Path) -> Path:
    """Two users' tracks (user, t, lat, lon) on the same fixes, for `veil trajectory release`."""
    return write_csv(d / "tracks.csv", ["user", "t", "lat", "lon"],
                     [["u1" if i < 3 else "u2", t, la, lo]
                      for i, (t, la, lo) in enumerate(BEIJING_FIXES)])


def beijing_model(d: Path, capsys) -> Path:
    """A small Markov model (`veil trajectory model --grid beijing:5`) at ``d/model.npz``."""
    code, _, err = run_main(["trajectory", "model", beijing_train(d), "--grid", "beijing:5",
                             "-o", d / "model.npz"], capsys)
    assert code == 0, err
    return d / "model.npz"
