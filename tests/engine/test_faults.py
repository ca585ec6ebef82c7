"""Fault-injection suite of the batch engine (issue 20).

Every scenario injects faults into runs of one job and then finishes it; the job must end
with output identical to an uninterrupted run (row for row; for unseeded jobs the users and
true counts, with no part ever seen with two different noise draws), or refuse with a clear
one-line message; no user lost or duplicated, no orphan process, nothing but verified parts
and the manifest in the output folder. ``python -m pytest -m slow tests/engine/test_faults.py
-s`` prints the table; ``VEIL_FAULT_REPORT=path.json`` also writes it as JSON. A fast subset
runs in CI.
"""

import os
import signal
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import faults as F  # noqa: E402
from helpers import kill_group, published_problems, worker_pids  # noqa: E402

SCENARIOS = []


def scenario(name, **harness):
    def deco(fn):
        SCENARIOS.append((name, fn, harness))
        return fn
    return deco


def _interrupt(h, n=1):
    """Kill the whole group after a few buckets (the common first step)."""
    for _ in range(n):
        p = h.start()
        h.wait_progress(p, h.done_buckets() + 2)
        if p.poll() is None:
            kill_group(p)
            h.fault()
        h.check_orphans()
        h.observe()


# --------------------------------------------------------------------------- kills
@scenario("random SIGKILL, parent only, 2 workers")
def _kill_parent(h):
    for _ in range(3):
        h.kill_random(group=False)
    return h.finish()


@scenario("random SIGKILL, whole group, 2 workers")
def _kill_group(h):
    for _ in range(3):
        h.kill_random(group=True)
    return h.finish()


@scenario("random SIGKILL, parent only, 1 worker", workers=1)
def _kill_one(h):
    for _ in range(3):
        h.kill_random(group=False)
    return h.finish()


@scenario("random SIGKILL, whole group, unseeded", seeded=False)
def _kill_unseeded(h):
    for _ in range(3):
        h.kill_random(group=True)
    return h.finish()


@scenario("random SIGINT (Ctrl-C) to the group")
def _sigint(h):
    for _ in range(2):
        p = h.kill_random(group=True, sig=signal.SIGINT)
        if p.returncode not in (130, 0):
            h.outcome.message = f"SIGINT gave exit {p.returncode}"
            h.outcome.final = "WRONG exit code"
            return h.outcome
        err = p.stderr.read()
        if "Traceback" in err:  # a worker or the forkserver hit by the Ctrl-C as it started
            h.outcome.message = " | ".join(err.strip().splitlines()[-3:])[-300:]
            h.outcome.final = "WRONG: a traceback on Ctrl-C"
            return h.outcome
    return h.finish()


POINTS = ["staging", "staged", "job-json", "bucket-done@2", "worker-part@2", "worker-marker@2",
          "verify", "manifest", "commit", "cleanup"]


@scenario("a kill at every named point, parent/worker only, unseeded", seeded=False)
def _points(h):
    for point in POINTS:
        h.kill_at(point)
    return h.finish()


@scenario("a kill at every named point, whole group")
def _points_group(h):
    for point in POINTS:
        h.kill_at(point, group=True)
    return h.finish()


@scenario("SIGKILL of local workers mid-run (retried)")
def _workers(h):
    p = h.start()
    for k in (1, 4):
        h.wait_progress(p, k)
        victims = worker_pids(p.pid)
        if victims and p.poll() is None:
            os.kill(victims[0], signal.SIGKILL)
            h.fault()
        time.sleep(0.3)
    code = p.wait(300)
    h.observe()
    if code != 0:
        h.outcome.final, h.outcome.message = f"FAILED rc={code}", p.stderr.read()[-300:]
        return h.outcome
    return h.finish()


@scenario("a stopped worker outlives its killed parent", sleep=0.4)
def _stopped(h):
    p = h.start()
    h.wait_progress(p, 1)
    stopped = worker_pids(p.pid)
    for w in stopped:
        os.kill(w, signal.SIGSTOP)
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    h.fault(2)
    r = h.run()
    for w in stopped:
        os.kill(w, signal.SIGCONT)
    if r.returncode != 2 or "still running" not in r.stderr:
        h.outcome.final, h.outcome.message = "WRONG: ran beside an orphan", r.stderr[-300:]
        return h.outcome
    h.check_orphans()
    return h.finish()


# --------------------------------------------------------------------------- two writers
@scenario("two writers started at once")
def _two(h):
    procs = [h.start(), h.start()]
    codes = sorted(p.wait(300) for p in procs)
    h.fault()
    h.observe()
    if codes != [0, 2]:
        h.outcome.final, h.outcome.message = f"WRONG codes {codes}", ""
        return h.outcome
    return h.finish()


