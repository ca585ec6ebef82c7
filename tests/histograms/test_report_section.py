"""The histograms section of ``veil demo``."""

from pathlib import Path

import numpy as np
import pytest

from veil.report.core import DemoContext, Section


@pytest.mark.slow  # matplotlib rendering: a few seconds on a loaded machine
def test_section_builds_with_figures_and_numbers(tmp_path):
    from veil.report.sections import histograms

    s = histograms.build(DemoContext(rng=np.random.default_rng(0), quick=True,
                                     outdir=Path(tmp_path)))
    assert isinstance(s, Section) and s.id == "histograms"
    assert len(s.figures) == 2 and all(f.png.startswith(b"\x89PNG") for f in s.figures)
    assert s.figures[0].data.rows and s.figures[1].data.rows
    assert "epsilon-differentially private" in s.guarantee
    assert "veil histogram publish" in s.how_to
    errs = [v for k, v in s.results.items() if k.startswith("scaled error")]
    assert errs and all(0 < e < 1 for e in errs)
    s.to_dict()  # JSON-friendly
