"""``veil map publish|query|regions`` end to end, the published files, and neighbouring inputs.

What ``veil map publish`` writes: the table (OUTPUT: row, col, cell bounds, count), its sidecar
OUTPUT.meta.json, and optionally GeoJSON, PNG and GeoTIFF. All are published. Tests: the CLI
equals the library call with the same inputs and seed; on neighbouring inputs (a person with
10^4 points added) everything that is not a DP output is identical, and the written counts
are audited through the same function the CLI calls (tests/maps/test_maps_audits.py); bad input
exits 2 with one line and leaves no file behind.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from veil.cli import main
from veil.maps import MapGrid, publish_points, query_boxes, read_map, write_map
from veil.random import make_rng

BOX = "0,0,1,2"
GRID = MapGrid(0.0, 0.0, 1.0, 2.0, rows=8, cols=16)


def run(args):
    try:
        main(args)
    except SystemExit as exc:
        return exc.code or 0
    return 0


@pytest.fixture
def points(tmp_path):
    g = np.random.default_rng(0)
    n = 3000
    df = pd.DataFrame({"user": [f"u{i}" for i in g.integers(0, 60, n)],
                       "lat": g.beta(2, 3, n), "lon": 2 * g.beta(3, 2, n),
                       "t": g.uniform(0, 10, n)})
    df.to_csv(tmp_path / "pts.csv", index=False)
    heavy = pd.DataFrame({"user": ["heavy"] * 10_000, "lat": g.uniform(0.1, 0.2, 10_000),
                          "lon": g.uniform(0.1, 0.2, 10_000), "t": 5.0})
    pd.concat([df, heavy]).to_csv(tmp_path / "pts_plus.csv", index=False)
    return tmp_path


def _publish(d, src, out, method="privtree", extra=()):
    return run(["map", "publish", str(d / src), "--user-column", "user", "--max-points", "10",
                "--bbox", BOX, "--grid", "8x16", "--epsilon", "1", "--method", method,
                "--seed", "7", "-o", str(d / out), *extra])


@pytest.mark.parametrize("method", ["identity", "privtree", "ag", "hdmm", "auto"])
def test_cli_equals_library(points, method):
    assert _publish(points, "pts.csv", "m.parquet", method) == 0
    lib = publish_points(points / "pts.csv", GRID, epsilon=1.0, method=method, user="user",
                         max_points=10, rng=make_rng(seed=7))
    pm = read_map(points / "m.parquet")
    assert np.array_equal(pm.values, lib.value)
    assert pm.grid == GRID
    meta = pm.meta
    assert meta["parameters"]["protects"] == "user" and meta["parameters"]["max_points"] == 10
    # the sidecar's top-level unit (what `veil budget` and readers take) said "record"
    assert meta["protects"] == "user" and lib.protects == "user"
    assert meta["mechanism"] == lib.mechanism
    assert any("protects one person" in n for n in meta["notes"])
    assert any("--seed" in n for n in meta["notes"])


def _mask_dp(meta):
    """The sidecar without its declared outputs (the fields its ``derived`` list names: DP
    outputs or post-processing of them); everything left must be the same on neighbours."""
    from veil.release import split_outputs

    return split_outputs(json.loads(json.dumps(meta)))[0]


@pytest.mark.parametrize("method", ["identity", "privtree", "hdmm", "auto"])
def test_neighbouring_inputs_publish_the_same_non_dp_content(points, method):
    extra = ["--png", str(points / "m.png"), "--geojson", str(points / "m.geojson")]
    assert _publish(points, "pts.csv", "a.parquet", method, extra) == 0
    os.rename(points / "m.png", points / "a.png")
    os.rename(points / "m.geojson", points / "a.geojson")
    assert _publish(points, "pts_plus.csv", "b.parquet", method, extra) == 0
    ma = json.loads((points / "a.parquet.meta.json").read_text())
    mb = json.loads((points / "b.parquet.meta.json").read_text())
    ma["parameters"]["input"].pop("file")
    mb["parameters"]["input"].pop("file")
    assert _mask_dp(ma) == _mask_dp(mb)
    ta, tb = pq.read_table(points / "a.parquet"), pq.read_table(points / "b.parquet")
    assert ta.column_names == tb.column_names
    for col in ("row", "col", "lat_min", "lat_max", "lon_min", "lon_max"):
        assert ta.column(col).equals(tb.column(col))
    ga = json.loads((points / "a.geojson").read_text())
    gb = json.loads((points / "m.geojson").read_text())
    assert [f["geometry"] for f in ga["features"]] == [f["geometry"] for f in gb["features"]]
    assert ga["veil"] == gb["veil"]
    # nothing private: the number of points read, outside the box or removed never appears
    text = (points / "b.parquet.meta.json").read_text()
    for word in ("points_counted", "outside_box", "removed", "users_over", "threshold_plan"):
        assert word not in text


def test_outputs_and_query(points):
    assert _publish(points, "pts.csv", "m.csv", "identity",
                    ["--png", str(points / "m.png"), "--geojson", str(points / "m.geojson")]
                    ) == 0
    assert (points / "m.png").read_bytes()[:4] == b"\x89PNG"
    gj = json.loads((points / "m.geojson").read_text())
    assert gj["type"] == "FeatureCollection" and len(gj["features"]) == 8 * 16
    ring = gj["features"][0]["geometry"]["coordinates"][0]
    assert ring[0] == ring[-1] and len(ring) == 5
    pm = read_map(points / "m.csv")
    exp = query_boxes(pm.values, pm.grid, [(0, 0, 0.5, 1.0)])["estimate"][0]
    assert exp == pytest.approx(pm.values[:4, :8].sum())
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "veil", "map", "query", str(points / "m.csv"),
                          "--bbox", "0,0,0.5,1", "--bbox", "0.9,1.9,5,5"],
                         capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": "src"})
    lines = [json.loads(x) for x in out.stdout.splitlines()]
    assert lines[0]["estimate"] == pytest.approx(exp) and lines[0]["fraction_inside"] == 1.0
    assert 0 < lines[1]["fraction_inside"] < 0.01


def test_query_boxes_against_brute_force():
    g = np.random.default_rng(3)
    v = g.normal(5, 3, GRID.shape)
    # brute force: integrate the piecewise-constant density over the box
    fine = 40
    boxes = [(0.05, 0.3, 0.77, 1.31), (0.0, 0.0, 1.0, 2.0), (0.5, 1.0, 0.5000001, 1.1)]
    est = query_boxes(v, GRID, boxes)["estimate"]
    dlat, dlon = GRID.cell_deg
    for (s, w, n, e), got in zip(boxes, est):
        tot = 0.0
        for i in range(GRID.rows):
            for j in range(GRID.cols):
                fy = max(0.0, min(n, (i + 1) * dlat) - max(s, i * dlat)) / dlat
                fx = max(0.0, min(e, (j + 1) * dlon) - max(w, j * dlon)) / dlon
                tot += v[i, j] * fy * fx
        assert got == pytest.approx(tot, rel=1e-9, abs=1e-9)
    assert fine == 40


@pytest.mark.parametrize("args, message", [
    (["--grid", "8x16"], "give exactly one of --bbox"),
    (["--bbox", BOX, "--region", "nyc", "--grid", "8x16"], "give exactly one of --bbox"),
    (["--bbox", BOX], "give exactly one of --grid"),
    (["--bbox", "1,0,0,2", "--grid", "8x16"], "LAT_MAX > LAT_MIN"),
    (["--bbox", BOX, "--grid", "8y16"], "ROWSxCOLS"),
    (["--region", "atlantis", "--grid", "8x16"], "unknown region"),
])
def test_bad_grid_options(points, capsys, args, message):
    code = run(["map", "publish", str(points / "pts.csv"), "--user-column", "user", "--max-points",
                "5", "--epsilon", "1", "-o", str(points / "x.parquet"), *args])
    err = capsys.readouterr().err.strip()
    assert code == 2 and message in err and len(err.splitlines()) == 1
    assert not list(points.glob("x.parquet*")) and not list(points.glob(".veil-tmp-*"))


def test_protected_unit_must_be_stated(points, capsys):
    code = run(["map", "publish", str(points / "pts.csv"), "--bbox", BOX, "--grid", "4x4",
                "--epsilon", "1", "-o", str(points / "x.parquet")])
    assert code == 2 and "say what the map protects" in capsys.readouterr().err
    code = run(["map", "publish", str(points / "pts.csv"), "--user-column", "user", "--bbox", BOX,
                "--grid", "4x4", "--epsilon", "1", "-o", str(points / "x.parquet")])
    assert code == 2 and "--max-points" in capsys.readouterr().err
    assert run(["map", "publish", str(points / "pts.csv"), "--protects", "record", "--bbox",
                BOX, "--grid", "4x4", "--epsilon", "1", "-o", str(points / "r.parquet")]) == 0
    assert read_map(points / "r.parquet").meta["parameters"]["protects"] == "record"


def test_bbox_from_data_warns_and_says_so(points):
    from veil.errors import PrivacyWarning

    with pytest.warns(PrivacyWarning):
        assert run(["map", "publish", str(points / "pts.csv"), "--user-column", "user",
                    "--max-points", "5", "--bbox-from-data", "--grid", "4x4", "--epsilon",
                    "1", "-o", str(points / "d.parquet")]) == 0
    meta = read_map(points / "d.parquet").meta
    assert meta["parameters"]["bbox_from_data"] is True
    assert any("NOT private" in n for n in meta["notes"])


def test_no_write_over_the_input_or_through_a_symlink(points, capsys):
    code = run(["map", "publish", str(points / "pts.csv"), "--user-column", "user", "--max-points",
                "5", "--bbox", BOX, "--grid", "4x4", "--epsilon", "1", "-o",
                str(points / "m.csv"), "--png", str(points / "pts.csv")])
    assert code == 2
    (points / "target.parquet").write_text("keep")
    os.symlink(points / "target.parquet", points / "link.parquet")
    code = run(["map", "publish", str(points / "pts.csv"), "--user-column", "user", "--max-points",
                "5", "--bbox", BOX, "--grid", "4x4", "--epsilon", "1", "-o",
                str(points / "link.parquet")])
    assert code == 2 and "symbolic link" in capsys.readouterr().err
    assert (points / "target.parquet").read_text() == "keep"


def test_failure_leaves_nothing_behind(points, monkeypatch):
    from veil.maps import output

    def boom(*a, **k):
        raise OSError("disk full (simulated)")

    monkeypatch.setattr(output, "png_bytes", boom)
    code = run(["map", "publish", str(points / "pts.csv"), "--user-column", "user", "--max-points",
                "5", "--bbox", BOX, "--grid", "4x4", "--epsilon", "1", "-o",
                str(points / "m.parquet"), "--png", str(points / "m.png")])
    assert code == 2
    assert not list(points.glob("m.*")) and not list(points.glob(".veil-tmp-*"))


def test_write_map_geotiff(tmp_path):
    tifffile = pytest.importorskip("tifffile", reason="GeoTIFF needs the optional tifffile")
    from veil.maps import publish

    r = publish(np.arange(128).reshape(8, 16) % 7, epsilon=1e9, method="identity")
    write_map(r, tmp_path / "m.parquet", grid=GRID, geotiff=tmp_path / "m.tif")
    with tifffile.TiffFile(tmp_path / "m.tif") as tf:
        page = tf.pages[0]
        img = page.asarray()
        assert img.shape == (8, 16)
        assert np.allclose(img[::-1], r.value)          # north-up
        tags = {t.code: t.value for t in page.tags.values()}
        assert tuple(tags[33550])[:2] == pytest.approx(GRID.cell_deg[::-1])
        assert tuple(tags[33922])[3:5] == pytest.approx((GRID.west, GRID.north))
        assert 4326 in tuple(tags[34735])


def test_regions_command(capsys):
    assert run(["map", "regions"]) == 0
    out = capsys.readouterr().out
    assert "beijing-4th-ring" in out and "port-veil" in out


@pytest.mark.parametrize("name, content, needles", [
    ("nope.csv", None, ["no such file"]),
    ("e.csv", "", ["empty"]),
    ("h.csv", "user,lat,lon\n", ["no data rows"]),
    ("g.parquet", b"PAR1garbagegarbage", ["Parquet"]),
    ("x.xlsx", "user,lat,lon\na,1,1\n", ["x.xlsx", "format"]),
    ("bad.csv", "user,lat,lon\na,0.1,0.1\nb,north,0.2\n", ["row 2", "column 'lat'"]),
    ("miss.csv", "user,Lat,lon\na,0.1,0.1\n", ["column 'lat'", "did you mean 'Lat'"]),
    ("far.csv", "user,lat,lon\na,0.1,0.1\nb,0.2,200\n", ["row 2", "column 'lon'", "180"]),
])
def test_bad_input_files_exit_2_with_one_line_and_no_output(tmp_path, capsys, name, content,
                                                            needles):
    f = tmp_path / name
    if content is not None:
        f.write_bytes(content if isinstance(content, bytes) else content.encode())
    out = tmp_path / "out"
    out.mkdir()
    code = run(["map", "publish", str(f), "--user-column", "user", "--max-points", "5", "--bbox", BOX,
                "--grid", "4x4", "--epsilon", "1", "-o", str(out / "m.parquet"), "--png",
                str(out / "m.png")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1, err
    for n in needles:
        assert n in err, (n, err)
    assert not list(out.iterdir())


def test_query_of_a_missing_map_says_no_such_file(tmp_path, capsys):
    """A missing table is named as missing (it used to be reported as a missing sidecar)."""
    code = run(["map", "query", str(tmp_path / "nope.parquet"), "--bbox", "0,0,1,1"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "nope.parquet" in err and "no such file" in err, err
    assert "sidecar" not in err


def test_cli_many_users_large_bound_small_memory_equals_large_memory(tmp_path, repeat_releases):
    """End to end: 3000 users and 5 heavy ones, --max-points 1000. Under a 16 MB DuckDB limit
    the thresholds take the window plan (the top-m aggregate runs out of memory); the map
    and its sidecar are byte for byte those of the 1 GB run with the same seed. Before the
    fallback the 16 MB run failed, saying the Parquet file was corrupt."""
    g = np.random.default_rng(0)
    light = pd.DataFrame({"user": np.repeat(np.arange(3000), 5).astype(str),
                          "lat": g.random(15000), "lon": 2 * g.random(15000)})
    heavy = pd.DataFrame({"user": np.repeat([f"h{i}" for i in range(5)], 1500),
                          "lat": g.random(7500), "lon": 2 * g.random(7500)})
    pd.concat([light, heavy], ignore_index=True).to_parquet(tmp_path / "many.parquet")
    outs = {}
    for ml in ("1GB", "16MB"):
        out = tmp_path / f"m_{ml}.parquet"
        code = run(["map", "publish", str(tmp_path / "many.parquet"), "--user-column", "user",
                    "--max-points", "1000", "--bbox", BOX, "--grid", "8x16", "--epsilon", "1",
                    "--method", "identity", "--seed", "7", "--memory-limit", ml, "-o", str(out)])
        assert code == 0, ml
        outs[ml] = (pq.read_table(out), json.loads(out.with_name(out.name + ".meta.json")
                                                     .read_text()))
    assert outs["1GB"][0].equals(outs["16MB"][0])
    a, b = outs["1GB"][1], outs["16MB"][1]
    a["parameters"].pop("memory_limit", None)
    b["parameters"].pop("memory_limit", None)
    assert a == b


@pytest.mark.parametrize("quiet", [False, True])
def test_publish_names_its_stages_on_a_terminal_only(points, monkeypatch, capsys, quiet,
                                                     repeat_releases):
    """A long ``map publish`` (60 s on 10^8 points) showed nothing until it ended. On a
    terminal it now names each stage on one transient line (identity for the ledger, counting
    and the mechanism, writing); with --quiet, or when stderr is a file or a pipe, stderr holds
    only the final status line, as before. The stage texts hold no figure from the data."""
    import sys

    from cli_cases import FakeTerminal

    term, captured = FakeTerminal(), sys.stderr
    monkeypatch.setattr(sys, "stderr", term)
    extra = ["--quiet"] if quiet else []
    assert _publish(points, "pts.csv", "m.parquet", "ag", extra) == 0
    shown = term.getvalue()
    stages = ["pts.csv: content identity for the privacy ledger",
              "pts.csv: points per cell (at most 10 per person), then ag on the 8x16 grid",
              "writing m.parquet"]
    if quiet:
        assert shown == ""
    else:
        for s in stages:
            assert s in shown, (s, shown)
        assert shown.rstrip().splitlines()[-1].split("\x1b[2K")[-1].startswith("ag: 8x16 map")
    monkeypatch.setattr(sys, "stderr", captured)
    capsys.readouterr()
    assert _publish(points, "pts.csv", "m2.parquet", "ag") == 0  # not a terminal
    err = capsys.readouterr().err
    assert err.strip().splitlines() == [err.strip()] and err.startswith("ag: 8x16 map")


def test_record_level_map_states_record_and_json_summary_agrees(points, capsys, repeat_releases):
    """`--protects record` states "record"; a per-person map's --json summary says "user"."""
    assert run(["map", "publish", str(points / "pts.csv"), "--protects", "record", "--bbox",
                BOX, "--grid", "8x16", "-e", "1", "-m", "identity", "--seed", "7", "-o",
                str(points / "r.csv")]) == 0
    assert json.loads((points / "r.csv.meta.json").read_text())["protects"] == "record"
    capsys.readouterr()
    assert _publish(points, "pts.csv", "u.csv", "identity", ["--json"]) == 0
    assert json.loads(capsys.readouterr().out)["protects"] == "user"