@scenario("a second writer while the first runs")
def _second(h):
    p = h.start()
    h.wait_progress(p, 2)
    r = h.run()
    h.fault()
    code = p.wait(300)
    if r.returncode != 2 or "in use by another veil job" not in r.stderr or code != 0:
        h.outcome.final, h.outcome.message = "WRONG: two writers", r.stderr[-300:]
        return h.outcome
    return h.finish()


# --------------------------------------------------------------------------- dask
@scenario("dask: random SIGKILL of the whole group", engine="dask", sleep=0.2)
def _dask_group(h):
    for _ in range(2):
        h.kill_random(group=True)
    return h.finish()


@scenario("dask: random SIGKILL of the parent only", engine="dask", sleep=0.2)
def _dask_parent(h):
    for _ in range(2):
        h.kill_random(group=False)
    return h.finish()


@scenario("dask: a killed worker is retried", engine="dask", sleep=0.3)
def _dask_worker(h):
    code, err = h.kill_dask_worker()
    if code != 0:
        h.outcome.final, h.outcome.message = f"FAILED rc={code}", err[-300:]
        return h.outcome
    return h.finish()


# --------------------------------------------------------------------------- disks
@scenario("disk full during staging", disk="96k")
def _full_staging(h):
    r = h.run()
    h.fault()
    if r.returncode != 2 or "no space left on device" not in r.stderr.lower() \
            or os.listdir(h.root):  # a failed fresh start leaves nothing behind
        h.outcome.final = f"WRONG rc={r.returncode} left={os.listdir(h.root)}"
        h.outcome.message = r.stderr[-300:]
        return h.outcome
    F.remount(h.root, "size=64m")
    return h.finish()


@scenario("disk fills up while parts are written", disk="64m")
def _full_parts(h):
    p = h.start()
    h.wait_progress(p, 2)
    filler = h.root / "filler"
    with open(filler, "wb", buffering=0) as fh:
        try:
            while True:
                fh.write(b"\0" * (1 << 16))
        except OSError:
            pass
    h.fault()
    code = p.wait(300)
    err = p.stderr.read()
    if code != 2 or "no space left on device" not in err.lower():
        h.outcome.final, h.outcome.message = f"WRONG rc={code}", err[-300:]
        return h.outcome
    filler.unlink()
    return h.finish()


@scenario("the folder turns read-only mid-job", disk="64m")
def _read_only(h):
    _interrupt(h)
    F.remount(h.root, "ro")
    r = h.run()
    h.fault()
    F.remount(h.root, "rw")
    if r.returncode != 2 or "read-only file system" not in r.stderr.lower():
        h.outcome.final, h.outcome.message = f"WRONG rc={r.returncode}", r.stderr[-300:]
        return h.outcome
    return h.finish()


# --------------------------------------------------------------------------- damage
@scenario("unpublished parts and markers damaged or deleted")
def _damage_parts(h):
    _interrupt(h)
    parts = sorted((h.work / "parts").glob("part-*.parquet"))
    markers = sorted((h.work / "markers").glob("part-*.json"))
    F.corrupt(parts[0])
    F.rm(parts[1])
    F.rm(markers[-1])
    (markers[-2]).write_text("{not json")
    h.fault(4)
    return h.finish()


@scenario("staging deleted and corrupted")
def _damage_staging(h):
    _interrupt(h)
    staged = sorted((h.work / "staging").glob("bucket=*"))
    F.rm(staged[-1])
    F.corrupt(next(staged[-2].glob("*.parquet")))
    h.fault(2)
    return h.finish()


@scenario("a kill while damaged staging is restaged")
def _restage_kill(h):
    _interrupt(h)
    F.rm(sorted((h.work / "staging").glob("bucket=*"))[-1])
    h.fault()
    h.kill_at("staged")
    return h.finish()


@scenario("a published part corrupted after completion")
def _pub_corrupt(h):
    assert h.run().returncode == 0
    F.corrupt(sorted(h.out.glob("part-*.parquet"))[3])
    h.fault()
    return h.finish(expect_refusal="does not match its SHA-256")


@scenario("a published part deleted after completion")
def _pub_delete(h):
    assert h.run().returncode == 0
    F.rm(sorted(h.out.glob("part-*.parquet"))[5])
    h.fault()
    return h.finish(expect_refusal="is missing")


