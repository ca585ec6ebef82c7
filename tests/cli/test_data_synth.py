"""`veil data synth` writes usable synthetic inputs and rejects bad parameters."""

import subprocess
import sys
from pathlib import Path

import pytest

SRC = str(Path(__file__).resolve().parents[2] / "src")


def _veil(*args, cwd):
    import os

    return subprocess.run([sys.executable, "-m", "veil", *args], capture_output=True, text=True,
                          cwd=cwd, env=dict(os.environ, PYTHONPATH=SRC))


def test_synth_kinds_are_deterministic_with_a_seed(tmp_path):
    for kind in ("checkins", "trajectories", "points", "census", "categories"):
        a = _veil("data", "synth", kind, "-o", "a.csv", "--seed", "3", "--users", "20",
                  "--rows", "100", "--steps", "5", "--force", cwd=tmp_path)
        assert a.returncode == 0, a.stderr
        first = (tmp_path / "a.csv").read_text()
        _veil("data", "synth", kind, "-o", "a.csv", "--seed", "3", "--users", "20", "--rows",
              "100", "--steps", "5", "--force", cwd=tmp_path)  # replaces a.csv
        assert (tmp_path / "a.csv").read_text() == first
        assert len(first.splitlines()) > 2


@pytest.mark.parametrize("args, msg", [
    (["synth", "censu", "-o", "x.csv"], "did you mean 'census'"),
    (["synth", "census", "-o", "x.csv", "--rows", "0"], "--rows must be >= 1"),
    (["synth", "census", "-o", "nowhere/x.csv"], "does not exist"),
])
def test_synth_bad_input(tmp_path, args, msg):
    r = _veil("data", *args, cwd=tmp_path)
    assert r.returncode == 2 and msg in r.stderr
    assert not (tmp_path / "x.csv").exists()
