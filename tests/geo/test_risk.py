"""Re-identification risk (location, sequence, frequency attacks) and `veil location risk`."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pandas as pd
import pytest

from veil.cli import main
from veil.errors import ParameterError
from veil.geo.risk import cell_sequences, reidentification_risk, risk_before_after
from veil.random import make_rng


def _run(args):
    try:
        main([str(a) for a in args])
    except SystemExit as exc:
        return exc.code or 0
    return 0


def _brute(seqs, attack, k, tol=0.1):
    """Worst case over every piece of knowledge, by enumeration (independent of risk.py)."""
    out = {}
    for u, s in seqs.items():
        best = 0.0
        if attack == "sequence":
            pieces = [tuple(s[list(ix)]) for ix in itertools.combinations(range(len(s)), k)]
        else:
            cells = sorted(set(s.tolist()))
            pieces = list(itertools.combinations(cells, min(k, len(cells))))
        for p in pieces:
            m = []
            for v, t in seqs.items():
                if attack == "location":
                    ok = set(p) <= set(t.tolist())
                elif attack == "frequency":
                    ok = all(abs(int((t == c).sum()) - int((s == c).sum()))
                             <= tol * int((s == c).sum()) for c in p)
                else:
                    it = iter(t.tolist())
                    ok = all(c in it for c in p)   # subsequence test
                if ok:
                    m.append(v)
            if u in m:
                best = max(best, 1 / len(m))
        out[u] = best
    return out


@pytest.mark.parametrize("attack", ["location", "sequence", "frequency"])
@pytest.mark.parametrize("seed", range(3))
def test_risk_matches_brute_force_when_every_piece_is_tried(attack, seed):
    g = make_rng(seed=seed)
    seqs = {f"u{i}": g.integers(0, 5, size=int(g.integers(2, 6))) for i in range(8)}
    want = _brute(seqs, attack, 2)
    got = reidentification_risk(seqs, seqs, attack=attack, k=2, n_knowledge=400,
                                rng=make_rng(seed=seed))
    np.testing.assert_allclose(got.risk, [want[u] for u in got.users])


def test_risk_drops_after_release_and_the_summary_adds_up():
    g = make_rng(seed=4)
    orig = {f"u{i}": g.integers(0, 100, size=30) for i in range(50)}
    released = {u: np.where(g.random(s.size) < 0.7, g.integers(0, 100, s.size), s)
                for u, s in orig.items()}                   # 70 % of the cells replaced
    before, after = risk_before_after(orig, released, k=3, rng=make_rng(seed=1))
    assert before.summary()["mean_risk"] > after.summary()["mean_risk"]
    assert before.summary()["share_unique"] == pytest.approx((before.risk >= 1).mean())
    same, _ = risk_before_after(orig, orig, k=3, rng=make_rng(seed=1))
    np.testing.assert_array_equal(same.risk, before.risk)   # same knowledge both times


def test_cell_sequences_and_bad_parameters():
    s = cell_sequences(["a", "b", "a"], [3.0, 1.0, 2.0], [9, -1, 8])
    assert s["a"].tolist() == [8, 9] and s["b"].size == 0
    with pytest.raises(ParameterError, match="attack"):
        reidentification_risk({"a": np.array([1])}, {"a": np.array([1])}, attack="home")
    with pytest.raises(ParameterError, match="k"):
        reidentification_risk({"a": np.array([1])}, {"a": np.array([1])}, k=0)


def test_trajectory_risk_cli_before_and_after(tmp_path, capsys):
    src = tmp_path / "traj.csv"
    assert _run(["data", "synth", "trajectories", "-o", src, "--users", 20, "--steps", 30,
                 "--seed", 5]) == 0
    df = pd.read_csv(src)
    la0, la1 = np.floor(df["lat"].min() * 100) / 100, np.ceil(df["lat"].max() * 100) / 100
    lo0, lo1 = np.floor(df["lon"].min() * 100) / 100, np.ceil(df["lon"].max() * 100) / 100
    grid = f"{la0},{lo0},{la1},{lo1},12,12"
    model, rel = tmp_path / "m.npz", tmp_path / "rel.csv"
    assert _run(["trajectory", "model", src, "--grid", grid, "-o", model,
                 "--prior-weight", "0.2"]) == 0
    assert _run(["trajectory", "release", src, "-e", 0.5, "-d", 0.1, "--model", model,
                 "-o", rel]) == 0
    capsys.readouterr()
    out = tmp_path / "risk.json"
    assert _run(["trajectory", "risk", src, rel, "--grid", grid, "--attack", "all", "--k", 3,
                 "--seed", 1, "-o", out]) == 0
    cap = capsys.readouterr()
    assert cap.out == "" and f"wrote {out}" in cap.err  # -o: the result goes to the file
    res = json.loads(out.read_text())
    assert _run(["trajectory", "risk", src, rel, "--grid", grid, "--attack", "all", "--k", 3,
                 "--seed", 1]) == 0                     # without -o: on stdout, the same
    assert json.loads(capsys.readouterr().out) == res
    for a in ("location", "sequence", "frequency"):
        b, f = res["attacks"][a]["before"], res["attacks"][a]["after"]
        assert b["n_users"] == f["n_users"] == 20
        assert f["mean_risk"] <= b["mean_risk"]
    assert res["attacks"]["sequence"]["before"]["mean_risk"] > 0.5
    assert _run(["trajectory", "risk", src, rel, "--grid", grid, "--attack", "home"]) == 2


def test_location_risk_cli_matches_the_library(tmp_path, capsys):
    from veil.geo.metrics import adversary_error, planar_laplace_channel
    from veil.geo.geometry import Grid

    prior = tmp_path / "prior.csv"
    g = Grid(0, 0, 2000, 2000, 10, 10)
    from veil.geo.geometry import LocalProjection
    proj = LocalProjection(45.0, 7.0)
    ll = proj.points_to_latlon(g.centers - 1000)
    w = np.arange(1, 101, dtype=float)
    pd.DataFrame({"lat": ll[:, 0], "lon": ll[:, 1], "weight": w}).to_csv(prior, index=False)
    assert _run(["location", "risk", "--epsilon", 0.01, "--prior", prior, "--cell", 200]) == 0
    res = json.loads(capsys.readouterr().out)
    # the same computation by the library, in the prior's own plane
    P2 = LocalProjection(float((ll[:, 0].min() + ll[:, 0].max()) / 2),
                         float((ll[:, 1].min() + ll[:, 1].max()) / 2))
    X = P2.points_to_plane(ll)
    K = planar_laplace_channel(X, X, 200.0 ** 2, 0.01)
    want = adversary_error(K, w / w.sum(), X)
    assert res["adversary_expected_error_m"] == pytest.approx(want["adversary_error"])
    assert res["prior_only_error_m"] == pytest.approx(want["prior_only_error"])
    assert res["user_expected_distance_m"] == pytest.approx(200.0)
    # weaker privacy (larger eps) lets the adversary get closer
    assert _run(["location", "risk", "--epsilon", 0.05, "--prior", prior, "--cell", 200]) == 0
    assert json.loads(capsys.readouterr().out)["adversary_expected_error_m"] < \
        res["adversary_expected_error_m"]
    assert _run(["location", "risk", "--epsilon", 0.01, "--cell", 200]) == 2
    assert _run(["location", "risk", "--epsilon", 0.01, "--region", "45,7,46,8",
                 "--cell", 50]) == 2   # too many cells


def test_cell_sequences_equal_a_per_user_brute_force():
    """One pass over the sorted users (it compared every point with every user: 163 s for
    10^6 points of 2 x 10^4 users, 1.9 s now); the same sequences as filtering user by user."""
    import numpy as np

    from veil.geo.risk import cell_sequences

    g = np.random.default_rng(5)
    u = g.integers(0, 40, 700).astype(str)
    t = g.integers(0, 50, 700).astype(float)  # ties in time keep the file's order
    c = g.integers(-1, 9, 700)
    out = cell_sequences(u, t, c)
    assert list(out) == sorted(set(u.tolist()))
    for name in out:
        m = u == name
        s = c[m][np.argsort(t[m], kind="stable")]
        assert np.array_equal(out[name], s[s >= 0])
    assert cell_sequences([], [], []) == {}


def test_cell_sequences_keep_a_number_and_its_text_apart():
    """A JSON or Parquet user column read as its own values: the number 7 and the text "7"
    are two users (ids were turned into text and merged; a risk then saw one user visiting
    both users' cells)."""
    import numpy as np

    from veil.geo.risk import cell_sequences

    u = np.array([7, "7", 7, "7", "a"], dtype=object)
    out = cell_sequences(u, [0, 0, 1, 1, 0], [1, 2, 3, 4, 5])
    assert len(out) == 3
    assert np.array_equal(out[7], [1, 3]) and np.array_equal(out["7"], [2, 4])
    assert np.array_equal(out["a"], [5])
    assert all(type(k) in (int, str) for k in out)   # plain Python ids, no numpy scalars


def test_trajectory_risk_cli_counts_json_ids_7_and_text_7_as_two_users(tmp_path, capsys):
    import json

    from cli_cases import run_main

    pts = [{"user": 7, "t": i, "lat": 39.9 + 0.001 * i, "lon": 116.3} for i in range(4)]
    pts += [{"user": "7", "t": i, "lat": 39.95, "lon": 116.35 + 0.001 * i} for i in range(4)]
    f = tmp_path / "tracks.json"
    f.write_text(json.dumps(pts))
    code, out, err = run_main(["trajectory", "risk", str(f), "--grid",
                               "39.85,116.25,40.0,116.45,20,20", "--attack", "location",
                               "--seed", "1"], capsys)
    assert code == 0, err
    before = json.loads(out)["attacks"]["location"]["before"]
    assert before["n_users"] == 2, before
