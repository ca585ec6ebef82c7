"""The maps section of ``veil demo``: every sentence with a number is computed from its data."""

import json

from veil.report.demo import run_demo


def test_maps_section(tmp_path):
    run_demo(tmp_path / "r", quick=True, modules=["veil.report.sections.maps"], progress=False)
    sec = json.loads((tmp_path / "r" / "sections" / "maps.json").read_text())
    assert sec["status"] == "ok", sec.get("error")
    true_vs_private, error_vs_eps = sec["figures"]
    rows = error_vs_eps["data"]["rows"]
    cols = error_vs_eps["data"]["columns"]
    err = {r[0]: r[1:] for r in rows}
    for i, c in enumerate(cols[1:]):
        eps = c.split("=")[1]
        best = min((m for m in err if m != "auto"), key=lambda m: err[m][i])
        assert sec["results"][f"best method at eps={eps}"] == best
        assert abs(sec["results"][f"auto / best at eps={eps}"] - err["auto"][i] / err[best][i]) \
            < 1e-3 * err["auto"][i] / err[best][i]
        assert f"{best} at eps={eps}" in error_vs_eps["caption"]
    busiest = true_vs_private["data"]["rows"]
    assert [r[2] for r in busiest] == sorted((r[2] for r in busiest), reverse=True)
    assert "veil map publish" in sec["how_to"] and "one person" in sec["guarantee"]
    assert not list((tmp_path / "r").glob("*.parquet"))  # the scratch points are removed
