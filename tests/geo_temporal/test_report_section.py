"""The demo section builds quickly on synthetic data and reports both mechanisms."""

from __future__ import annotations

import numpy as np

import veil.report.core as core


def test_temporal_section_builds(tmp_path):
    from veil.report.sections import temporal

    s = temporal.build(core.DemoContext(rng=np.random.default_rng(0), quick=True,
                                        outdir=tmp_path))
    assert s.id == "temporal" and len(s.figures) == 2
    assert s.figures[0].png[:4] == b"\x89PNG"
    assert s.results["pim_mean_error_m"] > 0 and s.results["lm_mean_error_m"] > 0
    assert [r[0] for r in s.tables[0].rows] == ["PIM", "LM"]
    s.to_dict()
