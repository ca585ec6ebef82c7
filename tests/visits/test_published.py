"""Issue 13 "Hidden means hidden": what `veil visits ...` and the batch task publish.

Every test here failed on the main branch before the fix (defects 1-6 and 8), and the
end-to-end neighbouring-inputs tests check every file each command writes.
"""

import json
import os
from pathlib import Path

import duckdb
import numpy as np
import pytest

from veil.cli import main
from veil.datasets import shared_data_path
from veil.visits import avoid, hide, resemble

DOM = ["Bar", "Church", "Park", "Hospital", "Office", "Zoo"]  # first and last bins sensitive
SENS = ["Bar", "Hospital", "Zoo"]


def run(argv, capsys):
    try:
        main([str(a) for a in argv])
        code = 0
    except SystemExit as exc:
        code = exc.code
    out = capsys.readouterr()
    return code, out.out, out.err


def write_checkins(path: Path, hists: dict[str, dict[str, int]]) -> None:
    rows = ["user,category,time"]
    for u, h in hists.items():
        for c, k in h.items():
            rows += [f"{u},{c},t{i}" for i in range(k)]
    path.write_text("\n".join(rows) + "\n")


def random_users(seed=0, n=25):
    rng = np.random.default_rng(seed)
    out = {}
    for u in range(n):
        counts = rng.multinomial(int(rng.integers(3, 30)), rng.dirichlet(np.ones(len(DOM))))
        out[f"u{u:02d}"] = {c: int(k) for c, k in zip(DOM, counts) if k}
    out["u_nosens"] = {"Park": 4, "Office": 1}
    return out


def read_long(path: Path):
    return duckdb.sql(f"SELECT * FROM read_csv('{path}', header=true)").fetchall()


def dense(rows, users, dom):
    got = {}
    for u, c, v in rows:
        got.setdefault(str(u), np.zeros(len(dom), dtype=np.int64))[dom.index(c)] = v
    return got


# --------------------------------------------------------------------------- defect 1
def test_defect1_checkin_file_hides_the_named_categories(tmp_path, capsys):
    users = random_users()
    write_checkins(tmp_path / "c.csv", users)
    out = tmp_path / "o.csv"
    code, _, err = run(["visits", "hide", tmp_path / "c.csv", "--sensitive", ",".join(SENS),
                        "--categories", ",".join(DOM), "-o", out], capsys)
    assert code == 0, err
    got = dense(read_long(out), users, DOM)
    sidx = [DOM.index(s) for s in SENS]
    checked = 0
    for u, h in users.items():
        hv = np.array([h.get(c, 0) for c in DOM])
        if hv[np.setdiff1d(np.arange(len(DOM)), sidx)].sum() == 0:
            assert u not in got
            continue
        want = hide(hv, sensitive=sidx).histogram
        assert got[u].tolist() == want.tolist(), u
        checked += 1
    assert checked >= 20


def test_defect1_real_nyc_file(tmp_path, capsys):
    src = shared_data_path("foursquare-nyc", "foursquare_nyc.csv")
    out = tmp_path / "nyc.csv"
    roots = duckdb.sql(f"SELECT DISTINCT category FROM read_csv('{src}') ORDER BY 1").fetchall()
    (tmp_path / "roots.txt").write_text("".join(f"{r[0]}\n" for r in roots))
    # the command (no taxonomy), with the public domain given as a file
    code, _, err = run(["visits", "hide", src, "--user-column", "label", "--sensitive",
                        "Professional & Other Places", "--categories",
                        f"@{tmp_path / 'roots.txt'}", "-o", out], capsys)
    assert code == 0, err
    tot = dict(duckdb.sql(f"SELECT category, sum(sanitized) FROM read_csv('{out}') "
                          "GROUP BY 1").fetchall())
    orig = dict(duckdb.sql(f"SELECT category, count(*) FROM read_csv('{src}') "
                           "GROUP BY 1").fetchall())
    assert tot["Professional & Other Places"] == 0
    for c, n in orig.items():  # every other category keeps at least its own visits
        if c != "Professional & Other Places":
            assert tot[c] >= n, c
    assert sum(tot.values()) == sum(orig.values())


