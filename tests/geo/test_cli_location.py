"""`veil location obfuscate|noise`: outputs, sidecars, and bad input (exit 2, no output)."""

import json

import pyarrow.parquet as pq
import pytest

from veil.cli import main
from veil.distances import haversine_m


def run(args):
    try:
        main(args)
    except SystemExit as exc:
        return exc.code
    return 0


@pytest.fixture
def pts(tmp_path):
    f = tmp_path / "pts.csv"
    rows = "\n".join(f"{i},{39.9 + i * 1e-3},{116.4 + i * 1e-3}" for i in range(200))
    f.write_text("id,lat,lon\n" + rows + "\n")
    return f


def test_obfuscate_csv_with_sidecar(tmp_path, pts):
    out = tmp_path / "out.csv"
    assert run(["location", "obfuscate", str(pts), "--epsilon", "0.01", "-o", str(out),
                "--seed", "3"]) == 0
    import pandas as pd
    got, src = pd.read_csv(out), pd.read_csv(pts)
    assert list(got.columns) == ["id", "lat", "lon"] and (got["id"] == src["id"]).all()
    d = haversine_m(src["lat"].to_numpy(), src["lon"].to_numpy(), got["lat"].to_numpy(),
                    got["lon"].to_numpy())
    assert 100 < d.mean() < 300                       # mean 2/eps = 200 m
    meta = json.loads((tmp_path / "out.csv.meta.json").read_text())
    assert meta["mechanism"] == "planar-laplace" and meta["parameters"]["epsilon_per_metre"] == 0.01
    # the budget includes the stated float64 correction of the 1 m output lattice
    corr = meta["budget_split"]["float64 snapping correction"]
    assert 0 < corr < 1e-6
    assert meta["budget"]["epsilon_per_metre"] == pytest.approx(0.01 + corr, rel=1e-12)


def test_obfuscate_grid_region_parquet(tmp_path, pts):
    out = tmp_path / "out.parquet"
    region = tmp_path / "region.json"
    region.write_text(json.dumps({"type": "polygon", "vertices": [[39.8, 116.3], [39.8, 116.7],
                                                                  [40.2, 116.7], [40.2, 116.3]]}))
    assert run(["location", "obfuscate", str(pts), "--epsilon", "0.01", "-o", str(out),
                "--grid-step", "50", "--region", str(region), "--seed", "1"]) == 0
    t = pq.read_table(out)
    assert t.num_rows == 200
    meta = json.loads((tmp_path / "out.parquet.meta.json").read_text())
    assert meta["parameters"]["epsilon_prime"] > 0.01
    assert meta["budget"]["epsilon_per_metre"] == meta["parameters"]["epsilon_prime"]


@pytest.mark.parametrize("content,extra", [
    ("id,lat,lon\n1,95,116.4\n", []),                     # latitude out of range
    ("id,lat,lon\n1,,116.4\n", []),                       # missing (NaN)
    ("id,lat,lon\n1,nan,116.4\n", []),
    ("id,lat,lon\n1,39.9,116.4\n", ["--epsilon", "0"]),   # eps <= 0
    ("id,lat,lon\n1,39.9,116.4\n", ["--epsilon", "-1"]),
    ("id,lat,lon\n1,39.9,116.4\n", ["--grid-step", "50"]),  # grid without public region
    ("id,lat,lon\n1,39.9,116.4\n", ["--grid-step", "50", "--region", "40,116,40,117"]),  # empty
    ("id,lat,lon\n1,39.9,116.4\n", ["--grid-step", "-5", "--region", "39,116,40,117"]),
    # eps * grid_step = 1000: exp() overflowed into an internal OverflowError (issue 16, 3)
    ("id,lat,lon\n1,39.9,116.4\n", ["--epsilon", "1", "--grid-step", "1000",
                                      "--region", "39.8,116.3,40.0,116.5"]),
])
def test_obfuscate_bad_input_exit_2_no_output(tmp_path, content, extra, capsys):
    f = tmp_path / "in.csv"
    f.write_text(content)
    out = tmp_path / "out.csv"
    args = ["location", "obfuscate", str(f), "-o", str(out)] + extra
    if "--epsilon" not in extra:
        args += ["--epsilon", "0.01"]
    assert run(args) == 2
    assert not out.exists() and not (tmp_path / "out.csv.meta.json").exists()
    err = capsys.readouterr().err
    assert err.startswith("veil: error:") and len(err.strip().splitlines()) == 1


