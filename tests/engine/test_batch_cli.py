"""`veil batch` on the command line."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

SRC = str(Path(__file__).resolve().parents[2] / "src")
sys.path.insert(0, str(Path(__file__).parent))
import helpers  # noqa: E402,F401  (registers the test tasks)


def _veil(*args, env_extra=None, cwd=None):
    import os

    env = dict(os.environ, PYTHONPATH=SRC, **(env_extra or {}))
    return subprocess.run([sys.executable, "-m", "veil", *args], capture_output=True, text=True,
                          env=env, cwd=cwd)


def test_batch_counts_end_to_end_and_refusals(tmp_path):
    g = np.random.default_rng(0)
    inp = tmp_path / "c.csv"
    pq.write_table(pa.table({"person": g.integers(0, 300, 3000), "cat": g.choice(["a", "b"], 3000)}),
                   tmp_path / "c.parquet")
    import duckdb

    duckdb.sql(f"COPY (SELECT * FROM '{tmp_path / 'c.parquet'}') TO '{inp}' (HEADER)")
    env = {"VEIL_LEDGER": str(tmp_path / "ledger.json")}
    r = _veil("batch", "counts", str(inp), "-o", str(tmp_path / "out"), "--categories", "a,b",
              "-e", "0.5", "--user-column", "person", "--category-column", "cat", "--quiet",
              env_extra=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "" and r.stderr == ""  # --quiet: no status line, and no data on stdout
    r = _veil("batch", "status", str(tmp_path / "out"), "--json")
    assert json.loads(r.stdout)["state"] == "complete", r.stderr
    man = json.loads((tmp_path / "out" / "_manifest.json").read_text())
    assert man["epsilon_per_user"] == 0.5 and man["status"] == "complete"
    r2 = _veil("batch", "counts", str(inp), "-o", str(tmp_path / "out2"), "--categories", "a,b",
               "-e", "0.5", "--user-column", "person", "--category-column", "cat", "--quiet",
               env_extra=env)
    assert r2.returncode == 2
    assert "--spend-again" in r2.stderr and len(r2.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "out2").exists()
    r3 = _veil("batch", "counts", str(inp), "-o", str(tmp_path / "out3"), "--categories", "a,b",
               "-e", "0.5", "--quiet", env_extra=env)
    assert r3.returncode == 2 and "missing column" in r3.stderr


# --------------------------------------------------------------------------- hostile names
HOSTILE_USER = 'user" IS NULL OR (SELECT count(*) FROM read_text(\'/nonexistent-veil-probe\')) > 0 OR "user'
HOSTILE_CAT = "cat'egory\"; DROP TABLE t; --"


def _walks(n_users, steps, seed=0):
    from veil.geo.temporal import MarkovModel, TemporalGrid

    g = TemporalGrid(lon_min=116.30, lat_min=39.85, lon_max=116.45, lat_max=39.98, nx=6, ny=6)
    rng = np.random.default_rng(seed)
    walks = []
    for _ in range(n_users):
        c = [int(rng.integers(0, 36))]
        for _ in range(steps - 1):
            x, y = c[-1] % 6, c[-1] // 6
            c.append(int(np.clip(y + rng.integers(-1, 2), 0, 5)) * 6
                     + int(np.clip(x + rng.integers(-1, 2), 0, 5)))
        walks.append(c)
    model = MarkovModel.from_trajectories(walks, grid=g)
    lonlat = np.concatenate([g.to_lonlat(g.centers_m[w]) for w in walks])
    return model, lonlat


def test_hostile_names_run_through_every_batch_command(tmp_path):
    """Column names that smuggle SQL and paths with quotes and glob characters: every `veil
    batch` command treats them as names, and its output equals the run with plain names."""
    from veil.engine import Job, run_job
    from helpers import rows

    g = np.random.default_rng(1)
    n = 4_000
    users = g.integers(0, 300, n)
    cats = g.choice(["a", "b", "c"], n)
    folder = tmp_path / "in'put [1]*?"
    folder.mkdir()
    plain = folder / "plain.parquet"
    hostile = folder / "host'ile[1].parquet"
    pq.write_table(pa.table({"user": users, "category": cats}), plain)
    pq.write_table(pa.table({HOSTILE_USER: users, HOSTILE_CAT: cats}), hostile)
    env = {"VEIL_LEDGER": str(tmp_path / "ledger.json")}
    # both names hold the same rows (one dataset): a total lets the second run --spend-again
    b = _veil("budget", "set", str(plain), "--total", "10", env_extra=env)
    assert b.returncode == 0, b.stderr
    common = ["--quiet", "--buckets", "5"]
    # counts (DP, seeded for the comparison)
    o1, o2 = tmp_path / "c plain", tmp_path / "c 'out' [x]"
    r1 = _veil("batch", "counts", str(plain), "-o", str(o1), "--categories", "a,b", "-e", "1",
               "--seed", "3", *common, env_extra=env)
    r2 = _veil("batch", "counts", str(hostile), "-o", str(o2), "--categories", "a,b", "-e", "1",
               "--seed", "3", "--user-column", HOSTILE_USER, "--category-column", HOSTILE_CAT,
               "--spend-again", *common, env_extra=env)
    assert r1.returncode == 0 and r2.returncode == 0, (r1.stderr, r2.stderr)
    assert rows(o1) == rows(o2) and len(rows(o1)) == 300 * 3
    # the library call with the same inputs gives the same rows as the command line
    run_job(Job(plain, tmp_path / "lib", "count-noise", params={"categories": ["a", "b"],
                "epsilon": 1.0}, seed=3, buckets=5, progress=False, spend_again=True,
                ledger=tmp_path / "ledger.json"))
    assert rows(tmp_path / "lib") == rows(o1)
    # visits (deterministic)
    v1, v2 = tmp_path / "v plain", tmp_path / "v \"out\""
    r1 = _veil("batch", "visits", str(plain), "-o", str(v1), "--categories", "a,b,c",
               "--sensitive", "c", *common, env_extra=env)
    r2 = _veil("batch", "visits", str(hostile), "-o", str(v2), "--categories", "a,b,c",
               "--sensitive", "c", "--user-column", HOSTILE_USER, "--category-column",
               HOSTILE_CAT, *common, env_extra=env)
    assert r1.returncode == 0 and r2.returncode == 0, (r1.stderr, r2.stderr)
    assert rows(v1) == rows(v2) and rows(v1)
    # trajectories
    model, lonlat = _walks(8, 12)
    model.save(tmp_path / "model.npz")
    u = np.repeat(np.arange(8), 12)
    t = np.tile(np.arange(12) * 60, 8)
    tp, th = folder / "traj.parquet", folder / "tr'aj*.parquet"
    pq.write_table(pa.table({"user": u, "t": t, "lat": lonlat[:, 1], "lon": lonlat[:, 0]}), tp)
    names = {"t": 't") FROM x; --', "lat": "la[t]", "lon": "lo*n?"}
    pq.write_table(pa.table({HOSTILE_USER: u, names["t"]: t, names["lat"]: lonlat[:, 1],
                             names["lon"]: lonlat[:, 0]}), th)
    t1, t2 = tmp_path / "t plain", tmp_path / "t '[out]'"
    b = _veil("budget", "set", str(tp), "--total", "100", env_extra=env)
    assert b.returncode == 0, b.stderr
    base = ["--model", str(tmp_path / "model.npz"), "-e", "1", "-d", "0.1", "--seed", "4",
            "--spend-again", *common]
    r1 = _veil("batch", "trajectories", str(tp), "-o", str(t1), *base, env_extra=env)
    r2 = _veil("batch", "trajectories", str(th), "-o", str(t2), *base, "--user-column",
               HOSTILE_USER, "--time-column", names["t"], "--lat-column", names["lat"],
               "--lon-column", names["lon"], env_extra=env)
    assert r1.returncode == 0 and r2.returncode == 0, (r1.stderr, r2.stderr)
    assert rows(t1) == rows(t2) and len(rows(t1)) == 96
    # status reads the hostile output path too
    s = _veil("batch", "status", str(t2))
    assert s.returncode == 0 and "complete" in s.stdout


def test_status_and_discard_on_the_command_line(tmp_path):
    from helpers import checkins, jobrun, manifest

    inp = checkins(tmp_path / "in.parquet", n=5_000, users=800)
    out = tmp_path / "out"
    env = {"VEIL_LEDGER": str(tmp_path / "ledger.json")}
    s = _veil("batch", "status", str(out))
    assert s.returncode == 5 and "no veil job" in s.stdout
    spec = {"input": str(inp), "output": str(out), "task": "test-slow-noise", "params": {},
            "user_column": "uid", "buckets": 8, "resume": True}
    r = jobrun(spec, {**env, "VEIL_TEST_FAULT": "bucket-done@3"})
    assert r.returncode == -9
    s = _veil("batch", "status", str(out))
    assert s.returncode == 3, s.stdout
    assert "interrupted while running buckets" in s.stdout
    # killed right after its third bucket: buckets run in order
    assert "3/8 done and verified" in s.stdout and "5 bucket(s): 3-7" in s.stdout
    js = json.loads(_veil("batch", "status", str(out), "--json").stdout)
    assert js["done"] == 3 and js["missing"] == [3, 4, 5, 6, 7]
    d = _veil("batch", "discard", str(out))
    assert d.returncode == 2 and "--yes" in d.stderr
    d = _veil("batch", "discard", str(out), "--yes")
    assert d.returncode == 0 and "3 finished bucket(s) deleted" in d.stderr and d.stdout == ""
    assert _veil("batch", "status", str(out)).returncode == 5
    assert jobrun(spec, env).returncode == 0
    s = _veil("batch", "status", str(out))
    assert len(manifest(out)["parts"]) == 8
    assert s.returncode == 0 and "complete: 8 part(s) verified" in s.stdout


def test_published_files_of_batch_counts_on_neighbouring_inputs(tmp_path):
    """Two inputs differing in one check-in (the event-level neighbours of `batch counts`):
    the same files are published, the manifests are equal but for the timestamps and the
    hashes of the parts whose values differ, and every part has the same rows (users and
    categories); only the noisy counts can differ (audited in test_engine_audit.py)."""
    import duckdb
    from helpers import manifest

    g = np.random.default_rng(4)
    n = 6_000
    users = np.char.add("u", g.integers(0, 700, n).astype(str))
    cats = g.choice(["a", "b", "c"], n)
    neighbours = [pa.table({"user": users, "category": cats}),
                  pa.table({"user": np.append(users, users[0]), "category": np.append(cats, "a")})]
    env = {"VEIL_LEDGER": str(tmp_path / "ledger.json")}
    outs = []
    for i, table in enumerate(neighbours):  # the same file, holding one neighbour then the other
        pq.write_table(table, tmp_path / "d.parquet")
        out = tmp_path / f"out-{i}"
        r = _veil("batch", "counts", str(tmp_path / "d.parquet"), "-o", str(out),
                  "--categories", "a,b", "-e", "1", "--quiet", "--spend-again", env_extra=env)
        assert r.returncode == 0, r.stderr
        outs.append(out)
    a, b = (sorted(p.name for p in o.iterdir()) for o in outs)
    assert a == b
    ma, mb = (manifest(o) for o in outs)
    for m in (ma, mb):
        for k in ("started", "finished"):
            m.pop(k)
        for part in m["parts"].values():
            part.pop("sha256")
    assert ma == mb
    assert "rows_in" not in ma and all("rows_in" not in str(v) for v in ma.values())
    for name in a:
        if name.endswith(".parquet"):
            qa, qb = (duckdb.sql(f"SELECT user, category FROM read_parquet('{o / name}') "
                                 "ORDER BY ALL").fetchall() for o in outs)
            assert qa == qb
