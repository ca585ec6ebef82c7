"""Issue 17, defect 6: one output convention on every command (docs/cli.md, "Output").

* data goes to the output file, or to stdout for a command whose answer is its output;
  status lines (what was written, notes, progress) go to stderr, never stdout;
* ``--quiet/-q`` on every command: no status line at all (stderr empty on success);
* ``--json`` on every command: stdout is exactly one JSON object (a machine-readable summary);
* ``--delimiter`` and ``--input-format`` on every command that reads a table the user gives,
  and a hint that names ``--delimiter`` only on a command that has it.

Every command of the CLI is run here (the benchmarks and the demo excepted, with reasons), by
``veil.cli.main`` in-process, on small inputs.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from cli_cases import CASES, listing, run_veil, write_csv
from veil.cli import walk_commands

LEAVES = dict(walk_commands())

#: commands run here by their own cases below (CASES covers the ones that read a user file)
#: and those left out, with the reason
NOT_RUN = {
    ("bench", "histograms"): "minutes of benchmarking (slow suite: tests/test_docs_run.py)",
    ("bench", "location"): "an LP per epsilon on real data (slow suite)",
    ("bench", "maps"): "minutes of benchmarking (slow suite)",
    ("bench", "tables"): "minutes of benchmarking (slow suite)",
    ("bench", "temporal"): "minutes of benchmarking (slow suite)",
    ("bench", "visits"): "minutes of benchmarking (slow suite)",
    ("demo",): "the whole report (tests/browser and tests/report run it)",
}

#: commands that read a table given by the user: they take --delimiter and --input-format.
#: The batch commands read a file, a folder of parts or a glob with DuckDB's own sniffer
#: (docs/cli.md says so) and are checked by the hint test instead.
READS_A_TABLE = {
    ("histogram", "publish"), ("histogram", "evaluate"), ("noise", "counts"),
    ("location", "obfuscate"), ("map", "publish"), ("trajectory", "model"),
    ("trajectory", "release"), ("trajectory", "risk"), ("visits", "hide"),
    ("visits", "resemble"), ("visits", "avoid"), ("table", "anonymize"), ("table", "risk"),
    ("table", "constraints", "check"), ("budget", "set"), ("budget", "show"),
}


def _visible(leaf) -> set[str]:
    return {n for p in leaf.params if not getattr(p, "hidden", False)
            for n in getattr(p, "opts", ())}


@pytest.mark.parametrize("path", sorted(LEAVES), ids=" ".join)
def test_every_command_has_quiet_and_json(path):
    opts = _visible(LEAVES[path])
    assert {"--quiet", "-q", "--json"} <= opts, (path, sorted(opts))


@pytest.mark.parametrize("path", sorted(READS_A_TABLE), ids=" ".join)
def test_commands_reading_a_table_take_delimiter_and_input_format(path):
    opts = _visible(LEAVES[path])
    assert {"--delimiter", "--input-format"} <= opts, (path, sorted(opts))


#: commands that write a data table: --format/-f (default: the output's extension). table
#: anonymize is not here: its output keeps the input's format and bytes (docs/tables.md).
WRITES_A_TABLE = {
    ("noise", "counts"), ("location", "obfuscate"), ("trajectory", "release"),
    ("histogram", "publish"), ("visits", "hide"), ("visits", "resemble"), ("visits", "avoid"),
    ("data", "synth"), ("map", "publish"),
}


@pytest.mark.parametrize("path", sorted(WRITES_A_TABLE), ids=" ".join)
def test_commands_writing_a_table_take_format(path):
    leaf = LEAVES[path]
    fmt = next((p for p in leaf.params if "--format" in getattr(p, "opts", ())), None)
    assert fmt is not None and "-f" in fmt.opts, path
    assert fmt.default is None, (path, "the default format is the output's extension")


@pytest.mark.parametrize("name,argv", [
    ("trajectory", ["trajectory", "release", "tracks.csv", "-e", "1", "-d", "0.1", "--model",
                    "m.npz", "-o", "rel.json"]),
    ("histogram", ["histogram", "publish", "h.csv", "-c", "v", "--bins", "0:10:2", "-e", "1",
                   "-o", "h.json"]),
    ("data", ["data", "synth", "census", "--rows", "10", "-o", "c.json"]),
])
def test_the_output_extension_decides_the_format(name, argv, tmp_path, repeat_releases):
    """A .json output is JSON without --format (trajectory release wrote CSV into it)."""
    _model(tmp_path)
    write_csv(tmp_path / "h.csv", ["v"], [[1], [7]])
    res = run_veil(argv, tmp_path)
    assert res.code == 0, res.err
    out = tmp_path / argv[argv.index("-o") + 1]
    json.loads(out.read_text())
    bad = run_veil([*argv, "--format", "csv", "--force"], tmp_path)
    assert bad.code == 2 and "does not match the output name" in bad.err, bad.err


def test_the_lists_cover_the_cli():
    run_here = set(OTHER_RUNS) | {c for c in CASE_PATHS.values()}
    missing = set(LEAVES) - run_here - set(NOT_RUN)
    assert not missing, f"commands neither run by this module nor listed in NOT_RUN: {missing}"
    assert READS_A_TABLE <= set(LEAVES)


# --------------------------------------------------------------------------- runs
CASE_PATHS = {
    "noise-counts": ("noise", "counts"), "histogram-records": ("histogram", "publish"),
    "histogram-counts": ("histogram", "publish"), "histogram-evaluate": ("histogram", "evaluate"),
    "location-obfuscate": ("location", "obfuscate"), "trajectory-model": ("trajectory", "model"),
    "trajectory-release": ("trajectory", "release"), "visits-hide": ("visits", "hide"),
    "visits-resemble": ("visits", "resemble"), "visits-avoid": ("visits", "avoid"),
    "table-anonymize": ("table", "anonymize"), "table-risk": ("table", "risk"),
    "table-constraints-check": ("table", "constraints", "check"),
    "map-publish": ("map", "publish"), "map-query": ("map", "query"),
}

_TRACKS = [["u1", 0, 39.90, 116.30], ["u1", 60, 39.91, 116.32], ["u1", 120, 39.93, 116.35],
           ["u2", 0, 39.95, 116.40], ["u2", 60, 39.96, 116.42], ["u2", 120, 39.94, 116.38]]


def _checkins(d: Path) -> str:
    write_csv(d / "checkins.csv", ["user", "category"],
              [["u1", "Bar"], ["u1", "Park"], ["u2", "Gym"], ["u2", "Bar"], ["u3", "Park"]])
    return "checkins.csv"


def _tracks(d: Path) -> str:
    write_csv(d / "tracks.csv", ["user", "t", "lat", "lon"], _TRACKS)
    return "tracks.csv"


def _constraints(d: Path) -> str:
    (d / "cons.txt").write_text("sex=F: 1..\nsex=F: 0..\nsex=M: 0..3\n")
    return "cons.txt"


def _budget_reservation(d: Path) -> str:
    """An open reservation (what a crashed release leaves), for `budget release`."""
    import contextlib

    from veil.identity import identity_of_file
    from veil.ledger import Ledger, ledger_path

    f = d / _checkins(d)
    with contextlib.closing(Ledger(ledger_path(None))) as led:
        r = led.reserve(identity_of_file(f), amount=1.0, unit="record", command="test",
                        label=f.name, outputs=[d / "never.csv"])
    return r.id


#: every other command: ``setup(folder) -> argv`` and whether its answer is on stdout
OTHER_RUNS = {
    ("data", "synth"): (lambda d: ["data", "synth", "census", "-o", "c.csv", "--rows", "20"],
                        False),
    ("budget", "set"): (lambda d: ["budget", "set", _checkins(d), "--total", "3"], False),
    ("budget", "show"): (lambda d: ["budget", "show"], True),
    ("location", "noise"): (lambda d: ["location", "noise", "--epsilon", "1"], True),
    ("location", "risk"): (lambda d: ["location", "risk", "-e", "0.01", "--region",
                                      "39.9,116.3,39.91,116.31", "--cell", "400"], True),
    ("map", "regions"): (lambda d: ["map", "regions"], True),
    ("table", "constraints", "implies"): (
        lambda d: ["table", "constraints", "implies", _constraints(d), "sex=F: 0.."], True),
    ("table", "constraints", "satisfiable"): (
        lambda d: ["table", "constraints", "satisfiable", _constraints(d)], True),
    ("table", "constraints", "minimize"): (
        lambda d: ["table", "constraints", "minimize", _constraints(d)], True),
    ("trajectory", "risk"): (lambda d: ["trajectory", "risk", _tracks(d), "--grid", "beijing:5",
                                        "--seed", "1"], True),
    ("batch", "counts"): (lambda d: ["batch", "counts", _checkins(d), "-o", "out",
                                     "--categories", "Bar,Park,Gym", "-e", "1"], False),
    ("batch", "visits"): (lambda d: ["batch", "visits", _checkins(d), "-o", "out",
                                     "--categories", "Bar,Park,Gym", "--sensitive", "Park"],
                          False),
    ("batch", "trajectories"): (
        lambda d: [*_model(d), "batch", "trajectories", _tracks(d), "-o", "out",
                   "--model", "m.npz", "-e", "1", "-d", "0.1"], False),
    ("batch", "status"): (lambda d: [*_batch_done(d), "batch", "status", "out"], True),
    ("batch", "discard"): (lambda d: [*_batch_interrupted(d), "batch", "discard", "job",
                                      "--yes"], False),
    ("budget", "release"): (lambda d: ["budget", "release", _budget_reservation(d)], False),
    ("report",): (lambda d: [*_report_dir(d), "report", "run"], False),
}


def _model(d: Path) -> list[str]:
    res = run_veil(["trajectory", "model", _tracks(d), "--grid", "beijing:5", "-o", "m.npz",
                    "-q"], d)
    assert res.code == 0, res.err
    return []


def _batch_done(d: Path) -> list[str]:
    res = run_veil(["batch", "visits", _checkins(d), "-o", "out", "--categories",
                    "Bar,Park,Gym", "--sensitive", "Park", "-q"], d)
    assert res.code == 0, res.err
    return []


def _batch_interrupted(d: Path) -> list[str]:
    """A run whose work folder is left (as an interruption leaves it)."""
    import shutil

    res = run_veil(["batch", "visits", _checkins(d), "-o", "job", "--categories",
                    "Bar,Park,Gym", "--sensitive", "Park", "-q"], d)
    assert res.code == 0, res.err
    shutil.rmtree(d / "job")
    (d / ".job.veil-work").mkdir(mode=0o700)
    (d / ".job.veil-work" / "veil-work-folder").write_text("")  # veil's mark: its own folder
    (d / ".job.veil-work" / "job.json").write_text("{}")
    return []


def _report_dir(d: Path) -> list[str]:
    from veil.report.demo import run_demo

    run_demo(d / "run", quick=True, modules=["veil.report.sections.samplers"], progress=False)
    return []


def _argv_for(path, d: Path):
    if path in OTHER_RUNS:
        setup, on_stdout = OTHER_RUNS[path]
        argv = setup(d)
        return argv, on_stdout
    case = next(c for c in CASES if CASE_PATHS[c.id] == path)
    argv, _ = case.build(d, "kq7col", "in7file")
    return argv, case.stdout


RUN_PATHS = sorted(set(OTHER_RUNS) | {CASE_PATHS[c.id] for c in CASES})


def _one_json_object(text: str, where) -> dict:
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise AssertionError(f"{where}: stdout is not one JSON object: {exc}\n{text[:400]}")
    assert isinstance(obj, dict), (where, type(obj))
    return obj


@pytest.mark.parametrize("mode", ["plain", "quiet", "json", "json-quiet"])
@pytest.mark.parametrize("path", RUN_PATHS, ids=" ".join)
def test_output_convention(path, mode, tmp_path, repeat_releases):
    argv, on_stdout = _argv_for(path, tmp_path)
    extra = {"plain": [], "quiet": ["--quiet"], "json": ["--json"],
             "json-quiet": ["--json", "-q"]}[mode]
    res = run_veil([*argv, *extra], tmp_path)
    where = (" ".join(path), mode)
    assert res.code == 0, (where, res.err)
    if "quiet" in mode:
        assert res.err == "", (where, res.err)
    if "json" in mode:
        summary = _one_json_object(res.out, where)
        if not on_stdout:   # a command that wrote files says which
            text = json.dumps(summary)
            assert any(k in summary for k in ("output", "report", "discarded", "released",
                                              "dataset")), (where, text[:300])
    elif not on_stdout:
        assert res.out == "", (where, "status on stdout", res.out)
    else:
        assert res.out.strip(), (where, "no answer on stdout")


def test_json_summary_of_a_dp_command_is_public(tmp_path, repeat_releases):
    """The --json summary of a DP command holds the sidecar's public fields, not data."""
    case = next(c for c in CASES if c.id == "histogram-records")
    argv, _ = case.build(tmp_path, "kq7col", "in7file")
    res = run_veil([*argv, "--json"], tmp_path)
    assert res.code == 0, res.err
    summary = json.loads(res.out)
    side = json.loads((tmp_path / "out.csv.meta.json").read_text())
    assert summary["output"] == "out.csv" and summary["sidecar"].endswith("out.csv.meta.json")
    for key in ("mechanism", "budget", "budget_split", "protects"):
        assert summary[key] == side[key], key
    assert set(summary) <= {"output", "sidecar", "mechanism", "budget", "budget_split",
                            "noise_scale", "protects", "bins"}


