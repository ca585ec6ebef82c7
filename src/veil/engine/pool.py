"""The local engine's worker processes: they die with the parent, and a dead one is replaced.

Why not :class:`concurrent.futures.ProcessPoolExecutor`: when the main process was killed,
its forkserver, workers and resource tracker stayed alive for ever (each worker holds the
forkserver's "alive" pipe and its task queue's write end, so none of them ever sees EOF), and
one killed worker broke the whole pool (``BrokenProcessPool``). Here:

* every worker gets the read end of a heartbeat pipe whose only write end the parent holds;
  a watchdog thread in the worker blocks on it and ends the worker the moment the parent is
  gone, whatever killed it (then the forkserver and the resource tracker see EOF and exit);
* every worker also asks the kernel for SIGKILL when its own parent (the forkserver) dies
  (``prctl(PR_SET_PDEATHSIG)`` through ctypes, Linux);
* workers ignore SIGINT: Ctrl-C reaches the parent, which stops them and exits with 130.
  The parent blocks SIGINT while it starts them (and the forkserver, on the first start), so
  the mask they inherit holds it off before their own handler is set: a Ctrl-C that reaches
  the group while the pool starts leaves no worker or forkserver traceback, and the parent
  gets it the moment it unblocks;
* a worker that dies (OOM killer, ``kill -9``) is replaced and its bucket is run again, like
  Dask does, up to :data:`MAX_ATTEMPTS` times per bucket; the keyed noise makes the retry
  bit-identical.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
import traceback
from collections import deque
from multiprocessing import get_context
from multiprocessing.connection import wait
from typing import Any, Callable

from ..errors import VeilError

__all__ = ["WorkerLostError", "run_pool", "MAX_ATTEMPTS", "set_parent_death_signal"]

MAX_ATTEMPTS = 3
PRELOAD = ["veil.engine.runner", "veil.engine.tasks"]


class WorkerLostError(VeilError, RuntimeError):
    """A bucket killed its worker process :data:`MAX_ATTEMPTS` times."""


class _RemoteError(Exception):
    """An exception raised in a worker that could not be sent back as itself."""


def set_parent_death_signal(sig: int = signal.SIGKILL) -> bool:
    """Ask the kernel to send ``sig`` to this process when its parent dies (Linux only)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        PR_SET_PDEATHSIG = 1
        return libc.prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _watchdog(heartbeat) -> None:
    try:
        heartbeat.recv()  # the parent never sends: this returns only when it is gone
    except (EOFError, OSError):
        pass
    os._exit(70)


def _worker_main(conn, heartbeat, parent_of_parent: int) -> None:
    ppid = os.getppid()
    set_parent_death_signal()
    if os.getppid() != ppid:  # the forkserver died before the signal was armed
        os._exit(70)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(target=_watchdog, args=(heartbeat,), daemon=True,
                     name="veil-parent-watchdog").start()
    from .runner import run_bucket

    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            os._exit(0)
        if msg is None:
            return
        spec, bucket, extra = msg
        try:
            info = run_bucket(spec, bucket, extra)
        except BaseException as exc:  # noqa: BLE001 - sent to the parent, which decides
            tb = traceback.format_exc()
            try:
                conn.send(("err", bucket, exc, tb))
            except Exception:  # noqa: BLE001 - unpicklable exception
                conn.send(("err", bucket, _RemoteError(f"{type(exc).__name__}: {exc}"), tb))
            continue
        conn.send(("ok", bucket, info))


