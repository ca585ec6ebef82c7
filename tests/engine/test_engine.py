"""The batch engine: correctness, determinism, resume after faults, accounting, bad input."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from veil.engine import Job, run_job
from veil.errors import BudgetExceededError, DataError, ParameterError

sys.path.insert(0, str(Path(__file__).parent))
import helpers  # noqa: E402,F401  (registers the test tasks)
from helpers import work_of  # noqa: E402

SRC = str(Path(__file__).resolve().parents[2] / "src")
CATS = ["a", "b", "c"]


@pytest.fixture(autouse=True)
def _ledger(tmp_path, monkeypatch):
    monkeypatch.setenv("VEIL_LEDGER", str(tmp_path / "ledger.json"))


def _checkins(path: Path, n=30_000, users=2_000, seed=0, total=100.0):
    g = np.random.default_rng(seed)
    pq.write_table(pa.table({"uid": np.char.add("u", g.integers(0, users, n).astype(str)),
                             "category": g.choice(["a", "b", "c", "d"], n)}), path)
    if total:  # the tests release the same users several times (with spend_again)
        _declare(path, total)
    return path


def _declare(path, total):
    """`veil budget set PATH --total TOTAL` in the test's ledger."""
    from veil.identity import identity_of_files
    from veil.ledger import Ledger

    with Ledger(os.environ["VEIL_LEDGER"]) as led:
        led.set_total(identity_of_files([str(path)]), total=total, label=str(path))


def _rows(out: Path):
    return duckdb.sql(f"SELECT * FROM read_parquet('{out}/part-*.parquet') "
                      "ORDER BY ALL").fetchall()


def _job(inp, out, **kw):
    kw.setdefault("params", {"categories": CATS, "epsilon": 1.0})
    kw.setdefault("user_column", "uid")
    kw.setdefault("progress", False)
    return Job(inp, out, kw.pop("task", "count-noise"), **kw)


def test_per_user_results_match_direct_computation(tmp_path):
    inp = _checkins(tmp_path / "in.parquet")
    res = run_job(_job(inp, tmp_path / "out", task="test-row-count", params={}, buckets=7))
    got = {u: (r, d) for u, r, d in _rows(tmp_path / "out")}
    want = duckdb.sql(f"SELECT uid, count(*), count(DISTINCT category) FROM '{inp}' "
                      "GROUP BY uid").fetchall()
    assert got == {u: (r, d) for u, r, d in want}
    assert res.users == len(want) and res.rows_in == 30_000
    man = json.loads((tmp_path / "out" / "_manifest.json").read_text())
    assert man["status"] == "complete" and len(man["parts"]) == 7
    # the published folder holds the parts and the manifest only; the private work folder
    # (staging with raw rows, the key) is gone
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == \
        ["_manifest.json"] + [f"part-{b:05d}.parquet" for b in range(7)]
    assert not work_of(tmp_path / "out").exists()


def test_same_seed_same_output_across_workers_and_engines(tmp_path):
    inp = _checkins(tmp_path / "in.parquet")
    run_job(_job(inp, tmp_path / "o1", seed=5, workers=1))
    run_job(_job(inp, tmp_path / "o2", seed=5, workers=2, spend_again=True))
    a, b = _rows(tmp_path / "o1"), _rows(tmp_path / "o2")
    assert a == b and len(a) == 4 * 2_000
    noisy = np.array([r[2] for r in a])
    assert noisy.std() > 0  # noise was added


def test_unseeded_runs_differ(tmp_path):
    inp = _checkins(tmp_path / "in.parquet")
    run_job(_job(inp, tmp_path / "o1"))
    run_job(_job(inp, tmp_path / "o2", spend_again=True))
    assert _rows(tmp_path / "o1") != _rows(tmp_path / "o2")


def test_damaged_unpublished_parts_are_detected_and_redone(tmp_path):
    """A crash leaves a truncated part, a missing marker and a stray temp file in the private
    work folder: resume redoes exactly those buckets, to the uninterrupted output."""
    inp = _checkins(tmp_path / "in.parquet")
    ref = tmp_path / "ref"
    run_job(_job(inp, ref, seed=1, buckets=8))
    out = tmp_path / "out"
    env = {"VEIL_TEST_FAULT": "verify"}  # killed after every bucket ran, before publishing
    script = tmp_path / "run.py"
    script.write_text(_RUN_SCRIPT.format(src=SRC, tests=str(Path(__file__).parent),
                                         ledger=str(tmp_path / "ledger.json"), inp=str(inp),
                                         out=str(out), task="count-noise",
                                         params={"categories": CATS, "epsilon": 1.0},
                                         buckets=8, workers=1))
    r = subprocess.run([sys.executable, str(script)], env=dict(os.environ, **env))
    assert r.returncode == -signal.SIGKILL
    assert not out.exists()  # nothing published before every part is verified
    work = work_of(out)
    p3 = work / "parts" / "part-00003.parquet"
    p3.write_bytes(p3.read_bytes()[:50])
    (work / "markers" / "part-00005.json").unlink()
    (work / "tmp" / ".part-00006.parquet.tmp-999").write_bytes(b"partial")
    with pytest.raises(ParameterError, match="--resume"):
        run_job(_job(inp, out, seed=1, buckets=8, spend_again=True))
    res = run_job(_job(inp, out, seed=1, buckets=8, resume=True))
    assert res.buckets_run == 2
    assert _rows(out) == _rows(ref)
    assert not work.exists()