def test_quiet_changes_no_output_file(tmp_path, repeat_releases):
    """--quiet and --json change what is printed, never what is written."""
    case = next(c for c in CASES if c.id == "noise-counts")
    outs = []
    for extra in ([], ["--quiet", "--json"]):
        d = tmp_path / ("q" if extra else "p")
        d.mkdir()
        argv, files = case.build(d, "kq7col", "in7file")
        assert run_veil([*argv, *extra], d).code == 0
        outs.append((d / "out.csv").read_bytes())
    assert outs[0] == outs[1]


def test_batch_progress_is_on_stderr(tmp_path, capfd):
    """The batch progress bar is status: stderr, also when stdout is not a terminal."""
    from veil.engine import Job, run_job

    _checkins(tmp_path)
    run_job(Job(tmp_path / "checkins.csv", tmp_path / "out", "visits-hide",
                params={"categories": ["Bar", "Park", "Gym"], "sensitive": ["Park"]},
                progress=True))
    cap = capfd.readouterr()
    assert cap.out == ""
    assert "veil batch" in cap.err


# --------------------------------------------------------------------------- delimiter
def _to_semicolons(d: Path, keep: set[str]) -> list[str]:
    changed = []
    for f in sorted(d.glob("*.csv")):
        if f.name in keep:
            continue
        with open(f, newline="", encoding="utf-8") as fh:
            rows = list(csv.reader(fh))
        with open(f, "w", newline="", encoding="utf-8") as fh:
            csv.writer(fh, delimiter=";", lineterminator="\n").writerows(rows)
        changed.append(f.name)
    return changed


