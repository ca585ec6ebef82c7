"""Regression tests for issue 20 (the batch engine under real-cluster faults), one per defect.

Each test reproduces what the issue measured and fails on the engine before the fix: it is
written against what a user observes (processes, files anywhere under the test folder, exit
codes), not against the new engine's internals, except where a fault must be injected at an
exact point (``VEIL_TEST_FAULT``).
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

sys.path.insert(0, str(Path(__file__).parent))
import helpers  # noqa: E402,F401
from helpers import (checkins, jobrun, kill_group, launch, manifest, marked_processes,  # noqa: E402
                     markers_under, published_problems, rows, veil_cli, wait_until,
                     work_of, worker_pids)

from veil.engine import Job, run_job  # noqa: E402
from veil.errors import DataError  # noqa: E402


@pytest.fixture(autouse=True)
def _ledger(tmp_path, monkeypatch):
    monkeypatch.setenv("VEIL_LEDGER", str(tmp_path / "ledger.json"))


def _spec(inp, out, **kw):
    spec = {"input": str(inp), "output": str(out), "task": "test-slow-noise",
            "params": {"sleep": 0.0}, "user_column": "uid", "seed": 2, "buckets": 24,
            "resume": True, "spend_again": True}
    spec.update(kw)
    return spec


def _slow(seconds, **more):
    """Environment that slows every bucket of the test task down (not a job parameter)."""
    return {"VEIL_TEST_SLEEP": str(seconds), **more}


def _reference(inp, tmp_path, **kw):
    ref = tmp_path / "ref"
    spec = _spec(inp, ref, **kw)
    spec.pop("resume")
    run_job(Job(**spec, progress=False))
    return ref


def _interrupted(spec, out, n_markers=3, env_extra=None):
    """Start a job, kill its whole process group once ``n_markers`` buckets are done."""
    p = launch(spec, env_extra)
    assert wait_until(lambda: len(markers_under(out.parent / f".{out.name}.veil-work", out))
                      >= n_markers or p.poll() is not None, 120)
    kill_group(p)
    return p


# --------------------------------------------------------------------------- defect 1
def test_1_a_second_writer_is_refused_while_the_first_runs(tmp_path):
    """Two writers on one output folder lost 2-6 % of the users; now the second is refused
    with the first one's pid, and the first finishes the job exactly."""
    inp = checkins(tmp_path / "in.parquet", n=20_000, users=3_000)
    ref = _reference(inp, tmp_path)
    out = tmp_path / "out"
    first = launch(_spec(inp, out), _slow(0.4))
    try:
        assert wait_until(lambda: markers_under(tmp_path / ".out.veil-work", out)
                          or first.poll() is not None, 120)
        second = jobrun(_spec(inp, out), _slow(0.15))
        status = veil_cli("batch", "status", str(out))  # read-only: runs beside the job
        assert first.wait(180) == 0, first.stderr.read()
    finally:
        kill_group(first)
    assert second.returncode == 2, second.stderr
    assert "in use by another veil job" in second.stderr and f"pid {first.pid}" in second.stderr
    assert status.returncode == 3 and f"running (pid {first.pid}" in status.stdout
    assert rows(out) == rows(ref)


def test_1_two_jobs_started_together_one_wins(tmp_path):
    """Started at the same moment, both used to die with DuckDB internal errors."""
    inp = checkins(tmp_path / "in.parquet", n=20_000, users=3_000)
    ref = _reference(inp, tmp_path)
    out = tmp_path / "out"
    procs = [launch(_spec(inp, out), _slow(0.1)) for _ in range(2)]
    codes = sorted(p.wait(180) for p in procs)
    errs = [p.stderr.read() for p in procs]
    assert codes == [0, 2], errs
    assert any("in use by another veil job" in e for e in errs), errs
    assert rows(out) == rows(ref)


def test_1_stale_lock_of_a_dead_process_is_taken_over(tmp_path):
    inp = checkins(tmp_path / "in.parquet", n=5_000, users=500)
    out = tmp_path / "out"
    work = work_of(out)
    work.mkdir(mode=0o700)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    from veil.engine.lock import this_process

    rec = {**this_process(), "pid": dead.pid, "start": "1"}
    (work / "lock").write_text(json.dumps(rec))
    res = run_job(Job(inp, out, "count-noise", params={"categories": ["a"], "epsilon": 1.0},
                      user_column="uid", progress=False))
    assert res.users == 500 and not work.exists()


