"""`veil trajectory model|release`: happy path and bad input (exit 2, no output)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from veil.audit import check_on_grid
from veil.cli import main
from veil.datasets import shared_data_path
from veil.geo.temporal import MarkovModel, beijing_grid

# these tests release the same data several times on purpose (see tests/conftest.py)
pytestmark = pytest.mark.usefixtures("repeat_releases")


def _run(args):
    try:
        main([str(a) for a in args])
    except SystemExit as exc:
        return exc.code or 0
    return 0


@pytest.fixture(scope="module")
def model_path(tmp_path_factory):
    d = tmp_path_factory.mktemp("m")
    p = d / "m.npz"
    assert _run(["trajectory", "model", shared_data_path("geolife", "geolife_long"),
                 "--grid", "beijing", "-o", p]) == 0
    return p


def _track(path, n=40, edits=None, time_name="t"):
    g = beijing_grid(50)
    latlon = g.to_latlon(g.centers_m[1275 + np.arange(n) % 5])
    df = pd.DataFrame({time_name: np.arange(n) * 5.0, "lat": latlon[:, 0], "lon": latlon[:, 1]})
    for (col, row), val in (edits or {}).items():
        if isinstance(val, str):
            df[col] = df[col].astype(object)
        df.loc[row, col] = val
    df.to_csv(path, index=False)
    return path


def test_model_and_release(tmp_path, model_path, capsys):
    m = MarkovModel.load(model_path)
    assert m.grid == beijing_grid(50) and m.meta["n_transitions"] > 1000
    out = tmp_path / "out.csv"
    code = _run(["trajectory", "release", _track(tmp_path / "t.csv"), "--epsilon", 1,
                 "--delta", 0.01, "--mechanism", "lm", "--model", model_path, "-o", out,
                 "--seed", 3])
    assert code == 0, capsys.readouterr().err
    df = pd.read_csv(out)
    assert list(df.columns) == ["t", "lat", "lon", "set_size"] and len(df) == 40
    meta = json.loads((tmp_path / "out.csv.meta.json").read_text())
    assert meta["budget"]["epsilon"] == pytest.approx(40.0)
    assert meta["parameters"]["mechanism"] == "lm" and meta["seeded"] is True
    xy = beijing_grid(50).to_metres(df["lat"], df["lon"])
    assert check_on_grid(xy, (0.0, 0.0), 1.0, atol=0.02).passed  # 1 m lattice (7-decimal CSV)


def test_dropped_invalid_points_leave_no_trace_in_the_published_files(tmp_path, model_path,
                                                                      capsys, monkeypatch):
    """Neighbours: the same 38 valid points, and those plus two invalid ones (a NaN, and a
    point outside the grid). The sidecar said `n_dropped_invalid: 2` and `n_points: 40`,
    i.e. that the person was outside the region at some time, which the release protects.
    Now the data file, the sidecar and the --json summary are byte-identical; only the
    operator's stderr says that points were dropped."""
    monkeypatch.setenv("VEIL_HOME", str(tmp_path / "home"))
    src, out = tmp_path / "t.csv", tmp_path / "o.csv"
    side = tmp_path / "o.csv.meta.json"
    got = {}
    for name, edits in (("with", {("lat", 3): np.nan, ("lon", 7): 120.0}), ("without", {})):
        _track(src, edits=edits)
        if name == "without":  # the same valid points, the two invalid rows removed
            df = pd.read_csv(src)
            df.drop(index=[3, 7]).to_csv(src, index=False)
        capsys.readouterr()
        assert _run(["trajectory", "release", src, "-e", 1, "-d", 0.05, "--model", model_path,
                     "-o", out, "--on-invalid", "drop", "--seed", 4, "--json",
                     "--spend-again", "--force"]) == 0
        cap = capsys.readouterr()
        got[name] = (out.read_bytes(), side.read_bytes(), cap.out, cap.err)
        assert len(pd.read_csv(out)) == 38
    assert got["with"][:3] == got["without"][:3]
    assert "dropped 2 invalid point(s)" in got["with"][3]
    assert "dropped" not in got["without"][3]
    assert json.loads(got["with"][1])["input"]["n_points"] == 38