@pytest.mark.parametrize("case", [c for c in CASES if c.id != "map-query"], ids=lambda c: c.id)
def test_delimiter_reads_what_the_comma_file_gives(case, tmp_path, repeat_releases):
    """A ';'-delimited copy of each input with --delimiter ';' gives the same output files as
    the comma version; without it, a failure names --delimiter only where the option exists.

    (map query reads a published map, which veil always writes with commas.)"""
    plain, semi = tmp_path / "plain", tmp_path / "semi"
    plain.mkdir()
    semi.mkdir()
    argv, outputs = case.build(plain, "kq7col", "in7file")
    res = run_veil(argv, plain)
    assert res.code == 0, res.err
    argv2, _ = case.build(semi, "kq7col", "in7file")
    assert _to_semicolons(semi, keep=set())
    bare = run_veil(argv2, semi)
    if bare.code != 0:
        assert "--delimiter" in bare.err or "delimit" not in bare.err, bare.err
        for f in outputs:
            assert not (semi / f).exists()
    for f in outputs:
        if (semi / f).exists():
            (semi / f).unlink()
    for f in list(semi.glob("*.meta.json")):
        if f.name.replace(".meta.json", "") in outputs:
            f.unlink()
    force = ["--force"] if "--force" in _visible(LEAVES[CASE_PATHS[case.id]]) else []
    res2 = run_veil([*argv2, "--delimiter", ";", *force], semi)
    assert res2.code == 0, res2.err
    for f in outputs:
        a, b = (plain / f).read_bytes(), (semi / f).read_bytes()
        if f.endswith(".meta.json"):   # the sidecars name their input and may hold timings
            a_js, b_js = json.loads(a), json.loads(b)
            assert a_js.get("mechanism") == b_js.get("mechanism")
            continue
        if f.endswith(".npz"):
            continue
        if a != b and case.id == "table-anonymize":
            # a table keeps its input's bytes, delimiter included: compare the cells
            def rows(data: bytes, delim: str):
                return list(csv.reader(data.decode().splitlines(), delimiter=delim))
            assert rows(a, ",") == rows(b, ";"), (case.id, f)
            continue
        assert a == b, (case.id, f)
    if case.stdout:
        assert res.out == res2.out