@pytest.mark.parametrize("window, expect", [
    (["--start", "nan"], "finite number"), (["--start", "inf"], "finite number"),
    (["--start", "2020-W01-1"], "neither a number nor a date/time"),
    (["--start", "2020-01-01T00:00:00+02:00"], "no UTC offset"),
    (["--start", "2020-01-02", "--end", "2020-01-01"], "window is empty"),
    (["--start", "3", "--end", "3"], "window is empty")])
def test_a_bad_time_window_is_refused_before_the_charge(tmp_path, capsys, window, expect):
    """--start nan was pasted into the SQL ("Referenced column nan not found", blamed on the
    file); a week date passed Python's check and failed in DuckDB as an unreadable file; an
    empty window spent epsilon on a map of pure noise."""
    src = tmp_path / "t.csv"
    src.write_text("user,t,lat,lon\n1,2020-01-01T00:00:00,0.5,1.0\n2,2020-01-01 05:00,0.5,1\n")
    code = run(["map", "publish", str(src), "--protects", "record", "-e", "1", "--bbox", BOX,
                "--grid", "2x2", "--time-column", "t", *window, "-o", str(tmp_path / "o.csv")])
    err = capsys.readouterr().err
    assert code == 2 and expect in err and "cannot be read" not in err, err
    assert not (tmp_path / "o.csv").exists()
    from veil.ledger import Ledger, ledger_path

    with Ledger(ledger_path()) as led:
        assert led.datasets() == []  # refused before anything was reserved
