"""The demo section builds quickly on synthetic data and reports both mechanisms."""

from __future__ import annotations

import numpy as np
import pytest

import veil.report.core as core


def test_temporal_section_builds(tmp_path):
    from veil.report.sections import temporal

    s = temporal.build(core.DemoContext(rng=np.random.default_rng(0), quick=True,
                                        outdir=tmp_path))
    assert s.id == "temporal" and len(s.figures) == 2
    assert s.figures[0].png[:4] == b"\x89PNG"
    assert s.results["pim_mean_error_m"] > 0 and s.results["lm_mean_error_m"] > 0
    assert [r[0] for r in s.tables[0].rows] == ["PIM", "LM", "no information (grid centre)"]
    s.to_dict()


def test_temporal_section_shows_the_no_information_baseline(tmp_path):
    """Issue 17, defect 4: a user sees when the noise is larger than the map."""
    from veil.report.sections import temporal

    s = temporal.build(core.DemoContext(rng=np.random.default_rng(1), quick=True,
                                        outdir=tmp_path))
    rows = s.tables[0].rows
    assert rows[-1][0].startswith("no information") and rows[-1][1] == pytest.approx(
        s.results["baseline_error_m"], abs=0.05)
    assert s.figures[1].data.columns[-1] == "grid-centre baseline (m)"
    assert "no-information baseline" in s.tables[0].caption


def test_report_sentences_follow_the_data():
    """Issue 17, defect 2: 'PIM stays below LM throughout' was a fixed string."""
    from veil.report.sections.temporal import baseline_sentence, compare_sentence

    assert compare_sentence([[0, 1, 2], [1, 1, 2]]) == "PIM is below LM at all 2 timestamps shown."
    assert compare_sentence([[0, 3, 2], [1, 1, 2], [2, 5, 2]]) == \
        "PIM is below LM at 1 of the 3 timestamps shown."
    assert compare_sentence([[0, 3, 2]]) == "PIM is above or equal to LM at all 1 timestamps shown."
    s = baseline_sentence(13_700.0, 20_000.0, 3_000.0, 10_000.0)
    assert "PIM's mean error 13,700 m is above" in s and "larger than the map" in s
    s = baseline_sentence(800.0, 1_200.0, 3_000.0, 10_000.0)
    assert "below the no-information baseline (3,000 m)" in s and "map" not in s