@pytest.mark.parametrize("case,args,edits,msg", [
    ("nan", [], {("lat", 3): np.nan}, "NaN"),
    ("outside", [], {("lon", 5): 120.0}, "outside the grid"),
    ("unsorted", [], {("t", 10): 1.0}, "not sorted"),
    ("text", [], {("lat", 2): "abc"}, "not a number"),
    ("delta0", ["-d", "0"], {}, "delta"),
    ("delta1", ["-d", "1"], {}, "delta"),
    ("delta_neg", ["-d", "-0.5"], {}, "delta"),
    ("eps", ["-e", "0"], {}, "epsilon"),
    ("mech", ["-m", "gauss"], {}, "mechanism"),
    ("grid", ["--grid", "beijing:40"], {}, "grid"),
    ("invalid_policy", ["--on-invalid", "skip"], {}, "on-invalid"),
    ("initial_bad", ["--initial-latlon", "39.9"], {}, "initial-latlon"),
    ("initial_out", ["--initial-latlon", "39.9,120.0"], {}, "outside the grid"),
    ("resolution", ["--resolution", "-1"], {}, "resolution"),
])
def test_bad_input_exit_2_no_output(tmp_path, model_path, capsys, case, args, edits, msg):
    out = tmp_path / "o.csv"
    src = _track(tmp_path / "t.csv", edits=edits)
    base = {"-e": "1", "-d": "0.01"}
    for k, v in zip(args[::2], args[1::2]):
        base[k] = v
    argv = ["trajectory", "release", src, "--model", model_path, "-o", out]
    for k, v in base.items():
        argv += [k, v]
    code = _run(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    assert msg.lower() in err.lower()
    assert not out.exists() and not (tmp_path / "o.csv.meta.json").exists()


def test_not_a_model_file(tmp_path, capsys):
    bad = tmp_path / "m.npz"
    np.savez(bad, x=np.zeros(3))
    code = _run(["trajectory", "release", _track(tmp_path / "t.csv"), "-e", 1, "-d", 0.1,
                 "--model", bad, "-o", tmp_path / "o.csv"])
    assert code == 2 and "not a veil Markov model" in capsys.readouterr().err


def test_missing_column(tmp_path, model_path, capsys):
    p = tmp_path / "t.csv"
    p.write_text("t,lat\n1,39.9\n")
    code = _run(["trajectory", "release", p, "-e", 1, "-d", 0.1, "--model", model_path,
                 "-o", tmp_path / "o.csv"])
    assert code == 2 and "lon" in capsys.readouterr().err


def test_bench_command_small(capsys):
    code = _run(["bench", "temporal", "--steps", "20", "--reps", "1", "--max-trajectories", "1",
                 "--seed", "1"])
    out = capsys.readouterr().out
    assert code == 0
    assert "pim" in out and "lm" in out and "mean_error_m" in out


def test_public_initial_point_gives_small_sets(tmp_path, model_path):
    src = _track(tmp_path / "t.csv")
    g = beijing_grid(50)
    lat, lon = g.to_latlon(g.centers_m[[1275]])[0]
    out = tmp_path / "o.csv"
    assert _run(["trajectory", "release", src, "-e", 1, "-d", 0.01, "--model", model_path,
                 "-o", out, "--initial-latlon", f"{lat},{lon}", "--seed", 1]) == 0
    assert pd.read_csv(out)["set_size"].iloc[0] == 1
    meta = json.loads((tmp_path / "o.csv.meta.json").read_text())
    assert meta["parameters"]["initial"] == "given"
    # the deprecated LON,LAT option still works, the same way, with a notice
    out2 = tmp_path / "o2.csv"
    assert _run(["trajectory", "release", src, "-e", 1, "-d", 0.01, "--model", model_path,
                 "-o", out2, "--initial-lonlat", f"{lon},{lat}", "--seed", 1]) == 0
    assert pd.read_csv(out2).equals(pd.read_csv(out))


# ------------------------------------------------ veil's own data (issue 17, defect 5)
def _synth(tmp_path, users=6, steps=40):
    p = tmp_path / "traj.csv"
    assert _run(["data", "synth", "trajectories", "-o", p, "--users", users, "--steps", steps,
                 "--seed", 3]) == 0
    return p


def _synth_grid(path):
    """A public grid over the synthetic city (its published bounding box, padded)."""
    df = pd.read_csv(path)
    la0, la1 = np.floor(df["lat"].min() * 100) / 100, np.ceil(df["lat"].max() * 100) / 100
    lo0, lo1 = np.floor(df["lon"].min() * 100) / 100, np.ceil(df["lon"].max() * 100) / 100
    return f"{la0},{lo0},{la1},{lo1},12,12"


def test_synth_trajectories_model_and_release_end_to_end(tmp_path, capsys):
    src = _synth(tmp_path)
    df = pd.read_csv(src)
    assert list(df.columns) == ["user", "t", "lat", "lon"]
    grid = _synth_grid(src)
    model = tmp_path / "m.npz"
    assert _run(["trajectory", "model", src, "--grid", grid, "-o", model,
                 "--prior-weight", "0.1"]) == 0
    m = MarkovModel.load(model)
    # per-user sequences: one per user, no transition across users
    from veil.geo.temporal import TemporalGrid, transition_counts
    g = TemporalGrid.parse(grid)
    seqs = [g.cell_of(d["lat"], d["lon"]) for _, d in df.groupby("user", sort=False)]
    assert m.meta["n_sequences"] == 6
    assert m.meta["n_transitions"] == transition_counts(seqs, g.n_cells).sum() == 6 * 39
    out = tmp_path / "rel.csv"
    assert _run(["trajectory", "release", src, "-e", 1, "-d", 0.05, "--model", model,
                 "-o", out, "--seed", 2]) == 0
    rel = pd.read_csv(out)
    assert list(rel.columns) == ["user", "t", "lat", "lon", "set_size"]
    assert len(rel) == len(df) and (rel["user"].to_numpy() == df["user"].to_numpy()).all()
    assert (rel["t"].to_numpy() == df["t"].to_numpy()).all()
    meta = json.loads((tmp_path / "rel.csv.meta.json").read_text())
    assert meta["parameters"]["n_users"] == 6
    assert meta["budget"]["epsilon"] == pytest.approx(40.0)   # eps per step x 40 steps per user
    # the library gives the same release for user 0 with the same child stream
    from veil.geo.temporal import release_trajectory
    from veil.random import make_rng, spawn
    s0 = spawn(make_rng(seed=2), 6)[0]
    u0 = df[df["user"] == df["user"].iloc[0]]
    r = release_trajectory(g.cell_of(u0["lat"], u0["lon"]), model=m, epsilon=1.0, delta=0.05,
                           rng=s0)
    np.testing.assert_allclose(rel.loc[rel["user"] == u0["user"].iloc[0], ["lat", "lon"]],
                               r.released_latlon, atol=5e-8)            # 7-decimal CSV


def test_time_alias_and_explicit_time_column(tmp_path, model_path):
    a = _track(tmp_path / "a.csv", time_name="time")          # veil < 0.3 files
    b = _track(tmp_path / "b.csv", time_name="when")
    for src, extra in ((a, []), (b, ["--time-column", "when"])):
        out = tmp_path / f"o_{src.stem}.csv"
        assert _run(["trajectory", "release", src, "-e", 1, "-d", 0.05, "--model", model_path,
                     "-o", out, "--seed", 1] + extra) == 0
        assert len(pd.read_csv(out)) == 40
    assert pd.read_csv(tmp_path / "o_a.csv").equals(pd.read_csv(tmp_path / "o_b.csv"))


def test_model_with_no_point_in_the_grid_is_an_error(tmp_path, capsys):
    src = _synth(tmp_path)                                    # the synthetic city, not Beijing
    out = tmp_path / "m.npz"
    capsys.readouterr()
    assert _run(["trajectory", "model", src, "-o", out]) == 2    # default --grid beijing
    err = capsys.readouterr().err
    assert "no point falls inside the grid" in err and "--grid" in err
    assert len(err.strip().splitlines()) == 1 and not out.exists()
    assert str(src) in err                                      # the error names the file


def test_model_whose_every_point_is_nan_names_the_file(tmp_path, capsys):
    """Found by the slow command fuzz: the all-NaN error did not name the input file."""
    src = tmp_path / "nan.csv"
    src.write_text("user,time,lat,lon\n1,2020-01-01,,\n")
    capsys.readouterr()
    assert _run(["trajectory", "model", src, "--grid", "beijing:5", "-o", tmp_path / "m.npz"]) == 2
    err = capsys.readouterr().err
    assert "every point has a NaN coordinate" in err and str(src) in err


def test_grid_option_refuses_the_old_lon_first_order(tmp_path, capsys):
    src = _synth(tmp_path)
    la0, lo0, la1, lo1, nx, ny = _synth_grid(src).split(",")
    old = ",".join([lo0, la0, lo1, la1, nx, ny])
    assert _run(["trajectory", "model", src, "--grid", old, "-o", tmp_path / "m.npz"]) == 2
    assert "latitude first" in capsys.readouterr().err


def test_release_remap_option(tmp_path, model_path):
    src = _track(tmp_path / "t.csv")
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    base = ["trajectory", "release", src, "-e", 1, "-d", 0.01, "--model", model_path, "--seed", 4]
    assert _run(base + ["-o", a]) == 0
    assert _run(base + ["-o", b, "--remap"]) == 0
    ra, rb = pd.read_csv(a), pd.read_csv(b)
    assert (ra["set_size"] == rb["set_size"]).all()            # same release, remapped
    g = beijing_grid(50)
    truth = g.centers_m[1275 + np.arange(40) % 5]
    ea = np.hypot(*(g.to_metres(ra["lat"], ra["lon"]) - truth).T).mean()
    eb = np.hypot(*(g.to_metres(rb["lat"], rb["lon"]) - truth).T).mean()
    assert eb < ea
    assert json.loads((tmp_path / "b.csv.meta.json").read_text())["parameters"]["remap"]


def test_published_files_on_neighbouring_inputs(tmp_path):
    """Files written by `trajectory release`: OUTPUT (data) and OUTPUT.meta.json. On two inputs
    that differ in one point of one user, with the same seed, every other user's rows are
    identical (each user has her own stream) and the sidecars agree except the input path."""
    src = _synth(tmp_path, users=4, steps=20)
    df = pd.read_csv(src)
    grid = _synth_grid(src)
    model = tmp_path / "m.npz"
    assert _run(["trajectory", "model", src, "--grid", grid, "-o", model,
                 "--prior-weight", "0.2"]) == 0
    nb = df.copy()
    u1 = df["user"].iloc[-1]
    i = int(np.flatnonzero(df["user"].to_numpy() == u1)[5])
    nb.loc[i, "lat"] = df["lat"].iloc[int(np.flatnonzero(df["user"].to_numpy() == u1)[0])]
    src2 = tmp_path / "nb.csv"
    nb.to_csv(src2, index=False)
    outs = []
    for s, name in ((src, "a.csv"), (src2, "b.csv")):
        out = tmp_path / name
        assert _run(["trajectory", "release", s, "-e", 1, "-d", 0.05, "--model", model,
                     "-o", out, "--seed", 7]) == 0
        outs.append(out)
    a, b = pd.read_csv(outs[0]), pd.read_csv(outs[1])
    other = a["user"] != u1
    assert a[other].equals(b[other])
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(("a.csv", "b.csv"))) \
        == ["a.csv", "a.csv.meta.json", "b.csv", "b.csv.meta.json"]
    ma = json.loads((tmp_path / "a.csv.meta.json").read_text())
    mb = json.loads((tmp_path / "b.csv.meta.json").read_text())
    ma["input"].pop("path"), mb["input"].pop("path")
    for m in (ma, mb):   # per-release summaries of the released points (public) may differ
        m["parameters"].pop("median_set_size", None)
        m["parameters"].pop("n_degenerate", None)
        m.pop("noise_scale", None)
    assert ma == mb


def test_release_refuses_to_overwrite_its_input(tmp_path, model_path, capsys):
    src = _track(tmp_path / "t.csv")
    before = src.read_text()
    assert _run(["trajectory", "release", src, "-e", 1, "-d", 0.05, "--model", model_path,
                 "-o", src]) == 2
    assert "overwrite" in capsys.readouterr().err and src.read_text() == before


def test_model_of_a_header_only_file_names_the_file(tmp_path, capsys):
    """Found by the CI fuzz run: a file without rows gave 'no transition inside the grid: 0 of
    0 points ...' without naming the file."""
    f = tmp_path / "empty.csv"
    f.write_text("time,lat,lon\n")
    capsys.readouterr()
    assert _run(["trajectory", "model", f, "--grid", "beijing:5", "-o", tmp_path / "m.npz"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.splitlines() == [f"veil: error: file {f}: no points to learn a model from"]
    assert not (tmp_path / "m.npz").exists()
