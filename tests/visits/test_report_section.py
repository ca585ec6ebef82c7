"""The demo section builds on synthetic data and says it is not DP (no timing asserted: speed
is measured by benchmarks, not unit tests)."""

import numpy as np

from veil.report import core


def test_visits_section_builds(tmp_path):
    from veil.report.sections.visits import build

    sec = build(core.DemoContext(rng=np.random.default_rng(1), quick=True, outdir=tmp_path))
    assert sec.id == "visits" and "not differential privacy" in sec.guarantee
    rows = sec.figures[0].data.rows
    hide_col = [r[2] for r in rows]
    sens = [r[2] for r in rows if r[0] in ("Hospital", "Dentist's Office", "Church", "Mosque")]
    assert sum(sens) == 0
    assert sum(hide_col) == sum(r[1] for r in rows)
    assert sec.figures[0].png[:4] == b"\x89PNG"
    sec.to_dict()