def test_noise_command(tmp_path, capsys):
    assert run(["location", "noise", "--privacy", "geo", "--epsilon", "0.01",
                "--loss", "squared"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["is_planar_laplace"] and abs(res["expected_loss"] - 60000) < 20
    out = tmp_path / "n.json"
    assert run(["location", "noise", "--privacy", "D-eps", "--radius", "100", "--epsilon", "1",
                "--loss", "threshold:150", "-o", str(out)]) == 0
    assert abs(json.loads(out.read_text())["core"] - 50) < 1


@pytest.mark.parametrize("args", [
    ["--privacy", "D-eps", "--epsilon", "1"],                 # D missing
    ["--privacy", "D-eps", "--radius", "0", "--epsilon", "1"],      # D <= 0
    ["--privacy", "D-eps", "--radius", "-3", "--epsilon", "1"],
    ["--privacy", "geo", "--epsilon", "0"],
    ["--privacy", "geo", "--epsilon", "0.01", "--loss", "cubic"],
    ["--privacy", "nope", "--epsilon", "0.01"],
])
def test_noise_bad_input(args):
    assert run(["location", "noise"] + args) == 2


def test_bench_on_real_data_small(tmp_path, capsys):
    png = tmp_path / "b.png"
    assert run(["bench", "location", "--epsilons", "0.005", "--cells", "3", "--seed", "0",
                "--plot", str(png)]) == 0
    out = capsys.readouterr().out
    assert "Foursquare NYC" in out and "| 0.005 | 400 |" in out
    assert png.read_bytes()[:4] == b"\x89PNG"
    assert run(["bench", "location", "--cells", "40"]) == 2


def test_obfuscate_consistent_window(tmp_path):
    f = tmp_path / "in.csv"
    f.write_text("lat,lon,t\n45.0,7.0,0\n45.0,7.0,10\n45.0,7.0,4000\n46.0,7.0,10\n")
    out, key = tmp_path / "out.csv", tmp_path / "key.bin"
    args = ["location", "obfuscate", str(f), "--epsilon", "0.01", "-o", str(out),
            "--consistent-window", "3600", "--time-column", "t", "--key-file", str(key)]
    assert run(args) == 0
    assert key.stat().st_size == 32 and (key.stat().st_mode & 0o777) == 0o600
    import pandas as pd
    a = pd.read_csv(out)
    assert (a.iloc[0][["lat", "lon"]] == a.iloc[1][["lat", "lon"]]).all()   # same window
    assert not (a.iloc[0][["lat", "lon"]] == a.iloc[2][["lat", "lon"]]).all()
    out2 = tmp_path / "out2.csv"
    # same key reused: the same points again, which the ledger records at no extra cost
    assert run(args[:6] + [str(out2)] + args[7:]) == 0
    assert pd.read_csv(out2)[["lat", "lon"]].equals(a[["lat", "lon"]])
    assert run(["location", "obfuscate", str(f), "--epsilon", "0.01", "-o",
                str(tmp_path / "x.csv"), "--consistent-window", "60"]) == 2


@pytest.mark.parametrize("eps", ["1e-300", "1e-13"])
def test_an_epsilon_beyond_the_earth_is_a_clear_error(tmp_path, pts, capsys, eps):
    """``--epsilon 1e-300`` stopped with "internal error: ZeroDivisionError" (the expected
    error overflowed); an epsilon per metre whose noise passes 10^12 m is now refused with a
    one-line error that says why and what to use, and nothing is written."""
    from veil.errors import ParameterError
    from veil.geo import planar_laplace

    out = tmp_path / "o.csv"
    assert run(["location", "obfuscate", str(pts), "--epsilon", eps, "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("veil: error:") and "beyond any distance on Earth" in err, err
    assert len(err.strip().splitlines()) == 1 and not out.exists()
    with pytest.raises(ParameterError, match="at least 1e-12 per metre"):
        planar_laplace([[39.9, 116.4]], epsilon=float(eps))
    # at 1e-12 the float64 correction of a 1 m lattice (4e-7) is 400,000 x epsilon: refused
    # (it was published as a 4e-7 guarantee); a lattice of 2 km keeps it below epsilon
    with pytest.raises(ParameterError, match="too fine .*at least about 1.27e\\+03 m"):
        planar_laplace([[39.9, 116.4]], epsilon=1e-12)
    rel = planar_laplace([[39.9, 116.4]], epsilon=1e-12, resolution=2000.0)
    assert rel.value.shape == (1, 2) and 1e-12 < rel.epsilon < 2e-12


@pytest.mark.parametrize("res, expect", [("1e-9", "rounding of a displacement"),
                                         ("0.001", "would exceed epsilon")])
def test_a_too_fine_resolution_says_use_a_larger_one(tmp_path, pts, capsys, res, expect):
    """`--resolution 1e-9` said "too coarse ... use a smaller resolution"; 1e-6 published
    "epsilon 410181" per metre for 0.01 (the float64 correction, stated and charged)."""
    out = tmp_path / "o.csv"
    assert run(["location", "obfuscate", str(pts), "-e", "0.01", "--resolution", res, "-o",
                str(out)]) == 2
    err = capsys.readouterr().err
    assert "too fine" in err and expect in err and "larger resolution" in err, err
    assert "smaller resolution" not in err and not out.exists()
    assert run(["location", "obfuscate", str(pts), "-e", "0.01", "--resolution", "0.02", "-o",
                str(out)]) == 0
    assert json.loads((tmp_path / "o.csv.meta.json").read_text())["budget"][
        "epsilon_per_metre"] < 0.02


def test_location_noise_with_a_tiny_d_eps_epsilon_stops_at_once(capsys):
    """`veil location noise --privacy d-eps --epsilon 1e-4` was killed for memory after a
    minute; it now exits 2 with one line naming the epsilon it needs."""
    assert run(["location", "noise", "--privacy", "d-eps", "--radius", "200", "--epsilon",
                "1e-4", "--loss", "distance"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("veil: error:") and "use epsilon >= 0.00018" in err, err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("extra", [[], ["--grid-step", "100", "--region",
                                        "44.1,-32.1,44.3,-31.9"],
                                   ["--consistent-window", "60", "--time-column", "t",
                                    "--key-file", "KEY"]])
def test_the_ledger_records_what_the_release_spends(tmp_path, capsys, extra):
    """The ledger recorded epsilon, the sidecar epsilon plus the snapping correction (or eps'
    on a grid): a release passed a declared total of 0.01 by 4e-7."""
    from veil.ledger import Ledger, ledger_path

    src = tmp_path / "p.csv"
    src.write_text("lat,lon,t\n44.2,-32.0,0\n44.21,-32.01,30\n")
    extra = [str(tmp_path / "key.bin") if a == "KEY" else a for a in extra]
    assert run(["budget", "set", str(src), "--total-per-metre", "0.01"]) == 0
    out = tmp_path / "o.csv"
    if "--grid-step" not in extra:  # eps' passes eps by ~1e-14, within the ledger's rounding
        assert run(["location", "obfuscate", str(src), "-e", "0.01", "-o", str(out),
                    *extra]) == 2
        assert "would exceed the total" in capsys.readouterr().err and not out.exists()
    assert run(["location", "obfuscate", str(src), "-e", "0.005", "-o", str(out), *extra]) == 0
    spent = json.loads((tmp_path / "o.csv.meta.json").read_text())["budget"]
    with Ledger(ledger_path()) as led:
        (ds,) = led.datasets()
        recorded = led.summary(ds).spent["epsilon_per_metre"]
    assert spent["epsilon_per_metre"] > 0.005 and recorded == spent["epsilon_per_metre"]


def test_consistent_obfuscation_keeps_the_other_columns_as_written(tmp_path):
    """The time and user columns were written back as read for the computation: two
    timestamps in nanoseconds became one float, 100 became 100.0 and user 007 became 7."""
    src = tmp_path / "t.csv"
    src.write_text("lat,lon,t,user\n44.1,-32.0,1600000000123456789,007\n"
                   "44.1,-32.0,1600000000123456790,7\n44.1,-32.0,100,x\n")
    out = tmp_path / "o.csv"
    assert run(["location", "obfuscate", str(src), "-e", "0.01", "-o", str(out),
                "--consistent-window", "60", "--time-column", "t", "--user-column", "user",
                "--key-file", str(tmp_path / "k.bin")]) == 0
    rows = [line.split(",") for line in out.read_text().splitlines()]
    assert rows[0] == ["lat", "lon", "t", "user"]
    assert [r[2:] for r in rows[1:]] == [["1600000000123456789", "007"],
                                        ["1600000000123456790", "7"], ["100", "x"]]


@pytest.mark.parametrize("extra, expect", [
    (["--cell", "1e-300"], "--cell"), (["--cell", "1e300"], "--cell"),
    (["--consistent-window", "1e-300"], "windows"), (["--t-big"], "windows")])
def test_consistent_obfuscation_refuses_cells_and_windows_out_of_range(tmp_path, capsys,
                                                                        extra, expect):
    """--cell 1e-300 sent every report to the south pole (int64 cell indices wrapped), 1e300
    to the north pole; t = 1e300 or a window of 1e-300 s put every report in one window."""
    src = tmp_path / "t.csv"
    big = extra == ["--t-big"]
    src.write_text("lat,lon,t\n44.1,-32.0,1e300\n44.1,-32.0,-1e300\n" if big
                   else "lat,lon,t\n44.1,-32.0,0\n44.2,-32.0,100\n")
    argv = ["location", "obfuscate", str(src), "-e", "0.01", "-o", str(tmp_path / "o.csv"),
            "--time-column", "t", "--key-file", str(tmp_path / "k.bin")]
    argv += [] if big else extra
    if "--consistent-window" not in argv:
        argv += ["--consistent-window", "60"]
    assert run(argv) == 2
    err = capsys.readouterr().err
    assert expect in err and "internal error" not in err, err
    assert not (tmp_path / "o.csv").exists() and not (tmp_path / "k.bin").exists()


@pytest.mark.parametrize("argv, expect", [
    (["noise", "--privacy", "D-eps", "-e", "1", "--radius", "1e-300"], "larger radius"),
    (["noise", "--privacy", "geo", "-e", "0.01", "--loss", "power:1e300"], "above 20"),
    (["risk", "-e", "1e-300", "--region", "39.85,116.3,39.95,116.45", "--cell", "250"],
     "at least 1e-12 per metre"),
])
def test_location_extremes_are_clear_errors(capsys, argv, expect):
    """`noise --privacy D-eps -e 1000` and `--radius 1e-300` stopped with "internal error:
    ZeroDivisionError" (the staircase's density underflowed); `--loss power:1e300` printed
    "expected_loss": inf; `risk -e 1e-300` printed NaN errors."""
    assert run(["location", *argv]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and expect in err and "internal" not in err, err


def test_d_eps_noise_with_a_huge_epsilon_has_a_flat_core(capsys):
    """At eps = 1000 the members without a core underflow; the search keeps those it can
    evaluate (a flat core), whose expected distance is finite and small."""
    assert run(["location", "noise", "--privacy", "D-eps", "-e", "1000", "--radius", "100",
                "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["core"] > 0 and 0 < out["expected_loss"] < 100


def test_prior_weights_are_scaled_before_they_are_summed(tmp_path, capsys):
    """Two weights of 1e308 said "prior must sum to 1, sums to 0.0" (the sum overflowed)."""
    (tmp_path / "p.csv").write_text("lat,lon,weight\n39.9,116.4,1e308\n39.91,116.41,1e308\n")
    (tmp_path / "q.csv").write_text("lat,lon,weight\n39.9,116.4,1\n39.91,116.41,1\n")
    outs = []
    for name in ("p.csv", "q.csv"):
        assert run(["location", "risk", "-e", "0.005", "--prior", str(tmp_path / name),
                    "--cell", "250"]) == 0
        outs.append(json.loads(capsys.readouterr().out))
    assert outs[0] == {**outs[1], "prior": outs[0].get("prior")}


def test_priors_across_the_antimeridian(tmp_path, capsys):
    """A prior on both sides of the antimeridian was projected around longitude 0: `risk`
    said the prior alone errs by 20,015 km (the points are 222 m apart) and `--remap-prior`
    moved reports to (0, 0)."""
    (tmp_path / "p.csv").write_text("lat,lon,weight\n0,179.999,1\n0,-179.999,1\n")
    assert run(["location", "risk", "-e", "0.005", "--prior", str(tmp_path / "p.csv"),
                "--cell", "250"]) == 0
    assert json.loads(capsys.readouterr().out)["prior_only_error_m"] == pytest.approx(111.2,
                                                                                      abs=1)
    (tmp_path / "a.csv").write_text("lat,lon\n0,179.9999\n0,179.9999\n0,-179.9999\n")
    (tmp_path / "r.csv").write_text("lat,lon,weight\n0,179.9995,1\n0,-179.9995,1\n0,0,1e-9\n")
    out = tmp_path / "o.csv"
    assert run(["location", "obfuscate", str(tmp_path / "a.csv"), "-e", "0.01",
                "--remap-prior", str(tmp_path / "r.csv"), "-o", str(out)]) == 0
    rows = [tuple(map(float, r.split(","))) for r in out.read_text().splitlines()[1:]]
    assert all(abs(abs(lon) - 179.9995) < 1e-3 for _, lon in rows), rows


def test_projection_centred_on_points_takes_the_shortest_arc():
    from veil.geo.geometry import LocalProjection

    assert abs(LocalProjection.centred_on([[0, 170], [0, -170], [0, 175]]).lon0) == 180
    assert LocalProjection.centred_on([[0, -10], [0, 10], [0, 100]]).lon0 == 45
    assert LocalProjection.centred_on([[10, 1], [20, 3]]) == LocalProjection(15.0, 2.0)


def test_consistent_window_neighbours_differ_in_declared_outputs_only(tmp_path):
    """Neighbours: the second report moved to another cell (same count of reports). The
    sidecar's `parameters.n_distinct` (distinct (user, cell, window) keys, from the true
    cells) and the note quoting it differed between them without being declared outputs."""
    from veil.release import split_outputs

    key = tmp_path / "key.bin"
    metas = []
    for second in ("45.0,7.0", "45.5,7.5"):   # the same input path, rewritten
        (tmp_path / "in.csv").write_text(f"lat,lon,t\n45.0,7.0,0\n{second},10\n46.0,7.0,20\n")
        assert run(["location", "obfuscate", str(tmp_path / "in.csv"), "--epsilon", "0.01",
                    "-o", str(tmp_path / "out.csv"), "--consistent-window", "3600",
                    "--time-column", "t", "--key-file", str(key), "--seed", "1",
                    "--spend-again", "--force"]) == 0
        metas.append(json.loads((tmp_path / "out.csv.meta.json").read_text()))
    assert metas[0]["parameters"]["n_distinct"] == 2 and metas[1]["parameters"]["n_distinct"] == 3
    assert split_outputs(metas[0])[0] == split_outputs(metas[1])[0]