@pytest.mark.parametrize("path", sorted(LEAVES), ids=" ".join)
def test_the_delimiter_hint_names_an_option_the_command_has(path):
    """The reader's hint says '--delimiter on the command line': only where there is one."""
    if "--delimiter" in _visible(LEAVES[path]) or path[0] == "bench":
        return  # (the benchmarks read the shared data, whose format is known)
    import inspect

    src = inspect.getsource(LEAVES[path].callback.__wrapped__
                            if hasattr(LEAVES[path].callback, "__wrapped__")
                            else LEAVES[path].callback)
    # a command without --delimiter must not read user tables through veil.io's readers
    for reader in ("read_columns(", "read_counts(", "read_table(", "read_points(",
                   "read_input("):
        assert reader not in src, (path, reader)


def test_listing_helper_is_used():  # keep the shared helper import honest
    assert listing(Path(__file__).parent / "cli")


# --------------------------------------------------------------------------- inputs/outputs
def test_constraints_check_takes_the_table_as_input_and_the_old_form_warns(tmp_path):
    write_csv(tmp_path / "t.csv", ["age", "sex"], [[1, "F"], [2, "F"], [3, "M"]])
    (tmp_path / "c.txt").write_text("sex=F: 2..\n")
    new = run_veil(["table", "constraints", "check", "t.csv", "--constraints", "c.txt"],
                   tmp_path)
    old = run_veil(["table", "constraints", "check", "c.txt", "--table", "t.csv"], tmp_path)
    assert new.code == old.code == 0, (new.err, old.err)
    assert new.out == old.out and "1/1 constraints hold" in new.out
    assert "deprecated" in old.err and "deprecated" not in new.err
    both = run_veil(["table", "constraints", "check", "t.csv", "--constraints", "c.txt",
                     "--table", "t.csv"], tmp_path)
    assert both.code == 2 and "--table is the old spelling" in both.err
    none = run_veil(["table", "constraints", "check", "t.csv"], tmp_path)
    assert none.code == 2 and "--constraints is required" in none.err


