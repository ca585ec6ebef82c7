"""`veil batch` review defects (each test failed before its fix).

1. users a task leaves out (all visits sensitive, every point off the grid) showed in the
   published folder: a part without rows for their bucket, and the manifest's user count;
2. ``batch visits --report`` was checked only after the main output was published;
3. ``--resample-mix`` without ``--resample-size`` was ignored; a huge ``--resample-size`` was
   an internal OverflowError;
4. ``batch status`` on a manifest with wrong types crashed; "already complete ... in N parts"
   printed the buckets; the unknown sensitive category advised a Python name;
5. each bucket re-read the whole job state: a job was quadratic in its buckets.
"""

import json
import os
import re
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cli_cases import run_main as run


A_CSV = "user,category\nu1,Bar\nu1,Bar\nu1,Church\nu2,Cafe\nu2,Church\nu3,Church\n"
B_CSV = "user,category\nu1,Bar\nu1,Bar\nu1,Church\nu2,Cafe\nu2,Church\n"  # without u3
VISITS = ["--categories", "Bar,Cafe,Church", "--sensitive", "Church"]


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("VEIL_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("VEIL_LEDGER", str(tmp_path / "ledger.sqlite"))


def files_of(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def _volatile(man: dict) -> dict:
    """A manifest without what legitimately differs between two runs on two input files:
    the times, the input's path and the job fingerprint (which hashes that path)."""
    man = json.loads(json.dumps(man))
    for k in ("started", "finished", "job_fingerprint"):
        man.pop(k)
    man["job"].pop("input")
    return man


def _two_runs(tmp_path, capsys, texts, extra=(), quiet=True):
    """Run `batch visits` on each input (same file name, its own folder); return for each the
    output folder, the --json summary and the closing log line."""
    got = []
    for i, text in enumerate(texts):
        d = tmp_path / f"n{i}"
        d.mkdir()
        (d / "c.csv").write_text(text)
        argv = ["batch", "visits", d / "c.csv", "-o", d / "out", *VISITS, *extra]
        code, out, err = run([*argv, "--json", "--quiet"] if quiet else argv, capsys)
        assert code == 0, err
        got.append((d / "out", out, err))
    return got


# --------------------------------------------------------------------------- 1: dropped users
def test_neighbours_differing_in_an_all_sensitive_user_publish_the_same_files(tmp_path, capsys):
    (oa, ja, _), (ob, jb, _) = _two_runs(tmp_path, capsys, [A_CSV, B_CSV])
    A, B = files_of(oa), files_of(ob)
    assert list(A) == list(B)  # no part for the dropped user's bucket
    for name in A:
        if name.endswith(".parquet"):
            assert A[name] == B[name], name  # the same users, the same visits: byte-identical
            assert pq.read_metadata(oa / name).num_rows > 0  # no part without rows
    ma, mb = json.loads(A["_manifest.json"]), json.loads(B["_manifest.json"])
    assert _volatile(ma) == _volatile(mb)
    assert ma["users"] == 2 and ma["rows_out"] == 6  # published users and rows only
    assert set(ma["parts"]) == {n for n in A if n.endswith(".parquet")}
    sa, sb = json.loads(ja), json.loads(jb)
    assert sa.pop("output") != sb.pop("output")
    sa.pop("seconds"), sb.pop("seconds")
    assert sa == sb and sa["users"] == 2


def test_closing_log_line_counts_published_users(tmp_path, capsys):
    runs = _two_runs(tmp_path, capsys, [A_CSV, B_CSV], quiet=False)
    lines = []
    for out, _, err in runs:
        last = err.strip().splitlines()[-1]
        last = last.replace(str(out.resolve()), "OUT")
        lines.append(re.sub(r"[0-9.]+ s \([0-9,]+ users/s\)", "T", last))
    assert lines[0] == lines[1], lines
    assert lines[0].startswith("2 users, 6 rows out")


def test_dropped_users_do_not_size_the_default_buckets(tmp_path, capsys, monkeypatch):
    """The default number of buckets counts the users the task publishes: here one bucket per
    2 users, and the all-sensitive u3 would have made it 2 buckets instead of 1."""
    import veil.engine.runner as runner

    monkeypatch.setattr(runner, "MIN_BUCKETS", 1)
    monkeypatch.setattr(runner, "USERS_PER_BUCKET", 2)
    (oa, _, _), (ob, _, _) = _two_runs(tmp_path, capsys, [A_CSV, B_CSV])
    ma, mb = (json.loads((o / "_manifest.json").read_text()) for o in (oa, ob))
    assert ma["buckets"] == mb["buckets"] == 1
    assert files_of(oa).keys() == files_of(ob).keys()


def test_all_users_dropped_publishes_the_manifest_only(tmp_path, capsys):
    (tmp_path / "c.csv").write_text("user,category\nu1,Church\nu2,Church\n")
    code, _, err = run(["batch", "visits", tmp_path / "c.csv", "-o", tmp_path / "o", *VISITS,
                        "--quiet"], capsys)
    assert code == 0, err
    assert sorted(p.name for p in (tmp_path / "o").iterdir()) == ["_manifest.json"]
    man = json.loads((tmp_path / "o" / "_manifest.json").read_text())
    assert man["users"] == 0 and man["parts"] == {}
    code, out, _ = run(["batch", "status", tmp_path / "o"], capsys)
    assert code == 0 and "complete: 0 part(s)" in out


def _walks(n_users, steps, seed=0):
    from veil.geo.temporal import MarkovModel, TemporalGrid

    g = TemporalGrid(lon_min=116.30, lat_min=39.85, lon_max=116.45, lat_max=39.98, nx=6, ny=6)
    rng = np.random.default_rng(seed)
    walks = [[int(c) for c in rng.integers(0, 36, steps)] for _ in range(n_users)]
    model = MarkovModel.from_trajectories(walks, grid=g)
    return model, np.concatenate([g.to_latlon(g.centers_m[w]) for w in walks])


def _trajectory_neighbours(tmp_path, capsys, base, off, *extra):
    """`batch trajectories --on-invalid drop` on ``base`` and on ``base`` plus the rows
    ``off`` (the model in ``tmp_path/model.npz``, the same seed); each output folder with its
    stdout."""
    got = []
    for i, table in enumerate((base, {k: np.append(base[k], off[k]) for k in base})):
        d = tmp_path / f"n{i}"
        d.mkdir()
        pq.write_table(pa.table(table), d / "p.parquet")
        code, out, err = run(["batch", "trajectories", d / "p.parquet", "-o", d / "out",
                              "--model", tmp_path / "model.npz", "-e", "1", "-d", "0.1",
                              "--on-invalid", "drop", "--seed", "4", "--spend-again",
                              "--quiet", *extra], capsys)
        assert code == 0, err
        got.append((d / "out", out))
    return got


def test_trajectories_dropping_every_point_of_a_user_publish_the_same_files(tmp_path, capsys):
    """--on-invalid drop: a user whose every point is off the grid is left out like absent."""
    model, latlon = _walks(6, 5)
    model.save(tmp_path / "model.npz")
    u = np.repeat(np.char.add("u", np.arange(6).astype(str)), 5)
    t = np.tile(np.arange(5) * 60, 6)
    base = {"user": u, "t": t, "lat": latlon[:, 0], "lon": latlon[:, 1]}
    off = {"user": ["zz"] * 2, "t": [0, 60], "lat": [10.0, 10.0], "lon": [10.0, 10.0]}
    outs = [o for o, _ in _trajectory_neighbours(tmp_path, capsys, base, off, "--buckets", "16")]
    A, B = files_of(outs[0]), files_of(outs[1])
    assert list(A) == list(B)
    ma, mb = (json.loads(x["_manifest.json"]) for x in (A, B))
    assert ma["users"] == mb["users"] == 6
    assert ma["parts"] == mb["parts"]  # the same seed: byte-identical parts too


# --------------------------------------------------------------------------- 2: --report
def _refused_report(tmp_path, capsys, report, what):
    (tmp_path / "ck.csv").write_text(A_CSV)
    before = sorted(p.name for p in tmp_path.iterdir())
    code, _, err = run(["batch", "visits", tmp_path / "ck.csv", "-o", tmp_path / "v1", *VISITS,
                        "--report", report, "--quiet"], capsys)
    assert code == 2, err
    assert "--report" in err and what in err and "choose another --output" not in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing published or left
    return err


def test_report_that_is_a_file_is_refused_before_anything_runs(tmp_path, capsys):
    _refused_report(tmp_path, capsys, tmp_path / "ck.csv", "not a folder")


def test_report_that_is_a_non_empty_folder_is_refused_before_anything_runs(tmp_path, capsys):
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x.txt").write_text("x")
    err = _refused_report(tmp_path, capsys, tmp_path / "full", "not empty")
    assert "choose another --report" in err


def test_report_in_a_missing_folder_is_refused_before_anything_runs(tmp_path, capsys):
    _refused_report(tmp_path, capsys, tmp_path / "nodir" / "sub", "does not exist")


def test_report_around_the_output_is_refused_before_anything_runs(tmp_path, capsys):
    (tmp_path / "rep").mkdir()
    (tmp_path / "ck.csv").write_text(A_CSV)
    code, _, err = run(["batch", "visits", tmp_path / "ck.csv", "-o", tmp_path / "rep" / "o",
                        *VISITS, "--report", tmp_path / "rep", "--quiet"], capsys)
    assert code == 2 and "--report" in err, err
    assert not any((tmp_path / "rep").iterdir())


def test_report_and_output_both_written_and_resumed(tmp_path, capsys):
    (tmp_path / "ck.csv").write_text(A_CSV)
    argv = ["batch", "visits", tmp_path / "ck.csv", "-o", tmp_path / "v1", *VISITS,
            "--report", tmp_path / "rep", "--quiet"]
    code, _, err = run(argv, capsys)
    assert code == 0, err
    code, _, err = run([*argv, "--resume"], capsys)  # both complete: verified, not refused
    assert code == 0, err
    rep = pq.read_table(tmp_path / "rep").to_pydict()
    assert sorted(zip(rep["user"], rep["status"])) == [("u1", "ok"), ("u2", "ok"),
                                                       ("u3", "dropped")]


# --------------------------------------------------------------------------- 3: resampling
def test_resample_mix_without_size_is_refused(tmp_path, capsys):
    (tmp_path / "ck.csv").write_text(A_CSV)
    code, _, err = run(["batch", "visits", tmp_path / "ck.csv", "-o", tmp_path / "o", *VISITS,
                        "--resample-mix", "0.5", "--quiet"], capsys)
    assert code == 2 and "--resample-mix needs --resample-size" in err, err
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("size", ["99999999999999999999", str(2 ** 53), "0"])
def test_resample_size_out_of_range_is_a_clear_error(tmp_path, capsys, size):
    (tmp_path / "ck.csv").write_text(A_CSV)
    code, _, err = run(["batch", "visits", tmp_path / "ck.csv", "-o", tmp_path / "o", *VISITS,
                        "--resample-size", size, "--quiet"], capsys)
    assert code == 2 and "--resample-size" in err and "internal error" not in err, err
    if size != "0":
        assert "2^53" in err
    assert not (tmp_path / "o").exists()


def test_resample_size_bound_in_the_library_call(tmp_path):
    from veil.engine import Job, run_job
    from veil.errors import ParameterError

    (tmp_path / "ck.csv").write_text(A_CSV)
    with pytest.raises(ParameterError, match=r"resample_size must be between 1 and 2\^53 - 1"):
        run_job(Job(tmp_path / "ck.csv", tmp_path / "o", "visits-hide", progress=False,
                    params={"categories": ["Bar", "Cafe", "Church"], "sensitive": ["Church"],
                            "resample_size": 2 ** 60}))
    assert not (tmp_path / "o").exists()


# --------------------------------------------------------------------------- 4: status
@pytest.mark.parametrize("manifest", [
    {"parts": 5},
    {"buckets": "x", "status": "complete", "parts": {}, "users": 0, "rows_out": 0,
     "epsilon_per_user": 0},
    {"status": "complete", "parts": {"part-00001.parquet": 5}, "buckets": 2, "users": 1,
     "rows_out": 1, "epsilon_per_user": 0},
    {"status": "complete", "parts": {"../../etc/passwd": {"rows": 1, "sha256": "0"}},
     "buckets": 2, "users": 1, "rows_out": 1, "epsilon_per_user": 0},
    {"status": "complete", "parts": {}},
    {"job": [], "parts": {}},
    [1, 2],
])
def test_status_of_a_damaged_manifest_is_a_clear_error(tmp_path, capsys, manifest):
    out = tmp_path / "bm"
    out.mkdir()
    (out / "_manifest.json").write_text(json.dumps(manifest))
    (out / "part-00001.parquet").write_text("not parquet")
    code, stdout, err = run(["batch", "status", out], capsys)
    assert code == 2, (stdout, err)
    line = err.strip()
    assert "\n" not in line and "internal error" not in line, line
    assert str(out / "_manifest.json") in line and "damaged or not a veil manifest" in line
    assert "--output" not in line
    # a run into that folder names the manifest too (and there --output is the advice)
    (tmp_path / "ck.csv").write_text(A_CSV)
    code, _, err = run(["batch", "visits", tmp_path / "ck.csv", "-o", out, *VISITS, "--quiet"],
                       capsys)
    assert code == 2 and "damaged or not a veil manifest" in err and "internal" not in err


def test_already_complete_prints_the_parts_written(tmp_path, capsys):
    (tmp_path / "ck.csv").write_text(A_CSV)
    argv = ["batch", "visits", tmp_path / "ck.csv", "-o", tmp_path / "o", *VISITS]
    code, _, err = run([*argv, "--quiet"], capsys)
    assert code == 0, err
    parts = len(list((tmp_path / "o").glob("part-*.parquet")))
    assert 0 < parts < 16
    code, _, err = run([*argv, "--resume"], capsys)
    assert code == 0, err
    assert f"in {parts} part(s) (16 buckets)" in err, err


def test_unknown_sensitive_category_advises_the_option(tmp_path, capsys):
    (tmp_path / "ck.csv").write_text(A_CSV)
    code, _, err = run(["batch", "visits", tmp_path / "ck.csv", "-o", tmp_path / "o",
                        "--categories", "Bar,Cafe,Church", "--sensitive", "Chruch", "--quiet"],
                       capsys)
    assert code == 2 and "did you mean 'Church'" in err and "--allow-unmatched" in err, err
    assert "set allow_unmatched" not in err


# --------------------------------------------------------------------------- 5: linear
def test_buckets_do_not_reread_the_job_state(tmp_path, monkeypatch):
    """Every bucket used to parse WORK/job.json, whose size grows with the buckets."""
    import veil.engine.runner as runner
    from veil.engine import Job, run_job

    reads = []
    real = runner._read_json

    def counting(path):
        if Path(path).name == runner.STATE:
            reads.append(path)
        return real(path)

    monkeypatch.setattr(runner, "_read_json", counting)
    (tmp_path / "ck.csv").write_text(A_CSV)
    res = run_job(Job(tmp_path / "ck.csv", tmp_path / "o", "visits-hide", buckets=300,
                      progress=False, params={"categories": ["Bar", "Cafe", "Church"],
                                              "sensitive": ["Church"]}))
    assert res.buckets == 300 and res.buckets_run == 300
    assert len(reads) <= 2, len(reads)


def test_owner_check_still_refuses_a_bucket_of_another_job(tmp_path):
    """A stale worker of an earlier job (its job id no longer owns the work folder) is refused
    before it reads or writes anything."""
    from veil.engine.runner import OWNER, StagingDamagedError, run_bucket

    work = tmp_path / "w"
    work.mkdir()
    (work / OWNER).write_text("new-job")
    with pytest.raises(StagingDamagedError, match="no longer owns"):
        run_bucket({"work": str(work), "job_id": "old-job", "task": "visits-hide",
                    "params": {}}, 0, {"files": {}, "rows": 0, "entropy": 0})
    assert sorted(os.listdir(work)) == [OWNER, "workers.lock"]


def test_other_parameters_over_an_interrupted_run_say_how_to_proceed(tmp_path, capsys):
    """A run killed before its end leaves its work folder; a run with other parameters is
    refused and told to resume or to discard (with the command)."""
    import subprocess
    import sys

    from helpers import SRC

    (tmp_path / "ck.csv").write_text(A_CSV)
    env = dict(os.environ, PYTHONPATH=SRC, VEIL_TEST_FAULT="bucket-done@2")
    r = subprocess.run([sys.executable, "-m", "veil", "batch", "visits", str(tmp_path / "ck.csv"),
                        "-o", str(tmp_path / "o1"), *VISITS, "--quiet"], env=env,
                       capture_output=True, text=True, start_new_session=True)
    assert r.returncode != 0 and (tmp_path / ".o1.veil-work").is_dir()
    code, _, err = run(["batch", "visits", tmp_path / "ck.csv", "-o", tmp_path / "o1",
                        "--categories", "Bar,Cafe,Church", "--sensitive", "Cafe", "--quiet"],
                       capsys)
    assert code == 2 and "interrupted run of a different job" in err, err
    assert f"veil batch discard {tmp_path / 'o1'} --yes" in err, err


def test_markers_of_an_earlier_veil_are_redone_on_resume(tmp_path):
    """An interrupted run of an earlier veil counted the users in (``users``) and kept parts
    without rows: its finished buckets are redone (bit-identically) when resumed, so the
    published folder follows the rules above."""
    from helpers import jobrun

    from veil.engine import Job, run_job

    (tmp_path / "ck.csv").write_text(A_CSV)
    params = {"categories": ["Bar", "Cafe", "Church"], "sensitive": ["Church"]}
    spec = {"input": str(tmp_path / "ck.csv"), "output": str(tmp_path / "o"),
            "task": "visits-hide", "params": params, "resume": True}
    r = jobrun(spec, {"VEIL_TEST_FAULT": "bucket-done@5"})
    assert r.returncode == -9, r.stderr
    markers = sorted((tmp_path / ".o.veil-work" / "markers").glob("part-*.json"))
    assert len(markers) == 5
    for m in markers:  # as an earlier veil wrote them
        info = json.loads(m.read_text())
        info["users"] = info.pop("users_out")
        m.write_text(json.dumps(info))
    res = run_job(Job(**{**spec, "progress": False}))
    assert res.buckets_run == 16 and res.users == 2
    clean = run_job(Job(tmp_path / "ck.csv", tmp_path / "clean", "visits-hide", params=params,
                        progress=False))
    assert files_of(tmp_path / "o").keys() == files_of(tmp_path / "clean").keys()
    assert clean.parts == res.parts == len(list((tmp_path / "o").glob("part-*.parquet")))


def test_the_catch_all_category_name_is_reserved(tmp_path):
    """`--categories a,__other__` published two rows named __other__ per user (the listed
    category and the catch-all of the others)."""
    from cli_cases import run_veil

    (tmp_path / "c.csv").write_text("user,category\nu1,a\nu1,b\nu2,__other__\n")
    res = run_veil(["batch", "counts", "c.csv", "--categories", "a,__other__", "-e", "1",
                    "-o", "out"], tmp_path)
    assert res.code == 2 and "'__other__' is reserved" in res.err, res.err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("invalid", ["off-grid", "nan", "no-time"])
def test_trajectories_dropped_points_shape_no_published_field(tmp_path, capsys, monkeypatch,
                                                              invalid):
    """--on-invalid drop: the manifest's budget (T, the most timestamps of a user, times
    epsilon) and the default number of buckets counted the dropped points and the users left
    out. Here one user has 8 invalid points beside 5 valid ones (T was 13, not 5) and another
    user has invalid points only (the default buckets, one per user here, were 8, not 7): the
    whole manifest, the parts and the --json summary are identical with and without them."""
    import veil.engine.runner as runner

    monkeypatch.setattr(runner, "MIN_BUCKETS", 1)
    monkeypatch.setattr(runner, "USERS_PER_BUCKET", 1)
    model, latlon = _walks(6, 5)
    model.save(tmp_path / "model.npz")
    u = np.repeat(np.char.add("u", np.arange(6).astype(str)), 5)
    t = np.tile(np.arange(5) * 60.0, 6)
    base = {"user": u, "t": t, "lat": latlon[:, 0], "lon": latlon[:, 1]}
    bad_lat, bad_t = {"off-grid": (10.0, 0.0), "nan": (np.nan, 0.0),
                      "no-time": (float(latlon[0, 0]), np.nan)}[invalid]
    n_bad = 8 + 3
    off = {"user": ["u0"] * 8 + ["zz"] * 3, "t": bad_t + np.arange(n_bad) * 7.0 + 1.0,
           "lat": [bad_lat] * n_bad, "lon": [float(latlon[0, 1])] * n_bad}
    (oa, sa), (ob, sb) = _trajectory_neighbours(tmp_path, capsys, base, off, "--json")
    sa, sb = json.loads(sa), json.loads(sb)
    A, B = files_of(oa), files_of(ob)
    assert list(A) == list(B)
    assert all(A[n] == B[n] for n in A if n.endswith(".parquet"))
    ma, mb = (json.loads(x["_manifest.json"]) for x in (A, B))
    assert ma["max_timestamps_per_user"] == 5 and ma["buckets"] == 6
    assert _volatile(ma) == _volatile(mb)
    for s in (sa, sb):
        s.pop("output"), s.pop("seconds")
    assert sa == sb
