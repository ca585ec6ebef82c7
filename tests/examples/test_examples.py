"""Every script in examples/ runs as a user would run it and prints its summary.

Each script is started as a subprocess with ``PYTHONPATH=src`` (this worktree's
package) from an empty temporary folder, so a script that writes next to
itself or needs ../shared fails here. Scripts run with OS entropy (no
``--seed``) as in the docs, plus once with ``--seed`` for the seeded path.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"

# script -> lines its output must contain (the summary a reader looks for)
EXPECTED = {
    "01_dp_histogram.py": ["[auto] released by mechanism", "range-query error: mean",
                           "ok: published 3 DP histograms"],
    "02_visits_hide_resemble.py": ["sensitive visits left 0", "JS distance to the target",
                                   "ok: hide and resemble done"],
    "03_geo_planar_laplace.py": ["empirical  mean", "eps' =", "ok: planar Laplace done"],
    "04_trajectory_pim.py": ["PIM ", "LM ", "ok: trajectory released by PIM and LM"],
    "05_tables_diva.py": ["DIVA ", "3/3 met", "ok: DIVA and baseline done"],
    "06_batch_engine.py": ["job visits-hide:", "sensitive visits left 0", "ok: batch job done"],
}


def _run(script: str, tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), MPLBACKEND="Agg")
    env.pop("VEIL_SHARED", None)  # examples must not need the shared data
    return subprocess.run([sys.executable, str(EXAMPLES / script), *args], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=60)


def test_every_example_is_listed():
    """A new script in examples/ must get expectations here (and a paragraph in the docs)."""
    assert sorted(p.name for p in EXAMPLES.glob("[0-9]*.py")) == sorted(EXPECTED)


def test_docs_list_every_example():
    doc = (ROOT / "docs" / "examples.md").read_text()
    missing = [s for s in EXPECTED if f"examples/{s}" not in doc]
    assert not missing, f"docs/examples.md does not mention {missing}"


@pytest.mark.parametrize("script", sorted(EXPECTED))
def test_example_runs(script, tmp_path):
    p = _run(script, tmp_path)
    assert p.returncode == 0, f"{script} failed:\n{p.stdout[-2000:]}\n{p.stderr[-3000:]}"
    for line in EXPECTED[script]:
        assert line in p.stdout, f"{script}: {line!r} not in output:\n{p.stdout}"
    assert list(tmp_path.iterdir()) == [], f"{script} left files in the working directory"


@pytest.mark.parametrize("script", sorted(EXPECTED))
def test_example_help_mentions_seed_for_experiments(script, tmp_path):
    p = _run(script, tmp_path, "--help")
    assert p.returncode == 0, p.stderr
    assert "--seed" in p.stdout and "experiments only" in p.stdout.replace("\n", " ")


def test_seeded_run_is_reproducible(tmp_path):
    """--seed makes the output identical (experiments); without it two runs differ."""
    a = _run("03_geo_planar_laplace.py", tmp_path, "--seed", "7")
    b = _run("03_geo_planar_laplace.py", tmp_path, "--seed", "7")
    assert a.returncode == 0 and a.stdout == b.stdout
    c = _run("03_geo_planar_laplace.py", tmp_path)
    d = _run("03_geo_planar_laplace.py", tmp_path)
    assert c.stdout != d.stdout


def test_bad_argument_fails_cleanly(tmp_path):
    p = _run("01_dp_histogram.py", tmp_path, "--epsilon", "-1")
    assert p.returncode != 0
    assert "epsilon" in p.stderr