@pytest.mark.parametrize("argv", [
    ["batch", "counts", "checkins.csv", "-o", "a/b/c", "--categories", "Bar", "-e", "1"],
    ["batch", "visits", "checkins.csv", "-o", "a/b/c", "--categories", "Bar,Park",
     "--sensitive", "Park"],
    ["demo", "-o", "a/b", "--quick"],
    ["histogram", "publish", "checkins.csv", "-c", "user", "-o", "a/b/h.csv", "-e", "1",
     "--bins", "0:1:2"],
], ids=lambda a: " ".join(a[:2]))
def test_an_output_in_a_missing_folder_is_refused_everywhere(argv, tmp_path):
    _checkins(tmp_path)
    res = run_veil(argv, tmp_path)
    assert res.code == 2 and "does not exist" in res.err, res.err
    assert not (tmp_path / "a").exists()


def test_a_semicolon_file_gets_a_delimiter_hint_that_works(tmp_path, repeat_releases):
    """The hint names --delimiter; passing it reads the file."""
    (tmp_path / "v.csv").write_text("age;sex\n30;F\n40;M\n")
    argv = ["histogram", "publish", "v.csv", "-c", "age", "--bins", "0:100:4", "-e", "1",
            "-o", "h.csv"]
    res = run_veil(argv, tmp_path)
    assert res.code == 2 and "--delimiter" in res.err, res.err
    res = run_veil([*argv, "--delimiter", ";"], tmp_path)
    assert res.code == 0, res.err
    (tmp_path / "t.csv").write_text("user;t;lat;lon\nu1;0;39.9;116.3\nu1;60;39.91;116.32\n")
    res = run_veil(["trajectory", "model", "t.csv", "--grid", "beijing:5", "-o", "m.npz"],
                   tmp_path)
    assert res.code == 2 and "--delimiter" in res.err, res.err
    res = run_veil(["trajectory", "model", "t.csv", "--grid", "beijing:5", "-o", "m.npz",
                    "--delimiter", ";"], tmp_path)
    assert res.code == 0, res.err


