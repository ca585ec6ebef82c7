"""The README's commands and examples do not rot."""

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _bash_blocks(text):
    return re.findall(r"```bash\n(.*?)```", text, flags=re.S)


def test_ci_runs_exactly_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    blocks = [b.strip() for b in _bash_blocks(readme)]
    test_cmd = next(b for b in blocks if "pytest" in b)
    ci = (ROOT / ".ci" / "run").read_text()
    assert test_cmd in ci.splitlines()


def test_readme_python_example_runs():
    readme = (ROOT / "README.md").read_text()
    code = re.findall(r"```python\n(.*?)```", readme, flags=re.S)
    assert code
    for block in code:
        out = subprocess.run([sys.executable, "-c", block], capture_output=True, text=True,
                             env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"})
        assert out.returncode == 0, out.stderr


def test_readme_tour_runs(tmp_path):
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## A five-minute tour", 1)[1].split("\n## ", 1)[0]
    blocks = _bash_blocks(section)
    assert blocks
    script = "set -euo pipefail\nveil() { \"$PY\" -m veil \"$@\"; }\n" + "\n".join(blocks)
    import os

    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), PY=sys.executable,
               VEIL_LEDGER=str(tmp_path / "ledger.json"))
    out = subprocess.run(["bash", "-c", script], cwd=tmp_path, capture_output=True, text=True,
                         env=env, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    for f in ("hidden.csv", "noisy_points.csv", "age_histogram.csv.meta.json", "noisy_points.csv.meta.json", "anonymized.csv",
              "counts_out/_manifest.json"):
        assert (tmp_path / f).exists(), f


def test_test_command_installs_the_browser_the_browser_test_needs():
    """The browser test fails without chromium, so the README's test command installs it."""
    readme = (ROOT / "README.md").read_text()
    test_cmd = next(b.strip() for b in _bash_blocks(readme) if "pytest" in b)
    assert "apt-get install -y -qq chromium" in test_cmd
    assert test_cmd.index("chromium") < test_cmd.index("pytest")
    browser_test = (ROOT / "tests" / "browser" / "test_report_browser.py").read_text()
    assert "pytest.fail(f\"{CHROMIUM} is missing" in browser_test
