"""The maps section of ``veil demo``: every sentence with a number is computed from its data,
and the "best method" cards come from the stated test on the releases in the figure's table."""

import json

import numpy as np

from veil.report.demo import run_demo
from veil.report.stats import rank_methods


def test_maps_section(tmp_path):
    run_demo(tmp_path / "r", quick=True, modules=["veil.report.sections.maps"], progress=False)
    sec = json.loads((tmp_path / "r" / "sections" / "maps.json").read_text())
    assert sec["status"] == "ok", sec.get("error")
    true_vs_private, error_vs_eps = sec["figures"]
    rows = error_vs_eps["data"]["rows"]
    runs = sec["parameters"]["runs"]
    per = {}
    for m, e, mean, lo, hi, each in rows:
        assert len(each) == runs and abs(np.mean(each) - mean) <= 1e-3 * mean
        assert lo <= mean <= hi
        per.setdefault(e, {})[m] = each
    for e, by_method in per.items():
        mechs = {m: v for m, v in by_method.items() if m != "auto"}
        r = rank_methods(mechs)
        card = sec["results"][f"best method at eps={e:g}"]
        assert card["lowest"] == r.best
        assert ("next" in card) == r.significant
        ratio = np.mean(by_method["auto"]) / np.mean(mechs[r.best])
        assert abs(sec["results"][f"auto / best at eps={e:g}"] - ratio) < 1e-3 * ratio
    verdicts = sec["tables"][0]["rows"]
    assert [v[0] for v in verdicts] == sec["parameters"]["epsilons"]
    assert "Welch" in sec["parameters"]["ranking test"]
    busiest = true_vs_private["data"]["rows"]
    assert [r[2] for r in busiest] == sorted((r[2] for r in busiest), reverse=True)
    assert f"hold {sum(r[2] for r in busiest):,} points" in true_vs_private["caption"]
    assert "veil map publish" in sec["how_to"] and "one person" in sec["guarantee"]
    assert not list((tmp_path / "r").glob("*.parquet"))  # the scratch points are removed