@pytest.mark.parametrize("case_id", ["histogram-records", "noise-counts"])
def test_the_log_line_states_the_epsilon_given(case_id, tmp_path, repeat_releases):
    """A parameter echoed in the closing line reads back to the float used: ``{:g}`` printed
    0.1234567 as 0.123457 (and a prior weight of 0.9999999999 as 1)."""
    case = next(c for c in CASES if c.id == case_id)
    argv, _ = case.build(tmp_path, "kq7col", "in7file")
    i = argv.index("-e")
    argv = [*argv[:i + 1], "0.1234567", *argv[i + 2:]]
    res = run_veil(argv, tmp_path)
    assert res.code == 0, res.err
    assert "0.1234567" in res.err and "0.123457" not in res.err.replace("0.1234567", "")


def test_the_model_line_states_the_prior_weight_given(tmp_path):
    res = run_veil(["trajectory", "model", _tracks(tmp_path), "--grid",
                    "39.8,116.2,40.0,116.5,4,4", "--prior-weight", "0.9999999999",
                    "-o", "m.npz"], tmp_path)
    assert res.code == 0, res.err
    assert "prior weight 0.9999999999" in res.err


def test_exact_prints_a_parameter_that_reads_back():
    from veil.validation import exact
    for x in (1.0, 0.5, 1e-6, 0.1234567, 0.9999999999, 1 / 3, 2.0 ** -40, 1e300):
        assert float(exact(x)) == x
    assert exact(1.0) == "1" and exact(0.5) == "0.5" and exact(1e-6) == "1e-06"


def test_a_warning_is_one_veil_line(tmp_path):
    """docs/cli.md: warnings print as `veil: warning: ...`; a privacy warning printed Python's
    `/path/to/veil/cli/histogram.py:230: PrivacyWarning: ...` and the source line under it.
    (A real process: pytest captures warnings in-process.)"""
    import os
    import subprocess
    import sys

    (tmp_path / "v.csv").write_text("v\n1\n5\n9\n")
    env = {**os.environ, "VEIL_HOME": str(tmp_path / "home")}
    env.pop("VEIL_LEDGER", None)
    proc = subprocess.run([sys.executable, "-m", "veil", "histogram", "publish", "v.csv", "-c",
                           "v", "--bins", "2", "--bins-from-data", "-e", "1", "-o", "h.csv"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "veil: privacy warning: --bins-from-data" in proc.stderr, proc.stderr
    assert "PrivacyWarning" not in proc.stderr and ".py:" not in proc.stderr


def test_max_records_is_named_in_its_error(tmp_path):
    """`--max-records 0` said "max_records must be >= 1" (the library's name)."""
    (tmp_path / "r.csv").write_text("user,v,category\na,1,x\n")
    for argv in (["histogram", "publish", "r.csv", "-c", "v", "--bins", "0:2:2",
                  "--user-column", "user", "--max-records", "0", "-e", "1", "-o", "h.csv"],
                 ["batch", "counts", "r.csv", "--categories", "x", "--max-records", "0",
                  "-e", "1", "-o", "out"]):
        res = run_veil(argv, tmp_path)
        assert res.code == 2 and "--max-records must be >= 1" in res.err, res.err