_RUN_SCRIPT = """
import sys, os
sys.path.insert(0, {src!r})
sys.path.insert(0, {tests!r})
os.environ["VEIL_LEDGER"] = {ledger!r}
import helpers
from veil.engine import Job, run_job
if __name__ == "__main__":
    run_job(Job({inp!r}, {out!r}, {task!r}, params={params!r}, user_column="uid", seed=1,
            buckets={buckets}, workers={workers}, resume=True, spend_again=True,
            progress=False))
"""


def test_ledger_refuses_second_release_without_spend_again(tmp_path):
    inp = _checkins(tmp_path / "in.parquet")
    run_job(_job(inp, tmp_path / "o1"))
    with pytest.raises(BudgetExceededError, match="--spend-again"):
        run_job(_job(inp, tmp_path / "o2"))
    assert not (tmp_path / "o2").exists()
    with pytest.raises(ParameterError, match="already complete"):
        run_job(_job(inp, tmp_path / "o1"))
    res = run_job(_job(inp, tmp_path / "o2", spend_again=True))
    assert res.epsilon_per_user == 1.0
    from veil.ledger import Ledger

    with Ledger(tmp_path / "ledger.json") as led:
        (ds,) = led.datasets()
        entries = led.summary(ds).entries
    assert [(e["amount"], e["state"]) for e in entries] == [(1.0, "committed")] * 2
    man = json.loads((tmp_path / "o2" / "_manifest.json").read_text())
    assert man["epsilon_per_user"] == 1.0


def test_bad_inputs_fail_clearly_and_overwrite_nothing(tmp_path):
    inp = _checkins(tmp_path / "in.parquet")
    with pytest.raises(DataError, match="missing column.*'user'"):
        run_job(_job(inp, tmp_path / "o", user_column="user"))
    assert not (tmp_path / "o" / "_manifest.json").exists()
    # mixed schemas across partitions
    part = tmp_path / "parts"
    part.mkdir()
    pq.write_table(pa.table({"uid": ["x"], "category": ["a"]}), part / "p1.parquet")
    pq.write_table(pa.table({"uid": [1], "category": ["a"]}), part / "p2.parquet")
    with pytest.raises(DataError, match="schema differs"):
        run_job(_job(part, tmp_path / "o3"))
    # an output folder from a different job
    run_job(_job(inp, tmp_path / "o4"))
    before = sorted(p.name for p in (tmp_path / "o4").iterdir())
    with pytest.raises(DataError, match="different job"):
        run_job(_job(inp, tmp_path / "o4", params={"categories": ["a"], "epsilon": 1.0},
                     spend_again=True))
    assert sorted(p.name for p in (tmp_path / "o4").iterdir()) == before
    # a non-empty folder that is not a veil output
    (tmp_path / "o5").mkdir()
    (tmp_path / "o5" / "keep.txt").write_text("mine")
    with pytest.raises(DataError, match="not empty"):
        run_job(_job(inp, tmp_path / "o5", spend_again=True))
    assert (tmp_path / "o5" / "keep.txt").read_text() == "mine"
    with pytest.raises(DataError, match="not found"):
        run_job(_job(tmp_path / "nope.parquet", tmp_path / "o6"))
    with pytest.raises(ParameterError, match="categories"):
        run_job(_job(inp, tmp_path / "o7", params={"categories": [], "epsilon": 1.0}))
    with pytest.raises(ParameterError, match="did you mean"):
        run_job(_job(inp, tmp_path / "o8", task="count-nois"))
    with pytest.raises(ParameterError, match="engine"):
        _job(inp, tmp_path / "o9", engine="spark")


def test_failing_task_leaves_nothing_that_looks_like_a_job(tmp_path):
    """A task that fails on the data fails again on resume: nothing was published, so neither
    the output folder nor the private work folder is left behind."""
    inp = _checkins(tmp_path / "in.parquet")
    for workers in (1, 2):
        with pytest.raises(RuntimeError, match="on purpose"):
            run_job(_job(inp, tmp_path / "o", task="test-boom", params={}, workers=workers))
        assert not (tmp_path / "o").exists()
        assert not work_of(tmp_path / "o").exists()


def test_dask_engine_matches_local(tmp_path):
    inp = _checkins(tmp_path / "in.parquet")
    run_job(_job(inp, tmp_path / "local", seed=4, buckets=6))
    run_job(_job(inp, tmp_path / "dask", seed=4, buckets=6, engine="dask", workers=2,
                 spend_again=True))
    assert _rows(tmp_path / "local") == _rows(tmp_path / "dask")


