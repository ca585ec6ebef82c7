"""CLI conventions: --help, --version, exit code 2 with one line, --debug tracebacks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import veil
from veil.cli import main

SRC = Path(__file__).resolve().parents[2] / "src"


def run(argv, capsys):
    """Call the console entry point in-process; return (exit code, stdout, stderr)."""
    try:
        main(list(argv))
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    out, err = capsys.readouterr()
    return code, out, err


def run_subprocess(argv, cwd):
    env = dict(os.environ, PYTHONPATH=str(SRC), COLUMNS="100")
    return subprocess.run([sys.executable, "-m", "veil", *argv], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.fixture
def hist(tmp_path):
    p = tmp_path / "hist.csv"
    p.write_text("bin,count\na,10\nb,0\nc,5\n")
    return p


def test_version(capsys):
    code, out, err = run(["--version"], capsys)
    assert code == 0 and out.strip() == f"veil {veil.__version__}" and err == ""


@pytest.mark.parametrize("argv", [["--help"], ["noise", "--help"], ["noise", "counts", "--help"]])
def test_help(capsys, argv):
    code, out, err = run(argv, capsys)
    assert code == 0 and "Usage" in out and err == ""


def test_root_help_lists_commands_and_options(capsys):
    _, out, _ = run(["--help"], capsys)
    for word in ("--version", "--debug", "noise", "demo"):
        assert word in out


def test_noise_counts_help_marks_seed_for_experiments(capsys):
    _, out, _ = run(["noise", "counts", "--help"], capsys)
    for word in ("--epsilon", "--output", "--format", "--seed", "EXPERIMENTS ONLY"):
        assert word in out


@pytest.mark.parametrize("argv,pattern", [
    (["--no-such-flag"], "No such option: --no-such-flag"),
    (["no-such-command"], "No such command"),
    (["noise", "counts"], "Missing argument"),
    (["noise", "counts", "x.csv", "-c", "count", "-o", "o.csv"], "Missing option '--epsilon'"),
    (["noise", "counts", "x.csv", "-c", "count", "-o", "o.csv", "-e", "lots"],
     "Invalid value for '--epsilon'"),
])
def test_usage_errors_exit_2_with_one_line(capsys, argv, pattern):
    code, out, err = run(argv, capsys)
    assert code == 2, (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("veil: error: ") and pattern in lines[0]
    assert "--help" in lines[0]  # points at the right help


def test_bad_input_exit_2_one_line_no_traceback(capsys, hist, tmp_path):
    code, out, err = run(["noise", "counts", str(hist), "-c", "cuont", "-e", "1",
                          "-o", str(tmp_path / "o.csv")], capsys)
    assert code == 2
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"veil: error: file {hist}, column 'cuont': no such column; "
                          f"did you mean 'count'?")


def test_debug_shows_traceback(tmp_path, hist):
    r = run_subprocess(["--debug", "noise", "counts", str(hist), "-c", "cuont", "-e", "1",
                        "-o", str(tmp_path / "o.csv")], tmp_path)
    assert r.returncode != 0
    assert "Traceback" in r.stderr and "DataError" in r.stderr
    assert not (tmp_path / "o.csv").exists()


def test_real_process_exit_codes(tmp_path, hist):
    r = run_subprocess(["--version"], tmp_path)
    assert r.returncode == 0 and r.stdout.strip() == f"veil {veil.__version__}"
    r = run_subprocess(["noise", "counts", str(hist), "-c", "count", "-e", "0", "-o",
                        str(tmp_path / "o.csv")], tmp_path)
    assert r.returncode == 2
    assert r.stderr.splitlines() == ["veil: error: --epsilon must be > 0, got 0.0"]


def test_internal_error_exit_1(capsys, monkeypatch, hist, tmp_path):
    import veil.mechanisms

    def broken(*a, **k):
        raise KeyError("bug")

    monkeypatch.setattr(veil.mechanisms, "geometric_mechanism", broken)
    code, _, err = run(["noise", "counts", str(hist), "-c", "count", "-e", "1",
                        "-o", str(tmp_path / "o.csv")], capsys)
    assert code == 1
    assert err.startswith("veil: internal error: KeyError") and "--debug" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hist.csv"]


@pytest.mark.parametrize("ext,fmt,expect", [
    ("csv", None, "csv"), ("parquet", None, "parquet"), ("json", None, "json"),
    ("out", None, "csv"), ("out", "parquet", "parquet"),
])
def test_noise_counts_end_to_end(capsys, hist, tmp_path, ext, fmt, expect):
    from veil.io import read_table

    out = tmp_path / f"noisy.{ext}"
    argv = ["noise", "counts", str(hist), "--column", "count", "--epsilon", "2",
            "--output", str(out), "--seed", "7"]
    if fmt:
        argv += ["--format", fmt]
    code, stdout, err = run(argv, capsys)
    assert code == 0, err
    assert "wrote" in err and stdout == ""
    t = read_table(out, format=expect, columns={"bin": "str", "count": "int"})
    assert t.column("bin").to_pylist() == ["a", "b", "c"]
    meta = json.loads((tmp_path / f"noisy.{ext}.meta.json").read_text())
    assert meta["mechanism"] == "geometric" and meta["budget"]["epsilon"] == 2.0
    assert meta["parameters"]["column"] == "count" and meta["noise_scale"] == 0.5
    assert any("--seed" in n for n in meta["notes"])
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["hist.csv", out.name, out.name + ".meta.json"])


def test_noise_counts_seed_reproducible_and_nonnegative(capsys, hist, tmp_path):
    outs = []
    assert run(["budget", "set", str(hist), "--total", "1"], capsys)[0] == 0  # two releases
    for i in range(2):
        out = tmp_path / f"o{i}.csv"
        assert run(["noise", "counts", str(hist), "-c", "count", "-e", "0.05", "-o", str(out),
                    "--seed", "11", "--nonnegative", "--spend-again"], capsys)[0] == 0
        outs.append(out.read_text())
    assert outs[0] == outs[1]
    vals = [int(line.split(",")[1]) for line in outs[0].splitlines()[1:]]
    assert min(vals) >= 0


def test_noise_counts_is_noisy_without_seed(capsys, tmp_path):
    # 200 bins at eps=0.5: two unseeded runs agree on every bin with probability < 1e-40.
    src = tmp_path / "h.csv"
    src.write_text("count\n" + "100\n" * 200)
    texts = []
    assert run(["budget", "set", str(src), "--total", "1"], capsys)[0] == 0  # two releases
    for i in range(2):
        out = tmp_path / f"o{i}.csv"
        assert run(["noise", "counts", str(src), "-c", "count", "-e", "0.5", "-o", str(out),
                    "--spend-again"], capsys)[0] == 0
        texts.append(out.read_text())
    assert texts[0] != texts[1]
