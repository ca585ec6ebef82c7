"""Grids and the DuckDB point counts: cells, regions, per-person bounding, bad input, Dask."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from veil.errors import DataError, ParameterError, PrivacyWarning
from veil.maps import MapGrid, REGIONS, data_extent, grid_counts, parse_bbox, parse_shape
from veil.random import make_rng

GRID = MapGrid(0.0, 0.0, 1.0, 2.0, rows=4, cols=8)


def _points(n=2000, users=40, seed=0):
    g = np.random.default_rng(seed)
    return pd.DataFrame({"user": [f"u{i}" for i in g.integers(0, users, n)],
                         "lat": g.uniform(-0.1, 1.1, n), "lon": g.uniform(-0.1, 2.1, n),
                         "t": g.uniform(0, 100, n)})


def _numpy_counts(df, grid):
    rc = grid.cell_of(df["lat"].to_numpy(), df["lon"].to_numpy())
    ok = rc[:, 0] >= 0
    out = np.zeros(grid.shape, dtype=np.int64)
    np.add.at(out, (rc[ok, 0], rc[ok, 1]), 1)
    return out


# ----------------------------------------------------------------------------- grid
def test_grid_validation_and_round_trip():
    with pytest.raises(ParameterError, match="swapped"):
        MapGrid(116.2, 39.8, 116.5, 40.0, rows=2, cols=2)
    with pytest.raises(ParameterError, match="LAT_MAX > LAT_MIN"):
        MapGrid(1.0, 0.0, 1.0, 1.0, rows=2, cols=2)
    with pytest.raises(ParameterError, match="antimeridian"):
        MapGrid(0.0, 170.0, 1.0, -170.0, rows=2, cols=2)
    with pytest.raises(ParameterError, match="maximum"):
        MapGrid(0.0, 0.0, 1.0, 1.0, rows=5000, cols=5000)
    with pytest.raises(ParameterError, match="finite"):
        MapGrid(float("nan"), 0.0, 1.0, 1.0, rows=2, cols=2)
    assert MapGrid.from_dict(GRID.to_dict()) == GRID
    assert parse_bbox("1,2,3,4") == (1.0, 2.0, 3.0, 4.0)
    assert parse_shape("3x5") == (3, 5)
    for bad in ("0x8", "8x-1", "0"):
        with pytest.raises(ParameterError, match=r"--grid: rows and columns must be >= 1"):
            parse_shape(bad)
    for bad in ("1,2,3", "a,b,c,d"):
        with pytest.raises(ParameterError, match="--bbox"):
            parse_bbox(bad)
    with pytest.raises(ParameterError, match="unknown region 'nycc'; did you mean 'nyc'"):
        MapGrid.from_region("nycc", 2, 2)
    assert set(REGIONS) >= {"world", "nyc", "beijing-4th-ring", "port-veil"}


def test_cell_of_edges():
    rc = GRID.cell_of([0.0, 1.0, 0.999, 0.5, 1.5, -0.1], [0.0, 2.0, 1.999, 0.25, 1.0, 1.0])
    assert rc.tolist() == [[0, 0], [3, 7], [3, 7], [2, 1], [-1, -1], [-1, -1]]


def test_cell_size_rule():
    g = MapGrid.from_cell_size(REGIONS["manhattan"][0], 250.0)
    h, w = g.cell_size_m
    assert h <= 250.0 and w <= 250.0 and h > 200 and w > 200


# ----------------------------------------------------------------------------- record level
@pytest.mark.parametrize("fmt", ["csv", "parquet", "json"])
def test_record_counts_equal_numpy(tmp_path, fmt):
    df = _points()
    f = tmp_path / f"p.{fmt}"
    if fmt == "csv":
        df.to_csv(f, index=False)
    elif fmt == "parquet":
        df.to_parquet(f)
    else:
        df.to_json(f, orient="records")
    pc = grid_counts(f, GRID, protects="record")
    assert np.array_equal(pc.counts, _numpy_counts(df, GRID))
    assert pc.sensitivity == 1 and pc.protects == "record"
    assert pc.private["points_counted"] == int(pc.counts.sum())
    assert "points_outside_box_or_window" in pc.private
    assert "outside" not in {k for k in pc.source if k == "points_outside_box_or_window"}


def test_time_window(tmp_path):
    df = _points()
    df.to_csv(tmp_path / "p.csv", index=False)
    pc = grid_counts(tmp_path / "p.csv", GRID, protects="record", time="t", start=20, end=60)
    sub = df[(df["t"] >= 20) & (df["t"] < 60)]
    assert np.array_equal(pc.counts, _numpy_counts(sub, GRID))
    dates = pd.DataFrame({"lat": [0.1, 0.2, 0.3], "lon": [0.1, 0.2, 0.3],
                          "when": ["2012-04-01 08:00:00", "2012-04-02 09:00:00",
                                   "2012-04-03 10:00:00"]})
    dates.to_csv(tmp_path / "d.csv", index=False)
    pc = grid_counts(tmp_path / "d.csv", GRID, protects="record", time="when",
                     start="2012-04-02", end="2012-04-03")
    assert int(pc.counts.sum()) == 1
    with pytest.raises(ParameterError, match="needs a time column"):
        grid_counts(tmp_path / "p.csv", GRID, protects="record", start=1)
    with pytest.raises(ParameterError, match="neither a number nor a date"):
        grid_counts(tmp_path / "d.csv", GRID, protects="record", time="when", start="soon")


# ----------------------------------------------------------------------------- per person
def _heavy_file(tmp_path, n_heavy=10_000, seed=3):
    """Ten light users (<= 4 points) and one user with n_heavy points in three cells."""
    g = np.random.default_rng(seed)
    light = []
    for u in range(10):
        for _ in range(1 + u % 4):
            light.append((f"light{u}", g.uniform(0, 1), g.uniform(0, 2)))
    cells = g.choice(3, size=n_heavy, p=[0.6, 0.3, 0.1])
    centres = np.array([[0.1, 0.1], [0.6, 1.1], [0.9, 1.9]])
    pts = centres[cells] + g.uniform(0, 0.05, (n_heavy, 2))
    heavy = [("heavy", la, lo) for la, lo in pts]
    a = pd.DataFrame(light, columns=["user", "lat", "lon"])
    b = pd.DataFrame(light + heavy, columns=["user", "lat", "lon"])
    a.to_csv(tmp_path / "a.csv", index=False)
    b.to_csv(tmp_path / "b.csv", index=False)
    return a, b


def test_user_with_ten_thousand_points_keeps_exactly_m(tmp_path):
    a, b = _heavy_file(tmp_path)
    m = 7
    ca = grid_counts(tmp_path / "a.csv", GRID, user="user", max_points=m, rng=make_rng(seed=1))
    # light users are below the bound: nothing removed
    assert np.array_equal(ca.counts, _numpy_counts(a, GRID))
    heavy_cells = _numpy_counts(b[b.user == "heavy"], GRID)
    for seed in range(8):
        cb = grid_counts(tmp_path / "b.csv", GRID, user="user", max_points=m,
                         rng=make_rng(seed=seed))
        diff = cb.counts - ca.counts
        assert diff.min() >= 0 and int(diff.sum()) == m           # exactly m kept, L1 = m
        assert (diff <= heavy_cells).all()                        # only where they have points
        assert cb.sensitivity == m and cb.private["users_over_bound"] == 1
        assert cb.private["points_removed_by_bound"] == 10_000 - m


def test_bounding_depends_only_on_the_persons_own_points(tmp_path):
    """The coupling of the privacy argument: with the same salt, adding a person changes
    nothing about the others' kept points."""
    g = np.random.default_rng(5)
    base = pd.DataFrame({"user": [f"u{i}" for i in g.integers(0, 5, 3000)],
                         "lat": g.uniform(0, 1, 3000), "lon": g.uniform(0, 2, 3000)})
    extra = pd.DataFrame({"user": ["new"] * 500, "lat": np.full(500, 0.99),
                          "lon": np.full(500, 1.99)})
    base.to_csv(tmp_path / "a.csv", index=False)
    pd.concat([extra.iloc[:250], base, extra.iloc[250:]]).to_csv(tmp_path / "b.csv",
                                                                index=False)
    for seed in range(5):
        ca = grid_counts(tmp_path / "a.csv", GRID, user="user", max_points=50,
                         rng=make_rng(seed=seed)).counts
        cb = grid_counts(tmp_path / "b.csv", GRID, user="user", max_points=50,
                         rng=make_rng(seed=seed)).counts
        d = cb - ca
        assert d[3, 7] == 50 and int(np.abs(d).sum()) == 50


