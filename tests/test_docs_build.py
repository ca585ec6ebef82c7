"""The user guide and API reference build with Sphinx, warnings as errors (as CI runs it)."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_docs_build_without_warnings(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-E", "-q", "-b", "html",
         "-d", str(tmp_path / "doctrees"), str(ROOT / "docs"), str(tmp_path / "html")],
        capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, (out.stdout + out.stderr)[-5000:]
    html = tmp_path / "html"
    # every guide page is in the site, and the API reference documents the public API
    guides = [p.stem for p in (ROOT / "docs").glob("*.md") if p.name != "README.md"]
    missing = [g for g in guides if not (html / f"{g}.html").exists()]
    assert not missing, f"guide pages not in the site: {missing}"
    api = (html / "api" / "generated" / "veil.html").read_text()
    for name in ("PureDP", "Release", "geometric_mechanism"):
        assert name in api
    hist = (html / "api" / "generated" / "veil.histograms.html").read_text()
    assert "publish" in hist and "Parameters" in hist


def test_every_guide_is_in_the_toctree():
    index = (ROOT / "docs" / "index.md").read_text()
    guides = sorted(p.stem for p in (ROOT / "docs").glob("*.md")
                    if p.name not in ("README.md", "index.md"))
    assert [g for g in guides if f"\n{g}\n" not in index] == []