# --------------------------------------------------------------------------- defects 2-4
def test_defect2_full_domain_rows_and_defect4_no_summary_by_default(tmp_path, capsys):
    users = random_users(1)
    write_checkins(tmp_path / "c.csv", users)
    for cmd, extra in (("hide", ["--sensitive", "Church,Hospital"]),
                       ("resemble", ["--target", "self", "--quality-bound", "0.05"]),
                       ("avoid", ["--target", "self", "--quality-bound", "0.05"])):
        d = tmp_path / cmd
        d.mkdir()
        out = d / "o.csv"
        code, _, err = run(["visits", cmd, tmp_path / "c.csv", "--categories", ",".join(DOM),
                            "-o", out, *extra], capsys)
        assert code == 0, err
        # only the published file and its public sidecar: no summary beside them
        assert sorted(p.name for p in d.iterdir()) == ["o.csv", "o.csv.meta.json"]
        rows = read_long(out)
        by_user = {}
        for u, c, _ in rows:
            by_user.setdefault(str(u), []).append(c)
        for u, cats in by_user.items():
            assert cats == DOM, (cmd, u)  # every category, in domain order, for every user


def test_defect3_single_histogram_publishes_only_the_histogram(tmp_path, capsys):
    (tmp_path / "h.json").write_text(json.dumps({"Bar": 5, "Church": 2, "Park": 3}))
    out = tmp_path / "o.json"
    code, _, err = run(["visits", "hide", tmp_path / "h.json", "--sensitive", "Church",
                        "--categories", ",".join(DOM), "-o", out], capsys)
    assert code == 0, err
    doc = json.loads(out.read_text())
    assert doc == {"histogram": {"Bar": 6, "Church": 0, "Park": 4, "Hospital": 0, "Office": 0,
                                 "Zoo": 0}}
    meta = json.loads((tmp_path / "o.json.meta.json").read_text())
    text = json.dumps(meta)
    for word in ("quality_loss", '"K"', "original", "sensitive_visits", "runtime"):
        assert word not in text
    assert meta["domain"] == DOM and meta["sensitive"] == ["Church"]


def test_defect4_report_is_opt_in_and_private(tmp_path, capsys):
    users = random_users(2)
    users["only_sens"] = {"Church": 3}
    write_checkins(tmp_path / "c.csv", users)
    out, rep = tmp_path / "pub" , tmp_path / "private"
    out.mkdir()
    rep.mkdir()
    code, _, err = run(["visits", "hide", tmp_path / "c.csv", "--sensitive", "Church",
                        "--categories", ",".join(DOM), "-o", out / "o.csv", "--report",
                        rep / "r.csv"], capsys)
    assert code == 0, err
    assert sorted(p.name for p in out.iterdir()) == ["o.csv", "o.csv.meta.json"]
    report = duckdb.sql(f"SELECT user, sensitive_visits, status FROM read_csv('{rep / 'r.csv'}')"
                        ).fetchall()
    assert ("only_sens", 3, "dropped") in report
    assert "only_sens" not in (out / "o.csv").read_text()
    # the report may not overwrite the output, the input or be the same file twice
    for bad in (out / "o2.csv", tmp_path / "c.csv"):
        code, _, err = run(["visits", "hide", tmp_path / "c.csv", "--sensitive", "Church",
                            "--categories", ",".join(DOM), "-o", out / "o2.csv", "--report",
                            bad], capsys)
        assert code == 2 and ("input file" in err or "given twice" in err), err
        assert not (out / "o2.csv").exists()


def test_no_output_over_the_input_or_through_a_symlink(tmp_path, capsys):
    (tmp_path / "h.json").write_text(json.dumps({"Bar": 5, "Church": 2}))
    before = (tmp_path / "h.json").read_text()
    code, _, err = run(["visits", "hide", tmp_path / "h.json", "-s", "Church", "--categories",
                        "Bar,Church", "-o", tmp_path / "h.json"], capsys)
    assert code == 2 and "is the input" in err
    assert (tmp_path / "h.json").read_text() == before
    (tmp_path / "elsewhere.json").write_text("keep")
    os.symlink(tmp_path / "elsewhere.json", tmp_path / "link.json")
    code, _, err = run(["visits", "hide", tmp_path / "h.json", "-s", "Church", "--categories",
                        "Bar,Church", "-o", tmp_path / "link.json"], capsys)
    assert code == 2 and "symbolic link" in err
    assert (tmp_path / "elsewhere.json").read_text() == "keep"


@pytest.mark.parametrize("command, option", [("hide", "--categories"), ("hide", "--sensitive"),
                                             ("resemble", "--categories"),
                                             ("avoid", "--categories")])
