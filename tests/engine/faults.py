"""Fault-injection harness for the batch engine (used by test_faults.py).

A :class:`Harness` owns one input, one uninterrupted reference run and one output folder. A
scenario injects faults into runs of the same job (kills at random moments or at named
points, parent-only or whole process group, SIGINT, killed workers, two writers, a full or
read-only disk, damaged or deleted parts and staging, a changed input, planted links), then
finishes the job with a clean run and records an :class:`Outcome`:

* ``final``: ``ok`` (the output equals the reference row for row, checked here) or
  ``refused`` (the job stopped with a clear one-line exit-2 message, checked here);
* ``lost`` / ``duplicated``: users of the reference missing from / repeated in the output;
* ``redraws``: parts whose content ever differed between two sightings (every part file seen
  in the work folder or the output during the faulted runs is snapshotted) - a second noise
  draw that someone holding both could average;
* ``orphans``: processes of a killed run still alive 10 s after the kill;
* ``dirty``: anything in the output folder that is not a verified part or the manifest.

Unseeded jobs use the ``test-noise-truth`` task (true count and noisy count per user): the
true column is compared with the reference, the noisy one is checked for redraws.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from helpers import (checkins, jobrun, kill_group, launch, marked_processes, markers_under,
                     published_problems, rows, wait_until, worker_pids)

PART_COLUMNS = ["user", "rows", "noisy"]


@dataclass
class Outcome:
    name: str
    faults: int = 0
    final: str = ""
    message: str = ""
    lost: int = 0
    duplicated: int = 0
    redraws: int = 0
    orphans: int = 0
    dirty: list = field(default_factory=list)


class Harness:
    def __init__(self, tmp: Path, name: str, *, seeded=True, engine="local", workers=2,
                 n=20_000, users=3_000, buckets=24, sleep=0.12, seed=0, root: Path | None = None):
        self.tmp = Path(tmp) / name
        self.tmp.mkdir(parents=True)
        self.root = Path(root) if root else self.tmp
        self.inp = checkins(self.tmp / "in.parquet", n=n, users=users, seed=seed)
        self.out = self.root / "out"
        self.work = self.root / ".out.veil-work"
        self.sleep = sleep
        self.rng = np.random.default_rng(abs(hash(name)) % 2**32)
        self.mark = uuid.uuid4().hex
        self.spec = {"input": str(self.inp), "output": str(self.out), "task": "test-noise-truth",
                     "params": {}, "user_column": "uid", "buckets": buckets, "resume": True,
                     "spend_again": True, "engine": engine, "workers": workers}
        if seeded:
            self.spec["seed"] = 7
        self.seeded = seeded
        self.buckets = buckets
        # one ledger for every scenario of a run: the scenarios release the same input
        self.ledger = self.tmp.parent / "ledger.json"
        ref = dict(self.spec, output=str(self.tmp / "ref"), engine="local", workers=1)
        ref.pop("resume")
        r = jobrun(ref, self.env(sleep=0))
        assert r.returncode == 0, r.stderr
        self.ref = rows(self.tmp / "ref")
        self.outcome = Outcome(name)
        self.seen: dict[str, list] = {}

    # ----------------------------------------------------------------- running
    def env(self, sleep=None, **more):
        return {"VEIL_LEDGER": str(self.ledger), "VEIL_TEST_RUN": self.mark,
                "VEIL_TEST_SLEEP": str(self.sleep if sleep is None else sleep), **more}

    def start(self, **env):
        return launch(self.spec, self.env(**env))

    def run(self, sleep=0, **env):
        r = jobrun(self.spec, self.env(sleep=sleep, **env))
        self.observe()
        return r

    def done_buckets(self) -> int:
        return len(markers_under(self.work))

    def wait_progress(self, proc, k: int, timeout=120):
        wait_until(lambda: self.done_buckets() >= k or proc.poll() is not None, timeout)

    # ----------------------------------------------------------------- faults
    def fault(self, n=1):
        self.outcome.faults += n

    def kill_random(self, *, group: bool, sig=signal.SIGKILL, **env):
        """Start a run, let it finish a random number of buckets (and a random extra moment),
        then send ``sig`` to the parent only or to its whole process group."""
        ready = None
        if sig == signal.SIGINT:
            # A Ctrl-C before the interpreter has installed its handler kills any Python
            # program by the signal; the run's own handling starts at jobrun's first line.
            ready = self.tmp / f"ready-{uuid.uuid4().hex}"
            env["VEIL_TEST_READY"] = str(ready)
        p = self.start(**env)
        if ready is not None:
            wait_until(lambda: ready.exists() or p.poll() is not None, 120)
        self.wait_progress(p, self.done_buckets() + int(self.rng.integers(0, 6)))
        time.sleep(float(self.rng.uniform(0, 0.15)))
        self.observe()
        if p.poll() is None:
            self.fault()
            if group:
                kill_group(p, sig)
            else:
                os.kill(p.pid, sig)
                p.wait()
        else:
            p.wait()
        self.check_orphans()
        self.observe()
        return p

    def kill_at(self, point: str, *, group=False, **env):
        """A run that kills itself, one of its workers, or its group at a named point; the
        engine logs each fault that really fired (``VEIL_TEST_FAULT_LOG``)."""
        log = self.tmp / "faults.log"
        before = len(log.read_text().splitlines()) if log.exists() else 0
        r = self.run(sleep=env.pop("sleep", 0), VEIL_TEST_FAULT=point + (":group" if group
                                                                          else ""),
                     VEIL_TEST_FAULT_LOG=str(log), **env)
        after = len(log.read_text().splitlines()) if log.exists() else 0
        self.fault(after - before)
        self.check_orphans()
        return r

    def kill_worker(self):
        p = self.start()
        self.wait_progress(p, self.done_buckets() + 1)
        victims = [w for w in worker_pids(p.pid)]
        if victims and p.poll() is None:
            os.kill(victims[int(self.rng.integers(0, len(victims)))], signal.SIGKILL)
            self.fault()
        code = p.wait(300)
        self.observe()
        return code, p.stderr.read()

    def kill_dask_worker(self):
        p = self.start()
        self.wait_progress(p, self.done_buckets() + 1)
        victims = [pid for pid in marked_processes(self.mark) if pid != p.pid
                   and b"spawn_main" in open(f"/proc/{pid}/cmdline", "rb").read()]
        if victims and p.poll() is None:
            os.kill(victims[0], signal.SIGKILL)
            self.fault()
        code = p.wait(300)
        self.observe()
        return code, p.stderr.read()

    def check_orphans(self):
        wait_until(lambda: not marked_processes(self.mark), 10)
        left = marked_processes(self.mark)
        self.outcome.orphans += len(left)
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    # ----------------------------------------------------------------- observation
    def observe(self):
        """Snapshot every part seen anywhere; a part that changed is a redraw."""
        for folder in (self.work / "parts", self.out):
            if not folder.is_dir():
                continue
            for p in folder.glob("part-*.parquet"):
                try:
                    got = sorted(pq.read_table(p).to_pylist(), key=lambda r: r["user"])
                except Exception:  # noqa: BLE001 - damaged on purpose, or being replaced
                    continue
                first = self.seen.setdefault(p.name, got)
                if first != got:
                    self.outcome.redraws += 1
                    self.seen[p.name] = got

    # ----------------------------------------------------------------- endings
    def finish(self, expect_refusal: str | None = None) -> Outcome:
        """Finish with clean runs; check the output (or the refusal) and the folder."""
        o = self.outcome
        r = self.run()
        if expect_refusal is not None:
            lines = r.stderr.strip().splitlines()
            ok = r.returncode == 2 and len(lines) == 1 and expect_refusal in r.stderr
            o.final = "refused" if ok else f"WRONG rc={r.returncode}"
            o.message = lines[-1] if lines else ""
        else:
            if r.returncode != 0:
                o.final, o.message = f"FAILED rc={r.returncode}", r.stderr.strip()[-300:]
            else:
                got = rows(self.out)
                users_ref = {row[0] for row in self.ref}
                users_got = [row[0] for row in got]
                o.lost = len(users_ref - set(users_got))
                o.duplicated = len(users_got) - len(set(users_got))
                if self.seeded:
                    same = got == self.ref
                else:  # noise differs from the reference; users and true counts do not
                    same = [r_[:2] for r_ in got] == [r_[:2] for r_ in self.ref]
                o.final = "ok" if same and not o.lost and not o.duplicated else "WRONG output"
        o.dirty = published_problems(self.out, PART_COLUMNS)
        self.check_orphans()
        return o


def with_tmpfs(mnt: Path, size: str) -> bool:
    mnt.mkdir(parents=True, exist_ok=True)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mnt)],
                       capture_output=True)
    return r.returncode == 0


def remount(mnt: Path, opts: str) -> None:
    """Remount (retried for a few seconds: the files of processes that were just killed are
    released by the kernel a moment after they exit)."""
    for _ in range(50):
        r = subprocess.run(["mount", "-o", f"remount,{opts}", str(mnt)], capture_output=True,
                           text=True)
        if r.returncode == 0:
            return
        time.sleep(0.2)
    users = subprocess.run(["sh", "-c", f"grep -l {mnt} /proc/*/maps /proc/*/mountinfo "
                                        "2>/dev/null | head; ls -l /proc/*/fd /proc/*/cwd "
                                        f"2>/dev/null | grep {mnt} | head"],
                           capture_output=True, text=True).stdout
    raise AssertionError(f"remount {opts} failed: {r.stderr.strip()}; users: {users[:2000]}")


def umount(mnt: Path) -> None:
    subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def summary(outcomes: list[Outcome]) -> dict:
    return {"scenarios": len(outcomes), "faults": sum(o.faults for o in outcomes),
            "ok": sum(o.final == "ok" for o in outcomes),
            "refused": sum(o.final == "refused" for o in outcomes),
            "wrong": [o.name for o in outcomes if o.final not in ("ok", "refused")],
            "lost": sum(o.lost for o in outcomes),
            "duplicated": sum(o.duplicated for o in outcomes),
            "redraws": sum(o.redraws for o in outcomes),
            "orphans": sum(o.orphans for o in outcomes),
            "dirty": [o.name for o in outcomes if o.dirty]}


def table(outcomes: list[Outcome]) -> str:
    lines = [f"{'scenario':44s} {'faults':>6s} {'final':>8s} {'lost':>5s} {'dup':>4s} "
             f"{'redraw':>6s} {'orphan':>6s}"]
    for o in outcomes:
        lines.append(f"{o.name:44s} {o.faults:6d} {o.final:>8s} {o.lost:5d} {o.duplicated:4d} "
                     f"{o.redraws:6d} {o.orphans:6d}")
    s = summary(outcomes)
    lines.append(f"TOTAL: {s['scenarios']} scenarios, {s['faults']} faults injected, "
                 f"{s['ok']} finished identical to the uninterrupted run, {s['refused']} "
                 f"refused with a clear message, users lost {s['lost']}, duplicated "
                 f"{s['duplicated']}, noise redraws {s['redraws']}, orphans {s['orphans']}")
    return "\n".join(lines)


def dump(outcomes: list[Outcome], path: str | None) -> None:
    if path:
        Path(path).write_text(json.dumps({"summary": summary(outcomes),
                                          "scenarios": [o.__dict__ for o in outcomes]},
                                         indent=2, default=str))


def corrupt(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


def rm(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path)
    else:
        path.unlink()
