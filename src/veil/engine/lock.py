"""One job per output folder: an OS lock held for the job's life, and no orphan beside it.

Why: two runs writing one output folder used to lose users (one deleted what the other was
writing). The job lock is ``flock(LOCK_EX)`` on ``WORK/lock``; the kernel drops it when the
holder dies, however it dies, so a crashed job never blocks the next run. The file also holds
a record of the holder (pid, host, boot id, process start time) that names it in the error a
second writer gets, and that decides when ``flock`` cannot: on a file system without working
``flock`` the record alone is the lock, and a record left by a process that is gone (same host
and boot, pid dead or reused) is stale and taken over. A record from another host cannot be
checked from here; that run is refused with the path of the lock to remove by hand.

Workers of a killed run must not keep writing beside a resumed one: every bucket runs while
holding ``flock(LOCK_SH)`` on ``WORK/workers.lock``, and a new run first takes ``LOCK_EX`` on
it (waiting a few seconds for dying workers), so it never starts beside a live orphan.

Examples
--------
>>> import tempfile, pathlib
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> with JobLock(d, "out/") as lock:
...     lock.holder()["pid"] == os.getpid()
True
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import socket
import time
from pathlib import Path
from typing import Any

from ..errors import VeilError

__all__ = ["JobLock", "JobBusyError", "OrphanWorkersError", "wait_for_orphans",
           "bucket_lock", "process_alive", "this_process"]

LOCK = "lock"
WORKERS_LOCK = "workers.lock"
_NO_FLOCK = {errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL}


class JobBusyError(VeilError, RuntimeError):
    """Another live veil job holds this output folder."""


class OrphanWorkersError(VeilError, RuntimeError):
    """Worker processes of an earlier run of this job are still alive."""


def _boot_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id") as fh:
            return fh.read().strip()
    except OSError:
        return ""


def _start_time(pid: int) -> str:
    """The process start time in clock ticks since boot (tells a reused pid apart)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return ""


def this_process() -> dict[str, Any]:
    pid = os.getpid()
    return {"pid": pid, "host": socket.gethostname(), "boot": _boot_id(),
            "start": _start_time(pid), "since": time.strftime("%Y-%m-%dT%H:%M:%S%z")}


def process_alive(rec: dict[str, Any]) -> bool | None:
    """Is the process a record names alive? ``None`` when it cannot be told from this host."""
    if rec.get("host") != socket.gethostname():
        return None
    if rec.get("boot") and rec.get("boot") != _boot_id():
        return False  # the machine rebooted since
    pid = int(rec.get("pid", 0))
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    start = _start_time(pid)
    return not (rec.get("start") and start and start != rec.get("start"))


def _describe(rec: dict[str, Any] | None) -> str:
    if not rec:
        return "a process that left no record"
    return f"pid {rec.get('pid')} on host {rec.get('host')} since {rec.get('since')}"