def test_force_never_overwrites_a_names_file(tmp_path, capsys, command, option):
    """``--categories @FILE`` / ``--sensitive @FILE`` name inputs: ``-o FILE --force`` replaced
    the list with the output table."""
    (tmp_path / "h.json").write_text(json.dumps({"Bar": 5, "Church": 2, "Park": 3}))
    names = tmp_path / "names.csv"
    names.write_text("Bar\nChurch\nPark\n" if option == "--categories" else "Church\n")
    argv = ["visits", command, tmp_path / "h.json", "-o", names, "--force"]
    if command == "hide":
        argv += ["--categories", "Bar,Church,Park", "--sensitive", "Church"]
        argv[argv.index(option) + 1] = f"@{names}"
    else:
        argv += ["--categories", f"@{names}", "--target", tmp_path / "h.json"]
        argv += ["--quality-bound", "0.1"]
    before = names.read_text()
    code, _, err = run(argv, capsys)
    assert code == 2 and "is the input" in err, err
    assert names.read_text() == before


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_force_never_replaces_a_pipe_or_device(tmp_path, capsys):
    """``-o /dev/null --force`` (as root) replaced the device with a regular file."""
    (tmp_path / "h.json").write_text(json.dumps({"Bar": 5, "Church": 2}))
    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)
    code, _, err = run(["visits", "hide", tmp_path / "h.json", "-s", "Church", "--categories",
                        "Bar,Church", "-o", fifo, "--force"], capsys)
    assert code == 2 and "not a regular file" in err, err
    assert not os.path.isfile(fifo) and os.path.exists(fifo)
    assert not (tmp_path / "pipe.csv.meta.json").exists()


# --------------------------------------------------------------------------- defect 5
@pytest.mark.parametrize("name, hint", [("church", "did you mean 'Church'"),
                                        ("Chruch", "did you mean 'Church'"),
                                        ("Temple", "matches no category")])
def test_defect5_unmatched_sensitive_names_are_errors(tmp_path, capsys, name, hint):
    users = random_users(3)
    write_checkins(tmp_path / "c.csv", users)
    (tmp_path / "h.json").write_text(json.dumps({"Bar": 5, "Church": 2}))
    for inp in ("c.csv", "h.json"):
        out = tmp_path / f"o-{inp}.csv"
        code, _, err = run(["visits", "hide", tmp_path / inp, "--sensitive", name,
                            "--categories", ",".join(DOM), "-o", out], capsys)
        assert code == 2 and hint in err, err
        assert not out.exists() and not Path(str(out) + ".meta.json").exists()
    out = tmp_path / "ok.csv"
    code, _, err = run(["visits", "hide", tmp_path / "c.csv", "--sensitive", f"{name},Church",
                        "--allow-unmatched", "--categories", ",".join(DOM), "-o", out], capsys)
    assert code == 0, err
    assert all(v == 0 for _, c, v in read_long(out) if c == "Church")


def test_defect5_data_labels_outside_the_taxonomy_are_errors(tmp_path, capsys):
    # "Church " (trailing space) in the data used to escape the Spiritual Center subtree
    (tmp_path / "c.csv").write_text("user,category\nu1,Bar\nu1,Church \nu1,Park\n")
    code, _, err = run(["visits", "hide", tmp_path / "c.csv", "--sensitive",
                        "Spiritual Center", "--taxonomy", "foursquare", "-o",
                        tmp_path / "o.csv"], capsys)
    assert code == 2 and "'Church '" in err and "did you mean 'Church'" in err
    assert not (tmp_path / "o.csv").exists()


def test_defect5_batch_unmatched(tmp_path, capsys):
    write_checkins(tmp_path / "c.csv", random_users(4))
    code, _, err = run(["batch", "visits", tmp_path / "c.csv", "-o", tmp_path / "b",
                        "--categories", ",".join(DOM), "--sensitive", "Chruch", "--quiet"],
                       capsys)
    assert code == 2 and "did you mean 'Church'" in err
    code, _, err = run(["batch", "visits", tmp_path / "c.csv", "-o", tmp_path / "b",
                        "--categories", ",".join(DOM), "--sensitive", "Chruch,Church",
                        "--allow-unmatched", "--quiet"], capsys)
    assert code == 0, err


