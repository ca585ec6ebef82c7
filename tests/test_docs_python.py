"""Every ```python block of README.md and docs/*.md RUNS (the `veil ...` lines are run by
test_docs_run.py; the Python blocks were run by no test, and a newcomer's pass over the pages
found 8 of 22 that stop at a name or a file the page never makes).

Each block runs in a fresh process, in an empty folder, as a reader would paste it. A block
that is a fragment of a longer program (it uses ``df``, ``bins``, a file made on the command
line above it, ...) gets the setup a reader would have written: ``SETUP`` below, keyed by a
line of the block, holds that code. A new block with a name the page never defines fails here
until it runs or gets its setup.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHARED = Path(os.environ.get("VEIL_SHARED", ROOT.parent / "shared"))

_CHECKINS = """
import numpy as np
from veil.io import write_table
rng = np.random.default_rng(0)
cats = np.array(["Bar", "Cafe", "Church", "Hospital", "Park"])
write_table({"user": rng.integers(0, 20, 400).astype(str), "category": rng.choice(cats, 400)},
            "checkins.csv")
"""

#: a line of the block -> the code a reader runs first (names and files the page makes elsewhere)
SETUP = {
    'table = read_table("visits.parquet"': f"""
import os
from veil.io import write_table
write_table({{"user": ["a", "b"], "lat": [40.71, 40.72], "lon": [-74.0, -73.99]}}, "visits.parquet")
write_table({{"bin": ["0-9", "10-19"], "count": [4, 7]}}, "hist.csv")
write_table({{"latitude": [40.71, 40.72], "longitude": [-74.0, -73.99]}}, "fixes.csv")
os.symlink({str(SHARED / 'data' / 'foursquare-nyc' / 'foursquare_nyc.csv')!r}, "foursquare_nyc.csv")
""",
    'write_table({"bin": bins, "count": noisy}, "noisy.parquet")': """
import numpy as np
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
from veil.histograms import publish
bins, noisy = np.array(["0-9", "10-19"]), np.array([3, 8])
release = publish(np.array([4, 7, 1, 0]), epsilon=1.0, method="identity")
fig = plt.figure()
""",
    'rel = publish_points("pings.csv", grid': """
import subprocess, sys
subprocess.run([sys.executable, "-m", "veil", "data", "synth", "trajectories", "-o", "pings.csv",
                "--users", "200", "--steps", "96", "--quiet"], check=True)
""",
    'cs = load_constraints("constraints.txt", table=df, k=10)': """
from veil.tables.adult import load_adult
df = load_adult().head(2000)
open("constraints.txt", "w").write("sex=Female: 0..1500\\n")
""",
    'res = diva(df, k=10, qi=["age", "education", "sex", "race"], constraints=cs)': """
from veil.tables import parse_constraints
from veil.tables.adult import load_adult
df = load_adult().head(2000)
cs = parse_constraints("sex=Female: 0..1500")
""",
    'H = load_hierarchies("../shared/data/adult/hierarchies", qi)': f"""
import os
from veil.tables.adult import load_adult
df = load_adult().head(2000)
qi = ["age", "sex", "race"]
os.makedirs("../shared/data/adult", exist_ok=True)
os.symlink({str(SHARED / 'data' / 'adult' / 'hierarchies')!r}, "../shared/data/adult/hierarchies")
""",
    'tax.sensitive_mask(labels, ["Medical Center", "Spiritual Center"])': """
labels = ["Hospital Ward", "Bar", "Church", "Dentist's Office"]
open("my_tree.json", "w").write('{"Health": {"Clinic": {}}, "Food": {"Bar": {}}}')
""",
    'uh = load_checkins("checkins.csv", user_column="user", category_column="category",':
        _CHECKINS + """
public_domain = list(cats)
sens_indices = [2, 3]
""",
    'd = distinguishability(released, had_sensitive_visit, user_of_unit,': """
import numpy as np
rng = np.random.default_rng(0)
released = rng.poisson(3, size=(120, 5))
had_sensitive_visit = rng.random(120) < 0.5
user_of_unit = np.arange(120) // 2
""",
}


def _blocks():
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for m in re.finditer(r"^```python\n(.*?)^```", text, re.S | re.M):
            yield page, text[:m.start()].count("\n") + 1, m.group(1)


BLOCKS = list(_blocks())


def _setup(code: str) -> str:
    found = [prelude for key, prelude in SETUP.items() if key in code]
    assert len(found) <= 1, "two setups match one block"
    return found[0] if found else ""


def test_every_setup_is_used():
    """A setup whose block was edited away would hide a new fragment."""
    codes = [code for _, _, code in BLOCKS]
    unused = [key for key in SETUP if not any(key in c for c in codes)]
    assert not unused, unused


@pytest.mark.parametrize("page,line,code", BLOCKS,
                         ids=[f"{p.name}:{line}" for p, line, _ in BLOCKS])
def test_documented_python_block_runs(tmp_path, page, line, code):
    if not (SHARED / "data").is_dir():
        pytest.skip(f"the shared data is not at {SHARED}")
    work = tmp_path / "a" / "b"  # a reader's folder; `../shared` is made only by a setup
    work.mkdir(parents=True)
    env = {**os.environ, "VEIL_SHARED": str(SHARED), "VEIL_HOME": str(tmp_path / "home"),
           "PYTHONPATH": str(ROOT / "src"), "MPLBACKEND": "Agg"}
    env.pop("VEIL_LEDGER", None)
    r = subprocess.run([sys.executable, "-c", _setup(code) + "\n" + code], cwd=work, env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, f"{page.name}:{line} failed:\n{r.stderr[-3000:]}"