class JobLock:
    """The exclusive lock of one job's work folder (a context manager).

    Parameters
    ----------
    work : Path
        The job's private work folder (must exist).
    output : str
        The output folder, for messages.
    """

    def __init__(self, work: Path, output: str) -> None:
        self.path = Path(work) / LOCK
        self.output = str(output)
        self.fd: int | None = None
        self.kernel_lock = False
        self.took_over: dict[str, Any] | None = None

    def _read(self) -> dict[str, Any] | None:
        assert self.fd is not None
        os.lseek(self.fd, 0, os.SEEK_SET)
        raw = b""
        while chunk := os.read(self.fd, 65536):
            raw += chunk
        try:
            rec = json.loads(raw.decode() or "null")
        except (UnicodeDecodeError, json.JSONDecodeError):
            return None
        return rec if isinstance(rec, dict) else None

    def _write(self, rec: dict[str, Any]) -> None:
        assert self.fd is not None
        data = json.dumps(rec).encode()
        os.ftruncate(self.fd, 0)
        os.pwrite(self.fd, data, 0)
        os.fsync(self.fd)

    def holder(self) -> dict[str, Any] | None:
        """The record of the current holder."""
        return self._read()

    def acquire(self) -> "JobLock":
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        self.fd = fd
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            self.kernel_lock = True
        except BlockingIOError:
            rec = self._read()
            self._close()
            raise JobBusyError(
                f"output folder {self.output} is in use by another veil job ({_describe(rec)}); "
                "wait for it to finish (veil batch status shows its progress) or stop it") from None
        except OSError as exc:
            if exc.errno not in _NO_FLOCK:
                self._close()
                raise
            self.kernel_lock = False  # no flock here: the record alone is the lock
        rec = self._read()
        if rec and not rec.get("released"):
            alive = process_alive(rec)
            if alive is None:
                self._close()
                raise JobBusyError(
                    f"output folder {self.output} was locked by {_describe(rec)}, which cannot "
                    f"be checked from host {socket.gethostname()}; if that job is no longer "
                    f"running, remove {self.path} and rerun") from None
            if alive and int(rec.get("pid", 0)) != os.getpid():
                self._close()
                raise JobBusyError(
                    f"output folder {self.output} is in use by another veil job "
                    f"({_describe(rec)}); wait for it to finish or stop it") from None
            self.took_over = rec  # a stale record: its process is gone
        self._write(this_process())
        if not self.kernel_lock:  # record-only: check we won a simultaneous take-over
            time.sleep(0.05)
            if (self._read() or {}).get("pid") != os.getpid():
                self._close()
                raise JobBusyError(f"output folder {self.output} is being taken by another "
                                   "veil job at the same moment; rerun")
        return self

    def _close(self) -> None:
        if self.fd is not None:
            try:
                os.close(self.fd)
            finally:
                self.fd = None

    def release(self) -> None:
        if self.fd is None:
            return
        try:
            self._write({**this_process(), "released": True})
        except OSError:
            pass
        if self.kernel_lock:
            try:
                fcntl.flock(self.fd, fcntl.LOCK_UN)
            except OSError:
                pass
        self._close()

    def __enter__(self) -> "JobLock":
        return self.acquire() if self.fd is None else self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _flock_holders(path: Path) -> list[int]:
    """Pids holding a flock on ``path`` (from /proc/locks; empty when unknown)."""
    try:
        ino = os.stat(path).st_ino
        with open("/proc/locks") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return []
    pids = []
    for ln in lines:
        parts = ln.split()
        try:
            i = parts.index("FLOCK")
        except ValueError:
            continue
        try:
            pid, dev = int(parts[i + 3]), parts[i + 4]
        except (IndexError, ValueError):
            continue
        if dev.rsplit(":", 1)[-1] == str(ino) and pid != os.getpid():
            pids.append(pid)
    return sorted(set(pids))


def wait_for_orphans(work: Path, grace: float = 5.0) -> None:
    """Return once no worker of an earlier run holds ``WORK/workers.lock``.

    Dying workers get ``grace`` seconds; a live orphan after that is an error naming it.
    """
    path = Path(work) / WORKERS_LOCK
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        deadline = time.monotonic() + grace
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                fcntl.flock(fd, fcntl.LOCK_UN)
                return
            except BlockingIOError:
                if time.monotonic() > deadline:
                    pids = _flock_holders(path)
                    who = (f"pid(s) {', '.join(map(str, pids))}" if pids else
                           "processes veil cannot name")
                    raise OrphanWorkersError(
                        f"worker processes of an earlier run of this job are still running "
                        f"({who}); a resume never runs beside them: stop them (kill "
                        f"{' '.join(map(str, pids)) or 'PID'}) and rerun") from None
                time.sleep(0.05)
            except OSError as exc:
                if exc.errno in _NO_FLOCK:
                    return
                raise
    finally:
        os.close(fd)


class bucket_lock:
    """Shared lock held by a worker while it runs a bucket (see :func:`wait_for_orphans`)."""

    def __init__(self, work: Path) -> None:
        self.path = Path(work) / WORKERS_LOCK
        self.fd: int | None = None

    def __enter__(self) -> "bucket_lock":
        try:
            self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC,
                              0o600)
        except FileNotFoundError:
            raise OrphanWorkersError(f"the work folder {self.path.parent} is gone: this bucket "
                                     "belongs to a job that no longer runs") from None
        try:
            fcntl.flock(self.fd, fcntl.LOCK_SH)
        except OSError as exc:
            if exc.errno not in _NO_FLOCK:
                raise
        return self

    def __exit__(self, *exc: object) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
