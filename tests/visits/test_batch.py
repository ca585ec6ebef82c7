"""Per-user batch: DuckDB histograms, the driver equals per-user calls, atomic writes."""

import numpy as np
import pytest

from veil.errors import DataError, ParameterError
from veil.visits import hide, resemble
from veil.visits.batch import (align_target, load_checkins, sanitize_users, write_table)


@pytest.fixture
def checkins(tmp_path):
    rng = np.random.default_rng(4)
    cats = ["Bar", "Church", "Park", "Hospital", "Office"]
    rows = []
    for u in range(40):
        k = int(rng.integers(1, 30))
        probs = rng.dirichlet(np.ones(5))
        rows += [(f"u{u:03d}", cats[c], f"2012-04-{1 + i % 28:02d}")
                 for i, c in enumerate(rng.choice(5, size=k, p=probs))]
    rows += [("only_sensitive", "Church", "2012-04-01"), ("only_sensitive", "Hospital", "x")]
    p = tmp_path / "c.csv"
    p.write_text("user,category,time\n" + "".join(f"{a},{b},{c}\n" for a, b, c in rows))
    return p, rows


def test_histograms_match_direct_counts(checkins):
    p, rows = checkins
    uh = load_checkins(p)
    assert uh.n_users == 41
    for u in range(uh.n_users):
        want = {}
        for a, b, _ in rows:
            if a == uh.users[u]:
                want[b] = want.get(b, 0) + 1
        got = {c: int(v) for c, v in zip(uh.categories, uh.dense(u)) if v}
        assert got == want


def test_driver_equals_per_user_calls_and_records_infeasible(checkins):
    p, _ = checkins
    uh = load_checkins(p)
    sens = np.array([uh.categories.index("Church"), uh.categories.index("Hospital")])
    br = sanitize_users(uh, problem="hide", sensitive=sens)
    st = br.status_counts()
    only_sens = sum(uh.dense(u)[np.setdiff1d(np.arange(5), sens)].sum() == 0
                    for u in range(uh.n_users))
    assert only_sens >= 1
    assert st == {"ok": 41 - only_sens, "dropped": only_sens}
    assert "only_sensitive" not in set(br.table["user"])  # never published raw
    for u in range(uh.n_users):
        if br.summary["status"][u] != "ok":
            continue
        want = hide(uh.dense(u), sensitive=sens).histogram
        rows = br.table["user"] == uh.users[u]
        got = np.zeros(len(uh.categories), dtype=np.int64)
        got[[uh.categories.index(c) for c in br.table["category"][rows]]] = \
            br.table["sanitized"][rows]
        assert got.tolist() == want.tolist()
    assert (br.table["sanitized"][np.isin(br.table["category"], ["Church", "Hospital"])] == 0).all()


@pytest.mark.parametrize("distance", ["js", "l1", "chi2"])
def test_vectorized_buckets_equal_per_user_path(checkins, distance):
    p, _ = checkins
    uh = load_checkins(p)
    sens = np.array([uh.categories.index("Church")])
    a = sanitize_users(uh, problem="hide", sensitive=sens, distance=distance, bucket=7)
    b = sanitize_users(uh, problem="hide", sensitive=sens, distance=distance, vectorized=False)
    for k in ("user", "category", "sanitized"):
        assert a.table[k].tolist() == b.table[k].tolist(), k
    assert a.summary["status"].tolist() == b.summary["status"].tolist()
    ok = a.summary["status"] == "ok"
    np.testing.assert_allclose(a.summary["quality_loss"][ok], b.summary["quality_loss"][ok],
                               rtol=1e-9)
    assert list(a.summary) == list(b.summary)


def test_hide_many_large_k_falls_back_and_matches():
    from veil.visits.hide import hide_many

    rng = np.random.default_rng(8)
    H = rng.integers(0, 40, size=(50, 12))
    out, q, st = hide_many(H, sensitive=[1, 2], max_steps=10)  # many users above max_steps
    for u in range(50):
        if st[u]:
            continue
        r = hide(H[u], sensitive=[1, 2])
        assert q[u] == pytest.approx(r.quality_loss, rel=1e-9)
        assert out[u].sum() == H[u].sum()


