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
    errs = [r[2] for r in s.figures[0].data.rows]
    assert errs and all(0 < e < 1 for e in errs)
    assert [r[0] for r in s.tables[0].rows] == s.parameters["epsilons"]
    s.to_dict()  # JSON-friendly


def test_guarantee_sentence_number_is_identity_mean_absolute_error():
    """The guarantee's 'off by about N records' is computed: it matches Identity's measured
    mean absolute error at that epsilon (100,000 bins; 5 standard errors)."""
    import re

    from veil.histograms import identity
    from veil.random import make_rng
    from veil.report.sections.histograms import guarantee_text

    for eps in (0.1, 0.5):
        text = guarantee_text(eps)
        stated = float(re.search(r"off by\s+about (\d+) records", text).group(1))
        x = np.full(100_000, 50)
        noise = identity(x, epsilon=eps, rng=make_rng(seed=1)).value - x
        mae = float(np.abs(noise).mean())
        se = float(np.abs(noise).std()) / np.sqrt(noise.size)
        assert abs(round(mae) - stated) <= 1 and abs(mae - stated) < 0.5 + 5 * se