def test_dask_survives_a_worker_killed_mid_job(tmp_path):
    import threading

    from distributed import Client, LocalCluster

    inp = _checkins(tmp_path / "in.parquet")
    run_job(_job(inp, tmp_path / "ref", task="test-slow-count", params={"sleep": 0.0},
                 buckets=24))
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                           dashboard_address=None)
    try:
        client = Client(cluster)
        errors = []

        def run():
            try:
                run_job(_job(inp, tmp_path / "out", task="test-slow-count",
                             params={"sleep": 0.4}, buckets=24, engine="dask", workers=2,
                             scheduler=cluster.scheduler_address))
            except Exception as exc:  # noqa: BLE001
                errors.append(exc)

        t = threading.Thread(target=run)
        t.start()
        deadline = time.time() + 60
        markers = work_of(tmp_path / "out") / "markers"
        while time.time() < deadline and len(list(markers.glob("part-*.json"))) < 3:
            time.sleep(0.1)
        pids = client.run(os.getpid)
        victim = next(iter(pids.values()))
        os.kill(victim, signal.SIGKILL)  # a worker dies with buckets in flight
        t.join(timeout=180)
        client.close()
    finally:
        cluster.close()
    assert not t.is_alive() and not errors, errors
    assert _rows(tmp_path / "out") == _rows(tmp_path / "ref")


def test_trajectories_task_releases_every_point_once(tmp_path):
    from veil.geo.temporal import MarkovModel, TemporalGrid

    g = TemporalGrid(lon_min=116.30, lat_min=39.85, lon_max=116.45, lat_max=39.98, nx=10, ny=10)
    rng = np.random.default_rng(0)
    walks = []
    for _ in range(30):
        c = [int(rng.integers(0, 100))]
        for _ in range(40):
            x, y = c[-1] % 10, c[-1] // 10
            x = int(np.clip(x + rng.integers(-1, 2), 0, 9))
            y = int(np.clip(y + rng.integers(-1, 2), 0, 9))
            c.append(y * 10 + x)
        walks.append(c)
    model = MarkovModel.from_trajectories(walks, grid=g)
    model_path = tmp_path / "model.npz"
    model.save(model_path)
    latlon = np.concatenate([g.to_latlon(g.centers_m[w]) for w in walks[:12]])
    users = np.repeat(np.arange(12), 41)
    t = np.tile(np.arange(41) * 60, 12)
    order = rng.permutation(users.size)  # the engine sorts by user and time itself
    pq.write_table(pa.table({"user": users[order], "t": t[order], "lat": latlon[order, 0],
                             "lon": latlon[order, 1]}), tmp_path / "traj.parquet")
    _declare(tmp_path / "traj.parquet", 1e4)  # two releases below
    params = {"model": str(model_path), "epsilon": 1.0, "delta": 0.05, "mechanism": "pim"}
    run_job(Job(tmp_path / "traj.parquet", tmp_path / "o1", "trajectories", params=params,
                seed=2, buckets=3, progress=False))
    run_job(Job(tmp_path / "traj.parquet", tmp_path / "o2", "trajectories", params=params,
                seed=2, buckets=3, workers=2, progress=False, spend_again=True))
    a = duckdb.sql(f"SELECT user, t, lon, lat, set_size FROM read_parquet('{tmp_path}/o1/"
                   "part-*.parquet') ORDER BY user, t").fetchall()
    assert a == duckdb.sql(f"SELECT user, t, lon, lat, set_size FROM read_parquet('{tmp_path}/"
                           "o2/part-*.parquet') ORDER BY user, t").fetchall()
    assert len(a) == users.size
    assert sorted({(r[0], r[1]) for r in a}) == sorted(zip(users.tolist(), t.tolist()))
    assert all(r[4] >= 1 for r in a)
    man = json.loads((tmp_path / "o1" / "_manifest.json").read_text())
    # 41 timestamps per user at epsilon 1 each (plus the public float64 bound of each step):
    # 41 per user by composition (issue 14, defect 1)
    from veil.geo.temporal import MarkovModel
    from veil.geo.temporal.release import trajectory_budget_bound

    step = trajectory_budget_bound(MarkovModel.load(model_path).grid, epsilon=1.0, n_steps=1)
    assert 1.0 < step < 1.0 + 1e-6
    assert man["epsilon_per_timestamp"] == step and man["max_timestamps_per_user"] == 41
    assert man["epsilon_per_user"] == pytest.approx(41 * step, rel=1e-12)
    assert man["protects"] == "user"
    with pytest.raises(ParameterError, match="path of a saved model"):
        run_job(Job(tmp_path / "traj.parquet", tmp_path / "o3", "trajectories",
                    params={**params, "model": None}, progress=False))
