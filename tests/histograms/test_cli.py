"""``veil histogram publish|evaluate``: outputs, sidecar, bad input (exit 2, no output)."""

import json

import numpy as np
import pandas as pd
import pytest

from veil.cli import main
from veil.errors import PrivacyWarning


def run(args):
    with pytest.raises(SystemExit) as exc:
        main(args)
    return exc.value.code


def run_ok(args):
    try:
        main(args)
    except SystemExit as exc:  # pragma: no cover - typer may exit 0
        assert exc.code in (0, None)


@pytest.fixture
def data(tmp_path):
    g = np.random.default_rng(0)
    pd.DataFrame({"age": g.integers(0, 100, 3000), "name": ["x"] * 3000}).to_csv(
        tmp_path / "ages.csv", index=False)
    pd.DataFrame({"age": g.integers(0, 100, 3000)}).to_parquet(tmp_path / "ages.parquet")
    pd.DataFrame({"count": [3, 0, 5, 7]}).to_csv(tmp_path / "counts.csv", index=False)
    pd.DataFrame({"count": [3, -1, 5]}).to_csv(tmp_path / "neg.csv", index=False)
    pd.DataFrame({"count": [3, 1.5, 5]}).to_csv(tmp_path / "frac.csv", index=False)
    (tmp_path / "empty.csv").write_text("count\n")
    return tmp_path


@pytest.mark.parametrize("fmt", ["csv", "parquet", "json"])
def test_publish_writes_histogram_and_sidecar(data, fmt):
    out = data / f"h.{fmt}"
    run_ok(["histogram", "publish", str(data / "ages.parquet"), "--column", "age",
            "--bins", "0:100:20", "--epsilon", "1", "--method", "hb", "-o", str(out)])
    meta = json.loads((data / f"h.{fmt}.meta.json").read_text())
    assert meta["mechanism"] == "hb" and meta["budget"]["epsilon"] == 1.0
    assert sum(meta["budget_split"].values()) == pytest.approx(1.0)
    assert meta["parameters"]["input"]["bins"] == 20 and meta["parameters"]["input"]["bins_from_data"] is False
    if fmt == "csv":
        df = pd.read_csv(out)
        assert list(df.columns) == ["bin", "lower", "upper", "count"] and len(df) == 20
        assert df["lower"].iloc[1] == 5.0
    assert not list(data.glob(".veil-tmp-*"))


def test_publish_structurefirst_and_counts_mode_then_evaluate(data, capsys):
    run_ok(["histogram", "publish", str(data / "counts.csv"), "--column", "count", "--counts",
            "--epsilon", "2", "--method", "structurefirst", "--count-bound", "100", "--k", "2",
            "-o", str(data / "p.csv")])
    meta = json.loads((data / "p.csv.meta.json").read_text())
    assert set(meta["budget_split"]) == {"structure", "counts"}
    assert meta["parameters"]["count_bound"] == 100
    capsys.readouterr()
    run_ok(["histogram", "evaluate", str(data / "p.csv"), "--true", str(data / "counts.csv")])
    res = json.loads(capsys.readouterr().out)
    assert res["workload"] == "prefix" and res["queries"] == 4 and res["scaled_error"] >= 0


BAD = [
    (["neg.csv", "--column", "count", "--counts"], "row 2, column 'count'.*negative"),
    (["frac.csv", "--column", "count", "--counts"], "row 2, column 'count'.*1.5.*not an integer"),
    (["empty.csv", "--column", "count", "--counts"], "no data rows"),
    (["ages.csv", "--column", "age", "--bins", "20"], "number of bins but no range"),
    (["ages.csv", "--column", "age"], "--bins is required"),
    (["ages.csv", "--column", "nope", "--bins", "0:1:2"], "no such column"),
    (["ages.csv", "--column", "name", "--bins", "0:1:2"], "column 'name'.*not a number"),
    (["missing.csv", "--column", "age", "--bins", "0:1:2"], "no such file"),
    (["ages.csv", "--column", "age", "--bins", "0:100:4", "--epsilon", "0"],
     "epsilon must be > 0"),
    (["ages.csv", "--column", "age", "--bins", "0:100:4", "--epsilon", "-1"],
     "epsilon must be > 0"),
    (["ages.csv", "--column", "age", "--bins", "0:100:4", "--method", "noisefirts"],
     "did you mean 'noisefirst'"),
    (["ages.csv", "--column", "age", "--bins", "0:100:4", "--method", "structurefirst",
      "--count-bound", "10", "--k", "5"], "k must be <= the number of bins n=4, got 5"),
    (["ages.csv", "--column", "age", "--bins", "0:100:4", "--method", "structurefirst"],
     "--count-bound is required"),
    (["ages.csv", "--column", "age", "--bins", "5,3,9"], "increasing"),
]