@scenario("input changed between runs (same size and mtime)", csv=True)
def _input_same_size(h):
    _interrupt(h)
    st = os.stat(h.inp)
    text = h.inp.read_text()
    i = text.index(",a\n")
    h.inp.write_text(text[:i] + ",b\n" + text[i + 3:])
    os.utime(h.inp, ns=(st.st_atime_ns, st.st_mtime_ns))
    h.fault()
    return h.finish(expect_refusal="content changed")


@scenario("input grew between runs", csv=True)
def _input_grew(h):
    _interrupt(h)
    with open(h.inp, "a") as fh:
        fh.write("u1,a\n")
    h.fault()
    return h.finish(expect_refusal="content changed")


@scenario("links planted in the output folder")
def _links(h):
    _interrupt(h)
    h.out.mkdir(exist_ok=True)
    victims = []
    for b in range(h.buckets):
        v = h.tmp / f"victim-{b}"
        v.write_text("precious")
        victims.append(v)
        (h.out / f"part-{b:05d}.parquet").symlink_to(v)
    h.fault()
    o = h.finish(expect_refusal="not empty")
    if any(v.read_text() != "precious" for v in victims):
        o.final = "WRONG: wrote through a link"
    for p in h.out.iterdir():
        p.unlink()
    o.dirty = published_problems(h.out, F.PART_COLUMNS)
    return o


@scenario("noise key deleted", seeded=False)
def _key_deleted(h):
    _interrupt(h)
    (h.work / "key").unlink()
    h.fault()
    return h.finish(expect_refusal="noise key is missing")


@scenario("noise key opened to other users", seeded=False)
def _key_mode(h):
    _interrupt(h)
    os.chmod(h.work / "key", 0o644)
    h.fault()
    return h.finish(expect_refusal="not a private")


@scenario("job state deleted")
def _state_deleted(h):
    _interrupt(h)
    (h.work / "job.json").unlink()
    h.fault()
    return h.finish(expect_refusal="no job state")


def _make(tmp_path, name, harness):
    harness = dict(harness)
    disk = harness.pop("disk", None)
    csv = harness.pop("csv", False)
    root = None
    if disk:
        root = tmp_path / name.replace(" ", "_")[:20] / "disk"
        if not F.with_tmpfs(root, disk):
            pytest.skip("cannot mount a tmpfs here (needs root)")
    h = F.Harness(tmp_path, name.replace(" ", "_").replace("/", "_")[:40] + "_h", root=root,
                  **harness)
    h.outcome.name = name
    if csv:
        import duckdb

        from veil.io import sql

        csv_path = h.inp.with_suffix(".csv")
        duckdb.sql(f"COPY (SELECT * FROM read_parquet({sql.path(h.inp)})) TO "
                   f"{sql.literal(str(csv_path))} (HEADER)")
        h.inp = csv_path
        h.spec["input"] = str(csv_path)
        ref = dict(h.spec, output=str(h.tmp / "ref-csv"), engine="local", workers=1)
        ref.pop("resume")
        from helpers import jobrun, rows

        assert jobrun(ref, h.env(sleep=0)).returncode == 0
        h.ref = rows(h.tmp / "ref-csv")
    return h, root


def _run_all(tmp_path, chosen):
    outcomes = []
    for name, fn, harness in chosen:
        h, root = _make(tmp_path, name, harness)
        try:
            outcomes.append(fn(h))
        except Exception as exc:  # noqa: BLE001 - one broken scenario must not hide the rest
            h.outcome.final, h.outcome.message = "CRASHED", f"{type(exc).__name__}: {exc}"[:500]
            outcomes.append(h.outcome)
        finally:
            h.check_orphans()
            if root is not None:
                F.umount(root)
    print("\n" + F.table(outcomes))
    F.dump(outcomes, os.environ.get("VEIL_FAULT_REPORT"))
    s = F.summary(outcomes)
    assert s["wrong"] == [], [(o.name, o.final, o.message) for o in outcomes
                              if o.final not in ("ok", "refused")]
    assert s["lost"] == s["duplicated"] == s["redraws"] == s["orphans"] == 0, s
    assert s["dirty"] == [], [(o.name, o.dirty) for o in outcomes if o.dirty]
    return s


@pytest.mark.slow
def test_fault_injection_suite(tmp_path):
    s = _run_all(tmp_path, SCENARIOS)
    assert s["faults"] >= 50


FAST = {"random SIGKILL, whole group, 2 workers", "unpublished parts and markers damaged or deleted"}


def test_fault_injection_fast_subset(tmp_path):
    """The CI part of the suite (the defect tests in test_defects.py cover one fault each)."""
    s = _run_all(tmp_path, [sc for sc in SCENARIOS if sc[0] in FAST])
    assert s["faults"] >= 5