def test_driver_resemble(checkins):
    p, _ = checkins
    uh = load_checkins(p)
    target = np.array([1.0, 0.0, 1.0, 0.0, 1.0])
    br = sanitize_users(uh, problem="resemble", target=target, quality_bound=0.05)
    ok = br.summary["status"] == "ok"
    assert ok.all()
    assert (br.summary["quality_loss"][ok] <= 0.05 + 1e-9).all()
    u = 3
    want = resemble(uh.dense(u), target, quality_bound=0.05)
    assert br.summary["privacy_distance"][u] == pytest.approx(want.privacy_value)


def test_real_nyc_file_loads():
    from veil.datasets import shared_data_path

    uh = load_checkins(shared_data_path("foursquare-nyc", "foursquare_nyc.csv"),
                       user_column="label")
    # 44,809 data rows (the shared README says 44,808; the file has no trailing newline)
    assert uh.n_users == 193 and int(uh.count.sum()) == 44_809
    assert len(uh.categories) == 10


@pytest.mark.parametrize("content, kwargs, match", [
    ("user,category\nu1,Bar\n", dict(user_column="uid"), "no user column 'uid'"),
    ("user,category\nu1,Bar\n,Park\n", {}, "empty 'user'"),
    ("user,category\nu1,Bar\nu2,\n", {}, "empty 'category'"),
    ("user,category\nu1,Bar\n", dict(categories=["Park"]), "outside the given domain"),
])
def test_bad_checkins(tmp_path, content, kwargs, match):
    p = tmp_path / "c.csv"
    p.write_text(content)
    with pytest.raises(DataError, match=match):
        load_checkins(p, **kwargs)


def test_missing_checkin_file(tmp_path):
    with pytest.raises(DataError, match="not found"):
        load_checkins(tmp_path / "nope.csv")


def test_align_target():
    dom, t = align_target(["Bar", "Zoo"], [1, 3], ["Bar", "Park"])
    assert dom == ["Bar", "Park", "Zoo"] and t.tolist() == [1, 0, 3]
    with pytest.raises(ParameterError, match="different domains"):
        align_target(["Zoo"], [1], ["Bar", "Park"])


@pytest.mark.parametrize("fmt", ["csv", "parquet", "json"])
def test_write_table_atomic(tmp_path, fmt):
    import duckdb

    cols = {"user": np.array(["a", "b"]), "count": np.array([1, 2])}
    out = write_table(cols, tmp_path / f"t.{fmt}")
    assert sorted(x.name for x in tmp_path.iterdir()) == [f"t.{fmt}"]  # no temp file left
    if fmt != "json":
        got = duckdb.sql(f"SELECT * FROM '{out}' ORDER BY 1").fetchall()
        assert got == [("a", 1), ("b", 2)]
    with pytest.raises(ParameterError, match="does not exist"):
        write_table(cols, tmp_path / "missing" / "t.csv")


def test_hide_many_statuses():
    from veil.visits.hide import hide_many

    H = np.array([[3, 0, 2], [0, 4, 0], [0, 0, 0], [1, 1, 1]])
    out, q, st = hide_many(H, sensitive=[1])
    assert st[0] == "" and out[0].tolist() == [3, 0, 2]
    assert "every visited place" in st[1] and out[1].sum() == 0 and np.isnan(q[1])
    assert "empty" in st[2]
    assert st[3] == "" and out[3].sum() == 3 and out[3][1] == 0
    # kl is refused for everyone: accepting it only without sensitive visits would reveal them
    with pytest.raises(ParameterError, match="kl"):
        hide_many(H, sensitive=[1], distance="kl")
    with pytest.raises(ParameterError, match="non-negative integer"):
        hide_many([[1, -1]], sensitive=[0])
