"""Privacy accounting that cannot be fooled (issue 14): the ledger seen from the command line.

Each `test_d<N>_...` is the regression test of defect N of issue 14 and fails on the main
branch before the fix. Every test runs with its own ledger (tests/conftest.py sets VEIL_HOME).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from veil.cli import main

SRC = str(Path(__file__).resolve().parents[2] / "src")


def veil(capsys, *argv):
    """Run `veil ARGV` in-process; return (exit code, stdout, stderr)."""
    capsys.readouterr()
    try:
        main([str(a) for a in argv])
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 0
    out, err = capsys.readouterr()
    return code, out, err


def show(capsys, *extra) -> list[dict]:
    code, out, err = veil(capsys, "budget", "show", "--json", *extra)
    assert code == 0, err
    return json.loads(out)["datasets"]


@pytest.fixture
def hist(tmp_path):
    p = tmp_path / "census.csv"
    g = np.random.default_rng(0)
    p.write_text("bin,count\n" + "".join(f"b{i},{c}\n" for i, c in
                                         enumerate(g.integers(0, 50, 40))))
    return p


def _noise(capsys, inp, out, *extra, eps="1"):
    return veil(capsys, "noise", "counts", inp, "-c", "count", "-e", eps, "-o", out, *extra)


# ----------------------------------------------------------------------------- defect 1
def _walk_model(tmp_path, steps=96, users=3):
    """A 10 x 10 grid model from random walks, and `users` tracks of `steps` points."""
    from veil.geo.temporal import MarkovModel, TemporalGrid

    g = TemporalGrid(lon_min=116.30, lat_min=39.85, lon_max=116.45, lat_max=39.98, nx=10, ny=10)
    rng = np.random.default_rng(0)
    walks = []
    for _ in range(40):
        c = [int(rng.integers(0, 100))]
        for _ in range(steps - 1):
            x, y = c[-1] % 10, c[-1] // 10
            x = int(np.clip(x + rng.integers(-1, 2), 0, 9))
            y = int(np.clip(y + rng.integers(-1, 2), 0, 9))
            c.append(y * 10 + x)
        walks.append(c)
    model = MarkovModel.from_trajectories(walks, grid=g)
    mp = tmp_path / "model.npz"
    model.save(mp)
    latlon = np.concatenate([g.to_latlon(g.centers_m[w]) for w in walks[:users]])
    table = pa.table({"user": np.repeat(np.arange(users), steps),
                      "t": np.tile(np.arange(steps) * 900.0, users),
                      "lat": latlon[:, 0], "lon": latlon[:, 1]})
    return mp, table


def test_d1_trajectory_batch_charges_T_times_epsilon(tmp_path, capsys):
    """96-step tracks at epsilon 1 per step spend 96 per user, in the manifest and the ledger."""
    import pyarrow.csv as pcsv

    mp, table = _walk_model(tmp_path)
    pcsv.write_csv(table, tmp_path / "traj.csv")
    code, out, err = veil(capsys, "batch", "trajectories", tmp_path / "traj.csv", "--model", mp,
                          "-e", "1", "-d", "0.01", "-o", tmp_path / "out", "--quiet",
                          "--json", "--seed", "1")
    assert code == 0, err
    from veil.geo.temporal import MarkovModel
    from veil.geo.temporal.release import trajectory_budget_bound

    grid = MarkovModel.load(mp).grid
    step = trajectory_budget_bound(grid, epsilon=1.0, n_steps=1)  # 1 + public float64 bound
    total = trajectory_budget_bound(grid, epsilon=1.0, n_steps=96)
    assert 1.0 < step < 1.0 + 1e-6 and total == pytest.approx(96 * step, rel=1e-12)
    man = json.loads((tmp_path / "out" / "_manifest.json").read_text())
    assert man["epsilon_per_user"] == pytest.approx(total, rel=1e-12)
    assert man["epsilon_per_timestamp"] == step
    assert man["max_timestamps_per_user"] == 96 and man["protects"] == "user"
    assert json.loads(out)["epsilon_per_user"] == pytest.approx(total, rel=1e-12)
    assert err == ""  # --quiet: no status line
    (ds,) = show(capsys)
    assert [(e["amount"], e["unit"], e["state"]) for e in ds["entries"]] == \
        [(pytest.approx(total, rel=1e-12), "user", "committed")]
    # the single-trajectory command charges the same T x epsilon and says so in its sidecar
    one = table.filter(pa.compute.equal(table["user"], 0))
    pcsv.write_csv(pa.table({"time": one["t"], "lat": one["lat"], "lon": one["lon"]}),
                   tmp_path / "one.csv")
    code, out, err = veil(capsys, "trajectory", "release", tmp_path / "one.csv", "-e", "1",
                          "-d", "0.01", "--model", mp, "-o", tmp_path / "rel.csv")
    assert code == 0, err
    meta = json.loads((tmp_path / "rel.csv.meta.json").read_text())
    # the sidecar states the release's own guarantee (96 + its float64 correction), the
    # ledger reserved the public bound before the release: never less
    assert 96.0 < meta["budget"]["epsilon"] <= total and meta["protects"] == "user"
    entries = {d["label"]: d for d in show(capsys)}
    assert [e["amount"] for e in entries[str(tmp_path / "one.csv")]["entries"]] == \
        [pytest.approx(total, rel=1e-12)]


# ----------------------------------------------------------------------------- defect 2
def test_d2_noise_counts_consults_the_ledger(tmp_path, capsys, hist):
    assert _noise(capsys, hist, tmp_path / "n1.csv")[0] == 0
    code, out, err = _noise(capsys, hist, tmp_path / "n2.csv")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "already had epsilon 1 spent by 1 release" in err
    assert f"veil budget set {hist} --total" in err and "--spend-again" in err
    assert not (tmp_path / "n2.csv").exists() and not (tmp_path / "n2.csv.meta.json").exists()


@pytest.mark.parametrize("disguise", ["copy", "touch", "symlink", "rename", "parquet",
                                      "shuffled-renamed-columns", "tsv", "moved-output"])
def test_d2_a_disguised_copy_is_the_same_dataset(tmp_path, capsys, hist, disguise):
    assert _noise(capsys, hist, tmp_path / "n1.csv")[0] == 0
    other = tmp_path / "sub"
    other.mkdir()
    extra: list[str] = []
    if disguise == "copy":
        twin = other / "census_copy.csv"
        shutil.copy(hist, twin)
    elif disguise == "touch":
        twin = hist
        os.utime(hist, (time.time() + 100, time.time() + 100))
    elif disguise == "symlink":
        twin = other / "link.csv"
        twin.symlink_to(hist)
    elif disguise == "rename":
        twin = other / "renamed.csv"
        hist.rename(twin)
    elif disguise == "parquet":
        import duckdb

        twin = other / "census.parquet"
        duckdb.sql(f"COPY (SELECT * FROM read_csv('{hist}')) TO '{twin}' (FORMAT parquet)")
    elif disguise == "tsv":
        twin = other / "census.tsv"
        twin.write_text(hist.read_text().replace(",", "\t"))
    elif disguise == "moved-output":  # publish n1.csv, move it away, release into n1.csv again
        twin = hist
        for name in ("n1.csv", "n1.csv.meta.json"):
            (tmp_path / name).rename(other / name)
        code, _, err = _noise(capsys, hist, tmp_path / "n1.csv")
        assert code == 2 and "already had epsilon 1 spent" in err
        assert not (tmp_path / "n1.csv").exists()
    else:
        import pandas as pd

        twin = other / "shuffled.csv"
        df = pd.read_csv(hist).sample(frac=1, random_state=1)
        df.rename(columns={"count": "n", "bin": "label"})[["n", "label"]].to_csv(twin,
                                                                                 index=False)
        extra = ["-c", "n"]
    argv = ["noise", "counts", twin, "-c", "count", "-e", "1", "-o", other / "n2.csv"]
    if extra:
        argv[4] = "n"
    code, out, err = veil(capsys, *argv)
    assert code == 2, (disguise, err)
    assert "already had epsilon 1 spent" in err
    assert not (other / "n2.csv").exists()


def test_d2_spend_again_is_capped_by_the_declared_total(tmp_path, capsys, hist):
    # without a declared total, --spend-again is not enough
    assert _noise(capsys, hist, tmp_path / "n0.csv")[0] == 0
    code, _, err = _noise(capsys, hist, tmp_path / "n1.csv", "--spend-again")
    assert code == 2 and "no total budget is declared" in err
    code, out, err = veil(capsys, "budget", "set", hist, "--total", "2.5")
    assert code == 0 and "total 2.5" in err and out == ""  # a status line (docs/cli.md)
    # the averaging attack: 20 re-runs at epsilon 1 with --spend-again; only 1 more fits
    made = []
    for i in range(1, 21):
        code, _, err = _noise(capsys, hist, tmp_path / f"n{i}.csv", "--spend-again")
        made.append(code == 0)
    assert made == [True] + [False] * 19
    assert "would exceed the total by 0.5" in err and "--total 3 --raise" in err
    assert "2 of the declared total 2.5 is already spent" in err
    assert sorted(p.name for p in tmp_path.glob("n*.csv")) == ["n0.csv", "n1.csv"]
    # raising a total needs --raise; then the release fits
    code, _, err = veil(capsys, "budget", "set", hist, "--total", "3")
    assert code == 2 and "--raise" in err
    assert veil(capsys, "budget", "set", hist, "--total", "3", "--raise")[0] == 0
    assert _noise(capsys, hist, tmp_path / "n2.csv", "--spend-again")[0] == 0
    (ds,) = show(capsys)
    assert ds["spent"]["epsilon"] == 3.0 and ds["remaining"]["epsilon"] == 0.0
    assert [e["state"] for e in ds["entries"]] == ["committed"] * 3
    assert any("--total 3" in ev["what"] for ev in ds["events"])


def test_d2_another_ledger_does_not_start_from_zero(tmp_path, capsys, hist):
    assert _noise(capsys, hist, tmp_path / "n1.csv")[0] == 0
    other = tmp_path / "other.sqlite"
    code, _, err = _noise(capsys, hist, tmp_path / "n2.csv", "--ledger", other)
    assert code == 2 and "already has budget recorded in ledger" in err
    assert "one dataset, one ledger" in err and not (tmp_path / "n2.csv").exists()
    # the other way round: spend recorded in another ledger first, then the default refuses
    fresh = tmp_path / "fresh.csv"
    fresh.write_text("count\n1\n2\n3\n")
    assert _noise(capsys, fresh, tmp_path / "f1.csv", "--ledger", other)[0] == 0
    code, _, err = _noise(capsys, fresh, tmp_path / "f2.csv")
    assert code == 2 and str(other) in err
    # $VEIL_LEDGER is the same as --ledger
    os.environ["VEIL_LEDGER"] = str(tmp_path / "env.sqlite")
    try:
        code, _, err = _noise(capsys, hist, tmp_path / "n3.csv")
    finally:
        del os.environ["VEIL_LEDGER"]
    assert code == 2 and "already has budget recorded in ledger" in err


def _checkins(path: Path, users=50, n=2000, seed=0):
    g = np.random.default_rng(seed)
    pq.write_table(pa.table({"person": g.integers(0, users, n).astype(str),
                             "cat": g.choice(["a", "b", "c"], n)}), path)
    return path


def test_d2_batch_moving_the_output_or_converting_the_input_is_refused(tmp_path, capsys):
    import duckdb

    inp = _checkins(tmp_path / "c.parquet")
    args = ["--categories", "a,b", "-e", "0.5", "--user-column", "person",
            "--category-column", "cat", "--quiet"]
    assert veil(capsys, "batch", "counts", inp, "-o", tmp_path / "out", *args)[0] == 0
    (tmp_path / "out").rename(tmp_path / "published")  # move the output away, run again
    code, _, err = veil(capsys, "batch", "counts", inp, "-o", tmp_path / "out", *args)
    assert code == 2 and "already had epsilon 0.5 spent" in err
    assert not (tmp_path / "out").exists()
    csv = tmp_path / "as.csv"
    duckdb.sql(f"COPY (SELECT * FROM '{inp}') TO '{csv}' (HEADER)")
    code, _, err = veil(capsys, "batch", "counts", csv, "-o", tmp_path / "o2", *args)
    assert code == 2 and "already had epsilon 0.5 spent" in err
    # a column extracted into a new file is linked to the dataset it came from
    duckdb.sql(f"COPY (SELECT person AS who, cat AS kind, 1 AS x FROM '{inp}') "
               f"TO '{tmp_path / 'derived.parquet'}' (FORMAT parquet)")
    code, _, err = veil(capsys, "batch", "counts", tmp_path / "derived.parquet", "-o",
                        tmp_path / "o3", "--categories", "a,b", "-e", "0.5", "--user-column",
                        "who", "--category-column", "kind", "--quiet")
    assert code == 2 and "already had epsilon 0.5 spent" in err


# ----------------------------------------------------------------------------- defect 3
def test_d3_a_failed_write_spends_nothing(tmp_path, capsys, hist, monkeypatch):
    import errno

    import veil.io.write as W

    def disk_full(a, b):
        raise OSError(errno.ENOSPC, "No space left on device")

    with monkeypatch.context() as m:
        m.setattr(W.os, "replace", disk_full)
        code, _, err = _noise(capsys, hist, tmp_path / "n.csv")
    assert code == 2 and "No space left" in err
    assert not list(tmp_path.glob("n.csv*")) and not list(tmp_path.glob(".veil-tmp*"))
    (ds,) = show(capsys)
    assert ds["spent"]["epsilon"] == 0 and ds["reserved"]["epsilon"] == 0
    assert [e["state"] for e in ds["entries"]] == ["released"]
    # the next correct run is a first release (no --spend-again needed)
    assert _noise(capsys, hist, tmp_path / "n.csv")[0] == 0


def test_d3_batch_that_cannot_create_its_output_spends_nothing(tmp_path, capsys):
    inp = _checkins(tmp_path / "c.parquet")
    (tmp_path / "afile").write_text("not a folder")
    args = ["--categories", "a,b", "-e", "0.5", "--user-column", "person",
            "--category-column", "cat", "--quiet"]
    code, _, err = veil(capsys, "batch", "counts", inp, "-o", tmp_path / "afile" / "out", *args)
    assert code == 2
    assert veil(capsys, "batch", "counts", inp, "-o", tmp_path / "out", *args)[0] == 0
    (ds,) = show(capsys)
    assert ds["spent"]["epsilon"] == 0.5 and ds["reserved"]["epsilon"] == 0


_HANG = """
import sys, time
sys.path.insert(0, {src!r})
import veil.io.write as W
import veil.ledger as L
real_replace, real_commit = W.os.replace, L.Ledger.commit
def hang(*a, **k):
    open({flag!r}, "w").close()
    time.sleep(600)