@pytest.mark.parametrize("args, match", BAD)
def test_bad_input_exits_2_without_output(data, capsys, args, match):
    argv = ["histogram", "publish", str(data / args[0]), *args[1:], "-o", str(data / "bad.csv")]
    if "--epsilon" not in argv:
        argv += ["--epsilon", "1"]
    assert run(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("veil: error:")
    import re
    assert re.search(match, err), err
    assert not (data / "bad.csv").exists() and not (data / "bad.csv.meta.json").exists()
    assert not list(data.glob(".veil-tmp-*"))


def test_bins_from_data_needs_flag_and_warns(data):
    with pytest.warns(PrivacyWarning, match="NOT differentially private"):
        run_ok(["histogram", "publish", str(data / "ages.csv"), "--column", "age", "--bins",
                "10", "--bins-from-data", "--epsilon", "1", "-o", str(data / "fd.csv")])
    meta = json.loads((data / "fd.csv.meta.json").read_text())
    assert meta["parameters"]["input"]["bins_from_data"] is True
    # the sidecar says it in words, as map publish --bbox-from-data does (only stderr did)
    assert any("--bins-from-data): NOT private" in n for n in meta["notes"])


def test_a_tiny_epsilon_names_the_options_and_gives_the_budget_back(data, capsys):
    """An epsilon so small that the noise scale passes the exact sampler's maximum said only
    "scale 5e+301 is too large for the exact sampler": it now names what to change, writes
    nothing, and the ledger's reservation is released."""
    from veil.ledger import open_ledger

    out = data / "tiny.csv"
    assert run(["histogram", "publish", str(data / "ages.csv"), "-c", "age", "--bins",
                "0:100:8", "-e", "1e-300", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "--epsilon" in err and "sensitivity" in err and "2**41" in err, err
    assert len(err.strip().splitlines()) == 1
    assert not out.exists() and not (data / "tiny.csv.meta.json").exists()
    with open_ledger() as led:
        states = [e["state"] for d in led.datasets() for e in led.summary(d).entries]
    assert states == ["released"], states


def test_output_folder_must_exist(data, capsys):
    assert run(["histogram", "publish", str(data / "ages.csv"), "--column", "age", "--bins",
                "0:100:4", "--epsilon", "1", "-o", str(data / "nope" / "x.csv")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_evaluate_rejects_mismatched_bins(data, capsys):
    run_ok(["histogram", "publish", str(data / "ages.csv"), "--column", "age", "--bins",
            "0:100:5", "--epsilon", "1", "--method", "identity", "-o", str(data / "h.csv")])
    assert run(["histogram", "evaluate", str(data / "h.csv"), "--true",
                str(data / "counts.csv")]) == 2
    assert "5 bins, the true one 4" in capsys.readouterr().err


def test_bench_command_is_registered(capsys):
    try:
        main(["bench", "histograms", "--help"])
    except SystemExit as exc:
        assert exc.code in (0, None)
    out = capsys.readouterr().out
    for flag in ("--accuracy", "--quick", "--speed", "--hdmm", "--fit-auto", "--fit-target",
                 "--trials", "--n-bins"):
        assert flag in out


def test_bench_fit_target_reaches_the_fit_and_is_checked_before_any_work(tmp_path, capsys,
                                                                          monkeypatch):
    """The shipped rule was fitted with the count of cells above 1.15x the best
    (``--fit-target 1.15``); the command passes it on and refuses a ratio below 1."""
    from veil.histograms import bench

    seen = {}

    def fake_run(**kw):
        seen.update(kw)
        return {}
    monkeypatch.setattr(bench, "run", fake_run)
    rows = tmp_path / "rows.json"
    rows.write_text("[]")
    run_ok(["bench", "histograms", "--fit-auto", str(rows), "--fit-target", "1.15"])
    assert seen["fit_target"] == 1.15 and seen["fit_auto"] == rows
    seen.clear()
    for bad in ("0.5", "nan", "inf"):
        assert run(["bench", "histograms", "--fit-auto", str(rows), "--fit-target", bad]) == 2
        assert "--fit-target" in capsys.readouterr().err
        assert not seen                                   # refused before any work


def test_bench_fit_auto_reports_the_misses_beyond_trial_noise(tmp_path, capsys):
    """``veil bench histograms --fit-auto ROWS -o OUT``: the held-out misses are tested
    against trial noise end to end (the printed line and ``auto.misses`` in OUT); a held-out
    cell at 3x the best over 6 paired trials is firm."""
    import json

    from veil.histograms.evaluation import EvalRow

    g = np.random.default_rng(5)
    acc = []
    for d in ("d1", "d2", "d3", "d4"):
        base = g.lognormal(0.0, 0.05, size=6)
        # HB best on d1-d3 (the fit picks it), DAWA 3x better on d4: held out, a miss
        for m, f in (("hb", 3.0 if d == "d4" else 1.0), ("dawa", 1.0 if d == "d4" else 1.3)):
            for w in ("prefix", "random"):
                acc.append(EvalRow(d, m, 0.01, 1000, w, n=1000,
                                   errors=list(f * base)).to_dict())
    rows = tmp_path / "rows.json"
    rows.write_text(json.dumps({"accuracy": acc, "tables": {}}))
    out = tmp_path / "fit.json"
    run_ok(["bench", "histograms", "--fit-auto", str(rows), "--fit-target", "1.15",
            "-o", str(out)])
    printed = capsys.readouterr().out
    misses = json.loads(out.read_text())["auto"]["misses"]
    assert misses and all(m["over_best"] > 1.15 for m in misses)
    firm = [m for m in misses if m["firm"]]
    assert firm and {m["dataset"] for m in firm} == {"d4"}
    assert all(m["lower_bound"] > 1.15 for m in firm)
    assert "above it beyond trial noise" in printed and f": {len(firm)} (" in printed


# --------------------------------------------------------------------------- issue 19
# what a published sidecar may reveal that depends on the data: only outputs of DP steps
DP_KEYS = {
    "noisefirst": {"edges", "k", "estimated_sse", "buckets_averaged"},
    "structurefirst": {"edges"}, "optimized-structurefirst": {"edges"},
    "sort-and-group": {"groups", "estimated_sse"}, "ahp": {"clusters"},
    "dawa": {"edges", "buckets", "measured_nodes"}, "mwem": {"selected"},
    "coarse": {"noisy_total", "buckets", "edges", "measured_nodes"},
    "privtree": {"buckets", "edges", "max_depth", "measured_nodes", "leaf_measure",
                 "leaf_expected_errors"},
    "auto": {"auto_noisy_total", "auto_rule", "notes"},
}
CLI_EXTRA = {"structurefirst": ["--count-bound", "1000", "--k", "4"],
             "optimized-structurefirst": ["--count-bound", "1000", "--k", "4"]}


def _strip(meta, keys):
    out = {}
    for k, v in meta.items():
        if k in keys:
            continue
        out[k] = _strip(v, keys) if isinstance(v, dict) else v
    return out


@pytest.mark.parametrize("method", ["identity", "noisefirst", "structurefirst",
                                    "optimized-structurefirst", "boost", "hb", "sort-and-group",
                                    "ahp", "dawa", "hdmm", "mwem", "coarse", "privtree",
                                    "auto"])
def test_sidecar_is_identical_on_neighbours_except_dp_outputs(tmp_path, method):
    """Publish the same seed on neighbouring histograms (one record apart): the data file is
    the DP value (audited in test_audits), and the sidecar differs at most in the outputs of
    DP steps (partition, selected queries, noisy total)."""
    metas = []
    for k, extra_record in enumerate((0, 1)):
        counts = [30, 4, 9, 0, 12, 12, 50, 7] * 4
        counts[5] += extra_record
        src = tmp_path / "c.csv"                 # same input path for both neighbours
        pd.DataFrame({"count": counts}).to_csv(src, index=False)
        out = tmp_path / f"o{k}.csv"
        run_ok(["histogram", "publish", str(src), "--column", "count", "--counts", "--epsilon",
                "0.8", "--method", method, "--seed", "3", "-o", str(out),
                *CLI_EXTRA.get(method, [])])
        metas.append(json.loads((tmp_path / f"o{k}.csv.meta.json").read_text()))
    keys = DP_KEYS.get(method, set())
    assert _strip(metas[0], keys) == _strip(metas[1], keys)


@pytest.mark.parametrize("method", ["hdmm", "mwem", "dawa", "coarse", "privtree"])
def test_cli_release_equals_library_release(data, method):
    from veil.histograms import publish
    from veil.random import make_rng

    out = data / f"{method}.csv"
    run_ok(["histogram", "publish", str(data / "counts.csv"), "--column", "count", "--counts",
            "--epsilon", "1.5", "--method", method, "--seed", "11", "-o", str(out)])
    lib = publish(np.array([3, 0, 5, 7]), epsilon=1.5, method=method, rng=make_rng(seed=11))
    np.testing.assert_allclose(pd.read_csv(out)["count"].to_numpy(), lib.value)
    meta = json.loads((data / f"{method}.csv.meta.json").read_text())
    assert meta["mechanism"] == method and meta["budget_split"] == lib.budget_split
    if method == "hdmm":
        assert meta["expected_error"]["rmse_per_query"] == pytest.approx(
            lib.expected_error["rmse_per_query"])


def test_huge_bins_are_refused_with_the_output_size(data, capsys):
    """Issue 17 (defect 6): `--bins 0:100:100000000` ran for minutes towards a gigabyte
    output; a bin count above the limit is a one-line error naming the size, nothing written."""
    from veil.cli.histogram import MAX_BINS, parse_bins

    with pytest.raises(Exception, match="2,000,000 bins"):
        parse_bins("0:100:2000000", values=None, from_data=False)
    assert parse_bins(f"0:100:{MAX_BINS}", values=None, from_data=False).size == MAX_BINS + 1
    out = data / "h.csv"
    code = run(["histogram", "publish", str(data / "ages.csv"), "-c", "age", "--bins",
                "0:100:100000000", "-e", "1", "-o", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and "100,000,000 bins" in err and "MB" in err
    assert len(err.strip().splitlines()) == 1 and not out.exists()
    code = run(["histogram", "publish", str(data / "ages.csv"), "-c", "age", "--bins",
                "5000000", "--bins-from-data", "-e", "1", "-o", str(out)])
    assert code == 2 and "5,000,000 bins" in capsys.readouterr().err and not out.exists()


def test_publish_names_its_stages_on_a_terminal_only(data, monkeypatch, capsys,
                                                     repeat_releases):
    """``histogram publish`` on 10^8 records took 45 s with nothing on the screen. On a
    terminal it names its stages on one transient line; a warning raised during a stage is
    printed above that line; off a terminal stderr holds only the status line, as before."""
    import sys

    from cli_cases import FakeTerminal

    term, captured = FakeTerminal(), sys.stderr
    monkeypatch.setattr(sys, "stderr", term)
    args = ["histogram", "publish", str(data / "ages.csv"), "-c", "age", "--bins", "0:100:10",
            "-e", "1", "-m", "hb"]
    run_ok(args + ["-o", str(data / "h1.csv")])
    shown = term.getvalue()
    for stage in ("ages.csv: reading column age",
                  "ages.csv: content identity for the privacy ledger",
                  "hb on the histogram", "writing h1.csv"):
        assert stage in shown, (stage, shown)
    assert shown.rstrip().split("\x1b[2K")[-1].startswith("hb: 10 bins")
    monkeypatch.setattr(sys, "stderr", captured)
    capsys.readouterr()
    run_ok(args + ["-o", str(data / "h2.csv")])
    err = capsys.readouterr().err
    assert err.strip().splitlines() == [err.strip()] and err.startswith("hb: 10 bins")


def _spy_whole_reads(monkeypatch) -> list:
    """Record every call of the whole-table reader (``veil.io.read.read_table``)."""
    import veil.io.read as reader

    whole = []
    original = reader.read_table
    monkeypatch.setattr(reader, "read_table",
                        lambda *a, **k: whole.append(a) or original(*a, **k))
    return whole


@pytest.mark.parametrize("method", ["identity", "hb", "dawa", "auto"])
def test_records_are_counted_in_batches_and_equal_the_library(data, monkeypatch, method):
    """``histogram publish`` with public bins counts its column batch by batch (memory
    follows the bins: 10^8 records took 2.3 GB read whole): the whole-column reader is never
    called, and the written histogram and sidecar are those of ``publish_records`` on the
    whole column with the same seed."""
    from veil.histograms import publish_records
    from veil.io import read_columns
    from veil.random import make_rng

    ages = read_columns(data / "ages.csv", columns={"age": "float"})["age"]
    whole = _spy_whole_reads(monkeypatch)
    out = data / f"r-{method}.csv"
    run_ok(["histogram", "publish", str(data / "ages.csv"), "-c", "age", "--bins", "0:100:10",
            "-e", "1", "-m", method, "--seed", "5", "-o", str(out)])
    assert not whole
    lib = publish_records(ages, bins=np.linspace(0, 100, 11), epsilon=1.0, method=method,
                          rng=make_rng(seed=5))
    np.testing.assert_array_equal(pd.read_csv(out)["count"].to_numpy(),
                                  np.asarray(lib.value, dtype=float))
    meta = json.loads((data / f"r-{method}.csv.meta.json").read_text())
    assert meta["mechanism"] == lib.mechanism and meta["budget_split"] == lib.budget_split
    assert meta["parameters"]["bins"] == lib.parameters["bins"]


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
@pytest.mark.parametrize("method", ["identity", "hb", "auto"])
def test_per_person_records_are_bounded_in_duckdb_and_equal_the_library(tmp_path, monkeypatch,
                                                                        suffix, method):
    """``--user-column --max-records`` with public bins: the columns are checked batch by
    batch and the bounding and counting run in DuckDB from the file (10^7 records took 2.5 GB
    read whole): the whole-column reader is never called, and the table and sidecar are those
    of ``publish_records`` on the whole columns with the same seed (the same rows kept)."""
    from veil.histograms import publish_records
    from veil.io import read_columns, write_table
    from veil.random import make_rng

    g = np.random.default_rng(4)
    n = 4000
    f = tmp_path / f"ci{suffix}"
    write_table({"user": [f"u{i}" for i in g.integers(0, 70, n)],
                 "age": g.integers(0, 100, n).astype(float) + 0.5}, f)
    cols = read_columns(f, columns={"age": "float", "user": "str"})
    whole = _spy_whole_reads(monkeypatch)
    out = tmp_path / "p.csv"
    run_ok(["histogram", "publish", str(f), "-c", "age", "--bins", "0:100:10", "-e", "1",
            "-m", method, "--user-column", "user", "--max-records", "7", "--seed", "5",
            "-o", str(out)])
    assert not whole
    lib = publish_records(cols["age"], bins=np.linspace(0, 100, 11), users=cols["user"],
                          max_records=7, epsilon=1.0, method=method, rng=make_rng(seed=5))
    np.testing.assert_array_equal(pd.read_csv(out)["count"].to_numpy(),
                                  np.asarray(lib.value, dtype=float))
    meta = json.loads((tmp_path / "p.csv.meta.json").read_text())
    assert meta["budget_split"] == lib.budget_split and meta["protects"] == "user"
    assert meta["parameters"]["epsilon_per_record"] == lib.parameters["epsilon_per_record"]


@pytest.mark.parametrize("per_person", [False, True])
def test_bins_from_data_are_streamed_and_equal_the_library(tmp_path, monkeypatch, per_person):
    """``--bins-from-data`` (opt-in, not private) took the range from the column read whole:
    the range now comes from a streamed pass (its minimum and maximum), and the counting from
    the batched paths, so the whole-column reader is never called; the table and sidecar are
    those of ``publish_records`` on the whole column with the range of the data."""
    from veil.histograms import publish_records
    from veil.io import read_columns, write_table
    from veil.random import make_rng

    g = np.random.default_rng(6)
    n = 5000
    f = tmp_path / "v.parquet"
    write_table({"user": [f"u'{i}" for i in g.integers(0, 80, n)],
                 "v": np.round(g.normal(40, 12, n), 3)}, f)
    cols = read_columns(f, columns={"v": "float", "user": "str"})
    whole = _spy_whole_reads(monkeypatch)
    out = tmp_path / "p.csv"
    extra = ["--user-column", "user", "--max-records", "6"] if per_person else []
    with pytest.warns(PrivacyWarning, match="NOT differentially private"):
        run_ok(["histogram", "publish", str(f), "-c", "v", "--bins", "16", "--bins-from-data",
                "-e", "1", "-m", "hb", "--seed", "8", "-o", str(out), *extra])
    assert not whole
    edges = np.linspace(cols["v"].min(), cols["v"].max(), 17)
    lib = publish_records(cols["v"], bins=edges, epsilon=1.0, method="hb", rng=make_rng(seed=8),
                          **(dict(users=cols["user"], max_records=6) if per_person else {}))
    table = pd.read_csv(out)
    np.testing.assert_array_equal(table["count"].to_numpy(), np.asarray(lib.value, dtype=float))
    np.testing.assert_allclose(table["lower"].to_numpy(), edges[:-1], rtol=0, atol=0)
    meta = json.loads((tmp_path / "p.csv.meta.json").read_text())
    assert meta["budget_split"] == lib.budget_split
    assert meta["parameters"]["input"]["bins_from_data"] is True


def test_per_person_bad_cells_give_the_former_errors(tmp_path, capsys):
    """The streamed checks report what reading the columns whole reported: of the value
    column and then the user column, the first bad row."""
    from veil.errors import DataError
    from veil.io import read_columns
    from veil.io.read import check_columns_streaming

    rows = [f"u{i % 9},{i % 50}" for i in range(3000)]
    cases = {"value": {2500: "u1,abc"}, "user": {40: ",7"}, "both": {40: ",7", 2900: "u2,x"}}
    for name, bad in cases.items():
        body = [bad.get(i, r) for i, r in enumerate(rows)]
        f = tmp_path / f"{name}.csv"
        f.write_text("user,age\n" + "\n".join(body) + "\n")
        with pytest.raises(DataError) as before:
            read_columns(f, columns={"age": "float", "user": "str"})
        with pytest.raises(DataError) as now:
            check_columns_streaming(f, {"age": "float", "user": "str"}, batch_rows=256)
        assert str(now.value) == str(before.value), name
        assert run(["histogram", "publish", str(f), "-c", "age", "--bins", "0:100:10", "-e",
                    "1", "--user-column", "user", "--max-records", "3",
                    "-o", str(tmp_path / f"{name}.out.csv")]) == 2
        assert str(before.value) in capsys.readouterr().err
        assert not (tmp_path / f"{name}.out.csv").exists()


def test_noise_counts_advice_names_only_options_it_has(data, capsys):
    """`veil noise counts --sensitivity 1e300` advised "--max-records / --max-points", which
    noise counts does not take."""
    (data / "h.csv").write_text("bin,count\na,3\n")
    assert run(["noise", "counts", str(data / "h.csv"), "-c", "count", "-e", "1",
                "--sensitivity", "1e300", "-o", str(data / "n.csv")]) == 2
    err = capsys.readouterr().err
    assert "--sensitivity" in err and "--max-records" not in err and "--max-points" not in err


@pytest.mark.parametrize("extra, message", [
    (["-m", "structurefirst"], "--count-bound is required"),
    (["-m", "optimized-structurefirst", "--k", "3"], "--count-bound is required"),
    (["-m", "structurefirst", "--count-bound", "50", "--k", "21"], "must be <= the number"),
    (["-m", "boost", "--branching", "21"], "must be <= 20"),
    (["-m", "sort-and-group", "--k", "0"], "must be >= 1")])
def test_a_refused_method_option_opens_no_ledger(data, monkeypatch, capsys, extra, message):
    """A missing --count-bound (or --k above the number of bins) was refused by the mechanism
    after the charge had been reserved: the ledger (and VEIL_HOME) was created and held a
    cancelled entry. The options are now checked for the number of bins before."""
    from cli_cases import run_main

    monkeypatch.setenv("VEIL_HOME", str(data / "home"))
    code, _, err = run_main(["histogram", "publish", data / "ages.csv", "-c", "age", "--bins",
                             "0:100:20", "-e", "1", "-o", data / "o.csv", *extra], capsys)
    assert code == 2 and message in err, err
    assert not (data / "home").exists() and not (data / "o.csv").exists()