def start_forkserver() -> None:
    """Start the forkserver (if not running) so that it and every worker it forks ignore SIGINT
    from birth.

    Python's forkserver restores, in each child it forks, the SIGINT disposition it was born
    with; born with the default, a worker hit by a Ctrl-C between its fork and its own
    ``SIG_IGN`` (or the forkserver, while it imports the preloaded modules) printed a
    traceback. So the forkserver is spawned with SIGINT ignored, which ``exec`` keeps. For those
    few milliseconds the parent also holds SIGINT blocked, and Linux keeps a blocked signal
    pending even while it is ignored: a Ctrl-C then is delivered to the parent as soon as its
    handler is back, not lost, if it was sent to the main thread. A terminal's Ctrl-C is sent
    to the whole process, and by the time the pool starts a ``veil`` command runs other threads
    too (DuckDB's, the BLAS library's, 3 to 12 of them measured), which do not block it: the
    kernel may hand the signal to one of those, where, ignored for that moment (about 10 ms), it
    is dropped. The job then goes on and the next Ctrl-C stops it as usual. Outside the main
    thread (where handlers cannot be changed) the forkserver starts as usual, and a forkserver this process already runs (started by other
    code) is used as it is; the workers still set ``SIG_IGN`` first thing.
    """
    from multiprocessing import forkserver

    handler = signal.getsignal(signal.SIGINT)
    if (threading.current_thread() is not threading.main_thread() or handler is None
            or not hasattr(signal, "pthread_sigmask")):
        forkserver.ensure_running()
        return
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            forkserver.ensure_running()
        finally:
            signal.signal(signal.SIGINT, handler)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)


class _Worker:
    def __init__(self, ctx, heartbeat) -> None:
        self.conn, child = ctx.Pipe(duplex=True)
        self.proc = ctx.Process(target=_worker_main, args=(child, heartbeat, os.getpid()),
                                daemon=True, name="veil-worker")
        self.proc.start()
        child.close()
        self.bucket: int | None = None

    def kill(self) -> None:
        if self.proc.is_alive():
            self.proc.kill()
        self.proc.join(5)
        self.conn.close()


def run_pool(spec: dict[str, Any], pending: list[tuple[int, dict]], workers: int,
             on_done: Callable[[dict[str, Any]], None]) -> None:
    """Run ``(bucket, extra)`` items on ``workers`` processes; ``on_done(info)`` per bucket.

    A task exception stops the pool and is raised here (with the worker's traceback attached
    as a note); a dead worker's bucket is retried on a fresh worker.
    """
    ctx = get_context("forkserver")
    ctx.set_forkserver_preload(PRELOAD)
    start_forkserver()
    heartbeat_r, heartbeat_w = ctx.Pipe(duplex=False)  # we keep the only write end
    queue = deque(b for b, _ in pending)
    extra = dict(pending)
    attempts: dict[int, int] = {}
    pool: list[_Worker] = []
    try:
        pool = [_Worker(ctx, heartbeat_r) for _ in range(min(workers, len(pending)))]
        while queue or any(w.bucket is not None for w in pool):
            for w in pool:
                if w.bucket is None and queue:
                    b = queue.popleft()
                    w.bucket = b
                    w.conn.send((spec, b, extra[b]))
            busy = [w for w in pool if w.bucket is not None]
            ready = set(wait([w.conn for w in busy] + [w.proc.sentinel for w in busy]))
            for i, w in enumerate(list(pool)):
                if w.bucket is None:
                    continue
                msg = None
                if w.conn in ready or w.proc.sentinel in ready:
                    try:
                        if w.conn.poll():
                            msg = w.conn.recv()
                    except (EOFError, OSError):
                        msg = None
                if msg is not None:
                    kind, b, *rest = msg
                    w.bucket = None
                    if kind == "ok":
                        on_done(rest[0])
                        continue
                    exc, tb = rest
                    if hasattr(exc, "add_note"):
                        exc.add_note(f"in worker process for bucket {b}:\n{tb}")
                    raise exc
                if w.proc.sentinel in ready:  # died without answering
                    b = w.bucket
                    w.proc.join()
                    code = w.proc.exitcode
                    attempts[b] = attempts.get(b, 0) + 1
                    if attempts[b] >= MAX_ATTEMPTS:
                        how = f"signal {-code}" if code is not None and code < 0 else f"exit {code}"
                        raise WorkerLostError(
                            f"bucket {b} killed its worker process {attempts[b]} times (last: "
                            f"{how}; the out-of-memory killer?); rerun with --resume, with more "
                            "--buckets in a new job, or on a machine with more memory")
                    w.conn.close()
                    pool[i] = _Worker(ctx, heartbeat_r)
                    queue.appendleft(b)
        for w in pool:
            try:
                w.conn.send(None)
            except OSError:
                pass
        for w in pool:
            w.proc.join(10)
    finally:
        for w in pool:
            w.kill()
        heartbeat_w.close()
        heartbeat_r.close()