if {where!r} == "write":
    W.os.replace = hang                      # killed while writing: no output exists
else:
    L.Ledger.commit = hang                   # killed after writing, before the commit
from veil.cli import main
main(["noise", "counts", {inp!r}, "-c", "count", "-e", "1", "-o", {out!r}])
"""


@pytest.mark.parametrize("where", ["write", "commit"])
def test_a_crash_leaves_a_reservation_that_budget_show_and_release_handle(tmp_path, capsys,
                                                                          hist, where):
    flag, out = tmp_path / "flag", tmp_path / "n.csv"
    script = tmp_path / "run.py"
    script.write_text(_HANG.format(src=SRC, flag=str(flag), where=where, inp=str(hist),
                                   out=str(out)))
    proc = subprocess.Popen([sys.executable, str(script)], env=dict(os.environ))
    deadline = time.time() + 120
    while not flag.exists() and time.time() < deadline and proc.poll() is None:
        time.sleep(0.05)
    assert flag.exists(), "the run never reached the point of the crash"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    (ds,) = show(capsys)
    assert ds["reserved"]["epsilon"] == 1.0 and ds["spent"]["epsilon"] == 0
    (entry,) = ds["entries"]
    assert entry["state"] == "reserved"
    code, text, _ = veil(capsys, "budget", "show", hist)
    assert "RESERVED" in text and f"veil budget release {entry['id']}" in text
    # the reservation still counts: a new release is refused until it is resolved
    code, _, err = _noise(capsys, hist, tmp_path / "m.csv")
    assert code == 2 and "reserved by runs that did not finish" in err
    if where == "commit":  # the output exists: it may have been published
        assert out.exists()
        code, _, err = veil(capsys, "budget", "release", entry["id"])
        assert code == 2 and "still exists" in err
        out.unlink()
        (tmp_path / "n.csv.meta.json").unlink()
    else:  # killed before the rename: the complete release sits in its temporary file
        left = sorted(tmp_path.glob(".veil-tmp-n.csv.*"))
        assert left and not out.exists()
        code, _, err = veil(capsys, "budget", "release", entry["id"])
        assert code == 2 and "temporary file of its release" in err, err
        for p in tmp_path.glob(".veil-tmp-n.csv*"):
            p.unlink()
    code, text, err = veil(capsys, "budget", "release", entry["id"])
    assert code == 0 and "available again" in err and text == "", err
    code, _, err = veil(capsys, "budget", "release", entry["id"])  # idempotent
    assert code == 0
    assert _noise(capsys, hist, tmp_path / "m.csv")[0] == 0
    (ds,) = show(capsys)
    assert ds["spent"]["epsilon"] == 1.0 and ds["reserved"]["epsilon"] == 0


def test_committed_spend_never_comes_back(tmp_path, capsys, hist):
    assert _noise(capsys, hist, tmp_path / "n.csv")[0] == 0
    (ds,) = show(capsys)
    (tmp_path / "n.csv").unlink()
    code, _, err = veil(capsys, "budget", "release", ds["entries"][0]["id"])
    assert code == 2 and "do not renew" in err


# ----------------------------------------------------------------------------- defect 5
@pytest.fixture
def points(tmp_path):
    p = tmp_path / "points.csv"
    g = np.random.default_rng(1)
    lat, lon = 40.7 + g.uniform(0, 0.05, 30), -74.0 + g.uniform(0, 0.05, 30)
    p.write_text("lat,lon,id\n" + "".join(f"{a},{b},{i}\n" for i, (a, b) in
                                          enumerate(zip(lat, lon))))
    return p


def _refused_and_intact(code, err, path, before, what):
    assert code == 2 and what in err, err
    assert path.read_bytes() == before
    assert len(err.strip().splitlines()) == 1


def test_d5_location_obfuscate_never_writes_over_its_input(tmp_path, capsys, points):
    before = points.read_bytes()
    for extra in ([], ["--force"]):
        code, _, err = veil(capsys, "location", "obfuscate", points, "-e", "0.01", "-o", points,
                            *extra)
        _refused_and_intact(code, err, points, before, "veil never writes over one of its inputs")
    # the same file through another path, and a hard link
    code, _, err = veil(capsys, "location", "obfuscate", points, "-e", "0.01", "-o",
                        tmp_path / "." / "points.csv", "--force")
    _refused_and_intact(code, err, points, before, "never writes over")
    os.link(points, tmp_path / "hard.csv")
    code, _, err = veil(capsys, "location", "obfuscate", points, "-e", "0.01", "-o",
                        tmp_path / "hard.csv", "--force")
    _refused_and_intact(code, err, points, before, "hard link")
    assert show(capsys) == []  # refused before anything was reserved


def test_d5_histogram_publish_never_writes_over_its_input(tmp_path, capsys):
    census = tmp_path / "census.csv"
    census.write_text("age\n" + "".join(f"{a}\n" for a in range(20, 80)))
    before = census.read_bytes()
    code, _, err = veil(capsys, "histogram", "publish", census, "-c", "age", "--bins", "0:100:10",
                        "-e", "0.5", "-o", census, "--force")
    _refused_and_intact(code, err, census, before, "never writes over")
    # an output whose sidecar would land on the input
    side_in = tmp_path / "ages.csv.meta.json"  # records as JSON, named like a sidecar
    side_in.write_text(json.dumps([{"age": a} for a in range(20, 80)]))
    side_before = side_in.read_bytes()
    code, _, err = veil(capsys, "histogram", "publish", side_in, "-c", "age", "--bins",
                        "0:100:10", "-e", "0.5", "-o", tmp_path / "ages.csv", "--force")
    _refused_and_intact(code, err, side_in, side_before, "never writes over")
    assert not (tmp_path / "ages.csv").exists()


def test_d5_existing_outputs_need_force_and_links_are_refused(tmp_path, capsys, points):
    out = tmp_path / "noisy.csv"
    assert veil(capsys, "location", "obfuscate", points, "-e", "0.01", "-o", out)[0] == 0
    first = out.read_bytes()
    assert veil(capsys, "budget", "set", points, "--total-per-metre", "0.05")[0] == 0
    code, _, err = veil(capsys, "location", "obfuscate", points, "-e", "0.01", "-o", out,
                        "--spend-again")
    assert code == 2 and "already exists; pass --force" in err and out.read_bytes() == first
    code, _, err = veil(capsys, "location", "obfuscate", points, "-e", "0.01", "-o", out,
                        "--spend-again", "--force")
    assert code == 0 and out.read_bytes() != first
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    (tmp_path / "link.csv").symlink_to(victim)
    for extra in ([], ["--force"]):
        code, _, err = veil(capsys, "location", "obfuscate", points, "-e", "0.01", "-o",
                            tmp_path / "link.csv", "--spend-again", *extra)
        assert code == 2 and "symbolic link" in err
    assert victim.read_text() == "keep me" and (tmp_path / "link.csv").is_symlink()
    assert not list(tmp_path.glob(".veil-tmp*"))
    (ds,) = show(capsys)
    # two releases of epsilon 0.01 plus the float64 snapping correction each (what they state)
    assert 0.02 < ds["spent"]["epsilon_per_metre"] == pytest.approx(0.02, rel=1e-4)
    assert ds["totals"]["epsilon_per_metre"] == 0.05


@pytest.mark.parametrize("argv", [
    ["table", "anonymize", "{inp}", "--k", "2", "--qi", "age", "-o", "{inp}", "--force"],
    ["visits", "hide", "{inp}", "--sensitive", "b", "-o", "{inp}", "--force"],
    ["trajectory", "model", "{inp}", "--grid", "0,0,1,1,2,2", "-o", "{inp}", "--force"],
])
def test_d5_every_writer_protects_its_input(tmp_path, capsys, argv):
    inp = tmp_path / "in.csv"
    inp.write_text("user,category,age,time,lat,lon\n" + "".join(
        f"u{i % 3},{'ab'[i % 2]},{20 + i % 4},{i},{0.1 + i / 100},{0.2 + i / 100}\n"
        for i in range(12)))
    before = inp.read_bytes()
    code, _, err = veil(capsys, *[a.format(inp=inp) for a in argv])
    _refused_and_intact(code, err, inp, before, "input")


# ----------------------------------------------------------------------------- defect 6
@pytest.mark.parametrize("eps", ["1e15", "1e300"])
def test_d6_huge_epsilon_on_noise_counts(tmp_path, capsys, hist, eps):
    code, _, err = _noise(capsys, hist, tmp_path / "o.csv", eps=eps)
    assert code == 2 and "must be at most 1e+12" in err and len(err.strip().splitlines()) == 1
    assert not list(tmp_path.glob("o.csv*"))


@pytest.mark.parametrize("eps", ["1e17"])
def test_d6_huge_epsilon_is_a_clear_error(tmp_path, capsys, hist, points, eps):
    census = tmp_path / "ages.csv"
    census.write_text("age\n30\n40\n")
    mp, table = _walk_model(tmp_path, steps=4, users=1)
    track = tmp_path / "track.csv"
    track.write_text("time,lat,lon\n" + "".join(
        f"{t},{la},{lo}\n" for t, la, lo in zip(table["t"].to_pylist(), table["lat"].to_pylist(),
                                                table["lon"].to_pylist())))
    cmds = [["noise", "counts", hist, "-c", "count", "-e", eps, "-o", tmp_path / "o.csv"],
            ["histogram", "publish", census, "-c", "age", "--bins", "0:100:10", "-e", eps,
             "-o", tmp_path / "o.csv"],
            ["location", "obfuscate", points, "-e", eps, "-o", tmp_path / "o.csv"],
            ["trajectory", "release", track, "-e", eps, "-d", "0.1", "--model", mp, "-o",
             tmp_path / "o.csv"],
            ["batch", "counts", _checkins(tmp_path / "c.parquet"), "-o", tmp_path / "out",
             "--categories", "a", "-e", eps, "--user-column", "person", "--category-column",
             "cat", "--quiet"]]
    for argv in cmds:
        code, _, err = veil(capsys, *argv)
        assert code == 2, (argv[:2], err)
        assert "must be at most 1e+12" in err and len(err.strip().splitlines()) == 1, err
    assert not list(tmp_path.glob("o.csv*")) and not (tmp_path / "out").exists()
    assert show(capsys) == []


def test_d6_the_limit_is_in_the_one_epsilon_check():
    from veil import GeoDP, PureDP
    from veil.errors import ParameterError
    from veil.mechanisms import geometric_mechanism
    from veil.validation import EPSILON_MAX, check_epsilon

    assert check_epsilon(EPSILON_MAX) == EPSILON_MAX
    for bad in (1e15, np.float64(1e17), 10 * EPSILON_MAX):
        with pytest.raises(ParameterError, match="at most 1e\\+12"):
            check_epsilon(bad)
        with pytest.raises(ParameterError, match="at most"):
            PureDP(bad)
        with pytest.raises(ParameterError, match="at most"):
            GeoDP(bad)
        with pytest.raises(ParameterError, match="at most"):
            geometric_mechanism([1, 2], epsilon=bad)
    # the largest allowed epsilon still runs exactly (no overflow in the exact sampler)
    assert geometric_mechanism([5, 7], epsilon=EPSILON_MAX).value.tolist() == [5, 7]


# ----------------------------------------------------------------------------- conventions
def test_every_command_that_writes_a_file_has_force():
    """--force on every command with an output option; batch commands write a folder with
    its own rules (a complete job is never overwritten: --resume or a new folder)."""
    import typer

    from veil.cli import app

    def walk(cmd, path):
        if hasattr(cmd, "commands"):
            for name, sub in cmd.commands.items():
                yield from walk(sub, path + [name])
        else:
            yield " ".join(path), cmd

    writers, missing = [], []
    for name, cmd in walk(typer.main.get_command(app), []):
        opts = {o for p in cmd.params for o in getattr(p, "opts", [])}
        if opts & {"-o", "--output", "--plot", "--report"}:
            writers.append(name)
            if "--force" not in opts:
                missing.append(name)
    assert len(writers) >= 15
    assert sorted(missing) == ["batch counts", "batch trajectories", "batch visits"]


def test_batch_counts_max_records_bounds_every_user(tmp_path, capsys):
    """A user with 10^4 check-ins contributes at most m; epsilon per user, noise m/epsilon."""
    g = np.random.default_rng(2)
    people = np.concatenate([np.repeat(np.arange(20).astype(str), 2), np.full(10_000, "heavy")])
    cats = np.concatenate([g.choice(["a", "b"], 40), g.choice(["a", "b"], 10_000)])
    pq.write_table(pa.table({"person": people, "cat": cats}), tmp_path / "c.parquet")
    base = ["batch", "counts", tmp_path / "c.parquet", "--categories", "a,b", "--user-column",
            "person", "--category-column", "cat", "--max-records", "3", "--quiet", "--seed", "4"]
    # epsilon large enough that the noise is exactly 0: the counts are the bounded ones
    code, out, err = veil(capsys, *base, "-o", tmp_path / "exact", "-e", "1e11")
    assert code == 0, err
    import duckdb

    got = dict(duckdb.sql(f"SELECT user, sum(noisy_count) FROM read_parquet("
                          f"'{tmp_path}/exact/part-*.parquet', union_by_name = true) "
                          "GROUP BY user").fetchall())
    assert got["heavy"] == 3 and all(v == 2 for k, v in got.items() if k != "heavy")
    man = json.loads((tmp_path / "exact" / "_manifest.json").read_text())
    assert man["protects"] == "user" and man["job"]["params"]["max_records"] == 3
    (ds,) = show(capsys)
    assert ds["entries"][0]["unit"] == "user"


def test_map_publish_is_charged_per_person_and_refused_on_a_copy(tmp_path, capsys):
    """`veil map publish` (a DP command added after the ledger) charges the input's content
    identity: a renamed copy of the same points is refused once the declared total is spent."""
    g = np.random.default_rng(3)
    pts = tmp_path / "pings.csv"
    pts.write_text("user,lat,lon\n" + "".join(
        f"u{u},{la:.5f},{lo:.5f}\n" for u, la, lo in zip(g.integers(0, 40, 400),
                                                        g.uniform(40.70, 40.80, 400),
                                                        g.uniform(-74.00, -73.90, 400))))
    base = ["map", "publish", "--user-column", "user", "--max-points", "5", "--bbox",
            "40.7,-74.0,40.8,-73.9", "--grid", "8x8", "-e", "0.5", "--method", "identity"]
    assert veil(capsys, "budget", "set", pts, "--total", "0.5")[0] == 0
    code, _, err = veil(capsys, *base[:2], pts, *base[2:], "-o", tmp_path / "m1.csv")
    assert code == 0, err
    (ds,) = show(capsys)
    assert [(e["amount"], e["unit"], e["state"]) for e in ds["entries"]] == \
        [(0.5, "user", "committed")]
    copy = tmp_path / "renamed.csv"
    shutil.copy(pts, copy)
    code, out, err = veil(capsys, *base[:2], copy, *base[2:], "-o", tmp_path / "m2.csv")
    assert code == 2 and "total" in err, err
    assert not (tmp_path / "m2.csv").exists() and not (tmp_path / "m2.csv.meta.json").exists()
    # an existing output is refused without --force, replaced with it (budget permitting)
    code, _, err = veil(capsys, *base[:2], pts, *base[2:], "-o", tmp_path / "m1.csv")
    assert code == 2 and "--force" in err, err


# ------------------------------------------------------------- the ledger is not an output
@pytest.mark.parametrize("which", ["data", "sidecar"])
def test_the_ledger_is_never_an_output(tmp_path, capsys, hist, which):
    """`--ledger out.csv -o out.csv --force` wrote the release, then the ledger (holding the
    charge) was replaced by it: the next release of the dataset started from zero."""
    out = tmp_path / "out.csv"
    ledger = out if which == "data" else tmp_path / "out.csv.meta.json"
    code, _, err = _noise(capsys, hist, out, "--ledger", ledger)
    assert code == 2 and "--ledger" in err and "also an output" in err, err
    assert not out.exists() and not ledger.exists()
    # a ledger with spend, then an attempt to write over it with --force
    assert _noise(capsys, hist, tmp_path / "first.csv", "--ledger", ledger)[0] == 0
    before = ledger.read_bytes()
    code, _, err = _noise(capsys, hist, out, "--ledger", ledger, "--force", "--spend-again")
    assert code == 2 and "also an output" in err, err
    assert ledger.read_bytes() == before
    (ds,) = show(capsys, "--ledger", ledger)
    assert ds["spent"]["epsilon"] == 1.0


def test_budget_release_matches_an_id_not_a_pattern(tmp_path, capsys, hist):
    """`veil budget release ""` (or "_", "%": SQL LIKE patterns) released any reservation."""
    from veil.identity import identity_of_file
    from veil.ledger import Ledger

    ledger = tmp_path / "l.sqlite"
    with Ledger(ledger) as led:
        r = led.reserve(identity_of_file(hist), amount=0.5, unit="record", command="test",
                        label="census")
    for bad in ("", "_", "%", "%%%%", r.id[:3]):
        code, _, err = veil(capsys, "budget", "release", bad, "--ledger", ledger)
        assert code == 2 and ("reservation id" in err or "no ledger entries match" in err), \
            (bad, err)
    (ds,) = show(capsys, "--ledger", ledger)
    assert ds["reserved"]["epsilon"] == 0.5
    code, _, err = veil(capsys, "budget", "release", r.id[:6], "--ledger", ledger)
    assert code == 0 and "available again" in err, err
    code, _, err = veil(capsys, "budget", "release", r.id, "--ledger", ledger)
    assert code == 0 and "already released" in err and "available again" not in err, err


def test_an_unreadable_registered_ledger_is_a_warning(tmp_path, capsys, hist):
    """A registered ledger that cannot be read was skipped silently: the spend recorded
    there was not checked and nothing said so."""
    other = tmp_path / "other.sqlite"
    assert _noise(capsys, hist, tmp_path / "a.csv", "--ledger", other)[0] == 0
    other.write_text("garbage")
    with pytest.warns(Warning, match="other.sqlite .* cannot be read.*not checked"):
        code, _, err = _noise(capsys, hist, tmp_path / "b.csv")
    assert code == 0, err