# --------------------------------------------------------------------------- defect 6
def test_defect6_histogram_without_sensitive_visits_is_published_unchanged(tmp_path, capsys):
    (tmp_path / "h.json").write_text(json.dumps({"Bar": 5, "Park": 3}))  # no Church key at all
    code, out, err = run(["visits", "hide", tmp_path / "h.json", "--sensitive", "Church",
                          "--categories", ",".join(DOM)], capsys)
    assert code == 0, err
    assert json.loads(out)["histogram"] == {"Bar": 5, "Church": 0, "Park": 3, "Hospital": 0,
                                            "Office": 0, "Zoo": 0}


def test_defect6_kl_refused_for_every_user():
    from veil.errors import ParameterError

    for h in ([3, 0, 2], [3, 1, 2]):  # without and with a sensitive visit: the same error
        with pytest.raises(ParameterError, match="cannot be used to hide"):
            hide(h, sensitive=[1], distance="kl")


def test_defect6_batch_task_drops_all_sensitive_users_and_reports_them(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from veil.engine import Job, run_job

    g = np.random.default_rng(3)
    cats = ["a", "b", "c", "d", "e"]
    n = 3000
    users = g.integers(0, 200, n).astype(str)
    cat = g.choice(cats, n, p=[0.4, 0.3, 0.15, 0.1, 0.05])
    users = np.append(users, ["only_sens", "only_sens"])
    cat = np.append(cat, ["d", "e"])
    pq.write_table(pa.table({"user": users, "category": cat}), tmp_path / "c.parquet")
    params = {"categories": cats, "sensitive": ["d", "e"]}
    run_job(Job(tmp_path / "c.parquet", tmp_path / "o", "visits-hide", params=params,
                buckets=5, progress=False))
    run_job(Job(tmp_path / "c.parquet", tmp_path / "r", "visits-hide-report", params=params,
                buckets=5, progress=False))
    rows = duckdb.sql(f"SELECT * FROM read_parquet('{tmp_path}/o/part-*.parquet', "
                      "union_by_name=true)").fetchall()
    assert {len(r) for r in rows} == {3}  # user, category, sanitized: nothing else
    got = dense(rows, None, cats)
    rep = {u: (s, st) for u, s, st in duckdb.sql(
        f"SELECT user, sensitive_visits, status FROM read_parquet('{tmp_path}/r/part-*.parquet',"
        " union_by_name=true)").fetchall()}
    for u in np.unique(users):
        h = np.array([np.sum((users == u) & (cat == c)) for c in cats])
        assert rep[u][0] == h[3:].sum()
        if h[:3].sum() == 0:
            assert u not in got and rep[u][1] == "dropped"
            continue
        assert rep[u][1] == "ok"
        assert got[u].tolist() == hide(h, sensitive=[3, 4]).histogram.tolist(), u


# --------------------------------------------------------------------------- defect 8
def test_defect8_target_self_and_per_user_targets(tmp_path, capsys):
    users = random_users(5, n=8)
    write_checkins(tmp_path / "c.csv", users)
    out = tmp_path / "ta.csv"
    code, _, err = run(["visits", "avoid", tmp_path / "c.csv", "--target", "self",
                        "--quality-bound", "0.05", "--categories", ",".join(DOM), "-o", out],
                       capsys)
    assert code == 0, err
    got = dense(read_long(out), users, DOM)
    for u, h in users.items():
        hv = np.array([h.get(c, 0) for c in DOM])
        want = avoid(hv, hv, quality_bound=0.05)
        assert got[u].tolist() == want.histogram.tolist()
    # a per-user target file: one profile per user
    rng = np.random.default_rng(1)
    targets = {u: rng.integers(1, 5, len(DOM)) for u in users}
    (tmp_path / "t.csv").write_text("user,category,weight\n" + "".join(
        f"{u},{c},{w}\n" for u, t in targets.items() for c, w in zip(DOM, t)))
    out = tmp_path / "tr.csv"
    code, _, err = run(["visits", "resemble", tmp_path / "c.csv", "--target", tmp_path / "t.csv",
                        "--quality-bound", "0.05", "--categories", ",".join(DOM), "-o", out],
                       capsys)
    assert code == 0, err
    got = dense(read_long(out), users, DOM)
    for u, h in users.items():
        hv = np.array([h.get(c, 0) for c in DOM])
        want = resemble(hv, targets[u].astype(float), quality_bound=0.05)
        assert got[u].tolist() == want.histogram.tolist()
    (tmp_path / "t2.csv").write_text("user,category,weight\nu00,Bar,1\n")
    code, _, err = run(["visits", "resemble", tmp_path / "c.csv", "--target", tmp_path / "t2.csv",
                        "--quality-bound", "0.05", "--categories", ",".join(DOM), "-o",
                        tmp_path / "x.csv"], capsys)
    assert code == 2 and "no target weight" in err and not (tmp_path / "x.csv").exists()


# --------------------------------------------------------------------------- neighbours
def neighbours(tmp_path: Path, *, same_k: bool):
    """Two check-in files that differ only in user u03's sensitive (Church/Hospital) visits."""
    a = random_users(7)
    b = {u: dict(h) for u, h in a.items()}
    a["u03"] = {"Bar": 4, "Park": 3, "Office": 1, "Church": 2}
    b["u03"] = {"Bar": 4, "Park": 3, "Office": 1, **({"Hospital": 2} if same_k else {})}
    pa_, pb = tmp_path / "A" / "c.csv", tmp_path / "B" / "c.csv"
    for p, h in ((pa_, a), (pb, b)):
        p.parent.mkdir()
        write_checkins(p, h)
    return pa_, pb


def files_of(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.name != "c.csv"}


def assert_tables_differ_only_in_counts(fa: Path, fb: Path, user: str, *, allowed: bool):
    ta = duckdb.sql(f"SELECT * FROM read_csv('{fa}', header=true)")
    tb = duckdb.sql(f"SELECT * FROM read_csv('{fb}', header=true)")
    assert ta.columns == tb.columns and ta.types == tb.types
    ra, rb = ta.fetchall(), tb.fetchall()
    assert len(ra) == len(rb)
    for x, y in zip(ra, rb):
        assert x[:-1] == y[:-1]  # same user and category in every row
        if x[-1] != y[-1]:
            assert allowed and str(x[0]) == user, (x, y)


@pytest.mark.parametrize("cmd", ["hide", "resemble", "avoid"])
@pytest.mark.parametrize("same_k", [True, False])
def test_end_to_end_neighbouring_inputs(tmp_path, capsys, cmd, same_k):
    fa, fb = neighbours(tmp_path, same_k=same_k)
    (tmp_path / "target.csv").write_text("category,weight\n" + "".join(
        f"{c},{w}\n" for c, w in zip(DOM, [3, 1, 2, 1, 2, 1])))
    extra = {"hide": ["--sensitive", "Church,Hospital"],
             "resemble": ["--target", tmp_path / "target.csv", "--quality-bound", "0.05"],
             "avoid": ["--target", tmp_path / "target.csv", "--quality-bound", "0.05"]}[cmd]
    for f in (fa, fb):
        code, _, err = run(["visits", cmd, f, "--categories", ",".join(DOM), "-o",
                            f.parent / "out.csv", *extra], capsys)
        assert code == 0, err
    A, B = files_of(fa.parent), files_of(fb.parent)
    assert list(A) == list(B) == ["out.csv", "out.csv.meta.json"]
    assert A["out.csv.meta.json"] == B["out.csv.meta.json"]  # the sidecar: byte-identical
    changes = cmd != "hide" or not same_k
    assert_tables_differ_only_in_counts(fa.parent / "out.csv", fb.parent / "out.csv", "u03",
                                        allowed=changes)
    if cmd == "hide" and same_k:
        assert A == B  # same non-sensitive visits, same K: nothing published differs
    # the library gives the same counts as the CLI for the changed user
    for f, h in ((fa, {"Bar": 4, "Park": 3, "Office": 1, "Church": 2}),
                 (fb, {"Bar": 4, "Park": 3, "Office": 1, **({"Hospital": 2} if same_k else {})})):
        hv = np.array([h.get(c, 0) for c in DOM])
        got = dense(read_long(f.parent / "out.csv"), None, DOM)["u03"]
        t = np.array([3, 1, 2, 1, 2, 1], dtype=float)
        want = {"hide": lambda: hide(hv, sensitive=[1, 3]),
                "resemble": lambda: resemble(hv, t, quality_bound=0.05),
                "avoid": lambda: avoid(hv, t, quality_bound=0.05)}[cmd]().histogram
        assert got.tolist() == want.tolist()


def test_end_to_end_neighbouring_single_histograms(tmp_path, capsys):
    docs = {}
    for name, h in (("a", {"Bar": 4, "Park": 3, "Church": 2}), ("b", {"Bar": 4, "Park": 3})):
        d = tmp_path / name
        d.mkdir()
        (d / "h.json").write_text(json.dumps(h))
        code, _, err = run(["visits", "hide", d / "h.json", "-s", "Church", "--categories",
                            ",".join(DOM), "-o", d / "o.json"], capsys)
        assert code == 0, err
        docs[name] = files_of(d)
        del docs[name]["h.json"]
    assert list(docs["a"]) == list(docs["b"]) == ["o.json", "o.json.meta.json"]
    assert docs["a"]["o.json.meta.json"] == docs["b"]["o.json.meta.json"]
    ha = json.loads(docs["a"]["o.json"])["histogram"]
    hb = json.loads(docs["b"]["o.json"])["histogram"]
    assert list(ha) == list(hb) == DOM  # same keys in the same order; only counts differ


@pytest.mark.parametrize("same_k", [True, False])
def test_end_to_end_neighbouring_batch_task(tmp_path, capsys, same_k):
    fa, fb = neighbours(tmp_path, same_k=same_k)
    for f in (fa, fb):
        code, _, err = run(["batch", "visits", f, "-o", f.parent / "out", "--categories",
                            ",".join(DOM), "--sensitive", "Church,Hospital", "--buckets", "4",
                            "--quiet"], capsys)
        assert code == 0, err
    A, B = files_of(fa.parent / "out"), files_of(fb.parent / "out")
    assert list(A) == list(B)
    import pyarrow.parquet as pq

    for name in A:
        if not name.endswith(".parquet"):
            continue
        ta, tb = pq.read_table(fa.parent / "out" / name), pq.read_table(fb.parent / "out" / name)
        assert ta.schema == tb.schema and ta.num_rows == tb.num_rows
        if A[name] == B[name]:
            continue
        assert not same_k  # the same K: the parts are byte-identical
        a, b = ta.to_pydict(), tb.to_pydict()
        assert list(a) == ["user", "category", "sanitized"]
        for col in a:
            if col != "sanitized":
                assert a[col] == b[col], col
        diff = {a["user"][i] for i in range(ta.num_rows) if a["sanitized"][i] != b["sanitized"][i]}
        assert diff == {"u03"}
    # the engine's bookkeeping (manifest, markers: private to the custodian, see visits.md)
    # differs only in the input's identity, counts of input rows, hashes and times
    volatile = {"job_fingerprint", "started", "finished", "rows_in", "sha256", "input", "output",
                "parts"}

    def strip(d):
        if isinstance(d, dict):
            return {k: strip(v) for k, v in d.items() if k not in volatile}
        return d

    for name in A:
        if name.endswith(".json"):
            ja, jb = json.loads(A[name]), json.loads(B[name])
            assert strip(ja) == strip(jb), name


def test_mitigated_release_has_a_fixed_size_for_neighbours(tmp_path, capsys):
    fa, fb = neighbours(tmp_path, same_k=False)
    for f in (fa, fb):
        code, _, err = run(["visits", "hide", f, "--categories", ",".join(DOM), "-s",
                            "Church,Hospital", "--resample-size", "15", "--seed", "4", "-o",
                            f.parent / "out.csv"], capsys)
        assert code == 0, err
    A, B = files_of(fa.parent), files_of(fb.parent)
    assert A["out.csv.meta.json"] == B["out.csv.meta.json"]
    meta = json.loads(A["out.csv.meta.json"])
    assert meta["mitigation"]["size"] == 15 and "experiments" in meta["randomness"]
    for f in (fa, fb):
        sizes = duckdb.sql(f"SELECT user, sum(sanitized) FROM read_csv('{f.parent / 'out.csv'}') "
                           "GROUP BY 1").fetchall()
        assert {s for _, s in sizes} == {15}


def test_hostile_names_through_the_cli(tmp_path, capsys):
    import csv

    cats = ["Bob's \"Bar\"", "Ch,urch'; DROP TABLE x;--", "Park\\n", "Zoo"]
    ucol = 'us"er; --'
    rows = [("u'1", cats[0]), ("u'1", cats[1]), ("u'1", cats[2]), ("u2", cats[1]),
            ("u2", cats[3]), ("u2", cats[3])]
    with open(tmp_path / "c.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow([ucol, "category"])
        w.writerows(rows)
    (tmp_path / "dom.txt").write_text("\n".join(cats) + "\n")
    (tmp_path / "sens.txt").write_text(cats[1] + "\n")
    with open(tmp_path / "t.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow([ucol, "category", "weight"])
        w.writerows([("u'1", cats[0], 1), ("u'1", cats[3], 2), ("u2", cats[2], 1)])
    out = tmp_path / "o.csv"
    code, _, err = run(["visits", "hide", tmp_path / "c.csv", "--user-column", ucol,
                        "--sensitive", f"@{tmp_path / 'sens.txt'}", "--categories",
                        f"@{tmp_path / 'dom.txt'}", "-o", out], capsys)
    assert code == 0, err
    got = list(csv.reader(out.open()))[1:]
    assert [r[1] for r in got] == cats * 2
    assert all(int(r[2]) == 0 for r in got if r[1] == cats[1])
    code, _, err = run(["visits", "resemble", tmp_path / "c.csv", "--user-column", ucol,
                        "--target", tmp_path / "t.csv", "--quality-bound", "0.2",
                        "--categories", f"@{tmp_path / 'dom.txt'}", "-o", tmp_path / "r.csv"],
                       capsys)
    assert code == 0, err


def test_batch_task_with_the_mitigation(tmp_path, capsys):
    users = random_users(8)
    write_checkins(tmp_path / "c.csv", users)
    code, _, err = run(["batch", "visits", tmp_path / "c.csv", "-o", tmp_path / "b",
                        "--categories", ",".join(DOM), "--sensitive", "Church,Hospital",
                        "--resample-size", "7", "--resample-mix", "0.2", "--seed", "3",
                        "--buckets", "3", "--quiet"], capsys)
    assert code == 0, err
    rows = duckdb.sql(f"SELECT user, category, sanitized FROM read_parquet('{tmp_path}/b/"
                      "part-*.parquet', union_by_name=true)").fetchall()
    got = dense(rows, None, DOM)
    assert set(got) == {u for u, h in users.items()
                        if sum(v for c, v in h.items() if c not in ("Church", "Hospital"))}
    for u, h in got.items():
        assert h.sum() == 7 and h[DOM.index("Church")] == 0 and h[DOM.index("Hospital")] == 0


def test_domain_from_data_is_an_explicit_opt_in_with_a_warning(tmp_path, capsys):
    from veil.errors import PrivacyWarning

    write_checkins(tmp_path / "c.csv", {"u1": {"Bar": 2, "Church": 1}, "u2": {"Park": 3}})
    code, _, err = run(["visits", "hide", tmp_path / "c.csv", "-s", "Church", "-o",
                        tmp_path / "o.csv"], capsys)
    assert code == 2 and "domain must be public" in err and not (tmp_path / "o.csv").exists()
    with pytest.warns(PrivacyWarning, match="taken from the\\s+private input"):
        code, _, err = run(["visits", "hide", tmp_path / "c.csv", "-s", "Church",
                            "--domain-from-data", "-o", tmp_path / "o.csv"], capsys)
    assert code == 0, err
    meta = json.loads((tmp_path / "o.csv.meta.json").read_text())
    assert meta["domain"] == ["Bar", "Church", "Park"]
    assert meta["domain_source"] == "input (--domain-from-data)"


def test_a_user_with_only_sensitive_visits_leaves_no_trace_in_the_json_summary(tmp_path,
                                                                               capsys):
    """Neighbours: the same users, and those plus one whose every visit is sensitive (7 x
    Hospital). Data and sidecar were byte-identical, but the published --json summary said
    `users_left_out: 1`. The operator's stderr line still says so (it is not published)."""
    base = random_users(5)
    outs = {}
    for name, extra in (("without", {}), ("with", {"s1": {"Hospital": 7}})):
        d = tmp_path / name
        d.mkdir()
        write_checkins(d / "c.csv", {**base, **extra})
        args = ["visits", "hide", d / "c.csv", "--categories", ",".join(DOM), "-s",
                "Church,Hospital", "-o", d / "out.csv"]
        code, out, err = run([*args, "--json"], capsys)
        assert code == 0, err
        summary = json.loads(out)
        for key in ("output", "sidecar"):
            summary[key] = Path(summary[key]).name
        outs[name] = (files_of(d), summary)
        code, _, err = run([*args, "--force"], capsys)
        assert code == 0 and (("1 user(s) left out" in err) == (name == "with")), err
    assert outs["with"] == outs["without"]