def _chi2_uniform(hits, draws, m, n):
    """p-value of "every point kept with probability m/n": the kept-point counts of ``draws``
    uniform m-subsets have covariance draws p (1 - p) n / (n - 1) (I - J/n) (p = m/n), so
    (n - 1)/n sum (h - e)^2 / (draws p (1 - p)) is chi-square with n - 1 df (CLT)."""
    p = m / n
    e = draws * p
    stat = (n - 1) / n * float(((hits - e) ** 2).sum() / (draws * p * (1 - p)))
    return stats.chi2.sf(stat, df=n - 1)


def test_sampling_is_uniform_with_power(tmp_path):
    """Each of a person's points is kept with probability m/n (chi-square, alpha 1e-6) -- 2000
    people with the same 20 points, one point per cell, so the cell counts are the kept counts
    -- and the same test rejects biased selections (the first m rows; a 3:1 west bias)."""
    n, m, users = 20, 5, 2000
    grid = MapGrid(0.0, 0.0, 1.0, 1.0, rows=1, cols=n)
    lon = (np.arange(n) + 0.5) / n
    df = pd.DataFrame({"user": np.repeat([f"p{i}" for i in range(users)], n),
                       "lat": 0.5, "lon": np.tile(lon, users)})
    df.to_parquet(tmp_path / "many.parquet")
    for seed in (0, 1):
        hits = grid_counts(tmp_path / "many.parquet", grid, user="user", max_points=m,
                           rng=make_rng(seed=seed)).counts[0]
        assert hits.sum() == users * m
        assert _chi2_uniform(hits, users, m, n) > 1e-6
    first = np.zeros(n)
    first[:m] = users
    assert _chi2_uniform(first, users, m, n) < 1e-6
    g = np.random.default_rng(0)
    w = np.r_[np.full(n // 2, 1.5), np.full(n // 2, 0.5)]
    biased = np.zeros(n)
    for _ in range(users):
        biased[g.choice(n, m, replace=False, p=w / w.sum())] += 1
    assert _chi2_uniform(biased, users, m, n) < 1e-6


def test_identical_points_at_the_threshold_never_exceed_m(tmp_path):
    df = pd.DataFrame({"user": ["d"] * 30 + ["e"] * 3, "lat": [0.3] * 30 + [0.6] * 3,
                       "lon": [0.3] * 30 + [1.6] * 3})
    df.to_csv(tmp_path / "dup.csv", index=False)
    for seed in range(10):
        pc = grid_counts(tmp_path / "dup.csv", GRID, user="user", max_points=4,
                         rng=make_rng(seed=seed))
        assert pc.counts[1, 1] == 4 and pc.counts[2, 6] == 3 and pc.counts.sum() == 7


# ----------------------------------------------------------------------------- bad input
def test_parameters_are_required_and_checked(tmp_path):
    _points().to_csv(tmp_path / "p.csv", index=False)
    f = tmp_path / "p.csv"
    with pytest.raises(ParameterError, match="needs the user column"):
        grid_counts(f, GRID)
    with pytest.raises(ParameterError, match="needs max_points"):
        grid_counts(f, GRID, user="user")
    with pytest.raises(ParameterError, match="max_points must be >= 1"):
        grid_counts(f, GRID, user="user", max_points=0)
    with pytest.raises(ParameterError, match="needs protects='user'"):
        grid_counts(f, GRID, protects="record", max_points=3)
    with pytest.raises(ParameterError, match="protects must be one of"):
        grid_counts(f, GRID, protects="person")
    with pytest.raises(DataError, match=r"no such column; did you mean 'lat'"):
        grid_counts(f, GRID, lat="Lat", protects="record")
    with pytest.raises(DataError, match="no such file"):
        grid_counts(tmp_path / "nope.csv", GRID, protects="record")


@pytest.mark.parametrize("value, col, what", [("abc", "lat", "latitude 'abc' is not a number"),
                                              ("95.0", "lat", r"latitude '95\.0' is not a number"),
                                              ("nan", "lon", "longitude 'nan' is not a number"),
                                              ("", "lon", "longitude is missing"),
                                              ("", "user", "missing user")])
def test_bad_rows_are_named(tmp_path, value, col, what):
    rows = ["user,lat,lon", "a,0.1,0.1", "b,0.2,0.2", "c,0.3,0.3"]
    parts = rows[3].split(",")
    parts[["user", "lat", "lon"].index(col)] = value
    rows[3] = ",".join(parts)
    (tmp_path / "bad.csv").write_text("\n".join(rows) + "\n")
    with pytest.raises(DataError, match=rf"row 3, column '{col}': .*{what}"):
        grid_counts(tmp_path / "bad.csv", GRID, user="user", max_points=2)


@pytest.mark.parametrize("name", ['la"t', "lat' OR 1=1 --", "la t", "select"])
def test_hostile_column_names(tmp_path, name):
    df = _points(200).rename(columns={"lat": name})
    df.to_parquet(tmp_path / "h.parquet")
    pc = grid_counts(tmp_path / "h.parquet", GRID, lat=name, protects="record")
    assert np.array_equal(pc.counts, _numpy_counts(df.rename(columns={name: "lat"}), GRID))


def test_glob_characters_in_the_path_are_literal(tmp_path):
    df = _points(300)
    df.to_csv(tmp_path / "p[1].csv", index=False)
    _points(50, seed=9).to_csv(tmp_path / "p1.csv", index=False)  # a glob decoy
    pc = grid_counts(tmp_path / "p[1].csv", GRID, protects="record")
    assert np.array_equal(pc.counts, _numpy_counts(df, GRID))


def test_data_extent_warns(tmp_path):
    df = _points(100)
    df.to_csv(tmp_path / "p.csv", index=False)
    with pytest.warns(PrivacyWarning, match="NOT differentially private"):
        box = data_extent(tmp_path / "p.csv")
    assert box == (df.lat.min(), df.lon.min(), df.lat.max(), df.lon.max())


# ----------------------------------------------------------------------------- Dask
@pytest.fixture(scope="module")
def dask_cluster():
    """One local TLS cluster for the module (as veil starts them), shared by the Dask tests."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from distributed import LocalCluster
        from distributed.security import Security

        sec = Security.temporary()
        cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                               dashboard_address=None, security=sec, protocol="tls://",
                               host="127.0.0.1")
    yield cluster.scheduler_address, sec
    cluster.close()


def test_dask_equals_local_with_the_same_salt(tmp_path, dask_cluster):
    from veil.maps.dask import grid_counts_dask

    a, b = _heavy_file(tmp_path, n_heavy=3000)
    big = pd.concat([b] * 3, ignore_index=True)
    big["t"] = np.arange(len(big), dtype=float)
    f = tmp_path / "b.parquet"
    big.to_parquet(f, row_group_size=500)
    for kw in (dict(protects="record"), dict(user="user", max_points=5),
               dict(user="user", max_points=5, time="t", start=100, end=9000),
               dict(user="user", max_points=10**6),                 # nobody over the bound
               dict(user="user", max_points=5, time="t", start=-9, end=-1)):  # no point usable
        local = grid_counts(f, GRID, rng=make_rng(seed=4), **kw)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # distributed's own deprecation chatter
            dist = grid_counts_dask(f, GRID, rng=make_rng(seed=4), scheduler=dask_cluster[0],
                                    security=dask_cluster[1], **kw)
        assert np.array_equal(local.counts, dist.counts), kw
        assert dist.private["partitions"] > 1


def _received_by_client(monkeypatch):
    """Patch the Dask client so every value it receives from the workers is recorded."""
    import distributed

    got = []
    gather, result = distributed.Client.gather, distributed.Future.result

    def rec_gather(self, futures, *a, **k):
        out = gather(self, futures, *a, **k)
        got.append(out)
        return out

    def rec_result(self, *a, **k):
        out = result(self, *a, **k)
        got.append(out)
        return out

    monkeypatch.setattr(distributed.Client, "gather", rec_gather)
    monkeypatch.setattr(distributed.Future, "result", rec_result)
    return got


def _per_user_items(obj) -> int:
    """How many per-user items ``obj`` holds: Arrow rows, dict entries, and list or tuple
    entries that name a user (a string); numpy grids count 0."""
    import pyarrow as pa

    if isinstance(obj, (pa.Table, pa.RecordBatch)):
        return obj.num_rows
    if isinstance(obj, dict):
        return len(obj) + sum(_per_user_items(v) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        named = sum(1 for v in obj if isinstance(v, str))
        return named + sum(_per_user_items(v) for v in obj if not isinstance(v, str))
    return 0


def test_dask_client_holds_no_per_user_data(tmp_path, dask_cluster, monkeypatch):
    """Per-person bounding on Dask shuffles by user on the workers: with 3005 users over the
    bound (5 of them tied: a third of their points are one duplicated point), the client
    receives grids and totals only; never a user's keys, threshold or tied points. (The
    client used to merge every partition's key lists, a table of all users per partition,
    and to hold a row per user over the bound.)"""
    from veil.maps.dask import grid_counts_dask

    f = _many_users_file(tmp_path)
    df = pd.read_parquet(f).sample(frac=1.0, random_state=1)  # users span the partitions
    f2 = tmp_path / "shuffled.parquet"
    df.to_parquet(f2, row_group_size=2000)
    local = grid_counts(f2, GRID, user="user", max_points=3, rng=make_rng(seed=9))
    got = _received_by_client(monkeypatch)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dist = grid_counts_dask(f2, GRID, user="user", max_points=3, rng=make_rng(seed=9),
                                scheduler=dask_cluster[0], security=dask_cluster[1])
    assert np.array_equal(local.counts, dist.counts)
    assert dist.private["users_over_bound"] == local.private["users_over_bound"] == 3005
    assert (dist.private["points_removed_by_bound"]
            == local.private["points_removed_by_bound"] == 3000 * 2 + 5 * 1497)
    assert dist.private["partitions"] > 1 and got
    assert sum(_per_user_items(o) for o in got) == 0


@pytest.mark.slow  # starts its own Dask cluster (about 10 s); the library path is tested above
def test_cli_dask_engine_equals_local(tmp_path, repeat_releases):
    """`veil map publish --engine dask` (its own local TLS cluster) equals the local engine.

    The same file is released twice on purpose (the ledger would rightly refuse the second)."""
    from veil.cli import main
    from veil.maps import read_map

    _, b = _heavy_file(tmp_path, n_heavy=2000)
    b.to_parquet(tmp_path / "b.parquet", row_group_size=300)
    outs = {}
    for engine in ("local", "dask"):
        extra = ["--engine", "dask", "--workers", "2"] if engine == "dask" else []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                main(["map", "publish", str(tmp_path / "b.parquet"), "--user-column", "user",
                      "--max-points", "4", "--bbox", "0,0,1,2", "--grid", "4x8", "--epsilon",
                      "1", "--method", "identity", "--seed", "3", "-o",
                      str(tmp_path / f"{engine}.parquet"), *extra])
            except SystemExit as exc:
                assert exc.code in (0, None)
        outs[engine] = read_map(tmp_path / f"{engine}.parquet")
    assert np.array_equal(outs["local"].values, outs["dask"].values)
    assert outs["dask"].meta["parameters"]["engine"] == "dask"


def test_the_counting_pass_compares_each_point_with_one_key_not_a_list():
    """The counting pass joins on one threshold key per user (``__kt``): comparing each point
    with ``list_max`` of the user's m keys made ``--max-points 5000`` 118x slower than now
    (``benchmarks/maps_bound.py``). Guard: the pass never reads the key lists."""
    from veil.maps.points import count_sql, threshold_sql

    q = count_sql("SELECT 1", bounded=True)
    assert "__ks" not in q and "list_max" not in q and "__kt" in q
    assert "__kt" in threshold_sql("SELECT 1", 5)


# ------------------------------------------------------- many users with a large bound
def _many_users_file(tmp_path):
    """3000 light users (5 points) and 5 heavy ones (1500 points, a third of them identical)."""
    g = np.random.default_rng(0)
    light = pd.DataFrame({"user": np.repeat(np.arange(3000), 5).astype(str),
                          "lat": g.random(15000), "lon": 2 * g.random(15000)})
    heavy = pd.DataFrame({"user": np.repeat([f"h{i}" for i in range(5)], 1500),
                          "lat": g.random(7500), "lon": 2 * g.random(7500)})
    heavy.loc[::3, ["lat", "lon"]] = 0.25
    f = tmp_path / "many.parquet"
    pd.concat([light, heavy], ignore_index=True).to_parquet(f)
    return f


def test_threshold_plans_agree_with_brute_force():
    """The top-m and the window plans of the threshold table give the same rows as a direct
    count: the m-th smallest key, how many tied at it are kept, whether more than those share
    it (the (m+1)-th key equals it), the user's count."""
    import duckdb

    from veil.maps.points import threshold_sql

    g = np.random.default_rng(1)
    rows = []
    for u in range(60):
        n = int(g.integers(1, 12))
        keys = g.integers(0, 6, size=n)                      # many ties on purpose
        rows += [(str(u), int(k)) for k in keys]
    con = duckdb.connect()
    con.execute("CREATE TABLE v AS SELECT * FROM (VALUES " +
                ", ".join(f"('{u}', {k})" for u, k in rows) + ") t(__u, __k)")
    view = "SELECT __u, __k::UBIGINT AS __k, false AS __bad, true AS __inside, true AS __inwin FROM v"
    for m in (1, 3, 5, 11):
        want = {}
        for u in {r[0] for r in rows}:
            ks = sorted(k for uu, k in rows if uu == u)
            if len(ks) > m:
                t = ks[m - 1]
                want[u] = (t, m - sum(k < t for k in ks), ks[m] == t, len(ks))
        assert m == 11 or {w[2] for w in want.values()} == {True, False}, m  # both cases
        for window in (False, True):
            got = {u: (int(kt), int(need), bool(tied), int(n)) for u, kt, need, tied, n in
                   con.sql(threshold_sql(view, m, window=window)).fetchall()}
            assert got == want, (m, window)


def test_bounded_counts_equal_brute_force_with_duplicate_points(tmp_path):
    """Per-person bounding against a direct computation: each user's m points of smallest key
    (the keys from the same SQL view and salt), on users with many duplicate points, so that
    thresholds are tied (more copies of the threshold point than are kept) and untied."""
    import duckdb

    from veil.maps.points import _points_view

    g = np.random.default_rng(5)
    rows = []
    for u in range(60):
        pool = np.column_stack([g.uniform(-0.05, 1.05, 4), g.uniform(-0.05, 2.05, 4)])
        for i in g.integers(0, 4, size=int(g.integers(1, 30))):
            rows.append((f"user {u}", *pool[i]))
    df = pd.DataFrame(rows, columns=["user", "lat", "lon"])
    f = tmp_path / "dups.parquet"
    df.to_parquet(f)
    con = duckdb.connect()
    con.register("pts", df)
    tied_users = set()
    for m in (1, 2, 5, 13):
        pc = grid_counts(f, GRID, user="user", max_points=m, rng=make_rng(seed=m))
        salt = int(make_rng(seed=m).integers(0, 2**62))
        view = _points_view(GRID, src="pts", lat="lat", lon="lon", user="user", time=None,
                            start=None, end=None, salt=salt)
        pts = con.sql(f"SELECT __u, __k, __cell FROM ({view}) WHERE __inside").fetchall()
        want = np.zeros(GRID.n_cells, dtype=np.int64)
        by_user: dict = {}
        for u, k, cell in pts:
            by_user.setdefault(u, []).append((k, cell))
        for u, lst in by_user.items():
            lst.sort()
            for _, cell in lst[:m]:
                want[cell] += 1
            if len(lst) > m and lst[m][0] == lst[m - 1][0]:
                tied_users.add((m, u))
        assert np.array_equal(pc.counts.ravel(), want), m
    assert len(tied_users) > 20  # the tied case is exercised


def test_only_tied_users_reach_the_tie_allocation(tmp_path, monkeypatch):
    """Local path: of 3005 users over the bound only the 5 whose threshold point is duplicated
    beyond the bound (50 copies of one point each) come out as tie rows (the counting pass used to return a tie row for
    every user over the bound, and the thresholds of all of them were fetched into a Python
    dict: users-sized Python objects, 1.7 GB at 2 x 10^6 users)."""
    import veil.maps.points as points

    seen = []
    collect = points.collect_counts

    def spy(table, n_cells):
        out = collect(table, n_cells)
        seen.append(out[1])
        return out

    monkeypatch.setattr(points, "collect_counts", spy)
    g = np.random.default_rng(0)
    light = pd.DataFrame({"user": np.repeat(np.arange(3000), 5).astype(str),
                          "lat": g.random(15000), "lon": 2 * g.random(15000)})
    heavy = pd.DataFrame({"user": np.repeat([f"h{i}" for i in range(5)], 50),
                          "lat": np.repeat(g.random(5), 50), "lon": np.repeat(g.random(5), 50)})
    f = tmp_path / "ties.parquet"
    pd.concat([light, heavy], ignore_index=True).to_parquet(f)
    pc = grid_counts(f, GRID, user="user", max_points=3, rng=make_rng(seed=9))
    assert pc.private["users_over_bound"] == 3005
    assert pc.counts.sum() == 3005 * 3
    ties = seen[0]
    assert (ties.num_rows if hasattr(ties, "num_rows") else len(ties)) == 5  # a list before
    assert sorted(ties.column("tie_user").to_pylist()) == [f"h{i}" for i in range(5)]
    assert ties.column("n").to_pylist() == [50] * 5


def test_tie_allocation_gives_each_user_need_points_lowest_cell_first():
    """``tie_counts`` (in DuckDB) against the greedy allocation written out in Python, on tie
    rows spread over cells (as a 64-bit key collision would spread them) and partitions."""
    import duckdb
    import pyarrow as pa

    from veil.maps.points import tie_counts

    g = np.random.default_rng(2)
    cells, users, ns, needs = [], [], [], []
    need_of = {}
    for u in range(40):
        need_of[u] = int(g.integers(1, 6))
        for _ in range(int(g.integers(1, 6))):
            cells.append(int(g.integers(0, 16)))
            users.append(f"u'{u}")
            ns.append(int(g.integers(1, 4)))
            needs.append(need_of[u])
    want = np.zeros(16, dtype=np.int64)
    for u in range(40):
        left = need_of[u]
        for cell, n in sorted((c, n) for c, uu, n in zip(cells, users, ns) if uu == f"u'{u}"):
            take = min(n, left)
            want[cell] += take
            left -= take
    con = duckdb.connect()
    con.register("t", pa.table({"cell": cells, "tie_user": users, "n": ns, "need": needs}))
    got = tie_counts(con, "SELECT * FROM t", 16)
    assert np.array_equal(got, want)
    assert got.sum() == sum(min(need_of[u], sum(n for uu, n in zip(users, ns) if uu == f"u'{u}"))
                            for u in range(40))


def test_many_users_with_a_large_bound_fall_back_to_the_window_plan(tmp_path):
    """Issue found on 10^5 users x 200 points with --max-points 1000: the top-m aggregate
    reserves m slots per user and ran out of DuckDB's memory limit, and the error said the
    Parquet file was corrupt. The window plan spills; the counts are the same."""
    f = _many_users_file(tmp_path)
    runs = {ml: grid_counts(f, GRID, user="user", max_points=1000, rng=make_rng(seed=3),
                            memory_limit=ml) for ml in ("1GB", "16MB")}
    assert runs["1GB"].private["threshold_plan"] == "top-m"
    assert runs["16MB"].private["threshold_plan"] == "window"
    assert np.array_equal(runs["1GB"].counts, runs["16MB"].counts)
    assert runs["16MB"].counts.sum() == 15000 + 5 * 1000
    assert runs["16MB"].private["points_removed_by_bound"] == 5 * 500


def test_a_bound_of_a_million_points_uses_the_window_plan(tmp_path):
    """``--max-points 1000000`` failed: DuckDB's top-k aggregate takes fewer than 10^6 keys
    ("Invalid input for MIN/MAX"), and the error was reported as an unreadable file. A person
    with 10^6 + 3 points (3 of them copies of one point) keeps exactly 10^6 of them."""
    import duckdb

    f = tmp_path / "big.parquet"
    con = duckdb.connect()
    con.execute(f"COPY (SELECT 'big' AS user, (i % 997) / 997.0 AS lat, (i % 991) / 495.5 AS lon "
                f"FROM range(1000000) t(i) UNION ALL SELECT 'big', 0.5, 0.5 FROM range(3) "
                f"UNION ALL SELECT 'small', 0.25, 1.5 FROM range(4)) TO '{f}' (FORMAT parquet)")
    pc = grid_counts(f, GRID, user="user", max_points=10**6, rng=make_rng(seed=2))
    assert pc.private["threshold_plan"] == "window"
    assert pc.private["users_over_bound"] == 1 and pc.counts.sum() == 10**6 + 4
    every = grid_counts(f, GRID, protects="record").counts
    assert (every - pc.counts >= 0).all() and (every - pc.counts).sum() == 3


def test_dask_partition_thresholds_fall_back_too(tmp_path, monkeypatch):
    """Pass 1 of the Dask path: the list plan and the window plan give the same table, and a
    list plan that runs out of DuckDB's memory falls back to the window plan."""
    import contextlib

    import duckdb

    import veil.maps.dask as vd

    f = _many_users_file(tmp_path)
    spec = {"path": str(f), "grid": GRID.to_dict(), "lat": "lat", "lon": "lon", "user": "user",
            "time": None, "start": None, "end": None, "salt": 77, "m": 1000,
            "memory_limit": "1GB", "buckets": 3}

    def rows(t):
        return sorted((r["__u"], sorted(r["__ks"]), r["__n"], r["__b"]) for r in t.to_pylist())

    out = {plan: rows(vd._part_thresholds(spec, 0, 22500, plan)) for plan in ("list", "window")}
    assert out["list"] == out["window"] and len(out["list"]) == 3005
    assert {len(r[1]) for r in out["list"]} == {5, 1001}  # the m + 1 smallest keys
    assert {r[3] for r in out["list"]} == {0, 1, 2}

    class NoListMemory:
        def __init__(self, con):
            self.con = con

        def sql(self, q):
            if "list_slice(" in q:
                raise duckdb.OutOfMemoryException("out of memory (test)")
            return self.con.sql(q)

        def __getattr__(self, name):
            return getattr(self.con, name)

    con = vd._con

    @contextlib.contextmanager
    def starved(spec):
        with con(spec) as c:
            yield NoListMemory(c)

    monkeypatch.setattr(vd, "_con", starved)
    assert rows(vd._part_thresholds(spec, 0, 22500)) == out["list"]
    with pytest.raises(duckdb.OutOfMemoryException):
        vd._part_thresholds(spec, 0, 22500, "list")


def test_out_of_memory_is_not_reported_as_a_corrupt_file(tmp_path):
    import duckdb

    from veil.errors import ResourceError
    from veil.io.read import _duck_error

    try:
        con = duckdb.connect()
        con.execute("SET memory_limit = '8MB'")
        con.sql("SELECT i % 20000 AS u, min(i, 1000) FROM range(200000) t(i) GROUP BY u"
                ).fetchall()
    except duckdb.OutOfMemoryException as exc:
        err = _duck_error(exc, tmp_path / "p.parquet", "parquet", ",", True)
    else:
        pytest.fail("DuckDB did not run out of memory: the test needs a smaller limit")
    assert isinstance(err, ResourceError)
    assert "ran out of memory" in str(err) and "--memory-limit" in str(err)
    assert "corrupt" not in str(err)
