"""`veil batch trajectories` writes every time back exactly as read, in the input's type,
and orders each user's points by the exact time.

Regression: staging turned the time column into float64 seconds (``CAST(epoch(t) AS
DOUBLE)``) and the parts published those floats. float64 has about 0.24 microsecond
resolution at 1.7e9 seconds (256 at 1.7e18): epoch nanoseconds (int64, a Parquet
TIMESTAMP_NS, ISO text with 9 fractional digits) came out rounded, two fixes 100 ns apart
got one ``t``, and their order was decided by the float (then by lat/lon), not by the time.
`veil trajectory release` already wrote the times as read.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cli_cases import run_main
from helpers import jobrun, work_of

from veil.engine import Job, run_job
from veil.errors import DataError
from veil.geo.temporal import MarkovModel, TemporalGrid

GRID = TemporalGrid(lon_min=116.30, lat_min=39.85, lon_max=116.45, lat_max=39.98, nx=4, ny=4)
#: each user's cells in time order; the model allows only these moves, so a point released
#: out of order would not be its own cell (epsilon 1000 per step: released ~ true cell)
PATHS = {"a": [0, 1, 2, 3, 7, 6], "b": [15, 14, 13, 12, 8, 9], "c": [5, 6, 10, 11]}
BASE = 1_700_000_000_123_456_789  # ns since 1970: 2023-11-14T22:13:20.123456789
PARAMS = {"epsilon": 1000.0, "delta": 0.01, "mechanism": "pim"}


@pytest.fixture
def model(tmp_path):
    path = tmp_path / "model.npz"
    MarkovModel.from_trajectories(list(PATHS.values()), grid=GRID).save(path)
    return path


def _iso(ns: int) -> str:
    """ISO 8601 text with 9 fractional digits (UTC, no offset)."""
    s, frac = divmod(ns, 10 ** 9)
    return pd.Timestamp(s, unit="s").strftime("%Y-%m-%dT%H:%M:%S") + f".{frac:09d}"


def _points(times=None):
    """(user, time, cell) per point in time order; times 100 ns apart, users interleaved
    (the times of all users increase together)."""
    rows = []
    k = 0
    for i in range(max(len(p) for p in PATHS.values())):
        for u, p in PATHS.items():
            if i < len(p):
                rows.append((u, BASE + 100 * k if times is None else times(k), p[i]))
                k += 1
    return rows


def _table(rows, t_array, seed=1):
    """The points as an Arrow table in a shuffled order (the engine sorts by user and time)."""
    ll = GRID.to_latlon(GRID.centers_m[[c for _, _, c in rows]])
    order = np.random.default_rng(seed).permutation(len(rows))
    tbl = pa.table({"user": [r[0] for r in rows], "t": t_array, "lat": ll[:, 0],
                    "lon": ll[:, 1]})
    return tbl.take(pa.array(order))


def _csv(path, rows, texts, seed=1):
    """The points as a CSV whose time column holds ``texts`` as written (rows shuffled
    unless ``seed`` is None)."""
    ll = GRID.to_latlon(GRID.centers_m[[c for _, _, c in rows]])
    idx = range(len(rows)) if seed is None else np.random.default_rng(seed).permutation(
        len(rows))
    lines = ["user,t,lat,lon"] + [f"{rows[i][0]},{texts[i]},{float(ll[i, 0])!r},"
                                  f"{float(ll[i, 1])!r}" for i in idx]
    path.write_text("\n".join(lines) + "\n")
    return path


def _release(inp, out, model, **kw):
    return run_job(Job(inp, out, "trajectories", params={"model": str(model), **PARAMS},
                       seed=3, buckets=4, progress=False, spend_again=True, **kw))


def _published(out) -> pa.Table:
    parts = sorted(out.glob("part-*.parquet"))
    assert parts
    return pa.concat_tables([pq.read_table(p) for p in parts])


def _per_user(tbl: pa.Table, t_values=None) -> dict:
    """user -> [(t, released cell), ...] in the published row order."""
    t = tbl.column("t").to_pylist() if t_values is None else t_values
    cells = GRID.cell_of(tbl.column("lat").to_numpy(), tbl.column("lon").to_numpy())
    out: dict = {}
    for u, x, c in zip(tbl.column("user").to_pylist(), t, cells.tolist()):
        out.setdefault(u, []).append((x, c))
    return out


def _expected(rows, shown=lambda t: t) -> dict:
    want: dict = {}
    for u, t, c in rows:
        want.setdefault(u, []).append((shown(t), c))
    return want


# --------------------------------------------------------------------------- (a) int64 ns
@pytest.mark.parametrize("kind", ["parquet", "csv"])
def test_int64_nanosecond_epochs_are_published_exactly_and_in_their_order(tmp_path, model,
                                                                          kind):
    rows = _points()
    times = [t for _, t, _ in rows]
    if kind == "parquet":
        inp = tmp_path / "p.parquet"
        pq.write_table(_table(rows, pa.array(times, pa.int64())), inp)
    else:
        inp = _csv(tmp_path / "p.csv", rows, [str(t) for t in times])
    _release(inp, tmp_path / "out", model)
    tbl = _published(tmp_path / "out")
    assert _per_user(tbl) == _expected(rows)  # exact, row for row, in time order
    assert tbl.schema.field("t").type == pa.int64()  # an integer stays an integer
    assert sorted(tbl.column("t").to_pylist()) == sorted(times)


# --------------------------------------------------------------------------- (b) timestamps
@pytest.mark.parametrize("unit_tz", [("ns", None), ("ns", "Europe/Paris"), ("us", None)])
def test_parquet_timestamps_are_published_as_the_same_timestamps(tmp_path, model, unit_tz):
    unit, tz = unit_tz
    # 100 ns apart; 1 microsecond apart in a microsecond column
    rows = _points((lambda k: BASE + 100 * k) if unit == "ns" else (lambda k: BASE // 1000 + k))
    times = [t for _, t, _ in rows]
    pq.write_table(_table(rows, pa.array(times, pa.timestamp(unit, tz=tz))),
                   tmp_path / "p.parquet")
    _release(tmp_path / "p.parquet", tmp_path / "out", model)
    tbl = _published(tmp_path / "out")
    typ = tbl.schema.field("t").type
    # a timestamp stays a timestamp of its unit; one with a zone is labelled UTC (the same
    # instants, whatever the zone of the machine that ran the bucket)
    assert typ == pa.timestamp(unit, tz=None if tz is None else "UTC")
    got = tbl.column("t").cast(pa.int64()).to_pylist()
    assert _per_user(tbl, got) == _expected(rows)


# --------------------------------------------------------------------------- (c) ISO text
def test_iso_text_with_nanoseconds_is_published_as_read_like_trajectory_release(
        tmp_path, model, capsys, repeat_releases):
    rows = _points()
    texts = [_iso(t) for _, t, _ in rows]
    shuffled = _csv(tmp_path / "shuffled.csv", rows, texts)
    _release(shuffled, tmp_path / "out", model)
    tbl = _published(tmp_path / "out")
    assert _per_user(tbl) == _expected(rows, _iso)
    assert tbl.schema.field("t").type == pa.string()  # text stays text: the file's text
    # `veil trajectory release` of the same points (sorted: it refuses an unsorted file)
    ordered = _csv(tmp_path / "sorted.csv", rows, texts, seed=None)
    code, _, err = run_main(["trajectory", "release", ordered, "--model", model, "-e", 1,
                             "-d", 0.1, "--seed", 5, "-o", tmp_path / "rel.csv"], capsys)
    assert code == 0, err
    rel = pd.read_csv(tmp_path / "rel.csv", dtype={"user": str, "t": str})
    single = {u: [t for t, _ in pts] for u, pts in _per_user(tbl).items()}
    assert single == {u: g["t"].tolist() for u, g in rel.groupby("user", sort=False)}


def test_iso_text_with_offsets_orders_by_the_instant_and_keeps_the_text(tmp_path, model):
    """Offsets: the order is the instant's to the nanosecond (not the text's, nor the
    microsecond's); the text published is the file's."""
    rows = _points()
    # every other point is written with a +02:00 offset (its wall clock 2 hours later)
    texts = []
    for k, (_, t, _) in enumerate(rows):
        if k % 2:
            texts.append(_iso(t + 2 * 3600 * 10 ** 9) + "+02:00")
        else:
            texts.append(_iso(t) + "Z")
    text_of = dict(zip((t for _, t, _ in rows), texts))
    _release(_csv(tmp_path / "off.csv", rows, texts), tmp_path / "out", model)
    tbl = _published(tmp_path / "out")
    assert _per_user(tbl) == _expected(rows, text_of.get)


# --------------------------------------------------------------------------- (d) float seconds
@pytest.mark.parametrize("kind", ["parquet", "csv"])
def test_float_seconds_are_published_as_before(tmp_path, model, kind):
    rows = _points(lambda k: 1_700_000_000.0 + 0.25 * k)
    times = [t for _, t, _ in rows]
    if kind == "parquet":
        inp = tmp_path / "p.parquet"
        pq.write_table(_table(rows, pa.array(times, pa.float64())), inp)
    else:
        inp = _csv(tmp_path / "p.csv", rows, [repr(t) for t in times])
    _release(inp, tmp_path / "out", model)
    tbl = _published(tmp_path / "out")
    assert tbl.schema.field("t").type == pa.float64()
    assert _per_user(tbl) == _expected(rows)


# --------------------------------------------------------------------------- the rest unchanged
def test_dropped_points_take_their_times_with_them(tmp_path, model):
    rows = _points()
    times = [t for _, t, _ in rows]
    tbl = _table(rows, pa.array(times, pa.int64()))
    # two points of user "a" off the grid, between the others in time
    off = pa.table({"user": ["a", "a"], "t": pa.array([BASE + 150, BASE + 1050], pa.int64()),
                    "lat": [10.0, 10.0], "lon": [10.0, 10.0]})
    pq.write_table(pa.concat_tables([tbl, off]), tmp_path / "p.parquet")
    with pytest.raises(DataError, match=f"t={BASE + 150}"):  # the time as read
        _release(tmp_path / "p.parquet", tmp_path / "o1", model)
    run_job(Job(tmp_path / "p.parquet", tmp_path / "o2", "trajectories",
                params={"model": str(model), **PARAMS, "on_invalid": "drop"}, seed=3,
                buckets=4, progress=False, spend_again=True))
    pub = _published(tmp_path / "o2")
    assert _per_user(pub) == _expected(rows)
    man = json.loads((tmp_path / "o2" / "_manifest.json").read_text())
    assert man["users"] == 3 and man["rows_out"] == len(rows)
    assert sum(p["rows"] for p in man["parts"].values()) == len(rows)


def _spec(inp, out, model, **kw):
    return {"input": str(inp), "output": str(out), "task": "trajectories",
            "params": {"model": str(model), **PARAMS}, "seed": 3, "buckets": 8,
            "spend_again": True, **kw}


def _many_users(tmp_path, n=24):
    """n users (the three paths, renamed), ns times 100 ns apart, as a CSV of ISO text."""
    rows = []
    for i in range(n):
        for u, t, c in _points(lambda k: BASE + 100 * (k + 20 * i)):
            rows.append((f"{u}{i}", t, c))
    return rows, _csv(tmp_path / "many.csv", rows, [_iso(t) for _, t, _ in rows])


@pytest.mark.parametrize("restage", [False, True])
def test_a_job_killed_after_some_buckets_resumes_to_the_same_exact_times(tmp_path, model,
                                                                        restage):
    rows, inp = _many_users(tmp_path)
    r = jobrun(_spec(inp, tmp_path / "out", model),
               env_extra={"VEIL_TEST_FAULT": "bucket-done@3"})
    assert r.returncode != 0  # killed after its third bucket
    assert not (tmp_path / "out").exists() and work_of(tmp_path / "out").is_dir()
    if restage:  # the staged rows are lost: restaged from the input and checked against it
        for f in (work_of(tmp_path / "out") / "staging").rglob("*.parquet"):
            f.unlink()
    r = jobrun(_spec(inp, tmp_path / "out", model, resume=True))
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["buckets_run"] < 8
    r = jobrun(_spec(inp, tmp_path / "ref", model))  # uninterrupted
    assert r.returncode == 0, r.stderr
    a, b = _published(tmp_path / "out"), _published(tmp_path / "ref")
    assert a.schema.field("t").type == pa.string()
    assert _per_user(a) == _per_user(b) == _expected(rows, _iso)
    assert sorted(a.to_pylist(), key=str) == sorted(b.to_pylist(), key=str)


def test_resuming_a_run_staged_by_an_older_veil_is_a_clear_error(tmp_path, model):
    """An older veil staged float seconds only (no ``t.raw``) and its finished parts hold
    those: the run is refused with what to do, and nothing of it is touched."""
    rows, inp = _many_users(tmp_path, 6)
    r = jobrun(_spec(inp, tmp_path / "out", model),
               env_extra={"VEIL_TEST_FAULT": "bucket-done@2"})
    assert r.returncode != 0
    work = work_of(tmp_path / "out")
    state = json.loads((work / "job.json").read_text())
    state["staging"].pop("columns", None)  # what an older veil wrote
    (work / "job.json").write_text(json.dumps(state))
    before = sorted(p.relative_to(work) for p in work.rglob("*"))
    r = jobrun(_spec(inp, tmp_path / "out", model, resume=True))
    assert r.returncode == 2
    assert "older veil" in r.stderr and "veil batch discard" in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert sorted(p.relative_to(work) for p in work.rglob("*")) == before
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("kind", ["int", "timestamp"])
def test_a_point_without_a_time_is_invalid(tmp_path, model, kind):
    """A point with a missing time was released (t = NaN before the exact times, an empty t
    after): `veil trajectory release` refuses it. It is now an invalid point like a NaN
    position: an error, or dropped with on_invalid='drop'."""
    rows = _points()
    times = [t for _, t, _ in rows]
    arr = (pa.array(times, pa.int64()) if kind == "int"
           else pa.array(times, pa.int64()).cast(pa.timestamp("ns")))
    tbl = _table(rows, arr)
    ll = GRID.to_latlon(GRID.centers_m[[PATHS["a"][0]]])
    miss = pa.table({"user": ["a"], "t": pa.array([None], arr.type),
                     "lat": [float(ll[0, 0])], "lon": [float(ll[0, 1])]})
    pq.write_table(pa.concat_tables([tbl, miss]), tmp_path / "p.parquet")
    with pytest.raises(DataError, match="without a time"):
        _release(tmp_path / "p.parquet", tmp_path / "o1", model)
    run_job(Job(tmp_path / "p.parquet", tmp_path / "o2", "trajectories",
                params={"model": str(model), **PARAMS, "on_invalid": "drop"}, seed=3,
                buckets=4, progress=False, spend_again=True))
    pub = _published(tmp_path / "o2")
    assert pub.column("t").null_count == 0 and pub.num_rows == len(rows)
