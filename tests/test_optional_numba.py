"""numba is optional: veil installs, imports and runs every compiled kernel's fallback without it."""

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Runs one kernel of each family in an interpreter whose packages are this environment's
# minus numba and llvmlite (as if they were not installed).
SCRIPT = r"""
import importlib.util, sys
assert importlib.util.find_spec("numba") is None
import numpy as np
import veil
from veil.histograms import publish
from veil.histograms.partition import voptimal
from veil.visits import hide
from veil.geo import planar_laplace
assert "numba" not in sys.modules
rng = np.random.default_rng(1)  # a test, not a release
x = rng.integers(0, 50, size=400)
b = voptimal(x, 8)
r = publish(x, epsilon=1.0, method="structurefirst", count_bound=20000, rng=rng)
h = hide([5, 0, 3, 2], sensitive=[1, 3])
p = planar_laplace([[48.85, 2.35]] * 1000, epsilon=0.01, rng=rng)
assert "numba" not in sys.modules
print("ok", len(r.value), list(h.histogram) if hasattr(h, "histogram") else h)
"""


def test_numba_is_not_a_core_dependency():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert not any(d.startswith("numba") for d in meta["dependencies"])
    assert any(d.startswith("numba") for d in meta["optional-dependencies"]["fast"])


def test_everything_runs_without_numba(tmp_path):
    import sysconfig

    site = Path(sysconfig.get_paths()["purelib"])
    mirror = tmp_path / "site"
    mirror.mkdir()
    for entry in site.iterdir():
        if not entry.name.lower().startswith(("numba", "llvmlite")):
            (mirror / entry.name).symlink_to(entry)
    out = subprocess.run([sys.executable, "-S", "-c", SCRIPT], capture_output=True, text=True,
                         env={"PYTHONPATH": f"{ROOT / 'src'}:{mirror}", "PATH": "/usr/bin:/bin"},
                         timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.startswith("ok")