# --------------------------------------------------------------------------- defect 2
def test_2_workers_die_with_a_killed_parent_and_resume_completes(tmp_path):
    """SIGKILL of the main process left its forkserver, workers and resource tracker alive."""
    inp = checkins(tmp_path / "in.parquet", n=20_000, users=3_000)
    ref = _reference(inp, tmp_path)
    out = tmp_path / "out"
    mark = uuid.uuid4().hex
    p = launch(_spec(inp, out, workers=2), _slow(0.3, VEIL_TEST_RUN=mark))
    try:
        assert wait_until(lambda: markers_under(tmp_path / ".out.veil-work", out)
                          or p.poll() is not None, 120)
        assert len(marked_processes(mark)) >= 3  # parent and its two workers at least
        os.kill(p.pid, signal.SIGKILL)  # the parent only
        p.wait()
        gone = wait_until(lambda: not marked_processes(mark), 10)
        left = marked_processes(mark)
    finally:
        for pid in marked_processes(mark):
            os.kill(pid, signal.SIGKILL)
    assert gone, f"orphans left: {left}"
    r = jobrun(_spec(inp, out, workers=2))
    assert r.returncode == 0, r.stderr
    assert rows(out) == rows(ref)


def _alive(pid: int) -> bool:
    """A process that exists and is not a zombie. Reading /proc/PID/stat of a process that
    exits meanwhile raises (ENOENT or ESRCH): it is gone (a race of the test, found in CI)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split()[2] != "Z"
    except OSError:
        return False


def test_2_resume_never_runs_beside_a_live_orphan(tmp_path):
    """A worker that cannot die (stopped) outlives its killed parent: a resume waits, then
    refuses and names it; once it is gone the resume completes exactly."""
    inp = checkins(tmp_path / "in.parquet", n=20_000, users=3_000)
    ref = _reference(inp, tmp_path)
    out = tmp_path / "out"
    p = launch(_spec(inp, out, workers=2), _slow(0.6))
    stopped = []
    try:
        assert wait_until(lambda: markers_under(tmp_path / ".out.veil-work", out)
                          or p.poll() is not None, 120)
        stopped = worker_pids(p.pid)
        assert len(stopped) == 2
        for w in stopped:
            os.kill(w, signal.SIGSTOP)
        os.kill(p.pid, signal.SIGKILL)
        p.wait()
        r = jobrun(_spec(inp, out, workers=2))
        assert r.returncode == 2, r.stderr
        assert "still running" in r.stderr
        assert any(str(w) in r.stderr for w in stopped)
    finally:
        for w in stopped:
            try:
                os.kill(w, signal.SIGCONT)
            except ProcessLookupError:
                pass
    assert wait_until(lambda: not any(_alive(w) for w in stopped), 10)
    r = jobrun(_spec(inp, out, workers=2))
    assert r.returncode == 0, r.stderr
    assert rows(out) == rows(ref)


# --------------------------------------------------------------------------- defect 3
def test_3_input_changed_with_same_size_and_mtime_is_refused(tmp_path):
    inp = tmp_path / "in.csv"
    g = np.random.default_rng(5)
    users = g.integers(0, 2_000, 20_000)
    cats = g.choice(["a", "b"], 20_000)
    inp.write_text("uid,category\n" + "".join(f"u{u},{c}\n" for u, c in zip(users, cats)))
    out = tmp_path / "out"
    _interrupted(_spec(inp, out), out, env_extra=_slow(0.2))
    st = os.stat(inp)
    text = inp.read_text()
    i = text.index(",a\n")
    inp.write_text(text[:i] + ",b\n" + text[i + 3:])  # one category changed, same size
    os.utime(inp, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert os.path.getsize(inp) == st.st_size
    r = jobrun(_spec(inp, out))
    assert r.returncode == 2, r.stderr
    assert "content changed" in r.stderr
    assert published_problems(out, ["user", "noisy"]) == []


def test_3_a_completed_part_corrupted_or_deleted_is_named(tmp_path):
    inp = checkins(tmp_path / "in.parquet", n=5_000, users=800)
    out = tmp_path / "out"
    spec = _spec(inp, out, buckets=8)
    assert jobrun(spec).returncode == 0
    p3 = out / "part-00003.parquet"
    data = bytearray(p3.read_bytes())
    data[len(data) // 2] ^= 0xFF
    p3.write_bytes(bytes(data))
    (out / "part-00005.parquet").unlink()
    r = jobrun(spec)
    assert r.returncode == 2, r.stdout
    assert "part-00003.parquet does not match its SHA-256" in r.stderr
    assert "part-00005.parquet is missing" in r.stderr
    st = veil_cli("batch", "status", str(out))
    assert st.returncode == 4 and "part-00005.parquet is missing" in st.stdout


def test_3_a_vanished_staging_bucket_is_restaged_not_skipped(tmp_path):
    """A staging bucket deleted during a pause resumed 'complete' with 93,851 of 100,000
    users; now it is restaged from the (unchanged) input and every user is there."""
    inp = checkins(tmp_path / "in.parquet", n=20_000, users=3_000)
    ref = _reference(inp, tmp_path)
    out = tmp_path / "out"
    _interrupted(_spec(inp, out), out, env_extra=_slow(0.2))
    done = {p.stem for p in markers_under(tmp_path / ".out.veil-work", out)}
    staged = [d for d in tmp_path.rglob("bucket=*") if d.is_dir() and "ref" not in d.parts]
    victim = next(d for d in sorted(staged)
                  if f"part-{int(d.name.split('=')[1]):05d}" not in done)
    shutil.rmtree(victim)
    r = jobrun(_spec(inp, out))
    assert r.returncode == 0, r.stderr
    assert rows(out) == rows(ref)
    assert manifest(out)["users"] == len({r[0] for r in rows(ref)})


# --------------------------------------------------------------------------- defect 4
def test_4_a_recomputed_bucket_never_publishes_a_second_draw(tmp_path):
    """Without a seed: a bucket whose part was written but not committed used to be redrawn
    (8,847 of 12,260 values changed). Every version ever written must equal the final one."""
    inp = checkins(tmp_path / "in.parquet", n=20_000, users=3_000)
    out = tmp_path / "out"
    work = tmp_path / ".out.veil-work"
    spec = _spec(inp, out)
    spec.pop("seed")
    _interrupted(spec, out, n_markers=4, env_extra=_slow(0.2))
    seen = {}
    for p in list(out.glob("part-*.parquet")) + list(work.rglob("part-*.parquet")):
        seen[p.name] = sorted(pq.read_table(p).to_pylist(), key=lambda r: r["user"])
    assert len(seen) >= 4
    for m in markers_under(work, out)[:2]:  # written but not committed
        m.unlink()
    r = jobrun(spec)
    assert r.returncode == 0, r.stderr
    redrawn = [name for name, got in seen.items()
               if sorted(pq.read_table(out / name).to_pylist(), key=lambda r: r["user"]) != got]
    assert redrawn == []


def test_4_the_noise_key_is_private_and_destroyed_on_completion(tmp_path):
    inp = checkins(tmp_path / "in.parquet", n=20_000, users=3_000)
    out = tmp_path / "out"
    spec = _spec(inp, out)
    spec.pop("seed")
    _interrupted(spec, out, n_markers=2, env_extra=_slow(0.2))
    work = work_of(out)
    key = work / "key"
    assert (os.stat(work).st_mode & 0o777) == 0o700
    assert (os.stat(key).st_mode & 0o777) == 0o600 and key.stat().st_size == 32
    assert not out.exists()  # the key is never under the published folder
    secret = key.read_bytes()
    assert jobrun(spec).returncode == 0
    assert not work.exists()
    for p in out.iterdir():
        assert secret not in p.read_bytes() and secret.hex() not in p.read_text(errors="ignore")


# --------------------------------------------------------------------------- defect 6
def test_6_links_planted_in_the_output_folder_are_never_written_through(tmp_path):
    inp = checkins(tmp_path / "in.parquet", n=20_000, users=3_000)
    out = tmp_path / "out"
    _interrupted(_spec(inp, out), out, env_extra=_slow(0.2))
    out.mkdir(exist_ok=True)
    victims = []
    for b in range(24):
        v = tmp_path / f"victim-{b}.txt"
        v.write_text("precious")
        victims.append(v)
        link = out / f"part-{b:05d}.parquet"
        if os.path.lexists(link):
            link.unlink()
        link.symlink_to(v)
    r = jobrun(_spec(inp, out))
    assert all(v.read_text() == "precious" for v in victims)
    assert r.returncode == 2 and ("link" in r.stderr or "not empty" in r.stderr), r.stderr


def test_6_the_output_folder_is_resolved_once(tmp_path):
    """The output given through a linked folder that is re-pointed mid-run: everything lands
    in the folder the link named when the job started. (An output that is itself a link is
    refused: test_work_dir_ownership.)"""
    inp = checkins(tmp_path / "in.parquet", n=20_000, users=3_000)
    d1, d2 = tmp_path / "d1", tmp_path / "d2"
    d1.mkdir()
    d2.mkdir()
    link = tmp_path / "lnk"
    link.symlink_to(d1)
    p = launch(_spec(inp, link / "out"), _slow(0.15))
    try:
        assert wait_until(lambda: markers_under(d1) or p.poll() is not None, 120)
        tmp = tmp_path / "lnk.new"
        tmp.symlink_to(d2)
        os.replace(tmp, link)
        assert p.wait(180) == 0, p.stderr.read()
    finally:
        kill_group(p)
    assert list(d2.iterdir()) == []
    out = d1 / "out"
    assert manifest(out)["status"] == "complete" and len(list(out.glob("part-*.parquet"))) == 24


# --------------------------------------------------------------------------- defect 7
def _counts(inp, out, **kw):
    kw.setdefault("params", {"categories": ["a", "b"], "epsilon": 1.0})
    return Job(inp, out, "count-noise", user_column=kw.pop("user_column", "user"),
               progress=False, spend_again=True, **kw)


def _nothing_left(tmp_path, out):
    assert not Path(out).exists()
    assert not work_of(out).exists()


def test_7_numeric_category_codes_are_categories(tmp_path):
    pq.write_table(pa.table({"user": [1, 1, 2, 3], "category": [10, 20, 10, 30]}),
                   tmp_path / "num.parquet")
    pq.write_table(pa.table({"user": [1, 1, 2, 3], "category": ["10", "20", "10", "30"]}),
                   tmp_path / "txt.parquet")
    params = {"categories": ["10", "20"], "epsilon": 1.0}
    run_job(_counts(tmp_path / "num.parquet", tmp_path / "o1", params=params, seed=1))
    run_job(_counts(tmp_path / "txt.parquet", tmp_path / "o2", params=params, seed=1))
    assert rows(tmp_path / "o1") == rows(tmp_path / "o2")


@pytest.mark.parametrize("case", ["empty-category", "list-user", "struct-user",
                                  "list-category", "duplicate-user"])
def test_7_bad_cells_and_types_fail_before_anything_is_written(tmp_path, case):
    out = tmp_path / "o"
    if case == "empty-category":
        inp = tmp_path / "in.csv"
        inp.write_text("user,category\n1,a\n2,\n3,b\n")
        match = "1 row.* have an empty category"
    elif case == "duplicate-user":
        inp = tmp_path / "in.csv"
        inp.write_text("User,user,category\n1,2,a\n3,4,b\n")
        match = "2 columns named \\['User', 'user'\\]"
    else:
        values = {"list-user": ([[1, 2], [3]], "user"), "struct-user": ([{"a": 1}, {"a": 2}], "user"),
                  "list-category": ([["a"], ["b"]], "category")}[case]
        cols = {"user": [1, 2], "category": ["a", "b"]}
        cols[values[1]] = values[0]
        inp = tmp_path / "in.parquet"
        pq.write_table(pa.table(cols), inp)
        match = "lists or records"
    with pytest.raises(DataError, match=match):
        run_job(_counts(inp, out))
    _nothing_left(tmp_path, out)


def test_7_lat_lon_stored_as_lists_fail_before_anything_is_written(tmp_path):
    pq.write_table(pa.table({"user": [1, 1], "t": [0, 60], "lat": [[39.9], [39.9]],
                             "lon": [116.4, 116.4]}), tmp_path / "p.parquet")
    job = Job(tmp_path / "p.parquet", tmp_path / "o", "trajectories", progress=False,
              params={"model": str(_model(tmp_path)), "epsilon": 1.0, "delta": 0.1})
    with pytest.raises(DataError, match="column 'lat'.*lists or records"):
        run_job(job)
    _nothing_left(tmp_path, tmp_path / "o")


def _model(tmp_path):
    from veil.geo.temporal import MarkovModel, TemporalGrid

    g = TemporalGrid(lon_min=116.30, lat_min=39.85, lon_max=116.45, lat_max=39.98, nx=4, ny=4)
    path = tmp_path / "m.npz"
    MarkovModel.from_trajectories([[0, 1, 2, 6, 5, 4, 0]], grid=g).save(path)
    return path


def test_7_a_nested_column_the_job_does_not_read_is_fine(tmp_path):
    pq.write_table(pa.table({"user": [1, 2, 2], "category": ["a", "b", "a"],
                             "extra": [[[1, 2]], [[3]], []]}), tmp_path / "n.parquet")
    res = run_job(_counts(tmp_path / "n.parquet", tmp_path / "o"))
    assert res.users == 2


def test_7_a_category_outside_the_domain_fails_before_the_first_bucket(tmp_path):
    """It used to fail mid-job, leaving _staging, _manifest.json and part files."""
    n = 40_000
    g = np.random.default_rng(0)
    cat = g.choice(["a", "b", "c"], n).astype(object)
    cat[-1] = "zoo"
    pq.write_table(pa.table({"user": g.integers(0, 4_000, n), "category": cat}),
                   tmp_path / "c.parquet")
    r = veil_cli("batch", "visits", str(tmp_path / "c.parquet"), "-o", str(tmp_path / "o"),
                 "--categories", "a,b,c", "--sensitive", "c", "--buckets", "20", "--quiet")
    assert r.returncode == 2
    assert len(r.stderr.strip().splitlines()) == 1
    assert "'zoo'" in r.stderr and "not in the job's category domain" in r.stderr
    _nothing_left(tmp_path, tmp_path / "o")


@pytest.fixture
def small_disk(tmp_path):
    mnt = tmp_path / "disk"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=400k", "tmpfs", str(mnt)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here (needs root): {r.stderr.strip()}")
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def test_7_10_disk_full_during_staging_is_a_clear_exit_2(tmp_path, small_disk):
    inp = checkins(tmp_path / "in.parquet", n=300_000, users=50_000)
    r = veil_cli("batch", "visits", str(inp), "-o", str(small_disk / "out"),
                 "--categories", "a,b,c,d", "--sensitive", "d", "--user-column", "uid",
                 "--quiet")
    assert r.returncode == 2, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert "no space left on device" in r.stderr.lower()
    assert "internal error" not in r.stderr
    assert sorted(os.listdir(small_disk)) == []  # nothing left behind


# --------------------------------------------------------------------------- defect 8
def test_8_no_raw_row_in_the_output_folder_after_a_kill_during_staging(tmp_path):
    g = np.random.default_rng(1)
    n = 1_500_000
    inp = tmp_path / "big.csv"
    pa_table = pa.table({"uid": g.integers(0, 100_000, n), "category": g.choice(["a", "b"], n)})
    import pyarrow.csv as pcsv

    pcsv.write_csv(pa_table, inp)
    out = tmp_path / "out"
    p = launch(_spec(inp, out, task="count-noise",
                     params={"categories": ["a", "b"], "epsilon": 1.0}, buckets=None))
    assert wait_until(lambda: any(tmp_path.rglob("bucket=*")) or p.poll() is not None, 120)
    kill_group(p)
    assert published_problems(out, ["user", "category", "noisy_count"]) == []
    assert not list(out.rglob("bucket=*")) if out.exists() else True


def test_8_nothing_is_readable_in_the_output_folder_before_it_is_complete(tmp_path):
    inp = checkins(tmp_path / "in.parquet", n=20_000, users=3_000)
    out = tmp_path / "out"
    p = launch(_spec(inp, out, workers=2), _slow(0.05))
    seen = []
    try:
        while p.poll() is None:
            if out.exists():
                names = sorted(os.listdir(out))
                if names:
                    complete = "_manifest.json" in names and \
                        json.loads((out / "_manifest.json").read_text()).get("status") == "complete"
                    seen.append((tuple(names), complete))
            time.sleep(0.01)
    finally:
        kill_group(p)
    assert p.returncode == 0, p.stderr.read()
    assert seen and all(complete for _, complete in seen), seen[:3]


def test_8_a_kill_during_cleanup_leaves_no_raw_rows_and_resume_removes_them(tmp_path):
    inp = checkins(tmp_path / "in.parquet", n=5_000, users=800)
    out = tmp_path / "out"
    spec = _spec(inp, out, buckets=8)
    r = jobrun(spec, {"VEIL_TEST_FAULT": "cleanup"})
    assert r.returncode == -signal.SIGKILL
    assert published_problems(out, ["user", "noisy"]) == []
    st = veil_cli("batch", "status", str(out))
    assert st.returncode == 0 and "raw staging left" in st.stdout
    assert jobrun(spec).returncode == 0
    assert not work_of(out).exists()


# --------------------------------------------------------------------------- defect 9
def test_9_a_killed_local_worker_is_retried(tmp_path):
    inp = checkins(tmp_path / "in.parquet", n=20_000, users=3_000)
    ref = _reference(inp, tmp_path)
    out = tmp_path / "out"
    p = launch(_spec(inp, out, workers=2, resume=False), _slow(0.3))
    try:
        assert wait_until(lambda: markers_under(tmp_path / ".out.veil-work", out)
                          or p.poll() is not None, 120)
        victims = worker_pids(p.pid)
        assert victims
        os.kill(victims[0], signal.SIGKILL)
        code = p.wait(180)
    finally:
        kill_group(p)
    assert code == 0, p.stderr.read()
    assert rows(out) == rows(ref)


# --------------------------------------------------------------------------- defect 10
def test_10_sigint_during_staging_exits_130_and_leaves_nothing(tmp_path):
    g = np.random.default_rng(2)
    n = 1_500_000
    inp = tmp_path / "big.csv"
    import pyarrow.csv as pcsv

    pcsv.write_csv(pa.table({"uid": g.integers(0, 100_000, n),
                             "category": g.choice(["a", "b"], n)}), inp)
    out = tmp_path / "out"
    env = dict(os.environ, PYTHONPATH=helpers.SRC)
    p = subprocess.Popen([sys.executable, "-m", "veil", "batch", "counts", str(inp), "-o",
                          str(out), "--categories", "a,b", "-e", "1", "--user-column", "uid",
                          "--quiet", "--spend-again"], env=env, stderr=subprocess.PIPE,
                         text=True, start_new_session=True)
    assert wait_until(lambda: any(tmp_path.rglob("bucket=*")) or p.poll() is not None, 120)
    os.killpg(p.pid, signal.SIGINT)
    code = p.wait(60)
    err = p.stderr.read()
    assert code == 130, err
    assert "internal error" not in err and "Query interrupted" not in err
    assert not out.exists() and not work_of(out).exists()


@pytest.mark.parametrize("point", ["job-json", "manifest"])
def test_10_a_kill_while_a_manifest_is_written_leaves_a_resumable_job(tmp_path, point):
    """A kill during the first manifest write left 'not empty and holds no veil manifest' and
    a stray .manifest.json.tmp-*; the job state and the final manifest are both covered."""
    inp = checkins(tmp_path / "in.parquet", n=5_000, users=800)
    ref = _reference(inp, tmp_path, buckets=8)
    out = tmp_path / "out"
    spec = _spec(inp, out, buckets=8)
    r = jobrun(spec, {"VEIL_TEST_FAULT": point})
    assert r.returncode == -signal.SIGKILL
    assert published_problems(out, ["user", "noisy"]) == []
    r = jobrun(spec)
    assert r.returncode == 0, r.stderr
    assert rows(out) == rows(ref)
    strays = [p for p in tmp_path.rglob("*") if ".tmp-" in p.name]
    assert strays == [] and not work_of(out).exists()


# --------------------------------------------------------------------------- defect 11
def test_11_the_local_dask_cluster_uses_tls_and_refuses_plain_clients(tmp_path, monkeypatch):
    import distributed

    seen = {}
    real = distributed.LocalCluster

    class Spy(real):
        def __init__(self, *a, **kw):
            super().__init__(*a, **kw)
            seen["address"] = self.scheduler_address
            try:
                c = distributed.Client(self.scheduler_address.replace("tls://", "tcp://"),
                                       timeout=3)
                c.close()
                seen["plain"] = "connected"
            except Exception as exc:  # noqa: BLE001
                seen["plain"] = type(exc).__name__

    monkeypatch.setattr(distributed, "LocalCluster", Spy)
    inp = checkins(tmp_path / "in.parquet", n=3_000, users=300)
    res = run_job(Job(inp, tmp_path / "o", "count-noise", user_column="uid", engine="dask",
                      workers=1, params={"categories": ["a"], "epsilon": 1.0}, progress=False,
                      buckets=4))
    assert res.users == 300
    assert seen["address"].startswith("tls://")
    assert seen["plain"] != "connected"


def test_11_a_plain_tcp_scheduler_is_refused_for_dp_tasks(tmp_path):
    inp = checkins(tmp_path / "in.parquet", n=1_000, users=100)
    r = veil_cli("batch", "counts", str(inp), "-o", str(tmp_path / "o"), "--categories", "a",
                 "-e", "1", "--user-column", "uid", "--engine", "dask", "--scheduler",
                 "tcp://127.0.0.1:1", "--quiet")
    assert r.returncode == 2 and "plain TCP" in r.stderr and "--insecure-scheduler" in r.stderr
    assert not (tmp_path / "o").exists()
