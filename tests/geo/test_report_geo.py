"""The geo demo section builds quickly on synthetic data."""

import time
from pathlib import Path

import numpy as np

from veil.report.core import DemoContext
from veil.report.sections import geo


def test_geo_section_builds_quickly(tmp_path: Path):
    t = time.perf_counter()
    sec = geo.build(DemoContext(rng=np.random.default_rng(0), quick=True, outdir=tmp_path))
    took = time.perf_counter() - t
    assert sec.id == "geo" and len(sec.figures) == 3
    assert all(f.png[:4] == b"\x89PNG" for f in sec.figures)
    assert 50 < sec.results["mean displacement (m)"] < 600
    assert took < 10  # a few seconds even on the shared, loaded machine
